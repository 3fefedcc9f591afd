/*
 * _tdcore.c: schedwake's own trace.dat reader (see _tdcore.h for the interface).
 *
 * Why our own reader and not libtracecmd: libtracecmd trusts its input (a page
 * size of 0 divides by zero, a damaged page makes it loop, a format can make
 * libtraceevent write out of bounds) and it reads compressed files through a
 * chunk cache that grows without bound.  A reader that must survive any file has
 * to check every number it takes from the file, so it is ours, in C (as the text
 * scanner is): the build needs only a C compiler and the -dev packages of zstd
 * and zlib, and the hot loop appends to column buffers without Python objects.
 * libtracecmd stays as the conformance oracle (schedwake.ingest.libtracecmd).
 *
 * The layout (trace-cmd.dat.v6(5), v7(5)):
 *   header: magic, version, endianness, long size, page size
 *   v6: header_page, header_event, ftrace and event formats, kallsyms, printk,
 *       cmdlines, CPU count, options, "flyrecord" + per-CPU (offset, size)
 *   v7: compression, the offset of the first options section; sections (id,
 *       flags, description, size), possibly compressed; BUFFER options give each
 *       buffer's per-CPU data, compressed as chunks of whole pages
 *   data: per CPU, ring-buffer pages: u64 timestamp, commit word (kernel long),
 *       then events: a 32-bit header (type_len:5, time_delta:27), time extends,
 *       absolute time stamps, padding; records carry the event's fields.
 *
 * Safety rules followed everywhere below: every offset and length read from the
 * file goes through a bounds check before use (rd_* cursors, page checks),
 * arithmetic on file values is done in 64 bits against limits checked first,
 * and every failure is an error message naming the section and file offset.
 * Damage is never skipped silently: it is an error, or a warning line when it
 * is bounded and named (td_meta.warnings).
 *
 * Threads: td_decode() decodes CPUs in worker threads (no shared mutable state
 * but an atomic work counter and progress counter), then merges each event's
 * per-CPU rows into (timestamp, CPU) order, column by column, also in threads.
 */
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

#include <zlib.h>
#include <zstd.h>

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

/* ------------------------------------------------------------- errors */

static void seterr(char *err, const char *fmt, ...)
{
    if (!err || err[0])
        return;                     /* keep the first, most specific message */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, TD_ERRLEN, fmt, ap);
    va_end(ap);
}

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
} Rd;

static int rd_fail(Rd *r, const char *need)
{
    seterr(r->err, "corrupt trace.dat: %s: %s at offset %" PRIu64 " (the %s has %zu bytes)",
           r->what, need, r->base + r->pos, r->what, r->size);
    return -1;
}

static inline int rd_need(Rd *r, size_t n, const char *what)
{
    if (n > r->size - r->pos) {
        seterr(r->err, "truncated or corrupt trace.dat: the %s at offset %" PRIu64 " needs %zu "
               "bytes, the %s has %zu left", what, r->base + r->pos, n, r->what,
               r->size - r->pos);
        return -1;
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

static int rd_u(Rd *r, int n, uint64_t *v, const char *what)
{
    if (rd_need(r, (size_t)n, what) < 0)
        return -1;
    *v = ld(r->data + r->pos, n, r->swap);
    r->pos += (size_t)n;
    return 0;
}

/* A NUL-terminated string of at most `max` bytes; *s points into the data. */
static int rd_cstr(Rd *r, const char **s, size_t max, const char *what)
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

static int rd_bytes(Rd *r, size_t n, const uint8_t **p, const char *what)
{
    if (rd_need(r, n, what) < 0)
        return -1;
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

/* What the decoder needs of one event, beside the public td_event. */
typedef struct {
    int nfields;
    Field *fields;
    char *print_fmt;            /* the text after "print fmt: ", or NULL */
    int prev_state_field;       /* sched_switch: index of prev_state, else -1 */
    int common_size;            /* bytes of the common fields */
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
} Buffer;

struct td_file {
    const uint8_t *data;
    size_t size;
    int swap, version, long_size, comp;
    uint32_t page_size;
    char *err;
    int file_mapping;           /* data is a private file mapping: see td_data_is_file_mapping */

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
};

static int own(td_file *f, void *p)
{
    if (!p)
        return -1;
    if (f->nowned == f->owned_cap) {
        size_t cap = f->owned_cap ? f->owned_cap * 2 : 64;
        char **n = realloc(f->owned, cap * sizeof(*n));
        if (!n) {
            free(p);
            return -1;
        }
        f->owned = n;
        f->owned_cap = cap;
    }
    f->owned[f->nowned++] = p;
    return 0;
}

/* A NUL-terminated, valid UTF-8 copy of s[0..n), owned by f. */
static char *own_str(td_file *f, const char *s, size_t n)
{
    char *c;
    if (utf8_valid(s, n)) {
        c = malloc(n + 1);
        if (c) {
            memcpy(c, s, n);
            c[n] = 0;
        }
    } else {
        c = n < SIZE_MAX / 4 ? malloc(3 * n + 1) : NULL;
        if (c)
            c[utf8_replace(s, n, c)] = 0;
    }
    if (own(f, c) < 0) {
        seterr(f->err, "out of memory");
        return NULL;
    }
    return c;
}

static int warn(td_file *f, const char *fmt, ...)
{
    char line[TD_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    char **w = realloc(f->warnings, (size_t)(f->nwarnings + 1) * sizeof(*w));
    if (!w)
        return -1;
    f->warnings = w;
    char *s = own_str(f, line, strlen(line));
    if (!s)
        return -1;
    w[f->nwarnings++] = s;
    return 0;
}

/* ------------------------------------------------------ decompression */

/* Decompress src[0..csize) into exactly usize bytes at dst. */
static int decompress(int comp, const uint8_t *src, size_t csize, uint8_t *dst, size_t usize)
{
    if (comp == COMP_ZSTD) {
        size_t n = ZSTD_decompress(dst, usize, src, csize);
        return !ZSTD_isError(n) && n == usize ? 0 : -1;
    }
    if (comp == COMP_ZLIB) {
        uLongf n = (uLongf)usize;
        uLong in = (uLong)csize;
        if ((size_t)n != usize || (size_t)in != csize)
            return -1;
        return uncompress2(dst, &n, src, &in) == Z_OK && n == usize ? 0 : -1;
    }
    return -1;
}

/* The payload of the v7 section at file offset `off` (decompressed when flagged);
   *out points into the file or into memory owned by f. */
static int read_section(td_file *f, uint64_t off, int want_id, const char *what,
                        Rd *out)
{
    Rd r = {f->data, f->size, 0, 0, what, f->swap, f->err};
    uint64_t id, flags, desc, size;
    if (off > f->size)
        return seterr(f->err, "corrupt trace.dat: the offset %" PRIu64 " of the %s"
                      " is past the end of the file (%zu bytes)", off, what, f->size), -1;
    r.pos = (size_t)off;
    if (rd_u(&r, 2, &id, "section id") || rd_u(&r, 2, &flags, "section flags") ||
        rd_u(&r, 4, &desc, "section description") || rd_u(&r, 8, &size, "section size"))
        return -1;
    if (want_id >= 0 && (int)id != want_id)
        return seterr(f->err, "corrupt trace.dat: the section at offset %" PRIu64
                      " should be the %s (id %d) but has id %" PRIu64, off, what, want_id, id),
               -1;
    if (size > r.size - r.pos)
        return rd_fail(&r, "the section runs past the end of the file");
    size_t start = r.pos;
    *out = (Rd){f->data + start, (size_t)size, 0, start, what, f->swap, f->err};
    if (!(flags & 1))
        return 0;
    if (f->comp == COMP_NONE)
        return seterr(f->err, "corrupt trace.dat: the %s section at offset %" PRIu64
                      " is flagged compressed in a file without compression", what, off), -1;
    Rd c = *out;
    uint64_t csize, usize;
    if (rd_u(&c, 4, &csize, "compressed size") || rd_u(&c, 4, &usize, "uncompressed size"))
        return -1;
    if (csize > c.size - c.pos)
        return rd_fail(&c, "the compressed data runs past the section");
    if (usize > MAX_SECTION_BYTES)
        return rd_fail(&c, "implausible uncompressed size");
    uint8_t *mem = malloc(usize ? usize : 1);
    if (own(f, mem) < 0)
        return seterr(f->err, "out of memory"), -1;
    if (decompress(f->comp, c.data + c.pos, (size_t)csize, mem, (size_t)usize) < 0)
        return seterr(f->err, "corrupt trace.dat: the %s section at offset %" PRIu64
                      " does not decompress to its declared %" PRIu64 " bytes", what, off, usize),
               -1;
    *out = (Rd){mem, (size_t)usize, 0, 0, what, f->swap, f->err};
    out->what = what;
    return 0;
}

/* --------------------------------------------------------- text helpers */

/* strtoll-like parse of a decimal/hex/octal integer inside [p, end); 0 on success. */
static int parse_int(const char *p, const char *end, int64_t *v, const char **after)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    int base = 10;
    if (end - p > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p < end && *p == '0') {
        base = 8;
    }
    uint64_t acc = 0;
    const char *start = p;
    for (; p < end; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return -1;
        acc = acc * (uint64_t)base + (uint64_t)d;
    }
    if (p == start && base != 8)
        return -1;
    /* integer suffixes of C literals: 1UL, 0x10ULL */
    while (p < end && (*p == 'u' || *p == 'U' || *p == 'l' || *p == 'L'))
        p++;
    *v = neg ? -(int64_t)acc : (int64_t)acc;
    if (after)
        *after = p;
    return 0;
}

/* Find `key` (e.g. "offset:") in [p, end) and parse the integer after it. */
static int keyed_int(const char *p, const char *end, const char *key, int64_t *v)
{
    size_t k = strlen(key);
    for (const char *q = p; q + k <= end; q++)
        if (memcmp(q, key, k) == 0)
            return parse_int(q + k, end, v, NULL);
    return -1;
}

static const char *find_line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl ? nl : end;
}

/* ------------------------------------------------------- header page */

/* header_page: "field: u64 timestamp; offset:0; size:8; signed:0;" etc.  We need
   the size of `commit` (the kernel's long) and where `data` starts; anything but
   the layouts the kernel has ever written is refused. */
static int parse_header_page(td_file *f, const char *p, size_t n)
{
    const char *end = p + n;
    int64_t ts_off = -1, ts_size = -1, commit_off = -1, commit_size = -1, data_off = -1;
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        const char *semi = memchr(line, ';', (size_t)(le - line));
        if (semi) {
            const char *name = semi;
            while (name > line && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z')))
                name--;
            size_t nl = (size_t)(semi - name);
            int64_t off, size;
            if (keyed_int(semi, le, "offset:", &off) == 0 &&
                keyed_int(semi, le, "size:", &size) == 0) {
                if (nl == 9 && memcmp(name, "timestamp", 9) == 0) {
                    ts_off = off;
                    ts_size = size;
                } else if (nl == 6 && memcmp(name, "commit", 6) == 0) {
                    commit_off = off;
                    commit_size = size;
                } else if (nl == 4 && memcmp(name, "data", 4) == 0) {
                    data_off = off;
                }
            }
        }
        line = le + 1;
    }
    if (ts_off != 0 || ts_size != 8 || commit_off != 8 ||
        (commit_size != 4 && commit_size != 8) || data_off != 8 + commit_size)
        return seterr(f->err, "corrupt trace.dat: the ring-buffer page header (header_page) "
                      "is not one the kernel writes (timestamp at %" PRId64 " size %" PRId64
                      ", commit at %" PRId64 " size %" PRId64 ", data at %" PRId64 ")",
                      ts_off, ts_size, commit_off, commit_size, data_off), -1;
    f->commit_size = (int)commit_size;
    f->data_offset = (int)data_off;
    return 0;
}

/* header_event: the record header the kernel describes; we decode type_len:5,
   time_delta:27 and types 29/30/31, so a file that says otherwise is refused. */
static int check_header_event(td_file *f, const char *p, size_t n)
{
    static const struct { const char *key; int64_t want; } need[] = {
        {"type_len    :", 5}, {"time_delta  :", 27}, {"padding     : type ==", 29},
        {"time_extend : type ==", 30}, {"time_stamp : type ==", 31},
        {"data max type_len  ==", 28},
    };
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        int64_t v;
        const char *key = need[i].key;
        size_t k = strlen(key);
        const char *hit = NULL;
        for (const char *q = p; q + k <= p + n; q++)
            if (memcmp(q, key, k) == 0) {
                hit = q;
                break;
            }
        if (!hit)
            continue;       /* older kernels list fewer lines */
        if (parse_int(hit + k, p + n, &v, NULL) < 0 || v != need[i].want)
            return seterr(f->err, "corrupt trace.dat: the record header (header_event) "
                          "says '%s %" PRId64 "', the kernel's is %" PRId64, key, v,
                          need[i].want), -1;
    }
    return 0;
}

static int read_header_info(td_file *f, Rd *r)
{
    static const char *labels[2] = {"header_page", "header_event"};
    for (int i = 0; i < 2; i++) {
        const char *label;
        uint64_t n;
        const uint8_t *text;
        if (rd_cstr(r, &label, 32, "header label") < 0)
            return -1;
        if (strcmp(label, labels[i]) != 0)
            return seterr(f->err, "corrupt trace.dat: expected '%s' in the %s", labels[i],
                          r->what), -1;
        if (rd_u(r, 8, &n, "header size") < 0 || rd_bytes(r, (size_t)n > r->size ? r->size + 1
                                                         : (size_t)n, &text, labels[i]) < 0)
            return -1;
        if (i == 0 ? parse_header_page(f, (const char *)text, (size_t)n)
                   : check_header_event(f, (const char *)text, (size_t)n))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------- event formats */

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Parse the declaration part of a field line ("unsigned long args[6]",
   "__data_loc char[] name", "void * ptr") the way libtraceevent does, so the
   flags and element size (and so the column kind) are the same. */
static int parse_decl(td_file *f, Field *fl, const char *p, const char *end)
{
    enum { MAXTOK = 64 };
    const char *tok[MAXTOK];
    size_t tlen[MAXTOK];
    int nt = 0, bracket = -1, close = -1;
    /* drop __attribute__((...)) */
    char buf[512];
    size_t bl = 0;
    for (const char *q = p; q < end && bl < sizeof(buf) - 1;) {
        if (end - q >= 13 && memcmp(q, "__attribute__", 13) == 0) {
            q += 13;
            int depth = 0;
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            for (; q < end; q++) {
                if (*q == '(')
                    depth++;
                else if (*q == ')' && --depth <= 0) {
                    q++;
                    break;
                }
            }
            continue;
        }
        buf[bl++] = *q++;
    }
    buf[bl] = 0;
    for (const char *q = buf; *q && nt < MAXTOK;) {
        if (*q == ' ' || *q == '\t') {
            q++;
            continue;
        }
        const char *s = q;
        if (is_ident(*q))
            while (is_ident(*q))
                q++;
        else
            q++;
        tok[nt] = s;
        tlen[nt] = (size_t)(q - s);
        if (*s == '[' && bracket < 0)
            bracket = nt;
        if (*s == ']' && bracket >= 0 && close < 0)
            close = nt;
        nt++;
    }
    if (nt < 2 && !(nt == 1 && bracket < 0))
        return -1;
    char type[512] = "";
    size_t ty = 0;
#define TAPPEND(s, n) do { size_t _n = (n); if (ty + _n >= sizeof(type)) return -1; \
        memcpy(type + ty, (s), _n); ty += _n; type[ty] = 0; } while (0)
    int name_tok;
    int ntype;                  /* tokens before the name (or the bracket) */
    if (bracket >= 0) {
        if (close < 0 || bracket == 0)
            return -1;
        fl->is_array = 1;
        /* array length: the last token inside the brackets, if a number */
        int64_t alen = 0;
        if (close - 1 > bracket && is_ident(*tok[close - 1]))
            if (parse_int(tok[close - 1], tok[close - 1] + tlen[close - 1], &alen, NULL) < 0)
                alen = 0;
        if (alen < 0 || alen > INT32_MAX)
            alen = 0;
        int after = close + 1;
        if (after < nt && is_ident(*tok[after])) {
            /* "type [] name": the token before '[' is part of the type */
            ntype = bracket;
            name_tok = after;
        } else {
            ntype = bracket - 1;
            name_tok = bracket - 1;
        }
        for (int i = 0; i < ntype; i++) {
            if (i)
                TAPPEND(" ", 1);
            TAPPEND(tok[i], tlen[i]);
        }
        if (name_tok == after) {
            if (ntype)
                TAPPEND(" ", 1);
            /* libtraceevent appends the pre-bracket token with a space */
        }
        if (name_tok == after && bracket - 1 >= 0 && ntype == bracket) {
            /* already appended above as part of the type */
        }
        for (int i = bracket; i <= close; i++)
            TAPPEND(tok[i], tlen[i]);
        fl->elem = (int)alen;  /* array length for now */
        /* element size of a "type [] name" dynamic array comes from the type name */
        if (name_tok == after) {
            const char *tn = tok[bracket - 1];
            size_t tnl = tlen[bracket - 1];
            static const struct { const char *t; int s; } ts[] = {
                {"u8", 1}, {"u16", 2}, {"u32", 4}, {"u64", 8}, {"s8", 1}, {"s16", 2},
                {"s32", 4}, {"s64", 8}, {"char", 1}};
            fl->is_long = 0;
            int sd = 0;
            for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
                if (strlen(ts[i].t) == tnl && memcmp(ts[i].t, tn, tnl) == 0)
                    sd = ts[i].s;
            fl->elem = -sd - 1;  /* marks "size from the type": decoded below */
            if (alen)
                fl->elem = (int)alen;
        }
    } else {
        name_tok = nt - 1;
        ntype = nt - 1;
        for (int i = 0; i < ntype; i++) {
            if (i)
                TAPPEND(" ", 1);
            TAPPEND(tok[i], tlen[i]);
        }
    }
#undef TAPPEND
    if (!is_ident(*tok[name_tok]) || ntype < 1)
        return -1;
    for (int i = 0; i < ntype; i++)
        if (*tok[i] == '*')
            fl->is_pointer = 1;
    fl->name = own_str(f, tok[name_tok], tlen[name_tok]);
    fl->type = own_str(f, type, strlen(type));
    if (!fl->name || !fl->type)
        return -2;
    return 0;
}

/* One "field:...;" line into fl; -1 when it does not parse. */
static int parse_field(td_file *f, Field *fl, const char *line, const char *le)
{
    const char *p = line;
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    if (le - p < 6 || memcmp(p, "field", 5) != 0)
        return -1;
    p += 5;
    if (le - p >= 8 && memcmp(p, " special", 8) == 0)
        p += 8;
    if (p >= le || *p != ':')
        return -1;
    p++;
    const char *semi = memchr(p, ';', (size_t)(le - p));
    if (!semi)
        return -1;
    memset(fl, 0, sizeof(*fl));
    int rc = parse_decl(f, fl, p, semi);
    if (rc < 0)
        return rc;
    int64_t off, size, sgn = 0;
    if (keyed_int(semi, le, "offset:", &off) < 0 || keyed_int(semi, le, "size:", &size) < 0)
        return -1;
    if (keyed_int(semi, le, "signed:", &sgn) < 0)
        sgn = 0;
    if (off < 0 || size < 0 || off > 65535 || size > 65535)
        return -3;      /* a record is at most a page */
    fl->offset = (int)off;
    fl->size = (int)size;
    fl->is_signed = sgn != 0;
    const char *t = fl->type;
    int arraylen = fl->is_array && fl->elem > 0 ? fl->elem : 0;
    int size_dynamic = fl->is_array && fl->elem < 0 ? -fl->elem - 1 : 0;
    fl->is_string = fl->is_array && (strstr(t, "char") || strstr(t, "u8") || strstr(t, "s8"));
    fl->is_dynamic = strncmp(t, "__data_loc", 10) == 0;
    if (strncmp(t, "__rel_loc", 9) == 0)
        fl->is_dynamic = fl->is_relative = 1;
    fl->is_long = strstr(t, "long") != NULL;
    if (fl->is_dynamic && fl->size == 2)
        fl->is_string = fl->is_array = 1;
    if (fl->is_array || fl->is_dynamic) {
        if (arraylen)
            fl->elem = fl->size / arraylen;
        else if (fl->is_dynamic)
            fl->elem = size_dynamic;
        else if (fl->is_string)
            fl->elem = 1;
        else if (fl->is_long)
            fl->elem = f->long_size;
        else
            fl->elem = 0;
    } else {
        fl->elem = fl->size;
    }
    return 0;
}

static int parse_format(td_file *f, const char *system, const char *p, size_t n, int idx)
{
    const char *end = p + n;
    td_event *ev = &f->events[idx];
    EvInfo *in = &f->info[idx];
    in->prev_state_field = -1;
    const char *name = NULL;
    size_t name_len = 0;
    int64_t id = -1;
    int in_fields = 0, common_done = 0;
    Field fields[MAX_FIELDS];
    int nf = 0, ncommon = 0;
    Field common[8];
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        const char *q = line;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (le - q >= 5 && memcmp(q, "name:", 5) == 0) {
            q += 5;
            while (q < le && *q == ' ')
                q++;
            name = q;
            name_len = (size_t)(le - q);
            while (name_len && (name[name_len - 1] == ' ' || name[name_len - 1] == '\r'))
                name_len--;
        } else if (le - q >= 3 && memcmp(q, "ID:", 3) == 0) {
            if (parse_int(q + 3, le, &id, NULL) < 0)
                id = -1;
        } else if (le - q >= 7 && memcmp(q, "format:", 7) == 0) {
            in_fields = 1;
        } else if (in_fields && q == le) {
            if (ncommon || nf)
                common_done = 1;
        } else if (in_fields && le - q >= 5 && memcmp(q, "field", 5) == 0) {
            Field fl;
            int rc = parse_field(f, &fl, line, le);
            if (rc == -2)
                return -1;
            if (rc < 0) {
                seterr(f->err, "corrupt trace.dat: event format %.*s: a field line does not "
                       "parse or is out of range: '%.*s'", (int)(name ? name_len : 1),
                       name ? name : "?", (int)(le - q > 120 ? 120 : le - q), q);
                return -1;
            }
            if (!common_done) {
                if (ncommon < 8)
                    common[ncommon++] = fl;
            } else {
                if (nf >= MAX_FIELDS)
                    return seterr(f->err, "corrupt trace.dat: event format with more than "
                                  "%d fields", MAX_FIELDS), -1;
                fields[nf++] = fl;
            }
        } else if (le - q >= 10 && memcmp(q, "print fmt:", 10) == 0) {
            q += 10;
            while (q < le && *q == ' ')
                q++;
            /* the print fmt runs to the end of the text (it may hold newlines
               inside strings in old kernels): take the rest */
            const char *pe = end;
            while (pe > q && (pe[-1] == '\n' || pe[-1] == '\0' || pe[-1] == ' '))
                pe--;
            in->print_fmt = own_str(f, q, (size_t)(pe - q));
            if (!in->print_fmt)
                return -1;
            break;
        }
        line = le + 1;
    }
    if (!name || !name_len || id < 0 || id > MAX_EVENT_ID || !in_fields)
        return seterr(f->err, "corrupt trace.dat: an event format of system '%s' lacks a "
                      "name, a valid ID (0..%d) or its fields", system, MAX_EVENT_ID), -1;
    ev->name = own_str(f, name, name_len);
    ev->system = own_str(f, system, strlen(system));
    if (!ev->name || !ev->system)
        return -1;
    ev->id = (int)id;
    in->nfields = nf;
    in->fields = nf ? malloc((size_t)nf * sizeof(Field)) : NULL;
    if (nf && own(f, in->fields) < 0)
        return seterr(f->err, "out of memory"), -1;
    if (nf)
        memcpy(in->fields, fields, (size_t)nf * sizeof(Field));
    /* common fields: the first format fixes them for all (they are the same in every
       format of a file); later formats must agree */
    int t = -1, fl = -1, pr = -1, pid = -1, csize = 0;
    for (int i = 0; i < ncommon; i++) {
        const char *cn = common[i].name;
        if (!strcmp(cn, "common_type")) t = i;
        else if (!strcmp(cn, "common_flags")) fl = i;
        else if (!strcmp(cn, "common_preempt_count")) pr = i;
        else if (!strcmp(cn, "common_pid")) pid = i;
        if (common[i].offset + common[i].size > csize)
            csize = common[i].offset + common[i].size;
    }
    if (t < 0 || fl < 0 || pr < 0 || pid < 0 ||
        (common[t].size != 1 && common[t].size != 2 && common[t].size != 4) ||
        common[fl].size != 1 || common[pr].size != 1 || common[pid].size != 4)
        return seterr(f->err, "corrupt trace.dat: event format %s lacks the common fields "
                      "(common_type, common_flags, common_preempt_count, common_pid) or has "
                      "them with other sizes", ev->name), -1;
    in->common_size = csize;
    if (f->common_size == 0) {
        f->common_type_off = common[t].offset;
        f->common_type_size = common[t].size;
        f->common_flags_off = common[fl].offset;
        f->common_preempt_off = common[pr].offset;
        f->common_pid_off = common[pid].offset;
        f->common_size = csize;
    } else if (f->common_type_off != common[t].offset || f->common_pid_off != common[pid].offset ||
               f->common_type_size != common[t].size || f->common_flags_off != common[fl].offset ||
               f->common_preempt_off != common[pr].offset) {
        return seterr(f->err, "corrupt trace.dat: event format %s has its common fields "
                      "elsewhere than the others", ev->name), -1;
    }
    return 0;
}

/* A format that does not parse is skipped, not fatal: its records then count as
   records of an unknown event (a few are skipped with a warning, many refused). */
static int skip_format(td_file *f)
{
    if (!strcmp(f->err, "out of memory"))
        return -1;
    if (!f->skipped_formats++)
        snprintf(f->first_skipped, sizeof(f->first_skipped), "%s", f->err);
    f->err[0] = 0;
    return 0;
}

static int add_format(td_file *f, const char *system, const uint8_t *text, size_t n)
{
    if (f->nevents >= MAX_EVENTS)
        return seterr(f->err, "corrupt trace.dat: more than %d event formats", MAX_EVENTS), -1;
    if (f->nevents % 256 == 0) {
        size_t cap = (size_t)f->nevents + 256;
        td_event *e = realloc(f->events, cap * sizeof(*e));
        if (!e)
            return seterr(f->err, "out of memory"), -1;
        f->events = e;
        EvInfo *in = realloc(f->info, cap * sizeof(*in));
        if (!in)
            return seterr(f->err, "out of memory"), -1;
        f->info = in;
    }
    memset(&f->events[f->nevents], 0, sizeof(td_event));
    memset(&f->info[f->nevents], 0, sizeof(EvInfo));
    if (parse_format(f, system, (const char *)text, n, f->nevents) < 0)
        return skip_format(f);
    f->nevents++;
    return 0;
}

static int read_ftrace_formats(td_file *f, Rd *r)
{
    uint64_t count, n;
    const uint8_t *text;
    if (rd_u(r, 4, &count, "ftrace format count") < 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        if (rd_u(r, 8, &n, "ftrace format size") < 0 ||
            rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "ftrace format") < 0 ||
            add_format(f, "ftrace", text, (size_t)n) < 0)
            return -1;
    }
    return 0;
}

