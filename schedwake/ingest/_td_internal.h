/*
 * _td_internal.h: what the parts of schedwake's own trace decoder share (not a
 * public interface: _tdcore.h is).  The decoder is one library in several files,
 * one job each, and no file calls back into one that calls it (tests/
 * test_c_layout.py holds them to it):
 *
 *   _td_common.c     errors, bounds-checked cursors, memory owned by a file,
 *                    decompression, small text parsers
 *   _td_format.c     the ring buffer's page and record headers, event formats,
 *                    print formats (and sched_switch's prev_state evaluator)
 *   _td_symbols.c    kallsyms and saved cmdlines
 *   _td_tracing.c    the tracing data's header, and the formats' final checks
 *                    (trace.dat's file header; perf.data's tracing data)
 *   _td_tracedat.c   the trace.dat file layer: v6/v7 headers, options,
 *                    sections, buffers
 *   _td_perfdata.c   the perf.data file layer and its records: a Source
 *   _td_dispatch.c   which format a file is: its sniff, its open
 *   _td_container.c  td_open() (through the dispatch), td_close()
 *   _td_records.c    output columns, one record into them, ring-buffer pages
 *   _td_pool.c       the decoder and its slots, the threads that run its tasks
 *   _td_merge.c      trace.dat's CPUs, the (timestamp, CPU) merge, streaming,
 *                    metadata; another source only through its Source
 *
 *   container -> dispatch -> {tracedat, perfdata} -> {tracing, format, symbols}
 *   container -> merge -> {pool, records};  perfdata -> {pool, records}
 *
 * Return codes (below): functions that parse a file's metadata return TD_OK or
 * TD_FAIL with the message in f->err ("out of memory" included); helpers without a
 * message to give return TD_ENOMEM or TD_EINVAL, and their caller says what failed.
 * The record decoders (called in worker threads) return the REC_* codes, the
 * message in the worker's own buffer.
 */
#ifndef SCHEDWAKE_TD_INTERNAL_H
#define SCHEDWAKE_TD_INTERNAL_H

#include "_tdcore.h"

#include <errno.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "\x17\x08\x44tracing"
#define MAGIC_LEN 10

/* Limits on what a file may declare; beyond them it is refused, not trusted. */
#define MAX_CPUS 65536
#define MAX_EVENTS 1000000          /* formats in the file */
#define MAX_EVENT_ID 65535
#define MAX_SECTION_BYTES (1ull << 31)    /* one metadata section, uncompressed */
#define MAX_CHUNK_BYTES (256u << 20)      /* one decompressed chunk of pages */
#define MIN_PAGE_SIZE 1024u
#define MAX_PAGE_SIZE (16u << 20)
#define MAX_OPTION_SECTIONS 4096
#define MAX_FIELDS 1024

/* A recording spans seconds to days: records further apart than this carry a damaged
   timestamp (_td_merge.c: check_trace_span; perf.data: its samples' times) */
#define MAX_TRACE_SPAN_YEARS 10
#define MAX_TRACE_SPAN ((int64_t)MAX_TRACE_SPAN_YEARS * 366 * 86400 * 1000000000)
#define MAX_LOST (1ull << 48)       /* events lost before one page: more were never written */
#define COMMIT_MASK ((1u << 27) - 1)
#define MISSING_EVENTS (1ull << 31)
#define MISSING_STORED (1ull << 30)
#define TS_MSB (0xf8ull << 56)

enum { T_PADDING = 29, T_TIME_EXTEND = 30, T_TIME_STAMP = 31 };

enum {
    OPT_DONE = 0, OPT_DATE = 1, OPT_CPUSTAT = 2, OPT_BUFFER = 3, OPT_TRACECLOCK = 4,
    OPT_UNAME = 5, OPT_OFFSET = 7, OPT_CPUCOUNT = 8, OPT_VERSION = 9,
    OPT_TIME_SHIFT = 12, OPT_TSC2NSEC = 14, OPT_STRINGS = 15, OPT_HEADER_INFO = 16, OPT_FTRACE_EVENTS = 17,
    OPT_EVENT_FORMATS = 18, OPT_KALLSYMS = 19, OPT_PRINTK = 20, OPT_CMDLINES = 21,
    OPT_BUFFER_TEXT = 22,
};

