/*
 * _tdread: the Python binding of schedwake's own trace.dat reader (_td_*.c, _tdcore.h).
 *
 * read(path, events=None, progress=None, jobs=None) maps the file read-only,
 * decodes it with the GIL released (CPUs in `jobs` threads) and hands the column
 * memory to Python without copies, as the dict that schedwake.ingest.tracedat
 * assembles into tables (the libtracecmd binding returns the same shape):
 *   {"meta": {...}, "events": {name: {"system", "count", "rows", "columns"}},
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

/* What the helpers below return when a Python exception is set (CPython's -1);
   the decoder's own codes are _tdcore.h's TD_OK, TD_FAIL. */
enum { PY_FAIL = -1 };

/* Raise TraceDatError with err as one line of valid text: messages may quote
   bytes of the file, which may be anything. */
static void set_error(const char *err)
{
    char line[TD_ERRLEN];
    size_t n = 0;
    for (const char *p = err[0] ? err : "corrupt trace.dat"; *p && n < sizeof(line) - 1; p++)
        line[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
    PyObject *msg = PyUnicode_DecodeUTF8(line, (Py_ssize_t)n, "replace");
    if (msg) {
        PyErr_SetObject(TraceDatError, msg);
        Py_DECREF(msg);
    }
}

/* Raise the decoder's failure `err`: MemoryError for "out of memory", else
   TraceDatError. */
static void raise_failure(const char *err)
{
    if (!strcmp(err, "out of memory"))
        PyErr_NoMemory();
    else
        set_error(err);
}

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

/* Map the file read-only (pages are read as they are decoded, and are the page
   cache's, not our memory).  *data is NULL for an empty file.  PY_FAIL: OSError set. */
static int map_file(PyObject *pathobj, const uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    int fd = open(PyBytes_AS_STRING(pathobj), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, pathobj);
        return PY_FAIL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, pathobj);
            return PY_FAIL;
        }
        madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
        *data = m;
        *size = (size_t)st.st_size;
    }
    close(fd);
    return 0;
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
    /* rows of these columns: the whole count, or a streamed batch's share */
    long long rows = ev->cols ? (long long)(ev->cols[0].values.len / 8) : 0;
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
    return Py_BuildValue("{s:N,s:L,s:L,s:N}", "system", str_or_none(ev->system),
                         "count", (long long)ev->count, "rows", rows, "columns", cols);
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

/* Map the file at pathobj (map_file()) and let go of pathobj.  PY_FAIL: OSError set. */
static int map_path(PyObject *pathobj, const uint8_t **data, size_t *size)
{
    int mapped = map_file(pathobj, data, size);
    Py_DECREF(pathobj);
    return mapped;
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
    PyObject *range = Py_None;
    Py_INCREF(range);
    if (m->ranged) {
        Py_DECREF(range);
        range = m->range_t1 == INT64_MAX
                ? Py_BuildValue("(LO)", (long long)m->range_t0, Py_None)
                : Py_BuildValue("(LL)", (long long)m->range_t0, (long long)m->range_t1);
        if (!range)
            goto fail;
    }
    return Py_BuildValue(
        "{s:i,s:N,s:N,s:N,s:N,s:i,s:L,s:L,s:L,s:N,s:L,s:i,s:N,s:N,s:N,s:N,s:N,s:i,s:N,s:L,"
        "s:L}",
        "cpus", m->cpus, "clock", str_or_none(m->clock), "uname", str_or_none(m->uname),
        "trace_cmd_version", str_or_none(m->trace_cmd_version),
        "cpustats", str_or_none(m->cpustats), "file_version", m->file_version,
        "records", (long long)m->records, "first_ts", (long long)m->first_ts,
        "last_ts", (long long)m->last_ts, "lost_per_cpu", lost,
        "unknown_events", (long long)m->unknown_records, "big_endian", m->big_endian,
        "buffer", str_or_none(m->buffer), "instances", str_list(m->instances, m->ninstances),
        "compression", str_or_none(m->compression), "options", options,
        "warnings", str_list(m->warnings, m->nwarnings), "page_size", m->page_size,
        "time_range", range, "blocks_decoded", (long long)m->blocks_decoded,
        "blocks_total", (long long)m->blocks_total);
fail:
    Py_XDECREF(lost);
    Py_XDECREF(options);
    return NULL;
}

