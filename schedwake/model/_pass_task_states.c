/*
 * _pass_task_states.c: the per-row passes of the task states (task_states.py):
 * ordering the tasks' events by (task, time, priority), the scan of each task's
 * events in that order that gives its intervals, and the sums of the intervals' ns
 * per group and state.  task_states.py says what the states mean; here are only the
 * loops.  Every index read from an array is checked against the array it indexes
 * before use; an array of the wrong kind or length raises, as does a code or group
 * out of its range.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

/* the codes of task_states.py (_RUN ... _KEEP, _PRIO_OUT) */
enum { RUN, PRE, WOKEN, SLEEP, BLOCK, UNK, DEAD, WAKE, KEEP, NCODES };
enum { PRIO_OUT = 1 };
#define NSTATES 6
/* per-task flags of task_states_scan */
enum { G_BORN = 1, G_UNSEEN = 2, G_GONE = 4 };

/* One row of a task's events, as task_states.py's _ROW dtype lays it out (24 bytes):
 * rows move as one record (one memory access each when gathered or merged), not as a
 * column each; the task is its slot in the counting sort (its rank, or its key - lo:
 * 32 bits, where a life key takes 64), the CPU 32 bits (as the tables' columns). */
typedef struct {
    int64_t ts;
    int32_t key, cpu;
    int32_t letters;
    int8_t code, prio, mark, pad;
} Row;
_Static_assert(sizeof(Row) == 24, "Row must be 24 bytes");

/* Take ``obj`` (bytes: a uint8 view of an array of Row) as n rows; -1: not one. */
static int rows_get(PyObject *obj, Arr *a, int writable, const char *what, Py_ssize_t *n)
{
    if (arr_get(obj, a, 1, writable, what) < 0)
        return -1;
    if (arr_len(a) % (Py_ssize_t)sizeof(Row) || (uintptr_t)a->view.buf % 8) {
        PyErr_Format(PyExc_ValueError, "%s: whole, aligned rows of %zd bytes are needed",
                     what, (Py_ssize_t)sizeof(Row));
        arr_release(a);
        return -1;
    }
    *n = arr_len(a) / (Py_ssize_t)sizeof(Row);
    return 0;
}

/* ---- task_sort_parts -------------------------------------------------------- */

/* One column of a part of rows: an array of 1-, 4- or 8-byte signed integers, or one
 * value for every row (a Python int). */
typedef struct {
    Arr arr;
    const void *p;
    int size; /* 0: the one value */
    int64_t value;
} Col;

static inline int64_t col_at(const Col *c, Py_ssize_t i)
{
    switch (c->size) {
    case 1:
        return ((const int8_t *)c->p)[i];
    case 4:
        return ((const int32_t *)c->p)[i];
    case 8:
        return ((const int64_t *)c->p)[i];
    default:
        return c->value;
    }
}

/* Take ``obj`` as a column of n rows; -1 (a Python error set): not one. */
static int col_get(PyObject *obj, Col *c, Py_ssize_t n, const char *what)
{
    c->arr.held = 0;
    c->size = 0;
    c->p = NULL;
    if (PyLong_Check(obj)) {
        c->value = PyLong_AsLongLong(obj);
        return c->value == -1 && PyErr_Occurred() ? -1 : 0;
    }
    Py_buffer probe;
    if (PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    Py_ssize_t size = probe.itemsize;
    PyBuffer_Release(&probe);
    if (size != 1 && size != 4 && size != 8) {
        PyErr_Format(PyExc_TypeError, "%s: 1-, 4- or 8-byte integers are needed", what);
        return -1;
    }
    if (arr_get(obj, &c->arr, size, 0, what) < 0)
        return -1;
    if (arr_len(&c->arr) != n) {
        PyErr_Format(PyExc_ValueError, "%s: one value a row is needed", what);
        arr_release(&c->arr);
        return -1;
    }
    c->p = c->arr.view.buf;
    c->size = (int)size;
    return 0;
}

enum { F_KEY, F_CPU, F_CODE, F_PRIO, F_LETTERS, F_MARK, NFILL };

/* One part of rows: its ts (int64s) and columns, its rows' slots (NULL: key - lo). */
typedef struct {
    Arr ts_arr, slot_arr;
    const int64_t *ts, *slot;
    Col c[NFILL];
    Py_ssize_t n;
    int got; /* columns taken */
} Part;

static void part_release(Part *p)
{
    for (int j = 0; j < p->got; j++)
        arr_release(&p->c[j].arr);
    arr_release(&p->ts_arr);
    arr_release(&p->slot_arr);
}

/* Take item ``tuple`` (ts, key, cpu, code, prio, letters, mark) and ``slot`` (None or
 * int64s, one a row) as a part; -1 (a Python error set): not one. */
static int part_get(PyObject *tuple, PyObject *slot, Part *p)
{
    static const char *what[NFILL] = {
        "task_sort_parts key", "task_sort_parts cpu", "task_sort_parts code",
        "task_sort_parts prio", "task_sort_parts letters", "task_sort_parts mark",
    };
    p->got = 0;
    p->ts_arr.held = p->slot_arr.held = 0;
    p->slot = NULL;
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != NFILL + 1) {
        PyErr_SetString(PyExc_TypeError, "task_sort_parts: a part is a tuple of 7 columns");
        return -1;
    }
    if (arr_get(PyTuple_GET_ITEM(tuple, 0), &p->ts_arr, 8, 0, "task_sort_parts ts") < 0)
        return -1;
    p->ts = p->ts_arr.view.buf;
    p->n = arr_len(&p->ts_arr);
    for (; p->got < NFILL; p->got++)
        if (col_get(PyTuple_GET_ITEM(tuple, p->got + 1), &p->c[p->got], p->n,
                    what[p->got]) < 0)
            goto fail;
    if (p->c[F_KEY].size == 1) {
        PyErr_SetString(PyExc_TypeError, "task_sort_parts key: 4- or 8-byte integers");
        goto fail;
    }
    if (slot != Py_None) {
        if (arr_get(slot, &p->slot_arr, 8, 0, "task_sort_parts slot") < 0)
            goto fail;
        if (arr_len(&p->slot_arr) != p->n) {
            PyErr_SetString(PyExc_ValueError, "task_sort_parts: a slot a row");
            goto fail;
        }
        p->slot = p->slot_arr.view.buf;
    }
    return 0;
fail:
    part_release(p);
    return -1;
}

