/*
 * _libtracecmd: read a trace-cmd trace.dat file through libtracecmd/libtraceevent
 * into column buffers, in one pass, in C.
 *
 * This is no longer schedwake's default trace.dat reader (that is _tdread, our own
 * bounds-checked decoder).  It stays as the conformance oracle and as an opt-in
 * reader (`--reader libtracecmd`), and it is only ever run in a child process
 * (schedwake/ingest/libtracecmd.py): libtracecmd can crash or spin on damaged input,
 * and a child that dies or stalls is reported as a TraceError by the parent, so this
 * module needs no signal handlers of its own.
 *
 * Why the CPython C API and not cffi: the hot loop is one callback per record
 * from tracecmd_iterate_events(); it must append every field of every wanted
 * event to growing column buffers without touching a Python object.  With the C
 * API the buffers are handed to Python at the end as objects that export the
 * buffer protocol (_pybuf.h), so pyarrow wraps them without a copy.
 *
 * What it produces, per wanted event (schedwake.schema documents the meaning):
 *   ts, cpu, common_pid, common_flags, common_preempt_count, common_comm
 *   and every field of the event's format, decoded by its real width and
 *   signedness; char[N] / __data_loc / __rel_loc strings and %ps function
 *   pointers (resolved through the file's kallsyms) as dictionary-encoded
 *   strings (bytes that are not UTF-8 become U+FFFD, as in _tdread); numeric
 *   arrays as list columns; anything else as binary.
 *   sched_switch also gets prev_state_str: prev_state printed by the event's
 *   own print format (libtraceevent evaluates it, no plugins loaded).
 * Plus: per-event counts of every event in the file, lost-event rows
 * (record->missed_events) and the file's metadata.
 *
 * Damaged files: besides crashes (left to the parent), two cheap checks stop a
 * damaged page that makes the library go round in circles while it still
 * delivers records: more records than the data could hold, or a CPU's record
 * offsets going backwards.
 */
#include "_pybuf.h"     /* first: it includes Python.h */

#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <trace-cmd/trace-cmd.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

/* Exported by libtracecmd but declared only in its private header. */
int tracecmd_cpus(struct tracecmd_input *handle);
const char *tracecmd_get_trace_clock(struct tracecmd_input *handle);
const char *tracecmd_get_uname(struct tracecmd_input *handle);
const char *tracecmd_get_version(struct tracecmd_input *handle);
const char *tracecmd_get_cpustats(struct tracecmd_input *handle);
unsigned long tracecmd_get_in_file_version(struct tracecmd_input *handle);
struct tep_record *tracecmd_read_cpu_last(struct tracecmd_input *handle, int cpu);
struct tep_record *tracecmd_read_cpu_first(struct tracecmd_input *handle, int cpu);
void tracecmd_set_all_cpus_to_timestamp(struct tracecmd_input *handle, unsigned long long time);
off64_t tracecmd_get_cpu_file_size(struct tracecmd_input *handle, int cpu);

/* ------------------------------------------------------------- columns */

enum col_kind {
    K_INT,      /* integer of size 1/2/4/8, signed or not */
    K_STR,      /* char[N] */
    K_DYNSTR,   /* __data_loc / __rel_loc char[] */
    K_SYM,      /* pointer printed as %ps: kallsyms name */
    K_ARRAY,    /* fixed numeric array: list column */
    K_DYNARRAY, /* __data_loc numeric array: list column */
    K_BIN,      /* anything else: raw bytes */
};

#define CACHE_SIZE 1024        /* direct-mapped caches: pid -> comm, address -> symbol */

typedef struct {
    uint64_t key[CACHE_SIZE];
    int32_t idx[CACHE_SIZE];   /* dictionary index + 1; 0 = empty slot */
} Cache;

typedef struct {
    struct tep_format_field *field;
    enum col_kind kind;
    Cache *sym_cache;          /* K_SYM: address -> symbol; K_STR up to 16 bytes: raw bytes */
    uint64_t *raw_hi;          /* K_STR cache: second 8 raw bytes of each slot's key */
    int offset, size, elem, is_signed, is_rel;
    Buf values;     /* K_INT, K_ARRAY, K_DYNARRAY values; K_BIN bytes */
    Buf offsets;    /* list / binary offsets (int32) */
    StrCol str;     /* K_STR, K_DYNSTR, K_SYM */
} Col;

typedef struct {
    struct tep_event *event;
    int wanted;
    int64_t count;
    int ncols;
    Col *cols;
    Buf ts, cpu, pid, flags, preempt;
    StrCol comm;
    Cache comm_cache;
    /* sched_switch: prev_state decoded by the print format */
    int prev_state_col;
    StrCol prev_state_str;
    int64_t state_vals[64];
    int32_t state_idx[64];
    int nstates;
} EvTab;

