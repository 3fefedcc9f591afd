/*
 * _tdread: the Python binding of schedwake's own trace.dat reader (_tdcore.c).
 *
 * read(path, events=None, progress=None, jobs=None) maps the file read-only,
 * decodes it with the GIL released (CPUs in `jobs` threads) and hands the column
 * memory to Python without copies, as the dict that schedwake.ingest.tracedat
 * assembles into tables (the libtracecmd binding returns the same shape):
 *   {"meta": {...}, "events": {name: {"system", "count", "columns"}},
 *    "lost": (ts, cpu, count)}
 * Each column is ("int", name, bits, signed, values), ("str", name, (indices,
 * dictionary offsets, dictionary chars)), ("list", name, bits, signed, offsets,
 * values) or ("bin", name, offsets, bytes).
 */
#include "_pybuf.h"
#include "_tdcore.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static PyObject *TraceDatError;

typedef struct {
    PyObject *progress;
    int failed;                 /* a Python exception is set (under the GIL) */
} TickCtx;

/* Called from the decoding thread now and then, without the GIL. */
static int tick(void *arg, double done)
{
    TickCtx *t = arg;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!t->failed && PyErr_CheckSignals() < 0)
        t->failed = 1;
    if (!t->failed && t->progress != Py_None) {
        PyObject *r = PyObject_CallFunction(t->progress, "d", done);
        if (!r)
            t->failed = 1;
        Py_XDECREF(r);
    }
    int stop = t->failed;
    PyGILState_Release(g);
    return stop;
}

static PyObject *str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *column_to_py(td_column *c)
{
    switch (c->kind) {
    case TD_INT:
        return Py_BuildValue("(ssiiN)", "int", c->name, c->bits, c->is_signed,
                             buf_to_py(&c->values));
    case TD_STR:
    case TD_DYNSTR:
    case TD_SYM:
        return Py_BuildValue("(ssN)", "str", c->name, strcol_to_py(&c->str));
    case TD_ARRAY:
    case TD_DYNARRAY:
        return Py_BuildValue("(ssiiNN)", "list", c->name, c->bits, c->is_signed,
                             buf_to_py(&c->offsets), buf_to_py(&c->values));
    case TD_BIN:
        return Py_BuildValue("(ssNN)", "bin", c->name, buf_to_py(&c->offsets),
                             buf_to_py(&c->values));
    }
    Py_RETURN_NONE;
}

static PyObject *event_to_py(td_event *ev)
{
    PyObject *cols = Py_None;
    Py_INCREF(cols);
    if (ev->wanted && ev->cols) {
        Py_DECREF(cols);
        cols = PyList_New(ev->ncols);
        if (!cols)
            return NULL;
        for (int i = 0; i < ev->ncols; i++) {
            PyObject *c = column_to_py(&ev->cols[i]);
            if (!c) {
                Py_DECREF(cols);
                return NULL;
            }
            PyList_SET_ITEM(cols, i, c);
        }
    }
    return Py_BuildValue("{s:N,s:L,s:N}", "system", str_or_none(ev->system),
                         "count", (long long)ev->count, "columns", cols);
}

