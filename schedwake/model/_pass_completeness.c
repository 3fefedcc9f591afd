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
