/*
 * tdcore_fuzz: libFuzzer harness over schedwake's own trace.dat decoder (_td_*.c),
 * with no Python in the way: every input is a whole trace.dat in memory, opened,
 * every event decoded, closed (td_fuzz_read()).
 *
 * Build (Makefile rule build/fuzz/tdcore_fuzz; clang with libFuzzer):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *         fuzz/tdcore_fuzz.c schedwake/ingest/_td_*.c -Ischedwake/ingest \
 *         -lzstd -lz -lpthread -o build/fuzz/tdcore_fuzz
 * Run: fuzz/run.py tdcore_fuzz (make fuzz), or by hand:
 *   build/fuzz/tdcore_fuzz -dict=fuzz/tracedat.dict fuzz/corpus/tdcore_fuzz
 *
 * Besides what ASan/UBSan (and LeakSanitizer: plain C, every allocation must be
 * freed) catch, the harness checks the decoder's contract and aborts (a finding)
 * when it is broken: td_fuzz_read() returns 0 or -1, and on -1 the message is
 * non-empty and NUL-terminated inside its TD_ERRLEN buffer.  (It may quote bytes of
 * the file, newlines included: the binding _tdread.c makes one line of it.)
 *
 * Mutation: half libFuzzer's own (with fuzz/tracedat.dict), half structure-aware
 * (LLVMFuzzerCustomMutator below).  In a perf.data (file or pipe mode, mutate_perf)
 * it walks the records and edits one as a damaged or hostile file would, keeping the
 * framing (the data section's size and the feature table's offsets follow a record
 * added or removed): a sample's time (0, 100 s back, an hour or 2^63 ahead, another
 * sample's), two attributes' ids or tracepoint ids exchanged, a payload's common_type
 * (another attribute's tracepoint, 0xffff), the COMPRESSED feature's mmap_len, a
 * COMPRESSED2 record's data size, a record duplicated or removed (COMPRESSED records
 * and samples first), an MMAP2 file name (/proc/kmsg, trace_pipe, /dev/zero), an
 * attribute's sample_type bits or size (HEADER_ATTR in pipe mode).  In a version-7
 * trace.dat it finds the options of
 * the uncompressed options sections and changes one in place, the way a damaged or
 * hostile file would: a CPUCOUNT, a BUFFER option's CPU count, CPU id, data offset
 * or size, a section option's offset, an OFFSET/DATE number at the edges of 64 bits,
 * TSC2NSEC's multiplier and shift, or an option's id (its bytes read as another
 * option).  Sizes stay, so the damage gets past the framing to the checks of what
 * the numbers mean (fuzz_load_tracedat's mutator, fuzz/tracedat_model.py, rewrites
 * whole files; this one is cheap enough for the C harness's pace).
 *
 * Each input is read a second time by time range (read_a_range): its index
 * (td_index: trace.dat's pages or chunks, perf.data's rounds), a range between two of
 * the index's times picked by the input's size, td_set_time_range and td_decode; the
 * same contract holds, and with TDCORE_FUZZ_REQUIRE_OK every seed must read by range
 * too.
 *
 * Environment:
 *   TDCORE_FUZZ_JOBS=N        decoding threads (default 2: the per-CPU threads and
 *                             their merge are exercised, within a 2-core budget)
 *   TDCORE_FUZZ_REQUIRE_OK=1  abort unless every input decodes (rc 0): run over the
 *                             seed files, it proves the decoder reads each seed variant
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* as in _td_*.c: their headers use mremap() */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_tdcore.h"

static int jobs = 2;
static int require_ok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *j = getenv("TDCORE_FUZZ_JOBS");
    if (j && atoi(j) > 0)
        jobs = atoi(j);
    const char *r = getenv("TDCORE_FUZZ_REQUIRE_OK");
    require_ok = r && *r && strcmp(r, "0") != 0;
    return 0;
}

