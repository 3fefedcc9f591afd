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
 * (LLVMFuzzerCustomMutator below): in a version-7 trace.dat it finds the options of
 * the uncompressed options sections and changes one in place, the way a damaged or
 * hostile file would: a CPUCOUNT, a BUFFER option's CPU count, CPU id, data offset
 * or size, a section option's offset, an OFFSET/DATE number at the edges of 64 bits,
 * TSC2NSEC's multiplier and shift, or an option's id (its bytes read as another
 * option).  Sizes stay, so the damage gets past the framing to the checks of what
 * the numbers mean (fuzz_load_tracedat's mutator, fuzz/tracedat_model.py, rewrites
 * whole files; this one is cheap enough for the C harness's pace).
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* poison the message buffer: a message that is not NUL-terminated inside it,
       or a stale one, shows */
    char err[TD_ERRLEN + 1];
    memset(err, 'X', sizeof(err));
    err[TD_ERRLEN] = 0;
    int rc = td_fuzz_read(data, size, jobs, err);
    if (rc != 0 && rc != -1)
        broken("td_fuzz_read() returned neither 0 nor -1", NULL);
    if (rc == -1) {
        size_t n = strnlen(err, TD_ERRLEN);
        if (n == TD_ERRLEN)
            broken("the error message is not NUL-terminated inside TD_ERRLEN bytes", NULL);
        if (n == 0)
            broken("an error without a message", NULL);
        if (require_ok)
            broken("TDCORE_FUZZ_REQUIRE_OK: the input does not decode", err);
    }
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

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    if (seed & 1) {
        for (int tries = 0; tries < 4; tries++)
            if (mutate_option(data, size, (seed >> 1) * 2654435761u + (unsigned)tries * 40503u))
                return size;
    }
    return LLVMFuzzerMutate(data, size, max_size);
}