/* (ts, prio) of row i of part a before that of row j of part b */
static inline int part_less(const Part *a, Py_ssize_t i, const Part *b, Py_ssize_t j)
{
    int64_t pa = col_at(&a->c[F_PRIO], i), pb = col_at(&b->c[F_PRIO], j);
    return a->ts[i] < b->ts[j] || (a->ts[i] == b->ts[j] && pa < pb);
}

/* the next row of part p at or after i whose key is not 0 (p->n: none) */
static inline Py_ssize_t next_kept(const Part *p, Py_ssize_t i)
{
    while (i < p->n && col_at(&p->c[F_KEY], i) == 0)
        i++;
    return i;
}

/* A row's slot: its slot when given, else its key - lo (unsigned: a key below lo
 * wraps above span, and nothing overflows). */
static inline uint64_t part_slot(const Part *p, Py_ssize_t i, int64_t lo)
{
    return p->slot ? (uint64_t)p->slot[i] : (uint64_t)col_at(&p->c[F_KEY], i) - (uint64_t)lo;
}

/* Row i of part p, of slot q, as a Row. */
static inline void row_of(const Part *p, Py_ssize_t i, uint64_t q, Row *r)
{
    r->ts = p->ts[i];
    r->key = (int32_t)q;
    r->cpu = (int32_t)col_at(&p->c[F_CPU], i);
    r->letters = (int32_t)col_at(&p->c[F_LETTERS], i);
    r->code = (int8_t)col_at(&p->c[F_CODE], i);
    r->prio = (int8_t)col_at(&p->c[F_PRIO], i);
    r->mark = (int8_t)col_at(&p->c[F_MARK], i);
    r->pad = 0;
}

/* The rows of one slot, runs one after another (run r: from head[r] to end[r], each in
 * (ts, prio) order), merged by (ts, prio), ties in run order, into tmp: a linear
 * minimum over the runs' heads (few: one a part), each head's (ts, prio) kept at hand,
 * a run taken out of the heads (in order) when it ends.  Returns the rows merged. */
static Py_ssize_t merge_runs(const Row *rows, int64_t *head, int64_t *end, int64_t *hts,
                             int *hprio, int64_t nr, Row *tmp)
{
    Py_ssize_t w = 0;
    for (int64_t r = 0; r < nr; r++) {
        hts[r] = rows[head[r]].ts;
        hprio[r] = rows[head[r]].prio;
    }
    while (nr > 0) {
        int64_t best = 0;
        for (int64_t r = 1; r < nr; r++)
            if (hts[r] < hts[best] || (hts[r] == hts[best] && hprio[r] < hprio[best]))
                best = r;
        tmp[w++] = rows[head[best]++];
        if (head[best] < end[best]) {
            hts[best] = rows[head[best]].ts;
            hprio[best] = rows[head[best]].prio;
            continue;
        }
        for (int64_t r = best; r + 1 < nr; r++) { /* (the runs after it move up) */
            head[r] = head[r + 1];
            end[r] = end[r + 1];
            hts[r] = hts[r + 1];
            hprio[r] = hprio[r + 1];
        }
        nr--;
    }
    return w;
}

/* The rows of the k parts (each in (ts, prio) order) but those of key 0 into out in
 * (slot, ts, prio) order, ties in part order, then row order: each row's slot counted
 * per part (every one checked to lie in [0, span), every part to be in order, before
 * anything is written), each part's rows placed at their slot's next position for that
 * part (a counting sort by (slot, part), one part after another: each read in order),
 * then each slot's runs (one a part) merged by (ts, prio) through a buffer as large as
 * the largest slot; each slot's count into counts (NULL: not asked for).  The number of
 * rows written; -1: no memory; -2: a slot out of range; -3 - j: part j out of order. */
static Py_ssize_t sort_parts(const Part *p, int64_t k, int64_t lo, int64_t span, Row *out,
                             int64_t *counts)
{
    /* at[q * k + j]: the rows of slot q in part j, then where the next goes */
    int64_t *at = calloc((size_t)span * (size_t)(k > 0 ? k : 1), sizeof(int64_t));
    int64_t *head = malloc(sizeof(int64_t) * (size_t)(k + 1));
    int64_t *end = malloc(sizeof(int64_t) * (size_t)(k + 1));
    int64_t *hts = malloc(sizeof(int64_t) * (size_t)(k + 1));
    int *hprio = malloc(sizeof(int) * (size_t)(k + 1));
    Row *tmp = NULL;
    Py_ssize_t m = 0;
    if (!at || !head || !end || !hts || !hprio) {
        m = -1;
        goto done;
    }
    for (int64_t j = 0; j < k; j++) {
        Py_ssize_t prev = -1;
        for (Py_ssize_t i = next_kept(&p[j], 0); i < p[j].n; i = next_kept(&p[j], i + 1)) {
            if (prev >= 0 && part_less(&p[j], i, &p[j], prev)) {
                m = -3 - j;
                goto done;
            }
            prev = i;
            uint64_t q = part_slot(&p[j], i, lo);
            if (q >= (uint64_t)span) {
                m = -2;
                goto done;
            }
            at[q * (uint64_t)k + (uint64_t)j]++;
        }
    }
    int64_t run = 0, largest = 0;
    for (int64_t q = 0; q < span; q++) {
        int64_t first = run;
        for (int64_t j = 0; j < k; j++) {
            int64_t c = at[q * k + j];
            at[q * k + j] = run;
            run += c;
        }
        if (counts)
            counts[q] = run - first;
        if (run - first > largest)
            largest = run - first;
    }
    for (int64_t j = 0; j < k; j++) {
        for (Py_ssize_t i = next_kept(&p[j], 0); i < p[j].n; i = next_kept(&p[j], i + 1)) {
            uint64_t q = part_slot(&p[j], i, lo);
            if (q >= (uint64_t)span) { /* (read again: checked again) */
                m = -2;
                goto done;
            }
            row_of(&p[j], i, q, &out[at[q * (uint64_t)k + (uint64_t)j]++]);
            m++;
        }
    }
    /* at[q * k + j] is now where slot q's run of part j ends */
    tmp = malloc(sizeof(Row) * (size_t)(largest > 0 ? largest : 1));
    if (!tmp) {
        m = -1;
        goto done;
    }
    int64_t start = 0;
    for (int64_t q = 0; q < span; q++) {
        int64_t nr = 0, b = start;
        for (int64_t j = 0; j < k; j++) {
            int64_t e = at[q * k + j];
            if (e > b) {
                head[nr] = b;
                end[nr++] = e;
            }
            b = e;
        }
        if (nr > 1) {
            Py_ssize_t w = merge_runs(out, head, end, hts, hprio, nr, tmp);
            memcpy(&out[start], tmp, sizeof(Row) * (size_t)w);
        }
        start = b;
    }
done:
    free(at);
    free(head);
    free(end);
    free(hts);
    free(hprio);
    free(tmp);
    return m;
}

