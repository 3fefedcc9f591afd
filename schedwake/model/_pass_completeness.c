/*
 * _pass_completeness.c: as-of searches of the completeness model (and the passes that
 * use the same search) over tables whose rows are in time order.
 */
#include <stdlib.h>

#include "_passes.h"

/* key i of a 4- or 8-byte signed integer array */
static inline int64_t key_at(const void *buf, Py_ssize_t size, Py_ssize_t i)
{
    return size == 4 ? (int64_t)((const int32_t *)buf)[i] : ((const int64_t *)buf)[i];
}

/* Whether ts never decreases. */
static int ts_sorted(const int64_t *ts, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (ts[i] < ts[i - 1])
            return 0;
    return 1;
}

/* Whether every key lies in [lo, lo + span). */
static int keys_in(const void *key, Py_ssize_t size, Py_ssize_t n, int64_t lo, int64_t span)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if ((uint64_t)key_at(key, size, i) - (uint64_t)lo >= (uint64_t)span)
            return 0;
    return 1;
}

/* Take a key array (4- or 8-byte signed integers) of n rows. */
static int key_get(PyObject *obj, Arr *a, Py_ssize_t n, const char *what)
{
    Py_buffer probe;
    if (PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    Py_ssize_t size = probe.itemsize;
    PyBuffer_Release(&probe);
    if (arr_get(obj, a, size == 4 ? 4 : 8, 0, what) < 0)
        return -1;
    if (arr_len(a) != n) {
        arr_release(a);
        PyErr_Format(PyExc_ValueError, "%s: one key a row is needed", what);
        return -1;
    }
    return 0;
}

/*
 * asof_last(lts, lkey, rts, rkey, lo, span, strict, out) -> bool
 *
 * Both sides in time order: for each left row, the last right row (in the given order)
 * of the same key with rts <= lts (rts < lts when strict), or -1.  One merge of the two
 * sides with a table of the last right row of each key.  False (out not filled) when
 * either side's times are not in order; ValueError on a key outside [lo, lo + span).
 */
PyObject *pass_asof_last(PyObject *self, PyObject *args)
{
    PyObject *lts_o, *lkey_o, *rts_o, *rkey_o, *out_o;
    long long lo, span;
    int strict;
    if (!PyArg_ParseTuple(args, "OOOOLLpO", &lts_o, &lkey_o, &rts_o, &rkey_o, &lo, &span,
                          &strict, &out_o))
        return NULL;
    if (span < 1 || span > ((long long)1 << 31) || lo < -((long long)1 << 62) ||
        lo > ((long long)1 << 62)) {
        PyErr_SetString(PyExc_ValueError, "asof_last: span must be in [1, 2**31]");
        return NULL;
    }
    Arr lts = {0}, lkey = {0}, rts = {0}, rkey = {0}, out = {0};
    PyObject *res = NULL;
    if (arr_get(lts_o, &lts, 8, 0, "asof_last lts") < 0 ||
        arr_get(rts_o, &rts, 8, 0, "asof_last rts") < 0 ||
        arr_get(out_o, &out, 8, 1, "asof_last out") < 0)
        goto done;
    Py_ssize_t nl = arr_len(&lts), nr = arr_len(&rts);
    if (key_get(lkey_o, &lkey, nl, "asof_last lkey") < 0 ||
        key_get(rkey_o, &rkey, nr, "asof_last rkey") < 0)
        goto done;
    if (arr_len(&out) != nl) {
        PyErr_SetString(PyExc_ValueError, "asof_last: out must have one slot a left row");
        goto done;
    }
    const int64_t *lt = lts.view.buf, *rt = rts.view.buf;
    const void *lk = lkey.view.buf, *rk = rkey.view.buf;
    Py_ssize_t lsz = lkey.view.itemsize, rsz = rkey.view.itemsize;
    int64_t *o = out.view.buf;
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    if (!keys_in(lk, lsz, nl, lo, span) || !keys_in(rk, rsz, nr, lo, span))
        rc = -2;
    else if (!ts_sorted(lt, nl) || !ts_sorted(rt, nr))
        rc = 1;
    else {
        int64_t *last = malloc((size_t)span * sizeof(int64_t));
        if (!last)
            rc = -1;
        else {
            for (int64_t k = 0; k < span; k++)
                last[k] = -1;
            Py_ssize_t j = 0;
            for (Py_ssize_t i = 0; i < nl; i++) {
                int64_t t = lt[i];
                while (j < nr && (strict ? rt[j] < t : rt[j] <= t)) {
                    last[(uint64_t)key_at(rk, rsz, j) - (uint64_t)lo] = j;
                    j++;
                }
                o[i] = last[(uint64_t)key_at(lk, lsz, i) - (uint64_t)lo];
            }
            free(last);
        }
    }
    Py_END_ALLOW_THREADS
    if (rc == -1)
        PyErr_NoMemory();
    else if (rc == -2)
        PyErr_SetString(PyExc_ValueError, "asof_last: a key outside [lo, lo + span)");
    else
        res = PyBool_FromLong(rc == 0);
done:
    arr_release(&lts);
    arr_release(&lkey);
    arr_release(&rts);
    arr_release(&rkey);
    arr_release(&out);
    return res;
}

/* Whether the right rows are in (key, time) order. */
static int key_time_sorted(const int64_t *ts, const void *key, Py_ssize_t size, Py_ssize_t n)
{
    for (Py_ssize_t j = 1; j < n; j++) {
        int64_t a = key_at(key, size, j - 1), b = key_at(key, size, j);
        if (b < a || (b == a && ts[j] < ts[j - 1]))
            return 0;
    }
    return 1;
}

/* the first position in [a, b) whose time is > t (upper) or >= t (!upper) */
static inline Py_ssize_t bound(const int64_t *ts, Py_ssize_t a, Py_ssize_t b, int64_t t,
                               int upper)
{
    while (a < b) {
        Py_ssize_t mid = a + (b - a) / 2;
        if (upper ? ts[mid] <= t : ts[mid] < t)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* bound() from a, a position before which every time is below t (<= t when upper),
 * by steps that double: near a, as where the same key's previous search ended */
static inline Py_ssize_t gallop(const int64_t *ts, Py_ssize_t a, Py_ssize_t b, int64_t t,
                                int upper)
{
    Py_ssize_t step = 1, hi = a;
    while (hi < b && (upper ? ts[hi] <= t : ts[hi] < t)) {
        a = hi + 1;
        hi = a + step;
        step <<= 1;
    }
    return bound(ts, a, hi < b ? hi : b, t, upper);
}

/*
 * asof_grouped(lts, lkey, rts, rkey, lo, span, forward, strict, out) -> bool
 *
 * The right rows in (key, time) order: for each left row (any order), the right row of
 * its key with the nearest time backward (the last with rts <= lts; < when strict) or
 * forward (the first with rts >= lts; > when strict), or -1.  A binary search in the
 * key's rows, found by a table of each key's first row.  False (out not filled) when
 * the right rows are not in (key, time) order; ValueError on a key outside
 * [lo, lo + span).
 */
PyObject *pass_asof_grouped(PyObject *self, PyObject *args)
{
    PyObject *lts_o, *lkey_o, *rts_o, *rkey_o, *out_o;
    long long lo, span;
    int forward, strict;
    if (!PyArg_ParseTuple(args, "OOOOLLppO", &lts_o, &lkey_o, &rts_o, &rkey_o, &lo, &span,
                          &forward, &strict, &out_o))
        return NULL;
    if (span < 1 || span > ((long long)1 << 31) || lo < -((long long)1 << 62) ||
        lo > ((long long)1 << 62)) {
        PyErr_SetString(PyExc_ValueError, "asof_grouped: span must be in [1, 2**31]");
        return NULL;
    }
    Arr lts = {0}, lkey = {0}, rts = {0}, rkey = {0}, out = {0};
    PyObject *res = NULL;
    if (arr_get(lts_o, &lts, 8, 0, "asof_grouped lts") < 0 ||
        arr_get(rts_o, &rts, 8, 0, "asof_grouped rts") < 0 ||
        arr_get(out_o, &out, 8, 1, "asof_grouped out") < 0)
        goto done;
    Py_ssize_t nl = arr_len(&lts), nr = arr_len(&rts);
    if (key_get(lkey_o, &lkey, nl, "asof_grouped lkey") < 0 ||
        key_get(rkey_o, &rkey, nr, "asof_grouped rkey") < 0)
        goto done;
    if (arr_len(&out) != nl) {
        PyErr_SetString(PyExc_ValueError, "asof_grouped: out must have one slot a left row");
        goto done;
    }
    const int64_t *lt = lts.view.buf, *rt = rts.view.buf;
    const void *lk = lkey.view.buf, *rk = rkey.view.buf;
    Py_ssize_t lsz = lkey.view.itemsize, rsz = rkey.view.itemsize;
    int64_t *o = out.view.buf;
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    if (!keys_in(lk, lsz, nl, lo, span) || !keys_in(rk, rsz, nr, lo, span))
        rc = -2;
    else if (!key_time_sorted(rt, rk, rsz, nr))
        rc = 1;
    else {
        /* first[k]..first[k + 1]: the rows of key lo + k; at[k], at_t[k]: where the
         * key's last search ended and for what time (left rows of a key often come in
         * time order: the next search starts there) */
        int64_t *first = calloc((size_t)span + 1, sizeof(int64_t));
        int64_t *at = malloc((size_t)span * sizeof(int64_t));
        int64_t *at_t = malloc((size_t)span * sizeof(int64_t));
        if (!first || !at || !at_t)
            rc = -1;
        else {
            for (Py_ssize_t j = 0; j < nr; j++)
                first[(uint64_t)key_at(rk, rsz, j) - (uint64_t)lo + 1]++;
            for (int64_t k = 0; k < span; k++) {
                first[k + 1] += first[k];
                at[k] = -1;
            }
            int upper = forward ? strict : !strict;
            for (Py_ssize_t i = 0; i < nl; i++) {
                uint64_t k = (uint64_t)key_at(lk, lsz, i) - (uint64_t)lo;
                Py_ssize_t a = first[k], b = first[k + 1], p;
                int64_t t = lt[i];
                if (at[k] >= 0 && t >= at_t[k])
                    p = gallop(rt, at[k], b, t, upper);
                else
                    p = bound(rt, a, b, t, upper);
                at[k] = p;
                at_t[k] = t;
                if (forward)
                    o[i] = p < b ? p : -1;
                else
                    o[i] = p > a ? p - 1 : -1;
            }
        }
        free(first);
        free(at);
        free(at_t);
    }
    Py_END_ALLOW_THREADS
    if (rc == -1)
        PyErr_NoMemory();
    else if (rc == -2)
        PyErr_SetString(PyExc_ValueError, "asof_grouped: a key outside [lo, lo + span)");
    else
        res = PyBool_FromLong(rc == 0);
done:
    arr_release(&lts);
    arr_release(&lkey);
    arr_release(&rts);
    arr_release(&rkey);
    arr_release(&out);
    return res;
}
