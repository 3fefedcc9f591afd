/*
 * _pybuf.h: hand column memory (Buf, StrCol from _columns.h) to Python without a
 * copy.  A BufObject owns a Buf and exports it through the buffer protocol, so
 * pyarrow wraps it as an Arrow buffer; the memory is freed with the last Arrow
 * array that uses it.  Call pybuf_ready() once from the module's init function.
 */
#ifndef SCHEDWAKE_PYBUF_H
#define SCHEDWAKE_PYBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_columns.h"

typedef struct {
    PyObject_HEAD
    Buf buf;
} BufObject;

static int bufobj_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    BufObject *o = (BufObject *)self;
    static char empty[8];
    return PyBuffer_FillInfo(view, self, o->buf.data ? o->buf.data : empty,
                             (Py_ssize_t)o->buf.len, 1, flags);
}

static void bufobj_dealloc(PyObject *self)
{
    buf_free(&((BufObject *)self)->buf);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs bufobj_as_buffer = {bufobj_getbuffer, NULL};

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "schedwake.ingest.Buffer",
    .tp_basicsize = sizeof(BufObject),
    .tp_dealloc = bufobj_dealloc,
    .tp_as_buffer = &bufobj_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "column memory filled by a trace reader",
};

static int pybuf_ready(void)
{
    return PyType_Ready(&BufType);
}

/* Hand a Buf over to Python (the Buf is emptied). */
static PyObject *buf_to_py(Buf *b)
{
    BufObject *o = PyObject_New(BufObject, &BufType);
    if (!o)
        return NULL;
    if (b->cap >= BUF_MAP_MIN) {
        buf_shrink(b);                          /* give back slack */
    } else if (b->data && b->len < b->cap / 2 && b->len > 0) {
        char *p = realloc(b->data, b->len);
        if (p) {
            b->data = p;
            b->cap = b->len;
        }
    }
    o->buf = *b;                /* cap stays: buf_free needs it to unmap */
    memset(b, 0, sizeof(*b));
    return (PyObject *)o;
}

/* (indices, dictionary offsets, dictionary chars) as Python buffers. */
static PyObject *strcol_to_py(StrCol *c)
{
    if (c->count == 0) {
        int32_t zero = 0;
        if (buf_put(&c->offsets, &zero, 4) < 0)
            return PyErr_NoMemory();
    }
    PyObject *t = Py_BuildValue("(NNN)", buf_to_py(&c->indices), buf_to_py(&c->offsets),
                                buf_to_py(&c->chars));
    strcol_free(c);
    return t;
}

#endif
