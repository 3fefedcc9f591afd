/*
 * _pass_groups.c: set membership over a small integer range and groups counted by a
 * hash table, one pass over the rows (schedwake/model/_util.py: member, key_groups).
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

/* out[i] = whether values[i] - lo is a set entry of table (bytes, nonzero: in); a value
 * outside [lo, lo + len(table)) is not in it.  Over a table of 8-byte slots: out[i] =
 * the slot, -1 outside. */
#define IN_TABLE(T)                                                                    \
    static void in_table_##T(const T *values, Py_ssize_t n, const uint8_t *table,       \
                             Py_ssize_t span, int64_t lo, uint8_t *out)                \
    {                                                                                  \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            uint64_t k = (uint64_t)(int64_t)values[i] - (uint64_t)lo;                  \
            out[i] = k < (uint64_t)span && table[k];                                   \
        }                                                                              \
    }

IN_TABLE(int32_t)
IN_TABLE(int64_t)

/* the same over a table of slots (8-byte ints): the slot, -1 outside the table */
#define SLOT_IN_TABLE(T)                                                               \
    static void slot_in_table_##T(const T *values, Py_ssize_t n, const int64_t *table,  \
                                  Py_ssize_t span, int64_t lo, int64_t *out)           \
    {                                                                                  \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            uint64_t k = (uint64_t)(int64_t)values[i] - (uint64_t)lo;                  \
            out[i] = k < (uint64_t)span ? table[k] : -1;                               \
        }                                                                              \
    }

SLOT_IN_TABLE(int32_t)
SLOT_IN_TABLE(int64_t)

PyObject *pass_in_table(PyObject *self, PyObject *args)
{
    PyObject *values_o, *table_o, *out_o;
    long long lo;
    if (!PyArg_ParseTuple(args, "OOLO", &values_o, &table_o, &lo, &out_o))
        return NULL;
    if (lo < -((long long)1 << 62) || lo > ((long long)1 << 62)) {
        PyErr_SetString(PyExc_ValueError, "in_table: lo must be within 2**62 of 0");
        return NULL;
    }
    Arr values = {0}, table = {0}, out = {0};
    PyObject *result = NULL;
    /* (a table of flags or of slots: by its item size; out's is the same) */
    Py_ssize_t table_size = buf_itemsize(table_o);
    if (table_size < 0)
        return NULL;
    int slots = table_size == 8;
    if (arr_get_key(values_o, &values, "in_table values") < 0 ||
        arr_get(table_o, &table, slots ? 8 : 1, 0, "in_table table") < 0 ||
        arr_get(out_o, &out, slots ? 8 : 1, 1, "in_table out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&values);
    if (arr_len(&out) != n) {
        PyErr_SetString(PyExc_ValueError, "in_table: out must have one slot a value");
        goto done;
    }
    Py_ssize_t span = arr_len(&table);
    Py_BEGIN_ALLOW_THREADS
    if (slots && values.view.itemsize == 4)
        slot_in_table_int32_t(values.view.buf, n, table.view.buf, span, lo, out.view.buf);
    else if (slots)
        slot_in_table_int64_t(values.view.buf, n, table.view.buf, span, lo, out.view.buf);
    else if (values.view.itemsize == 4)
        in_table_int32_t(values.view.buf, n, table.view.buf, span, lo, out.view.buf);
    else
        in_table_int64_t(values.view.buf, n, table.view.buf, span, lo, out.view.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    arr_release(&values);
    arr_release(&table);
    arr_release(&out);
    return result;
}

/* ---------------------------------------------------------------- group_sums */

typedef struct {
    int64_t key;   /* -1: empty (keys are >= 0) */
    int64_t n, sum;
} Group;

static int group_cmp(const void *a, const void *b)
{
    int64_t x = ((const Group *)a)->key, y = ((const Group *)b)->key;
    return (x > y) - (x < y);
}

static inline size_t group_hash(int64_t key, size_t mask)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
}

/* The distinct keys (>= 0) in ascending order, each with its rows and the sum of its
 * weights (none: 0), by one open-addressing hash table grown as keys come; *out gets
 * them (malloc'd), *groups their count.  -1: out of memory, -2: a negative key, -3:
 * more than ``most`` distinct keys (a sort of the keys is faster then: the table's
 * probes miss the cache). */
static int group_sums(const int64_t *key, const int64_t *weight, Py_ssize_t n, size_t most,
                      Group **out, size_t *groups)
{
    size_t cap = 1024, used = 0;
    Group *t = malloc(cap * sizeof(Group));
    if (!t)
        return -1;
    for (size_t j = 0; j < cap; j++)
        t[j].key = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = key[i];
        if (k < 0) {
            free(t);
            return -2;
        }
        if (used >= most) {
            free(t);
            return -3;
        }
        if (2 * (used + 1) > cap) {   /* half full at most: short probes */
            size_t ncap = 2 * cap;
            Group *nt = malloc(ncap * sizeof(Group));
            if (!nt) {
                free(t);
                return -1;
            }
            for (size_t j = 0; j < ncap; j++)
                nt[j].key = -1;
            for (size_t j = 0; j < cap; j++) {
                if (t[j].key < 0)
                    continue;
                size_t h = group_hash(t[j].key, ncap - 1);
                while (nt[h].key >= 0)
                    h = (h + 1) & (ncap - 1);
                nt[h] = t[j];
            }
            free(t);
            t = nt;
            cap = ncap;
        }
        size_t h = group_hash(k, cap - 1);
        while (t[h].key >= 0 && t[h].key != k)
            h = (h + 1) & (cap - 1);
        if (t[h].key < 0) {
            t[h] = (Group){k, 0, 0};
            used++;
        }
        t[h].n++;
        if (weight)
            t[h].sum += weight[i];
    }
    size_t g = 0;
    for (size_t j = 0; j < cap; j++)
        if (t[j].key >= 0)
            t[g++] = t[j];
    qsort(t, g, sizeof(Group), group_cmp);
    *out = t;
    *groups = g;
    return 0;
}

PyObject *pass_group_sums(PyObject *self, PyObject *args)
{
    PyObject *key_o, *weight_o;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "OOn", &key_o, &weight_o, &most))
        return NULL;
    if (most < 0) {
        PyErr_SetString(PyExc_ValueError, "group_sums: most must be >= 0");
        return NULL;
    }
    Arr key = {0}, weight = {0};
    PyObject *result = NULL;
    if (arr_get(key_o, &key, 8, 0, "group_sums key") < 0 ||
        (weight_o != Py_None && arr_get(weight_o, &weight, 8, 0, "group_sums weight") < 0))
        goto done;
    Py_ssize_t n = arr_len(&key);
    if (weight.held && arr_len(&weight) != n) {
        PyErr_SetString(PyExc_ValueError, "group_sums: one weight a key is needed");
        goto done;
    }
    Group *g = NULL;
    size_t groups = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = group_sums(key.view.buf, weight.held ? weight.view.buf : NULL, n, (size_t)most, &g,
                    &groups);
    Py_END_ALLOW_THREADS
    if (rc == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc == -2) {
        PyErr_SetString(PyExc_ValueError, "group_sums: a negative key");
        goto done;
    }
    if (rc == -3) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* three columns of int64s, as bytes */
    PyObject *cols[3] = {NULL, NULL, NULL};
    for (int c = 0; c < 3; c++) {
        cols[c] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(groups * sizeof(int64_t)));
        if (!cols[c])
            break;
        int64_t *p = (int64_t *)PyBytes_AS_STRING(cols[c]);
        for (size_t j = 0; j < groups; j++)
            p[j] = c == 0 ? g[j].key : c == 1 ? g[j].n : g[j].sum;
    }
    free(g);
    if (cols[0] && cols[1] && cols[2])
        result = PyTuple_Pack(3, cols[0], cols[1], cols[2]);
    for (int c = 0; c < 3; c++)
        Py_XDECREF(cols[c]);