static int read_event_formats(td_file *f, Rd *r)
{
    uint64_t nsys, count, n;
    const uint8_t *text;
    const char *sys;
    if (rd_u(r, 4, &nsys, "event system count") < 0)
        return -1;
    for (uint64_t s = 0; s < nsys; s++) {
        if (rd_cstr(r, &sys, 1024, "event system name") < 0 ||
            rd_u(r, 4, &count, "event format count") < 0)
            return -1;
        for (uint64_t i = 0; i < count; i++) {
            if (rd_u(r, 8, &n, "event format size") < 0 ||
                rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "event format") < 0 ||
                add_format(f, sys, text, (size_t)n) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------- kallsyms, cmdlines */

static int func_cmp(const void *a, const void *b)
{
    const Func *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* /proc/kallsyms text: "ADDR T name [module]".  Like libtraceevent, skip '$' names
   and absolute ('A'/'a') symbols, and stop at the first line that does not parse. */
static int read_kallsyms(td_file *f, Rd *r)
{
    uint64_t n;
    const uint8_t *text;
    if (rd_u(r, 4, &n, "kallsyms size") < 0 ||
        rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "kallsyms") < 0)
        return -1;
    const char *p = (const char *)text, *end = p + n;
    const char *nul = memchr(p, 0, (size_t)n);
    if (nul)
        end = nul;
    size_t cap = 0;
    Func *funcs = NULL;
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        if (le == line) {
            line = le + 1;
            continue;
        }
        const char *q = line;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        uint64_t addr = 0;
        int digits = 0;
        for (; q < le && digits < 16; q++, digits++) {
            char c = *q;
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                break;
            addr = addr << 4 | (uint64_t)d;
        }
        if (!digits)
            break;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (q >= le)
            break;
        char type = *q++;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        const char *name = q;
        while (q < le && *q != ' ' && *q != '\t')
            q++;
        if (q == name)
            break;
        if (name[0] != '$' && type != 'A' && type != 'a') {
            if (f->nfuncs == cap) {
                cap = cap ? cap * 2 : 4096;
                Func *nf = realloc(funcs, cap * sizeof(*nf));
                if (!nf) {
                    free(funcs);
                    return seterr(f->err, "out of memory"), -1;
                }
                funcs = nf;
            }
            const char *s = own_str(f, name, (size_t)(q - name));
            if (!s) {
                free(funcs);
                return -1;
            }
            funcs[f->nfuncs++] = (Func){addr, s};
        }
        line = le + 1;
    }
    /* libtraceevent lists symbols newest first and sorts them stably by address,
       so of equal addresses the one later in the file comes first */
    for (size_t i = 0; i < f->nfuncs / 2; i++) {
        Func t = funcs[i];
        funcs[i] = funcs[f->nfuncs - 1 - i];
        funcs[f->nfuncs - 1 - i] = t;
    }
    /* stable sort: merge sort */
    if (f->nfuncs > 1) {
        Func *tmp = malloc(f->nfuncs * sizeof(*tmp));
        if (!tmp) {
            free(funcs);
            return seterr(f->err, "out of memory"), -1;
        }
        for (size_t w = 1; w < f->nfuncs; w *= 2) {
            for (size_t lo = 0; lo < f->nfuncs; lo += 2 * w) {
                size_t mid = lo + w < f->nfuncs ? lo + w : f->nfuncs;
                size_t hi = lo + 2 * w < f->nfuncs ? lo + 2 * w : f->nfuncs;
                size_t a = lo, b = mid, o = lo;
                while (a < mid && b < hi)
                    tmp[o++] = func_cmp(&funcs[b], &funcs[a]) < 0 ? funcs[b++] : funcs[a++];
                while (a < mid)
                    tmp[o++] = funcs[a++];
                while (b < hi)
                    tmp[o++] = funcs[b++];
            }
            memcpy(funcs, tmp, f->nfuncs * sizeof(*tmp));
        }
        free(tmp);
    }
    if (funcs && own(f, funcs) < 0)
        return seterr(f->err, "out of memory"), -1;
    f->funcs = funcs;
    return 0;
}

/* The function containing addr, found as libtraceevent's bsearch() finds it. */
static const char *find_func(const td_file *f, uint64_t addr)
{
    size_t lo = 0, hi = f->nfuncs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const Func *fb = &f->funcs[mid];
        uint64_t next = mid + 1 < f->nfuncs ? f->funcs[mid + 1].addr : 0;
        if (addr == fb->addr || (addr > fb->addr && addr < next))
            return fb->name;
        if (addr < fb->addr)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

typedef struct { Cmd c; size_t i; } CI;

static int ci_cmp(const void *a, const void *b)
{
    const CI *x = a, *y = b;
    if (x->c.pid != y->c.pid)
        return x->c.pid < y->c.pid ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int cmd_cmp(const void *a, const void *b)
{
    const Cmd *x = a, *y = b;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* saved_cmdlines: "PID COMM" lines; parsing stops at the first that does not parse
   (as libtraceevent's does); the first name of a pid wins. */
static int read_cmdlines(td_file *f, Rd *r)
{
    uint64_t n;
    const uint8_t *text;
    if (rd_u(r, 8, &n, "cmdlines size") < 0 ||
        rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "cmdlines") < 0)
        return -1;
    const char *p = (const char *)text, *end = p + n;
    const char *nul = memchr(p, 0, (size_t)n);
    if (nul)
        end = nul;
    size_t cap = 0;
    Cmd *cmds = NULL;
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        if (le == line) {
            line = le + 1;
            continue;
        }
        /* "%d %m[^\n]": a decimal pid, white space, the rest of the line */
        const char *q = line;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        int neg = 0;
        if (q < le && (*q == '-' || *q == '+'))
            neg = *q++ == '-';
        int64_t pid = 0;
        const char *d0 = q;
        while (q < le && *q >= '0' && *q <= '9' && pid <= INT32_MAX)
            pid = pid * 10 + (*q++ - '0');
        if (q == d0 || pid > INT32_MAX)
            break;
        if (neg)
            pid = -pid;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\v' || *q == '\f'))
            q++;
        if (q >= le)
            break;
        if (f->ncmds == cap) {
            cap = cap ? cap * 2 : 1024;
            Cmd *nc = realloc(cmds, cap * sizeof(*nc));
            if (!nc) {
                free(cmds);
                return seterr(f->err, "out of memory"), -1;
            }
            cmds = nc;
        }
        const char *s = own_str(f, q, (size_t)(le - q));
        if (!s) {
            free(cmds);
            return -1;
        }
        cmds[f->ncmds++] = (Cmd){(int32_t)pid, s};
        line = le + 1;
    }
    if (f->ncmds > 1) {
        /* sorted by (pid, position): the first name of a duplicated pid wins */
        CI *ci = malloc(f->ncmds * sizeof(*ci));
        if (!ci) {
            free(cmds);
            return seterr(f->err, "out of memory"), -1;
        }
        for (size_t i = 0; i < f->ncmds; i++)
            ci[i] = (CI){cmds[i], i};
        qsort(ci, f->ncmds, sizeof(*ci), ci_cmp);
        size_t o = 0;
        for (size_t i = 0; i < f->ncmds; i++)
            if (!o || cmds[o - 1].pid != ci[i].c.pid)
                cmds[o++] = ci[i].c;
        f->ncmds = o;
        free(ci);
    }
    if (cmds && own(f, cmds) < 0)
        return seterr(f->err, "out of memory"), -1;
    f->cmds = cmds;
    return 0;
}

static const char *comm_of(const td_file *f, int32_t pid)
{
    if (pid == 0)
        return "<idle>";
    Cmd key = {pid, NULL};
    const Cmd *c = f->ncmds ? bsearch(&key, f->cmds, f->ncmds, sizeof(Cmd), cmd_cmp) : NULL;
    return c ? c->comm : "<...>";
}

/* ------------------------------------------------------------- options */

static int add_buffer(td_file *f, Buffer **out)
{
    Buffer *b = realloc(f->buffers, (size_t)(f->nbuffers + 1) * sizeof(*b));
    if (!b)
        return seterr(f->err, "out of memory"), -1;
    f->buffers = b;
    *out = &b[f->nbuffers++];
    memset(*out, 0, sizeof(**out));
    return 0;
}

static int set_text(td_file *f, char **dst, const uint8_t *p, size_t n)
{
    const uint8_t *nul = memchr(p, 0, n);
    size_t len = nul ? (size_t)(nul - p) : n;
    *dst = own_str(f, (const char *)p, len);
    return *dst ? 0 : -1;
}

/* A v7 BUFFER option: flyrecord section offset, name, clock, page size, CPUs. */
static int buffer_option_v7(td_file *f, Rd *o)
{
    Buffer *b;
    uint64_t sec, page_size, ncpu;
    const char *name, *clock;
    if (rd_u(o, 8, &sec, "buffer section offset") || rd_cstr(o, &name, 4096, "buffer name") ||
        rd_cstr(o, &clock, 4096, "buffer clock") || rd_u(o, 4, &page_size, "buffer page size") ||
        rd_u(o, 4, &ncpu, "buffer CPU count"))
        return -1;
    if (ncpu > MAX_CPUS)
        return rd_fail(o, "implausible CPU count in a buffer option");
    if (page_size < MIN_PAGE_SIZE || page_size > MAX_PAGE_SIZE ||
        (page_size & (page_size - 1)))
        return seterr(f->err, "corrupt trace.dat: buffer '%s' has page size %" PRIu64
                      " (a power of two from %u to %u expected)", name, page_size,
                      MIN_PAGE_SIZE, MAX_PAGE_SIZE), -1;
    if (add_buffer(f, &b) < 0)
        return -1;
    b->name = own_str(f, name, strlen(name));
    b->clock = own_str(f, clock, strlen(clock));
    if (!b->name || !b->clock)
        return -1;
    b->page_size = (uint32_t)page_size;
    b->cpu = calloc(ncpu ? ncpu : 1, sizeof(CpuData));
    if (own(f, b->cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    for (uint64_t i = 0; i < ncpu; i++) {
        uint64_t cpu, off, size;
        if (rd_u(o, 4, &cpu, "CPU id") || rd_u(o, 8, &off, "CPU data offset") ||
            rd_u(o, 8, &size, "CPU data size"))
            return -1;
        if (cpu >= MAX_CPUS)
            return rd_fail(o, "implausible CPU id in a buffer option");
        b->cpu[i] = (CpuData){(uint32_t)cpu, off, size};
    }
    b->ncpu = (int)ncpu;
    /* the flyrecord section itself: its flags say whether the data is compressed */
    Rd r = {f->data, f->size, 0, 0, "buffer flyrecord section", f->swap, f->err};
    uint64_t id, flags;
    if (sec > f->size)
        return seterr(f->err, "corrupt trace.dat: buffer '%s' section offset %" PRIu64
                      " is past the end of the file", b->name, sec), -1;
    r.pos = (size_t)sec;
    if (rd_u(&r, 2, &id, "section id") || rd_u(&r, 2, &flags, "section flags"))
        return -1;
    if (id != OPT_BUFFER)
        return seterr(f->err, "corrupt trace.dat: the data section of buffer '%s' at offset "
                      "%" PRIu64 " has section id %" PRIu64 ", not %d", b->name, sec, id,
                      OPT_BUFFER), -1;
    b->compressed = flags & 1;
    if (b->compressed && f->comp == COMP_NONE)
        return seterr(f->err, "corrupt trace.dat: buffer '%s' data is flagged compressed in a "
                      "file without compression", b->name), -1;
    return 0;
}

static int do_option(td_file *f, uint16_t id, Rd *o, uint64_t file_off);

/* One options list: {u16 id, u32 size, data} until DONE.  v7: *next gets DONE's
   offset of the next options section. */
static int read_options(td_file *f, Rd *r, uint64_t *next)
{
    *next = 0;
    for (;;) {
        uint64_t id, size;
        if (rd_u(r, 2, &id, "option id") < 0)
            return -1;
        if (id == OPT_DONE && f->version < 7)
            return 0;
        if (rd_u(r, 4, &size, "option size") < 0)
            return -1;
        if (size > r->size - r->pos)
            return rd_fail(r, "an option runs past its section");
        Rd o = {r->data + r->pos, (size_t)size, 0, r->base + r->pos, "option", f->swap, f->err};
        uint64_t file_off = r->base + r->pos;
        r->pos += (size_t)size;
        uint16_t id16 = (uint16_t)id;
        if (buf_put(&f->options, &id16, 2) < 0)
            return seterr(f->err, "out of memory"), -1;
        if (id == OPT_DONE) {
            if (size >= 8)
                *next = ld(o.data, 8, f->swap);
            return 0;
        }
        if (do_option(f, id16, &o, file_off) < 0)
            return -1;
    }
}

static int read_section_option(td_file *f, uint16_t id, Rd *o)
{
    uint64_t off;
    Rd s;
    if (rd_u(o, 8, &off, "section offset") < 0)
        return -1;
    switch (id) {
    case OPT_HEADER_INFO:
        return read_section(f, off, id, "header info", &s) || read_header_info(f, &s);
    case OPT_FTRACE_EVENTS:
        return read_section(f, off, id, "ftrace event formats", &s) ||
               read_ftrace_formats(f, &s);
    case OPT_EVENT_FORMATS:
        return read_section(f, off, id, "event formats", &s) || read_event_formats(f, &s);
    case OPT_KALLSYMS:
        return read_section(f, off, id, "kallsyms", &s) || read_kallsyms(f, &s);
    case OPT_PRINTK:
        return read_section(f, off, id, "printk formats", &s);  /* checked, not needed */
    case OPT_STRINGS:
        return read_section(f, off, id, "strings", &s);         /* checked, not needed */
    case OPT_CMDLINES:
        return read_section(f, off, id, "cmdlines", &s) || read_cmdlines(f, &s);
    }
    return 0;
}

static int do_option(td_file *f, uint16_t id, Rd *o, uint64_t file_off)
{
    switch (id) {
    case OPT_DATE: {
        /* usecs between the trace clock and the time of day: trace-cmd report adds it */
        char tmp[64];
        size_t n = o->size < sizeof(tmp) - 1 ? o->size : sizeof(tmp) - 1;
        memcpy(tmp, o->data, n);
        tmp[n] = 0;
        int64_t v;
        if (parse_int(tmp, tmp + strnlen(tmp, n), &v, NULL) < 0 || v > INT64_MAX / 1000 ||
            v < INT64_MIN / 1000)
            return seterr(f->err, "corrupt trace.dat: the DATE option at offset %" PRIu64
                          " is not a number of microseconds", file_off), -1;
        f->ts_offset += v * 1000;
        return 0;
    }
    case OPT_OFFSET: {
        char tmp[64];
        size_t n = o->size < sizeof(tmp) - 1 ? o->size : sizeof(tmp) - 1;
        memcpy(tmp, o->data, n);
        tmp[n] = 0;
        int64_t v;
        if (parse_int(tmp, tmp + strnlen(tmp, n), &v, NULL) < 0)
            return seterr(f->err, "corrupt trace.dat: the OFFSET option at offset %" PRIu64
                          " is not a number", file_off), -1;
        f->ts_offset += v;
        return 0;
    }
    case OPT_CPUSTAT: {
        const uint8_t *nul = memchr(o->data, 0, o->size);
        size_t n = nul ? (size_t)(nul - o->data) : o->size;
        char nl = '\n';
        if (buf_put(&f->cpustats, o->data, n) < 0 || buf_put(&f->cpustats, &nl, 1) < 0)
            return seterr(f->err, "out of memory"), -1;
        return 0;
    }
    case OPT_BUFFER:
        if (f->version >= 7)
            return buffer_option_v7(f, o);
        {
            /* v6: {u64 offset, name}: the instance's "flyrecord" block */
            Buffer *b;
            uint64_t off;
            const char *name;
            if (rd_u(o, 8, &off, "buffer offset") || rd_cstr(o, &name, 4096, "buffer name") ||
                add_buffer(f, &b) < 0)
                return -1;
            b->name = own_str(f, name, strlen(name));
            if (!b->name)
                return -1;
            b->page_size = f->page_size;
            b->ncpu = -1;           /* read when selected: see v6_buffer_cpus */
            b->cpu = NULL;
            /* keep the offset in the first CpuData slot */
            b->cpu = calloc(1, sizeof(CpuData));
            if (own(f, b->cpu) < 0)
                return seterr(f->err, "out of memory"), -1;
            b->cpu[0].offset = off;
            return 0;
        }
    case OPT_TRACECLOCK:
        return set_text(f, &f->clock_list, o->data, o->size);
    case OPT_UNAME:
        return set_text(f, (char **)&f->meta.uname, o->data, o->size);
    case OPT_VERSION:
        return set_text(f, (char **)&f->meta.trace_cmd_version, o->data, o->size);
    case OPT_CPUCOUNT: {
        uint64_t n;
        if (rd_u(o, 4, &n, "CPU count") < 0)
            return -1;
        if (n == 0 || n > MAX_CPUS)
            return seterr(f->err, "corrupt trace.dat: the CPUCOUNT option says %" PRIu64
                          " CPUs", n), -1;
        f->cpucount_option = (int)n;
        return 0;
    }
    case OPT_TSC2NSEC: {
        uint64_t mult, shift, off;
        if (rd_u(o, 4, &mult, "TSC2NSEC multiplier") || rd_u(o, 4, &shift, "TSC2NSEC shift") ||
            rd_u(o, 8, &off, "TSC2NSEC offset"))
            return -1;
        if (shift > 32)
            return seterr(f->err, "corrupt trace.dat: the TSC2NSEC option has shift %" PRIu64
                          " (at most 32)", shift), -1;
        f->tsc_mult = (uint32_t)mult;
        f->tsc_shift = (uint32_t)shift;
        f->has_tsc2nsec = mult != 0;
        return 0;
    }
    case OPT_TIME_SHIFT:
        if (o->size >= 16)
            return seterr(f->err, "unsupported trace.dat: a guest trace with host time "
                          "synchronisation (TIME_SHIFT option); read it with --reader "
                          "libtracecmd"), -1;
        return 0;
    case OPT_BUFFER_TEXT:
        return seterr(f->err, "unsupported trace.dat: latency-tracer text data (BUFFER_TEXT); "
                      "read it with --reader libtracecmd"), -1;
    case OPT_HEADER_INFO: case OPT_FTRACE_EVENTS: case OPT_EVENT_FORMATS:
    case OPT_KALLSYMS: case OPT_PRINTK: case OPT_CMDLINES: case OPT_STRINGS:
        if (f->version >= 7)
            return read_section_option(f, id, o);
        return 0;
    }
    return 0;
}

/* ------------------------------------------------------------ the header */

static int read_v6(td_file *f, Rd *r)
{
    Rd hdr = *r;
    hdr.what = "file headers";
    if (read_header_info(f, &hdr) < 0 || read_ftrace_formats(f, &hdr) < 0 ||
        read_event_formats(f, &hdr) < 0 || read_kallsyms(f, &hdr) < 0)
        return -1;
    uint64_t n, ncpu;
    const uint8_t *text;
    if (rd_u(&hdr, 4, &n, "printk formats size") < 0 ||
        rd_bytes(&hdr, n > hdr.size ? hdr.size + 1 : (size_t)n, &text, "printk formats") < 0 ||
        read_cmdlines(f, &hdr) < 0 || rd_u(&hdr, 4, &ncpu, "CPU count") < 0)
        return -1;
    if (ncpu == 0 || ncpu > MAX_CPUS)
        return seterr(f->err, "corrupt trace.dat: the header says %" PRIu64 " CPUs", ncpu), -1;
    f->ncpus_header = (int)ncpu;
    for (;;) {
        const uint8_t *tag;
        if (rd_bytes(&hdr, 10, &tag, "data section tag") < 0)
            return -1;
        if (memcmp(tag, "options  ", 10) == 0) {
            uint64_t next;
            if (read_options(f, &hdr, &next) < 0)
                return -1;
            continue;
        }
        if (memcmp(tag, "latency  ", 10) == 0)
            return seterr(f->err, "unsupported trace.dat: latency-tracer text data; read it "
                          "with --reader libtracecmd"), -1;
        if (memcmp(tag, "flyrecord", 10) != 0)
            return seterr(f->err, "corrupt trace.dat: unknown data section tag at offset %zu",
                          hdr.pos - 10), -1;
        break;
    }
    Buffer *b;
    if (add_buffer(f, &b) < 0)
        return -1;
    /* the top buffer goes first: move it there */
    Buffer top = {0};
    top.name = "";
    top.page_size = f->page_size;
    top.ncpu = (int)ncpu;
    top.cpu = calloc(ncpu, sizeof(CpuData));
    if (own(f, top.cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    for (uint64_t c = 0; c < ncpu; c++) {
        uint64_t off, size;
        if (rd_u(&hdr, 8, &off, "CPU data offset") || rd_u(&hdr, 8, &size, "CPU data size"))
            return -1;
        top.cpu[c] = (CpuData){(uint32_t)c, off, size};
    }
    memmove(&f->buffers[1], &f->buffers[0], (size_t)(f->nbuffers - 1) * sizeof(Buffer));
    f->buffers[0] = top;
    return 0;
}

/* v6 instance buffers: at the option's offset, "flyrecord\0" and per-CPU tables. */
static int v6_buffer_cpus(td_file *f, Buffer *b)
{
    uint64_t off = b->cpu[0].offset;
    int ncpu = f->ncpus_header;
    if (off > f->size)
        return seterr(f->err, "corrupt trace.dat: buffer '%s' offset is past the end of the "
                      "file", b->name), -1;
    Rd r = {f->data, f->size, (size_t)off, 0, "instance buffer", f->swap, f->err};
    const uint8_t *tag;
    if (rd_bytes(&r, 10, &tag, "instance data tag") < 0)
        return -1;
    if (memcmp(tag, "flyrecord", 10) != 0)
        return seterr(f->err, "corrupt trace.dat: buffer '%s' data has no flyrecord tag at "
                      "offset %" PRIu64, b->name, off), -1;
    CpuData *cpu = calloc((size_t)ncpu, sizeof(CpuData));
    if (own(f, cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    for (int c = 0; c < ncpu; c++) {
        uint64_t o, s;
        if (rd_u(&r, 8, &o, "CPU data offset") || rd_u(&r, 8, &s, "CPU data size"))
            return -1;
        cpu[c] = (CpuData){(uint32_t)c, o, s};
    }
    b->cpu = cpu;
    b->ncpu = ncpu;
    return 0;
}

static int walk_sections(td_file *f, size_t start);

static int read_v7(td_file *f, Rd *r)
{
    const char *name, *ver;
    uint64_t off;
    if (rd_cstr(r, &name, 64, "compression name") < 0 ||
        rd_cstr(r, &ver, 64, "compression version") < 0 || rd_u(r, 8, &off, "options offset"))
        return -1;
    if (!strcmp(name, "none") || !name[0]) {
        f->comp = COMP_NONE;
    } else if (!strcmp(name, "zstd")) {
        f->comp = COMP_ZSTD;
    } else if (!strcmp(name, "zlib")) {
        f->comp = COMP_ZLIB;
    } else {
        return seterr(f->err, "unsupported trace.dat: compression '%.64s' (known: zstd, zlib)",
                      name), -1;
    }
    f->meta.compression = f->comp == COMP_NONE ? NULL : own_str(f, name, strlen(name));
    if (f->comp != COMP_NONE && !f->meta.compression)
        return -1;
    if (walk_sections(f, r->pos) < 0)
        return -1;
    uint64_t seen[MAX_OPTION_SECTIONS];
    int nseen = 0;
    while (off) {
        for (int i = 0; i < nseen; i++)
            if (seen[i] == off)
                return seterr(f->err, "corrupt trace.dat: the options sections form a loop "
                              "(offset %" PRIu64 " again)", off), -1;
        if (nseen == MAX_OPTION_SECTIONS)
            return seterr(f->err, "corrupt trace.dat: more than %d options sections",
                          MAX_OPTION_SECTIONS), -1;
        seen[nseen++] = off;
        Rd s;
        if (read_section(f, off, 0, "options section", &s) < 0 || read_options(f, &s, &off) < 0)
            return -1;
    }
    return 0;
}

static int select_buffer(td_file *f);
static int check_prev_state_format(td_file *f);

/* v7 sections follow one another from the end of the header to the end of the file
   (libtracecmd finds the STRINGS section so): a file that is cut short, or that has
   bytes after its last section, fails here, whatever the options point to. */
static int walk_sections(td_file *f, size_t start)
{
    size_t pos = start;
    while (pos < f->size) {
        Rd r = {f->data, f->size, pos, 0, "file", f->swap, f->err};
        uint64_t id, flags, desc, size;
        if (rd_u(&r, 2, &id, "section header") || rd_u(&r, 2, &flags, "section header") ||
            rd_u(&r, 4, &desc, "section header") || rd_u(&r, 8, &size, "section header"))
            return -1;
        if (size > f->size - r.pos)
            return seterr(f->err, "truncated or corrupt trace.dat: the section at offset %zu "
                          "(id %" PRIu64 ") needs %" PRIu64 " bytes, the file has %zu left",
                          pos, id, size, f->size - r.pos), -1;
        if (id == OPT_STRINGS) {
            Rd sec;
            if (read_section(f, pos, OPT_STRINGS, "strings", &sec) < 0)
                return -1;
        }
        pos = r.pos + (size_t)size;
    }
    return 0;
}

int td_open(td_file **out, const uint8_t *data, size_t size, char *err)
{
    *out = NULL;
    err[0] = 0;
    td_file *f = calloc(1, sizeof(*f));
    if (!f)
        return seterr(err, "out of memory"), -1;
    f->data = data;
    f->size = size;
    f->err = err;
    *out = f;
    if (size == 0)
        return seterr(err, "empty file"), -1;
    if (size < MAGIC_LEN || memcmp(data, MAGIC, MAGIC_LEN) != 0)
        return seterr(err, size < MAGIC_LEN && memcmp(data, MAGIC, size) == 0
                      ? "truncated trace.dat: the file ends inside its magic bytes"
                      : "not a trace.dat file (bad magic bytes)"), -1;
    Rd r = {data, size, MAGIC_LEN, 0, "file header", 0, err};
    const char *ver;
    uint64_t endian, lsize, psize;
    if (rd_cstr(&r, &ver, 16, "version") < 0 || rd_u(&r, 1, &endian, "endianness") ||
        rd_u(&r, 1, &lsize, "long size"))
        return -1;
    if (endian > 1)
        return seterr(err, "corrupt trace.dat: endianness byte is %" PRIu64 " (0 or 1)",
                      endian), -1;
    int host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
    f->swap = r.swap = (int)endian != host_big;
    if (rd_u(&r, 4, &psize, "page size") < 0)
        return -1;
    if (!strcmp(ver, "6"))
        f->version = 6;
    else if (!strcmp(ver, "7"))
        f->version = 7;
    else
        return seterr(err, "unsupported trace.dat version '%.16s' (known: 6, 7)", ver), -1;
    if (lsize != 4 && lsize != 8)
        return seterr(err, "corrupt trace.dat: long size %" PRIu64 " (4 or 8)", lsize), -1;
    if (psize < MIN_PAGE_SIZE || psize > MAX_PAGE_SIZE || (psize & (psize - 1)))
        return seterr(err, "corrupt trace.dat: page size %" PRIu64 " in the file header (a "
                      "power of two from %u to %u expected)", psize, MIN_PAGE_SIZE,
                      MAX_PAGE_SIZE), -1;
    f->long_size = (int)lsize;
    f->page_size = (uint32_t)psize;
    f->meta.file_version = f->version;
    f->meta.big_endian = (int)endian;
    f->meta.long_size = f->long_size;
    if ((f->version == 6 ? read_v6(f, &r) : read_v7(f, &r)) < 0)
        return -1;
    if (!f->commit_size)
        return seterr(err, "corrupt trace.dat: the file has no ring-buffer page header "
                      "(header_page)"), -1;
    if (!f->nevents)
        return seterr(err, "corrupt trace.dat: the file has no event formats%s%s",
                      f->skipped_formats ? " that parse; the first: " : "",
                      f->skipped_formats ? f->first_skipped : ""), -1;
    if (f->skipped_formats &&
        warn(f, "skipped %d event format%s that do not parse (the first: %s)",
             f->skipped_formats, f->skipped_formats > 1 ? "s" : "",
             f->first_skipped + (strncmp(f->first_skipped, "corrupt trace.dat: ", 19) ? 0 : 19))
        < 0)
        return seterr(err, "out of memory"), -1;
    /* event ids: unique, then an index */
    int max_id = 0;
    for (int i = 0; i < f->nevents; i++)
        if (f->events[i].id > max_id)
            max_id = f->events[i].id;
    f->max_id = max_id;
    f->by_id = malloc(((size_t)max_id + 1) * sizeof(int32_t));
    if (!f->by_id)
        return seterr(err, "out of memory"), -1;
    for (int i = 0; i <= max_id; i++)
        f->by_id[i] = -1;
    for (int i = 0; i < f->nevents; i++) {
        int id = f->events[i].id;
        if (f->by_id[id] >= 0)
            return seterr(err, "corrupt trace.dat: event id %d is given to both %s and %s", id,
                          f->events[f->by_id[id]].name, f->events[i].name), -1;
        f->by_id[id] = i;
    }
    /* the common_type field must be able to hold the largest id */
    if (f->common_type_size == 1 && max_id > 255)
        return seterr(err, "corrupt trace.dat: event id %d does not fit common_type", max_id), -1;
    if (select_buffer(f) < 0 || check_prev_state_format(f) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------- buffers & CPUs */

/* Check a buffer's CPU table against the file: inside it, not overlapping, whole
   pages (uncompressed).  Sets has_data. */
static int check_buffer(td_file *f, Buffer *b)
{
    if (b->ncpu < 0 && v6_buffer_cpus(f, b) < 0)
        return -1;
    b->has_data = 0;
    /* compressed data: a u32 chunk count, then chunks whose bytes the size counts */
    uint64_t extra = b->compressed ? 4 : 0;
    for (int i = 0; i < b->ncpu; i++) {
        CpuData *c = &b->cpu[i];
        if (c->size && (c->offset > f->size || c->size > f->size - c->offset ||
                        extra > f->size - c->offset - c->size))
            return seterr(f->err, "truncated or corrupt trace.dat: CPU %u data of buffer '%s' "
                          "needs bytes %" PRIu64 "..%" PRIu64 " (the file has %zu bytes)",
                          c->cpu, b->name, c->offset, c->offset + c->size + extra, f->size), -1;
        if (!b->compressed && c->size % b->page_size)
            return seterr(f->err, "corrupt trace.dat: CPU %u data of buffer '%s' (%" PRIu64
                          " bytes at offset %" PRIu64 ") ends inside a page of %u bytes",
                          c->cpu, b->name, c->size, c->offset, b->page_size), -1;
        for (int j = 0; j < i; j++) {
            if (b->cpu[j].cpu == c->cpu && c->size && b->cpu[j].size)
                return seterr(f->err, "corrupt trace.dat: buffer '%s' lists CPU %u twice",
                              b->name, c->cpu), -1;
            CpuData *d = &b->cpu[j];
            if (c->size && d->size && c->offset < d->offset + d->size + extra &&
                d->offset < c->offset + c->size + extra)
                return seterr(f->err, "corrupt trace.dat: the data of CPUs %u and %u of buffer "
                              "'%s' overlap (offsets %" PRIu64 " and %" PRIu64 ")", d->cpu,
                              c->cpu, b->name, d->offset, c->offset), -1;
        }
        if (c->size)
            b->has_data = 1;
    }
    return 0;
}

/* The buffer to read: the top one, or (`trace-cmd extract -B NAME` leaves the top
   buffer empty) the first instance with data. */
static int select_buffer(td_file *f)
{
    if (!f->nbuffers)
        return seterr(f->err, "corrupt trace.dat: the file has no trace data section"), -1;
    int top = -1;
    for (int i = 0; i < f->nbuffers; i++) {
        if (check_buffer(f, &f->buffers[i]) < 0)
            return -1;
        if (!f->buffers[i].name[0] && top < 0)
            top = i;
    }
    f->sel = top >= 0 ? top : 0;
    if (top < 0 || !f->buffers[top].has_data)
        for (int i = 0; i < f->nbuffers; i++)
            if (f->buffers[i].name[0] && f->buffers[i].has_data) {
                f->sel = i;
                break;
            }
    Buffer *b = &f->buffers[f->sel];
    int ncpus = f->cpucount_option ? f->cpucount_option : f->ncpus_header;
    for (int i = 0; i < b->ncpu; i++)
        if ((int)b->cpu[i].cpu + 1 > ncpus)
            ncpus = (int)b->cpu[i].cpu + 1;
    if (ncpus <= 0)
        ncpus = 1;
    f->meta.cpus = ncpus;
    f->meta.page_size = (int)b->page_size;
    f->meta.buffer = b->name;
    /* CPUSTAT options describe the top buffer: an instance read has none */
    f->cpustats_top_only = f->sel != top;
    /* the clock: the buffer's own (v7), else the one marked [..] in TRACECLOCK */
    f->meta.clock = b->clock && b->clock[0] ? b->clock : NULL;
    if (!f->meta.clock && f->clock_list) {
        const char *lb = strchr(f->clock_list, '['), *rb = lb ? strchr(lb, ']') : NULL;
        if (lb && rb)
            f->meta.clock = own_str(f, lb + 1, (size_t)(rb - lb - 1));
    }
    int ninst = 0;
    for (int i = 0; i < f->nbuffers; i++)
        if (f->buffers[i].name[0])
            ninst++;
    f->instances = calloc((size_t)ninst + 1, sizeof(char *));
    if (own(f, f->instances) < 0)
        return seterr(f->err, "out of memory"), -1;
    ninst = 0;
    for (int i = 0; i < f->nbuffers; i++)
        if (f->buffers[i].name[0])
            f->instances[ninst++] = f->buffers[i].name;
    f->meta.instances = f->instances;
    f->meta.ninstances = ninst;
    f->lost_per_cpu = calloc((size_t)ncpus, sizeof(int64_t));
    if (own(f, f->lost_per_cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    return 0;
}

void td_data_is_file_mapping(td_file *f)
{
    f->file_mapping = 1;
}

int td_nevents(const td_file *f) { return f->nevents; }
td_event *td_event_at(td_file *f, int i) { return &f->events[i]; }

void td_want_all(td_file *f, int wanted)
{
    for (int i = 0; i < f->nevents; i++)
        f->events[i].wanted = wanted;
}

/* --------------------------------------------------- print formats */

/* A print fmt split into its format string and its top-level arguments. */
typedef struct {
    char *fmt;          /* the format string, C escapes undone */
    int nargs;
    const char *arg[128];
    size_t arglen[128];
} PrintFmt;

static int split_print_fmt(const char *s, PrintFmt *pf, char *fmtbuf, size_t fmtcap)
{
    memset(pf, 0, sizeof(*pf));
    const char *p = s;
    while (*p == ' ')
        p++;
    if (*p != '"')
        return -1;
    p++;
    size_t o = 0;
    for (; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\' && p[1]) {
            p++;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
        }
        if (o + 1 >= fmtcap)
            return -1;
        fmtbuf[o++] = c;
    }
    if (*p != '"')
        return -1;
    fmtbuf[o] = 0;
    pf->fmt = fmtbuf;
    p++;
    /* arguments: split at commas outside (), {}, [] and strings */
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *a = p;
        int depth = 0, instr = 0;
        for (; *p; p++) {
            if (instr) {
                if (*p == '\\' && p[1])
                    p++;
                else if (*p == '"')
                    instr = 0;
                continue;
            }
            if (*p == '"')
                instr = 1;
            else if (*p == '(' || *p == '{' || *p == '[')
                depth++;
            else if (*p == ')' || *p == '}' || *p == ']')
                depth--;
            else if (*p == ',' && depth <= 0)
                break;
        }
        if (pf->nargs == 128)
            return -1;
        const char *e = p;
        while (e > a && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t'))
            e--;
        pf->arg[pf->nargs] = a;
        pf->arglen[pf->nargs++] = (size_t)(e - a);
    }
    return 0;
}

/* Is argument a (after casts "(type)") exactly REC->name? */
static int arg_is_field(const char *a, size_t n, const char *name)
{
    const char *e = a + n;
    for (;;) {
        while (a < e && *a == ' ')
            a++;
        if (a < e && *a == '(') {
            /* a cast: "(" type ")" with no operators but '*' inside */
            const char *q = a + 1;
            int ok = 1;
            for (; q < e && *q != ')'; q++)
                if (!(is_ident(*q) || *q == ' ' || *q == '*'))
                    ok = 0;
            if (q < e && ok && q + 1 < e) {
                a = q + 1;
                continue;
            }
        }
        break;
    }
    if (e - a < 5 || memcmp(a, "REC->", 5) != 0)
        return 0;
    a += 5;
    size_t k = strlen(name);
    return (size_t)(e - a) == k && memcmp(a, name, k) == 0;
}

/* Fields printed with %ps/%pS/%pf/%pF/%pB: their values are kernel addresses. */
static int field_is_symbol(const PrintFmt *pf, const char *name)
{
    int arg = 0;
    for (const char *p = pf->fmt; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '%')
            continue;
        while (*p && strchr("-+ #0", *p))
            p++;
        for (; *p && ((*p >= '0' && *p <= '9') || *p == '.' || *p == '*'); p++)
            if (*p == '*')
                arg++;
        while (*p && strchr("hlLqjzt", *p))
            p++;
        if (!*p)
            break;
        int sym = *p == 'p' && p[1] && strchr("sSfFB", p[1]);
        if (arg < pf->nargs && sym && arg_is_field(pf->arg[arg], pf->arglen[arg], name))
            return 1;
        arg++;
    }
    return 0;
}

/* --- a small evaluator for the prev_state arguments of sched_switch's print fmt:
   integers, REC->field, C operators, ?:, __print_flags, __print_symbolic, strings.
   Values are numbers or strings; any error (division by zero included) fails. */

typedef struct {
    const char *p, *end;
    const uint8_t *rec;
    int recsize;
    const td_file *f;
    const EvInfo *in;
    int depth;
    int err;
} Ev;

typedef struct {
    int is_str;
    uint64_t num;
    char str[64];
} Val;

static void ev_ws(Ev *e)
{
    while (e->p < e->end && (*e->p == ' ' || *e->p == '\t' || *e->p == '\n'))
        e->p++;
}

static int ev_peek(Ev *e, const char *tok)
{
    ev_ws(e);
    size_t k = strlen(tok);
    return (size_t)(e->end - e->p) >= k && memcmp(e->p, tok, k) == 0;
}

static int ev_eat(Ev *e, const char *tok)
{
    if (!ev_peek(e, tok))
        return 0;
    e->p += strlen(tok);
    return 1;
}

static Val ev_expr(Ev *e);

static Val ev_err(Ev *e)
{
    e->err = 1;
    Val v = {0};
    return v;
}

static Val ev_string(Ev *e)
{
    Val v = {1, 0, ""};
    size_t o = 0;
    e->p++;   /* opening quote */
    for (; e->p < e->end && *e->p != '"'; e->p++) {
        char c = *e->p;
        if (c == '\\' && e->p + 1 < e->end)
            c = *++e->p;
        if (o < sizeof(v.str) - 1)
            v.str[o++] = c;
    }
    if (e->p >= e->end)
        return ev_err(e);
    e->p++;
    v.str[o] = 0;
    return v;
}

static uint64_t ev_field(Ev *e, const char *name, size_t n)
{
    for (int i = 0; i < e->in->nfields; i++) {
        const Field *fl = &e->in->fields[i];
        if (strlen(fl->name) == n && memcmp(fl->name, name, n) == 0 && !fl->is_array &&
            !fl->is_dynamic && (fl->size == 1 || fl->size == 2 || fl->size == 4 ||
                                fl->size == 8)) {
            if (fl->offset + fl->size > e->recsize)
                return 0;
            uint64_t v = ld(e->rec + fl->offset, fl->size, e->f->swap);
            if (fl->is_signed && fl->size < 8) {
                int sh = 64 - 8 * fl->size;
                v = (uint64_t)((int64_t)(v << sh) >> sh);
            }
            return v;
        }
    }
    e->err = 1;
    return 0;
}

/* __print_flags(val, "delim", {v, "s"}, ...) / __print_symbolic(val, {v, "s"}, ...) */
static Val ev_print_table(Ev *e, int flags)
{
    Val out = {1, 0, ""};
    if (!ev_eat(e, "("))
        return ev_err(e);
    Val val = ev_expr(e);
    if (e->err || val.is_str)
        return ev_err(e);
    char delim[64] = "";
    if (!ev_eat(e, ","))
        return ev_err(e);
    if (flags) {
        ev_ws(e);
        if (e->p < e->end && *e->p == '"') {
            Val d = ev_string(e);
            if (e->err)
                return d;
            snprintf(delim, sizeof(delim), "%s", d.str);
        }
        if (!ev_eat(e, ","))
            return ev_err(e);
    }
    uint64_t v = val.num;
    int printed = 0, done = 0;
    size_t o = 0;
#define OUT(s) do { size_t _n = strlen(s); if (o + _n >= sizeof(out.str)) return ev_err(e); \
        memcpy(out.str + o, s, _n); o += _n; out.str[o] = 0; } while (0)
    for (;;) {
        if (ev_eat(e, ")"))
            break;
        if (!ev_eat(e, "{"))
            return ev_err(e);
        Val key = ev_expr(e);
        if (e->err || key.is_str || !ev_eat(e, ","))
            return ev_err(e);
        ev_ws(e);
        if (e->p >= e->end || *e->p != '"')
            return ev_err(e);
        Val s = ev_string(e);
        if (e->err || !ev_eat(e, "}"))
            return ev_err(e);
        ev_eat(e, ",");
        if (done)
            continue;
        if (flags) {
            if (!v && key.num == 0) {
                OUT(s.str);
                done = 1;
            } else if (key.num && (v & key.num) == key.num) {
                if (printed && delim[0])
                    OUT(delim);
                OUT(s.str);
                printed = 1;
                v &= ~key.num;
            }
        } else if (key.num == v) {
            OUT(s.str);
            done = 1;
        }
    }
    if (flags && v && !done) {
        char hex[24];
        if (printed && delim[0])
            OUT(delim);
        snprintf(hex, sizeof(hex), "0x%" PRIx64, v);
        OUT(hex);
    } else if (!flags && !done) {
        char hex[24];
        snprintf(hex, sizeof(hex), "0x%" PRIx64, v);
        OUT(hex);
    }
#undef OUT
    return out;
}

static Val ev_primary(Ev *e)
{
    if (++e->depth > 64)
        return ev_err(e);
    Val v = {0};
    ev_ws(e);
    if (e->p >= e->end)
        return ev_err(e);
    char c = *e->p;
    if (c == '(') {
        /* a cast "(unsigned long)" or a parenthesised expression */
        const char *q = e->p + 1;
        int cast = 1;
        while (q < e->end && *q != ')') {
            if (!(is_ident(*q) || *q == ' ' || *q == '*'))
                cast = 0;
            q++;
        }
        if (cast && q < e->end && q > e->p + 1 && !(*(e->p + 1) >= '0' && *(e->p + 1) <= '9')) {
            const char *save = e->p;
            e->p = q + 1;
            ev_ws(e);
            /* "(x)" followed by an operand is a cast; else it was an expression */
            if (e->p < e->end && (is_ident(*e->p) || *e->p == '(')) {
                v = ev_primary(e);
                e->depth--;
                return v;
            }
            e->p = save;
        }
        e->p++;
        v = ev_expr(e);
        if (!ev_eat(e, ")"))
            return ev_err(e);
    } else if (c == '"') {
        v = ev_string(e);
    } else if (c == '-' || c == '!' || c == '~') {
        e->p++;
        v = ev_primary(e);
        if (v.is_str)
            return ev_err(e);
        v.num = c == '-' ? (uint64_t)(-(int64_t)v.num) : c == '!' ? !v.num : ~v.num;
    } else if (c >= '0' && c <= '9') {
        int64_t n;
        const char *after;
        if (parse_int(e->p, e->end, &n, &after) < 0)
            return ev_err(e);
        e->p = after;
        v.num = (uint64_t)n;
    } else if (ev_eat(e, "REC->")) {
        const char *name = e->p;
        while (e->p < e->end && is_ident(*e->p))
            e->p++;
        v.num = ev_field(e, name, (size_t)(e->p - name));
    } else if (ev_eat(e, "__print_flags")) {
        v = ev_print_table(e, 1);
    } else if (ev_eat(e, "__print_symbolic")) {
        v = ev_print_table(e, 0);
    } else {
        return ev_err(e);
    }
    e->depth--;
    return v;
}

static int ev_binop(Ev *e, int level, char *op)
{
    static const char *ops[][6] = {
        {"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"},
        {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
    };
    ev_ws(e);
    for (int i = 0; i < 6 && ops[level][i]; i++) {
        const char *o = ops[level][i];
        size_t k = strlen(o);
        if ((size_t)(e->end - e->p) < k || memcmp(e->p, o, k) != 0)
            continue;
        /* "|" is not "||", "&" is not "&&", "<" is not "<<" */
        if (k == 1 && e->p + 1 < e->end && e->p[1] == o[0] && strchr("|&<>", o[0]))
            continue;
        if (k == 1 && (o[0] == '<' || o[0] == '>') && e->p + 1 < e->end && e->p[1] == '=')
            continue;
        e->p += k;
        strcpy(op, o);
        return 1;
    }
    return 0;
}

static Val ev_level(Ev *e, int level)
{
    if (level == 10)
        return ev_primary(e);
    Val l = ev_level(e, level + 1);
    char op[4];
    while (!e->err && ev_binop(e, level, op)) {
        Val r = ev_level(e, level + 1);
        if (e->err || l.is_str || r.is_str)
            return ev_err(e);
        uint64_t a = l.num, b = r.num;
        if (!strcmp(op, "||")) a = a || b;
        else if (!strcmp(op, "&&")) a = a && b;
        else if (!strcmp(op, "|")) a |= b;
        else if (!strcmp(op, "^")) a ^= b;
        else if (!strcmp(op, "&")) a &= b;
        else if (!strcmp(op, "==")) a = a == b;
        else if (!strcmp(op, "!=")) a = a != b;
        else if (!strcmp(op, "<=")) a = a <= b;
        else if (!strcmp(op, ">=")) a = a >= b;
        else if (!strcmp(op, "<")) a = a < b;
        else if (!strcmp(op, ">")) a = a > b;
        else if (!strcmp(op, "<<")) a = b < 64 ? a << b : 0;
        else if (!strcmp(op, ">>")) a = b < 64 ? a >> b : 0;
        else if (!strcmp(op, "+")) a += b;
        else if (!strcmp(op, "-")) a -= b;
        else if (!strcmp(op, "*")) a *= b;
        else if (!b) return ev_err(e);       /* / or % by zero */
        else if (!strcmp(op, "/")) a /= b;
        else a %= b;
        l.num = a;
    }
    return l;
}

static Val ev_expr(Ev *e)
{
    if (++e->depth > 64)
        return ev_err(e);
    Val c = ev_level(e, 0);
    if (!e->err && ev_eat(e, "?")) {
        if (c.is_str)
            return ev_err(e);
        Val a = ev_expr(e);
        if (e->err || !ev_eat(e, ":"))
            return ev_err(e);
        Val b = ev_expr(e);
        c = c.num ? a : b;
    }
    e->depth--;
    return c;
}

/* The text sched_switch's print fmt shows after "prev_state=" for this record. */
static int prev_state_text(const td_file *f, const EvInfo *in, const PrintFmt *pf,
                           const uint8_t *rec, int recsize, char *out, size_t cap)
{
    const char *at = strstr(pf->fmt, "prev_state=");
    if (!at)
        return -1;
    int arg = 0;
    for (const char *p = pf->fmt; p < at; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '%')
            continue;
        while (*p && !strchr("diouxXcspfeEgG", *p)) {
            if (*p == '*')
                arg++;
            p++;
        }
        arg++;
    }
    size_t o = 0;
    out[0] = 0;
    for (const char *p = at + strlen("prev_state="); *p && *p != ' '; p++) {
        if (*p != '%') {
            if (o + 1 < cap)
                out[o++] = *p;
            continue;
        }
        p++;
        if (*p == '%') {
            if (o + 1 < cap)
                out[o++] = '%';
            continue;
        }
        /* flags, width and length modifiers do not change these short texts */
        while (*p && !strchr("diouxXcsp", *p))
            p++;
        if (!*p || arg >= pf->nargs)
            return -1;
        char kind = *p;
        Ev e = {pf->arg[arg], pf->arg[arg] + pf->arglen[arg], rec, recsize, f, in, 0, 0};
        Val v = ev_expr(&e);
        ev_ws(&e);
        if (e.err || e.p != e.end)
            return -1;
        arg++;
        char piece[80];
        if (kind == 's') {
            if (!v.is_str)
                return -1;
            snprintf(piece, sizeof(piece), "%s", v.str);
        } else if (v.is_str) {
            return -1;
        } else if (kind == 'x' || kind == 'X') {
            snprintf(piece, sizeof(piece), kind == 'x' ? "%" PRIx64 : "%" PRIX64, v.num);
        } else if (kind == 'u' || kind == 'o') {
            snprintf(piece, sizeof(piece), "%" PRIu64, v.num);
        } else {
            snprintf(piece, sizeof(piece), "%" PRId64, (int64_t)v.num);
        }
        size_t n = strlen(piece);
        if (o + n >= cap)
            return -1;
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = 0;
    return 0;
}

/* sched_switch's print format is the only statement of what prev_state's bits
   mean: one that does not evaluate (a syntax we do not know, a division by zero)
   makes the file unusable for every command, not only those that read the table. */
static int check_prev_state_format(td_file *f)
{
    for (int e = 0; e < f->nevents; e++) {
        if (strcmp(f->events[e].name, "sched_switch"))
            continue;
        const EvInfo *in = &f->info[e];
        int end = in->common_size;
        const Field *ps = NULL;
        for (int i = 0; i < in->nfields; i++) {
            const Field *fl = &in->fields[i];
            if (fl->offset + fl->size > end)
                end = fl->offset + fl->size;
            if (!strcmp(fl->name, "prev_state") && !fl->is_array && !fl->is_dynamic &&
                (fl->size == 1 || fl->size == 2 || fl->size == 4 || fl->size == 8))
                ps = fl;
        }
        if (!ps)
            continue;
        PrintFmt *pf = malloc(sizeof(*pf));
        char *fmtbuf = malloc(4096);
        uint8_t *rec = calloc((size_t)end + 8, 1);
        char text[96];
        int ok = pf && fmtbuf && rec && in->print_fmt &&
                 split_print_fmt(in->print_fmt, pf, fmtbuf, 4096) == 0 &&
                 prev_state_text(f, in, pf, rec, end, text, sizeof(text)) == 0;
        int nomem = !pf || !fmtbuf || !rec;
        free(pf);
        free(fmtbuf);
        free(rec);
        if (nomem)
            return seterr(f->err, "out of memory"), -1;
        if (!ok)
            return seterr(f->err, "corrupt trace.dat: the print format of sched_switch does "
                          "not evaluate prev_state (it says what prev_state's bits mean)"), -1;
    }
    return 0;
}

/* ---------------------------------------------------- column set-up */

/* Column layout of a wanted event (the same for every CPU's partial table). */
typedef struct {
    int nfields;
    enum td_kind *kind;         /* per field */
    int prev_state;             /* field index or -1 */
    PrintFmt pf;
    char fmtbuf[4096];
    int pf_ok;
} Layout;

static enum td_kind field_kind(const Field *fl, const PrintFmt *pf, int pf_ok)
{
    if (fl->is_dynamic) {
        if (fl->is_string)
            return TD_DYNSTR;
        return fl->elem == 1 || fl->elem == 2 || fl->elem == 4 || fl->elem == 8 ? TD_DYNARRAY
                                                                              : TD_BIN;
    }
    if (fl->is_array) {
        if (fl->is_string)
            return TD_STR;
        return fl->elem == 1 || fl->elem == 2 || fl->elem == 4 || fl->elem == 8 ? TD_ARRAY
                                                                              : TD_BIN;
    }
    if (fl->size == 1 || fl->size == 2 || fl->size == 4 || fl->size == 8) {
        if ((fl->is_pointer || fl->size == 8) && pf_ok && field_is_symbol(pf, fl->name))
            return TD_SYM;
        return TD_INT;
    }
    return TD_BIN;
}

#define NCOMMON 6   /* ts, cpu, common_pid, common_comm, common_flags, common_preempt_count */

static int make_layout(td_file *f, int idx, Layout *lay)
{
    EvInfo *in = &f->info[idx];
    lay->nfields = in->nfields;
    lay->prev_state = -1;
    lay->kind = calloc((size_t)in->nfields + 1, sizeof(enum td_kind));
    if (!lay->kind)
        return -1;
    lay->pf_ok = in->print_fmt &&
                 split_print_fmt(in->print_fmt, &lay->pf, lay->fmtbuf, sizeof(lay->fmtbuf)) == 0;
    for (int i = 0; i < in->nfields; i++) {
        lay->kind[i] = field_kind(&in->fields[i], &lay->pf, lay->pf_ok);
        if (!strcmp(f->events[idx].name, "sched_switch") &&
            !strcmp(in->fields[i].name, "prev_state") && lay->kind[i] == TD_INT)
            lay->prev_state = i;
    }
    return 0;
}

/* The columns of one event, allocated empty, in output order. */
static int init_columns(td_file *f, int idx, const Layout *lay, td_column **out, int *ncols)
{
    EvInfo *in = &f->info[idx];
    int n = NCOMMON + in->nfields + (lay->prev_state >= 0);
    td_column *c = calloc((size_t)n, sizeof(td_column));
    if (!c)
        return -1;
    static const struct { const char *name; enum td_kind k; int bits, sgn; } common[NCOMMON] = {
        {"ts", TD_INT, 64, 1}, {"cpu", TD_INT, 32, 1}, {"common_pid", TD_INT, 32, 1},
        {"common_comm", TD_STR, 0, 0}, {"common_flags", TD_INT, 8, 0},
        {"common_preempt_count", TD_INT, 8, 0}};
    for (int i = 0; i < NCOMMON; i++) {
        c[i].name = (char *)common[i].name;
        c[i].kind = common[i].k;
        c[i].bits = common[i].bits;
        c[i].is_signed = common[i].sgn;
    }
    int k = NCOMMON;
    for (int i = 0; i < in->nfields; i++) {
        const Field *fl = &in->fields[i];
        td_column *col = &c[k++];
        col->name = fl->name;
        col->kind = lay->kind[i];
        col->is_signed = fl->is_signed;
        col->bits = 8 * (col->kind == TD_INT ? fl->size
                         : (col->kind == TD_ARRAY || col->kind == TD_DYNARRAY) ? fl->elem : 0);
        if (i == lay->prev_state) {
            td_column *ps = &c[k++];
            ps->name = "prev_state_str";
            ps->kind = TD_STR;
        }
    }
    *out = c;
    *ncols = n;
    return 0;
}

static void free_columns(td_column *c, int n)
{
    if (!c)
        return;
    for (int i = 0; i < n; i++) {
        buf_free(&c[i].values);
        buf_free(&c[i].offsets);
        strcol_free(&c[i].str);
    }
    free(c);
}

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
    char err[TD_ERRLEN];
    int failed;
    uint64_t released;          /* file offset up to which its pages went back */
} CpuWork;

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
    uint32_t **order_cpu;       /* per event: source CPU slot of each output row (the
                                   row within the slot is the slot's next one) */
    int jobs;
    int streaming;              /* parts keep their dictionaries between batches */
    char err[TD_ERRLEN];
    int failed;                 /* atomic */
};

static inline int put_num(Buf *b, uint64_t v, int bytes)
{
    if (buf_reserve(b, (size_t)bytes) < 0)
        return -1;
    switch (bytes) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(b->data + b->len, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(b->data + b->len, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(b->data + b->len, &x, 4); break; }
    default: memcpy(b->data + b->len, &v, 8);
    }
    b->len += (size_t)bytes;
    return 0;
}

static inline int put_index(StrCol *s, int32_t idx)
{
    return idx < 0 ? -1 : buf_put(&s->indices, &idx, 4);
}

/* A string column's index for raw bytes p[0..n) (n <= 16), through a cache. */
static int32_t cached_fixed(Cache *cache, StrCol *s, const uint8_t *p, int n)
{
    uint64_t lo = 0, hi = 0;
    memcpy(&lo, p, n < 8 ? (size_t)n : 8);
    if (n > 8)
        memcpy(&hi, p + 8, (size_t)n - 8);
    size_t slot = ((lo ^ (hi * 31)) * 0x9E3779B97F4A7C15ull) >> 54;
    if (cache->idx[slot] && cache->key[slot] == lo && cache->key2[slot] == hi)
        return cache->idx[slot] - 1;
    int32_t idx = strcol_intern(s, (const char *)p, strnlen((const char *)p, (size_t)n));
    if (idx >= 0) {
        cache->key[slot] = lo;
        cache->key2[slot] = hi;
        cache->idx[slot] = idx + 1;
    }
    return idx;
}

static int part_init(td_file *f, Decoder *d, int ev, Part *pt)
{
    if (init_columns(f, ev, &d->layouts[ev], &pt->cols, &pt->ncols) < 0)
        return -1;
    pt->caches = calloc((size_t)pt->ncols, sizeof(Cache *));
    if (!pt->caches)
        return -1;
    return 0;
}

static Cache *cache_of(Part *pt, int col)
{
    Cache **c = pt->caches;
    if (!c[col])
        c[col] = calloc(1, sizeof(Cache));
    return c[col];
}

/* Append one record (its payload rec[0..size)) to the event's partial table. */
static int append_record(Decoder *d, CpuWork *w, int ev, const uint8_t *rec, int size,
                         int64_t ts)
{
    td_file *f = d->f;
    Part *pt = &w->parts[ev];
    if (!pt->cols && part_init(f, d, ev, pt) < 0)
        return -1;
    const EvInfo *in = &f->info[ev];
    const Layout *lay = &d->layouts[ev];
    td_column *c = pt->cols;
    int swap = f->swap;
    int32_t pid = (int32_t)ld(rec + f->common_pid_off, 4, swap);
    if (put_num(&c[0].values, (uint64_t)ts, 8) || put_num(&c[1].values, w->cpu, 4) ||
        put_num(&c[2].values, (uint32_t)pid, 4) ||
        put_num(&c[4].values, rec[f->common_flags_off], 1) ||
        put_num(&c[5].values, rec[f->common_preempt_off], 1))
        return -1;
    {
        Cache *cc = cache_of(pt, 3);
        if (!cc)
            return -1;
        size_t slot = (uint32_t)pid & (CACHE_SIZE - 1);
        int32_t idx;
        if (cc->idx[slot] && cc->key[slot] == (uint64_t)(uint32_t)pid) {
            idx = cc->idx[slot] - 1;
        } else {
            const char *comm = comm_of(f, pid);
            idx = strcol_intern(&c[3].str, comm, strlen(comm));
            if (idx < 0)
                return -1;
            cc->key[slot] = (uint64_t)(uint32_t)pid;
            cc->idx[slot] = idx + 1;
        }
        if (put_index(&c[3].str, idx))
            return -1;
    }
    int k = NCOMMON;
    for (int i = 0; i < in->nfields; i++, k++) {
        const Field *fl = &in->fields[i];
        td_column *col = &c[k];
        /* the field must lie inside the record (both from the file: checked) */
        int inside = fl->offset <= size && fl->size <= size - fl->offset;
        const uint8_t *p = rec + fl->offset;
        switch (col->kind) {
        case TD_INT: {
            uint64_t v = inside ? ld(p, fl->size, swap) : 0;
            if (put_num(&col->values, v, fl->size))
                return -1;
            if (i == lay->prev_state) {
                td_column *ps = &c[++k];
                int64_t sv = (int64_t)v;
                int32_t idx = -1;
                for (int s = 0; s < pt->nstates; s++)
                    if (pt->state_vals[s] == sv) {
                        idx = pt->state_idx[s];
                        break;
                    }
                if (idx < 0) {
                    char text[96];
                    if (!lay->pf_ok ||
                        prev_state_text(f, in, &lay->pf, rec, size, text, sizeof(text)) < 0) {
                        snprintf(w->err, sizeof(w->err), "corrupt trace.dat: the print format "
                                 "of sched_switch does not evaluate for prev_state=%" PRId64, sv);
                        return -2;
                    }
                    idx = strcol_intern(&ps->str, text, strlen(text));
                    if (idx < 0)
                        return -1;
                    if (pt->nstates < 64) {
                        pt->state_vals[pt->nstates] = sv;
                        pt->state_idx[pt->nstates++] = idx;
                    }
                }
                if (put_index(&ps->str, idx))
                    return -1;
            }
            break;
        }
        case TD_SYM: {
            uint64_t addr = inside ? ld(p, fl->size, swap) : 0;
            Cache *cc = cache_of(pt, k);
            if (!cc)
                return -1;
            size_t slot = (addr ^ (addr >> 12)) & (CACHE_SIZE - 1);
            int32_t idx;
            if (cc->idx[slot] && cc->key[slot] == addr) {
                idx = cc->idx[slot] - 1;
            } else {
                const char *name = find_func(f, addr);
                char hex[24];
                if (!name) {
                    snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
                    name = hex;
                }
                idx = strcol_intern(&col->str, name, strlen(name));
                if (idx < 0)
                    return -1;
                cc->key[slot] = addr;
                cc->idx[slot] = idx + 1;
            }
            if (put_index(&col->str, idx))
                return -1;
            break;
        }
        case TD_STR: {
            int32_t idx;
            if (!inside) {
                idx = strcol_intern(&col->str, "", 0);
            } else if (fl->size > 0 && fl->size <= 16) {
                Cache *cc = cache_of(pt, k);
                if (!cc)
                    return -1;
                idx = cached_fixed(cc, &col->str, p, fl->size);
            } else {
                size_t room = fl->size ? (size_t)fl->size : (size_t)(size - fl->offset);
                idx = strcol_intern(&col->str, (const char *)p, strnlen((const char *)p, room));
            }
            if (put_index(&col->str, idx))
                return -1;
            break;
        }
        case TD_DYNSTR:
        case TD_DYNARRAY: {
            const uint8_t *s = (const uint8_t *)"";
            size_t n = 0;
            if (inside) {
                uint32_t loc = (uint32_t)ld(p, fl->size >= 4 ? 4 : fl->size >= 2 ? 2 : 1, swap);
                size_t off = loc & 0xffff, len = fl->size >= 4 ? loc >> 16 : 0;
                if (fl->is_relative)
                    off += (size_t)fl->offset + (size_t)fl->size;
                if (fl->size < 4)       /* old 2-byte form: a NUL-terminated string */
                    len = off < (size_t)size ? (size_t)size - off : 0;
                if (off <= (size_t)size && len <= (size_t)size - off) {
                    s = rec + off;
                    n = len;
                }
            }
            if (col->kind == TD_DYNSTR) {
                if (strcol_append(&col->str, (const char *)s, strnlen((const char *)s, n)))
                    return -1;
            } else {
                int e = fl->elem;
                for (size_t q = 0; q + (size_t)e <= n; q += (size_t)e)
                    if (put_num(&col->values, ld(s + q, e, swap), e))
                        return -1;
                int64_t end = (int64_t)(col->values.len / (size_t)e);
                if (end > INT32_MAX)
                    return -1;
                int32_t end32 = (int32_t)end;
                if (buf_put(&col->offsets, &end32, 4))
                    return -1;
            }
            break;
        }
        case TD_ARRAY: {
            int e = fl->elem;
            int room = fl->size ? fl->size : (size > fl->offset ? size - fl->offset : 0);
            if (inside)
                for (int q = 0; q + e <= room; q += e)
                    if (put_num(&col->values, ld(p + q, e, swap), e))
                        return -1;
            int64_t end = (int64_t)(col->values.len / (size_t)e);
            if (end > INT32_MAX)
                return -1;
            int32_t end32 = (int32_t)end;
            if (buf_put(&col->offsets, &end32, 4))
                return -1;
            break;
        }
        case TD_BIN: {
            if (inside && buf_put(&col->values, p, (size_t)fl->size))
                return -1;
            if (col->values.len > INT32_MAX)
                return -1;
            int32_t end = (int32_t)col->values.len;
            if (buf_put(&col->offsets, &end, 4))
                return -1;
            break;
        }
        }
    }
    pt->rows++;
    return 0;
}

static inline uint64_t tsc_ns(const td_file *f, uint64_t ts)
{
    if (!f->has_tsc2nsec)
        return ts;
    /* mul_u64_u32_shr, as libtracecmd computes it */
    uint64_t al = (uint32_t)ts, ah = ts >> 32, mul = f->tsc_mult;
    uint64_t ret = (al * mul) >> f->tsc_shift;
    if (ah)
        ret += (ah * mul) << (32 - f->tsc_shift);
    return ret;
}

/* Decode one ring-buffer page at file offset `foff`.  *prev_raw carries the last
   raw timestamp of this CPU, to refuse time going backwards. */
static int decode_page(Decoder *d, CpuWork *w, const uint8_t *page, uint64_t foff)
{
    uint64_t *prev_raw = &w->prev_raw;
    int *first_page = &w->first_page;
    td_file *f = d->f;
    uint32_t psize = d->b->page_size;
    int swap = f->swap;
    uint64_t ts = ld(page, 8, swap);
    uint64_t commit = ld(page + 8, f->commit_size, swap);
    uint32_t size = (uint32_t)commit & COMMIT_MASK;
    const uint8_t *data = page + f->data_offset;
    uint32_t room = psize - (uint32_t)f->data_offset;
    if (size > room) {
        snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u page at offset %" PRIu64
                 " says %u bytes of events, more than its %u", w->cpu, foff, size, room);
        return -2;
    }
    int64_t missed = 0;
    if (commit & MISSING_EVENTS) {
        missed = -1;
        if (commit & MISSING_STORED) {
            if ((uint32_t)f->long_size > room - size) {
                snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u page at offset %"
                         PRIu64 " has no room for its lost-event count", w->cpu, foff);
                return -2;
            }
            uint64_t n = ld(data + size, f->long_size, swap);
            if (n > MAX_LOST) {
                snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u page at offset %"
                         PRIu64 " says %" PRIu64 " events were lost before it", w->cpu, foff, n);
                return -2;
            }
            missed = n > 0 ? (int64_t)n : -1;
        }
    }
    if (size == 0 && !missed) {
        /* an empty page: real recordings have none between full ones; a zeroed
           page (timestamp 0) is damage that would hide its events */
        if (ts == 0 && commit == 0) {
            snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u page at offset %"
                     PRIu64 " is all zeros (its events are lost)", w->cpu, foff);
            return -2;
        }
        return 0;
    }
    if (*first_page == 0 && ts < *prev_raw) {
        snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u page at offset %" PRIu64
                 " starts at time %" PRIu64 ", before the previous page's last event (%" PRIu64
                 ")", w->cpu, foff, ts, *prev_raw);
        return -2;
    }
    uint32_t pos = 0;
    int got_missed = missed == 0;
    while (pos < size) {
        if (size - pos < 4)
            goto bad;
        uint32_t hdr = (uint32_t)ld(data + pos, 4, swap);
        uint32_t type_len, delta;
        if (f->meta.big_endian) {
            type_len = hdr >> 27;
            delta = hdr & 0x07ffffff;
        } else {
            type_len = hdr & 0x1f;
            delta = hdr >> 5;
        }
        uint32_t len;
        const uint8_t *payload;
        switch (type_len) {
        case T_PADDING:
            if (delta == 0)
                goto page_done;         /* the rest of the page is padding */
            if (size - pos < 8)
                goto bad;
            len = (uint32_t)ld(data + pos + 4, 4, swap);
            if (len > size - pos - 4)
                goto bad;
            ts += delta;
            pos += 4 + len;
            if (len == 0)
                pos += 4;
            continue;
        case T_TIME_EXTEND:
        case T_TIME_STAMP: {
            if (size - pos < 8)
                goto bad;
            uint64_t ext = ld(data + pos + 4, 4, swap);
            uint64_t v = (ext << 27) + delta;
            if (type_len == T_TIME_STAMP)
                ts = v | (ts & TS_MSB);
            else
                ts += v;
            pos += 8;
            continue;
        }
        case 0:
            if (size - pos < 8)
                goto bad;
            len = (uint32_t)ld(data + pos + 4, 4, swap);
            if (len < 4)
                goto bad;
            len = ((len - 4) + 3) & ~3u;
            if (len > size - pos - 8)
                goto bad;
            payload = data + pos + 8;
            pos += 8 + len;
            break;
        default:
            len = type_len * 4;
            if (len > size - pos - 4)
                goto bad;
            payload = data + pos + 4;
            pos += 4 + len;
            break;
        }
        ts += delta;
        /* a data record */
        if (ts < *prev_raw) {
            snprintf(w->err, sizeof(w->err), "corrupt trace.dat: time goes backwards on CPU %u"
                     " in the page at offset %" PRIu64 " (%" PRIu64 " after %" PRIu64 ")",
                     w->cpu, foff, ts, *prev_raw);
            return -2;
        }
        *prev_raw = ts;
        *first_page = 0;
        int64_t t = (int64_t)(tsc_ns(f, ts) + (uint64_t)f->ts_offset);
        w->records++;
        if (w->records == 1)
            w->first_ts = t;
        w->last_ts = t;
        if (!got_missed) {
            int64_t cpu = w->cpu;
            int32_t cpu32 = (int32_t)cpu;
            if (buf_put(&w->lost_ts, &t, 8) || buf_put(&w->lost_cpu, &cpu32, 4) ||
                buf_put(&w->lost_count, &missed, 8))
                return -1;
            w->lost_sum = w->lost_sum > INT64_MAX - MAX_LOST ? INT64_MAX
                          : w->lost_sum + (missed > 0 ? missed : 1);
            got_missed = 1;
        }
        if ((int)len < f->common_size) {
            snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u record of %u bytes at "
                     "offset %" PRIu64 " is shorter than the common event header", w->cpu, len,
                     foff + (uint64_t)f->data_offset + (uint64_t)(payload - data));
            return -2;
        }
        uint64_t id = ld(payload + f->common_type_off, f->common_type_size, swap);
        int32_t idx = id <= (uint64_t)f->max_id ? f->by_id[id] : -1;
        if (idx < 0) {
            w->unknown++;
            continue;
        }
        __atomic_fetch_add(&f->events[idx].count, 1, __ATOMIC_RELAXED);
        if (f->events[idx].wanted) {
            int rc = append_record(d, w, idx, payload, (int)len, t);
            if (rc < 0)
                return rc;
        }
    }
page_done:
    if (!got_missed) {
        /* a page that lost events before it but holds no record: still say so */
        int64_t t = (int64_t)(tsc_ns(f, ts) + (uint64_t)f->ts_offset);
        int32_t cpu = (int32_t)w->cpu;
        if (buf_put(&w->lost_ts, &t, 8) || buf_put(&w->lost_cpu, &cpu, 4) ||
            buf_put(&w->lost_count, &missed, 8))
            return -1;
        w->lost_sum = w->lost_sum > INT64_MAX - MAX_LOST ? INT64_MAX
                      : w->lost_sum + (missed > 0 ? missed : 1);
    }
    return 0;
bad:
    snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u page at offset %" PRIu64
             ": an event at byte %u runs past the page's %u bytes of events", w->cpu, foff,
             pos, size);
    return -2;
}

/* Decode the next page of one CPU's data (uncompressed, or from its current
   compressed chunk, decompressing the next chunk when one is used up).
   1: a page was decoded; 0: the CPU's data is done; < 0: error. */
#define RELEASE_STEP ((uint64_t)4 << 20)

/* The CPU's data before file offset `end` is consumed: give its pages back (in steps
   of RELEASE_STEP) when the data is a file mapping.  Only whole pages inside the
   CPU's own data: a page shared with another section is left. */
static void release_consumed(Decoder *d, CpuWork *w, uint64_t end)
{
    const td_file *f = d->f;
    const CpuData *c = &d->b->cpu[w->cpu_slot];
    if (!f->file_mapping)
        return;
    if (w->released < c->offset)
        w->released = c->offset;
    if (end < w->released + RELEASE_STEP && end < c->offset + c->size)
        return;
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t from = (w->released + pg - 1) / pg * pg, to = end / pg * pg;
    if (to > from)
        madvise((void *)(f->data + from), (size_t)(to - from), MADV_DONTNEED);
    w->released = end;
}

static int decode_step(Decoder *d, CpuWork *w)
{
    td_file *f = d->f;
    const CpuData *c = &d->b->cpu[w->cpu_slot];
    uint32_t psize = d->b->page_size;
    if (d->cancel)
        return -3;
    if (!d->b->compressed) {
        if (w->pos >= c->size)
            return 0;
        int rc = decode_page(d, w, f->data + c->offset + w->pos, c->offset + w->pos);
        if (rc < 0)
            return rc;
        w->pos += psize;
        __atomic_fetch_add(&d->bytes_done, (int64_t)psize, __ATOMIC_RELAXED);
        release_consumed(d, w, c->offset + (w->pos < c->size ? w->pos : c->size));
        return 1;
    }
    if (!w->started) {
        /* the declared size counts the chunks, not the chunk count before them */
        w->r = (Rd){f->data + c->offset, (size_t)c->size + 4, 0, c->offset,
                    "compressed CPU data", f->swap, w->err};
        if (rd_u(&w->r, 4, &w->nchunks, "chunk count") < 0)
            return -2;
        w->started = 1;
    }
    if (w->pos >= w->chunk_len) {
        uint64_t csize, usize;
        const uint8_t *src;
        if (w->chunk_no == w->nchunks) {
            if (w->r.pos != w->r.size) {
                snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u compressed data "
                         "has %zu bytes after its %" PRIu64 " chunks (offset %" PRIu64 ")",
                         w->cpu, w->r.size - w->r.pos, w->nchunks, w->r.base + w->r.pos);
                return -2;
            }
            return 0;
        }
        if (rd_u(&w->r, 4, &csize, "chunk compressed size") < 0 ||
            rd_u(&w->r, 4, &usize, "chunk size") < 0)
            return -2;
        w->chunk_off = w->r.base + w->r.pos;
        if (rd_bytes(&w->r, (size_t)csize, &src, "compressed chunk") < 0)
            return -2;
        if (usize > MAX_CHUNK_BYTES || usize % psize) {
            snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u chunk at offset %"
                     PRIu64 " says %" PRIu64 " bytes, not whole pages of %u (at most %u)",
                     w->cpu, w->chunk_off, usize, psize, MAX_CHUNK_BYTES);
            return -2;
        }
        if (usize > w->chunk_cap) {
            uint8_t *nb = realloc(w->chunk, (size_t)usize);
            if (!nb)
                return -1;
            w->chunk = nb;
            w->chunk_cap = (size_t)usize;
        }
        if (decompress(f->comp, src, (size_t)csize, w->chunk, (size_t)usize) < 0) {
            snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u chunk at offset %"
                     PRIu64 " does not decompress to its %" PRIu64 " bytes", w->cpu,
                     w->chunk_off, usize);
            return -2;
        }
        w->chunk_no++;
        w->chunk_len = usize;
        w->pos = 0;
        __atomic_fetch_add(&d->bytes_done, (int64_t)(csize + 8), __ATOMIC_RELAXED);
        release_consumed(d, w, w->r.base + w->r.pos);
        if (!usize)
            return 1;
    }
    int rc = decode_page(d, w, w->chunk + w->pos, w->chunk_off);
    if (rc < 0)
        return rc;
    w->pos += psize;
    return 1;
}

