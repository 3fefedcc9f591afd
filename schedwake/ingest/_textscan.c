/*
 * _textscan: bulk tokenizer for kernel trace text (raw ftrace text, trace-cmd
 * report text, perf script text).
 *
 * The Python side (schedwake/ingest/text.py) feeds chunks of complete lines to a
 * Scanner; the scanner parses every line's prefix (comm, pid, cpu, latency flags,
 * timestamp, event name) and matches the event's argument text against small
 * "layout" patterns compiled by Python (literals and typed captures), appending
 * the values to per-event column buffers.  Column buffers are the scanner's own
 * memory (mapped, and grown by mremap, once large), handed to NumPy/Arrow as
 * memoryviews without a copy by finish(), which then starts afresh (text.py's
 * iter_batches() streams that way).  feed() runs without the GIL, so the next chunk
 * can be read and decompressed by another thread meanwhile.
 *
 * Nothing here knows which events exist: layouts come from Python, and events
 * without a layout keep their raw argument string.
 *
 * Text is bytes: a task name is whatever prctl(PR_SET_NAME) was given, and the
 * kernel, trace-cmd and perf print it as it is.  Every string handed to Python
 * (pool strings, event names, raw arguments, unparsed lines) is valid UTF-8: bytes
 * that are not become U+FFFD, one per maximal invalid subpart, the rule of
 * Python's bytes.decode("utf-8", "replace") (_utf8.h).  Two byte strings with the
 * same replaced text are one pool string, so a dictionary column never holds a
 * value twice.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "_utf8.h"

enum { MODE_FTRACE = 0, MODE_REPORT = 1, MODE_PERF = 2 };
enum { K_LIT = 0, K_INT = 1, K_HEX = 2, K_STR = 3, K_SYM = 4, K_STATE = 5 };
/* what the matcher does for an item (variant_prepare): literals by length, a short
 * literal and the capture after it in one step, a string to the line's end, a string
 * capture and the integer after its literal in one step; OP_END after the last item,
 * OP_BAD for a kind the matcher does not know (no match) */
enum { OP_LIT8, OP_LIT16, OP_LITN, OP_LIT8_INT, OP_LIT16_INT, OP_LIT8_HEX, OP_LIT16_HEX,
       OP_LIT8_STR, OP_LIT16_STR, OP_LIT8_STR_END, OP_LIT16_STR_END, OP_LIT8_STATE,
       OP_LIT16_STATE, OP_INT, OP_HEX, OP_STATE, OP_STR, OP_STR_INT, OP_STR_END, OP_END,
       OP_BAD, N_OPS };

#define MAX_ITEMS 48
#define MAX_SLOTS 32
#define MAX_UNPARSED_KEEP 10
#define MAX_CPUS 65536
/* a longer line is damage, never a trace line: it is counted as unparsed (text.py's
 * reader skips such a line without holding it when it is longer than a chunk) */
#define MAX_LINE_BYTES 65536
/* the lowest and highest timestamps kept for text.py's test of times far outside the
 * rest: EDGE - 1 candidates at each end, and the first of the bulk */
#define EDGE 11

/* ---------------------------------------------------------------------- GIL */

/* feed() scans with the GIL released, so that another Python thread can read and
 * decompress the next chunk meanwhile. The few places that touch Python objects
 * (a new event name, an unparsed line, errors) take it back
 * for the moment through gil_ensure()/gil_drop(). */
static __thread PyThreadState **tls_ts = NULL;

static inline int gil_ensure(void)
{
    if (tls_ts && *tls_ts) {
        PyEval_RestoreThread(*tls_ts);
        *tls_ts = NULL;
        return 1;
    }
    return 0;
}

static inline void gil_drop(int took)
{
    if (took) *tls_ts = PyEval_SaveThread();
}

#define NOMEM() do { int _t = gil_ensure(); PyErr_NoMemory(); gil_drop(_t); } while (0)

/* ------------------------------------------------------------------ columns */

/* A column's memory is the scanner's own: malloc'ed while small, an anonymous mapping
 * from COL_MAP_BYTES on, grown by mremap (which moves pages, not bytes: the copies of a
 * doubling realloc were 4% of a report line's instructions). finish() hands it to a
 * ColBuf, exported to Python as a writable memoryview (NumPy and Arrow read it without
 * a copy), which frees it when the last view goes. Growing needs no GIL. */
#define COL_MAP_BYTES ((size_t)64 << 10)

typedef struct {
    char *data;        /* NULL before the first row */
    size_t n, cap, elem;
    size_t mapped;     /* bytes mapped (page multiple), 0: malloc'ed */
} Col;

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
    size_t mapped;
} ColBuf;

static void col_release(char *data, size_t mapped)
{
    if (mapped) munmap(data, mapped);
    else free(data);
}

static void ColBuf_dealloc(ColBuf *b)
{
    col_release(b->data, b->mapped);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static int ColBuf_getbuffer(ColBuf *b, Py_buffer *view, int flags)
{
    static int64_t empty;          /* the address of no bytes (aligned for any type) */
    return PyBuffer_FillInfo(view, (PyObject *)b, b->data ? b->data : (char *)&empty, b->len,
                             0, flags);
}

static PyBufferProcs ColBuf_as_buffer = {(getbufferproc)ColBuf_getbuffer, NULL};

static PyTypeObject ColBufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "schedwake.ingest._textscan.ColumnBuffer",
    .tp_basicsize = sizeof(ColBuf),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)ColBuf_dealloc,
    .tp_as_buffer = &ColBuf_as_buffer,
    .tp_doc = "a column's values (read through a memoryview)",
};

static int col_init(Col *c, size_t elem)
{
    c->data = NULL;
    c->n = 0; c->cap = 0; c->elem = elem; c->mapped = 0;
    return 0;
}

/* the column's memory freed (after finish() it has none) */
static void col_free(Col *c)
{
    if (c->data) col_release(c->data, c->mapped);
    c->data = NULL; c->n = c->cap = 0; c->mapped = 0;
}

static int col_grow(Col *c, size_t need)
{
    size_t cap = c->cap ? c->cap : 1024;
    while (cap < need) cap *= 2;
    if (cap > (SIZE_MAX >> 1) / c->elem) { NOMEM(); return -1; }
    size_t bytes = cap * c->elem, old = c->cap * c->elem;
    char *d;
    if (bytes >= COL_MAP_BYTES) {
        size_t m = (bytes + 4095) & ~(size_t)4095;
        if (c->mapped) {
            d = mremap(c->data, c->mapped, m, MREMAP_MAYMOVE);
        } else {
            d = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (d != MAP_FAILED) {
                if (old) memcpy(d, c->data, old);
                free(c->data);
            }
        }
        if (d != MAP_FAILED) {
            c->data = d; c->cap = cap; c->mapped = m;
            return 0;
        }
        /* no further mapping (the process's limit of them, say): malloc'ed after all */
    }
    if (c->mapped) {
        d = malloc(bytes);
        if (!d) { NOMEM(); return -1; }
        memcpy(d, c->data, old);
        munmap(c->data, c->mapped);
        c->mapped = 0;
    } else {
        d = realloc(c->data, bytes);
        if (!d) { NOMEM(); return -1; }
    }
    c->data = d;
    c->cap = cap;
    return 0;
}

static inline char *col_ptr(Col *c) { return c->data; }

#define COL_PUSH(c, T, v) do { \
    if (__builtin_expect((c)->n >= (c)->cap, 0) && col_grow((c), (c)->n + 1) < 0) return -1; \
    ((T *)col_ptr(c))[(c)->n++] = (v); } while (0)

static int col_push_bytes(Col *c, const char *p, size_t len)
{
    if (len == 0) return 0;        /* (a column without rows yet has no memory) */
    if (c->n + len > c->cap && col_grow(c, c->n + len) < 0) return -1;
    memcpy(col_ptr(c) + c->n, p, len);
    c->n += len;
    return 0;
}

/* the bytes p[0:len] as UTF-8 text: invalid sequences become U+FFFD (_utf8.h) */
static int col_push_text(Col *c, const char *p, size_t len)
{
    if (utf8_valid(p, len)) return col_push_bytes(c, p, len);
    if (c->n + 3 * len > c->cap && col_grow(c, c->n + 3 * len) < 0) return -1;
    c->n += utf8_replace(p, len, col_ptr(c) + c->n);
    return 0;
}

/* the column's first n values as a memoryview (with the GIL), which takes its memory:
 * the column is left empty */
static PyObject *col_finish(Col *c)
{
    ColBuf *b = PyObject_New(ColBuf, &ColBufType);
    if (!b) return NULL;
    b->data = c->data; b->len = (Py_ssize_t)(c->n * c->elem); b->mapped = c->mapped;
    c->data = NULL; c->n = c->cap = 0; c->mapped = 0;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)b);
    Py_DECREF(b);
    return mv;
}

/* --------------------------------------------------------- string interning */

typedef struct {
    char *data; size_t dlen, dcap;     /* concatenated strings */
    size_t *off; uint32_t *len;        /* per id */
    int32_t *canon;                    /* per id: the id of its UTF-8 text (intern_text) */
    size_t n, ncap;
    int32_t *slots; size_t nslots;     /* open addressing; -1 = empty */
    uint32_t *hashes;
    /* intern_text's answers for strings of up to 24 bytes, which their length and
       first, second and last 8 bytes spell out whole: task names, most fields' words,
       event names and kernel function names such as workqueue_execute_start */
    struct { uint64_t a, b, c; uint32_t n1; int32_t id; } recent[256];   /* n1: n + 1; 0 = empty */
} Pool;