/* The earliest and latest sample times and their attributes' indexes:
   {"samples": n, "low": [(ts, attr), ...] ascending, "high": [...] descending}. */
static PyObject *time_ends_to_py(const td_perf_info *in)
{
    PyObject *low = PyList_New(in->n_time_low), *high = PyList_New(in->n_time_high);
    for (int i = 0; low && high && i < in->n_time_low; i++) {
        PyObject *v = Py_BuildValue("(Li)", (long long)in->time_low[i], in->time_low_attr[i]);
        if (!v)
            Py_CLEAR(low);
        else
            PyList_SET_ITEM(low, i, v);
    }
    for (int i = 0; low && high && i < in->n_time_high; i++) {
        PyObject *v = Py_BuildValue("(Li)", (long long)in->time_high[i], in->time_high_attr[i]);
        if (!v)
            Py_CLEAR(high);
        else
            PyList_SET_ITEM(high, i, v);
    }
    if (!low || !high) {
        Py_XDECREF(low);
        Py_XDECREF(high);
        return NULL;
    }
    return Py_BuildValue("{s:L,s:N,s:N}", "samples", (long long)in->timed_samples, "low", low,
                         "high", high);
}

/* A list of n int32 values (NULL: an empty list). */
static PyObject *int_list(const int32_t *v, int n)
{
    PyObject *l = PyList_New(v ? n : 0);
    for (int i = 0; l && v && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

/* Build a list of n items with fn(i); NULL on error. */
static PyObject *list_of(int n, PyObject *(*fn)(td_file *, td_perf_info *, int), td_file *f,
                         td_perf_info *in)
{
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *x = fn(f, in, i);
        if (!x) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

static PyObject *attr_to_py(td_file *f, td_perf_info *in, int i)
{
    const td_perf_attr *a = td_perf_attr_at(f, i);
    const char *table = a->event >= 0 ? td_event_at(f, a->event)->name : NULL;
    return Py_BuildValue(
        "{s:N,s:N,s:I,s:K,s:K,s:K,s:K,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:L}",
        "name", str_or_none(a->name), "table", str_or_none(table), "type", a->type,
        "config", (unsigned long long)a->config,
        "sample_type", (unsigned long long)a->sample_type,
        "sample_period", (unsigned long long)a->sample_period,
        "read_format", (unsigned long long)a->read_format, "freq", a->freq,
        "precise_ip", a->precise_ip, "sample_id_all", a->sample_id_all,
        "exclude_user", a->exclude_user, "exclude_kernel", a->exclude_kernel,
        "use_clockid", a->use_clockid, "clockid", a->clockid, "ids", (long long)a->nids,
        "samples", (long long)a->samples);
}

static PyObject *numa_to_py(td_file *f, td_perf_info *in, int i)
{
    const td_perf_numa *n = &in->numa[i];
    return Py_BuildValue("{s:i,s:K,s:K,s:N}", "node", n->node,
                         "mem_total_kb", (unsigned long long)n->mem_total_kb,
                         "mem_free_kb", (unsigned long long)n->mem_free_kb,
                         "cpus", str_or_none(n->cpus));
}

static PyObject *cache_to_py(td_file *f, td_perf_info *in, int i)
{
    const td_perf_cache *c = &in->cache[i];
    return Py_BuildValue("{s:I,s:I,s:I,s:I,s:N,s:N,s:N}", "level", c->level,
                         "line_size", c->line_size, "sets", c->sets, "ways", c->ways,
                         "type", str_or_none(c->type), "size", str_or_none(c->size),
                         "cpus", str_or_none(c->cpus));
}

static PyObject *build_id_to_py(td_file *f, td_perf_info *in, int i)
{
    const td_perf_build_id *b = &in->build_ids[i];
    char hex[41];
    for (int k = 0; k < b->size && k < 20; k++)
        snprintf(hex + 2 * k, 3, "%02x", b->id[k]);
    hex[2 * (b->size < 20 ? b->size : 20)] = 0;
    return Py_BuildValue("{s:i,s:i,s:s,s:N}", "pid", b->pid, "cpumode", b->misc & 7,
                         "build_id", hex, "filename", str_or_none(b->filename));
}

/* Column buffers of side-band rows: name -> buffer (or (indices, offsets, chars)). */
static PyObject *sideband_to_py(td_perf_info *in)
{
    td_perf_comms *c = &in->comms;
    td_perf_mmaps *m = &in->mmaps;
    return Py_BuildValue(
        "{s:{s:N,s:N,s:N,s:N,s:N},s:{s:N,s:N,s:N,s:N,s:N},s:{s:N,s:N,s:N,s:N,s:N},"
        "s:{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:(NN)}}",
        "comms", "ts", buf_to_py(&c->ts), "pid", buf_to_py(&c->pid), "tid", buf_to_py(&c->tid),
        "comm", strcol_to_py(&c->comm), "exec", buf_to_py(&c->exec),
        "forks", "ts", buf_to_py(&in->forks.ts), "pid", buf_to_py(&in->forks.pid),
        "ppid", buf_to_py(&in->forks.ppid), "tid", buf_to_py(&in->forks.tid),
        "ptid", buf_to_py(&in->forks.ptid),
        "exits", "ts", buf_to_py(&in->exits.ts), "pid", buf_to_py(&in->exits.pid),
        "ppid", buf_to_py(&in->exits.ppid), "tid", buf_to_py(&in->exits.tid),
        "ptid", buf_to_py(&in->exits.ptid),
        "mmaps", "ts", buf_to_py(&m->ts), "pid", buf_to_py(&m->pid), "tid", buf_to_py(&m->tid),
        "start", buf_to_py(&m->start), "len", buf_to_py(&m->len), "pgoff", buf_to_py(&m->pgoff),
        "prot", buf_to_py(&m->prot), "flags", buf_to_py(&m->flags),
        "cpumode", buf_to_py(&m->cpumode), "filename", strcol_to_py(&m->filename),
        "build_id", buf_to_py(&m->build_id_offsets), buf_to_py(&m->build_id));
}

/* What a perf.data file says besides its samples (None for a trace.dat). */
static PyObject *perf_to_py(td_file *f)
{
    td_perf_info *in = td_get_perf(f);
    if (!in)
        Py_RETURN_NONE;
    PyObject *types = PyDict_New();
    for (int t = 0; types && t < 128; t++) {
        if (!in->records_by_type[t])
            continue;
        PyObject *k = PyLong_FromLong(t), *v = PyLong_FromLongLong(in->records_by_type[t]);
        int bad = !k || !v || PyDict_SetItem(types, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad)
            Py_CLEAR(types);
    }
    if (!types)
        return NULL;
    PyObject *clock = in->has_clock_data
        ? Py_BuildValue("{s:K,s:K,s:K}", "clockid", (unsigned long long)in->clock_data_clockid,
                        "tod_ns", (unsigned long long)in->clock_tod_ns,
                        "clockid_ns", (unsigned long long)in->clock_clockid_ns)
        : (Py_INCREF(Py_None), Py_None);
    PyObject *sample_time = in->has_sample_time
        ? Py_BuildValue("(KK)", (unsigned long long)in->sample_time_first,
                        (unsigned long long)in->sample_time_last)
        : (Py_INCREF(Py_None), Py_None);
    PyObject *clockid = in->has_clockid ? PyLong_FromUnsignedLongLong(in->clockid)
                                        : (Py_INCREF(Py_None), Py_None);
    return Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:I,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:i,s:i,s:K,"
        "s:{s:N,s:N,s:N,s:N,s:N,s:N},s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:i,s:N,"
        "s:L,s:L,s:L,s:L,s:L,s:N,s:N,s:N}",
        "pipe", in->pipe, "compressed", in->compressed, "comp_level", in->comp_level,
        "comp_ratio", in->comp_ratio, "comp_mmap_len", in->comp_mmap_len,
        "hostname", str_or_none(in->hostname), "osrelease", str_or_none(in->osrelease),
        "perf_version", str_or_none(in->perf_version), "arch", str_or_none(in->arch),
        "cpudesc", str_or_none(in->cpudesc), "cpuid", str_or_none(in->cpuid),
        "cmdline", str_or_none(in->cmdline), "nr_cpus_avail", in->nr_cpus_avail,
        "nr_cpus_online", in->nr_cpus_online,
        "total_mem_kb", (unsigned long long)in->total_mem_kb,
        "cpu_topology", "packages", str_list(in->packages, in->n_packages),
        "dies", str_list(in->dies, in->n_dies), "threads", str_list(in->threads, in->n_threads),
        "core_id", int_list(in->core_id, in->n_cpu_ids),
        "socket_id", int_list(in->socket_id, in->n_cpu_ids),
        "die_id", int_list(in->die_id, in->n_cpu_ids),
        "numa", list_of(in->n_numa, numa_to_py, f, in),
        "cache", list_of(in->n_cache, cache_to_py, f, in),
        "clockid", clockid, "clock_data", clock, "sample_time", sample_time,
        "build_ids", list_of(in->n_build_ids, build_id_to_py, f, in),
        "attrs", list_of(in->nattrs, attr_to_py, f, in),
        "has_tracing_data", in->has_tracing_data,
        "tracing_version", str_or_none(in->tracing_version),
        "rounds", (long long)in->rounds, "out_of_order", (long long)in->out_of_order,
        "throttles", (long long)in->throttles, "lost_samples", (long long)in->lost_samples,
        "filtered_samples", (long long)in->filtered_samples, "records_by_type", types,
        "sideband", sideband_to_py(in), "time_ends", time_ends_to_py(in));
}

/* The decoded tables (the whole file, or one streamed batch) and metadata. */
static PyObject *raw_to_py(td_file *f)
{
    td_meta *m = td_get_meta(f);
    PyObject *evd = PyDict_New(), *meta = meta_to_py(m), *perf = meta ? perf_to_py(f) : NULL;
    if (!evd || !meta || !perf || PyDict_SetItemString(meta, "perf", perf) < 0) {
        Py_XDECREF(evd);
        Py_XDECREF(meta);
        Py_XDECREF(perf);
        return NULL;
    }
    Py_DECREF(perf);
    for (int i = 0; i < td_nevents(f); i++) {
        td_event *ev = td_event_at(f, i);
        PyObject *ent = event_to_py(ev);
        if (!ent || PyDict_SetItemString(evd, ev->name, ent) < 0) {
            Py_XDECREF(ent);
            Py_DECREF(evd);
            Py_DECREF(meta);
            return NULL;
        }
        Py_DECREF(ent);
    }
    return Py_BuildValue("{s:N,s:N,s:(NNN)}", "meta", meta, "events", evd, "lost",
                         buf_to_py(&m->lost_ts), buf_to_py(&m->lost_cpu),
                         buf_to_py(&m->lost_count));
}

/* A perf.data whose wanted events name kernel functions gets kallsyms from
   `kallsyms`: None, or a callable (release, kernel build id) -> bytes or None.
   TD_OK, PY_FAIL with a Python error set, or TD_FAIL with err filled. */
static int use_kallsyms(td_file *f, PyObject *kallsyms, char *err)
{
    td_perf_info *in = td_get_perf(f);
    if (kallsyms == Py_None || !in)
        return 0;
    int need = td_needs_kallsyms(f);
    if (need < 0) {
        PyErr_NoMemory();
        return PY_FAIL;
    }
    if (!need)
        return 0;
    const char *kid = NULL;
    char hex[41] = "";
    for (int i = 0; i < in->n_build_ids; i++) {
        const td_perf_build_id *b = &in->build_ids[i];
        if (b->filename && !strcmp(b->filename, "[kernel.kallsyms]")) {
            for (int k = 0; k < b->size && k < 20; k++)
                snprintf(hex + 2 * k, 3, "%02x", b->id[k]);
            kid = hex;
            break;
        }
    }
    PyObject *text = PyObject_CallFunction(kallsyms, "zz", in->osrelease, kid);
    if (!text)
        return PY_FAIL;
    int rc = 0;
    if (text != Py_None) {
        Py_buffer view;
        if (PyObject_GetBuffer(text, &view, PyBUF_SIMPLE) < 0) {
            Py_DECREF(text);
            return PY_FAIL;
        }
        rc = td_set_kallsyms(f, view.buf, (size_t)view.len, err);
        PyBuffer_Release(&view);
        if (rc < 0 && !strcmp(err, "out of memory"))
            PyErr_NoMemory();
    }
    Py_DECREF(text);
    return rc;
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
            return PY_FAIL;
        int in = PySequence_Contains(events, name);
        Py_DECREF(name);
        if (in < 0)
            return PY_FAIL;
        ev->wanted = in;
    }
    return 0;
}

/* A time range (t0, t1) (t1 None: to the end) into [*t0, *t1).  PY_FAIL: error set. */
static int parse_time_range(PyObject *range, int64_t *t0, int64_t *t1)
{
    long long a;
    PyObject *b;
    if (!PyTuple_Check(range) || !PyArg_ParseTuple(range, "LO", &a, &b)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "time_range must be a tuple (t0, t1) of int "
                        "nanoseconds, t1 None for the end");
        return PY_FAIL;
    }
    long long c = INT64_MAX;
    if (b != Py_None && (c = PyLong_AsLongLong(b)) == -1 && PyErr_Occurred())
        return PY_FAIL;
    if (a >= c) {
        PyErr_Format(PyExc_ValueError, "time_range: t0 (%lld) must be before t1 (%lld)", a, c);
        return PY_FAIL;
    }
    *t0 = a;
    *t1 = c;
    return 0;
}