PyObject *pass_task_sort_parts(PyObject *self, PyObject *args)
{
    PyObject *o_parts, *o_slots, *o_out, *o_counts = Py_None;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOLLO|O", &o_parts, &o_slots, &lo, &span, &o_out, &o_counts))
        return NULL;
    /* the count table is span + 1 entries: the caller keeps span near the rows */
    if (!range_ok("task_sort_parts", lo, span))
        return NULL;
    if (!PyList_Check(o_parts) || (o_slots != Py_None && (!PyList_Check(o_slots) ||
                                   PyList_GET_SIZE(o_slots) != PyList_GET_SIZE(o_parts)))) {
        PyErr_SetString(PyExc_TypeError,
                        "task_sort_parts: parts a list, slots None or a list as long");
        return NULL;
    }
    Py_ssize_t k = PyList_GET_SIZE(o_parts), got = 0, total = 0, cap;
    if (k >= ((Py_ssize_t)1 << 31)) { /* (a part's number is 32 bits in the merge) */
        PyErr_SetString(PyExc_ValueError, "task_sort_parts: too many parts");
        return NULL;
    }
    Arr out, counts = {.held = 0};
    if (rows_get(o_out, &out, 1, "task_sort_parts out", &cap) < 0)
        return NULL;
    if (o_counts != Py_None) {
        if (arr_get(o_counts, &counts, 8, 1, "task_sort_parts counts") < 0) {
            arr_release(&out);
            return NULL;
        }
        if (arr_len(&counts) != span) {
            arr_release(&out);
            arr_release(&counts);
            PyErr_SetString(PyExc_ValueError, "task_sort_parts: counts one a slot");
            return NULL;
        }
    }
    Part *p = calloc((size_t)(k > 0 ? k : 1), sizeof(Part));
    if (!p) {
        arr_release(&out);
        arr_release(&counts);
        return PyErr_NoMemory();
    }
    Py_ssize_t m = 0;
    int failed = 0; /* (a Python error set) */
    for (; got < k; got++) {
        PyObject *slot = o_slots == Py_None ? Py_None : PyList_GET_ITEM(o_slots, got);
        if (part_get(PyList_GET_ITEM(o_parts, got), slot, &p[got]) < 0) {
            failed = 1;
            break;
        }
        total += p[got].n;
    }
    if (!failed && total > cap) {
        PyErr_SetString(PyExc_ValueError, "task_sort_parts: out must have room for the rows");
        failed = 1;
    }
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS
        m = sort_parts(p, k, lo, span, out.view.buf, counts.held ? counts.view.buf : NULL);
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t j = 0; j < got; j++)
        part_release(&p[j]);
    free(p);
    arr_release(&out);
    arr_release(&counts);
    if (failed)
        return NULL;
    if (m == -1)
        return PyErr_NoMemory();
    if (m == -2) {
        PyErr_SetString(PyExc_ValueError, "task_sort_parts: a key outside [lo, lo + span)");
        return NULL;
    }
    /* -3 - j: part j out of (ts, prio) order, as -1 - j */
    return PyLong_FromSsize_t(m <= -3 ? m + 2 : m);
}

/* ---- keyed_last_below ------------------------------------------------------- */

PyObject *pass_keyed_last_below(PyObject *self, PyObject *args)
{
    PyObject *o_rows, *o_qkey, *o_qts, *o_out;
    if (!PyArg_ParseTuple(args, "OOOO", &o_rows, &o_qkey, &o_qts, &o_out))
        return NULL;
    Arr rows, qkey, qts, out;
    Py_ssize_t n;
    if (rows_get(o_rows, &rows, 0, "keyed_last_below rows", &n) < 0)
        return NULL;
    ArrSpec spec[] = {
        {o_qkey, &qkey, 8, 0, "keyed_last_below qkey"},
        {o_qts, &qts, 8, 0, "keyed_last_below qts"},
        {o_out, &out, 8, 1, "keyed_last_below out"},
    };
    const int ns = 3;
    if (arrs_get(spec, ns) < 0) {
        arr_release(&rows);
        return NULL;
    }
    Py_ssize_t q = arr_len(&qkey);
    if (arr_len(&qts) != q || arr_len(&out) != q) {
        arr_release(&rows);
        return value_error(spec, ns, "keyed_last_below: arrays of unequal lengths");
    }
    const Row *r = rows.view.buf;
    const int64_t *qk = qkey.view.buf, *qt = qts.view.buf;
    int64_t *o = out.view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < q; j++) {
        /* the first row not below (qk, qt): every position stays in [0, n] */
        Py_ssize_t lo = 0, hi = n;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (r[mid].key < qk[j] || (r[mid].key == qk[j] && r[mid].ts < qt[j]))
                lo = mid + 1;
            else
                hi = mid;
        }
        o[j] = (lo > 0 && r[lo - 1].key == qk[j]) ? (int64_t)(lo - 1) : -1;
    }
    Py_END_ALLOW_THREADS
    arr_release(&rows);
    arrs_release(spec, ns);
    Py_RETURN_NONE;
}

