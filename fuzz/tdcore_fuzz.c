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