PyDoc_STRVAR(read_doc,
"read(path, events=None, progress=None, jobs=None, kallsyms=None, time_range=None) -> dict\n\n"
"Read a trace.dat or perf.data file with schedwake's own decoder. `events` is None\n"
"(all) or a collection of event names; `progress` is called with a float in [0, 1]\n"
"now and then; `jobs` is the number of decoding threads (None: one per online CPU);\n"
"`kallsyms`, for a perf.data whose events name kernel functions (%ps fields), is\n"
"called with (kernel release, kernel build id) and returns kallsyms text or None.\n"
"`time_range` (t0, t1), t1 None for the end: only the records with t0 <= ts < t1,\n"
"decoding only the blocks of index() that can hold them (perf.data: its rounds; its\n"
"lost rows stay the file's); meta then has time_range and blocks_decoded of\n"
"blocks_total.\n"
"Raises TraceDatError (a ValueError) with a one-line reason on unusable files.");

static PyObject *py_read(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "events", "progress", "jobs", "kallsyms", "time_range",
                             NULL};
    PyObject *pathobj, *events = Py_None, *progress = Py_None, *jobsobj = Py_None;
    PyObject *kallsyms = Py_None, *range = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OOOOO", kwlist, PyUnicode_FSConverter,
                                     &pathobj, &events, &progress, &jobsobj, &kallsyms, &range))
        return NULL;
    int64_t t0 = 0, t1 = 0;
    if (range != Py_None && parse_time_range(range, &t0, &t1) < 0) {
        Py_DECREF(pathobj);
        return NULL;
    }
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
    char err[TD_ERRLEN] = "";
    const uint8_t *data;
    size_t size;
    if (map_path(pathobj, &data, &size) < 0)
        return NULL;

    td_file *f = NULL;
    TickCtx tc = {progress, 0};
    PyObject *result = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = td_open(&f, data ? data : (const uint8_t *)"", size, err);
    Py_END_ALLOW_THREADS
    if (rc == 0 && data)
        td_data_is_file_mapping(f);     /* map_file()'s read-only private mapping */
    if (rc == 0 && select_events(f, events) < 0)
        goto out;
    if (rc == 0 && events == Py_None)
        td_no_empty_tables(f);  /* all events: tables only of those with rows
                                   (schedwake.ingest.tracedat.event_tables) */
    if (rc == 0 && use_kallsyms(f, kallsyms, err) < 0) {
        if (PyErr_Occurred())
            goto out;
        rc = TD_FAIL;
    }
    if (rc == 0 && range != Py_None) {
        Py_BEGIN_ALLOW_THREADS
        rc = td_set_time_range(f, t0, t1, err);
        Py_END_ALLOW_THREADS
    }
    if (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = td_decode(f, jobs, tick, &tc, err);
        Py_END_ALLOW_THREADS
    }
    if (tc.failed)
        goto out;               /* KeyboardInterrupt or a progress callback's error */
    if (rc < 0) {
        raise_failure(err);
        goto out;
    }
    result = raw_to_py(f);
