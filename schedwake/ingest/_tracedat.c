/*
 * _tracedat: read a trace-cmd trace.dat file into column buffers, in one pass, in C.
 *
 * Why the CPython C API and not cffi: the hot loop is one callback per record
 * from tracecmd_iterate_events(); it must append every field of every wanted
 * event to growing column buffers without touching a Python object.  With the C
 * API the buffers are handed to Python at the end as objects that export the
 * buffer protocol, so pyarrow wraps them without a copy, and the build needs
 * nothing but a C compiler and the Debian -dev packages (cffi's API mode would
 * add a build dependency and still need C for the loop).
 *
 * What it produces, per wanted event (schedwake.schema documents the meaning):
 *   ts, cpu, common_pid, common_flags, common_preempt_count, common_comm
 *   and every field of the event's format, decoded by its real width and
 *   signedness; char[N] / __data_loc / __rel_loc strings and %ps function
 *   pointers (resolved through the file's kallsyms) as dictionary-encoded
 *   strings; numeric arrays as list columns; anything else as binary.
 *   sched_switch also gets prev_state_str: prev_state printed by the event's
 *   own print format (libtraceevent evaluates it, no plugins loaded).
 * Plus: per-event counts of every event in the file, lost-event rows
 * (record->missed_events) and the file's metadata.
 *
 * Corrupt files: libtracecmd checks most of what it reads, but a damaged
 * compressed section or page can still make it read out of bounds.  While the
 * library runs, SIGSEGV/SIGBUS are caught and turned into a Python exception
 * (the handle is then leaked, never reused), so a bad file cannot kill the
 * interpreter.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ctype.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <ucontext.h>

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

/* ------------------------------------------------------------------ buffers */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_grow(Buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap += cap / 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap && buf_grow(b, b->len + n) < 0)
        return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* A Python object that owns a Buf and exports it through the buffer protocol. */
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
    .tp_name = "schedwake.ingest._tracedat.Buffer",
    .tp_basicsize = sizeof(BufObject),
    .tp_dealloc = bufobj_dealloc,
    .tp_as_buffer = &bufobj_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "column memory filled by the trace.dat reader",
};

/* Hand a Buf over to Python (the Buf is emptied). */
static PyObject *buf_to_py(Buf *b)
{
    BufObject *o = PyObject_New(BufObject, &BufType);
    if (!o)
        return NULL;
    if (b->data && b->len < b->cap / 2 && b->len > 0) {
        char *p = realloc(b->data, b->len);     /* give back slack */
        if (p)
            b->data = p;
    }
    o->buf = *b;
    o->buf.cap = o->buf.len;
    memset(b, 0, sizeof(*b));
    return (PyObject *)o;
}

/* ------------------------------------------- dictionary-encoded strings */

typedef struct {
    Buf indices;            /* int32 per row */
    Buf offsets;            /* int32, one per dictionary value + 1 */
    Buf chars;              /* dictionary characters */
    uint32_t *slots;        /* open addressing: dictionary index + 1, 0 = empty */
    uint32_t *hashes;       /* hash of each dictionary value */
    size_t nslots, count;
} StrCol;

static uint32_t str_hash(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;  /* 8 bytes a step: names are short */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h ^ (h >> 29));
}

static int strcol_rehash(StrCol *c)
{
    size_t n = c->nslots ? c->nslots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < c->count; i++) {
        size_t j = c->hashes[i] & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = (uint32_t)i + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
    return 0;
}

