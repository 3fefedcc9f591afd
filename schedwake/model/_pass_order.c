/*
 * _pass_order.c: orders of rows by a small integer key.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

/* The stable order of n keys in [lo, lo + span) into out (n positions): count each
 * key, turn the counts into first positions, place the rows.  The keys are checked
 * to lie in the range before anything is written. */
#define COUNTING_ORDER(T)                                                              \
    static int counting_order_##T(const T *key, Py_ssize_t n, int64_t lo, int64_t span, \
                                  int64_t *out)                                        \
    {                                                                                  \
        int64_t *first = calloc((size_t)span + 1, sizeof(int64_t));                    \
        if (!first)                                                                    \
            return -1;                                                                 \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            /* unsigned: a key below lo wraps above span, and nothing overflows */      \
            uint64_t k = (uint64_t)(int64_t)key[i] - (uint64_t)lo;                     \
            if (k >= (uint64_t)span) {                                                 \
                free(first);                                                           \
                return -2;                                                             \
            }                                                                          \
            first[k + 1]++;                                                            \
        }                                                                              \
        for (int64_t k = 0; k < span; k++)                                             \
            first[k + 1] += first[k];                                                  \
        for (Py_ssize_t i = 0; i < n; i++)                                             \
            out[first[(uint64_t)(int64_t)key[i] - (uint64_t)lo]++] = i;                \
        free(first);                                                                   \
        return 0;                                                                      \
    }

COUNTING_ORDER(int32_t)
COUNTING_ORDER(int64_t)

PyObject *pass_counting_order(PyObject *self, PyObject *args)
{
    PyObject *key_obj, *out_obj;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OLLO", &key_obj, &lo, &span, &out_obj))
        return NULL;
    /* (the count table is span + 1 entries: the caller keeps span near the rows) */
    if (!range_ok("counting_order", lo, span))
        return NULL;
    Arr key = {0}, out = {0};
    PyObject *result = NULL;
    if (arr_get_key(key_obj, &key, "counting_order key") < 0 ||
        arr_get(out_obj, &out, 8, 1, "counting_order out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&key);
    if (arr_len(&out) != n) {
        PyErr_SetString(PyExc_ValueError, "counting_order: out must have one slot a key");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    if (key.view.itemsize == 4)
        rc = counting_order_int32_t(key.view.buf, n, lo, span, out.view.buf);
    else
        rc = counting_order_int64_t(key.view.buf, n, lo, span, out.view.buf);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "counting_order: a key outside [lo, lo + span)") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&key);
    arr_release(&out);
    return result;
}

/* Whether n keys (4- or 8-byte) never decrease: stops at the first that does. */
static int ascending(const void *key, Py_ssize_t size, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (key_at(key, size, i) < key_at(key, size, i - 1))
            return 0;
    return 1;
}

PyObject *pass_ascending(PyObject *self, PyObject *args)
{
    PyObject *key_obj;
    if (!PyArg_ParseTuple(args, "O", &key_obj))
        return NULL;
    Arr key = {0};
    if (arr_get_key(key_obj, &key, "ascending key") < 0)
        return NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = ascending(key.view.buf, key.view.itemsize, arr_len(&key));
    Py_END_ALLOW_THREADS
    arr_release(&key);
    return PyBool_FromLong(ok);
}

/* out[i] = (key[by[i]] - k0) << tbits | (ts[by[i]] - t0): the rows' (key, ts) packed
 * into one int64 in the order by (unsigned arithmetic: the caller picks k0, t0 and
 * tbits so that it fits).  -2 at a position of by outside the rows. */
static int pack_by(const void *key, Py_ssize_t ks, const void *ts, Py_ssize_t tsz,
                   Py_ssize_t n, const int64_t *by, int64_t k0, int64_t t0, int tbits,
                   int64_t *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t j = by[i];
        if ((uint64_t)j >= (uint64_t)n)
            return -2;
        uint64_t k = (uint64_t)key_at(key, ks, j) - (uint64_t)k0;
        uint64_t t = (uint64_t)key_at(ts, tsz, j) - (uint64_t)t0;
        out[i] = (int64_t)((k << tbits) + t);
    }
    return 0;
}

PyObject *pass_pack_by(PyObject *self, PyObject *args)
{
    PyObject *key_o, *ts_o, *by_o, *out_o;
    long long k0, t0;
    int tbits;
    if (!PyArg_ParseTuple(args, "OOOLLiO", &key_o, &ts_o, &by_o, &k0, &t0, &tbits, &out_o))
        return NULL;
    if (tbits < 0 || tbits > 62) {
        PyErr_SetString(PyExc_ValueError, "pack_by: tbits must be in [0, 62]");
        return NULL;
    }
    Arr key = {0}, ts = {0}, by = {0}, out = {0};
    PyObject *result = NULL;
    if (arr_get_key(key_o, &key, "pack_by key") < 0 || arr_get_key(ts_o, &ts, "pack_by ts") < 0 ||
        arr_get(by_o, &by, 8, 0, "pack_by by") < 0 || arr_get(out_o, &out, 8, 1, "pack_by out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&key);
    if (arr_len(&ts) != n || arr_len(&by) != n || arr_len(&out) != n) {
        PyErr_SetString(PyExc_ValueError, "pack_by: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = pack_by(key.view.buf, key.view.itemsize, ts.view.buf, ts.view.itemsize, n,
                 by.view.buf, k0, t0, tbits, out.view.buf);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "pack_by: a position outside the rows") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&key);
    arr_release(&ts);
    arr_release(&by);
    arr_release(&out);
    return result;
}