out:
    td_close(f);
    if (data)
        munmap((void *)data, size);
    return result;
}

/* ------------------------------------------------------------ streaming */

typedef struct {
    PyObject_HEAD
    const uint8_t *data;
    size_t size;
    td_file *f;
    td_stream *st;
    int64_t batch_rows;
} StreamObject;

static void stream_dealloc(PyObject *self)
{
    StreamObject *o = (StreamObject *)self;
    td_stream_close(o->st);
    td_close(o->f);
    if (o->data)
        munmap((void *)o->data, o->size);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *stream_next(PyObject *self)
{
    StreamObject *o = (StreamObject *)self;
    char err[TD_ERRLEN] = "";
    int rc;
    if (!o->st)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = td_stream_next(o->st, o->batch_rows, err);
    Py_END_ALLOW_THREADS
    if (rc == 0)
        return NULL;            /* StopIteration */
    if (rc < 0) {
        if (!strcmp(err, "out of memory"))
            PyErr_NoMemory();
        else
            set_error(err);
        return NULL;
    }
    PyObject *raw = raw_to_py(o->f), *done = raw ? PyFloat_FromDouble(td_stream_done(o->st)) : NULL;
    if (!done || PyDict_SetItemString(raw, "done", done) < 0) {
        Py_XDECREF(done);
        Py_XDECREF(raw);
        return NULL;
    }
    Py_DECREF(done);
    return raw;
}

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "schedwake.ingest._tdread.Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = stream_next,
    .tp_doc = "batches of a trace.dat or perf.data file, in time order (see stream())",
};