static inline uint64_t rd64(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* the bytes p[0:n] (n < 8) as a little-endian integer, without reading past them */
static inline uint64_t rd_tail(const char *p, size_t n)
{
    uint64_t v = 0;
    if (n & 4) { uint32_t w; memcpy(&w, p, 4); v = w; p += 4; }
    if (n & 2) { uint16_t w; memcpy(&w, p, 2); v |= (uint64_t)w << (8 * (n & 4)); p += 2; }
    if (n & 1) v |= (uint64_t)(unsigned char)*p << (8 * (n & 6));
    return v;
}

static inline uint32_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    size_t m = n;
    while (m >= 8) {
        h = (h ^ rd64(p)) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8; m -= 8;
    }
    /* the last 1-7 bytes: an overlapping word when the string is long enough */
    uint64_t v = m == 0 ? 0 : (n >= 8 ? rd64(p + m - 8) : rd_tail(p, m));
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

/* equality of short byte strings without a libc call */
static inline int eq_bytes(const char *a, const char *b, size_t n)
{
    if (n >= 8) {
        size_t m = n;
        while (m > 8) { if (rd64(a) != rd64(b)) return 0; a += 8; b += 8; m -= 8; }
        return rd64(a + m - 8) == rd64(b + m - 8);     /* overlapping last word */
    }
    return rd_tail(a, n) == rd_tail(b, n);
}

static inline int is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int is_space(int c) { return c == ' ' || c == '\t'; }

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* skip spaces, eight at a time where possible: in a word that is not all spaces, the
 * first other byte is found from its lowest set bit after an xor (little-endian) */
static inline const char *skip_spaces(const char *p, const char *end)
{
    while (end - p >= 8) {
        uint64_t w = rd64(p) ^ (0x20 * ONES);
        if (w == 0) { p += 8; continue; }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        p += __builtin_ctzll(w) >> 3;
        if (*p != '\t') return p;
#endif
        break;
    }
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* whether any of the 8 bytes of w is not an event name's byte other than ':' (that
 * is, is below 0x21, above 0x7e, or ':'). Each test is exact for "any byte" (a borrow
 * or carry can only spoil the bits above a byte that passes the test already). */
static inline uint64_t name_stop_mask(uint64_t w)
{
    uint64_t below = (w - 0x21 * ONES) & ~w;                 /* a byte < 0x21 */
    uint64_t above = (w + 0x01 * ONES) | w;                  /* a byte > 0x7e */
    uint64_t x = w ^ (0x3a * ONES);
    uint64_t colon = (x - ONES) & ~x;                        /* a byte == ':' */
    /* the lowest bit set is exact: a borrow or carry starts at a byte that stops */
    return (below | above | colon) & HIGHS;
}

/* p moved back over spaces and tabs, not below start: eight at a time where possible
 * (the spaces at a word's end are its highest bytes, little-endian) */
static inline const char *skip_spaces_back(const char *start, const char *p)
{
    while (p - start >= 8) {
        uint64_t w = rd64(p - 8) ^ (0x20 * ONES);
        if (w == 0) { p -= 8; continue; }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        p -= __builtin_clzll(w) >> 3;
        if (p[-1] != '\t') return p;
#endif
        break;
    }
    while (p > start && is_space(p[-1])) p--;
    return p;
}

/* the first space or tab of t[0:end - t], or end; bytes up to lim (the buffer's end,
 * >= end) may be read a word at a time */
static inline const char *find_space(const char *t, const char *end, const char *lim)
{
    while (t < end && lim - t >= 8) {
        uint64_t w = rd64(t);
        uint64_t a = w ^ (0x20 * ONES), b = w ^ (0x09 * ONES);
        uint64_t z = (((a - ONES) & ~a) | ((b - ONES) & ~b)) & HIGHS;
        if (z) { t += __builtin_ctzll(z) >> 3; return t < end ? t : end; }
        t += 8;
    }
    if (t > end) return end;
    while (t < end && !is_space(*t)) t++;
    return t;
}

static int pool_init(Pool *pl)
{
    memset(pl, 0, sizeof(*pl));
    pl->nslots = 1024;
    pl->slots = malloc(pl->nslots * sizeof(int32_t));
    if (!pl->slots) return -1;
    memset(pl->slots, 0xff, pl->nslots * sizeof(int32_t));
    return 0;
}

static void pool_free(Pool *pl)
{
    free(pl->data); free(pl->off); free(pl->len); free(pl->slots); free(pl->hashes);
    free(pl->canon);
    memset(pl, 0, sizeof(*pl));
}

static int pool_rehash(Pool *pl)
{
    size_t ns = pl->nslots * 2;
    int32_t *s = malloc(ns * sizeof(int32_t));
    if (!s) return -1;
    memset(s, 0xff, ns * sizeof(int32_t));
    for (size_t i = 0; i < pl->n; i++) {
        size_t k = pl->hashes[i] & (ns - 1);
        while (s[k] >= 0) k = (k + 1) & (ns - 1);
        s[k] = (int32_t)i;
    }
    free(pl->slots);
    pl->slots = s; pl->nslots = ns;
    return 0;
}

/* the bytes of string `id` (a pool of empty strings only has no buffer at all) */
static const char *pool_str(const Pool *pl, int32_t id)
{
    return pl->data ? pl->data + pl->off[id] : "";
}

/* id of the string p[0:n], adding it if new; -1 on memory error */
static int32_t pool_intern(Pool *pl, const char *p, size_t n)
{
    uint32_t h = hash_bytes(p, n);
    size_t mask = pl->nslots - 1, k = h & mask;
    for (;;) {
        int32_t id = pl->slots[k];
        if (id < 0) break;
        if (pl->hashes[id] == h && pl->len[id] == n && eq_bytes(pool_str(pl, id), p, n))
            return id;
        k = (k + 1) & mask;
    }
    if (pl->n >= pl->ncap) {
        size_t nc = pl->ncap ? pl->ncap * 2 : 1024;
        size_t *o = realloc(pl->off, nc * sizeof(size_t));
        if (!o) return -1;
        pl->off = o;
        uint32_t *l = realloc(pl->len, nc * sizeof(uint32_t));
        if (!l) return -1;
        pl->len = l;
        uint32_t *hh = realloc(pl->hashes, nc * sizeof(uint32_t));
        if (!hh) return -1;
        pl->hashes = hh;
        int32_t *cn = realloc(pl->canon, nc * sizeof(int32_t));
        if (!cn) return -1;
        pl->canon = cn;
        pl->ncap = nc;
    }
    if (pl->dlen + n > pl->dcap) {
        size_t dc = pl->dcap ? pl->dcap : 65536;
        while (dc < pl->dlen + n) dc *= 2;
        char *d = realloc(pl->data, dc);
        if (!d) return -1;
        pl->data = d; pl->dcap = dc;
    }
    if (n) memcpy(pl->data + pl->dlen, p, n);
    int32_t id = (int32_t)pl->n++;
    pl->off[id] = pl->dlen; pl->len[id] = (uint32_t)n; pl->hashes[id] = h;
    pl->canon[id] = id;
    pl->dlen += n;
    pl->slots[k] = id;
    if (pl->n * 2 > pl->nslots && pool_rehash(pl) < 0) return -1;
    return id;
}

/* id of the UTF-8 text of the bytes p[0:n]; -1 on memory error.  Bytes that are not
 * UTF-8 are interned as they are (so that the next time they cost one lookup, like
 * any string) and map to the id of their replaced text (U+FFFD per maximal invalid
 * subpart), which is what the columns get: the ids handed out always name valid
 * UTF-8, and byte strings with the same text share one id. */
static int32_t intern_text_slow(Pool *pl, const char *p, size_t n);

static inline __attribute__((always_inline)) int32_t intern_text(Pool *pl, const char *p, size_t n)
{
    if (n > 24)
        return intern_text_slow(pl, p, n);
    /* bytes 0-7, n-8 - n-1 and (above 16 bytes) 8-15 cover the string */
    uint64_t a = n >= 8 ? rd64(p) : rd_tail(p, n), b = n >= 8 ? rd64(p + n - 8) : 0;
    uint64_t c = n > 16 ? rd64(p + 8) : 0;
    size_t k = (size_t)(((a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xff51afd7ed558ccdULL) ^
                         (c * 0xc4ceb9fe1a85ec53ULL) ^ n) >> 56);
    if (pl->recent[k].n1 == n + 1 && pl->recent[k].a == a && pl->recent[k].b == b &&
        pl->recent[k].c == c)
        return pl->recent[k].id;
    int32_t id = intern_text_slow(pl, p, n);
    if (id >= 0) {
        pl->recent[k].a = a;
        pl->recent[k].b = b;
        pl->recent[k].c = c;
        pl->recent[k].n1 = (uint32_t)n + 1;
        pl->recent[k].id = id;
    }
    return id;
}

static int32_t intern_text_slow(Pool *pl, const char *p, size_t n)
{
    size_t before = pl->n;
    int32_t id = pool_intern(pl, p, n);
    if (id < 0) return -1;
    if ((size_t)id < before) return pl->canon[id];
    if (utf8_valid(p, n)) return id;
    char small[3 * 64], *fix = n <= 64 ? small : malloc(3 * n);
    if (!fix) return -1;
    int32_t cid = pool_intern(pl, fix, utf8_replace(p, n, fix));
    if (fix != small) free(fix);
    if (cid < 0) return -1;
    pl->canon[id] = cid;
    return cid;
}

/* ------------------------------------------------------------------ layouts */

typedef struct {
    int kind;
    char *lit; size_t litlen;
    int slot;
    int op;            /* variant_prepare: OP_* */
    /* set by variant_prepare: a literal's first 16 bytes as two little-endian words,
     * and the masks of the bytes it has (compared a word at a time where the buffer
     * has the bytes, whatever the line's end: the length is checked first) */
    uint64_t w[2], mk[2];
    uint64_t first8;   /* the literal's first byte in every byte (find_item_lit) */
} Item;

typedef struct {
    int nitems;
    int allow_trailing;
    Item items[MAX_ITEMS + 1];     /* and items[nitems].op = OP_END (variant_prepare) */
    uint32_t set;      /* variant_prepare: the slots a match sets (one bit each) */
} Variant;

typedef struct {
    int nslots;
    int slot_kind[MAX_SLOTS];
    int slot_width[MAX_SLOTS];     /* bytes per value in the column: 4 or 8 */
    uint32_t strmask;              /* the slots of kind K_STR or K_SYM */
    uint32_t w4mask;               /* the slots of width 4 */
    int nvariants;
    Variant *variants;
} Layout;

/* ------------------------------------------------------------------- events */

typedef struct {
    char *name;        /* table name (system stripped) */
    char *system;      /* "" when the text does not say */
    int64_t count;     /* every occurrence, read or not */
    int wanted;
    Layout *layout;    /* NULL: generic (raw args) */
    int cols_ready;
    Col ts, cpu, pid, comm, flags, pc, latv, variant;
    Col vals[MAX_SLOTS];           /* created at the first row that sets the slot */
    int64_t slot_start[MAX_SLOTS]; /* row of that creation; -1 = never set */
    int64_t nrows;
    int64_t rowcap;                /* rows every one-value-a-row column has room for */
    uint32_t started;              /* the slots whose column exists (slot_start >= 0) */
    Col args_off, args;            /* generic events, and bodies of known events */
    Col chain_off, frames;         /* callchains: per-row frame start, frame string ids */
    Col period, periodv;           /* perf script: the sample period, and whether printed */
    int64_t nframes;
    int has_chain;
} Event;

/* a timestamp at one end of the file's range: where and whose */
typedef struct {
    int64_t ts, lineno;
    int32_t cpu, event;
} Stamp;

/* the EDGE lowest (or highest) timestamps so far, and the index of the one to replace
 * next (the highest of the lowest, the lowest of the highest). `ordered`: v[worst],
 * v[worst + 1], ... (a ring) go outward, as a file in time order makes the highest */
typedef struct {
    Stamp v[EDGE];
    int n, worst, ordered;
} Edge;

/* lines of one kind of damage: how many, and the first one's line number */
typedef struct {
    int64_t n, first;
} Tally;

typedef struct {
    PyObject_HEAD
    int mode, flagmode;
    Pool strings;
    Pool evnames;                  /* key: "system:name" as printed */
    Event **events; size_t nevents, evcap;
    int32_t *evmap; size_t evmapcap; /* evnames id -> events index */
    PyObject *layouts;             /* dict name(bytes) -> Layout capsule */
    PyObject *wanted;              /* set of bytes, or None */
    /* state */
    int64_t lineno, lines_events, lines_comment, lines_blank, lines_unparsed, lines_frames;
    int64_t last_ts; int sorted; int64_t max_lost_cpu;
    int32_t last_ev; int64_t last_row;  /* for callchain frames */
    PyObject *unparsed;            /* list of (lineno, text) */
    Col lost_cpu, lost_count, lost_ts;
    int64_t *pending_lost; size_t npending; /* indexes into lost rows without ts */
    int any_lat;
    int any_frames;
    int nunparsed_kept;
    int ts_decimals;               /* of the first event line; -1 before it */
    size_t strings_sent;           /* pool strings already handed out by finish() */
    /* damage, counted here and judged by text.py */
    Tally overlong;                /* lines longer than MAX_LINE_BYTES */
    Tally nul;                     /* lines holding a NUL byte */
    Tally foreign;                 /* unparsed lines that parse in another layout (perf
                                      script text in ftrace text, or the reverse) */
    Tally style[2];                /* known events printed ftrace-style (one space after
                                      the name) / trace-cmd report-style (padded) */
    Tally restart;                 /* a trace's header again after events */
    Tally backwards;               /* events earlier than the one before on their CPU */
    int64_t cut_line;              /* the last line, without a line end (0: none) */
    /* per CPU: events, the first one's line and timestamp, the last one's timestamp */
    int64_t *cpu_events, *cpu_first, *cpu_first_ts, *cpu_prev_ts;
    size_t ncpu_cap;
    Edge lowest, highest;
    const char *bufend;            /* the end of the buffer feed() scans */
} Scanner;

static inline void tally(Tally *t, int64_t lineno)
{
    if (t->n++ == 0) t->first = lineno;
}

/* ------------------------------------------------------------- flag tables */

/* common_flags bits by character for the irqs-off, need-resched and hardirq/softirq
 * columns; -1 = not a flag char. Table 0: kernel printer (trace_print_lat_fmt);
 * table 1: libtraceevent (trace-cmd report). */
static int16_t FT[2][3][256];

static void init_match_tables(void);

static void init_flag_tables(void)
{
    init_match_tables();
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            for (int i = 0; i < 256; i++) FT[t][c][i] = -1;
            FT[t][c]['.'] = 0;
        }
    for (int t = 0; t < 2; t++) {
        FT[t][0]['d'] = 0x01; FT[t][0]['D'] = 0x81; FT[t][0]['b'] = 0x80; FT[t][0]['X'] = 0x02;
        FT[t][2]['h'] = 0x08; FT[t][2]['s'] = 0x10; FT[t][2]['H'] = 0x18;
        FT[t][2]['z'] = 0x40; FT[t][2]['Z'] = 0x48;
    }
    /* kernel: need-resched column (6.13+ adds the lazy bit 0x02) */
    FT[0][1]['N'] = 0x24; FT[0][1]['n'] = 0x04; FT[0][1]['p'] = 0x20;
    FT[0][1]['B'] = 0x26; FT[0][1]['L'] = 0x22; FT[0][1]['b'] = 0x06; FT[0][1]['l'] = 0x02;
    /* libtraceevent prints 'N' whenever NEED_RESCHED is set; it is almost always
     * set together with PREEMPT_RESCHED (the kernel's 'N'), so decode it the same */
    FT[1][1]['N'] = 0x24; FT[1][1]['n'] = 0x04; FT[1][1]['p'] = 0x20;
    FT[1][1]['B'] = 0x26; FT[1][1]['L'] = 0x22; FT[1][1]['b'] = 0x06; FT[1][1]['l'] = 0x02;
}