/* Why record_cb() ended the iteration early. */
enum read_error {
    E_NONE,
    E_NOMEM,        /* an allocation failed */
    E_PYTHON,       /* a Python exception is set (a signal, or the progress callback) */
    E_LOOPING,      /* more records than the data can hold, or a CPU's offsets went back */
};

typedef struct {
    struct tracecmd_input *top;     /* the file's handle */
    struct tracecmd_input *handle;  /* the buffer read: top, or an instance's handle */
    const char *buffer;             /* "" for the top buffer, else the instance name */
    struct tep_handle *tep;
    EvTab **by_id;          /* indexed by event id */
    int max_id;
    int ncpus;
    int swap;               /* file endianness differs from ours */
    int common_flags_off, common_preempt_off, common_pid_off, common_type_size;
    Buf lost_ts, lost_cpu, lost_count;
    int64_t *lost_per_cpu;
    int64_t nrecords, first_ts, last_ts, min_ts, max_ts;
    int64_t max_records;    /* more than the data can hold: a damaged page loops */
    uint64_t *next_offset;  /* per CPU: records are read in file order, offsets grow */
    PyObject *progress;
    int64_t next_progress;
    int error;              /* an enum read_error: why the iteration stopped early */
    struct trace_seq seq;
    int64_t unknown_events;
} Reader;

static inline uint64_t read_uint(Reader *r, const void *p, int size)
{
    if (r->swap)
        return tep_read_number(r->tep, p, size);
    switch (size) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
    return 0;
}

static inline int64_t sign_extend(uint64_t v, int size)
{
    switch (size) {
    case 1: return (int8_t)v;
    case 2: return (int16_t)v;
    case 4: return (int32_t)v;
    }
    return (int64_t)v;
}

/* Append an integer of `size` bytes (1/2/4/8) to b, converted to host order. */
static inline int put_int(Reader *r, Buf *b, const void *p, int size)
{
    uint64_t v = read_uint(r, p, size);
    switch (size) {
    case 1: { uint8_t x = (uint8_t)v; return buf_put(b, &x, 1); }
    case 2: { uint16_t x = (uint16_t)v; return buf_put(b, &x, 2); }
    case 4: { uint32_t x = (uint32_t)v; return buf_put(b, &x, 4); }
    default: return buf_put(b, &v, 8);
    }
}

/* Names of fields that the print format shows with %ps/%pS/%pf/%pF/%pB. */
static int field_is_symbol(struct tep_event *ev, struct tep_format_field *f)
{
    const char *fmt = ev->print_fmt.format;
    struct tep_print_arg *arg = ev->print_fmt.args;
    if (!fmt)
        return 0;
    for (const char *p = fmt; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '%')
            continue;
        while (*p && strchr("-+ #0", *p))
            p++;
        for (; *p && (isdigit((unsigned char)*p) || *p == '.' || *p == '*'); p++)
            if (*p == '*' && arg)
                arg = arg->next;
        while (*p && strchr("hlLqjzt", *p))
            p++;
        if (!*p)
            break;
        int sym = (*p == 'p' && p[1] && strchr("sSfFB", p[1]));
        if (arg) {
            struct tep_print_arg *a = arg;
            while (a && a->type == TEP_PRINT_TYPE)
                a = a->typecast.item;
            if (sym && a && a->type == TEP_PRINT_FIELD &&
                (a->field.field == f || (a->field.name && strcmp(a->field.name, f->name) == 0)))
                return 1;
            arg = arg->next;
        }
    }
    return 0;
}