static void broken(const char *what, const char *err)
{
    fprintf(stderr, "tdcore_fuzz: contract broken: %s%s%s\n", what, err ? ": " : "",
            err ? err : "");
    abort();
}

/* Two times of the input's index (a block's first time on one CPU, another's on the
   next CPU with data; perf.data: a round's and the end), whatever they are. */
static int pick_range(const uint8_t *data, size_t size, int64_t *t0, int64_t *t1, char *err)
{
    td_file *f;
    int rc = td_open(&f, data, size, err);
    const td_cpu_blocks *ix;
    int n;
    if (rc == 0)
        rc = td_index(f, &ix, &n, err);
    if (rc == 0) {
        int64_t t[2] = {INT64_MIN, INT64_MAX};
        int k = 0;
        for (int c = 0; c < n && k < 2; c++)
            if (ix[c].nblocks)
                t[k++] = ix[c].first_ts[(size / 7 + (size_t)c) % (size_t)ix[c].nblocks];
        *t0 = t[0] < t[1] ? t[0] : t[1];
        *t1 = t[0] < t[1] ? t[1] : t[0];
        if (*t0 == *t1)
            *t1 = INT64_MAX;
        if (*t0 == *t1)
            *t0 = INT64_MIN;
    }
    td_close(f);
    return rc;
}

/* The input read by a time range of its index, in a file opened again: the range
   read searches the blocks' times itself, reading only those it probes. */
static int read_a_range(const uint8_t *data, size_t size, char *err)
{
    int64_t t0, t1;
    int rc = pick_range(data, size, &t0, &t1, err);
    td_file *f = NULL;
    if (rc == 0)
        rc = td_open(&f, data, size, err);
    if (rc == 0) {
        td_want_all(f, 1);
        rc = td_set_time_range(f, t0, t1, err);
    }
    if (rc == 0)
        rc = td_decode(f, jobs, NULL, NULL, err);
    td_close(f);
    return rc;
}