/* the letters of a prev_state: a bit each (STATE_LETTERS), 'R' and '|' none (-2), '+'
 * bit 15; -1: not a state letter */
static int8_t STATE_BIT[256];
/* hexval() of every byte (init_match_tables) */
static int8_t HEXV[256];

static inline int hexval(int c)
{
    /* one unsigned compare a range; c | 0x20 folds 'A'-'F' onto 'a'-'f' (and maps no
     * other byte there: only 'A'-'F' and 'a'-'f' become 'a'-'f') */
    unsigned d = (unsigned)c - '0';
    if (d < 10) return (int)d;
    unsigned l = ((unsigned)c | 0x20) - 'a';
    if (l < 6) return (int)l + 10;
    return -1;
}

/* decode a latency field of 4..6 chars; 0 on success */
static int decode_lat(int table, const char *p, size_t n, uint8_t *flags, uint8_t *pc)
{
    if (n < 4 || n > 6) return -1;
    int f = 0;
    for (int i = 0; i < 3; i++) {
        int v = FT[table][i][(unsigned char)p[i]];
        if (v < 0) return -1;
        f |= v;
    }
    int pcv = 0;
    if (p[3] != '.') { int h = hexval((unsigned char)p[3]); if (h < 0) return -1; pcv = h; }
    if (n >= 5 && p[4] != '.') {
        int h = hexval((unsigned char)p[4]); if (h < 0) return -1; pcv |= h << 4;
    }
    if (n == 6) {   /* PREEMPT_RT lazy column or similar: accept hex or '.' */
        if (p[5] != '.' && hexval((unsigned char)p[5]) < 0) return -1;
    }
    *flags = (uint8_t)f; *pc = (uint8_t)pcv;
    return 0;
}

/* ------------------------------------------------------------- state letters */

/* universal letter mask for prev_state text; Python maps masks to values */
static const char STATE_LETTERS[] = "SDTtXZPIKWxNL";

static int state_bit(int c)
{
    const char *q = strchr(STATE_LETTERS, c);
    if (!q || !c) return -1;
    return (int)(q - STATE_LETTERS);
}

/* ------------------------------------------------------------------ helpers */


/* bytes an event name is made of, other than ':' (printable ASCII but space and ':') */
static const unsigned char NAME_BYTE[256] = {
    [0x21] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x21-0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1,                                  /* 0x31-0x39 */
    [0x3b] = 1, 1, 1, 1, 1,                                     /* 0x3b-0x3f */
    [0x40] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,                /* 0x70-0x7e */
};

/* The leading digits of q[0:end - q] when there are fewer than 8, read as one word:
 * their count (0-7; their value in *val). -1: not told this way (the buffer holds
 * fewer than 8 bytes from q, up to lim, or 8 digits come first). Bytes past end may be
 * read (up to lim, inside the buffer); the callers' end, when below lim, is at a byte
 * that is no digit (a line's end, at its '\n', or the end of a line's text without its
 * trailing spaces, tabs and '\r'), so the digits stop there by themselves. */
/* inlined into the line loop whatever the compiler estimates: a cursor passed by
 * address then stays in a register */
#define HOT static inline __attribute__((always_inline))

HOT int digits8(const char *q, const char *end, const char *lim, uint64_t *val)
{
    if (lim - q < 8) return -1;
    uint64_t w = rd64(q);
    uint64_t d = w - 0x30 * ONES;
    /* the lowest byte flagged is exactly the first that is no digit: a borrow or a
     * carry starts only at such a byte, and spoils the bytes above it only */
    uint64_t nd = (d | (w + 0x46 * ONES) | w) & HIGHS;
    if (!nd) return -1;
    int k = __builtin_ctzll(nd) >> 3;
    if (k == 0) { *val = 0; return 0; }
    d <<= 8 * (8 - k);                          /* the digits, most significant first */
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFULL;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFULL;
    d = (d * 10000 + (d >> 32)) & 0xFFFFFFFFULL;
    *val = d;
    return k;
}

/* parse "123" or "123.456789" followed by ':'; returns ns (or raw counter). `lim`: how
 * far the buffer may be read (>= end) */
HOT int parse_ts_lim(const char *p, const char *end, const char *blim, int64_t *out,
                        const char **after, int *decimals)
{
    const char *q = p;
    int64_t sec = 0;
    *decimals = 0;
    uint64_t v8;
    int k = digits8(q, end, blim, &v8);         /* (q <= end: see digits8) */
    if (k > 0) { sec = (int64_t)v8; q += k; }
    else if (k == 0) return -1;                 /* no digit */
    else {
        if (q >= end || !is_digit(*q)) return -1;
        /* at most 18 digits: a 19th would overflow the multiplication. The bound is a
         * pointer set once, not a count checked a digit. */
        const char *lim = end - q > 18 ? q + 18 : end;
        while (q < lim && is_digit(*q)) { sec = sec * 10 + (*q - '0'); q++; }
        if (q < end && is_digit(*q)) return -1;
    }
    if (q < end && *q == '.') {
        static const int64_t scale[10] = {1000000000, 100000000, 10000000, 1000000, 100000,
                                          10000, 1000, 100, 10, 1};
        if (sec > 9000000000LL) return -1;      /* would overflow as nanoseconds */
        q++;
        int64_t frac = 0;
        int nd9, nd;
        k = digits8(q, end, blim, &v8);
        if (k >= 0) { frac = (int64_t)v8; q += k; nd9 = nd = k; }
        else {
            const char *f0 = q;
            /* the first 9 digits are the nanoseconds; any further ones are counted only */
            const char *lim = end - q > 9 ? q + 9 : end;
            while (q < lim && is_digit(*q)) { frac = frac * 10 + (*q - '0'); q++; }
            nd9 = (int)(q - f0);
            while (q < end && is_digit(*q)) q++;
            nd = (int)(q - f0);                 /* a line is at most 64 KiB */
        }
        if (nd == 0) return -1;
        *decimals = nd;
        frac *= scale[nd9];
        sec = sec * 1000000000LL + frac;
    }
    if (q >= end || *q != ':') return -1;
    *out = sec; *after = q + 1;
    return 0;
}

static int parse_ts(const char *p, const char *end, int64_t *out, const char **after, int *decimals)
{
    return parse_ts_lim(p, end, end, out, after, decimals);
}

HOT int parse_int_lim(const char *p, const char *end, const char *blim, int64_t *out,
                      const char **after)
{
    const char *q = p; int neg = 0; uint64_t v = 0;
    if (q < end && *q == '-') { neg = 1; q++; }
    uint64_t v8;
    int k = digits8(q, end, blim, &v8);         /* (q <= end: see digits8) */
    if (k > 0) { v = v8; q += k; }
    else if (k == 0) return -1;                 /* no digit */
    else {
        if (q >= end || !is_digit(*q)) return -1;
        /* 19 digits cannot overflow 64 bits (10^19 - 1 < 2^64): the overflow check (a
         * division a digit) is needed only from the 20th digit on */
        const char *lim = end - q > 19 ? q + 19 : end;
        while (q < lim && is_digit(*q)) { v = v * 10 + (uint64_t)(*q - '0'); q++; }
        while (q < end && is_digit(*q)) {
            uint64_t d = (uint64_t)(*q - '0');
            if (v > (UINT64_MAX - d) / 10) return -1;   /* more than 64 bits */
            v = v * 10 + d; q++;
        }
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    *after = q;
    return 0;
}

static int parse_int(const char *p, const char *end, int64_t *out, const char **after)
{
    return parse_int_lim(p, end, end, out, after);
}

/* the hex digits of the 8 bytes of w: a mask of the high bit of every byte that is one
 * (per byte exact: no carry crosses a byte), and the digits' values, a byte each */
static inline uint64_t hex8(uint64_t w, uint64_t *vals)
{
    uint64_t x = w & (0x7f * ONES);
    uint64_t l = x | (0x20 * ONES);                          /* 'A'-'F' -> 'a'-'f' */
    uint64_t digit = (x + (0x80 - 0x30) * ONES) & ~(x + (0x7f - 0x39) * ONES);
    uint64_t letter = (l + (0x80 - 0x61) * ONES) & ~(l + (0x7f - 0x66) * ONES);
    *vals = (w & (0x0f * ONES)) + ((letter & HIGHS) >> 7) * 9;
    return (digit | letter) & ~w & HIGHS;
}

/* k (1-8) hex digit values, a byte each, most significant first, as a number */
static inline uint64_t hex_join(uint64_t v, int k)
{
    if (k < 8) v <<= 8 * (8 - k);
    v = ((v << 4) + (v >> 8)) & 0x00FF00FF00FF00FFULL;
    v = ((v << 8) + (v >> 16)) & 0x0000FFFF0000FFFFULL;
    return ((v << 16) + (v >> 32)) & 0xFFFFFFFFULL;
}

HOT int parse_hex_lim(const char *p, const char *end, const char *blim, int64_t *out,
                      const char **after)
{
    const char *q = p; uint64_t v = 0; int nd = 0;
    if (end - q >= 6 && memcmp(q, "(null)", 6) == 0) { *out = 0; *after = q + 6; return 0; }
    if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) q += 2;
    if (blim - q >= 16) {
        /* sixteen bytes a word at a time: the digits end at the first byte that is none,
         * or at the line's end */
        uint64_t v0, v1;
        uint64_t h0 = hex8(rd64(q), &v0), h1 = hex8(rd64(q + 8), &v1);
        uint64_t not0 = ~h0 & HIGHS, not1 = ~h1 & HIGHS;
        int k = not0 ? __builtin_ctzll(not0) >> 3 : not1 ? 8 + (__builtin_ctzll(not1) >> 3) : 16;
        if (end - q < k) k = (int)(end - q);
        if (k == 0) return -1;
        if (k == 16 && end - q > 16 && HEXV[(unsigned char)q[16]] >= 0) return -1;   /* 17+ */
        if (k <= 8) v = hex_join(v0, k);
        else v = (hex_join(v0, 8) << (4 * (k - 8))) | hex_join(v1, k - 8);
        *out = (int64_t)v; *after = q + k;
        return 0;
    }
    const char *h0 = q;
    while (q < end) { int h = HEXV[(unsigned char)*q]; if (h < 0) break; v = (v << 4) | (uint64_t)h; q++; }
    nd = (int)(q - h0);                         /* a line is at most 64 KiB */
    if (nd == 0 || nd > 16) return -1;
    *out = (int64_t)v; *after = q;
    return 0;
}

static __attribute__((unused)) int parse_hex(const char *p, const char *end, int64_t *out,
                                            const char **after)
{
    return parse_hex_lim(p, end, end, out, after);
}

static const char *find_lit(const char *p, const char *end, const char *lit, size_t n)
{
    if (n == 0) return p;
    while (end - p >= (ptrdiff_t)n) {
        const char *q = memchr(p, lit[0], (size_t)(end - p) - n + 1);
        if (!q) return NULL;
        if (eq_bytes(q, lit, n)) return q;
        p = q + 1;
    }
    return NULL;
}

/* ------------------------------------------------------------ body matching */

typedef struct {
    int64_t val[MAX_SLOTS];
    const char *sp[MAX_SLOTS]; size_t sl[MAX_SLOTS];
    uint32_t set;  /* bit per slot */
    int budget;    /* string-capture ends left to try (MATCH_BUDGET) */
    const char *bufend;  /* the end of the buffer holding the line (NULL: the line's end):
                            bytes up to it may be read a word at a time, never used */
} Match;

/* A string capture ends at some occurrence of the literal after it; a line that holds
 * that literal many times (damage, or a hostile file) would make the backtracking
 * quadratic or worse in the line's length. Real lines need one or two tries a capture. */
#define MATCH_BUDGET 64