/* Index of string s[0..n) in the dictionary, adding it if new; -1 on no memory. */
static int32_t strcol_intern(StrCol *c, const char *s, size_t n)
{
    if ((c->count + 1) * 2 > c->nslots && strcol_rehash(c) < 0)
        return -1;
    uint32_t h = str_hash(s, n);
    const int32_t *offs = (const int32_t *)c->offsets.data;
    size_t j = h & (c->nslots - 1);
    for (; c->slots[j]; j = (j + 1) & (c->nslots - 1)) {
        uint32_t i = c->slots[j] - 1;
        if (c->hashes[i] == h && (size_t)(offs[i + 1] - offs[i]) == n &&
            memcmp(c->chars.data + offs[i], s, n) == 0)
            return (int32_t)i;
    }
    if (c->count == 0) {
        int32_t zero = 0;
        if (buf_put(&c->offsets, &zero, 4) < 0)
            return -1;
    }
    if (buf_put(&c->chars, s, n) < 0)
        return -1;
    int32_t end = (int32_t)c->chars.len;
    if (buf_put(&c->offsets, &end, 4) < 0)
        return -1;
    uint32_t *hs = realloc(c->hashes, (c->count + 1) * sizeof(*hs));
    if (!hs)
        return -1;
    c->hashes = hs;
    hs[c->count] = h;
    c->slots[j] = (uint32_t)++c->count;
    return (int32_t)(c->count - 1);
}

static inline int strcol_append(StrCol *c, const char *s, size_t n)
{
    int32_t i = strcol_intern(c, s, n);
    if (i < 0)
        return -1;
    return buf_put(&c->indices, &i, 4);
}

static void strcol_free(StrCol *c)
{
    buf_free(&c->indices);
    buf_free(&c->offsets);
    buf_free(&c->chars);
    free(c->slots);
    free(c->hashes);
    memset(c, 0, sizeof(*c));
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
    int error;              /* 1: no memory, 2: Python exception set */
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

/* ------------------------------------------------------ crash guard */

/*
 * Two failure modes of the libraries on damaged input are caught while they run:
 * a crash (SIGSEGV/SIGBUS) and an endless loop (libtraceevent's kbuffer_next_event()
 * can spin forever on a page whose event lengths do not advance).  The second is
 * caught by a CPU-time watchdog: if no record reaches our callback for
 * STALL_SECONDS seconds of CPU time, the read is abandoned.  In both cases the
 * handler jumps back to py_read(), which raises; the handle is leaked, never reused.
 * A third, damaged data that keeps yielding garbage records slowly, is stopped when
 * the CPU-time budget is spent, but not by a jump: the handler only sets a flag and
 * record_cb() ends the iteration at the next record.
 *
 * Jumping out of a signal handler that interrupted libc (malloc() above all: the
 * spinning loop of tracecmd_peek_data() allocates a record per turn) leaves libc's
 * lock taken, and the process deadlocks at its next allocation: a CI rehearsal hung so
 * on the pinned LOOPING_DAMAGE file.  So the stall jump is only taken when the
 * interrupted instruction is outside libc and the dynamic loader (whose locks are held
 * only while their code runs); otherwise the watchdog fires again 1 ms of CPU time
 * later and tries once more.
 */
#define STALL_SECONDS 5

static sigjmp_buf guard_jmp;
static volatile sig_atomic_t guard_active;
/* the reading thread: SIGPROF is process-directed, and a jump is only valid on the
   thread whose stack guard_jmp belongs to */
static pthread_t guard_thread;
static struct sigaction old_segv, old_bus, old_prof;
static struct itimerval old_timer;
static volatile int64_t *watch_counter;
static int64_t watch_last;
static int watch_stalled;
static volatile int64_t watch_budget = 20;  /* CPU seconds; raised once the size is known */
static int64_t watch_spent;
static volatile sig_atomic_t watch_expired;  /* budget spent: record_cb() stops */
static volatile sig_atomic_t jump_pending;   /* stalled: jump at the first safe tick */

/* Executable ranges of libc and the dynamic loader, found in guard_on() (not in the
   handler: dl_iterate_phdr() is not async-signal-safe). */
#define MAX_UNSAFE 8
static uintptr_t unsafe_lo[MAX_UNSAFE], unsafe_hi[MAX_UNSAFE];
static int n_unsafe;

static int note_unsafe_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (!strstr(name, "/libc.so") && !strstr(name, "/ld-linux"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum && n_unsafe < MAX_UNSAFE; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            unsafe_lo[n_unsafe] = info->dlpi_addr + ph->p_vaddr;
            unsafe_hi[n_unsafe] = unsafe_lo[n_unsafe] + ph->p_memsz;
            n_unsafe++;
        }
    }
    return 0;
}