/* ---- merge_rows_into -------------------------------------------------------- */

PyObject *pass_merge_rows_into(PyObject *self, PyObject *args)
{
    PyObject *o_buf, *o_b;
    Py_ssize_t na;
    if (!PyArg_ParseTuple(args, "OnO", &o_buf, &na, &o_b))
        return NULL;
    Arr buf, b;
    Py_ssize_t cap, nb;
    if (rows_get(o_buf, &buf, 1, "merge_rows_into buf", &cap) < 0)
        return NULL;
    if (rows_get(o_b, &b, 0, "merge_rows_into b", &nb) < 0) {
        arr_release(&buf);
        return NULL;
    }
    if (na < 0 || na > cap || nb > cap - na) {
        arr_release(&buf);
        arr_release(&b);
        PyErr_SetString(PyExc_ValueError,
                        "merge_rows_into: buf must hold its n rows and room for b's");
        return NULL;
    }
    Row *o = buf.view.buf;
    const Row *rb = b.view.buf;
    Py_BEGIN_ALLOW_THREADS
    /* from the back: the slot written (x + y + 1 after the step) is never a row of
     * buf's not yet read (below x); on ties b's row goes after a's */
    Py_ssize_t x = na - 1, y = nb - 1, z = na + nb - 1;
    while (y >= 0) {
        int a_last = 0;
        if (x >= 0) {
            const Row *r = &o[x], *t = &rb[y];
            a_last = r->key > t->key ||
                     (r->key == t->key && (r->ts > t->ts || (r->ts == t->ts && r->prio > t->prio)));
        }
        if (a_last)
            o[z--] = o[x--];
        else
            o[z--] = rb[y--];
    }
    Py_END_ALLOW_THREADS
    arr_release(&buf);
    arr_release(&b);
    Py_RETURN_NONE;
}

/* ---- task_states_in_flight -------------------------------------------------- */

PyObject *pass_task_states_in_flight(PyObject *self, PyObject *args)
{
    PyObject *o_rows, *o_at, *o_wake;
    if (!PyArg_ParseTuple(args, "OOO", &o_rows, &o_at, &o_wake))
        return NULL;
    Arr rows, at, wake;
    Py_ssize_t n;
    if (rows_get(o_rows, &rows, 0, "task_states_in_flight rows", &n) < 0)
        return NULL;
    ArrSpec spec[] = {
        {o_at, &at, 8, 1, "task_states_in_flight at"},
        {o_wake, &wake, 8, 1, "task_states_in_flight wake"},
    };
    const int ns = 2;
    if (arrs_get(spec, ns) < 0) {
        arr_release(&rows);
        return NULL;
    }
    if (arr_len(&at) != n || arr_len(&wake) != n) {
        arr_release(&rows);
        return value_error(spec, ns, "task_states_in_flight: at and wake one slot a row");
    }
    const Row *r = rows.view.buf;
    int64_t *oa = at.view.buf, *ow = wake.view.buf;
    Py_ssize_t m = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t last_in = -1, last_wake = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || r[i].key != r[i - 1].key)
            last_in = last_wake = -1;
        int c = r[i].code;
        if (c == RUN)
            last_in = i;
        else if (c == WAKE)
            last_wake = i;
        if (r[i].prio == PRIO_OUT && last_wake > last_in && last_in >= 0 &&
            (c == SLEEP || c == BLOCK)) {
            oa[m] = i;
            ow[m] = last_wake;
            m++;
        }
    }
    Py_END_ALLOW_THREADS
    arr_release(&rows);
    arrs_release(spec, ns);
    return PyLong_FromSsize_t(m);
}

/* ---- task_states_scan, task_states_sums ------------------------------------- */

/* One interval of a task in the making: what it is, from when. */
typedef struct {
    int64_t key, start;
    int64_t cpu, since;
    int state;
} Interval;

typedef struct {
    const Row *row;
    const int64_t *gkey, *gend; /* each task's key (a life key) and end */
    const int8_t *gflags;
    Py_ssize_t n, ngroups;
    int unseen_given;
    /* the intervals (task_states_scan), else NULL */
    int64_t *o_key, *o_start, *o_end;
    int32_t *o_cpu, *o_since;
    int32_t *o_pid; /* NULL: not written; else each row's key & pid_mask */
    int64_t pid_mask;
    int8_t *o_state;
    /* else their ns per (task, CPU) and state (task_states_sums): the CPUs in
     * [-1, cpu_hi]; each group's key, CPU and ns (NSTATES a group), cap groups at most */
    int64_t cpu_hi, *g_key, *g_ns;
    int32_t *g_cpu;
    Py_ssize_t cap;
    /* (task_states_sums) the current task's ns per CPU + 1 and state, the CPUs it
     * has intervals on (+ 1), as a list and flags */
    int64_t *acc, *touched;
    uint8_t *on;
    Py_ssize_t ntouched;
} Scan;

/* The interval iv ends at end (after its start): written as the m-th (the intervals),
 * or its ns added to its task's on its CPU (the sums).  -2: a CPU out of range. */