/* the words and masks of every literal, and the slots a match of the variant sets */
static void variant_prepare(Variant *v)
{
    v->set = 0;
    for (int i = 0; i < v->nitems; i++) {
        Item *it = &v->items[i];
        if (it->kind != K_LIT) {
            v->set |= 1u << it->slot;
            /* (a string capture not last is followed by a literal: compile_layout) */
            it->op = it->kind == K_INT ? OP_INT : it->kind == K_HEX ? OP_HEX
                   : it->kind == K_STATE ? OP_STATE
                   : (it->kind == K_STR || it->kind == K_SYM)
                       ? (i + 1 == v->nitems ? OP_STR_END
                          : i + 2 < v->nitems && v->items[i + 2].kind == K_INT ? OP_STR_INT
                          : OP_STR)
                   : OP_BAD;
            continue;
        }
        it->w[0] = it->w[1] = it->mk[0] = it->mk[1] = 0;
        for (size_t k = 0; k < it->litlen && k < 16; k++) {
            it->w[k / 8] |= (uint64_t)(unsigned char)it->lit[k] << (8 * (k % 8));
            it->mk[k / 8] |= (uint64_t)0xff << (8 * (k % 8));
        }
        it->first8 = (it->w[0] & 0xff) * ONES;
        /* the capture after the literal, matched in the same step */
        int then = i + 1 < v->nitems ? v->items[i + 1].kind : K_LIT;
        int str_end = i + 2 == v->nitems;
        static const int after8[] = {[K_LIT] = OP_LIT8, [K_INT] = OP_LIT8_INT, [K_HEX] = OP_LIT8_HEX,
                                     [K_STR] = OP_LIT8_STR, [K_SYM] = OP_LIT8_STR,
                                     [K_STATE] = OP_LIT8_STATE};
        static const int after16[] = {[K_LIT] = OP_LIT16, [K_INT] = OP_LIT16_INT,
                                      [K_HEX] = OP_LIT16_HEX, [K_STR] = OP_LIT16_STR,
                                      [K_SYM] = OP_LIT16_STR, [K_STATE] = OP_LIT16_STATE};
        if (then < K_LIT || then > K_STATE) then = K_LIT;    /* OP_BAD's own step fails */
        if (it->litlen == 0 || it->litlen > 16) it->op = OP_LITN;
        else {
            it->op = it->litlen <= 8 ? after8[then] : after16[then];
            if (str_end && (then == K_STR || then == K_SYM))
                it->op = it->litlen <= 8 ? OP_LIT8_STR_END : OP_LIT16_STR_END;
        }
    }
    v->items[v->nitems].op = OP_END;
}

/* whether the literal `it` is at p (p + its length <= end checked here; `lim`: how far
 * the buffer may be read) */
static inline int lit_at(const Item *it, const char *p, const char *end, const char *lim)
{
    size_t n = it->litlen;
    if ((size_t)(end - p) < n) return 0;
    if (n <= 8 && lim - p >= 8) return ((rd64(p) ^ it->w[0]) & it->mk[0]) == 0;
    if (n <= 16 && lim - p >= 16)
        return (((rd64(p) ^ it->w[0]) & it->mk[0]) | ((rd64(p + 8) ^ it->w[1]) & it->mk[1])) == 0;
    return eq_bytes(p, it->lit, n);
}

/* the first occurrence of the literal `it` (not empty) in p[0:end - p], or NULL */
HOT const char *find_item_lit(const char *q, const char *end, const char *lim, const Item *it)
{
    uint64_t pat = it->first8;
    int c = (unsigned char)pat;
    for (;;) {
        /* the first byte: eight at a time (the lowest byte flagged is exact) */
        while (q < end && lim - q >= 8) {
            uint64_t w = rd64(q) ^ pat;
            uint64_t t = (w - ONES) & ~w & HIGHS;
            if (t) { q += __builtin_ctzll(t) >> 3; goto found; }
            q += 8;
        }
        while (q < end && *q != c) q++;
    found:
        if (q >= end || (size_t)(end - q) < it->litlen) return NULL;
        if (lit_at(it, q, end, lim)) return q;
        q++;
    }
}


static void init_match_tables(void)
{
    for (int c = 0; c < 256; c++) {
        STATE_BIT[c] = (int8_t)state_bit(c);
        HEXV[c] = (int8_t)hexval(c);
    }
    STATE_BIT['R'] = STATE_BIT['|'] = -2;
    STATE_BIT['+'] = 15;
}

/* Match the items of v from item i on against p[0:end - p]. A string capture (not the
 * last item) ends at the first occurrence of the literal after it that lets the rest
 * match: on a failure further on, the latest capture takes its literal's next
 * occurrence (backtracking, without recursion), each try paid from m->budget. */
static int match_items(const Variant *v, int i, const char *p, const char *end, Match *m)
{
    /* threaded: every step jumps to the next item's step itself (an indirect jump of its
     * own, which the branch predictor learns per step), a literal and the capture after
     * it (or a string, its literal and the integer after) go in one step */
    static const void *const STEP[N_OPS] = {
        [OP_LIT8] = &&lit8, [OP_LIT16] = &&lit16, [OP_LITN] = &&litn,
        [OP_LIT8_INT] = &&lit8_int, [OP_LIT16_INT] = &&lit16_int,
        [OP_LIT8_HEX] = &&lit8_hex, [OP_LIT16_HEX] = &&lit16_hex,
        [OP_LIT8_STR] = &&lit8_str, [OP_LIT16_STR] = &&lit16_str,
        [OP_LIT8_STR_END] = &&lit8_str_end, [OP_LIT16_STR_END] = &&lit16_str_end,
        [OP_LIT8_STATE] = &&lit8_state, [OP_LIT16_STATE] = &&lit16_state,
        [OP_INT] = &&integer, [OP_HEX] = &&hex, [OP_STATE] = &&state, [OP_STR] = &&string,
        [OP_STR_INT] = &&string, [OP_STR_END] = &&string_end, [OP_END] = &&end_of_items,
        [OP_BAD] = &&bad,
    };
    const char *lim = m->bufend && m->bufend > end ? m->bufend : end;
    struct { int i; const char *start, *f; } bt[MAX_ITEMS];
    int nbt = 0;
    const Item *it = &v->items[i];
#define NEXT_STEP() do { it = &v->items[++i]; goto *STEP[it->op]; } while (0)
    /* the literal `it` (up to 8 or 16 bytes) at p, or fail; then the next item */
#define LIT8_STEP() do { \
        if ((size_t)(end - p) < it->litlen) goto fail; \
        if (lim - p >= 8 ? ((rd64(p) ^ it->w[0]) & it->mk[0]) != 0 \
                         : !eq_bytes(p, it->lit, it->litlen)) \
            goto fail; \
        p += it->litlen; it = &v->items[++i]; } while (0)
#define LIT16_STEP() do { \
        if ((size_t)(end - p) < it->litlen) goto fail; \
        if (lim - p >= 16 ? (((rd64(p) ^ it->w[0]) & it->mk[0]) | \
                             ((rd64(p + 8) ^ it->w[1]) & it->mk[1])) != 0 \
                          : !eq_bytes(p, it->lit, it->litlen)) \
            goto fail; \
        p += it->litlen; it = &v->items[++i]; } while (0)
    goto *STEP[it->op];
lit8: LIT8_STEP(); goto *STEP[it->op];
lit16: LIT16_STEP(); goto *STEP[it->op];
lit8_int: LIT8_STEP(); goto integer;
lit16_int: LIT16_STEP(); goto integer;
lit8_hex: LIT8_STEP(); goto hex;
lit16_hex: LIT16_STEP(); goto hex;
lit8_str: LIT8_STEP(); goto string;
lit16_str: LIT16_STEP(); goto string;
lit8_str_end: LIT8_STEP(); goto string_end;
lit16_str_end: LIT16_STEP(); goto string_end;
lit8_state: LIT8_STEP(); goto state;
lit16_state: LIT16_STEP(); goto state;
litn:
    if (!lit_at(it, p, end, lim)) goto fail;
    p += it->litlen;
    NEXT_STEP();
integer:
    if (parse_int_lim(p, end, lim, &m->val[it->slot], &p) < 0) goto fail;
    NEXT_STEP();
hex:
    if (parse_hex_lim(p, end, lim, &m->val[it->slot], &p) < 0) goto fail;
    NEXT_STEP();
state: {
        int64_t mask = 0; const char *q = p;
        while (q < end && !is_space(*q)) {
            int b = STATE_BIT[(unsigned char)*q];
            if (b >= 0) mask |= 1LL << b;
            else if (b == -1) goto fail;
            q++;
        }
        if (q == p) goto fail;
        m->val[it->slot] = mask;
        p = q;
        NEXT_STEP();
    }
string_end:
    m->sp[it->slot] = p; m->sl[it->slot] = (size_t)(end - p);
    p = end;
    NEXT_STEP();
string: {
        const Item *nx = it + 1;               /* compile guarantees a literal */
        if (--m->budget < 0) return 0;
        const char *f = find_item_lit(p, end, lim, nx);
        if (!f) goto fail;
        bt[nbt].i = i; bt[nbt].start = p; bt[nbt].f = f; nbt++;
        m->sp[it->slot] = p; m->sl[it->slot] = (size_t)(f - p);
        p = f + nx->litlen;                    /* the literal: matched already */
        if (it->op == OP_STR_INT) { i += 2; it += 2; goto integer; }
        i++;
        NEXT_STEP();
    }
end_of_items:
    if (p == end || (v->allow_trailing && is_space(*p))) { m->set = v->set; return 1; }
fail:
    for (;;) {
        if (nbt == 0) return 0;
        int k = bt[nbt - 1].i;
        const Item *nx = &v->items[k + 1];
        if (--m->budget < 0) return 0;
        const char *f = find_item_lit(bt[nbt - 1].f + 1, end, lim, nx);
        if (!f) { nbt--; continue; }
        bt[nbt - 1].f = f;
        const char *st = bt[nbt - 1].start;
        m->sp[v->items[k].slot] = st; m->sl[v->items[k].slot] = (size_t)(f - st);
        p = f + nx->litlen;
        i = k + 2;
        it = &v->items[i];
        goto *STEP[it->op];
    }
bad:
    return 0;
#undef NEXT_STEP
#undef LIT8_STEP
#undef LIT16_STEP
}

/* ------------------------------------------------------------- event table */

static int event_cols_init(Event *e)
{
    if (e->cols_ready) return 0;
    if (col_init(&e->ts, 8) || col_init(&e->cpu, 4) || col_init(&e->pid, 4) ||
        col_init(&e->comm, 4) || col_init(&e->flags, 1) || col_init(&e->pc, 1) ||
        col_init(&e->latv, 1) || col_init(&e->variant, 1) || col_init(&e->args_off, 8) ||
        col_init(&e->args, 1) || col_init(&e->chain_off, 8) || col_init(&e->frames, 4) ||
        col_init(&e->period, 8) || col_init(&e->periodv, 1))
        return -1;
    for (int s = 0; s < MAX_SLOTS; s++) e->slot_start[s] = -1;
    e->started = 0;
    e->rowcap = 0;
    e->cols_ready = 1;
    return 0;
}

/* room for twice the rows in every column of one value a row that this event fills
 * (the sample period's only in perf script text, the raw arguments' offsets only for
 * an event without a layout) */
static int event_grow_rows(Event *e, int mode)
{
    int64_t cap = e->rowcap ? 2 * e->rowcap : 1024;
    Col *cs[] = {&e->ts, &e->cpu, &e->pid, &e->comm, &e->flags, &e->pc, &e->latv,
                 &e->variant, &e->chain_off, &e->period, &e->periodv, &e->args_off};
    size_t ncs = sizeof(cs) / sizeof(cs[0]) - 3;
    if (mode == MODE_PERF) ncs += 2;
    for (size_t i = 0; i < ncs; i++)
        if ((size_t)cap > cs[i]->cap && col_grow(cs[i], (size_t)cap) < 0) return -1;
    if (!e->layout && (size_t)cap > e->args_off.cap && col_grow(&e->args_off, (size_t)cap) < 0)
        return -1;
    for (uint32_t t = e->started; t; t &= t - 1) {
        int sl = __builtin_ctz(t);
        size_t need = (size_t)(cap - e->slot_start[sl]);
        if (need > e->vals[sl].cap && col_grow(&e->vals[sl], need) < 0) return -1;
    }
    e->rowcap = cap;
    return 0;
}

/* the used lengths of the columns filled a row at a time (scan_line writes them by
 * row number), for col_finish() */
static void event_set_lengths(Event *e, int mode)
{
    size_t n = (size_t)e->nrows;
    Col *cs[] = {&e->ts, &e->cpu, &e->pid, &e->comm, &e->flags, &e->pc, &e->latv,
                 &e->variant, &e->chain_off};
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) cs[i]->n = n;
    e->period.n = e->periodv.n = mode == MODE_PERF ? n : 0;
    e->args_off.n = e->layout ? 0 : n;
    for (uint32_t t = e->started; t; t &= t - 1) {
        int sl = __builtin_ctz(t);
        e->vals[sl].n = n - (size_t)e->slot_start[sl];
    }
}