static int setup_event(Reader *r, struct tep_event *ev, int wanted)
{
    EvTab *t = calloc(1, sizeof(*t));
    if (!t)
        return -1;
    t->event = ev;
    t->wanted = wanted;
    t->prev_state_col = -1;
    r->by_id[ev->id] = t;
    if (!wanted)
        return 0;
    int n = 0;
    for (struct tep_format_field *f = ev->format.fields; f; f = f->next)
        n++;
    t->cols = calloc(n ? n : 1, sizeof(Col));
    if (!t->cols)
        return -1;
    t->ncols = n;
    int i = 0;
    for (struct tep_format_field *f = ev->format.fields; f; f = f->next, i++) {
        Col *c = &t->cols[i];
        c->field = f;
        c->offset = f->offset;
        c->size = f->size;
        c->is_signed = !!(f->flags & TEP_FIELD_IS_SIGNED);
        c->is_rel = !!(f->flags & TEP_FIELD_IS_RELATIVE);
        c->elem = f->elementsize;
        if (f->flags & TEP_FIELD_IS_DYNAMIC) {
            if (f->flags & TEP_FIELD_IS_STRING)
                c->kind = K_DYNSTR;
            else if (c->elem == 1 || c->elem == 2 || c->elem == 4 || c->elem == 8)
                c->kind = K_DYNARRAY;
            else
                c->kind = K_BIN;
        } else if (f->flags & TEP_FIELD_IS_ARRAY) {
            if (f->flags & TEP_FIELD_IS_STRING) {
                c->kind = K_STR;
                if (c->size > 0 && c->size <= 16 &&
                    (!(c->sym_cache = calloc(1, sizeof(Cache))) ||
                     !(c->raw_hi = calloc(CACHE_SIZE, sizeof(uint64_t)))))
                    return -1;
            } else if (c->elem == 1 || c->elem == 2 || c->elem == 4 || c->elem == 8)
                c->kind = K_ARRAY;
            else
                c->kind = K_BIN;
        } else if (c->size == 1 || c->size == 2 || c->size == 4 || c->size == 8) {
            c->kind = ((f->flags & TEP_FIELD_IS_POINTER) || c->size == 8) &&
                      field_is_symbol(ev, f) ? K_SYM : K_INT;
            if (c->kind == K_SYM && !(c->sym_cache = calloc(1, sizeof(Cache))))
                return -1;
        } else {
            c->kind = K_BIN;
        }
        if (strcmp(ev->name, "sched_switch") == 0 && strcmp(f->name, "prev_state") == 0 &&
            c->kind == K_INT)
            t->prev_state_col = i;
    }
    return 0;
}

/* prev_state as the event's print format shows it, e.g. "R+", "S", "D|K". */
static int32_t prev_state_index(Reader *r, EvTab *t, struct tep_record *rec, int64_t v)
{
    for (int i = 0; i < t->nstates; i++)
        if (t->state_vals[i] == v)
            return t->state_idx[i];
    trace_seq_reset(&r->seq);
    tep_print_event(r->tep, &r->seq, rec, "%s", TEP_PRINT_INFO);
    trace_seq_terminate(&r->seq);
    const char *s = r->seq.buffer ? strstr(r->seq.buffer, "prev_state=") : NULL;
    size_t n = 0;
    if (s) {
        s += strlen("prev_state=");
        while (s[n] && s[n] != ' ')
            n++;
    } else {
        s = "?";
        n = 1;
    }
    int32_t idx = strcol_intern(&t->prev_state_str, s, n);
    if (idx >= 0 && t->nstates < 64) {
        t->state_vals[t->nstates] = v;
        t->state_idx[t->nstates++] = idx;
    }
    return idx;
}

/* Dictionary index of a char[N] field; char buf[] (size 0) runs to the record's end.
   Up to 16 bytes, identical raw bytes are the same string: a cache skips the hash. */
static int32_t fixed_string_index(Col *c, const char *p, int inside, int size)
{
    if (!inside)
        return strcol_intern(&c->str, "", 0);
    if (!c->raw_hi) {
        size_t room = c->size ? (size_t)c->size
                              : (size_t)(size > c->offset ? size - c->offset : 0);
        return strcol_intern(&c->str, p, strnlen(p, room));
    }
    uint64_t lo = 0, hi = 0;
    memcpy(&lo, p, c->size < 8 ? c->size : 8);
    if (c->size > 8)
        memcpy(&hi, p + 8, c->size - 8);
    size_t slot = ((lo ^ (hi * 31)) * 0x9E3779B97F4A7C15ull) >> 54;
    if (c->sym_cache->idx[slot] && c->sym_cache->key[slot] == lo && c->raw_hi[slot] == hi)
        return c->sym_cache->idx[slot] - 1;
    int32_t idx = strcol_intern(&c->str, p, strnlen(p, c->size));
    if (idx >= 0) {
        c->sym_cache->key[slot] = lo;
        c->raw_hi[slot] = hi;
        c->sym_cache->idx[slot] = idx + 1;
    }
    return idx;
}