static int decode_cpu(Decoder *d, CpuWork *w)
{
    int rc;
    while ((rc = decode_step(d, w)) > 0)
        ;
    free(w->chunk);
    w->chunk = NULL;
    w->chunk_cap = 0;
    return rc;
}

/* ------------------------------------------------------------ threads */

typedef struct {
    Decoder *d;
    int ntasks;
    int next;                   /* atomic */
    int running;                /* threads still working, under mu */
    int (*fn)(Decoder *, int);
    pthread_mutex_t mu;         /* the last thread out signals `done`, so a small */
    pthread_cond_t done;        /* file costs no polling interval */
} Pool;

static void pool_fail(Decoder *d, int rc, const char *msg)
{
    int expect = 0;
    if (__atomic_compare_exchange_n(&d->failed, &expect, rc == -1 ? 1 : rc == -3 ? 3 : 2, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        snprintf(d->err, sizeof(d->err), "%s", rc == -1 ? "out of memory" : msg);
    }
    d->cancel = 1;
}

static void *pool_thread(void *arg)
{
    Pool *p = arg;
    for (;;) {
        int t = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (t >= p->ntasks || p->d->cancel)
            break;
        (void)p->fn(p->d, t);
    }
    pthread_mutex_lock(&p->mu);
    if (--p->running == 0)
        pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Wait until no thread runs or `ms` have passed; returns the threads still running. */
static int pool_wait(Pool *p, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (p->running > 0 && pthread_cond_timedwait(&p->done, &p->mu, &until) == 0)
        ;
    int left = p->running;
    pthread_mutex_unlock(&p->mu);
    return left;
}

/* Run fn(d, 0..ntasks-1) in up to `jobs` threads; the calling thread ticks. */
static void run_pool(Decoder *d, int jobs, int ntasks, int (*fn)(Decoder *, int),
                     td_tick tick, void *ctx)
{
    Pool p = {d, ntasks, 0, 0, fn, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    if (tick && tick(ctx, 0.0)) {   /* a first call, however short the work */
        pool_fail(d, -3, "stopped");
        return;
    }
    int n = jobs < ntasks ? jobs : ntasks;
    pthread_t th[256];
    if (n > 256)
        n = 256;
    if (n <= 1 && !tick) {          /* one worker: this thread, no thread to start */
        p.running = 1;
        pool_thread(&p);
        return;
    }
    int started = 0;
    p.running = n;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, pool_thread, &p) != 0) {
            pthread_mutex_lock(&p.mu);
            p.running -= n - i;
            pthread_mutex_unlock(&p.mu);
            break;
        }
        started++;
    }
    if (!started) {                 /* no thread to be had: do it here */
        p.running = 1;
        pool_thread(&p);
    }
    while (tick && pool_wait(&p, 50) > 0) {
        double frac = d->bytes_total ? (double)__atomic_load_n(&d->bytes_done, __ATOMIC_RELAXED)
                                       / (double)d->bytes_total : 0.0;
        if (tick(ctx, frac > 1 ? 1 : frac)) {
            if (!d->failed)
                pool_fail(d, -3, "stopped");
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

static int cpu_task(Decoder *d, int i)
{
    CpuWork *w = &d->work[i];
    int rc = decode_cpu(d, w);
    if (rc < 0) {
        if (rc == -2 && !w->err[0])
            snprintf(w->err, sizeof(w->err), "corrupt trace.dat: CPU %u data", w->cpu);
        pool_fail(d, rc, w->err);
    }
    return rc;
}

/* ------------------------------------------------------------- merging */

/* Output order of event ev: rows of all CPUs by (timestamp, CPU slot), each CPU's
   rows keeping their order (they are in time order already: checked). */
static int order_task(Decoder *d, int ev)
{
    int64_t total = 0;
    for (int s = 0; s < d->nwork; s++)
        total += d->work[s].parts[ev].take;
    if (total > UINT32_MAX) {
        pool_fail(d, -2, "trace.dat: more than 4 billion records of one event");
        return -2;
    }
    uint32_t *oc = malloc((size_t)(total ? total : 1) * 4);
    if (!oc) {
        pool_fail(d, -1, NULL);
        return -1;
    }
    d->order_cpu[ev] = oc;
    /* k-way merge with a binary heap of (next ts, slot) */
    int k = 0;
    int *heap = malloc((size_t)(d->nwork ? d->nwork : 1) * sizeof(int));
    int64_t *pos = calloc((size_t)(d->nwork ? d->nwork : 1), sizeof(int64_t));
    if (!heap || !pos) {
        free(heap);
        free(pos);
        pool_fail(d, -1, NULL);
        return -1;
    }
#define TS_AT(s) (((const int64_t *)d->work[s].parts[ev].cols[0].values.data)[pos[s]])
#define LESS(a, b) (TS_AT(a) < TS_AT(b) || (TS_AT(a) == TS_AT(b) && (a) < (b)))
    for (int s = 0; s < d->nwork; s++) {
        if (!d->work[s].parts[ev].take)
            continue;
        int i = k++;
        heap[i] = s;
        while (i > 0 && LESS(heap[i], heap[(i - 1) / 2])) {
            int t = heap[i];
            heap[i] = heap[(i - 1) / 2];
            heap[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
    }
    for (int64_t o = 0; o < total; o++) {
        int s = heap[0];
        oc[o] = (uint32_t)s;
        if (++pos[s] == d->work[s].parts[ev].take)
            heap[0] = heap[--k];
        int i = 0;
        for (;;) {
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < k && LESS(heap[l], heap[m]))
                m = l;
            if (r < k && LESS(heap[r], heap[m]))
                m = r;
            if (m == i)
                break;
            int t = heap[i];
            heap[i] = heap[m];
            heap[m] = t;
            i = m;
        }
    }
#undef LESS
#undef TS_AT
    free(heap);
    free(pos);
    return 0;
}

/* Remove the first n of a part column's `rows` rows (streaming keeps the rest). */
static void drop_rows(td_column *c, int64_t n, int64_t rows)
{
    if (n <= 0)
        return;
    switch (c->kind) {
    case TD_INT: {
        size_t w = (size_t)c->bits / 8;
        memmove(c->values.data, c->values.data + (size_t)n * w, (size_t)(rows - n) * w);
        c->values.len = (size_t)(rows - n) * w;
        break;
    }
    case TD_STR: case TD_DYNSTR: case TD_SYM:
        memmove(c->str.indices.data, c->str.indices.data + (size_t)n * 4,
                (size_t)(rows - n) * 4);
        c->str.indices.len = (size_t)(rows - n) * 4;
        break;
    default: {
        size_t w = c->kind == TD_BIN ? 1 : (size_t)c->bits / 8;
        int32_t *offs = (int32_t *)c->offsets.data;
        int32_t base = offs[n - 1];
        for (int64_t i = 0; i < rows - n; i++)
            offs[i] = offs[n + i] - base;
        c->offsets.len = (size_t)(rows - n) * 4;
        if (base) {
            memmove(c->values.data, c->values.data + (size_t)base * w,
                    c->values.len - (size_t)base * w);
            c->values.len -= (size_t)base * w;
        }
        break;
    }
    }
}

/* Gather column `col` of event `ev` from every CPU's part into the output
   column, in the merged order; the parts' memory of that column is freed. */
static int gather_task(Decoder *d, int t)
{
    int ev = d->tasks[t].ev, col = d->tasks[t].col;
    td_event *out = &d->f->events[ev];
    td_column *dst = &out->cols[col];
    int64_t total = 0;
    for (int s = 0; s < d->nwork; s++)
        total += d->work[s].parts[ev].take;
    const uint32_t *oc = d->order_cpu[ev];
    int rc = -1;
    int32_t **map = NULL;
    /* each slot's rows go out in their order: next[s] is slot s's next row */
    uint32_t *next = calloc((size_t)(d->nwork ? d->nwork : 1), sizeof(uint32_t));
    if (!next)
        goto done;
    switch (dst->kind) {
    case TD_INT: {
        size_t w = (size_t)dst->bits / 8;
        if (buf_reserve(&dst->values, (size_t)total * w) < 0)
            goto done;
        char *o = dst->values.data;
        /* a constant size per case, so that memcpy is one load and one store */
#define GATHER(T)                                                                      \
        for (int64_t r = 0; r < total; r++)                                            \
            memcpy(o + (size_t)r * sizeof(T), d->work[oc[r]].parts[ev].cols[col].values.data \
                   + (size_t)next[oc[r]]++ * sizeof(T), sizeof(T));
        switch (w) {
        case 1: GATHER(uint8_t) break;
        case 2: GATHER(uint16_t) break;
        case 4: GATHER(uint32_t) break;
        default: GATHER(uint64_t) break;
        }
#undef GATHER
        dst->values.len = (size_t)total * w;
        break;
    }
    case TD_STR: case TD_DYNSTR: case TD_SYM: {
        map = calloc((size_t)(d->nwork ? d->nwork : 1), sizeof(int32_t *));
        if (!map)
            goto done;
        for (int s = 0; s < d->nwork; s++) {
            const StrCol *sc = d->work[s].parts[ev].take ? &d->work[s].parts[ev].cols[col].str
                                                         : NULL;
            if (!sc || !sc->count)
                continue;
            map[s] = malloc(sc->count * sizeof(int32_t));
            if (!map[s])
                goto done;
            memset(map[s], 0xff, sc->count * sizeof(int32_t));
        }
        if (buf_reserve(&dst->str.indices, (size_t)total * 4) < 0)
            goto done;
        int32_t *o = (int32_t *)dst->str.indices.data;
        for (int64_t r = 0; r < total; r++) {
            const StrCol *sc = &d->work[oc[r]].parts[ev].cols[col].str;
            int32_t li = ((const int32_t *)sc->indices.data)[next[oc[r]]++];
            int32_t gi = map[oc[r]][li];
            if (gi < 0) {
                const int32_t *offs = (const int32_t *)sc->offsets.data;
                /* a dictionary of empty strings only has no characters at all */
                gi = strcol_intern_valid(&dst->str, sc->chars.data ? sc->chars.data + offs[li]
                                                                   : "",
                                         (size_t)(offs[li + 1] - offs[li]));
                if (gi < 0)
                    goto done;
                map[oc[r]][li] = gi;
            }
            o[r] = gi;
        }
        dst->str.indices.len = (size_t)total * 4;
        break;
    }
    default: {          /* lists and binary: offsets (rows + 1) and values */
        size_t w = dst->kind == TD_BIN ? 1 : (size_t)dst->bits / 8;
        int32_t zero = 0;
        if (buf_reserve(&dst->offsets, (size_t)(total + 1) * 4) < 0 ||
            buf_put(&dst->offsets, &zero, 4) < 0)
            goto done;
        int64_t end = 0;
        for (int64_t r = 0; r < total; r++) {
            const td_column *sc = &d->work[oc[r]].parts[ev].cols[col];
            const int32_t *offs = (const int32_t *)sc->offsets.data;
            uint32_t row = next[oc[r]]++;
            int32_t a = row ? offs[row - 1] : 0, b = offs[row];
            size_t n = (size_t)(b - a) * w;
            if (n && buf_put(&dst->values, sc->values.data + (size_t)a * w, n) < 0)
                goto done;
            end += b - a;
            if (end > INT32_MAX)
                goto done;
            int32_t e32 = (int32_t)end;
            memcpy(dst->offsets.data + dst->offsets.len, &e32, 4);
            dst->offsets.len += 4;
        }
        break;
    }
    }
    rc = 0;
done:
    free(next);
    if (map) {
        for (int s = 0; s < d->nwork; s++)
            free(map[s]);
        free(map);
    }
    for (int s = 0; s < d->nwork; s++) {
        Part *pt = &d->work[s].parts[ev];
        if (!pt->cols)
            continue;
        if (pt->take == pt->rows) {
            /* all taken: give the memory back now, column by column */
            buf_free(&pt->cols[col].values);
            buf_free(&pt->cols[col].offsets);
            buf_free(&pt->cols[col].str.indices);
            if (!d->streaming)
                strcol_free(&pt->cols[col].str);
        } else {
            drop_rows(&pt->cols[col], pt->take, pt->rows);
        }
    }
    if (rc < 0)
        pool_fail(d, -1, NULL);
    return rc;
}

/* ------------------------------------------------------------ decoding */

static void free_work(Decoder *d)
{
    if (!d->work)
        return;
    for (int s = 0; s < d->nwork; s++) {
        CpuWork *w = &d->work[s];
        if (w->parts) {
            for (int e = 0; e < d->f->nevents; e++) {
                Part *pt = &w->parts[e];
                if (pt->caches) {
                    for (int c = 0; c < pt->ncols; c++)
                        free(pt->caches[c]);
                    free(pt->caches);
                }
                free_columns(pt->cols, pt->ncols);
            }
            free(w->parts);
        }
        buf_free(&w->lost_ts);
        buf_free(&w->lost_cpu);
        buf_free(&w->lost_count);
        free(w->chunk);
    }
    free(d->work);
    d->work = NULL;
}

static int cpu_slot_cmp(const void *a, const void *b)
{
    const CpuWork *x = a, *y = b;
    return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* The CPUs this process may run on (its affinity, as os.sched_getaffinity). */
static int default_jobs(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                           : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* Lost-event rows of all CPUs, in (ts, cpu) order. */
typedef struct { int64_t ts; int32_t cpu; int64_t count; } LostRow;

static int lost_cmp(const void *a, const void *b)
{
    const LostRow *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* Lost rows before `horizon` go to the metadata in (ts, cpu) order; later ones wait
   (streaming) in their CPU's buffers. */
static int collect_lost(Decoder *d, int64_t horizon)
{
    td_file *f = d->f;
    size_t n = 0;
    for (int s = 0; s < d->nwork; s++)
        n += d->work[s].lost_ts.len / 8;
    LostRow *rows = malloc((n ? n : 1) * sizeof(*rows));
    if (!rows)
        return -1;
    size_t k = 0;
    for (int s = 0; s < d->nwork; s++) {
        CpuWork *w = &d->work[s];
        size_t keep = 0;
        for (size_t i = 0; i < w->lost_ts.len / 8; i++) {
            LostRow r;
            memcpy(&r.ts, w->lost_ts.data + 8 * i, 8);
            memcpy(&r.cpu, w->lost_cpu.data + 4 * i, 4);
            memcpy(&r.count, w->lost_count.data + 8 * i, 8);
            if (r.ts < horizon) {
                rows[k++] = r;
            } else {
                memcpy(w->lost_ts.data + 8 * keep, &r.ts, 8);
                memcpy(w->lost_cpu.data + 4 * keep, &r.cpu, 4);
                memcpy(w->lost_count.data + 8 * keep, &r.count, 8);
                keep++;
            }
        }
        if (w->cpu < (uint32_t)f->meta.cpus)   /* each below 2^48 a page: saturate */
            f->lost_per_cpu[w->cpu] = w->lost_sum > INT64_MAX - f->lost_per_cpu[w->cpu]
                                      ? INT64_MAX : f->lost_per_cpu[w->cpu] + w->lost_sum;
        w->lost_sum = 0;
        w->lost_ts.len = 8 * keep;
        w->lost_cpu.len = 4 * keep;
        w->lost_count.len = 8 * keep;
    }
    n = k;
    qsort(rows, n, sizeof(*rows), lost_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = buf_put(&f->meta.lost_ts, &rows[i].ts, 8) ||
             buf_put(&f->meta.lost_cpu, &rows[i].cpu, 4) ||
             buf_put(&f->meta.lost_count, &rows[i].count, 8);
    free(rows);
    return rc ? -1 : 0;
}

static void decoder_free(Decoder *d)
{
    if (!d)
        return;
    free_work(d);
    if (d->layouts) {
        for (int e = 0; e < d->f->nevents; e++)
            free(d->layouts[e].kind);
        free(d->layouts);
    }
    free(d->order_cpu);
    free(d->tasks);
    free(d);
}

static Decoder *decoder_new(td_file *f, int jobs, char *err)
{
    err[0] = 0;
    f->err = err;
    Buffer *b = &f->buffers[f->sel];
    Decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return seterr(err, "out of memory"), NULL;
    d->f = f;
    d->b = b;
    d->jobs = jobs <= 0 ? default_jobs() : jobs;
    d->layouts = calloc((size_t)f->nevents + 1, sizeof(Layout));
    d->order_cpu = calloc((size_t)f->nevents + 1, sizeof(uint32_t *));
    d->work = calloc((size_t)(b->ncpu ? b->ncpu : 1), sizeof(CpuWork));
    if (!d->layouts || !d->order_cpu || !d->work)
        goto nomem;
    int ncols = 0;
    for (int e = 0; e < f->nevents; e++) {
        f->events[e].count = 0;
        if (f->events[e].wanted) {
            if (make_layout(f, e, &d->layouts[e]) < 0)
                goto nomem;
            ncols += NCOMMON + f->info[e].nfields + 1;
        }
    }
    d->tasks = malloc((size_t)(ncols ? ncols : 1) * sizeof(*d->tasks));
    if (!d->tasks)
        goto nomem;
    for (int s = 0; s < b->ncpu; s++) {
        CpuWork *w = &d->work[d->nwork];
        if (!b->cpu[s].size)
            continue;
        w->cpu_slot = s;
        w->cpu = b->cpu[s].cpu;
        w->first_page = 1;
        w->parts = calloc((size_t)f->nevents + 1, sizeof(Part));
        if (!w->parts)
            goto nomem;
        d->bytes_total += (int64_t)b->cpu[s].size;
        d->nwork++;
    }
    /* CPU order decides ties between equal timestamps, as trace-cmd's merge does */
    qsort(d->work, (size_t)d->nwork, sizeof(CpuWork), cpu_slot_cmp);
    for (int s = 0; s < d->nwork; s++)
        d->work[s].d = d;
    return d;
nomem:
    seterr(err, "out of memory");
    decoder_free(d);
    return NULL;
}

/* Totals of what was decoded so far into the metadata. */
static void sum_up(Decoder *d)
{
    td_file *f = d->f;
    int64_t records = 0, unknown = 0, first = INT64_MAX, last = INT64_MIN;
    for (int s = 0; s < d->nwork; s++) {
        CpuWork *w = &d->work[s];
        records += w->records;
        unknown += w->unknown;
        if (w->records) {
            if (w->first_ts < first)
                first = w->first_ts;
            if (w->last_ts > last)
                last = w->last_ts;
        }
    }
    f->meta.records = records;
    f->meta.unknown_records = unknown;
    f->meta.first_ts = records ? first : 0;
    f->meta.last_ts = records ? last : 0;
}

/* Records of unknown event ids: a few are skipped with a warning, many are damage. */
static int judge_unknown(td_file *f, char *err)
{
    int64_t unknown = f->meta.unknown_records, records = f->meta.records;
    if (unknown && unknown * 100 > records)
        return seterr(err, "corrupt trace.dat: %" PRId64 " of %" PRId64 " records carry an "
                      "event id that no event format in the file has", unknown, records), -1;
    if (unknown && warn(f, "skipped %" PRId64 " of %" PRId64 " records whose event id has no "
                        "format in the file", unknown, records) < 0)
        return seterr(err, "out of memory"), -1;
    return 0;
}

/* Tables with fewer rows are gathered in the calling thread: starting threads costs
   more than the copy, and a file may hold a thousand event formats. */
#define GATHER_THREADED_ROWS 65536

/* Move every part's `take` rows into the events' output columns, in (timestamp,
   CPU) order, column by column (in threads), and the lost rows before `horizon`
   into the meta. */
static int emit(Decoder *d, int64_t horizon, char *err)
{
    td_file *f = d->f;
    if (collect_lost(d, horizon) < 0)
        return seterr(err, "out of memory"), -1;
    /* one event at a time, so that only its order arrays exist (8 bytes a row) */
    for (int e = 0; e < f->nevents && !d->failed; e++) {
        td_event *ev = &f->events[e];
        free_columns(ev->cols, ev->ncols);
        ev->cols = NULL;
        ev->ncols = 0;
        if (!ev->wanted)
            continue;
        if (init_columns(f, e, &d->layouts[e], &ev->cols, &ev->ncols) < 0)
            return seterr(err, "out of memory"), -1;
        for (int c = 0; c < ev->ncols; c++) {
            d->tasks[c].ev = e;
            d->tasks[c].col = c;
        }
        d->ntasks = ev->ncols;
        /* threads pay off for big tables only: a file has hundreds of small ones */
        int64_t rows = 0;
        for (int s = 0; s < d->nwork; s++)
            rows += d->work[s].parts[e].take;
        if (order_task(d, e) == 0)
            run_pool(d, rows < GATHER_THREADED_ROWS ? 1 : d->jobs, ev->ncols, gather_task,
                     NULL, NULL);
        free(d->order_cpu[e]);
        d->order_cpu[e] = NULL;
    }
    if (d->failed)
        return seterr(err, "%s", d->err[0] ? d->err : "out of memory"), -1;
    for (int s = 0; s < d->nwork; s++)
        for (int e = 0; e < f->nevents; e++) {
            Part *pt = &d->work[s].parts[e];
            pt->rows -= pt->take;
            pt->take = 0;
        }
    f->meta.nwarnings = f->nwarnings;
    f->meta.warnings = (const char *const *)f->warnings;
    f->meta.lost_per_cpu = f->lost_per_cpu;
    return 0;
}

int td_decode(td_file *f, int jobs, td_tick tick, void *ctx, char *err)
{
    Decoder *d = decoder_new(f, jobs, err);
    if (!d)
        return -1;
    int rc = -1;
    run_pool(d, d->jobs, d->nwork, cpu_task, tick, ctx);
    if (d->failed) {
        if (d->failed == 3)
            rc = -2;
        else
            seterr(err, "%s", d->err[0] ? d->err : "corrupt trace.dat");
        goto out;
    }
    sum_up(d);
#ifdef __GLIBC__
    malloc_trim(0);     /* the threads' freed chunk buffers: back before the merge grows */
#endif
    if (judge_unknown(f, err) < 0)
        goto out;
    for (int s = 0; s < d->nwork; s++)
        for (int e = 0; e < f->nevents; e++)
            d->work[s].parts[e].take = d->work[s].parts[e].rows;
    rc = emit(d, INT64_MAX, err);
out:
    decoder_free(d);
    if (rc < 0)
        for (int e = 0; e < f->nevents; e++) {
            free_columns(f->events[e].cols, f->events[e].ncols);
            f->events[e].cols = NULL;
            f->events[e].ncols = 0;
        }
    return rc;
}

/* ------------------------------------------------------------- streaming */

struct td_stream {
    Decoder *d;
    int *done;                  /* per work slot: its data is decoded */
    int finished;
};

int td_stream_open(td_file *f, td_stream **out, char *err)
{
    *out = NULL;
    td_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return seterr(err, "out of memory"), -1;
    st->d = decoder_new(f, 1, err);
    if (!st->d) {
        free(st);
        return -1;
    }
    st->d->streaming = 1;
    st->done = calloc((size_t)st->d->nwork + 1, sizeof(int));
    if (!st->done) {
        td_stream_close(st);
        return seterr(err, "out of memory"), -1;
    }
    *out = st;
    return 0;
}

static int64_t pending_rows(Decoder *d)
{
    int64_t n = 0;
    for (int s = 0; s < d->nwork; s++)
        for (int e = 0; e < d->f->nevents; e++)
            n += d->work[s].parts[e].rows;
    return n;
}

/* Rows of a part with timestamp < horizon (its ts column is sorted). */
static int64_t rows_before(const Part *pt, int64_t horizon)
{
    if (!pt->rows)
        return 0;
    const int64_t *ts = (const int64_t *)pt->cols[0].values.data;
    int64_t lo = 0, hi = pt->rows;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < horizon)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

double td_stream_done(const td_stream *st)
{
    const Decoder *d = st->d;
    if (st->finished || !d->bytes_total)
        return 1.0;
    double frac = (double)d->bytes_done / (double)d->bytes_total;
    return frac > 1 ? 1.0 : frac;
}

int td_stream_next(td_stream *st, int64_t batch_rows, char *err)
{
    Decoder *d = st->d;
    td_file *f = d->f;
    err[0] = 0;
    f->err = err;
    if (st->finished)
        return 0;
    /* Decode the CPU that is furthest behind in time, page by page, until enough
       rows wait: every CPU is then decoded up to about the same time, so what
       waits beyond the horizon is at most about a page per CPU. */
    for (;;) {
        int behind = -1;
        for (int s = 0; s < d->nwork; s++) {
            if (st->done[s])
                continue;
            if (!d->work[s].records) {      /* not placed in time yet: first */
                behind = s;
                break;
            }
            if (behind < 0 || d->work[s].last_ts < d->work[behind].last_ts)
                behind = s;
        }
        if (behind < 0)
            break;
        int rc = decode_step(d, &d->work[behind]);
        if (rc < 0) {
            if (!d->work[behind].err[0])
                snprintf(d->work[behind].err, TD_ERRLEN, "corrupt trace.dat");
            return seterr(err, "%s", rc == -1 ? "out of memory" : d->work[behind].err), -1;
        }
        if (rc == 0)
            st->done[behind] = 1;
        if (pending_rows(d) >= batch_rows)
            break;
    }
    /* the horizon: rows before the earliest "last decoded" time of a CPU that is
       not done can go out; with every CPU done, all can */
    int64_t horizon = INT64_MAX;
    int all_done = 1;
    for (int s = 0; s < d->nwork; s++)
        if (!st->done[s]) {
            all_done = 0;
            if (d->work[s].last_ts < horizon)
                horizon = d->work[s].last_ts;
        }
    for (int s = 0; s < d->nwork; s++)
        for (int e = 0; e < f->nevents; e++) {
            Part *pt = &d->work[s].parts[e];
            pt->take = all_done ? pt->rows : rows_before(pt, horizon);
        }
    sum_up(d);
    if (all_done) {
        st->finished = 1;
        if (judge_unknown(f, err) < 0)
            return -1;
    }
    return emit(d, all_done ? INT64_MAX : horizon, err) < 0 ? -1 : 1;
}

void td_stream_close(td_stream *st)
{
    if (!st)
        return;
    decoder_free(st->d);
    free(st->done);
    free(st);
}

td_meta *td_get_meta(td_file *f)
{
    f->meta.options = (const uint16_t *)f->options.data;
    f->meta.noptions = (int)(f->options.len / 2);
    f->meta.cpustats = NULL;
    if (f->cpustats.len && !f->cpustats_top_only) {
        char nul = 0;
        if (buf_put(&f->cpustats, &nul, 1) == 0) {
            f->cpustats.len--;
            f->meta.cpustats = f->cpustats.data;
        }
    }
    return &f->meta;
}

void td_close(td_file *f)
{
    if (!f)
        return;
    for (int e = 0; e < f->nevents; e++)
        free_columns(f->events[e].cols, f->events[e].ncols);
    for (size_t i = 0; i < f->nowned; i++)
        free(f->owned[i]);
    free(f->owned);
    free(f->events);
    free(f->info);
    free(f->by_id);
    free(f->buffers);
    free(f->warnings);
    buf_free(&f->options);
    buf_free(&f->cpustats);
    buf_free(&f->meta.lost_ts);
    buf_free(&f->meta.lost_cpu);
    buf_free(&f->meta.lost_count);
    free(f);
}

int td_fuzz_read(const uint8_t *data, size_t size, int jobs, char *err)
{
    td_file *f;
    int rc = td_open(&f, data, size, err);
    if (rc == 0) {
        td_want_all(f, 1);
        rc = td_decode(f, jobs, NULL, NULL, err);
    }
    td_close(f);
    return rc;
}