static void event_free(Event *e)
{
    if (!e) return;
    free(e->name); free(e->system);
    if (e->cols_ready) {
        Col *cs[] = {&e->ts, &e->cpu, &e->pid, &e->comm, &e->flags, &e->pc, &e->latv,
                     &e->variant, &e->args_off, &e->args, &e->chain_off, &e->frames,
                     &e->period, &e->periodv};
        for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) col_free(cs[i]);
        int ns = e->layout ? e->layout->nslots : 0;
        for (int s = 0; s < ns; s++) if (e->slot_start[s] >= 0) col_free(&e->vals[s]);
    }
    free(e);
}

/* drop the columns handed out by finish(); the event keeps its name and count */
static void event_reset(Event *e)
{
    if (!e->cols_ready) return;
    Col *cs[] = {&e->ts, &e->cpu, &e->pid, &e->comm, &e->flags, &e->pc, &e->latv,
                 &e->variant, &e->args_off, &e->args, &e->chain_off, &e->frames,
                 &e->period, &e->periodv};
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) col_free(cs[i]);
    int ns = e->layout ? e->layout->nslots : 0;
    for (int s = 0; s < ns; s++) if (e->slot_start[s] >= 0) col_free(&e->vals[s]);
    e->cols_ready = 0; e->nrows = 0; e->nframes = 0; e->has_chain = 0;
    e->started = 0; e->rowcap = 0;
}

static void layout_capsule_free(PyObject *cap)
{
    Layout *l = PyCapsule_GetPointer(cap, "textscan.layout");
    if (!l) return;
    for (int i = 0; i < l->nvariants; i++)
        for (int j = 0; j < l->variants[i].nitems; j++) free(l->variants[i].items[j].lit);
    free(l->variants);
    free(l);
}

/* find or create the event for the printed name p[0:n] */
static int32_t scanner_new_event(Scanner *s, const char *p, size_t n, int32_t id);

static int32_t scanner_event(Scanner *s, const char *p, size_t n)
{
    int32_t id = intern_text(&s->evnames, p, n);
    if (id < 0) { NOMEM(); return -1; }
    if ((size_t)id < s->evmapcap && s->evmap[id] >= 0) return s->evmap[id];
    int took = gil_ensure();
    /* the name's UTF-8 text, from the pool (not changed by a new event) */
    int32_t r = scanner_new_event(s, pool_str(&s->evnames, id),
                                  s->evnames.len[id], id);
    gil_drop(took);
    return r;
}

/* the length of a perf event name without its modifiers: perf script prints an event
 * recorded with modifiers as "cpu-clock:ppp" or "sched:sched_switch:u", and the
 * event is "cpu-clock" (the perf.data reader's name), not "ppp" of system "cpu-clock" */
static size_t without_modifiers(const char *p, size_t n)
{
    static const char MODIFIERS[] = "ukhIGHpPSDWeb";
    size_t i = n;
    while (i > 0 && p[i - 1] != ':' && strchr(MODIFIERS, p[i - 1])) i--;
    return i > 1 && i < n && p[i - 1] == ':' ? i - 1 : n;
}

/* a new event name (with the GIL held) */
static int32_t scanner_new_event(Scanner *s, const char *p, size_t n, int32_t id)
{
    if ((size_t)id >= s->evmapcap) {
        size_t nc = s->evmapcap ? s->evmapcap * 2 : 64;
        while (nc <= (size_t)id) nc *= 2;
        int32_t *m = realloc(s->evmap, nc * sizeof(int32_t));
        if (!m) { NOMEM(); return -1; }
        for (size_t i = s->evmapcap; i < nc; i++) m[i] = -1;
        s->evmap = m; s->evmapcap = nc;
    }
    Event *e = calloc(1, sizeof(Event));
    if (!e) { NOMEM(); return -1; }
    if (s->mode == MODE_PERF) n = without_modifiers(p, n);
    /* "sys:name" (perf) -> system, name */
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++) if (p[i] == ':') colon = p + i;
    const char *nm = colon ? colon + 1 : p;
    size_t nl = (size_t)(p + n - nm);
    e->name = malloc(nl + 1); memcpy(e->name, nm, nl); e->name[nl] = 0;
    size_t sl = colon ? (size_t)(colon - p) : 0;
    e->system = malloc(sl + 1); memcpy(e->system, p, sl); e->system[sl] = 0;
    PyObject *key = PyBytes_FromStringAndSize(e->name, (Py_ssize_t)nl);
    if (!key) { event_free(e); return -1; }
    PyObject *cap = PyDict_GetItem(s->layouts, key);   /* borrowed */
    e->layout = cap ? PyCapsule_GetPointer(cap, "textscan.layout") : NULL;
    if (s->wanted == Py_None) e->wanted = 1;
    else {
        int r = PySet_Contains(s->wanted, key);
        if (r < 0) { Py_DECREF(key); event_free(e); return -1; }
        e->wanted = r;
    }
    Py_DECREF(key);
    if (s->nevents >= s->evcap) {
        size_t nc = s->evcap ? s->evcap * 2 : 32;
        Event **ev = realloc(s->events, nc * sizeof(Event *));
        if (!ev) { event_free(e); NOMEM(); return -1; }
        s->events = ev; s->evcap = nc;
    }
    s->events[s->nevents] = e;
    s->evmap[id] = (int32_t)s->nevents;
    return (int32_t)s->nevents++;
}

/* --------------------------------------------------------------- line parse */

typedef struct {
    const char *comm; size_t commlen;
    int64_t pid, cpu, ts;
    int decimals;
    int haslat; uint8_t flags, pc;
    const char *ev; size_t evlen;
    int pad;                       /* spaces after the event name's ':' */
    int64_t period; int has_period;  /* perf script's sample period, when printed */
    const char *body, *bend;
    const char *lim;               /* the end of the buffer holding the line (NULL: the
                                      line's end): read a word at a time, never used */
} Prefix;

/* "comm-pid" ending at e (exclusive); 0 on success */
HOT int split_comm_pid(const char *b, const char *e, Prefix *px)
{
    const char *q = e;
    int64_t pid = 0;
    if (e - b >= 8) {
        /* the last eight bytes: which are digits, per byte exactly (no carry crosses a
         * byte), and fewer than 8 at the end: the pid from one word */
        uint64_t w = rd64(e - 8), x = w & (0x7f * ONES);
        uint64_t digit = (x + (0x80 - 0x30) * ONES) & ~(x + (0x7f - 0x39) * ONES) & ~w & HIGHS;
        uint64_t other = ~digit & HIGHS;
        if (other) {
            int k = __builtin_clzll(other) >> 3;          /* digits at the end */
            q = e - k;
            if (k == 0 || q[-1] != '-') return -1;   /* (q > b: a byte before is not one) */
            uint64_t d = (w & (0x0f * ONES)) & (~0ULL << (8 * (8 - k)));
            d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFULL;
            d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFULL;
            pid = (int64_t)((d * 10000 + (d >> 32)) & 0xFFFFFFFFULL);
            goto done;
        }
    }
    while (q > b && is_digit(q[-1])) q--;
    if (q == e || q == b || q[-1] != '-' || e - q > 10) return -1;
    for (const char *r = q; r < e; r++) pid = pid * 10 + (*r - '0');
done:
    if (pid > INT32_MAX) return -1;            /* not a pid: the column is int32 */
    px->pid = pid;
    px->comm = b; px->commlen = (size_t)(q - 1 - b);
    return 0;
}

/* after the timestamp's ':' : optional --ts-diff "(+N)" / perf period, event name, body */
HOT int parse_event_part(const char *p, const char *end, Prefix *px, int mode)
{
    while (p < end && is_space(*p)) p++;
    if (p < end && *p == '(') {                /* trace-cmd --ts-diff */
        const char *q = memchr(p, ')', (size_t)(end - p));
        if (!q) return -1;
        p = q + 1;
        while (p < end && is_space(*p)) p++;
    }
    px->has_period = 0;
    if (mode == MODE_PERF) {                   /* optional period */
        const char *q = p;
        while (q < end && is_digit(*q)) q++;
        if (q > p && q < end && is_space(*q)) {
            if (parse_int(p, q, &px->period, &q) < 0) return -1;
            px->has_period = 1;
            p = q;
            while (p < end && is_space(*p)) p++;
        }
    }
    const char *ev = p;
    /* One table look-up a byte for the common case (a printable ASCII byte that is not
     * ':'); the three rarer stops (space, ':', anything else) are told apart only once
     * the run ends, which halves this loop's instructions a line. */
    const char *lim = px->lim && px->lim > end ? px->lim : end;
    for (;;) {
        /* eight bytes at a time (up to the buffer's end), the first stop exact */
        while (p < end && lim - p >= 8) {
            uint64_t st = name_stop_mask(rd64(p));
            if (st) { p += __builtin_ctzll(st) >> 3; break; }
            p += 8;
        }
        if (p > end) p = end;
        while (p < end && NAME_BYTE[(unsigned char)*p]) p++;
        if (p >= end || is_space(*p)) break;
        if (*p != ':') return -1;              /* names are ASCII */
        if (p + 1 == end || is_space(p[1])) break;
        p++;                                   /* a ':' inside the name (sched:sched_switch) */
    }
    if (p >= end || *p != ':' || p == ev) return -1;
    px->ev = ev; px->evlen = (size_t)(p - ev);
    p++;
    const char *pad = p;
    p = skip_spaces(p, end);
    px->pad = (int)(p - pad);
    px->body = p;
    const char *be = end;
    while (be > p && (is_space(be[-1]) || be[-1] == '\r')) be--;
    px->bend = be;
    return 0;
}

HOT int parse_bracketed(Scanner *s, const char *start, const char *end, const char *br,
                           const char *r, Prefix *px);
static int parse_latency_layout(Scanner *s, const char *start, const char *end, Prefix *px);

/* `skipped`: b is past the line's leading spaces and tabs already */
HOT int parse_prefix_hot(Scanner *s, const char *b, const char *end, Prefix *px, int skipped)
{
    px->haslat = 0;
    px->lim = s->bufend && s->bufend > end ? s->bufend : end;
    const char *p = skipped ? b : skip_spaces(b, end);
    const char *start = p;
    /* the "[ddd]" CPU bracket, preceded by a space: the first one that gives a valid
     * line (a comm or an event's text may hold such a bracket too) */
    const char *q = p;
    int tries = 0;
    while ((q = memchr(q, '[', (size_t)(end - q))) != NULL && tries < 4) {
        const char *r = q + 1;
        uint64_t cpu = 0;   /* (unsigned: a long run of digits wraps, and is no CPU) */
        int k = digits8(r, end, px->lim, &cpu);     /* fewer than 8 digits: one word */
        if (k >= 0) r += k;
        else
            while (r < end && is_digit(*r)) { cpu = cpu * 10 + (uint64_t)(*r - '0'); r++; }
        if (r > q + 1 && r - q <= 7 && r < end && *r == ']' && q > start && is_space(q[-1])) {
            px->cpu = (int64_t)cpu;
            if (parse_bracketed(s, start, end, q, r, px) == 0) return 0;
            tries++;
        }
        q++;
    }
    px->haslat = 0;
    return parse_latency_layout(s, start, end, px);
}

static int parse_prefix(Scanner *s, const char *b, const char *end, Prefix *px)
{
    return parse_prefix_hot(s, b, end, px, 0);
}

