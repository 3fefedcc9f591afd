/*
 * _passes.h: what the model's compiled passes share.  Each pass is one C file
 * (_pass_*.c) with one or more functions named in _passes_list.h; _passes.c makes
 * them the module schedwake.model._passes.  Arrays come from NumPy through the buffer
 * protocol (no NumPy headers): the Python side allocates every output and checks
 * what it passes; the C side checks again each array's element size, kind and length,
 * and every index it reads from an array before using it.
 */
#ifndef SCHEDWAKE_PASSES_H
#define SCHEDWAKE_PASSES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* one array argument: its buffer, held until arr_release() */
typedef struct {
    Py_buffer view;
    int held;
} Arr;

/* Take ``obj``'s buffer as a C-contiguous 1-d array of ``itemsize``-byte signed
 * integers (kind 'i') or booleans/bytes (itemsize 1); writable when asked.  Sets a
 * Python error naming ``what`` and returns -1 when it is not one. */
static inline int arr_get(PyObject *obj, Arr *a, Py_ssize_t itemsize, int writable,
                          const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    a->held = 0;
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0)
        return -1;
    a->held = 1;
    const char *f = a->view.format ? a->view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int kind_ok = itemsize == 1 ? (*f == 'b' || *f == 'B' || *f == '?')
                                : (*f == 'i' || *f == 'l' || *f == 'q' || *f == 'n');
    if (a->view.ndim != 1 || a->view.itemsize != itemsize || !kind_ok || f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s: a 1-d array of %zd-byte integers is needed",
                     what, itemsize);
        PyBuffer_Release(&a->view);
        a->held = 0;
        return -1;
    }
    return 0;
}

static inline void arr_release(Arr *a)
{
    if (a->held)
        PyBuffer_Release(&a->view);
    a->held = 0;
}

static inline Py_ssize_t arr_len(const Arr *a)
{
    return a->view.shape ? a->view.shape[0] : a->view.len / a->view.itemsize;
}

/* The item size of obj's buffer; -1 (a Python error set) when it has none. */
static inline Py_ssize_t buf_itemsize(PyObject *obj)
{
    Py_buffer probe;
    if (PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    Py_ssize_t size = probe.itemsize;
    PyBuffer_Release(&probe);
    return size;
}

/* Take a key array: 4- or 8-byte signed integers, as they come (pids and CPUs are
 * int32, life keys int64). */
static inline int arr_get_key(PyObject *obj, Arr *a, const char *what)
{
    a->held = 0;
    Py_ssize_t size = buf_itemsize(obj);
    if (size < 0)
        return -1;
    return arr_get(obj, a, size == 4 ? 4 : 8, 0, what);
}

/* Take each of n (object, array, item size, writable, name) arguments; on failure
 * release those taken and return -1 (a Python error set).  Item size ARR_KEY: a key
 * array (arr_get_key); a NULL object: an optional array not given, left unheld (held
 * 0; None is refused as any other non-array: a wrapper passes NULL for an argument
 * that may be None). */
typedef struct {
    PyObject *obj;
    Arr *arr;
    Py_ssize_t itemsize;
    int writable;
    const char *what;
} ArrSpec;

#define ARR_KEY 0

static inline int arrs_get(ArrSpec *spec, int n)
{
    for (int i = 0; i < n; i++) {
        spec[i].arr->held = 0;
    }
    for (int i = 0; i < n; i++) {
        if (spec[i].obj == NULL)
            continue;
        int rc = spec[i].itemsize == ARR_KEY
                     ? arr_get_key(spec[i].obj, spec[i].arr, spec[i].what)
                     : arr_get(spec[i].obj, spec[i].arr, spec[i].itemsize, spec[i].writable,
                               spec[i].what);
        if (rc < 0) {
            for (int j = 0; j < i; j++)
                arr_release(spec[j].arr);
            return -1;
        }
    }
    return 0;
}

static inline void arrs_release(ArrSpec *spec, int n)
{
    for (int i = 0; i < n; i++)
        arr_release(spec[i].arr);
}

/* Release the arrays and set a ValueError ``msg``: NULL, a wrapper's result. */
static inline PyObject *value_error(ArrSpec *spec, int n, const char *msg)
{
    arrs_release(spec, n);
    PyErr_SetString(PyExc_ValueError, msg);
    return NULL;
}

/* Value i of a key array (4- or 8-byte signed integers, as arr_get_key takes them). */
static inline int64_t key_at(const void *key, Py_ssize_t size, Py_ssize_t i)
{
    return size == 4 ? (int64_t)((const int32_t *)key)[i] : ((const int64_t *)key)[i];
}

/* Whether a key range from Python is one a pass's table takes: lo within 2**62 of 0
 * (key - lo cannot overflow), span in [1, 2**31]; else a ValueError naming the pass. */
static inline int range_ok(const char *pass, long long lo, long long span)
{
    const long long edge = (long long)1 << 62;
    if (span >= 1 && span <= ((long long)1 << 31) && lo >= -edge && lo <= edge)
        return 1;
    PyErr_Format(PyExc_ValueError, "%s: span must be in [1, 2**31], lo within 2**62 of 0",
                 pass);
    return 0;
}

/* A pass loop's return code as Python's: 0 stays 0; -1 sets a MemoryError, -2 a
 * ValueError ``bad`` (both return -1). */
static inline int pass_failed(int rc, const char *bad)
{
    if (rc == -1) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc == -2) {
        PyErr_SetString(PyExc_ValueError, bad);
        return -1;
    }
    return 0;
}

#define PASS(name, doc) PyObject *pass_##name(PyObject *self, PyObject *args);
#include "_passes_list.h"
#undef PASS

#endif
