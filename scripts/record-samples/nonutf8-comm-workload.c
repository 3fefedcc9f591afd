/*
 * nonutf8-comm-workload.c: the traced workload of sample_traces/nonutf8-comm.*
 * (built and run by record-nonutf8-comm.sh).
 *
 * Task names are bytes to the kernel: prctl(PR_SET_NAME) takes any bytes, and the
 * trace carries them as they are.  This program names its threads with byte
 * strings that are not UTF-8 (and one that is), then makes them sleep, wake each
 * other through pipes and hop between CPUs, so that sched_switch (char[16]
 * prev_comm/next_comm), sched_waking/sched_wakeup (char[16] comm) and
 * sched_migrate_task (a __data_loc comm on 6.18) all carry those names.
 *
 * The names, and what Python's bytes.decode("utf-8", "replace") makes of them
 * (U+FFFD per maximal invalid subpart):
 *   "bad\xff\xfename"     -> "bad\ufffd\ufffdname"   two invalid bytes
 *   "trunc\xe2\x82x\xc3"  -> "trunc\ufffdx\ufffd"    a cut 3-byte sequence (one
 *                                                    U+FFFD), a lone lead byte at the end
 *   "sur\xed\xa0\x80gate" -> "sur\ufffd\ufffd\ufffdgate"  an encoded surrogate (3)
 *   "caf\xc3\xa9-ok"      -> "caf\u00e9-ok"          valid UTF-8, kept
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 40

static const char *const NAMES[] = {
    "bad\xff\xfename",
    "trunc\xe2\x82x\xc3",
    "sur\xed\xa0\x80gate",
    "caf\xc3\xa9-ok",
};

static int ping[2], pong[2];

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % 2, &set);
    sched_setaffinity(0, sizeof(set), &set);    /* 0: this thread; may migrate it */
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* "trunc..." answers every ping with a pong, hopping CPUs as it goes */
static void *echo(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, NAMES[1]);
    char c;
    for (int i = 0; i < ROUNDS; i++) {
        if (read(ping[0], &c, 1) != 1)
            break;
        pin(i + 1);
        if (write(pong[1], &c, 1) != 1)
            break;
    }
    return NULL;
}

/* "sur..." and "caf..." sleep and wake on timers, hopping CPUs */
static void *sleeper(void *arg)
{
    long k = (long)arg;
    prctl(PR_SET_NAME, NAMES[k]);
    for (int i = 0; i < ROUNDS; i++) {
        pin(i + (int)k);
        nap_us(500 + 100 * k);
    }
    return NULL;
}

int main(void)
{
    if (pipe(ping) || pipe(pong)) {
        perror("pipe");
        return 1;
    }
    prctl(PR_SET_NAME, NAMES[0]);
    pthread_t t[3];
    pthread_create(&t[0], NULL, echo, NULL);
    pthread_create(&t[1], NULL, sleeper, (void *)2L);
    pthread_create(&t[2], NULL, sleeper, (void *)3L);
    char c = 'x';
    for (int i = 0; i < ROUNDS; i++) {       /* "bad..." pings, waits for the pong */
        pin(i);
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
            break;
        nap_us(300);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return 0;
}