/* the line with its CPU in the bracket br[0:r - br + 1] (px->cpu set already) */
HOT int parse_bracketed(Scanner *s, const char *start, const char *end, const char *br,
                           const char *r, Prefix *px)
{
    const char *p;
    {
        const char *after = r + 1;
        /* left side */
        const char *le = skip_spaces_back(start, br);
        if (le > start && le[-1] == ')') {      /* (tgid) before the CPU */
            const char *o = le - 1;
            while (o > start && *o != '(') o--;
            if (*o != '(') return -1;
            le = o;
            while (le > start && is_space(le[-1])) le--;
        }
        if (s->mode == MODE_PERF) {
            const char *pe = le;
            const char *ps = pe;
            while (ps > start && (is_digit(ps[-1]) || ps[-1] == '/' || ps[-1] == '-')) ps--;
            if (ps == pe) return -1;
            /* pid or pid/tid: common_pid is the tid (the last number) */
            const char *t = pe;
            while (t > ps && is_digit(t[-1])) t--;
            if (t == pe || pe - t > 10) return -1;
            int64_t v = 0;
            for (const char *x = t; x < pe; x++) v = v * 10 + (*x - '0');
            if (v > INT32_MAX) return -1;      /* not a pid: the column is int32 */
            if (t > ps && t[-1] == '-') v = -v;
            px->pid = v;
            const char *ce = ps;
            while (ce > start && is_space(ce[-1])) ce--;
            if (ce == ps && ps != start) return -1;
            px->comm = start; px->commlen = (size_t)(ce - start);
        } else {
            if (split_comm_pid(start, le, px) < 0) return -1;
        }
        /* right side: optional (tgid), optional flags, timestamp */
        p = skip_spaces(after, end);
        if (p < end && *p == '(') {
            const char *c = memchr(p, ')', (size_t)(end - p));
            if (!c) return -1;
            p = skip_spaces(c + 1, end);
        }
        /* no latency column: the token is the timestamp (a flags token never starts
         * with a digit). Parsed once when it ends at its ':' as the token does; any
         * other token takes the general way below. */
        if (p < end && is_digit(*p)) {
            const char *a;
            if (parse_ts_lim(p, end, px->lim, &px->ts, &a, &px->decimals) == 0 &&
                (a == end || is_space(*a)))
                return parse_event_part(a, end, px, s->mode);
        }
        const char *t = find_space(p, end, px->lim);
        if (t > p && t[-1] != ':') {            /* latency flags */
            if (decode_lat(s->flagmode, p, (size_t)(t - p), &px->flags, &px->pc) < 0) return -1;
            px->haslat = 1;
            p = skip_spaces(t, end);
        }
        if (parse_ts_lim(p, end, px->lim, &px->ts, &p, &px->decimals) < 0) return -1;
        return parse_event_part(p, end, px, s->mode);
    }
}

/* latency layout (trace-cmd report -l, ftrace latency-format):
 * "comm-pid  <cpu><flags>  ts: event: body" */
static int parse_latency_layout(Scanner *s, const char *start, const char *end, Prefix *px)
{
    const char *p;
    {
        /* find timestamp token: " digits[.digits]: " */
        const char *t = start;
        for (;;) {
            t = memchr(t, ':', (size_t)(end - t));
            if (!t) return -1;
            if (t + 1 < end && !is_space(t[1])) { t++; continue; }
            const char *d = t;
            while (d > start && (is_digit(d[-1]) || d[-1] == '.')) d--;
            if (d < t && d > start && is_space(d[-1]) && is_digit(*d)) {
                /* token before: <cpu><flags> */
                const char *fe = d;
                while (fe > start && is_space(fe[-1])) fe--;
                const char *fs = fe;
                while (fs > start && !is_space(fs[-1])) fs--;
                const char *c = fs; int64_t cpu = 0;
                while (c < fe && is_digit(*c) && c - fs < 7) { cpu = cpu * 10 + (*c - '0'); c++; }
                if (c == fs) return -1;
                if (fe - c >= 4) {
                    if (decode_lat(s->flagmode, c, (size_t)(fe - c), &px->flags, &px->pc) < 0) return -1;
                    px->haslat = 1;
                } else if (fe != c) return -1;
                px->cpu = cpu;
                const char *le = fs;
                while (le > start && is_space(le[-1])) le--;
                if (split_comm_pid(start, le, px) < 0) return -1;
                if (parse_ts(d, end, &px->ts, &p, &px->decimals) < 0) return -1;
                return parse_event_part(p, end, px, s->mode);
            }
            t++;
        }
    }
}

/* "CPU:N [LOST M EVENTS]", "CPU:N [LOST EVENTS]" (the kernel's print_trace_line() when
 * the count is unknown), "CPU:N [M EVENTS DROPPED]", "CPU:N [EVENTS DROPPED]" */
static int parse_lost(const char *p, const char *end, int64_t *cpu, int64_t *count)
{
    if (end - p < 5 || memcmp(p, "CPU:", 4) != 0) return -1;
    p += 4;
    if (parse_int(p, end, cpu, &p) < 0) return -1;
    while (p < end && is_space(*p)) p++;
    if (p >= end || *p != '[') return -1;
    p++;
    if (end - p >= 12 && memcmp(p, "LOST EVENTS]", 12) == 0) { *count = -1; return 0; }
    if (end - p >= 5 && memcmp(p, "LOST ", 5) == 0) {
        p += 5;
        if (parse_int(p, end, count, &p) < 0) return -1;
        return 0;
    }
    if (end - p >= 14 && memcmp(p, "EVENTS DROPPED", 14) == 0) { *count = -1; return 0; }
    if (parse_int(p, end, count, &p) < 0) return -1;
    if (end - p >= 15 && memcmp(p, " EVENTS DROPPED", 15) == 0) return 0;
    return -1;
}

/* perf script --show-lost-events: "COMM PID [CPU] TS: PERF_RECORD_LOST lost N" (the
 * count of the perf ring buffer's PERF_RECORD_LOST; PERF_RECORD_LOST_SAMPLES, which
 * newer perf versions also print, repeats those losses per event and is not counted) */
static int parse_perf_lost(const char *p, const char *end, int64_t *cpu, int64_t *count)
{
    static const char lit[] = ": PERF_RECORD_LOST lost ";
    const char *q = find_lit(p, end, lit, sizeof(lit) - 1);
    if (!q) return -1;
    const char *r = q + sizeof(lit) - 1;
    if (parse_int(r, end, count, &r) < 0) return -1;
    const char *o = q;
    while (o > p && *o != '[') o--;
    if (*o != '[') return -1;
    o++;
    if (parse_int(o, q, cpu, &o) < 0 || o >= q || *o != ']') return -1;
    return 0;
}

static int note_unparsed_gil(Scanner *s, const char *b, const char *e);

static int note_unparsed(Scanner *s, const char *b, const char *e)
{
    s->lines_unparsed++;
    if (s->nunparsed_kept >= MAX_UNPARSED_KEEP) return 0;
    s->nunparsed_kept++;
    int took = gil_ensure();
    int r = note_unparsed_gil(s, b, e);
    gil_drop(took);
    return r;
}

static int note_unparsed_gil(Scanner *s, const char *b, const char *e)
{
    {
        if (e - b > 300) e = b + 300;
        PyObject *u = PyUnicode_DecodeUTF8(b, (Py_ssize_t)(e - b), "replace");
        PyObject *t = u ? Py_BuildValue("(LN)", (long long)s->lineno, u) : NULL;
        if (!t) return -1;
        int r = PyList_Append(s->unparsed, t);
        Py_DECREF(t);
        if (r < 0) return -1;
    }
    return 0;
}

/* a lost-events line's CPU and count (-1: unknown) as a CPU and a count can be */
static int lost_in_range(int64_t cpu, int64_t count)
{
    return cpu >= 0 && cpu < MAX_CPUS && count >= -1;
}

static int push_lost(Scanner *s, int64_t cpu, int64_t count)
{
    COL_PUSH(&s->lost_cpu, int32_t, (int32_t)cpu);
    COL_PUSH(&s->lost_count, int64_t, count);
    COL_PUSH(&s->lost_ts, int64_t, -1);
    int64_t *pl = realloc(s->pending_lost, (s->npending + 1) * sizeof(int64_t));
    if (!pl) { NOMEM(); return -1; }
    s->pending_lost = pl;
    s->pending_lost[s->npending++] = (int64_t)s->lost_cpu.n - 1;
    if (cpu > s->max_lost_cpu) s->max_lost_cpu = cpu;
    return 0;
}

static void resolve_lost(Scanner *s, int64_t cpu, int64_t ts)
{
    size_t j = 0;
    int32_t *lc = (int32_t *)col_ptr(&s->lost_cpu);
    int64_t *lt = (int64_t *)col_ptr(&s->lost_ts);
    for (size_t i = 0; i < s->npending; i++) {
        int64_t r = s->pending_lost[i];
        if (lc[r] == cpu) lt[r] = ts;
        else s->pending_lost[j++] = r;
    }
    s->npending = j;
}

static int is_frame_line(const char *b, const char *e)
{
    if (b >= e || !is_space(*b)) return 0;
    const char *p = b;
    while (p < e && is_space(*p)) p++;
    const char *h = p;
    while (p < e && hexval((unsigned char)*p) >= 0) p++;
    return p > h && p < e && *p == ' ';
}

static int add_frame(Scanner *s, const char *b, const char *e)
{
    if (s->last_ev < 0) return 1;   /* frame without a sample: unparsed */
    Event *ev = s->events[s->last_ev];
    if (!ev->wanted || !ev->cols_ready) return 0;
    while (b < e && is_space(*b)) b++;
    while (e > b && (is_space(e[-1]) || e[-1] == '\r')) e--;
    int32_t id = intern_text(&s->strings, b, (size_t)(e - b));
    if (id < 0) { NOMEM(); return -1; }
    COL_PUSH(&ev->frames, int32_t, id);
    ev->nframes++;
    ev->has_chain = 1;
    s->any_frames = 1;
    return 0;
}

/* ------------------------------------------------------------------ damage */

static int cpu_arrays_grow(Scanner *s, size_t need)
{
    size_t cap = s->ncpu_cap ? s->ncpu_cap : 64;
    while (cap < need) cap *= 2;
    int64_t **arrays[] = {&s->cpu_events, &s->cpu_first, &s->cpu_first_ts, &s->cpu_prev_ts};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
        int64_t *a = realloc(*arrays[i], cap * sizeof(int64_t));
        if (!a) { NOMEM(); return -1; }
        memset(a + s->ncpu_cap, 0, (cap - s->ncpu_cap) * sizeof(int64_t));
        *arrays[i] = a;
    }
    s->ncpu_cap = cap;
    return 0;
}

/* whether a is further out than b: lower (lowest) or higher (highest) */
static inline int edge_outer(const Stamp *a, const Stamp *b, int lowest)
{
    return lowest ? a->ts < b->ts : a->ts > b->ts;
}

HOT void edge_note(Edge *e, const Stamp *st, int lowest)
{
    if (e->n < EDGE) {
        e->v[e->n++] = *st;
        if (e->n < EDGE) return;
        e->ordered = 1;
        for (int i = 0; i + 1 < EDGE; i++)
            if (edge_outer(&e->v[i], &e->v[i + 1], lowest)) e->ordered = 0;
        if (e->ordered) { e->worst = 0; return; }
    } else if (e->ordered && !edge_outer(&e->v[e->worst ? e->worst - 1 : EDGE - 1], st, lowest)) {
        /* the outermost yet (every line of a file in time order, for the highest): it
         * takes the place of the innermost, and the next one in the ring is the worst */
        e->v[e->worst] = *st;
        e->worst = e->worst + 1 == EDGE ? 0 : e->worst + 1;
        return;
    } else if (edge_outer(st, &e->v[e->worst], lowest)) {
        e->v[e->worst] = *st;
        e->ordered = 0;
    } else
        return;
    int w = 0;
    for (int i = 1; i < EDGE; i++)
        if (edge_outer(&e->v[w], &e->v[i], lowest)) w = i;
    e->worst = w;
}

/* an event's CPU and time: events per CPU, the CPU's first line, time going back on
 * its CPU (which no text layout prints: every CPU's buffer is in time order), and
 * the file's lowest and highest timestamps */
static int note_cpu_time(Scanner *s, const Prefix *px, int32_t ei)
{
    size_t cpu = (size_t)px->cpu;      /* 0 <= cpu < MAX_CPUS */
    if (cpu >= s->ncpu_cap && cpu_arrays_grow(s, cpu + 1) < 0) return -1;
    if (s->cpu_events[cpu]++ == 0) {
        s->cpu_first[cpu] = s->lineno;
        s->cpu_first_ts[cpu] = px->ts;
    } else if (px->ts < s->cpu_prev_ts[cpu]) tally(&s->backwards, s->lineno);
    s->cpu_prev_ts[cpu] = px->ts;
    Stamp st = {px->ts, s->lineno, (int32_t)cpu, ei};
    /* a full edge takes nothing further in than its worst (edge_note would return at
     * once): one compare a line for the end the timestamp is not near */
    if (s->lowest.n < EDGE || st.ts <= s->lowest.v[s->lowest.worst].ts)
        edge_note(&s->lowest, &st, 1);
    if (s->highest.n < EDGE || st.ts >= s->highest.v[s->highest.worst].ts)
        edge_note(&s->highest, &st, 0);
    return 0;
}