static int append_record(Reader *r, EvTab *t, struct tep_record *rec)
{
    const char *data = rec->data;
    int size = rec->size;
    int64_t ts = (int64_t)rec->ts;
    int32_t cpu = rec->cpu;
    int32_t pid = (int32_t)read_uint(r, data + r->common_pid_off, 4);
    uint8_t flags = (uint8_t)read_uint(r, data + r->common_flags_off, 1);
    uint8_t preempt = (uint8_t)read_uint(r, data + r->common_preempt_off, 1);
    if (buf_put(&t->ts, &ts, 8) || buf_put(&t->cpu, &cpu, 4) || buf_put(&t->pid, &pid, 4) ||
        buf_put(&t->flags, &flags, 1) || buf_put(&t->preempt, &preempt, 1))
        return -1;
    {
        size_t slot = (uint32_t)pid & (CACHE_SIZE - 1);
        int32_t idx;
        if (t->comm_cache.idx[slot] && t->comm_cache.key[slot] == (uint64_t)(uint32_t)pid) {
            idx = t->comm_cache.idx[slot] - 1;
        } else {
            const char *comm = tep_data_comm_from_pid(r->tep, pid);
            if (!comm)
                comm = "<...>";
            idx = strcol_intern(&t->comm, comm, strlen(comm));
            if (idx < 0)
                return -1;
            t->comm_cache.key[slot] = (uint64_t)(uint32_t)pid;
            t->comm_cache.idx[slot] = idx + 1;
        }
        if (buf_put(&t->comm.indices, &idx, 4))
            return -1;
    }

    for (int i = 0; i < t->ncols; i++) {
        Col *c = &t->cols[i];
        const char *p = data + c->offset;
        int inside = c->offset + c->size <= size;
        switch (c->kind) {
        case K_INT:
            if (!inside) {
                uint64_t zero = 0;
                if (buf_put(&c->values, &zero, c->size))
                    return -1;
            } else if (put_int(r, &c->values, p, c->size))
                return -1;
            if (i == t->prev_state_col) {
                int64_t v = inside ? (int64_t)read_uint(r, p, c->size) : 0;
                int32_t idx = prev_state_index(r, t, rec, v);
                if (idx < 0 || buf_put(&t->prev_state_str.indices, &idx, 4))
                    return -1;
            }
            break;
        case K_SYM: {
            uint64_t addr = inside ? read_uint(r, p, c->size) : 0;
            size_t slot = (addr ^ (addr >> 12)) & (CACHE_SIZE - 1);
            int32_t idx;
            if (c->sym_cache->idx[slot] && c->sym_cache->key[slot] == addr) {
                idx = c->sym_cache->idx[slot] - 1;
            } else {
                const char *name = tep_find_function(r->tep, addr);
                char hex[24];
                if (!name) {
                    snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)addr);
                    name = hex;
                }
                idx = strcol_intern(&c->str, name, strlen(name));
                if (idx < 0)
                    return -1;
                c->sym_cache->key[slot] = addr;
                c->sym_cache->idx[slot] = idx + 1;
            }
            if (buf_put(&c->str.indices, &idx, 4))
                return -1;
            break;
        }
        case K_STR: {
            int32_t idx = fixed_string_index(c, p, inside, size);
            if (idx < 0 || buf_put(&c->str.indices, &idx, 4))
                return -1;
            break;
        }
        case K_DYNSTR:
        case K_DYNARRAY: {
            const char *s = "";
            size_t n = 0;
            if (inside) {
                uint32_t loc = (uint32_t)read_uint(r, p, c->size >= 4 ? 4 : c->size);
                size_t off = loc & 0xffff, len = loc >> 16;
                if (c->is_rel)
                    off += c->offset + c->size;
                if (off + len <= (size_t)size) {
                    s = data + off;
                    n = len;
                }
            }
            if (c->kind == K_DYNSTR) {
                if (strcol_append(&c->str, s, strnlen(s, n)))
                    return -1;
            } else {
                for (size_t k = 0; k + c->elem <= n; k += c->elem)
                    if (put_int(r, &c->values, s + k, c->elem))
                        return -1;
                int32_t end = (int32_t)(c->values.len / c->elem);
                if (buf_put(&c->offsets, &end, 4))
                    return -1;
            }
            break;
        }
        case K_ARRAY: {
            int room = c->size ? c->size : (size > c->offset ? size - c->offset : 0);
            if (inside)
                for (int k = 0; k + c->elem <= room; k += c->elem)
                    if (put_int(r, &c->values, p + k, c->elem))
                        return -1;
            int32_t end = (int32_t)(c->values.len / c->elem);
            if (buf_put(&c->offsets, &end, 4))
                return -1;
            break;
        }
        case K_BIN: {
            if (inside && buf_put(&c->values, p, c->size))
                return -1;
            int32_t end = (int32_t)c->values.len;
            if (buf_put(&c->offsets, &end, 4))
                return -1;
            break;
        }
        }
    }
    return 0;
}

/* ---------------------------------------------------------- iteration */