/* May the handler jump out of the code that ucontext `uc` interrupted? */
static int safe_to_jump(void *uc)
{
#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
    (void)uc;
    return 1;               /* no way to tell: jump, as before */
#endif
#if defined(__x86_64__) || defined(__aarch64__)
    for (int i = 0; i < n_unsafe; i++)
        if (pc >= unsafe_lo[i] && pc < unsafe_hi[i])
            return 0;
    return 1;
#endif
}

static void guard_handler(int sig)
{
    if (guard_active && pthread_equal(pthread_self(), guard_thread)) {
        guard_active = 0;
        siglongjmp(guard_jmp, sig);
    }
    sigaction(sig, sig == SIGSEGV ? &old_segv : &old_bus, NULL);
    raise(sig);
}

static void watchdog_handler(int sig, siginfo_t *info, void *uc)
{
    (void)info;
    if (!guard_active || !pthread_equal(pthread_self(), guard_thread))
        return;             /* another thread took the tick: not ours to count */
    if (jump_pending) {
        if (safe_to_jump(uc)) {
            guard_active = 0;
            siglongjmp(guard_jmp, sig);
        }
        struct itimerval soon = {{1, 0}, {0, 1000}};
        setitimer(ITIMER_PROF, &soon, NULL);
        return;
    }
    int64_t now = watch_counter ? *watch_counter : 0;
    /* records trickle out of damaged data far slower than any real trace */
    if (++watch_spent > watch_budget)
        watch_expired = 1;
    if (now != watch_last) {
        watch_last = now;
        watch_stalled = 0;
    } else if (++watch_stalled >= STALL_SECONDS) {
        /* nothing reaches record_cb(): the library spins inside one call, and the
           jump is the only way out */
        jump_pending = 1;
        watchdog_handler(sig, info, uc);
    }
}

static void guard_on(volatile int64_t *progress_counter)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = guard_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    sa.sa_handler = NULL;
    sa.sa_sigaction = watchdog_handler;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(SIGPROF, &sa, &old_prof);
    if (!n_unsafe)
        dl_iterate_phdr(note_unsafe_ranges, NULL);
    watch_counter = progress_counter;
    watch_last = progress_counter ? *progress_counter : 0;
    watch_stalled = 0;
    watch_spent = 0;
    watch_budget = 20;
    watch_expired = 0;
    jump_pending = 0;
    guard_thread = pthread_self();
    struct itimerval tick = {{1, 0}, {1, 0}};   /* every second of CPU time */
    setitimer(ITIMER_PROF, &tick, &old_timer);
    guard_active = 1;
}