static inline int emit(Scan *s, const Interval *iv, int64_t end, Py_ssize_t m)
{
    if (!s->acc) {
        s->o_key[m] = iv->key;
        if (s->o_pid)
            s->o_pid[m] = (int32_t)(iv->key & s->pid_mask);
        s->o_cpu[m] = (int32_t)iv->cpu;
        s->o_start[m] = iv->start;
        s->o_end[m] = end;
        s->o_state[m] = (int8_t)iv->state;
        s->o_since[m] = (int32_t)iv->since;
        return 0;
    }
    /* (grouped by the CPU as the intervals' int32 column gives it) */
    uint64_t c = (uint64_t)(int64_t)(int32_t)iv->cpu + 1;
    if (c > (uint64_t)s->cpu_hi + 1 || iv->state < 0 || iv->state >= NSTATES)
        return -2;
    int64_t *a = &s->acc[c * NSTATES];
    if (!s->on[c]) { /* (a CPU of the task's, once) */
        s->on[c] = 1;
        s->touched[s->ntouched++] = (int64_t)c;
    }
    /* (unsigned: wraps as NumPy's int64 arithmetic does, never undefined) */
    a[iv->state] = (int64_t)((uint64_t)a[iv->state] + ((uint64_t)end - (uint64_t)iv->start));
    return 0;
}

/* The sums of the current task (key) out as its groups, its CPUs ascending, and its
 * table cleared.  -5: more groups than room. */
static int task_sums_out(Scan *s, int64_t key, Py_ssize_t *groups)
{
    int64_t *t = s->touched;
    for (Py_ssize_t i = 1; i < s->ntouched; i++) /* (few: an insertion sort) */
        for (Py_ssize_t j = i; j > 0 && t[j - 1] > t[j]; j--) {
            int64_t x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    for (Py_ssize_t i = 0; i < s->ntouched; i++) {
        if (*groups >= s->cap)
            return -5;
        int64_t *a = &s->acc[t[i] * NSTATES];
        s->g_key[*groups] = key;
        s->g_cpu[*groups] = (int32_t)(t[i] - 1);
        memcpy(&s->g_ns[*groups * NSTATES], a, sizeof(int64_t) * NSTATES);
        memset(a, 0, sizeof(int64_t) * NSTATES);
        s->on[t[i]] = 0;
        (*groups)++;
    }
    s->ntouched = 0;
    return 0;
}

/* The intervals (or their sums, s->acc given) of the rows: their number (the groups'
 * with sums); -1: no memory; -2: a code (or a CPU) out of range; -3: more tasks than
 * flags; -4: fewer; -5: more groups than room */
static Py_ssize_t scan(Scan *s)
{
    int8_t *ncode = NULL;
    int64_t *bump = NULL;
    Py_ssize_t cap = 0, m = 0, g = 0, groups = 0;
    int64_t run = 0; /* the running sum of the marks, over all rows */
    Py_ssize_t a = 0;
    Py_ssize_t rc = 0;
    while (a < s->n) {
        Py_ssize_t b = a + 1;
        while (b < s->n && s->row[b].key == s->row[a].key)
            b++;
        if (g >= s->ngroups) {
            rc = -3;
            goto done;
        }
        Py_ssize_t len = b - a;
        if (len > cap) {
            free(ncode);
            free(bump);
            cap = len > 2 * cap ? len : 2 * cap;
            ncode = malloc((size_t)cap);
            bump = malloc(sizeof(int64_t) * (size_t)cap);
            if (!ncode || !bump) {
                rc = -1;
                goto done;
            }
        }
        memset(bump, 0, sizeof(int64_t) * (size_t)len);
        /* the wake-ups: a wake-up of a task off the CPU wakes it; one of a task
         * already woken and not seen running since makes the time from that earlier
         * wake-up (or its woken state) unknown */
        int last_def = -1;
        int64_t def_at = -1, wake_at = -1;
        for (Py_ssize_t i = a; i < b; i++) {
            int c = s->row[i].code;
            if (c < 0 || c >= NCODES) {
                rc = -2;
                goto done;
            }
            ncode[i - a] = (int8_t)c;
            if (c <= DEAD) {
                last_def = c;
                def_at = i;
            } else if (c == WAKE) {
                int running = last_def == RUN || last_def == PRE;
                int by_wake = wake_at > def_at;
                if (!running && (by_wake || last_def == WOKEN)) {
                    int64_t since = by_wake ? wake_at : def_at; /* in [a, i) */
                    bump[since - a] += 1;
                    bump[i - a] -= 1;
                }
                ncode[i - a] = running ? KEEP : WOKEN;
                wake_at = i;
            }
        }
        int flags = s->gflags[g];
        int state = -1;
        int64_t where = -1, carry = -1;
        Interval iv = {0, 0, -1, -1, -1};
        int have = 0;
        for (Py_ssize_t i = a; i < b; i++) {
            int c = ncode[i - a];
            if (c != KEEP)
                state = c;
            int st = state >= 0 ? state : (flags & G_BORN ? DEAD : UNK);
            run += s->row[i].mark + bump[i - a];
            if (run > 0 && st != DEAD)
                st = UNK;
            if ((flags & G_UNSEEN) && st == WOKEN)
                st = UNK;
            if (s->row[i].cpu >= 0)
                where = s->row[i].cpu;
            /* the letters of a switch-out (+1), carried over what follows it but a
             * definite state (0: none) */
            int64_t cv = s->row[i].prio == PRIO_OUT ? (int64_t)s->row[i].letters + 1
                                                    : (s->row[i].code <= DEAD ? 0 : -1);
            if (cv >= 0)
                carry = cv;
            int64_t since = carry - 1 > -1 ? carry - 1 : -1;
            if (st == RUN)
                since = -1;
            if (i > a && st == iv.state && where == iv.cpu && since == iv.since)
                continue; /* nothing changes: the interval goes on */
            /* the interval before ends here (kept when it ends after it starts,
             * alive) */
            if (have && iv.state != DEAD && s->row[i].ts > iv.start) {
                if (emit(s, &iv, s->row[i].ts, m) < 0) {
                    rc = -2;
                    goto done;
                }
                m++;
            }
            Interval next = {s->gkey[g], s->row[i].ts, where, since, st};
            iv = next;
            have = 1;
        }
        /* the task's last interval: to its end; unknown when its death is missing; a
         * wait after a wake-up that no run ends is not proven on a trace lacking events */
        if (have) {
            if ((flags & G_GONE) && iv.state != DEAD)
                iv.state = UNK;
            if (s->unseen_given && iv.state == WOKEN)
                iv.state = UNK;
            if (iv.state != DEAD && s->gend[g] > iv.start) {
                if (emit(s, &iv, s->gend[g], m) < 0) {
                    rc = -2;
                    goto done;
                }
                m++;
            }
        }
        if (s->acc && task_sums_out(s, s->gkey[g], &groups) < 0) {
            rc = -5;
            goto done;
        }
        g++;
        a = b;
    }
    if (g != s->ngroups)
        rc = -4;
done:
    free(ncode);
    free(bump);
    return rc < 0 ? rc : (s->acc ? groups : m);
}

/* A scan's error as a Python exception (NULL), or its count. */
static PyObject *scan_result(Py_ssize_t m, const char *pass)
{
    if (m == -1)
        return PyErr_NoMemory();
    if (m == -2) {
        PyErr_Format(PyExc_ValueError, "%s: a code or CPU out of range", pass);
        return NULL;
    }
    if (m == -5) {
        PyErr_Format(PyExc_ValueError, "%s: more groups than the outputs' room", pass);
        return NULL;
    }
    if (m < 0) {
        PyErr_Format(PyExc_ValueError, "%s: gflags must have one entry per task", pass);
        return NULL;
    }
    return PyLong_FromSsize_t(m);
}

PyObject *pass_task_states_scan(PyObject *self, PyObject *args)
{
    PyObject *o_rows, *o[10];
    int unseen_given;
    long long pid_mask = 0;
    o[9] = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOpOOOOOO|OL", &o_rows, &o[0], &o[1], &o[2], &unseen_given,
                          &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &pid_mask))
        return NULL;
    Arr rows, gkey, gflags, gend, okey, ocpu, ostart, oend, ostate, osince, opid;
    Py_ssize_t n;
    if (rows_get(o_rows, &rows, 0, "task_states_scan rows", &n) < 0)
        return NULL;
    ArrSpec spec[] = {
        {o[0], &gkey, 8, 0, "task_states_scan gkey"},
        {o[1], &gflags, 1, 0, "task_states_scan gflags"},
        {o[2], &gend, 8, 0, "task_states_scan gend"},
        {o[3], &okey, 8, 1, "task_states_scan out key"},
        {o[4], &ocpu, 4, 1, "task_states_scan out cpu"},
        {o[5], &ostart, 8, 1, "task_states_scan out start"},
        {o[6], &oend, 8, 1, "task_states_scan out end"},
        {o[7], &ostate, 1, 1, "task_states_scan out state"},
        {o[8], &osince, 4, 1, "task_states_scan out since"},
        {o[9], &opid, 4, 1, "task_states_scan out pid"},
    };
    const int ns = o[9] == Py_None ? 9 : 10; /* (the pids only when asked for) */
    if (arrs_get(spec, ns) < 0) {
        arr_release(&rows);
        return NULL;
    }
    for (int i = 3; i < ns; i++) {
        if (arr_len(spec[i].arr) != n) {
            arr_release(&rows);
            return value_error(spec, ns, "task_states_scan: the outputs one slot a row");
        }
    }
    if (arr_len(&gend) != arr_len(&gflags) || arr_len(&gkey) != arr_len(&gflags)) {
        arr_release(&rows);
        return value_error(spec, ns, "task_states_scan: gkey, gflags and gend must be as long");
    }
    Scan s = {
        .row = rows.view.buf, .gkey = gkey.view.buf, .gend = gend.view.buf,
        .gflags = gflags.view.buf,
        .n = n, .ngroups = arr_len(&gflags), .unseen_given = unseen_given,
        .o_key = okey.view.buf, .o_start = ostart.view.buf, .o_end = oend.view.buf,
        .o_cpu = ocpu.view.buf, .o_since = osince.view.buf, .o_state = ostate.view.buf,
        .o_pid = ns == 10 ? opid.view.buf : NULL, .pid_mask = pid_mask,
    };
    Py_ssize_t m;
    Py_BEGIN_ALLOW_THREADS
    m = scan(&s);
    Py_END_ALLOW_THREADS
    arr_release(&rows);
    arrs_release(spec, ns);
    return scan_result(m, "task_states_scan");
}