#define PROGRESS_EVERY (1 << 16)

static int record_cb(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *priv)
{
    Reader *r = priv;
    int64_t ts = (int64_t)rec->ts;
    if (++r->nrecords > r->max_records) {
        r->error = E_LOOPING;
        return 1;
    }
    if (rec->cpu >= 0 && rec->cpu < r->ncpus) {
        if (rec->offset < r->next_offset[rec->cpu]) {
            r->error = E_LOOPING;           /* went back inside one CPU's data */
            return 1;
        }
        r->next_offset[rec->cpu] = rec->offset + 1;
    }
    if (ts < r->min_ts)
        r->min_ts = ts;
    if (ts > r->max_ts)
        r->max_ts = ts;
    if (rec->missed_events) {
        int64_t n = rec->missed_events > 0 ? rec->missed_events : -1;
        int32_t c = rec->cpu;
        if (buf_put(&r->lost_ts, &ts, 8) || buf_put(&r->lost_cpu, &c, 4) ||
            buf_put(&r->lost_count, &n, 8)) {
            r->error = E_NOMEM;
            return 1;
        }
        /* per CPU: known losses add up; an unknown-size loss counts as 1 here
           and is flagged by the -1 row in the lost table */
        if (rec->cpu >= 0 && rec->cpu < r->ncpus)
            r->lost_per_cpu[rec->cpu] += n > 0 ? n : 1;
    }
    if (rec->size < r->common_type_size) {
        r->unknown_events++;
        return 0;
    }
    int id = (int)read_uint(r, rec->data, r->common_type_size);
    EvTab *t = (id >= 0 && id <= r->max_id) ? r->by_id[id] : NULL;
    if (!t) {
        r->unknown_events++;
    } else {
        t->count++;
        if (t->wanted && append_record(r, t, rec) < 0) {
            r->error = E_NOMEM;
            return 1;
        }
    }
    if (r->nrecords >= r->next_progress) {
        r->next_progress = r->nrecords + PROGRESS_EVERY;
        if (PyErr_CheckSignals() < 0) {
            r->error = E_PYTHON;
            return 1;
        }
        if (r->progress && r->progress != Py_None) {
            double span = (double)(r->last_ts - r->first_ts);
            double frac = span > 0 ? (double)(ts - r->first_ts) / span : 0.0;
            PyObject *res = PyObject_CallFunction(r->progress, "d", frac);
            if (!res) {
                r->error = E_PYTHON;
                return 1;
            }
            Py_DECREF(res);
        }
    }
    return 0;
}

/* ------------------------------------------------------- to Python */

static PyObject *int_col(const char *name, Buf *b, int bytes, int is_signed)
{
    return Py_BuildValue("(ssiiN)", "int", name, bytes * 8, is_signed, buf_to_py(b));
}

static PyObject *event_to_py(EvTab *t)
{
    PyObject *cols = PyList_New(0);
    if (!cols)
        return NULL;
#define ADD(expr) do { PyObject *_o = (expr); \
        if (!_o || PyList_Append(cols, _o) < 0) { Py_XDECREF(_o); Py_DECREF(cols); return NULL; } \
        Py_DECREF(_o); } while (0)
    ADD(int_col("ts", &t->ts, 8, 1));
    ADD(int_col("cpu", &t->cpu, 4, 1));
    ADD(int_col("common_pid", &t->pid, 4, 1));
    ADD(Py_BuildValue("(ssN)", "str", "common_comm", strcol_to_py(&t->comm)));
    ADD(int_col("common_flags", &t->flags, 1, 0));
    ADD(int_col("common_preempt_count", &t->preempt, 1, 0));
    for (int i = 0; i < t->ncols; i++) {
        Col *c = &t->cols[i];
        const char *name = c->field->name;
        switch (c->kind) {
        case K_INT:
            ADD(int_col(name, &c->values, c->size, c->is_signed));
            if (i == t->prev_state_col)
                ADD(Py_BuildValue("(ssN)", "str", "prev_state_str",
                                  strcol_to_py(&t->prev_state_str)));
            break;
        case K_SYM:
        case K_STR:
        case K_DYNSTR:
            ADD(Py_BuildValue("(ssN)", "str", name, strcol_to_py(&c->str)));
            break;
        case K_ARRAY:
        case K_DYNARRAY: {
            int32_t zero = 0;
            Buf offs = {0};
            if (buf_put(&offs, &zero, 4) || buf_put(&offs, c->offsets.data, c->offsets.len)) {
                buf_free(&offs);
                Py_DECREF(cols);
                return PyErr_NoMemory();
            }
            buf_free(&c->offsets);
            ADD(Py_BuildValue("(ssiiNN)", "list", name, c->elem * 8, c->is_signed,
                              buf_to_py(&offs), buf_to_py(&c->values)));
            break;
        }
        case K_BIN: {
            int32_t zero = 0;
            Buf offs = {0};
            if (buf_put(&offs, &zero, 4) || buf_put(&offs, c->offsets.data, c->offsets.len)) {
                buf_free(&offs);
                Py_DECREF(cols);
                return PyErr_NoMemory();
            }
            buf_free(&c->offsets);
            ADD(Py_BuildValue("(ssNN)", "bin", name, buf_to_py(&offs), buf_to_py(&c->values)));
            break;
        }
        }
    }