enum { COMP_NONE, COMP_ZSTD, COMP_ZLIB };


/* Return codes beside the interface's TD_OK, TD_FAIL (a message in f->err or the
   err given) and TD_STOPPED (_tdcore.h).  A caller that tells failures apart
   compares the code; one that does not asks "< 0" and passes TD_FAIL up.  The two
   without a message have TD_FAIL's value, so that a code passed up as it is stays
   the interface's TD_FAIL (the message then comes from the caller that has one). */
enum {
    TD_ENOMEM = TD_FAIL,        /* out of memory, no message: own(), columns, buffers */
    TD_EINVAL = TD_FAIL,        /* the bytes or text a helper reads are not what it reads
                                   (parse_int, decompress, a perf sample too short for
                                   its fields), no message: the caller names them */
};

/* Return codes of the record decoders (append_record, decode_page, ...). */
enum {
    REC_OK = TD_OK,
    REC_NOMEM = TD_ENOMEM,      /* no message: "out of memory" */
    REC_DAMAGE = -2,            /* the worker's err says what is wrong and where */
    REC_CANCELLED = -3,         /* another worker failed, or the caller asked to stop */
};

void seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ cursors */

/* A bounds-checked view of bytes: the file, or a decompressed section.  `base`
   is the file offset of data[0] (for messages; 0 for decompressed sections,
   where `what` says so). */
typedef struct {
    const uint8_t *data;
    size_t size, pos;
    uint64_t base;
    const char *what;
    int swap;
    char *err;
    const char *kind;           /* "perf.data" in its own parts; NULL: trace.dat */
} Rd;

#define RD_KIND(r) ((r)->kind ? (r)->kind : "trace.dat")

static inline int rd_fail(Rd *r, const char *need)
{
    seterr(r->err, "corrupt %s: %s: %s at offset %" PRIu64 " (the %s has %zu bytes)", RD_KIND(r),
           r->what, need, r->base + r->pos, r->what, r->size);
    return TD_FAIL;
}

static inline int rd_need(Rd *r, size_t n, const char *what)
{
    if (n > r->size - r->pos) {
        seterr(r->err, "truncated or corrupt %s: the %s at offset %" PRIu64 " needs %zu "
               "bytes, the %s has %zu left", RD_KIND(r), what, r->base + r->pos, n, r->what,
               r->size - r->pos);
        return TD_FAIL;
    }
    return 0;
}

static inline uint16_t sw16(uint16_t v) { return (uint16_t)((v >> 8) | (v << 8)); }
static inline uint32_t sw32(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t sw64(uint64_t v) { return __builtin_bswap64(v); }

static inline uint64_t ld(const uint8_t *p, int n, int swap)
{
    switch (n) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return swap ? sw16(v) : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return swap ? sw32(v) : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return swap ? sw64(v) : v; }
    }
}

static inline int rd_u(Rd *r, int n, uint64_t *v, const char *what)
{
    if (rd_need(r, (size_t)n, what) < 0)
        return TD_FAIL;
    *v = ld(r->data + r->pos, n, r->swap);
    r->pos += (size_t)n;
    return 0;
}

/* A NUL-terminated string of at most `max` bytes; *s points into the data. */
static inline int rd_cstr(Rd *r, const char **s, size_t max, const char *what)
{
    size_t room = r->size - r->pos;
    if (room > max + 1)
        room = max + 1;
    const uint8_t *end = memchr(r->data + r->pos, 0, room);
    if (!end) {
        char need[96];
        snprintf(need, sizeof(need), "%s is not NUL-terminated", what);
        return rd_fail(r, need);
    }
    *s = (const char *)r->data + r->pos;
    r->pos = (size_t)(end - r->data) + 1;
    return 0;
}

static inline int rd_bytes(Rd *r, size_t n, const uint8_t **p, const char *what)
{
    if (rd_need(r, n, what) < 0)
        return TD_FAIL;
    *p = r->data + r->pos;
    r->pos += n;
    return 0;
}


