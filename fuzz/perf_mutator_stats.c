/*
 * perf_mutator_stats: what tdcore_fuzz's perf.data mutator (mutate_perf) does to each
 * file given, without libFuzzer: for each of its families, 2,000 mutants of the file
 * are decoded (td_fuzz_read) and counted: how many it made, how many decode, and the
 * messages of the decoder's checks they reach.  tests/test_fuzz.py checks that every
 * family gets past the framing to the checks it is for.
 *
 *   cc -O1 -Ischedwake/ingest fuzz/perf_mutator_stats.c schedwake/ingest/_td_*.c \
 *      -lzstd -lz -lpthread -o build/perf_mutator_stats
 *   build/perf_mutator_stats fuzz/corpus/fuzz_load_perfdata/seed-*.data
 *
 * Output, one line per file and family: "FILE FAMILY MUTATED DECODED | MESSAGE" (the
 * first message of each distinct start, up to 8 per family).
 */
#include "tdcore_fuzz.c"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
{
    (void)data;
    (void)max_size;
    return size;
}

#define FAMILIES 10
#define SEEN 8

int main(int argc, char **argv)
{
    static uint8_t base[1 << 17], d[1 << 17];
    for (int a = 1; a < argc; a++) {
        FILE *fp = fopen(argv[a], "rb");
        if (!fp)
            return 2;
        size_t n = fread(base, 1, sizeof(base), fp);
        fclose(fp);
        int made[FAMILIES] = {0}, ok[FAMILIES] = {0}, nseen[FAMILIES] = {0};
        static char seen[FAMILIES][SEEN][160];
        memset(seen, 0, sizeof(seen));
        for (unsigned it = 0; it < 20000; it++) {
            memcpy(d, base, n);
            unsigned r = it * 2654435761u + 12345u, w = r % FAMILIES;
            size_t m = mutate_perf(d, n, sizeof(d), r);
            if (!m)
                continue;
            made[w]++;
            char err[TD_ERRLEN];
            if (td_fuzz_read(d, m, 1, err) == 0) {
                ok[w]++;
                continue;
            }
            char head[160];
            snprintf(head, sizeof(head), "%s", err);
            for (char *c = head; *c; c++)
                if (*c >= '0' && *c <= '9')
                    *c = '#';       /* one line per kind of message */
            int k;
            for (k = 0; k < nseen[w] && strcmp(seen[w][k], head); k++)
                ;
            if (k == nseen[w] && k < SEEN)
                snprintf(seen[w][nseen[w]++], 160, "%s", head);
        }
        for (int w = 0; w < FAMILIES; w++) {
            printf("%s %d %d %d |", argv[a], w, made[w], ok[w]);
            for (int k = 0; k < nseen[w]; k++)
                printf(" %s |", seen[w][k]);
            printf("\n");
        }
    }
    return 0;
}