#undef ADD
    return cols;
}

static void reader_free(Reader *r)
{
    if (r->by_id) {
        for (int i = 0; i <= r->max_id; i++) {
            EvTab *t = r->by_id[i];
            if (!t)
                continue;
            for (int k = 0; k < t->ncols; k++) {
                buf_free(&t->cols[k].values);
                buf_free(&t->cols[k].offsets);
                strcol_free(&t->cols[k].str);
                free(t->cols[k].sym_cache);
                free(t->cols[k].raw_hi);
            }
            free(t->cols);
            buf_free(&t->ts);
            buf_free(&t->cpu);
            buf_free(&t->pid);
            buf_free(&t->flags);
            buf_free(&t->preempt);
            strcol_free(&t->comm);
            strcol_free(&t->prev_state_str);
            free(t);
        }
        free(r->by_id);
        r->by_id = NULL;
    }
    buf_free(&r->lost_ts);
    buf_free(&r->lost_cpu);
    buf_free(&r->lost_count);
    free(r->lost_per_cpu);
    r->lost_per_cpu = NULL;
    free(r->next_offset);
    r->next_offset = NULL;
    trace_seq_destroy(&r->seq);
}

static int wanted_event(PyObject *events, struct tep_event *ev)
{
    if (events == Py_None)
        return 1;
    PyObject *name = PyUnicode_FromString(ev->name);
    if (!name)
        return -1;
    int in = PySequence_Contains(events, name);
    Py_DECREF(name);
    return in;
}

static PyObject *TraceDatError;

/* Does the file hold a data section for CPU `c`?  A version-7 file lists only the
   CPUs that had data (`trace-cmd record -M`, an idle CPU in a short recording), and
   libtracecmd's per-CPU readers crash on a compressed file's missing CPU. */
static int cpu_in_file(struct tracecmd_input *h, int c)
{
    return tracecmd_get_cpu_file_size(h, c) > 0;
}

/* Does this buffer hold any record? */
static int has_data(struct tracecmd_input *h)
{
    int n = tracecmd_cpus(h);
    for (int c = 0; c < n; c++) {
        if (!cpu_in_file(h, c))
            continue;
        struct tep_record *rec = tracecmd_read_cpu_first(h, c);
        if (rec) {
            tracecmd_free_record(rec);
            return 1;
        }
    }
    return 0;
}

static PyObject *str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, strlen(s), "replace");
}