/* ------------------------------------------------------ the file state */

typedef struct {
    char *name;
    int offset, size, is_signed, elem;
    int is_array, is_string, is_dynamic, is_relative, is_pointer, is_long;
    char *type;
} Field;

/* A column a perf.data sample adds after the format's fields (callchain, period). */
typedef struct {
    const char *name;
    enum td_kind kind;
    int bits, is_signed;        /* TD_INT, and the elements of TD_DYNARRAY */
} ExtraCol;

/* What the decoder needs of one event, beside the public td_event. */
typedef struct {
    int nfields;
    Field *fields;
    char *print_fmt;            /* the text after "print fmt: ", or NULL */
    int prev_state_field;       /* sched_switch: index of prev_state, else -1 */
    int common_size;            /* bytes of the common fields */
    int ncommon;                /* output columns before the fields: NCOMMON, or
                                   NCOMMON_SAMPLE for a perf event that is not a
                                   tracepoint (no common_flags/common_preempt_count) */
    int nextra;                 /* perf.data: sample columns after the fields */
    const ExtraCol *extra;
    int fields_end;             /* the end of the last fixed field: a record is at least
                                   this long */
} EvInfo;

typedef struct {
    uint64_t addr;
    const char *name;
} Func;

typedef struct {
    int32_t pid;
    const char *comm;
} Cmd;

typedef struct {
    uint32_t cpu;
    uint64_t offset, size;      /* in the file (compressed data when compressed) */
} CpuData;

typedef struct {
    char *name, *clock;
    uint32_t page_size;
    int compressed;
    int ncpu;
    CpuData *cpu;
    int has_data;
    /* the bytes its CPU data fill, but for the padding to a page before each CPU's
       (v7: its flyrecord section; v6: the file after the CPU table); 0, 0: unknown */
    uint64_t data_start, data_end;
} Buffer;

typedef struct PerfFile PerfFile;
typedef struct PerfDecode PerfDecode;
typedef struct td_source Source;

struct td_file {
    const uint8_t *data;
    size_t size;
    int swap, version, long_size, comp;
    uint32_t page_size;
    char *err;
    int file_mapping;           /* data is a private file mapping: see td_data_is_file_mapping */
    int no_empty_tables;        /* td_no_empty_tables: no columns for an event without rows */

    /* the ring-buffer page header */
    int commit_size, data_offset;

    int nevents;
    td_event *events;
    EvInfo *info;
    int32_t *by_id;             /* event id -> index in events, -1 */
    int max_id;
    int common_type_off, common_type_size, common_flags_off, common_preempt_off,
        common_pid_off, common_size;

    Func *funcs;
    size_t nfuncs;
    Cmd *cmds;
    size_t ncmds;

    int ncpus_header;           /* v6 header / CPUCOUNT option */
    int cpucount_option;
    uint64_t cpucount_offset;   /* file offset of the first CPUCOUNT option */
    uint64_t section_options;   /* v7: bit id set for each section option read */
    int64_t ts_offset;
    uint32_t tsc_mult, tsc_shift;
    int has_tsc2nsec;

    Buffer *buffers;
    int nbuffers;
    int sel;                    /* buffer read */

    Buf options;                /* uint16 ids */
    Buf cpustats;
    int cpustats_top_only;
    char *clock_list;           /* TRACECLOCK text */
    const char **instances;

    char **owned;               /* strings and sections to free */
    size_t nowned, owned_cap;
    char **warnings;
    int nwarnings;
    int skipped_formats;        /* event formats that do not parse */
    char first_skipped[TD_ERRLEN];
    int64_t *lost_per_cpu;
    td_meta meta;

    /* the buffer's index and a time range (_td_records.c: td_index, td_set_time_range) */
    td_cpu_blocks *index;       /* per CPU slot of the buffer read (b->ncpu), or NULL;
                                   times read as they are asked for until index_full */
    uint64_t **chunk_hdr;       /* compressed: per CPU slot, each chunk's header offset */
    int index_full;
    struct BlockSpan *span;     /* per CPU slot: the blocks to decode; NULL: all of them */
    int64_t range_t0, range_t1;

