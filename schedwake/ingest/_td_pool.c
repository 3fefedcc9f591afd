/*
 * _td_pool.c: what every decoding shares, whatever its source: the decoder (its
 * layouts, its slots' partial tables) and the threads that run its tasks.  The
 * trace.dat merge (_td_merge.c) and the perf.data records (_td_perfdata.c) both
 * build on it; it knows neither.
 */
#include "_td_internal.h"

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

void pool_fail(Decoder *d, int rc, const char *msg)
{
    int expect = 0;
    if (__atomic_compare_exchange_n(&d->failed, &expect, rc == REC_NOMEM ? 1 : rc == REC_CANCELLED ? 3 : 2, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        snprintf(d->err, sizeof(d->err), "%s", rc == REC_NOMEM ? "out of memory" : msg);
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
void run_pool(Decoder *d, int jobs, int ntasks, int (*fn)(Decoder *, int), td_tick tick,
              void *ctx)
{
    Pool p = {d, ntasks, 0, 0, fn, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    if (tick && tick(ctx, 0.0)) {   /* a first call, however short the work */
        pool_fail(d, REC_CANCELLED, "stopped");
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
                pool_fail(d, REC_CANCELLED, "stopped");
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* The CPUs this process may run on (its affinity, as os.sched_getaffinity). */
int default_jobs(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                           : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* ------------------------------------------------------------ decoders */

/* A slot's partial tables and their caches. */
void free_parts(Decoder *d, CpuWork *w)
{
    if (!w->parts)
        return;
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
    w->parts = NULL;
}

void free_work(Decoder *d)
{
    if (!d->work)
        return;
    for (int s = 0; s < d->nwork; s++) {
        CpuWork *w = &d->work[s];
        free_parts(d, w);
        buf_free(&w->lost_ts);
        buf_free(&w->lost_cpu);
        buf_free(&w->lost_count);
        free(w->chunk);
        decompress_end(&w->zctx);
    }
    free(d->work);
    d->work = NULL;
}

void decoder_free(Decoder *d)
{
    if (!d)
        return;
    if (d->f->src)
        d->f->src->decoder_free(d);
    free_work(d);
    if (d->layouts) {
        for (int e = 0; e < d->f->nevents; e++)
            free_layout(&d->layouts[e]);
        free(d->layouts);
    }
    free(d->order_cpu);
    free(d->tasks);
    free(d);
}

/* A decoder of f's wanted events, with their layouts and no slots yet. */
Decoder *decoder_alloc(td_file *f, int jobs, char *err)
{
    err[0] = 0;
    f->err = err;
    Decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return seterr(err, "out of memory"), NULL;
    d->f = f;
    d->jobs = jobs <= 0 ? default_jobs() : jobs;
    d->layouts = calloc((size_t)f->nevents + 1, sizeof(Layout));
    d->order_cpu = calloc((size_t)f->nevents + 1, sizeof(void *));
    if (!d->layouts || !d->order_cpu)
        goto nomem;
    int ncols = 0;
    for (int e = 0; e < f->nevents; e++) {
        f->events[e].count = 0;
        if (f->events[e].wanted) {
            if (make_layout(f, e, &d->layouts[e]) < 0)
                goto nomem;
            ncols += event_ncols(f, e, &d->layouts[e]);
        }
    }
    d->tasks = malloc((size_t)(ncols ? ncols : 1) * sizeof(*d->tasks));
    if (!d->tasks)
        goto nomem;
    return d;
nomem:
    seterr(err, "out of memory");
    decoder_free(d);
    return NULL;
}
