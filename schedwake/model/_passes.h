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

#define PASS(name, doc) PyObject *pass_##name(PyObject *self, PyObject *args);
#include "_passes_list.h"
#undef PASS

#endif