PyObject *pass_task_states_sums(PyObject *self, PyObject *args)
{
    PyObject *o_rows, *o[6];
    int unseen_given;
    long long cpu_hi;
    if (!PyArg_ParseTuple(args, "OOOOpLOOO", &o_rows, &o[5], &o[0], &o[1], &unseen_given,
                          &cpu_hi, &o[2], &o[3], &o[4]))
        return NULL;
    /* (the table a task: a row of ns per CPU from -1 to cpu_hi) */
    if (cpu_hi < -1 || cpu_hi > ((long long)1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "task_states_sums: cpu_hi must be in [-1, 2**24]");
        return NULL;
    }
    Arr rows, gflags, gend, gkey, gcpu, gns, tkey;
    Py_ssize_t n;
    if (rows_get(o_rows, &rows, 0, "task_states_sums rows", &n) < 0)
        return NULL;
    ArrSpec spec[] = {
        {o[0], &gflags, 1, 0, "task_states_sums gflags"},
        {o[1], &gend, 8, 0, "task_states_sums gend"},
        {o[2], &gkey, 8, 1, "task_states_sums out key"},
        {o[3], &gcpu, 4, 1, "task_states_sums out cpu"},
        {o[4], &gns, 8, 1, "task_states_sums out ns"},
        {o[5], &tkey, 8, 0, "task_states_sums gkey"},
    };
    const int ns = 6;
    if (arrs_get(spec, ns) < 0) {
        arr_release(&rows);
        return NULL;
    }
    Py_ssize_t cap = arr_len(&gkey);
    if (arr_len(&gcpu) != cap || arr_len(&gns) != cap * NSTATES) {
        arr_release(&rows);
        return value_error(spec, ns, "task_states_sums: a key, CPU and 6 ns a group");
    }
    if (arr_len(&gend) != arr_len(&gflags) || arr_len(&tkey) != arr_len(&gflags)) {
        arr_release(&rows);
        return value_error(spec, ns, "task_states_sums: gkey, gflags and gend must be as long");
    }
    size_t cpus = (size_t)cpu_hi + 2;
    Scan s = {
        .row = rows.view.buf, .gkey = tkey.view.buf, .gend = gend.view.buf,
        .gflags = gflags.view.buf, .n = n, .ngroups = arr_len(&gflags),
        .unseen_given = unseen_given, .cpu_hi = cpu_hi, .g_key = gkey.view.buf, .g_cpu = gcpu.view.buf,
        .g_ns = gns.view.buf, .cap = cap,
    };
    Py_ssize_t m;
    Py_BEGIN_ALLOW_THREADS
    s.acc = calloc(cpus * NSTATES, sizeof(int64_t));
    s.touched = malloc(cpus * sizeof(int64_t));
    s.on = calloc(cpus, 1);
    m = s.acc && s.touched && s.on ? scan(&s) : -1;
    free(s.acc);
    free(s.touched);
    free(s.on);
    Py_END_ALLOW_THREADS
    arr_release(&rows);
    arrs_release(spec, ns);
    return scan_result(m, "task_states_sums");
}