static PyObject *str_list(const char *const *items, int n)
{
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = str_or_none(items[i]);
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *meta_to_py(td_meta *m)
{
    PyObject *lost = PyDict_New(), *options = PyList_New(m->noptions);
    if (!lost || !options)
        goto fail;
    for (int c = 0; c < m->cpus; c++) {
        if (!m->lost_per_cpu || !m->lost_per_cpu[c])
            continue;
        PyObject *k = PyLong_FromLong(c), *v = PyLong_FromLongLong(m->lost_per_cpu[c]);
        int bad = !k || !v || PyDict_SetItem(lost, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad)
            goto fail;
    }
    for (int i = 0; i < m->noptions; i++) {
        PyObject *v = PyLong_FromLong(m->options[i]);
        if (!v)
            goto fail;
        PyList_SET_ITEM(options, i, v);
    }
    return Py_BuildValue(
        "{s:i,s:N,s:N,s:N,s:N,s:i,s:L,s:L,s:L,s:N,s:L,s:i,s:N,s:N,s:N,s:N,s:N,s:i}",
        "cpus", m->cpus, "clock", str_or_none(m->clock), "uname", str_or_none(m->uname),
        "trace_cmd_version", str_or_none(m->trace_cmd_version),
        "cpustats", str_or_none(m->cpustats), "file_version", m->file_version,
        "records", (long long)m->records, "first_ts", (long long)m->first_ts,
        "last_ts", (long long)m->last_ts, "lost_per_cpu", lost,
        "unknown_events", (long long)m->unknown_records, "big_endian", m->big_endian,
        "buffer", str_or_none(m->buffer), "instances", str_list(m->instances, m->ninstances),
        "compression", str_or_none(m->compression), "options", options,
        "warnings", str_list(m->warnings, m->nwarnings), "page_size", m->page_size);
fail:
    Py_XDECREF(lost);
    Py_XDECREF(options);
    return NULL;
}

/* Mark the events asked for; names may be "event" or "system:event". */
static int select_events(td_file *f, PyObject *events)
{
    if (events == Py_None) {
        td_want_all(f, 1);
        return 0;
    }
    td_want_all(f, 0);
    for (int i = 0; i < td_nevents(f); i++) {
        td_event *ev = td_event_at(f, i);
        PyObject *name = PyUnicode_FromString(ev->name);
        if (!name)
            return -1;
        int in = PySequence_Contains(events, name);
        Py_DECREF(name);
        if (in < 0)
            return -1;
        ev->wanted = in;
    }
    return 0;
}

PyDoc_STRVAR(read_doc,
"read(path, events=None, progress=None, jobs=None) -> dict\n\n"
"Read a trace.dat file with schedwake's own decoder. `events` is None (all) or a\n"
"collection of event names; `progress` is called with a float in [0, 1] now and\n"
"then; `jobs` is the number of decoding threads (None: one per online CPU).\n"
"Raises TraceDatError (a ValueError) with a one-line reason on unusable files.");

static PyObject *py_read(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "events", "progress", "jobs", NULL};
    PyObject *pathobj, *events = Py_None, *progress = Py_None, *jobsobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OOO", kwlist, PyUnicode_FSConverter,
                                     &pathobj, &events, &progress, &jobsobj))
        return NULL;
    int jobs = 0;
    if (jobsobj != Py_None) {
        jobs = (int)PyLong_AsLong(jobsobj);
        if (jobs == -1 && PyErr_Occurred()) {
            Py_DECREF(pathobj);
            return NULL;
        }
        if (jobs < 1) {
            Py_DECREF(pathobj);
            PyErr_SetString(PyExc_ValueError, "jobs must be at least 1");
            return NULL;
        }
    }
    const char *path = PyBytes_AS_STRING(pathobj);
    char err[TD_ERRLEN] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, pathobj);
        Py_DECREF(pathobj);
        return NULL;
    }
    struct stat st;
    const uint8_t *data = NULL;
    size_t size = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        size = (size_t)st.st_size;
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, pathobj);
            Py_DECREF(pathobj);
            return NULL;
        }
        madvise(m, size, MADV_SEQUENTIAL);
        data = m;
    }
    close(fd);
    Py_DECREF(pathobj);

    td_file *f = NULL;
    TickCtx tc = {progress, 0};
    PyObject *result = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = td_open(&f, data ? data : (const uint8_t *)"", size, err);
    Py_END_ALLOW_THREADS
    if (rc == 0 && select_events(f, events) < 0)
        goto out;
    if (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = td_decode(f, jobs, tick, &tc, err);
        Py_END_ALLOW_THREADS
    }
    if (tc.failed)
        goto out;               /* KeyboardInterrupt or a progress callback's error */
    if (rc < 0) {
        if (!strcmp(err, "out of memory"))
            PyErr_NoMemory();
        else
            PyErr_SetString(TraceDatError, err[0] ? err : "corrupt trace.dat");
        goto out;
    }
    td_meta *m = td_get_meta(f);
    PyObject *evd = PyDict_New(), *meta = meta_to_py(m);
    if (!evd || !meta) {
        Py_XDECREF(evd);
        Py_XDECREF(meta);
        goto out;
    }
    for (int i = 0; i < td_nevents(f); i++) {
        td_event *ev = td_event_at(f, i);
        PyObject *ent = event_to_py(ev);
        if (!ent || PyDict_SetItemString(evd, ev->name, ent) < 0) {
            Py_XDECREF(ent);
            Py_DECREF(evd);
            Py_DECREF(meta);
            goto out;
        }
        Py_DECREF(ent);
    }
    result = Py_BuildValue("{s:N,s:N,s:(NNN)}", "meta", meta, "events", evd, "lost",
                           buf_to_py(&m->lost_ts), buf_to_py(&m->lost_cpu),
                           buf_to_py(&m->lost_count));
out:
    td_close(f);
    if (data)
        munmap((void *)data, size);
    return result;
}

static PyMethodDef methods[] = {
    {"read", (PyCFunction)(void (*)(void))py_read, METH_VARARGS | METH_KEYWORDS, read_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_tdread",
    "schedwake's own trace.dat reader (see _tdcore.c)", -1, methods,
};

PyMODINIT_FUNC PyInit__tdread(void)
{
    if (pybuf_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    TraceDatError = PyErr_NewException("schedwake.ingest._tdread.TraceDatError",
                                       PyExc_ValueError, NULL);
    if (!TraceDatError || PyModule_AddObject(m, "TraceDatError", TraceDatError) < 0) {
        Py_XDECREF(TraceDatError);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