    PerfFile *perf;             /* perf.data: its own state (_td_perfdata.c), else NULL */
    const Source *src;          /* the merge's source of records; NULL: trace.dat's CPUs */
    const char *kind;           /* "trace.dat" or "perf.data", for messages */
};


/* --------------------------------------------------- print formats */

/* A print fmt split into its format string and its top-level arguments. */
typedef struct {
    char *fmt;          /* the format string, C escapes undone */
    int nargs;
    const char *arg[128];
    size_t arglen[128];
} PrintFmt;


/* ---------------------------------------------------- column set-up */

/* A print format split (split_print_fmt), with the buffer its strings are in. */
typedef struct {
    PrintFmt pf;
    char fmtbuf[4096];
} SplitFmt;

/* One field of a record as append_record's fast path copies it (Layout.ops). */
enum { OP_I8, OP_I16, OP_I32, OP_I64, OP_STATE, OP_STR };
typedef struct {
    uint8_t code;               /* OP_* */
    uint8_t size;               /* OP_STATE: the number's bytes; OP_STR: 1..16 */
    uint16_t col;               /* its output column */
    int32_t off;                /* its offset in the record */
} FieldOp;

/* Column layout of a wanted event (the same for every CPU's partial table). */
typedef struct {
    int nfields;
    enum td_kind *kind;         /* per field */
    int prev_state;             /* field index or -1 */
    SplitFmt *split;            /* its print format, kept only where a record's value
                                   needs it (prev_state: prev_state_str), else NULL */
    int pf_ok;                  /* the print format split */
    FieldOp *ops;               /* per field, when every one is a fixed-width number
                                   or a string of at most 16 bytes in a file of this
                                   machine's byte order (sched_* formats): the fast
                                   path of append_record; else NULL */
} Layout;


/* ------------------------------------------------------- CPU decoding */

#define CACHE_SIZE 1024

typedef struct {
    uint64_t key[CACHE_SIZE];
    uint64_t key2[CACHE_SIZE];
    int32_t idx[CACHE_SIZE];    /* dictionary index + 1; 0 = empty */
} Cache;

/* One event's partial table on one CPU. */
typedef struct {
    td_column *cols;
    int ncols;
    int64_t rows;
    int64_t take;               /* rows that go into the output now */
    Cache **caches;             /* per column (comm, strings, symbols), lazily */
    int64_t state_vals[64];
    int32_t state_idx[64];
    int nstates;
    int64_t room;               /* rows every fixed-width column of the record (not
                                   perf.data's extra columns) has capacity for: the
                                   appends write without a check until it is 0
                                   (part_reserve); 0 after anything else changes
                                   the columns */
    int64_t seen;               /* trace.dat: records of the event on this CPU not yet
                                   added to the event's count (emit() adds them) */
} Part;

typedef struct td_decoder Decoder;

typedef struct {
    Decoder *d;
    int cpu_slot;               /* index into the buffer's CPU table */
    uint32_t cpu;
    Part *parts;                /* per event index (only wanted ones used) */
    int64_t records, unknown, first_ts, last_ts;
    Buf lost_ts, lost_cpu, lost_count;
    int64_t lost_sum;
    /* the cursor: where decode_step() goes on */
    uint64_t pos;               /* in the CPU's data, or in the current chunk */
    uint64_t prev_raw;          /* last raw timestamp: time must not go back */
    int first_page;
    int started;                /* compressed: chunk count read */
    Rd r;                       /* compressed: the chunks */
    uint64_t nchunks, chunk_no, chunk_len, chunk_off;
    uint8_t *chunk;             /* decompression buffer */
    size_t chunk_cap;
    void *zctx;                 /* zstd's context, kept from chunk to chunk */
    char err[TD_ERRLEN];
    int failed;
    uint64_t released;          /* file offset up to which its pages went back */
    int run, next_run;          /* perf.data: cpu_slot is the record range; a CPU's
                                   samples of one range form sorted runs, chained */
    int64_t blocks;             /* blocks of the index (pages, chunks) decoded */
} CpuWork;

/* A time-range read: the blocks [first, end) of one CPU's data to decode. */
typedef struct BlockSpan {
    int64_t first, end;
} BlockSpan;