/* ---- dense_codes ------------------------------------------------------------ */

/* Each key's rank among the distinct keys (in [lo, lo + span)) into codes, the
 * distinct keys ascending into levels; the number of them, -1: no memory, -2: a key
 * out of its range (checked before anything is written). */
#define DENSE_CODES(T)                                                                 \
    static int64_t dense_codes_##T(const T *key, Py_ssize_t n, int64_t lo, int64_t span, \
                                   int64_t *codes, T *levels)                          \
    {                                                                                  \
        int64_t *rank = calloc((size_t)span, sizeof(int64_t));                         \
        if (!rank)                                                                     \
            return -1;                                                                 \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            uint64_t k = (uint64_t)(int64_t)key[i] - (uint64_t)lo;                     \
            if (k >= (uint64_t)span) {                                                 \
                free(rank);                                                            \
                return -2;                                                             \
            }                                                                          \
            rank[k] = 1;                                                               \
        }                                                                              \
        int64_t m = 0;                                                                 \
        for (int64_t k = 0; k < span; k++)                                             \
            if (rank[k]) {                                                             \
                levels[m] = (T)(lo + k);                                               \
                rank[k] = m++;                                                         \
            }                                                                          \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            uint64_t k = (uint64_t)(int64_t)key[i] - (uint64_t)lo;                     \
            if (k >= (uint64_t)span) { /* (read again: checked again) */               \
                free(rank);                                                            \
                return -2;                                                             \
            }                                                                          \
            codes[i] = rank[k];                                                        \
        }                                                                              \
        free(rank);                                                                    \
        return m;                                                                      \
    }

DENSE_CODES(int32_t)
DENSE_CODES(int64_t)