static void guard_off(void)
{
    guard_active = 0;
    setitimer(ITIMER_PROF, &old_timer, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    sigaction(SIGPROF, &old_prof, NULL);
    watch_counter = NULL;
}

/* ---------------------------------------------------------- iteration */

#define PROGRESS_EVERY (1 << 16)

static int record_cb(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *priv)
{
    Reader *r = priv;
    int64_t ts = (int64_t)rec->ts;
    if (watch_expired) {
        r->error = 4;
        return 1;
    }
    if (++r->nrecords > r->max_records) {
        r->error = 3;
        return 1;
    }
    if (rec->cpu >= 0 && rec->cpu < r->ncpus) {
        if (rec->offset < r->next_offset[rec->cpu]) {
            r->error = 3;           /* went back inside one CPU's data */
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
            r->error = 1;
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
            r->error = 1;
            return 1;
        }
    }
    if (r->nrecords >= r->next_progress) {
        r->next_progress = r->nrecords + PROGRESS_EVERY;
        if (PyErr_CheckSignals() < 0) {
            r->error = 2;
            return 1;
        }
        if (r->progress && r->progress != Py_None) {
            double span = (double)(r->last_ts - r->first_ts);
            double frac = span > 0 ? (double)(ts - r->first_ts) / span : 0.0;
            PyObject *res = PyObject_CallFunction(r->progress, "d", frac);
            if (!res) {
                r->error = 2;
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
"Read a trace.dat file. `events` is None (all) or a collection of event names.\n"
"`progress`, if given, is called with a float in [0, 1] now and then.\n"
"Returns {'meta': {...}, 'events': {name: {'system', 'count', 'columns'}},\n"
"'lost': (ts, cpu, count) buffers}. Raises TraceDatError on unusable files.");

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

    int sig = sigsetjmp(guard_jmp, 1);
    if (sig) {
        /* The library crashed on this file; its state is unusable: leak it. */
        guard_off();
        PyErr_Format(TraceDatError, "corrupt trace.dat (%s)",
                     sig == SIGPROF ? "the reader stopped making progress in a damaged page"
                     : sig == SIGBUS ? "the reader hit a truncated mapping"
                     : "the reader hit invalid data");
        return NULL;
    }
    guard_on(&r->nrecords);
    r->top = r->handle = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS |
                                             TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
    r->buffer = "";
    /* `trace-cmd extract -B NAME` leaves the top buffer empty and the events in
       the instance's buffer: read the first buffer that has data. */
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
        guard_off();
        PyErr_SetString(TraceDatError, "cannot parse the trace.dat headers "
                        "(truncated or corrupt file, or not a trace-cmd file)");
        goto out;
    }
    r->tep = tracecmd_get_tep(r->handle);
    r->ncpus = tracecmd_cpus(r->handle);
    if (r->ncpus <= 0 || r->ncpus > 65536 || !r->tep) {
        guard_off();
        PyErr_Format(TraceDatError, "invalid CPU count %d in the file header", r->ncpus);
        goto out;
    }
    r->swap = tep_is_file_bigendian(r->tep) != tep_is_local_bigendian(r->tep);
    r->lost_per_cpu = calloc(r->ncpus, sizeof(int64_t));
    r->next_offset = calloc(r->ncpus, sizeof(uint64_t));
    int nevents = tep_get_events_count(r->tep);
    struct tep_event **list = tep_list_events(r->tep, TEP_EVENT_SORT_ID);
    if (!r->lost_per_cpu || !r->next_offset || !list) {
        guard_off();
        PyErr_NoMemory();
        goto out;
    }
    if (nevents <= 0) {
        guard_off();
        PyErr_SetString(TraceDatError, "the file has no event formats");
        goto out;
    }
    for (int i = 0; i < nevents; i++)
        if (list[i]->id > r->max_id)
            r->max_id = list[i]->id;
    if (r->max_id > 1 << 20) {
        guard_off();
        PyErr_Format(TraceDatError, "implausible event id %d in the event formats", r->max_id);
        goto out;
    }
    r->by_id = calloc(r->max_id + 1, sizeof(EvTab *));
    if (!r->by_id) {
        guard_off();
        PyErr_NoMemory();
        goto out;
    }
    /* Offsets of the common fields, from the first event's format. */
    struct tep_format_field *ft = tep_find_common_field(list[0], "common_type");
    struct tep_format_field *ff = tep_find_common_field(list[0], "common_flags");
    struct tep_format_field *fp = tep_find_common_field(list[0], "common_preempt_count");
    struct tep_format_field *fpid = tep_find_common_field(list[0], "common_pid");
    if (!ft || !ff || !fp || !fpid) {
        guard_off();
        PyErr_SetString(TraceDatError, "event formats lack the common fields");
        goto out;
    }
    r->common_type_size = ft->size;
    r->common_flags_off = ff->offset;
    r->common_preempt_off = fp->offset;
    r->common_pid_off = fpid->offset;
    for (int i = 0; i < nevents; i++) {
        int w = wanted_event(events, list[i]);
        if (w < 0 || setup_event(r, list[i], w) < 0) {
            guard_off();
            if (w >= 0)
                PyErr_NoMemory();
            goto out;
        }
    }

    /* First and last timestamps, for progress; then rewind every CPU. */
    r->first_ts = (int64_t)tracecmd_get_first_ts(r->handle);
    r->last_ts = r->first_ts;
    for (int c = 0; c < r->ncpus; c++) {
        if (!cpu_in_file(r->handle, c))
            continue;
        struct tep_record *last = tracecmd_read_cpu_last(r->handle, c);
        if (last) {
            if ((int64_t)last->ts > r->last_ts)
                r->last_ts = (int64_t)last->ts;
            tracecmd_free_record(last);
        }
    }
    tracecmd_set_all_cpus_to_timestamp(r->handle, 0);

    /* Every record takes at least 8 bytes (4-byte header, 4-byte payload). */
    r->max_records = 1024;
    for (int c = 0; c < r->ncpus; c++) {
        off64_t sz = tracecmd_get_cpu_file_size(r->handle, c);
        if (sz > 0)
            r->max_records += sz / 8;
    }
    /* CPU-time budget: 20 s plus 1 us for every record the data could hold (real
       traces need well under a tenth of that) */
    watch_budget = 20 + r->max_records / 1000000;
    /* opening and the per-CPU lookups above deliver no record: they do not count */
    watch_stalled = 0;
    watch_spent = 0;

    tracecmd_iterate_events(r->handle, NULL, 0, record_cb, r);
    guard_off();
    if (r->error == 1) {
        PyErr_NoMemory();
        goto out;
    }
    if (r->error == 2)
        goto out;
    if (r->error == 3) {
        PyErr_SetString(TraceDatError, "corrupt trace.dat (a damaged page makes the reader "
                        "go round in circles)");
        goto out;
    }
    if (r->error == 4) {
        PyErr_SetString(TraceDatError, "corrupt trace.dat (the reader made no headway "
                        "through damaged data)");
        goto out;
    }

    PyObject *evd = PyDict_New();
    PyObject *meta = meta_to_py(r);
    if (!evd || !meta) {
        Py_XDECREF(evd);
        Py_XDECREF(meta);
        goto out;
    }
    for (int i = 0; i <= r->max_id; i++) {
        EvTab *t = r->by_id[i];
        if (!t)
            continue;
        PyObject *cols = Py_None;
        Py_INCREF(cols);
        if (t->wanted) {
            Py_DECREF(cols);
            cols = event_to_py(t);
        }
        PyObject *ent = cols ? Py_BuildValue("{s:s,s:L,s:N}", "system",
                                            t->event->system ? t->event->system : "",
                                            "count", (long long)t->count, "columns", cols)
                             : NULL;
        if (!ent || PyDict_SetItemString(evd, t->event->name, ent) < 0) {
            Py_XDECREF(ent);
            Py_DECREF(evd);
            Py_DECREF(meta);
            goto out;
        }
        Py_DECREF(ent);
    }
    result = Py_BuildValue("{s:N,s:N,s:(NNN)}", "meta", meta, "events", evd, "lost",
                           buf_to_py(&r->lost_ts), buf_to_py(&r->lost_cpu),
                           buf_to_py(&r->lost_count));
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
    PyModuleDef_HEAD_INIT, "_tracedat",
    "trace.dat reader over libtracecmd/libtraceevent (see the C source's header comment)",
    -1, methods,
};

PyMODINIT_FUNC PyInit__tracedat(void)
{
    if (PyType_Ready(&BufType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    TraceDatError = PyErr_NewException("schedwake.ingest._tracedat.TraceDatError",
                                       PyExc_ValueError, NULL);
    if (!TraceDatError || PyModule_AddObject(m, "TraceDatError", TraceDatError) < 0) {
        Py_XDECREF(TraceDatError);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