static void check_contract(int rc, const char *err, int must_read)
{
    if (rc != 0 && rc != -1)
        broken("a read returned neither 0 nor -1", NULL);
    if (rc == -1) {
        size_t n = strnlen(err, TD_ERRLEN);
        if (n == TD_ERRLEN)
            broken("the error message is not NUL-terminated inside TD_ERRLEN bytes", NULL);
        if (n == 0)
            broken("an error without a message", NULL);
        if (must_read)
            broken("TDCORE_FUZZ_REQUIRE_OK: the input does not decode", err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* poison the message buffer: a message that is not NUL-terminated inside it,
       or a stale one, shows */
    char err[TD_ERRLEN + 1];
    memset(err, 'X', sizeof(err));
    err[TD_ERRLEN] = 0;
    int rc = td_fuzz_read(data, size, jobs, err);
    check_contract(rc, err, require_ok);
    memset(err, 'X', sizeof(err) - 1);
    rc = read_a_range(data, size, err);
    check_contract(rc, err, require_ok);
    return 0;
}

/* ------------------------------------------------ structure-aware mutation */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

typedef struct {
    size_t at;                  /* the option's id; its data at at + 6 */
    uint16_t id;
    uint32_t size;
} Option;

static uint64_t get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    memcpy(&v, p, (size_t)n);   /* little-endian files and hosts: the seeds are */
    return v;
}

static void set(uint8_t *p, int n, uint64_t v)
{
    memcpy(p, &v, (size_t)n);
}

/* The options of the uncompressed options sections of a little-endian v7 file. */
static int v7_options(const uint8_t *d, size_t size, Option *out, int cap)
{
    static const char magic[] = "\x17\x08\x44tracing7";
    if (size < 19 || memcmp(d, magic, 11) != 0 || d[11] != 0 || d[12] != 0)
        return 0;
    size_t pos = 18;
    for (int s = 0; s < 2; s++) {       /* compression name and version */
        const uint8_t *nul = memchr(d + pos, 0, size - pos);
        if (!nul)
            return 0;
        pos = (size_t)(nul - d) + 1;
    }
    if (size - pos < 8)
        return 0;
    uint64_t sec = get(d + pos, 8);
    int n = 0;
    for (int hops = 0; sec && hops < 16 && sec <= size - 16; hops++) {
        uint64_t len = get(d + sec + 8, 8);
        if (get(d + sec, 2) != 0 || (get(d + sec + 2, 2) & 1) || len > size - sec - 16)
            break;
        size_t o = (size_t)sec + 16, end = o + (size_t)len;
        sec = 0;
        while (end - o >= 6 && n < cap) {
            Option opt = {o, (uint16_t)get(d + o, 2), (uint32_t)get(d + o + 2, 4)};
            if (opt.size > end - o - 6)
                break;
            out[n++] = opt;
            if (opt.id == 0) {
                sec = opt.size >= 8 ? get(d + o + 6, 8) : 0;
                break;
            }
            o += 6 + opt.size;
        }
    }
    return n;
}

static const uint64_t EDGES[] = {
    0, 1, 2, 3, 4095, 4096, 4097, 65535, 65536, 65537, 0x7fffffff, 0x80000000,
    0xffffffff, 1ull << 32, 1ull << 62, 0x7fffffffffffffffull, 0x8000000000000000ull,
    0xffffffffffffffffull,
};
static const char *const NUMBERS[] = {
    "9223372036854775807", "-9223372036854775808", "-9223372036854775809",
    "9223372036854775808", "4611686018427387904", "0xffffffffffffffff",
    "9223372036854776", "-403000000000", "-1", "0",
};
#define PICK(a, r) ((a)[(r) % (sizeof(a) / sizeof(*(a)))])

/* One option of d changed in place (see the top of the file); 0 if none could be. */
static int mutate_option(uint8_t *d, size_t size, unsigned r)
{
    Option opts[256];
    int n = v7_options(d, size, opts, 256);
    if (!n)
        return 0;
    Option *o = &opts[r % (unsigned)n];
    r /= (unsigned)n;
    uint8_t *p = d + o->at + 6;
    uint64_t v = PICK(EDGES, r >> 4);
    if ((r & 15) == 0) {            /* another option's id over these bytes */
        static const uint16_t ids[] = {1, 2, 3, 7, 8, 14, 16, 18, 21};
        set(d + o->at, 2, PICK(ids, r >> 4));
        return 1;
    }
    switch (o->id) {
    case 1: case 7: {               /* DATE, OFFSET: a number as text */
        const char *t = PICK(NUMBERS, r >> 4);
        if (o->size < 2)
            return 0;
        size_t k = strlen(t) < o->size - 1 ? strlen(t) : o->size - 1;
        memset(p, 0, o->size);
        memcpy(p, t, k);
        return 1;
    }
    case 8:                         /* CPUCOUNT */
        if (o->size < 4)
            return 0;
        set(p, 4, v);
        return 1;
    case 14:                        /* TSC2NSEC: mult, shift */
        if (o->size < 8)
            return 0;
        set(p + ((r >> 8) & 1) * 4, 4, v);
        return 1;
    case 3: {                       /* BUFFER: sec, name, clock, page, ncpu, entries */
        size_t q = 8;
        for (int s = 0; s < 2; s++) {
            const uint8_t *nul = q < o->size ? memchr(p + q, 0, o->size - q) : NULL;
            if (!nul)
                return 0;
            q = (size_t)(nul - p) + 1;
        }
        if (o->size - q < 8)
            return 0;
        uint64_t ncpu = (o->size - q - 8) / 20;
        unsigned which = (r >> 8) % (unsigned)(1 + 3 * ncpu);
        if (which == 0) {
            set(p + q + 4, 4, v);   /* the CPU count */
            return 1;
        }
        size_t e = q + 8 + 20 * ((which - 1) / 3);
        static const int off[] = {0, 4, 12}, width[] = {4, 8, 8};
        set(p + e + off[(which - 1) % 3], width[(which - 1) % 3], v);
        return 1;
    }
    case 16: case 17: case 18: case 19: case 20: case 21:  /* a section's offset */
        if (o->size < 8)
            return 0;
        set(p, 8, (r >> 8) & 1 ? get(opts[(r >> 9) % (unsigned)n].at + d + 6, 8) : v);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------- perf.data, structurally */

enum { P_SAMPLE = 9, P_MMAP2 = 10, P_HEADER_ATTR = 64, P_TRACING_DATA = 66,
       P_FEATURE = 80, P_COMPRESSED = 81, P_COMPRESSED2 = 83 };
enum { PS_IP = 1, PS_TID = 2, PS_TIME = 4, PS_ADDR = 8, PS_READ = 16, PS_CALLCHAIN = 32,
       PS_ID = 64, PS_CPU = 128, PS_PERIOD = 256, PS_STREAM_ID = 512, PS_RAW = 1024,
       PS_IDENTIFIER = 1 << 16 };

typedef struct {
    size_t at;                  /* the record's file offset */
    uint32_t type;
    size_t size;
} PRec;

typedef struct {
    size_t at;                  /* its perf_event_attr */
    size_t ids;                 /* file mode: its {ids offset, ids size}; pipe: its ids */
    size_t nids;                /* pipe mode: ids after the attribute */
} PAttr;

typedef struct {
    int pipe;
    size_t start, end;          /* the records */
    PRec rec[1024];
    int nrec;
    PAttr attr[16];
    int nattr;
} PLayout;

static int perf_layout(const uint8_t *d, size_t size, PLayout *l)
{
    if (size < 16 || memcmp(d, "PERFILE2", 8) != 0)
        return 0;
    uint64_t hsize = get(d + 8, 8);
    l->nrec = l->nattr = 0;
    if (hsize == 16) {
        l->pipe = 1;
        l->start = 16;
        l->end = size;
    } else if (hsize == 104 && size >= 104) {
        uint64_t asz = get(d + 16, 8), aoff = get(d + 24, 8), alen = get(d + 32, 8);
        uint64_t doff = get(d + 40, 8), dlen = get(d + 48, 8);
        if (doff > size || dlen > size - doff)
            return 0;
        l->pipe = 0;
        l->start = (size_t)doff;
        l->end = (size_t)(doff + dlen);
        if (asz >= 80 && asz <= 4096 && aoff <= size && alen <= size - aoff)
            for (uint64_t a = 0; a < alen / asz && l->nattr < 16; a++)
                l->attr[l->nattr++] = (PAttr){(size_t)(aoff + a * asz),
                                              (size_t)(aoff + (a + 1) * asz - 16), 0};
    } else {
        return 0;
    }
    size_t pos = l->start;
    while (l->end - pos >= 8 && l->nrec < 1024) {
        uint32_t type = (uint32_t)get(d + pos, 4);
        size_t sz = (size_t)get(d + pos + 6, 2);
        if (sz < 8 || sz > l->end - pos)
            break;
        l->rec[l->nrec++] = (PRec){pos, type, sz};
        if (l->pipe && type == P_HEADER_ATTR && sz >= 8 + 64 && l->nattr < 16) {
            size_t asz = (size_t)get(d + pos + 12, 4);
            if (asz == 0)
                asz = 64;
            if (asz <= sz - 8)
                l->attr[l->nattr++] = (PAttr){pos + 8, pos + 8 + asz, (sz - 8 - asz) / 8};
        }
        if (type == P_TRACING_DATA && sz >= 12) {
            uint64_t t = get(d + pos + 8, 4);
            if (t > l->end - pos - sz)
                break;
            pos += (size_t)t;
        }
        pos += sz;
    }
    return l->nrec > 0;
}

/* Bytes [at, at + old) of d become `new_len` bytes (new ones left as they are, to be
   written by the caller): the data section's size and the feature offsets after it
   follow.  The new size, or 0 if it would not fit in max. */
static size_t perf_resize(uint8_t *d, size_t size, size_t max, const PLayout *l, size_t at,
                          size_t old, size_t new_len)
{
    if (new_len > old && new_len - old > max - size)
        return 0;
    memmove(d + at + new_len, d + at + old, size - at - old);
    size_t n = size - old + new_len;
    if (!l->pipe) {
        int64_t delta = (int64_t)new_len - (int64_t)old;
        set(d + 48, 8, get(d + 48, 8) + (uint64_t)delta);
        size_t table = (size_t)((int64_t)l->end + delta);
        int nfeat = 0;
        for (int i = 0; i < 4; i++)
            nfeat += __builtin_popcountll(get(d + 72 + 8 * i, 8));
        for (int i = 0; i < nfeat && table + 16 * (size_t)i + 16 <= n; i++) {
            uint64_t off = get(d + table + 16 * (size_t)i, 8);
            if (off >= l->end)
                set(d + table + 16 * (size_t)i, 8, off + (uint64_t)delta);
        }
    }
    return n;
}

/* Where a SAMPLE's fields are, by the first attribute's sample_type (the seeds' events
   share one): its time and its raw payload, 0 if it has none. */
static void sample_fields(const uint8_t *d, const PLayout *l, const PRec *r, size_t *time,
                          size_t *raw)
{
    *time = *raw = 0;
    if (!l->nattr)
        return;
    uint64_t st = get(d + l->attr[0].at + 24, 8);
    size_t q = 8 + 8 * (size_t)(!!(st & PS_IDENTIFIER) + !!(st & PS_IP) + !!(st & PS_TID));
    if (st & PS_TIME && q + 8 <= r->size)
        *time = r->at + q;
    q += 8 * (size_t)(!!(st & PS_TIME) + !!(st & PS_ADDR) + !!(st & PS_ID) +
                      !!(st & PS_STREAM_ID) + !!(st & PS_CPU) + !!(st & PS_PERIOD));
    if (st & PS_READ)
        return;
    if (st & PS_CALLCHAIN) {
        if (q + 8 > r->size)
            return;
        uint64_t nr = get(d + r->at + q, 8);
        if (nr > (r->size - q - 8) / 8)
            return;
        q += 8 + 8 * (size_t)nr;
    }
    if (st & PS_RAW && q + 4 + 2 <= r->size)
        *raw = r->at + q + 4;
}

/* The index of a record of `type` (0: any), or -1. */
static int pick_rec(const PLayout *l, uint32_t type, unsigned r)
{
    int n = 0;
    for (int i = 0; i < l->nrec; i++)
        n += !type || l->rec[i].type == type;
    if (!n)
        return -1;
    int k = (int)(r % (unsigned)n);
    for (int i = 0; i < l->nrec; i++)
        if ((!type || l->rec[i].type == type) && k-- == 0)
            return i;
    return -1;
}

static const char *const SPECIAL_FILES[] = {
    "/proc/kmsg", "/sys/kernel/tracing/trace_pipe", "/dev/zero", "/proc/self/fd/0",
    "/dev/stdin", "//anon", "[vdso]", "",
};

/* One structural edit of a perf.data (see the top of the file): its new size, 0 if
   none could be made. */
static size_t mutate_perf(uint8_t *d, size_t size, size_t max, unsigned r)
{
    static PLayout l;
    if (!perf_layout(d, size, &l))
        return 0;
    unsigned what = r % 10;
    r /= 10;
    int i;
    size_t tpos, raw;
    switch (what) {
    case 0: {                       /* a sample's time */
        if ((i = pick_rec(&l, P_SAMPLE, r)) < 0)
            return 0;
        sample_fields(d, &l, &l.rec[i], &tpos, &raw);
        if (!tpos)
            return 0;
        uint64_t t = get(d + tpos, 8);
        uint64_t to[] = {0, t - 100000000000ull, t + 3600000000000ull, 1ull << 63,
                         INT64_MAX, UINT64_MAX, t + 9ull * 366 * 86400 * 1000000000ull, t - 1};
        int j = pick_rec(&l, P_SAMPLE, r >> 8);
        size_t other;
        sample_fields(d, &l, &l.rec[j], &other, &raw);
        set(d + tpos, 8, (r >> 4) % 9 == 8 && other ? get(d + other, 8) : to[(r >> 4) % 9 % 8]);
        return size;
    }
    case 1: {                       /* two attributes' ids or tracepoint ids exchanged */
        if (l.nattr < 2)
            return 0;
        PAttr *a = &l.attr[r % (unsigned)l.nattr], *b = &l.attr[(r / 16) % (unsigned)l.nattr];
        if (a == b)
            b = &l.attr[(size_t)(a - l.attr + 1) % (size_t)l.nattr];
        if ((r >> 8) & 1) {
            uint64_t c = get(d + a->at + 8, 8);
            set(d + a->at + 8, 8, get(d + b->at + 8, 8));
            set(d + b->at + 8, 8, c);
        } else if (!l.pipe) {
            uint8_t t[16];
            memcpy(t, d + a->ids, 16);
            memcpy(d + a->ids, d + b->ids, 16);
            memcpy(d + b->ids, t, 16);
        } else if (a->nids && b->nids) {
            uint64_t t = get(d + a->ids, 8);
            set(d + a->ids, 8, get(d + b->ids, 8));
            set(d + b->ids, 8, t);
        }
        return size;
    }
    case 2: {                       /* a payload's common_type */
        if ((i = pick_rec(&l, P_SAMPLE, r)) < 0)
            return 0;
        sample_fields(d, &l, &l.rec[i], &tpos, &raw);
        if (!raw)
            return 0;
        uint64_t v = (r >> 8) & 1 ? 0xffff
                   : l.nattr ? get(d + l.attr[(r >> 9) % (unsigned)l.nattr].at + 8, 8) : 0;
        set(d + raw, 2, v);
        return size;
    }
    case 3: {                       /* the COMPRESSED feature's mmap_len */
        static const uint32_t lens[] = {0, 1, 4096, 8192, 12288, 528384, 0x80000000u,
                                        0x80010000u, 0xffffffffu};
        uint32_t v = lens[(r >> 4) % (sizeof(lens) / sizeof(*lens))];
        if (l.pipe) {
            for (int k = 0; k < l.nrec; k++)
                if (l.rec[k].type == P_FEATURE && l.rec[k].size >= 36 &&
                    get(d + l.rec[k].at + 8, 8) == 27) {
                    set(d + l.rec[k].at + 32, 4, v);
                    return size;
                }
            return 0;
        }
        uint64_t bits[4];
        for (int k = 0; k < 4; k++)
            bits[k] = get(d + 72 + 8 * k, 8);
        if (!(bits[0] >> 27 & 1))
            return 0;
        int idx = __builtin_popcountll(bits[0] & ((1ull << 27) - 1));
        size_t e = l.end + 16 * (size_t)idx;
        if (e + 16 > size)
            return 0;
        uint64_t off = get(d + e, 8);
        if (off > size || size - off < 20)
            return 0;
        set(d + off + 16, 4, v);
        return size;
    }
    case 4: case 5: {               /* a record duplicated or removed */
        static const uint32_t types[] = {P_COMPRESSED, P_COMPRESSED2, P_SAMPLE, 0};
        i = -1;
        for (int k = (int)((r >> 4) & 3); k < 4 && i < 0; k++)
            i = pick_rec(&l, types[k], r >> 6);
        if (i < 0 || l.rec[i].type == P_TRACING_DATA)
            return 0;
        PRec rc = l.rec[i];
        if (what == 5)
            return perf_resize(d, size, max, &l, rc.at, rc.size, 0);
        size_t n = perf_resize(d, size, max, &l, rc.at + rc.size, 0, rc.size);
        if (n)
            memcpy(d + rc.at + rc.size, d + rc.at, rc.size);
        return n;
    }
    case 6: {                       /* a compressed stream cut, a COMPRESSED2's data size */
        if ((i = pick_rec(&l, P_COMPRESSED2, r)) >= 0 && l.rec[i].size >= 16 && (r >> 4) & 1) {
            uint64_t v = get(d + l.rec[i].at + 8, 8);
            uint64_t to[] = {0, v - 1, v + 1, l.rec[i].size - 16, l.rec[i].size, UINT64_MAX};
            set(d + l.rec[i].at + 8, 8, to[(r >> 5) % 6]);
            return size;
        }
        if ((i = pick_rec(&l, P_COMPRESSED, r)) < 0 || l.rec[i].size <= 9)
            return 0;
        PRec rc = l.rec[i];         /* the record shorter by 1 .. all its data */
        size_t cut = 1 + (r >> 5) % (rc.size - 8);
        set(d + rc.at + 6, 2, rc.size - cut);
        return perf_resize(d, size, max, &l, rc.at + rc.size - cut, cut, 0);
    }
    case 7: {                       /* an MMAP2 file name, the record resized for it */
        if ((i = pick_rec(&l, P_MMAP2, r)) < 0 || l.rec[i].size <= 72)
            return 0;
        PRec rc = l.rec[i];
        const uint8_t *nul = memchr(d + rc.at + 72, 0, rc.size - 72);
        if (!nul)
            return 0;
        size_t old = ((size_t)(nul - d - rc.at - 72) + 1 + 7) & ~(size_t)7;
        const char *name = PICK(SPECIAL_FILES, r >> 4);
        size_t len = strlen(name), pad = (len + 1 + 7) & ~(size_t)7;
        if (old > rc.size - 72 || rc.size - old + pad > 65535)
            return 0;
        size_t n = perf_resize(d, size, max, &l, rc.at + 72, old, pad);
        if (!n)
            return 0;
        memset(d + rc.at + 72, 0, pad);
        memcpy(d + rc.at + 72, name, len);
        set(d + rc.at + 6, 2, rc.size - old + pad);
        return n;
    }
    default: {                      /* an attribute's sample_type bit or size; pipe
                                       mode: a HEADER_FEATURE read as another feature */
        if (l.pipe && (r >> 10) % 4 == 0 && (i = pick_rec(&l, P_FEATURE, r >> 12)) >= 0 &&
            l.rec[i].size >= 16) {
            set(d + l.rec[i].at + 8, 8, 1 + (r >> 16) % 31);
            return size;
        }
        if (!l.nattr)
            return 0;
        PAttr *a = &l.attr[r % (unsigned)l.nattr];
        if ((r >> 4) & 1) {
            static const uint32_t sizes[] = {0, 63, 64, 72, 120, 128, 136, 4096};
            set(d + a->at + 4, 4, sizes[(r >> 5) % 8]);
        } else {
            set(d + a->at + 24, 8, get(d + a->at + 24, 8) ^ (1ull << ((r >> 5) % 25)));
        }
        return size;
    }
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    if (seed & 1) {
        for (int tries = 0; tries < 4; tries++) {
            unsigned r = (seed >> 1) * 2654435761u + (unsigned)tries * 40503u;
            size_t n = mutate_perf(data, size, max_size, r);
            if (n)
                return n;
            if (mutate_option(data, size, r))
                return size;
        }
    }
    return LLVMFuzzerMutate(data, size, max_size);
}