PyObject *pass_dense_codes(PyObject *self, PyObject *args)
{
    PyObject *o_key, *o_codes, *o_levels;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OLLOO", &o_key, &lo, &span, &o_codes, &o_levels))
        return NULL;
    if (!range_ok("dense_codes", lo, span))
        return NULL;
    Arr key, codes, levels;
    if (PyObject_GetBuffer(o_key, &key.view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    Py_ssize_t size = key.view.itemsize;
    PyBuffer_Release(&key.view);
    size = size == 4 ? 4 : 8;
    ArrSpec spec[] = {
        {o_key, &key, size, 0, "dense_codes key"},
        {o_codes, &codes, 8, 1, "dense_codes codes"},
        {o_levels, &levels, size, 1, "dense_codes levels"},
    };
    const int ns = 3;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&key);
    /* (as many levels as keys or key values, whichever is fewer) */
    if (arr_len(&codes) != n || arr_len(&levels) < (n < span ? n : span))
        return value_error(spec, ns,
                           "dense_codes: codes one a key, levels one a distinct key");
    int64_t m;
    Py_BEGIN_ALLOW_THREADS
    if (size == 4)
        m = dense_codes_int32_t(key.view.buf, n, lo, span, codes.view.buf, levels.view.buf);
    else
        m = dense_codes_int64_t(key.view.buf, n, lo, span, codes.view.buf, levels.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (m == -1)
        return PyErr_NoMemory();
    if (m == -2) {
        PyErr_SetString(PyExc_ValueError, "dense_codes: a key outside [lo, lo + span)");
        return NULL;
    }
    return PyLong_FromLongLong(m);
}

/* ---- state_sums ------------------------------------------------------------- */

PyObject *pass_state_sums(PyObject *self, PyObject *args)
{
    PyObject *o_group, *o_state, *o_start, *o_end, *o_out;
    if (!PyArg_ParseTuple(args, "OOOOO", &o_group, &o_state, &o_start, &o_end, &o_out))
        return NULL;
    Arr group, state, start, end, out;
    ArrSpec spec[] = {
        {o_group, &group, 8, 0, "state_sums group"},
        {o_state, &state, 1, 0, "state_sums state"},
        {o_start, &start, 8, 0, "state_sums start"},
        {o_end, &end, 8, 0, "state_sums end"},
        {o_out, &out, 8, 1, "state_sums out"},
    };
    const int ns = 5;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&group), cells = arr_len(&out);
    if (arr_len(&state) != n || arr_len(&start) != n || arr_len(&end) != n ||
        cells % NSTATES)
        return value_error(spec, ns,
                           "state_sums: group, state, start and end as long, out a row per "
                           "group");
    const int64_t *gr = group.view.buf, *s0 = start.view.buf, *s1 = end.view.buf;
    const int8_t *st = state.view.buf;
    int64_t *o = out.view.buf;
    uint64_t groups = (uint64_t)(cells / NSTATES);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(o, 0, sizeof(int64_t) * (size_t)cells);
    for (Py_ssize_t i = 0; i < n; i++) {
        /* (each index read once, checked, then used) */
        uint64_t g = (uint64_t)gr[i];
        int c = st[i];
        if (g >= groups || c < 0 || c >= NSTATES) {
            bad = 1;
            break;
        }
        /* (unsigned: wraps as NumPy's int64 arithmetic does, never undefined) */
        uint64_t d = (uint64_t)s1[i] - (uint64_t)s0[i];
        if ((int64_t)d > 0)
            o[g * NSTATES + c] = (int64_t)((uint64_t)o[g * NSTATES + c] + d);
    }
    Py_END_ALLOW_THREADS
    if (bad)
        return value_error(spec, ns, "state_sums: a group or state out of range");
    arrs_release(spec, ns);
    Py_RETURN_NONE;
}

/* ---- seconds_texts ---------------------------------------------------------- */

/* The text of k ns as seconds, as Python's repr() writes the float k / 1e9 (k in
 * [0, 10**15): at most 15 significant digits, which a double keeps, so that the
 * shortest text that reads back as it is that decimal itself): "0.0"; from 1e-4 s
 * "I.F" (F without its trailing zeros, at least one digit); below, "D[.DDD]e-NN".
 * Returns the bytes written (at most 24). */
static int seconds_text(int64_t k, char *o)
{
    char d[24];
    int n = 0;
    if (k == 0) {
        memcpy(o, "0.0", 3);
        return 3;
    }
    if (k >= 100000) {
        int64_t ip = k / 1000000000, fp = k % 1000000000;
        do {
            d[n++] = (char)('0' + ip % 10);
            ip /= 10;
        } while (ip);
        int w = 0;
        while (n)
            o[w++] = d[--n];
        o[w++] = '.';
        if (fp == 0) {
            o[w++] = '0';
            return w;
        }
        char f[9];
        for (int i = 8; i >= 0; i--) {
            f[i] = (char)('0' + fp % 10);
            fp /= 10;
        }
        int end = 9;
        while (f[end - 1] == '0')
            end--;
        memcpy(o + w, f, (size_t)end);
        return w + end;
    }
    int64_t m = k;
    while (m) {
        d[n++] = (char)('0' + m % 10);
        m /= 10;
    }
    /* d[n - 1] is the first digit; the exponent: n - 1 - 9 (from -9 to -5) */
    int low = 0;
    while (d[low] == '0')
        low++;
    int w = 0;
    o[w++] = d[n - 1];
    if (n - 1 > low) {
        o[w++] = '.';
        for (int i = n - 2; i >= low; i--)
            o[w++] = d[i];
    }
    int e = 9 - (n - 1);
    o[w++] = 'e';
    o[w++] = '-';
    o[w++] = (char)('0' + e / 10);
    o[w++] = (char)('0' + e % 10);
    return w;
}

PyObject *pass_seconds_texts(PyObject *self, PyObject *args)
{
    PyObject *o_ns, *o_glue;
    if (!PyArg_ParseTuple(args, "OO!", &o_ns, &PyTuple_Type, &o_glue))
        return NULL;
    /* a row: its values with glue[j] between values j and j + 1 */
    Py_ssize_t cols = PyTuple_GET_SIZE(o_glue) + 1, glue_len = 0;
    for (Py_ssize_t j = 0; j + 1 < cols; j++) {
        PyObject *g = PyTuple_GET_ITEM(o_glue, j);
        if (!PyBytes_Check(g)) {
            PyErr_SetString(PyExc_TypeError, "seconds_texts: glue must be a tuple of bytes");
            return NULL;
        }
        glue_len += PyBytes_GET_SIZE(g);
    }
    Arr ns;
    if (arr_get(o_ns, &ns, 8, 0, "seconds_texts ns") < 0)
        return NULL;
    Py_ssize_t n = arr_len(&ns);
    const int64_t *k = ns.view.buf;
    if (n % cols) {
        arr_release(&ns);
        PyErr_SetString(PyExc_ValueError, "seconds_texts: ns must be whole rows");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (k[i] < 0 || k[i] >= 1000000000000000LL) {
            arr_release(&ns);
            PyErr_SetString(PyExc_ValueError, "seconds_texts: ns must be in [0, 10**15)");
            return NULL;
        }
    Py_ssize_t rows = n / cols;
    /* (each value at most 24 bytes, each row its glue and a NUL) */
    size_t cap = (size_t)n * 24 + (size_t)rows * ((size_t)glue_len + 1) + 1;
    char *buf = malloc(cap);
    if (!buf) {
        arr_release(&ns);
        return PyErr_NoMemory();
    }
    Py_ssize_t w = 0;
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (r)
            buf[w++] = '\0';
        for (Py_ssize_t j = 0; j < cols; j++) {
            if (j) {
                PyObject *g = PyTuple_GET_ITEM(o_glue, j - 1);
                memcpy(buf + w, PyBytes_AS_STRING(g), (size_t)PyBytes_GET_SIZE(g));
                w += PyBytes_GET_SIZE(g);
            }
            int64_t v = k[r * cols + j];
            /* (checked above; read again: checked again) */
            w += seconds_text(v < 0 || v >= 1000000000000000LL ? 0 : v, buf + w);
        }
    }
    arr_release(&ns);
    PyObject *out = PyBytes_FromStringAndSize(buf, w);
    free(buf);
    return out;
}