done:
    arr_release(&key);
    arr_release(&weight);
    return result;
}

/* ---------------------------------------------------------------- take_fill */

/* value i of a 1-byte (unsigned: flags), 4- or 8-byte (signed) array */
static inline int64_t value_at(const void *a, Py_ssize_t size, Py_ssize_t i)
{
    return size == 1 ? (int64_t)((const uint8_t *)a)[i] : key_at(a, size, i);
}

static inline void value_put(void *a, Py_ssize_t size, Py_ssize_t i, int64_t v)
{
    if (size == 1)
        ((uint8_t *)a)[i] = (uint8_t)v;
    else if (size == 4)
        ((int32_t *)a)[i] = (int32_t)v;
    else
        ((int64_t *)a)[i] = v;
}

/* out[i] = arr[idx[i]], fill where idx[i] < 0; -2 (nothing more written) at an index
 * past the array */
static int take_fill(const void *arr, Py_ssize_t asize, Py_ssize_t m, const int64_t *idx,
                     Py_ssize_t n, int64_t fill, void *out, Py_ssize_t osize)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t j = idx[i];
        if (j >= m)
            return -2;
        value_put(out, osize, i, j < 0 ? fill : value_at(arr, asize, j));
    }
    return 0;
}

/* the buffer's item size when it is 1, 4 or 8, else 0 (the kind is arr_get's to check);
 * -1: no buffer */
static Py_ssize_t item_size(PyObject *obj)
{
    Py_ssize_t size = buf_itemsize(obj);
    return size < 0 || size == 1 || size == 4 || size == 8 ? size : 0;
}

PyObject *pass_take_fill(PyObject *self, PyObject *args)
{
    PyObject *arr_o, *idx_o, *out_o;
    long long fill;
    if (!PyArg_ParseTuple(args, "OOLO", &arr_o, &idx_o, &fill, &out_o))
        return NULL;
    Py_ssize_t asize = item_size(arr_o), osize = asize < 0 ? 0 : item_size(out_o);
    if (asize < 0 || osize < 0)
        return NULL;
    if (asize == 0 || osize == 0 || osize < asize) {
        PyErr_SetString(PyExc_TypeError,
                        "take_fill: arrays of 1-, 4- or 8-byte items, out's no narrower");
        return NULL;
    }
    Arr arr = {0}, idx = {0}, out = {0};
    PyObject *result = NULL;
    if (arr_get(arr_o, &arr, asize, 0, "take_fill arr") < 0 ||
        arr_get(idx_o, &idx, 8, 0, "take_fill idx") < 0 ||
        arr_get(out_o, &out, osize, 1, "take_fill out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&idx);
    if (arr_len(&out) != n) {
        PyErr_SetString(PyExc_ValueError, "take_fill: out must have one slot an index");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = take_fill(arr.view.buf, asize, arr_len(&arr), idx.view.buf, n, fill, out.view.buf,
                   osize);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "take_fill: an index past the array") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&arr);
    arr_release(&idx);
    arr_release(&out);
    return result;
}