/* whether an unparsed line is a line of the other layout: perf script text among
 * ftrace or trace-cmd report text, or the reverse (two traces in one file) */
static int other_layout(Scanner *s, const char *p, const char *e)
{
    int mode = s->mode;
    Prefix px;
    s->mode = mode == MODE_PERF ? MODE_FTRACE : MODE_PERF;
    int r = parse_prefix(s, p, e, &px) == 0 && px.cpu < MAX_CPUS;
    s->mode = mode;
    return r;
}

/* the first line of a trace's header ("# tracer: ..." of ftrace, "# ====..." of perf
 * script --header); "cpus=N" of trace-cmd report is seen in scan_line */
static int is_header_start(const char *b, const char *e)
{
    return (e - b >= 9 && memcmp(b, "# tracer:", 9) == 0) ||
           (e - b >= 10 && memcmp(b, "# ========", 10) == 0);
}

static int scan_line(Scanner *s, const char *b, const char *e)
{
    const char *p = skip_spaces(b, e);
    if (p == e || (p + 1 == e && *p == '\r')) { s->lines_blank++; s->last_ev = (s->mode == MODE_PERF) ? -1 : s->last_ev; return 0; }
    if (*p == '#' && p == b) {
        s->lines_comment++;
        if (s->lines_events && is_header_start(b, e)) tally(&s->restart, s->lineno);
        return 0;
    }
    if (s->mode == MODE_PERF && is_frame_line(b, e)) {
        Prefix tmp;
        if (parse_prefix(s, b, e, &tmp) < 0) {
            int r = add_frame(s, b, e);
            if (r < 0) return -1;
            if (r == 0) { s->lines_frames++; return 0; }
            return note_unparsed(s, b, e);
        }
    }
    if (s->mode == MODE_REPORT && p == b) {
        if (e - b >= 5 && memcmp(b, "cpus=", 5) == 0) {
            s->lines_comment++;
            if (s->lines_events) tally(&s->restart, s->lineno);
            return 0;
        }
        /* instance prefix "NAME: " */
        const char *t = b;
        while (t < e && !is_space(*t)) t++;
        if (t > b + 1 && t[-1] == ':' && t < e && !(t - b >= 4 && memcmp(b, "CPU:", 4) == 0)) {
            p = t;
            while (p < e && is_space(*p)) p++;
        }
    }
    int64_t lcpu, lcount;
    if (*p == 'C' && e - p > 12 && memcmp(p, "CPU ", 4) == 0 && e - p < 24 &&
        find_lit(p, e, " is empty", 9)) {      /* trace-cmd report: "CPU 3 is empty" */
        s->lines_comment++;
        return 0;
    }
    if (*p == 'C' && parse_lost(p, e, &lcpu, &lcount) == 0 && lost_in_range(lcpu, lcount)) {
        s->lines_comment++;
        return push_lost(s, lcpu, lcount);
    }
    Prefix px;
    if (parse_prefix_hot(s, p, e, &px, 1) < 0 || px.cpu >= MAX_CPUS) {   /* (inlined here) */
        if (s->mode == MODE_PERF && parse_perf_lost(p, e, &lcpu, &lcount) == 0 &&
            lost_in_range(lcpu, lcount)) {
            s->lines_comment++;
            return push_lost(s, lcpu, lcount);
        }
        if (other_layout(s, p, e)) tally(&s->foreign, s->lineno);
        return note_unparsed(s, b, e);
    }
    int32_t ei = scanner_event(s, px.ev, px.evlen);
    if (ei < 0) return -1;
    Event *ev = s->events[ei];
    Match m;
    m.set = 0;
    int vi = -1;
    if (ev->layout) {    /* (also when not wanted: a line that is not an event is no count) */
        for (int i = 0; i < ev->layout->nvariants; i++) {
            m.set = 0;
            m.budget = MATCH_BUDGET;
            m.bufend = s->bufend;
            if (match_items(&ev->layout->variants[i], 0, px.body, px.bend, &m)) { vi = i; break; }
        }
        if (vi < 0) { s->last_ev = -1; return note_unparsed(s, b, e); }
    }
    ev->count++;
    if (s->mode != MODE_PERF && ev->layout && px.evlen <= 18)
        tally(&s->style[px.pad >= 2], s->lineno);   /* report pads names to 20 columns */
    if (note_cpu_time(s, &px, ei) < 0) return -1;
    if (s->lines_events++ == 0) s->ts_decimals = px.decimals;
    if (px.ts < s->last_ts) s->sorted = 0;
    else s->last_ts = px.ts;
    if (s->npending) resolve_lost(s, px.cpu, px.ts);
    if (!ev->wanted) { s->last_ev = ei; return 0; }
    if (event_cols_init(ev) < 0) return -1;
    int32_t cid = intern_text(&s->strings, px.comm, px.commlen);
    if (cid < 0) { NOMEM(); return -1; }
    /* one capacity check a row for every column of one value a row */
    if (__builtin_expect(ev->nrows >= ev->rowcap, 0) && event_grow_rows(ev, s->mode) < 0)
        return -1;
    int64_t row = ev->nrows;
#define AT(c, T) (((T *)(c).data)[row])
    AT(ev->ts, int64_t) = px.ts;
    AT(ev->cpu, int32_t) = (int32_t)px.cpu;
    AT(ev->pid, int32_t) = (int32_t)px.pid;
    AT(ev->comm, int32_t) = cid;
    AT(ev->flags, uint8_t) = px.haslat ? px.flags : 0;
    AT(ev->pc, uint8_t) = px.haslat ? px.pc : 0;
    AT(ev->latv, uint8_t) = (uint8_t)px.haslat;
    AT(ev->variant, int8_t) = (int8_t)vi;
    AT(ev->chain_off, int64_t) = ev->nframes;
    if (s->mode == MODE_PERF) {
        AT(ev->period, int64_t) = px.has_period ? px.period : 0;
        AT(ev->periodv, uint8_t) = (uint8_t)px.has_period;
    }
    if (px.haslat) s->any_lat = 1;
    if (ev->layout) {
        const Layout *L = ev->layout;
        uint32_t set = m.set;
        /* the slots set for the first time: their columns start at this row */
        for (uint32_t nw = set & ~ev->started; nw; nw &= nw - 1) {
            int sl = __builtin_ctz(nw);
            if (col_init(&ev->vals[sl], (size_t)L->slot_width[sl]) < 0 ||
                col_grow(&ev->vals[sl], (size_t)(ev->rowcap - row)) < 0)
                return -1;
            ev->slot_start[sl] = row;
            ev->started |= 1u << sl;
        }
        /* the strings' ids, in slot order (the order strings enter the pool) */
        for (uint32_t t = set & L->strmask; t; t &= t - 1) {
            int sl = __builtin_ctz(t);
            const char *sp = m.sp[sl]; size_t sn = m.sl[sl];
            while (sn && is_space(sp[sn - 1])) sn--;
            if (L->slot_kind[sl] == K_SYM && sn > 2 && sp[sn - 1] == ']') {   /* "sym [module]" */
                const char *o = sp + sn - 1;
                while (o > sp && *o != '[') o--;
                if (o > sp && o[-1] == ' ') sn = (size_t)(o - 1 - sp);
            }
            int32_t id = intern_text(&s->strings, sp, sn);
            if (id < 0) { NOMEM(); return -1; }
            m.val[sl] = id;
        }
        /* every started slot gets a value: 0 where this row's variant has none */
        uint32_t started = ev->started;
        for (uint32_t t = started & ~set; t; t &= t - 1) m.val[__builtin_ctz(t)] = 0;
        for (uint32_t t = started & L->w4mask; t; t &= t - 1) {
            int sl = __builtin_ctz(t);
            ((int32_t *)ev->vals[sl].data)[row - ev->slot_start[sl]] = (int32_t)(uint32_t)m.val[sl];
        }
        for (uint32_t t = started & ~L->w4mask; t; t &= t - 1) {
            int sl = __builtin_ctz(t);
            ((int64_t *)ev->vals[sl].data)[row - ev->slot_start[sl]] = m.val[sl];
        }
    } else {
        AT(ev->args_off, int64_t) = (int64_t)ev->args.n;
        if (col_push_text(&ev->args, px.body, (size_t)(px.bend - px.body)) < 0) return -1;
    }
#undef AT
    ev->nrows++;
    s->last_ev = ei;
    return 0;
}

/* ------------------------------------------------------------- Python glue */

static int compile_layout(PyObject *spec, Layout **out)
{
    /* spec: (slot_kinds: tuple[int: kind | bytes << 8], variants: list[(allow_trailing, items)]),
     * items: tuple of (kind, literal bytes, slot) */
    PyObject *kinds, *variants;
    if (!PyArg_ParseTuple(spec, "OO", &kinds, &variants)) return -1;
    Layout *l = calloc(1, sizeof(Layout));
    if (!l) { NOMEM(); return -1; }
    PyObject *kseq = PySequence_Fast(kinds, "slot kinds");
    if (!kseq) { free(l); return -1; }
    l->nslots = (int)PySequence_Fast_GET_SIZE(kseq);
    if (l->nslots > MAX_SLOTS) { Py_DECREF(kseq); free(l); PyErr_SetString(PyExc_ValueError, "too many slots"); return -1; }
    for (int i = 0; i < l->nslots; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(kseq, i));
        l->slot_kind[i] = (int)(v & 0xff);
        l->slot_width[i] = (v >> 8) == 4 ? 4 : 8;
        if (l->slot_kind[i] == K_STR || l->slot_kind[i] == K_SYM) l->strmask |= 1u << i;
        if (l->slot_width[i] == 4) l->w4mask |= 1u << i;
    }
    Py_DECREF(kseq);
    PyObject *vseq = PySequence_Fast(variants, "variants");
    if (!vseq) { free(l); return -1; }
    l->nvariants = (int)PySequence_Fast_GET_SIZE(vseq);
    l->variants = calloc((size_t)l->nvariants, sizeof(Variant));
    for (int i = 0; i < l->nvariants; i++) {
        PyObject *items; int trailing;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(vseq, i), "pO", &trailing, &items)) goto fail;
        Variant *v = &l->variants[i];
        v->allow_trailing = trailing;
        PyObject *iseq = PySequence_Fast(items, "items");
        if (!iseq) goto fail;
        v->nitems = (int)PySequence_Fast_GET_SIZE(iseq);
        if (v->nitems > MAX_ITEMS) { Py_DECREF(iseq); PyErr_SetString(PyExc_ValueError, "too many items"); goto fail; }
        for (int j = 0; j < v->nitems; j++) {
            int kind, slot; const char *lit; Py_ssize_t ll;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(iseq, j), "iy#i", &kind, &lit, &ll, &slot)) { Py_DECREF(iseq); goto fail; }
            v->items[j].kind = kind; v->items[j].slot = slot;
            v->items[j].lit = malloc((size_t)ll + 1); memcpy(v->items[j].lit, lit, (size_t)ll);
            v->items[j].litlen = (size_t)ll;
            if (kind != K_LIT && (slot < 0 || slot >= l->nslots)) { Py_DECREF(iseq); PyErr_SetString(PyExc_ValueError, "bad slot"); goto fail; }
            if ((kind == K_STR || kind == K_SYM) && j + 1 < v->nitems) {
                /* must be followed by a literal: checked below */
            }
        }
        for (int j = 0; j + 1 < v->nitems; j++)
            if ((v->items[j].kind == K_STR || v->items[j].kind == K_SYM) &&
                (v->items[j + 1].kind != K_LIT || v->items[j + 1].litlen == 0)) {
                Py_DECREF(iseq); PyErr_SetString(PyExc_ValueError, "string capture must be followed by a literal"); goto fail;
            }
        Py_DECREF(iseq);
        variant_prepare(v);
    }
    Py_DECREF(vseq);
    *out = l;
    return 0;
fail:
    Py_DECREF(vseq);
    for (int i = 0; i < l->nvariants; i++)
        for (int j = 0; j < l->variants[i].nitems; j++) free(l->variants[i].items[j].lit);
    free(l->variants); free(l);
    return -1;
}