PyDoc_STRVAR(stream_doc,
"stream(path, events=None, batch_rows=1048576, kallsyms=None) -> iterator of dicts\n\n"
"Read a trace.dat or perf.data file in batches of about `batch_rows` rows, in memory that does\n"
"not grow with the file; each batch is a dict like read()'s, its tables in\n"
"(timestamp, CPU) order and later batches later in time, and its \"done\" the\n"
"fraction of the data decoded so far; meta counts are\n"
"cumulative, and the last batch's describe the whole file.");

static PyObject *py_stream(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "events", "batch_rows", "kallsyms", NULL};
    PyObject *pathobj, *events = Py_None, *kallsyms = Py_None;
    long long batch_rows = 1 << 20;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OLO", kwlist, PyUnicode_FSConverter,
                                     &pathobj, &events, &batch_rows, &kallsyms))
        return NULL;
    if (batch_rows < 1) {
        Py_DECREF(pathobj);
        PyErr_SetString(PyExc_ValueError, "batch_rows must be at least 1");
        return NULL;
    }
    StreamObject *o = PyObject_New(StreamObject, &StreamType);
    if (!o) {
        Py_DECREF(pathobj);
        return NULL;
    }
    o->data = NULL;
    o->size = 0;
    o->f = NULL;
    o->st = NULL;
    o->batch_rows = batch_rows;
    int mapped = map_file(pathobj, &o->data, &o->size);
    Py_DECREF(pathobj);
    if (mapped < 0) {
        Py_DECREF(o);
        return NULL;
    }
    char err[TD_ERRLEN] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = td_open(&o->f, o->data ? o->data : (const uint8_t *)"", o->size, err);
    Py_END_ALLOW_THREADS
    if (rc == 0 && o->data)
        td_data_is_file_mapping(o->f);
    if (rc == 0 && select_events(o->f, events) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    if (rc == 0 && use_kallsyms(o->f, kallsyms, err) < 0) {
        if (PyErr_Occurred()) {
            Py_DECREF(o);
            return NULL;
        }
        rc = TD_FAIL;
    }
    if (rc == 0)
        rc = td_stream_open(o->f, &o->st, err);
    if (rc < 0) {
        Py_DECREF(o);
        if (!strcmp(err, "out of memory"))
            return PyErr_NoMemory();
        set_error(err);
        return NULL;
    }
    return (PyObject *)o;
}

