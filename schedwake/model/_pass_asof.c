/*
 * _pass_asof.c: the keyed as-of searches of schedwake/model/_util.py:asof_index.
 *
 * asof_merge: both sides in time order (the event tables are) and keys in a small
 * range: one walk over both, a table holding each key's last right row passed (the
 * walk goes backward in time for a forward search).
 *
 * asof_slots: any left order.
 * The right rows come ordered by (key, ts, given order) through ``order`` (positions
 * into rts), each key's rows a range [starts[s], ends[s]) of that order; each left row
 * comes with the slot of its key (-1: no right row has it).  For each left row, the
 * bound of its time in its key's range is found by a galloping search from where the
 * previous row of the same key ended: left rows in time order (most) cost a step or
 * two each, any other order a binary search.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

typedef struct {
    const int64_t *rts, *order;   /* order NULL: the right rows are in order already */
} Line;

static inline int64_t at(const Line *l, Py_ssize_t j)
{
    return l->rts[l->order ? l->order[j] : j];
}

/* whether position j is past x: rts > x (upper bound) or rts >= x (lower bound) */
static inline int past(const Line *l, Py_ssize_t j, int64_t x, int upper)
{
    int64_t t = at(l, j);
    return upper ? t > x : t >= x;
}

/* the first j in [a, b) past x (b when none), searched from hint (in [a, b]) */
static Py_ssize_t bound(const Line *l, Py_ssize_t a, Py_ssize_t b, int64_t x, int upper,
                        Py_ssize_t hint)
{
    Py_ssize_t lo, hi;   /* the answer lies in [lo, hi] */
    if (hint < b && !past(l, hint, x, upper)) {
        /* forward: gallop until a position past x */
        Py_ssize_t step = 1;
        lo = hint + 1;
        hi = b;
        while (lo < b) {
            Py_ssize_t probe = hint + step;
            if (probe >= b)
                break;
            if (past(l, probe, x, upper)) {
                hi = probe;
                break;
            }
            lo = probe + 1;
            step <<= 1;
        }
    } else {
        /* backward: the answer is at or before hint */
        Py_ssize_t step = 1;
        hi = hint;
        lo = a;
        while (hi > a) {
            Py_ssize_t probe = hint - step;
            if (probe < a)
                break;
            if (!past(l, probe, x, upper)) {
                lo = probe + 1;
                break;
            }
            hi = probe;
            step <<= 1;
        }
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (past(l, mid, x, upper))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void asof_slots(const int64_t *lts, const int64_t *slot, Py_ssize_t n, const Line *l,
                       const int64_t *starts, const int64_t *ends, Py_ssize_t *hint,
                       int backward, int allow_exact, int64_t *out)
{
    /* backward: the last row at or before (exact) / before; forward: the first at or
     * after / after */
    int upper = backward == allow_exact;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = slot[i];
        if (s < 0) {
            out[i] = -1;
            continue;
        }
        Py_ssize_t a = (Py_ssize_t)starts[s], b = (Py_ssize_t)ends[s];
        Py_ssize_t h = hint[s];
        Py_ssize_t p = bound(l, a, b, lts[i], upper, h < a || h > b ? a : h);
        hint[s] = p;
        if (backward)
            p -= 1;
        if (p < a || p >= b)
            out[i] = -1;
        else
            out[i] = l->order ? l->order[p] : p;
    }
}

PyObject *pass_asof_slots(PyObject *self, PyObject *args)
{
    PyObject *lts_o, *slot_o, *rts_o, *order_o, *starts_o, *ends_o, *out_o;
    int backward, allow_exact;
    if (!PyArg_ParseTuple(args, "OOOOOOppO", &lts_o, &slot_o, &rts_o, &order_o, &starts_o,
                          &ends_o, &backward, &allow_exact, &out_o))
        return NULL;
    Arr lts = {0}, slot = {0}, rts = {0}, order = {0}, starts = {0}, ends = {0}, out = {0};
    Py_ssize_t *hint = NULL;
    PyObject *result = NULL;
    if (arr_get(lts_o, &lts, 8, 0, "asof_slots lts") < 0 ||
        arr_get(slot_o, &slot, 8, 0, "asof_slots slot") < 0 ||
        arr_get(rts_o, &rts, 8, 0, "asof_slots rts") < 0 ||
        (order_o != Py_None && arr_get(order_o, &order, 8, 0, "asof_slots order") < 0) ||
        arr_get(starts_o, &starts, 8, 0, "asof_slots starts") < 0 ||
        arr_get(ends_o, &ends, 8, 0, "asof_slots ends") < 0 ||
        arr_get(out_o, &out, 8, 1, "asof_slots out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&lts), m = arr_len(&rts), keys = arr_len(&starts);
    if (arr_len(&slot) != n || arr_len(&out) != n || arr_len(&ends) != keys ||
        (order.held && arr_len(&order) != m)) {
        PyErr_SetString(PyExc_ValueError, "asof_slots: arrays of different lengths");
        goto done;
    }
    /* every position read later is checked here, once */
    const int64_t *o = order.held ? order.view.buf : NULL;
    const int64_t *st = starts.view.buf, *en = ends.view.buf, *sl = slot.view.buf;
    int bad = 0;
    for (Py_ssize_t j = 0; o && j < m; j++)
        bad |= o[j] < 0 || o[j] >= m;
    for (Py_ssize_t s = 0; s < keys; s++)
        bad |= st[s] < 0 || st[s] > en[s] || en[s] > m;
    for (Py_ssize_t i = 0; i < n; i++)
        bad |= sl[i] < -1 || sl[i] >= keys;
    if (bad) {
        PyErr_SetString(PyExc_ValueError,
                        "asof_slots: a position or slot outside the arrays it indexes");
        goto done;
    }
    hint = malloc((size_t)(keys ? keys : 1) * sizeof(Py_ssize_t));
    if (!hint) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < keys; s++)
        hint[s] = (Py_ssize_t)st[s];
    Line l = {rts.view.buf, o};
    Py_BEGIN_ALLOW_THREADS
    asof_slots(lts.view.buf, sl, n, &l, st, en, hint, backward, allow_exact, out.view.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    free(hint);
    arr_release(&lts);
    arr_release(&slot);
    arr_release(&rts);
    arr_release(&order);
    arr_release(&starts);
    arr_release(&ends);
    arr_release(&out);
    return result;
}

/* ---------------------------------------------------------------- asof_merge */

/* key i of a 4- or 8-byte signed integer array, less lo */
static inline uint64_t key_slot_at(const void *key, Py_ssize_t size, Py_ssize_t i, int64_t lo)
{
    return (uint64_t)key_at(key, size, i) - (uint64_t)lo;
}

static int in_time_order(const int64_t *ts, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (ts[i] < ts[i - 1])
            return 0;
    return 1;
}

static int keys_within(const void *key, Py_ssize_t size, Py_ssize_t n, int64_t lo, int64_t span)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (key_slot_at(key, size, i, lo) >= (uint64_t)span)
            return 0;
    return 1;
}

/* 0: out filled; 1: a side not in time order (nothing written, the keys not read);
 * -1: no memory; -2: a key outside [lo, lo + span) */
static int asof_merge(const int64_t *lts, const void *lkey, Py_ssize_t lsize, Py_ssize_t n,
                      const int64_t *rts, const void *rkey, Py_ssize_t rsize, Py_ssize_t m,
                      int64_t lo, int64_t span, int backward, int allow_exact, int64_t *out)
{
    /* (the order first: a side out of it is most often so from its first rows on, and
     * then the keys need no pass) */
    if (!in_time_order(lts, n) || !in_time_order(rts, m))
        return 1;
    if (!keys_within(lkey, lsize, n, lo, span) || !keys_within(rkey, rsize, m, lo, span))
        return -2;
    int64_t *passed = malloc((size_t)span * sizeof(int64_t));
    if (!passed)
        return -1;
    for (int64_t k = 0; k < span; k++)
        passed[k] = -1;
    if (backward) {
        /* the last right row (in the given order) at or before each left time (before,
         * when strict) */
        Py_ssize_t j = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t t = lts[i];
            for (; j < m && (allow_exact ? rts[j] <= t : rts[j] < t); j++)
                passed[key_slot_at(rkey, rsize, j, lo)] = j;
            out[i] = passed[key_slot_at(lkey, lsize, i, lo)];
        }
    } else {
        /* from the end: the first right row at or after each left time (after, when
         * strict) */
        Py_ssize_t j = m - 1;
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            int64_t t = lts[i];
            for (; j >= 0 && (allow_exact ? rts[j] >= t : rts[j] > t); j--)
                passed[key_slot_at(rkey, rsize, j, lo)] = j;
            out[i] = passed[key_slot_at(lkey, lsize, i, lo)];
        }
    }
    free(passed);
    return 0;
}