static void Scanner_dealloc(Scanner *s)
{
    for (size_t i = 0; i < s->nevents; i++) event_free(s->events[i]);
    free(s->events); free(s->evmap); free(s->pending_lost);
    free(s->cpu_events); free(s->cpu_first); free(s->cpu_first_ts); free(s->cpu_prev_ts);
    pool_free(&s->strings); pool_free(&s->evnames);
    Py_XDECREF(s->layouts); Py_XDECREF(s->wanted); Py_XDECREF(s->unparsed);
    col_free(&s->lost_cpu); col_free(&s->lost_count); col_free(&s->lost_ts);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int Scanner_init(Scanner *s, PyObject *args, PyObject *kw)
{
    int mode, flagmode; PyObject *layouts, *wanted;
    if (!PyArg_ParseTuple(args, "iiOO", &mode, &flagmode, &layouts, &wanted)) return -1;
    if (!PyDict_Check(layouts)) { PyErr_SetString(PyExc_TypeError, "layouts must be a dict"); return -1; }
    s->mode = mode; s->flagmode = flagmode ? 1 : 0;
    s->layouts = PyDict_New();
    if (!s->layouts) return -1;
    PyObject *k, *v; Py_ssize_t pos = 0;
    while (PyDict_Next(layouts, &pos, &k, &v)) {
        Layout *l;
        if (compile_layout(v, &l) < 0) return -1;
        PyObject *cap = PyCapsule_New(l, "textscan.layout", layout_capsule_free);
        if (!cap) return -1;
        int r = PyDict_SetItem(s->layouts, k, cap);
        Py_DECREF(cap);
        if (r < 0) return -1;
    }
    if (wanted != Py_None) { s->wanted = PySet_New(wanted); if (!s->wanted) return -1; }
    else { Py_INCREF(Py_None); s->wanted = Py_None; }
    s->unparsed = PyList_New(0);
    if (!s->unparsed) return -1;
    if (pool_init(&s->strings) < 0 || pool_init(&s->evnames) < 0) { NOMEM(); return -1; }
    if (col_init(&s->lost_cpu, 4) || col_init(&s->lost_count, 8) || col_init(&s->lost_ts, 8)) return -1;
    s->ts_decimals = -1;
    s->last_ts = INT64_MIN; s->sorted = 1; s->max_lost_cpu = -1; s->last_ev = -1;
    return 0;
}

static PyObject *Scanner_feed(Scanner *s, PyObject *args)
{
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    const char *p = buf.buf, *end = p + buf.len;
    int err = 0;
    PyThreadState *ts = PyEval_SaveThread();
    tls_ts = &ts;
    /* NUL bytes (a hole of zeros in a damaged file) are looked for line by line only
     * in a chunk that has them */
    int has_nul = memchr(p, 0, (size_t)(end - p)) != NULL;
    s->bufend = end;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        s->lineno++;
        int r;
        if (le - p > MAX_LINE_BYTES) {
            tally(&s->overlong, s->lineno);
            r = note_unparsed(s, p, le);
        } else if (has_nul && memchr(p, 0, (size_t)(le - p))) {
            tally(&s->nul, s->lineno);
            r = note_unparsed(s, p, le);
        } else
            r = scan_line(s, p, le);
        if (r < 0) { err = 1; break; }
        p = nl ? nl + 1 : end;
    }
    tls_ts = NULL;
    s->bufend = NULL;
    if (ts) PyEval_RestoreThread(ts);
    PyBuffer_Release(&buf);
    if (err && !PyErr_Occurred()) PyErr_NoMemory();
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* a line the reader skipped without handing it over: longer than a chunk, or the
 * last line of the file without a line end (cut); `head` is its beginning */
static PyObject *Scanner_skip_line(Scanner *s, PyObject *args)
{
    Py_buffer head;
    int overlong;
    if (!PyArg_ParseTuple(args, "y*p", &head, &overlong)) return NULL;
    s->lineno++;
    if (overlong) tally(&s->overlong, s->lineno);
    else s->cut_line = s->lineno;
    int r = note_unparsed(s, head.buf, (const char *)head.buf + head.len);
    PyBuffer_Release(&head);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *edge_list(const Edge *e)
{
    PyObject *out = PyList_New(e->n);
    for (int i = 0; out && i < e->n; i++) {
        const Stamp *st = &e->v[i];
        PyObject *t = Py_BuildValue("(LLii)", (long long)st->ts, (long long)st->lineno,
                                    (int)st->cpu, (int)st->event);
        if (!t) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

/* the damage counters and the per-CPU arrays, added to the stats() dict */
static int damage_stats(Scanner *s, PyObject *d)
{
    size_t nc = s->ncpu_cap * sizeof(int64_t);
    PyObject *v[] = {
        Py_BuildValue("(LL)", (long long)s->overlong.n, (long long)s->overlong.first),
        Py_BuildValue("(LL)", (long long)s->nul.n, (long long)s->nul.first),
        Py_BuildValue("(LL)", (long long)s->foreign.n, (long long)s->foreign.first),
        Py_BuildValue("((LL)(LL))", (long long)s->style[0].n, (long long)s->style[0].first,
                      (long long)s->style[1].n, (long long)s->style[1].first),
        Py_BuildValue("(LL)", (long long)s->restart.n, (long long)s->restart.first),
        Py_BuildValue("(LL)", (long long)s->backwards.n, (long long)s->backwards.first),
        PyLong_FromLongLong(s->cut_line),
        PyBytes_FromStringAndSize((const char *)s->cpu_events, (Py_ssize_t)nc),
        PyBytes_FromStringAndSize((const char *)s->cpu_first, (Py_ssize_t)nc),
        PyBytes_FromStringAndSize((const char *)s->cpu_first_ts, (Py_ssize_t)nc),
        PyBytes_FromStringAndSize((const char *)s->cpu_prev_ts, (Py_ssize_t)nc),
        edge_list(&s->lowest),
        edge_list(&s->highest),
    };
    static const char *keys[] = {"overlong", "nul", "foreign", "style", "restart", "backwards",
                                 "cut_line", "cpu_events", "cpu_first", "cpu_first_ts",
                                 "cpu_last_ts", "lowest", "highest"};
    int r = 0;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        if (r == 0 && (!v[i] || PyDict_SetItemString(d, keys[i], v[i]) < 0)) r = -1;
        Py_XDECREF(v[i]);
    }
    return r;
}

static PyObject *Scanner_stats(Scanner *s, PyObject *unused)
{
    PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:O,s:L,s:O,s:O,s:O,s:i}",
        "lines", (long long)s->lineno, "events", (long long)s->lines_events,
        "comments", (long long)s->lines_comment, "blank", (long long)s->lines_blank,
        "unparsed", (long long)s->lines_unparsed, "frames", (long long)s->lines_frames,
        "sorted", s->sorted ? Py_True : Py_False, "max_lost_cpu", (long long)s->max_lost_cpu,
        "first_unparsed", s->unparsed, "any_lat", s->any_lat ? Py_True : Py_False,
        "any_frames", s->any_frames ? Py_True : Py_False,
        "ts_decimals", s->ts_decimals);
    if (d && damage_stats(s, d) < 0) Py_CLEAR(d);
    return d;
}

static PyObject *Scanner_finish(Scanner *s, PyObject *unused)
{
    PyObject *out = PyDict_New(), *evs = PyList_New(0), *strs = NULL;
    if (!out || !evs) goto fail;
    for (size_t i = 0; i < s->nevents; i++) {
        Event *e = s->events[i];
        PyObject *nm = PyUnicode_DecodeUTF8(e->name, (Py_ssize_t)strlen(e->name), "replace");
        PyObject *sy = PyUnicode_DecodeUTF8(e->system, (Py_ssize_t)strlen(e->system), "replace");
        PyObject *d = (nm && sy) ? Py_BuildValue("{s:N,s:N,s:L,s:O}", "name", nm, "system", sy,
                                    "count", (long long)e->count, "wanted", e->wanted ? Py_True : Py_False)
                                 : NULL;
        if (!d) { if (!(nm && sy)) { Py_XDECREF(nm); Py_XDECREF(sy); } }
        if (!d) goto fail;
        if (e->wanted && e->cols_ready) {
            event_set_lengths(e, s->mode);
            struct { const char *k; Col *c; } cs[] = {
                {"ts", &e->ts}, {"cpu", &e->cpu}, {"pid", &e->pid}, {"comm", &e->comm},
                {"flags", &e->flags}, {"pc", &e->pc}, {"latv", &e->latv}, {"variant", &e->variant},
                {"args_off", &e->args_off}, {"args", &e->args}, {"chain_off", &e->chain_off},
                {"frames", &e->frames}, {"period", &e->period}, {"periodv", &e->periodv}};
            for (size_t j = 0; j < sizeof(cs) / sizeof(cs[0]); j++) {
                PyObject *b = col_finish(cs[j].c);
                if (!b || PyDict_SetItemString(d, cs[j].k, b) < 0) { Py_XDECREF(b); Py_DECREF(d); goto fail; }
                Py_DECREF(b);
            }
            PyObject *vals = PyList_New(0);
            int ns = e->layout ? e->layout->nslots : 0;
            for (int sl = 0; sl < ns; sl++) {
                PyObject *t;
                if (e->slot_start[sl] < 0) t = Py_BuildValue("(OL)", Py_None, (long long)-1);
                else {
                    PyObject *a = col_finish(&e->vals[sl]);
                    t = a ? Py_BuildValue("(NL)", a, (long long)e->slot_start[sl]) : NULL;
                }
                if (!t || PyList_Append(vals, t) < 0) { Py_XDECREF(t); Py_DECREF(vals); Py_DECREF(d); goto fail; }
                Py_DECREF(t);
            }
            PyDict_SetItemString(d, "slots", vals);
            Py_DECREF(vals);
            PyObject *nf = PyLong_FromLongLong(e->nframes);
            PyDict_SetItemString(d, "nframes", nf);
            Py_DECREF(nf);
            PyDict_SetItemString(d, "has_chain", e->has_chain ? Py_True : Py_False);
        }
        if (PyList_Append(evs, d) < 0) { Py_DECREF(d); goto fail; }
        Py_DECREF(d);
    }
    strs = PyList_New((Py_ssize_t)(s->strings.n - s->strings_sent));
    if (!strs) goto fail;
    /* the columns name only UTF-8 strings; the raw bytes of a name that is not UTF-8
       are in the pool too (intern_text), unreferenced, and go out replaced as well */
    for (size_t i = s->strings_sent; i < s->strings.n; i++) {
        PyObject *u = PyUnicode_DecodeUTF8(pool_str(&s->strings, (int32_t)i), s->strings.len[i], "replace");
        if (!u) goto fail;
        PyList_SET_ITEM(strs, (Py_ssize_t)(i - s->strings_sent), u);
    }
    s->strings_sent = s->strings.n;
    for (size_t i = 0; i < s->nevents; i++) event_reset(s->events[i]);
    s->npending = 0;
    PyDict_SetItemString(out, "events", evs);
    PyDict_SetItemString(out, "strings", strs);
    {
        PyObject *a = col_finish(&s->lost_cpu), *b = col_finish(&s->lost_count), *c = col_finish(&s->lost_ts);
        if (!a || !b || !c) { Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(c); goto fail; }
        PyObject *t = PyTuple_Pack(3, a, b, c);
        Py_DECREF(a); Py_DECREF(b); Py_DECREF(c);
        if (!t) goto fail;
        PyDict_SetItemString(out, "lost", t);
        Py_DECREF(t);
        col_free(&s->lost_cpu); col_free(&s->lost_count); col_free(&s->lost_ts);
        if (col_init(&s->lost_cpu, 4) || col_init(&s->lost_count, 8) || col_init(&s->lost_ts, 8)) goto fail;
    }
    Py_DECREF(evs); Py_DECREF(strs);
    return out;
fail:
    Py_XDECREF(out); Py_XDECREF(evs); Py_XDECREF(strs);
    return NULL;
}

static PyMethodDef Scanner_methods[] = {
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS, "feed(buffer): scan complete lines"},
    {"stats", (PyCFunction)Scanner_stats, METH_NOARGS, "line counters so far"},
    {"skip_line", (PyCFunction)Scanner_skip_line, METH_VARARGS,
     "skip_line(head, overlong): count a line not fed (longer than a chunk, or cut)"},
    {"finish", (PyCFunction)Scanner_finish, METH_NOARGS,
     "column buffers of every event since the last finish() (which then starts afresh), "
     "and the pool strings added since"},
    {NULL}
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "schedwake.ingest._textscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_doc = "Scanner(mode, flagmode, layouts, wanted)",
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_textscan", "Bulk tokenizer for kernel trace text.", -1, NULL
};

PyMODINIT_FUNC PyInit__textscan(void)
{
    init_flag_tables();
    if (PyType_Ready(&ScannerType) < 0 || PyType_Ready(&ColBufType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType);
    PyModule_AddStringConstant(m, "STATE_LETTERS", STATE_LETTERS);
    PyModule_AddIntConstant(m, "MAX_SLOTS", MAX_SLOTS);
    return m;
}
