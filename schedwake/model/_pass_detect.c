/*
 * _pass_detect.c: the detectors' per-row loops (schedwake/detect/).
 *
 * gap_sweep: idle while runnable's sweep over one LLC (detect/_iwr.py,
 * llc_gap_segments).  The interval ends come in time order, each with its CPU and
 * kind; one walk keeps each CPU's open idle, wait and unknown intervals and how many
 * CPUs are idle and how many busy with a wait, and writes the gap's segments as it
 * goes (touching pieces joined): no grouping of the ends by CPU, no running sums of
 * whole arrays.
 *
 * overlapping: which intervals overlap a union of few sorted disjoint pieces (the
 * LLC's idle time), the waits that can be part of a gap: one binary search an
 * interval, from where the last one ended when the intervals come in time order.
 */
#include <stdlib.h>

#include "_passes.h"

/* the kinds of an end (code & 7) */
enum { IDLE_START, IDLE_END, WAIT_START, WAIT_END, UNKNOWN_START, UNKNOWN_END, KINDS };

/* m >= 0: the segments written (out_start[:m], out_end[:m]); -1: no memory; -2: a
 * kind outside [0, KINDS) or a CPU (code >> 3) outside [0, ncpu) */
static Py_ssize_t gap_sweep(const int64_t *ts, const void *code, Py_ssize_t cs, Py_ssize_t n,
                            int64_t ncpu, int64_t *out_start, int64_t *out_end)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = key_at(code, cs, i);
        if (c < 0 || (c & 7) >= KINDS || (c >> 3) >= ncpu)
            return -2;
    }
    /* per CPU: its open intervals of each kind (idle, wait, unknown), and whether it
     * is idle and busy with a wait after the ends walked */
    int32_t *open = calloc((size_t)ncpu * 3 + 1, sizeof(int32_t));
    uint8_t *flags = calloc((size_t)ncpu + 1, 1);
    if (!open || !flags) {
        free(open);
        free(flags);
        return -1;
    }
    int64_t idle = 0, busy = 0; /* CPUs idle, CPUs busy with a wait */
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = key_at(code, cs, i);
        int kind = (int)(c & 7);
        int32_t *o = open + (c >> 3) * 3;
        o[kind >> 1] += (kind & 1) ? -1 : 1;
        uint8_t *f = flags + (c >> 3);
        int is_idle = o[0] > 0;
        int is_busy = o[1] > 0 && !is_idle && o[2] <= 0;
        idle += is_idle - (*f & 1);
        busy += is_busy - ((*f >> 1) & 1);
        *f = (uint8_t)(is_idle | is_busy << 1);
        /* a piece of gap: from this end's time to the next end's, when that is later */
        if (idle >= 1 && busy >= 1 && i + 1 < n && ts[i + 1] > ts[i]) {
            if (m && out_end[m - 1] == ts[i]) {
                out_end[m - 1] = ts[i + 1]; /* it touches the last: one segment */
            } else {
                out_start[m] = ts[i];
                out_end[m] = ts[i + 1];
                m++;
            }
        }
    }
    free(open);
    free(flags);
    return m;
}

PyObject *pass_gap_sweep(PyObject *self, PyObject *args)
{
    PyObject *ts_o, *code_o, *start_o, *end_o;
    long long ncpu;
    if (!PyArg_ParseTuple(args, "OOLOO", &ts_o, &code_o, &ncpu, &start_o, &end_o))
        return NULL;
    if (ncpu < 1 || ncpu > ((long long)1 << 28)) {
        PyErr_SetString(PyExc_ValueError, "gap_sweep: ncpu must be in [1, 2**28]");
        return NULL;
    }
    Arr ts, code, start, end;
    ArrSpec spec[] = {
        {ts_o, &ts, 8, 0, "gap_sweep ts"},
        {code_o, &code, ARR_KEY, 0, "gap_sweep code"},
        {start_o, &start, 8, 1, "gap_sweep out_start"},
        {end_o, &end, 8, 1, "gap_sweep out_end"},
    };
    const int ns = 4;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&ts);
    if (arr_len(&code) != n || arr_len(&start) < n || arr_len(&end) < n)
        return value_error(spec, ns,
                           "gap_sweep: ts and code of one length, the outputs as long");
    Py_ssize_t m;
    Py_BEGIN_ALLOW_THREADS
    m = gap_sweep(ts.view.buf, code.view.buf, code.view.itemsize, n, ncpu, start.view.buf,
                  end.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (pass_failed(m < 0 ? (int)m : 0, "gap_sweep: a kind outside [0, 6) or a CPU outside "
                                        "[0, ncpu)") < 0)
        return NULL;
    return PyLong_FromSsize_t(m);
}

/* The first piece (of ue, ascending) that ends after t: from hint when that one does
 * and the one before it does not, else by binary search. */