PyObject *pass_asof_merge(PyObject *self, PyObject *args)
{
    PyObject *lts_o, *lkey_o, *rts_o, *rkey_o, *out_o;
    long long lo, span;
    int backward, allow_exact;
    if (!PyArg_ParseTuple(args, "OOOOLLppO", &lts_o, &lkey_o, &rts_o, &rkey_o, &lo, &span,
                          &backward, &allow_exact, &out_o))
        return NULL;
    if (!range_ok("asof_merge", lo, span))
        return NULL;
    Arr lts = {0}, lkey = {0}, rts = {0}, rkey = {0}, out = {0};
    PyObject *result = NULL;
    if (arr_get(lts_o, &lts, 8, 0, "asof_merge lts") < 0 ||
        arr_get_key(lkey_o, &lkey, "asof_merge lkey") < 0 ||
        arr_get(rts_o, &rts, 8, 0, "asof_merge rts") < 0 ||
        arr_get_key(rkey_o, &rkey, "asof_merge rkey") < 0 ||
        arr_get(out_o, &out, 8, 1, "asof_merge out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&lts), m = arr_len(&rts);
    if (arr_len(&lkey) != n || arr_len(&out) != n || arr_len(&rkey) != m) {
        PyErr_SetString(PyExc_ValueError, "asof_merge: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = asof_merge(lts.view.buf, lkey.view.buf, lkey.view.itemsize, n, rts.view.buf,
                    rkey.view.buf, rkey.view.itemsize, m, lo, span, backward, allow_exact,
                    out.view.buf);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "asof_merge: a key outside [lo, lo + span)") == 0 || rc == 1)
        result = PyBool_FromLong(rc == 0);
done:
    arr_release(&lts);
    arr_release(&lkey);
    arr_release(&rts);
    arr_release(&rkey);
    arr_release(&out);
    return result;
}