PyDoc_STRVAR(index_doc,
"index(path) -> dict\n\n"
"The block index of a trace.dat's buffer, without decoding its records:\n"
"{\"blocks\": {cpu: first_ts}} where first_ts is an int64 buffer\n"
"of each block's first time (v6 and uncompressed v7: a page each; compressed v7: a\n"
"chunk each, of which only the first non-empty page is decompressed).  Block i\n"
"holds records in [first_ts[i], first_ts[i + 1]]; a block that holds nothing has\n"
"the next one's time (the last: 2**63 - 1).  A perf.data has one entry, CPU\n"
"2**32 - 1, of its FINISHED_ROUND rounds with samples, each with its earliest sample's\n"
"time (rounds overlap in time a little).  Raises TraceDatError on damage.");

static PyObject *py_index(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", NULL};
    PyObject *pathobj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&", kwlist, PyUnicode_FSConverter,
                                     &pathobj))
        return NULL;
    const uint8_t *data;
    size_t size;
    if (map_path(pathobj, &data, &size) < 0)
        return NULL;
    char err[TD_ERRLEN] = "";
    td_file *f = NULL;
    const td_cpu_blocks *ix = NULL;
    int n = 0, rc;
    PyObject *result = NULL, *blocks = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = td_open(&f, data ? data : (const uint8_t *)"", size, err);
    if (rc == 0)
        rc = td_index(f, &ix, &n, err);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        raise_failure(err);
        goto out;
    }
    if (!(blocks = PyDict_New()))
        goto out;
    for (int s = 0; s < n; s++) {
        if (!ix[s].nblocks)
            continue;
        Buf b = {0};
        if (buf_put(&b, ix[s].first_ts, (size_t)ix[s].nblocks * 8) < 0) {
            PyErr_NoMemory();
            goto out;
        }
        PyObject *k = PyLong_FromUnsignedLong(ix[s].cpu), *v = buf_to_py(&b);
        int bad = !k || !v || PyDict_SetItem(blocks, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad)
            goto out;
    }
    result = Py_BuildValue("{s:O}", "blocks", blocks);
out:
    Py_XDECREF(blocks);
    td_close(f);
    if (data)
        munmap((void *)data, size);
    return result;
}

static PyMethodDef methods[] = {
    {"index", (PyCFunction)(void (*)(void))py_index, METH_VARARGS | METH_KEYWORDS, index_doc},
    {"read", (PyCFunction)(void (*)(void))py_read, METH_VARARGS | METH_KEYWORDS, read_doc},
    {"stream", (PyCFunction)(void (*)(void))py_stream, METH_VARARGS | METH_KEYWORDS,
     stream_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_tdread",
    "schedwake's own trace.dat and perf.data reader (see _tdcore.h)", -1, methods,
};

PyMODINIT_FUNC PyInit__tdread(void)
{
    if (pybuf_ready() < 0 || PyType_Ready(&StreamType) < 0)
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