static Py_ssize_t first_ending_after(const int64_t *ue, Py_ssize_t k, int64_t t, Py_ssize_t hint)
{
    if (hint < k && ue[hint] > t && (hint == 0 || ue[hint - 1] <= t))
        return hint;
    Py_ssize_t lo = 0, hi = k;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (ue[mid] > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* out[i] = whether [min(start, end), max(start, end)) overlaps a piece [us[j], ue[j])
 * (pieces disjoint, in time order) */
static void overlapping(const int64_t *start, const int64_t *end, Py_ssize_t n,
                        const int64_t *us, const int64_t *ue, Py_ssize_t k, uint8_t *out)
{
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t lo = start[i] < end[i] ? start[i] : end[i];
        int64_t hi = start[i] < end[i] ? end[i] : start[i];
        at = first_ending_after(ue, k, lo, at);
        out[i] = at < k && us[at] < hi;
    }
}

PyObject *pass_overlapping(PyObject *self, PyObject *args)
{
    PyObject *start_o, *end_o, *us_o, *ue_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOOO", &start_o, &end_o, &us_o, &ue_o, &out_o))
        return NULL;
    Arr start = {0}, end = {0}, us = {0}, ue = {0}, out = {0};
    ArrSpec spec[] = {
        {start_o, &start, 8, 0, "overlapping start"},
        {end_o, &end, 8, 0, "overlapping end"},
        {us_o, &us, 8, 0, "overlapping us"},
        {ue_o, &ue, 8, 0, "overlapping ue"},
        {out_o, &out, 1, 1, "overlapping out"},
    };
    if (arrs_get(spec, 5) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&start), k = arr_len(&us);
    if (arr_len(&end) != n || arr_len(&out) != n || arr_len(&ue) != k)
        return value_error(spec, 5, "overlapping: arrays of different lengths");
    Py_BEGIN_ALLOW_THREADS
    overlapping(start.view.buf, end.view.buf, n, us.view.buf, ue.view.buf, k, out.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, 5);
    Py_RETURN_NONE;
}

/* For each of rows (ascending positions in key), the row before and the row after it
 * with the same key: one walk forward and one backward over the keys, a table of each
 * key's last row.  0; -1: no memory; -2: a key outside [lo, lo + span), or rows not
 * ascending positions in key */
static int key_neighbors(const void *key, Py_ssize_t ks, Py_ssize_t n, const int64_t *rows,
                         Py_ssize_t m, int64_t lo, int64_t span, int64_t *out_prev,
                         int64_t *out_next)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if ((uint64_t)key_at(key, ks, i) - (uint64_t)lo >= (uint64_t)span)
            return -2;
    for (Py_ssize_t j = 0; j < m; j++)
        if (rows[j] < 0 || rows[j] >= n || (j && rows[j] <= rows[j - 1]))
            return -2;
    int64_t *last = malloc((size_t)span * sizeof(int64_t));
    if (!last)
        return -1;
    for (int64_t k = 0; k < span; k++)
        last[k] = -1;
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n && j < m; i++) {
        uint64_t k = (uint64_t)key_at(key, ks, i) - (uint64_t)lo;
        if (i == rows[j])
            out_prev[j++] = last[k];
        last[k] = i;
    }
    for (int64_t k = 0; k < span; k++)
        last[k] = -1;
    j = m - 1;
    for (Py_ssize_t i = n - 1; i >= 0 && j >= 0; i--) {
        uint64_t k = (uint64_t)key_at(key, ks, i) - (uint64_t)lo;
        if (i == rows[j])
            out_next[j--] = last[k];
        last[k] = i;
    }
    free(last);
    return 0;
}

PyObject *pass_key_neighbors(PyObject *self, PyObject *args)
{
    PyObject *key_o, *rows_o, *prev_o, *next_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOLLOO", &key_o, &rows_o, &lo, &span, &prev_o, &next_o))
        return NULL;
    if (!range_ok("key_neighbors", lo, span))
        return NULL;
    Arr key, rows, prev, next;
    ArrSpec spec[] = {
        {key_o, &key, ARR_KEY, 0, "key_neighbors key"},
        {rows_o, &rows, 8, 0, "key_neighbors rows"},
        {prev_o, &prev, 8, 1, "key_neighbors out_prev"},
        {next_o, &next, 8, 1, "key_neighbors out_next"},
    };
    const int ns = 4;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&key), m = arr_len(&rows);
    if (arr_len(&prev) != m || arr_len(&next) != m)
        return value_error(spec, ns, "key_neighbors: an output slot a row");
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = key_neighbors(key.view.buf, key.view.itemsize, n, rows.view.buf, m, lo, span,
                       prev.view.buf, next.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (pass_failed(rc, "key_neighbors: a key outside [lo, lo + span) or rows not "
                        "ascending positions") < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* last[k - lo] = the last row of each key k (size-byte ints in [lo, lo + span)), -1 for
 * a value no row has; 0, or -2: a key out of its range (checked before anything is
 * written). */
static int key_last_rows(const void *key, Py_ssize_t size, Py_ssize_t n, int64_t lo,
                         int64_t span, int64_t *last)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if ((uint64_t)key_at(key, size, i) - (uint64_t)lo >= (uint64_t)span)
            return -2;
    for (int64_t k = 0; k < span; k++)
        last[k] = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t k = (uint64_t)key_at(key, size, i) - (uint64_t)lo;
        if (k >= (uint64_t)span) /* (read again: checked again) */
            return -2;
        last[k] = i;
    }
    return 0;
}

PyObject *pass_key_last_rows(PyObject *self, PyObject *args)
{
    PyObject *o_key, *o_last;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OLLO", &o_key, &lo, &span, &o_last))
        return NULL;
    if (!range_ok("key_last_rows", lo, span))
        return NULL;
    Arr key, last;
    ArrSpec spec[] = {
        {o_key, &key, ARR_KEY, 0, "key_last_rows key"},
        {o_last, &last, 8, 1, "key_last_rows last"},
    };
    const int ns = 2;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    if (arr_len(&last) != span)
        return value_error(spec, ns, "key_last_rows: last one a key value");
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = key_last_rows(key.view.buf, key.view.itemsize, arr_len(&key), lo, span,
                       last.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (pass_failed(rc, "key_last_rows: a key outside [lo, lo + span)") < 0)
        return NULL;
    Py_RETURN_NONE;
}