static PyObject *meta_to_py(Reader *r)
{
    struct tracecmd_input *h = r->handle;
    PyObject *lost = PyDict_New();
    if (!lost)
        return NULL;
    for (int c = 0; c < r->ncpus; c++) {
        if (!r->lost_per_cpu[c])
            continue;
        PyObject *k = PyLong_FromLong(c), *v = PyLong_FromLongLong(r->lost_per_cpu[c]);
        if (!k || !v || PyDict_SetItem(lost, k, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(lost);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    PyObject *buffers = PyList_New(0);
    int nb = tracecmd_buffer_instances(r->top);
    for (int i = 0; buffers && i < nb; i++) {
        PyObject *name = str_or_none(tracecmd_buffer_instance_name(r->top, i));
        if (!name || PyList_Append(buffers, name) < 0) {
            Py_XDECREF(name);
            Py_CLEAR(buffers);
            break;
        }
        Py_DECREF(name);
    }
    if (!buffers) {
        Py_DECREF(lost);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:N,s:N,s:N,s:N,s:k,s:L,s:L,s:L,s:N,s:L,s:i,s:s,s:N}",
                         "cpus", r->ncpus,
                         "clock", str_or_none(tracecmd_get_trace_clock(h)),
                         "uname", str_or_none(tracecmd_get_uname(r->top)),
                         "trace_cmd_version", str_or_none(tracecmd_get_version(r->top)),
                         "cpustats", str_or_none(tracecmd_get_cpustats(h)),
                         "file_version", tracecmd_get_in_file_version(h),
                         "records", (long long)r->nrecords,
                         "first_ts", (long long)(r->nrecords ? r->min_ts : 0),
                         "last_ts", (long long)(r->nrecords ? r->max_ts : 0),
                         "lost_per_cpu", lost,
                         "unknown_events", (long long)r->unknown_events,
                         "big_endian", tep_is_file_bigendian(r->tep) ? 1 : 0,
                         "buffer", r->buffer ? r->buffer : "",
                         "instances", buffers);
}

PyDoc_STRVAR(read_doc,
"read(path, events=None, progress=None) -> dict\n\n"
"Read a trace.dat file through libtracecmd. `events` is None (all) or a collection\n"
"of event names. `progress`, if given, is called with a float in [0, 1] now and then.\n"
"Returns {'meta': {...}, 'events': {name: {'system', 'count', 'columns'}},\n"
"'lost': (ts, cpu, count) buffers}. Raises TraceDatError on unusable files.\n"
"libtracecmd may crash or spin on damaged input: call this in a child process\n"
"(schedwake.ingest.libtracecmd does).");

/* Open the file and pick the buffer to read: the top one, or (`trace-cmd extract -B
   NAME` leaves the top buffer empty and the events in the instance's buffer) the
   first instance that has data.  0, or -1 with TraceDatError set. */
static int open_buffer(Reader *r, const char *path)
{
    r->top = r->handle = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS |
                                             TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
    r->buffer = "";
    if (r->handle && !has_data(r->handle)) {
        int n = tracecmd_buffer_instances(r->top);
        for (int i = 0; i < n; i++) {
            struct tracecmd_input *ih = tracecmd_buffer_instance_handle(r->top, i);
            if (ih && has_data(ih)) {
                r->handle = ih;
                r->buffer = tracecmd_buffer_instance_name(r->top, i);
                break;
            }
            if (ih)
                tracecmd_close(ih);
        }
    }
    if (!r->handle) {
        PyErr_SetString(TraceDatError, "cannot parse the trace.dat headers "
                        "(truncated or corrupt file, or not a trace-cmd file)");
        return -1;
    }
    r->tep = tracecmd_get_tep(r->handle);
    r->ncpus = tracecmd_cpus(r->handle);
    if (r->ncpus <= 0 || r->ncpus > 65536 || !r->tep) {
        PyErr_Format(TraceDatError, "invalid CPU count %d in the file header", r->ncpus);
        return -1;
    }
    r->swap = tep_is_file_bigendian(r->tep) != tep_is_local_bigendian(r->tep);
    r->lost_per_cpu = calloc(r->ncpus, sizeof(int64_t));
    r->next_offset = calloc(r->ncpus, sizeof(uint64_t));
    if (!r->lost_per_cpu || !r->next_offset) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* One EvTab per event format (columns for the wanted ones), and the offsets of the
   common fields, taken from the first event's format.  0, or -1 with an exception. */
static int setup_events(Reader *r, PyObject *events)
{
    int nevents = tep_get_events_count(r->tep);
    struct tep_event **list = tep_list_events(r->tep, TEP_EVENT_SORT_ID);
    if (!list) {
        PyErr_NoMemory();
        return -1;
    }
    if (nevents <= 0) {
        PyErr_SetString(TraceDatError, "the file has no event formats");
        return -1;
    }
    for (int i = 0; i < nevents; i++)
        if (list[i]->id > r->max_id)
            r->max_id = list[i]->id;
    if (r->max_id > 1 << 20) {
        PyErr_Format(TraceDatError, "implausible event id %d in the event formats", r->max_id);
        return -1;
    }
    r->by_id = calloc(r->max_id + 1, sizeof(EvTab *));
    if (!r->by_id) {
        PyErr_NoMemory();
        return -1;
    }
    struct tep_format_field *ft = tep_find_common_field(list[0], "common_type");
    struct tep_format_field *ff = tep_find_common_field(list[0], "common_flags");
    struct tep_format_field *fp = tep_find_common_field(list[0], "common_preempt_count");
    struct tep_format_field *fpid = tep_find_common_field(list[0], "common_pid");
    if (!ft || !ff || !fp || !fpid) {
        PyErr_SetString(TraceDatError, "event formats lack the common fields");
        return -1;
    }
    r->common_type_size = ft->size;
    r->common_flags_off = ff->offset;
    r->common_preempt_off = fp->offset;
    r->common_pid_off = fpid->offset;
    for (int i = 0; i < nevents; i++) {
        int w = wanted_event(events, list[i]);
        if (w < 0)
            return -1;
        if (setup_event(r, list[i], w) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* First and last timestamps (for progress) and the most records the data could hold
   (every record takes at least 8 bytes: a 4-byte header and a 4-byte payload); then
   rewind every CPU for the iteration. */
static void scan_bounds(Reader *r)
{
    r->first_ts = (int64_t)tracecmd_get_first_ts(r->handle);
    r->last_ts = r->first_ts;
    r->max_records = 1024;
    for (int c = 0; c < r->ncpus; c++) {
        if (!cpu_in_file(r->handle, c))
            continue;
        r->max_records += tracecmd_get_cpu_file_size(r->handle, c) / 8;
        struct tep_record *last = tracecmd_read_cpu_last(r->handle, c);
        if (last) {
            if ((int64_t)last->ts > r->last_ts)
                r->last_ts = (int64_t)last->ts;
            tracecmd_free_record(last);
        }
    }
    tracecmd_set_all_cpus_to_timestamp(r->handle, 0);
}

/* Turn an early stop of the iteration into an exception; 0 if there was none. */
static int iteration_error(Reader *r)
{
    switch ((enum read_error)r->error) {
    case E_NONE:
        return 0;
    case E_NOMEM:
        PyErr_NoMemory();
        break;
    case E_PYTHON:
        break;
    case E_LOOPING:
        PyErr_SetString(TraceDatError, "corrupt trace.dat (a damaged page makes the reader "
                        "go round in circles)");
        break;
    }
    return -1;
}

/* {name: {'system', 'count', 'columns'}} of every event format (columns None for the
   events not wanted). */
static PyObject *events_to_py(Reader *r)
{
    PyObject *evd = PyDict_New();
    for (int i = 0; evd && i <= r->max_id; i++) {
        EvTab *t = r->by_id[i];
        if (!t)
            continue;
        PyObject *cols = t->wanted ? event_to_py(t) : Py_NewRef(Py_None);
        PyObject *ent = cols ? Py_BuildValue("{s:s,s:L,s:N}", "system",
                                            t->event->system ? t->event->system : "",
                                            "count", (long long)t->count, "columns", cols)
                             : NULL;
        if (!ent || PyDict_SetItemString(evd, t->event->name, ent) < 0)
            Py_CLEAR(evd);
        Py_XDECREF(ent);
    }
    return evd;
}

static PyObject *py_read(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "events", "progress", NULL};
    const char *path;
    PyObject *events = Py_None, *progress = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|OO", kwlist, &path, &events, &progress))
        return NULL;

    Reader *r = calloc(1, sizeof(*r));
    if (!r)
        return PyErr_NoMemory();
    r->progress = progress;
    r->min_ts = INT64_MAX;
    r->max_ts = INT64_MIN;
    trace_seq_init(&r->seq);
    PyObject *result = NULL;

    tracecmd_set_loglevel(TEP_LOG_NONE);
    tep_set_loglevel(TEP_LOG_NONE);

    if (open_buffer(r, path) < 0 || setup_events(r, events) < 0)
        goto out;
    scan_bounds(r);
    tracecmd_iterate_events(r->handle, NULL, 0, record_cb, r);
    if (iteration_error(r) < 0)
        goto out;
    PyObject *meta = meta_to_py(r);
    PyObject *evd = meta ? events_to_py(r) : NULL;
    if (evd)
        result = Py_BuildValue("{s:N,s:N,s:(NNN)}", "meta", meta, "events", evd, "lost",
                               buf_to_py(&r->lost_ts), buf_to_py(&r->lost_cpu),
                               buf_to_py(&r->lost_count));
    else
        Py_XDECREF(meta);
out:
    if (r->handle && r->handle != r->top)
        tracecmd_close(r->handle);
    if (r->top)
        tracecmd_close(r->top);
    reader_free(r);
    free(r);
    return result;
}

static PyMethodDef methods[] = {
    {"read", (PyCFunction)(void (*)(void))py_read, METH_VARARGS | METH_KEYWORDS, read_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_libtracecmd",
    "trace.dat reader over libtracecmd/libtraceevent, for a child process "
    "(see the C source's header comment)",
    -1, methods,
};

PyMODINIT_FUNC PyInit__libtracecmd(void)
{
    if (pybuf_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    TraceDatError = PyErr_NewException("schedwake.ingest._libtracecmd.TraceDatError",
                                       PyExc_ValueError, NULL);
    if (!TraceDatError || PyModule_AddObject(m, "TraceDatError", TraceDatError) < 0) {
        Py_XDECREF(TraceDatError);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
