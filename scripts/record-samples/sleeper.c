/* sleeper.c -- the referee samples' sleeper (scripts/record-samples/record-referee.sh):
 * computes for COMPUTE_US microseconds, sleeps SLEEP_US, again, for SECONDS seconds.
 *   cc -O2 -o sleeper sleeper.c && ./sleeper [SECONDS [COMPUTE_US [SLEEP_US]]]
 * Defaults: 1 s, 50 us of computing, 200 us of sleep. Prints the rounds done. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    long compute_ns = (argc > 2 ? atol(argv[2]) : 50) * 1000L;
    long sleep_ns = (argc > 3 ? atol(argv[3]) : 200) * 1000L;
    struct timespec nap = {sleep_ns / 1000000000L, sleep_ns % 1000000000L};
    long long end = now_ns() + (long long)(seconds * 1e9), rounds = 0;
    volatile unsigned long x = 1;
    while (now_ns() < end) {
        long long until = now_ns() + compute_ns;
        while (now_ns() < until)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        nanosleep(&nap, NULL);
        rounds++;
    }
    printf("sleeper: %lld rounds of %ld us computing and %ld us sleeping\n", rounds,
           compute_ns / 1000, sleep_ns / 1000);
    return 0;
}