struct td_decoder {
    td_file *f;
    Buffer *b;
    Layout *layouts;            /* per event index */
    CpuWork *work;
    int nwork;
    int next_work;              /* atomic */
    volatile int cancel;
    int64_t bytes_done;         /* atomic, progress */
    int64_t bytes_total;
    /* merge phase */
    int next_task;              /* atomic */
    int ntasks;
    struct { int ev, col; } *tasks;
    void **order_cpu;           /* per event: source CPU slot of each output row (the
                                   row within the slot is the slot's next one): uint8_t
                                   each, uint32_t when order_wide */
    int order_wide;             /* more than ORDER_NARROW_MAX slots */
    int jobs;
    int streaming;              /* parts keep their dictionaries between batches */
    char err[TD_ERRLEN];
    int failed;                 /* atomic */
    struct PerfDecode *perf;    /* perf.data: its record ranges and their slots */
    /* perf.data: records counted outside the slots (every sample, wanted or not) */
    int64_t more_records, more_unknown, more_first_ts, more_last_ts;
};


#ifndef ORDER_NARROW_MAX        /* (a build may lower it, to test the wide order) */
#define ORDER_NARROW_MAX 255
#endif

/* ------------------------------------------------ the merge's sources */

/*
 * A source of records other than trace.dat's CPUs (perf.data's record ranges):
 * what the merge (_td_merge.c) and td_close() call through f->src, set by the
 * format's open.  With f->src NULL the merge decodes the trace.dat buffer's CPUs
 * itself.  A source's decoder comes from decoder_alloc() (_td_pool.c), its slots
 * in d->work once run() or stream_step() is done, for the merge to put in order.
 */
struct td_source {
    void (*file_free)(td_file *f);          /* its state of f (f->perf) */
    Decoder *(*decoder_new)(td_file *f, int jobs, char *err);
    void (*decoder_free)(Decoder *d);       /* its part of d (d->perf), not d */
    void (*run)(Decoder *d, td_tick tick, void *ctx);   /* failure: d->failed */
    int (*stream_step)(Decoder *d, int64_t batch_rows, int64_t *horizon, int *all_done,
                       char *err);
    /* a time-range read (td_set_time_range, after f->range_t0/t1 and meta are set):
       choose what to decode; TD_OK or TD_FAIL with err filled */
    int (*set_time_range)(td_file *f, int64_t t0, int64_t t1, char *err);
    /* its index (td_index): f->index and *n entries, or TD_FAIL with f->err filled */
    int (*index)(td_file *f, int *n);
};

/* ------------------------------------------- functions of the parts */

/* _td_common.c */
int own(td_file *f, void *p);
char *own_str(td_file *f, const char *s, size_t n);
int td_warn(td_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int decompress(int comp, const uint8_t *src, size_t csize, uint8_t *dst, size_t usize);
int decompress_with(void **ctx, int comp, const uint8_t *src, size_t csize, uint8_t *dst,
                    size_t usize);
void decompress_end(void **ctx);

/* A compressed block read from its start, a few bytes at a time, without
   decompressing the rest (the index reads a chunk's first page so); zeroed before
   the first inflow_begin(), which reuses its stream for each next block. */
typedef struct {
    int comp;
    void *z;                    /* ZSTD_DStream or z_stream */
    const uint8_t *src;
    size_t csize, cpos;
} Inflow;
int inflow_begin(Inflow *s, int comp, const uint8_t *src, size_t csize);
int inflow_read(Inflow *s, uint8_t *dst, size_t n);    /* exactly n bytes, or TD_EINVAL */
void inflow_end(Inflow *s);
int parse_int(const char *p, const char *end, int64_t *v, const char **after);
int keyed_int(const char *p, const char *end, const char *key, int64_t *v);
const char *find_line_end(const char *p, const char *end);

/* _td_format.c */
int read_header_info(td_file *f, Rd *r);
int new_event(td_file *f);
int read_ftrace_formats(td_file *f, Rd *r);
int read_event_formats(td_file *f, Rd *r);
int split_print_fmt(const char *s, PrintFmt *pf, char *fmtbuf, size_t fmtcap);
int field_is_symbol(const PrintFmt *pf, const char *name);
int prev_state_text(const td_file *f, const EvInfo *in, const PrintFmt *pf, const uint8_t *rec, int recsize, char *out, size_t cap);
int check_prev_state_format(td_file *f);

/* _td_symbols.c */
int read_kallsyms(td_file *f, Rd *r);
int parse_kallsyms(td_file *f, const uint8_t *text, size_t n);
const char *find_func(const td_file *f, uint64_t addr);
int read_cmdlines(td_file *f, Rd *r);
const char *comm_of(const td_file *f, int32_t pid);

/* _td_tracing.c */
int read_tracing_header(td_file *f, Rd *r, const char **ver);
int finish_formats(td_file *f);
const char *skipped_why(const td_file *f);

/* _td_tracedat.c */
int tracedat_open(td_file *f);

/* _td_perfdata.c (the rest: its Source, perf_source, set in f->src) */
int perf_sniff(const uint8_t *data, size_t size);
int perf_open(td_file *f);

/* _td_dispatch.c */
int open_format(td_file *f);

/* _td_pool.c */
int default_jobs(void);
void pool_fail(Decoder *d, int rc, const char *msg);
void run_pool(Decoder *d, int jobs, int ntasks, int (*fn)(Decoder *, int), td_tick tick,
              void *ctx);
Decoder *decoder_alloc(td_file *f, int jobs, char *err);
void free_parts(Decoder *d, CpuWork *w);
void free_work(Decoder *d);
void decoder_free(Decoder *d);


/* _td_records.c */
int make_layout(td_file *f, int idx, Layout *lay);
void free_layout(Layout *lay);
int event_ncols(const td_file *f, int idx, const Layout *lay);
int init_columns(td_file *f, int idx, const Layout *lay, td_column **out, int *ncols);
void free_columns(td_column *c, int n);
int part_init(td_file *f, Decoder *d, int ev, Part *pt);
int append_comm(Part *pt, uint64_t key, const char *name);
int append_record(Decoder *d, CpuWork *w, int ev, const uint8_t *rec, int size, int64_t ts,
                  const char *comm);
int decode_step(Decoder *d, CpuWork *w);
int decode_cpu(Decoder *d, CpuWork *w);

#define NCOMMON 6   /* ts, cpu, common_pid, common_comm, common_flags, common_preempt_count */
#define NCOMMON_SAMPLE 4    /* ts, cpu, common_pid, common_comm */

/* Append a `bytes`-wide number to b, which has room for it (part_reserve()). */
static inline __attribute__((always_inline)) void put_fixed(Buf *b, uint64_t v, int bytes)
{
    switch (bytes) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(b->data + b->len, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(b->data + b->len, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(b->data + b->len, &x, 4); break; }
    default: memcpy(b->data + b->len, &v, 8);
    }
    b->len += (size_t)bytes;
}

static inline __attribute__((always_inline)) int put_num(Buf *b, uint64_t v, int bytes)
{
    if (buf_reserve(b, (size_t)bytes) < 0)
        return TD_ENOMEM;
    switch (bytes) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(b->data + b->len, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(b->data + b->len, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(b->data + b->len, &x, 4); break; }
    default: memcpy(b->data + b->len, &v, 8);
    }
    b->len += (size_t)bytes;
    return 0;
}

/* Cache of column col of a part (allocated on first use), or NULL (no memory). */
static inline Cache *cache_of(Part *pt, int col)
{
    Cache **c = pt->caches;
    if (!c[col])
        c[col] = calloc(1, sizeof(Cache));
    return c[col];
}

static inline __attribute__((always_inline)) int put_index(StrCol *s, int32_t idx)
{
    return idx < 0 ? -1 : buf_put(&s->indices, &idx, 4);
}

/* One more row's end offset of a list or binary column (Arrow's int32 offsets). */
static inline int put_offset(td_column *col, size_t end)
{
    if (end > INT32_MAX)
        return TD_EINVAL;
    int32_t end32 = (int32_t)end;
    return buf_put(&col->offsets, &end32, 4);
}

#endif
