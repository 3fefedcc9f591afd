/*
 * _td_merge.c: decoding with threads and the merge.  td_decode() decodes the
 * CPUs (trace.dat) or the records of another source (f->src: perf.data's record
 * ranges) in worker threads (_td_pool.c), with no shared mutable state but atomic
 * counters, into per-slot partial tables; the merge then puts each event's rows
 * into (timestamp, slot) order, column by column, also in threads.  Streaming
 * (td_stream_*) does the same batch by batch.  Of another source it knows only
 * the Source interface (_td_internal.h), never the source's own unit.
 */
#include "_td_internal.h"

int td_nevents(const td_file *f) { return f->nevents; }
td_event *td_event_at(td_file *f, int i) { return &f->events[i]; }

void td_want_all(td_file *f, int wanted)
{
    for (int i = 0; i < f->nevents; i++)
        f->events[i].wanted = wanted;
}

/* ------------------------------------------------------- records' times */

/*
 * A record's time is its CPU's raw clock (a page's timestamp plus the deltas of the
 * records before it, never going back: decode_page checks), turned into nanoseconds
 * by the TSC2NSEC option's multiply-and-shift and moved by the DATE and OFFSET
 * options.  decode_page computes it in wrapping 64-bit arithmetic, per record and
 * fast; whether that was exact is checked here, per CPU, before any row goes out:
 *
 * - every time must be exact and in 0..INT64_MAX ns.  The raw clock and the
 *   conversion are monotonic, so this holds for all of a CPU's records when it holds
 *   for the last one (computed again in 128 bits) and the first is not negative.
 *   A time outside it is a damaged option, page timestamp or time extend, and since
 *   every later time on the CPU is built on it, no count of bad records can be
 *   given: the file is corrupt.
 * - every record lies within MAX_TRACE_SPAN (_td_internal.h) of the trace's first
 *   record (all CPUs):
 *   a recording of years is no recording, it is a damaged timestamp (and every
 *   duration and rate computed over it would be wrong by orders of magnitude); also
 *   corrupt, for the same reason.
 */
/* The exact time of raw clock value `raw`; TD_EINVAL when it is not in 0..INT64_MAX. */
static int exact_time(const td_file *f, uint64_t raw, int64_t *t)
{
    unsigned __int128 ns = raw;
    if (f->has_tsc2nsec)
        ns = ns * f->tsc_mult >> f->tsc_shift;
    __int128 sum = (__int128)ns + f->ts_offset;
    if (sum < 0 || sum > INT64_MAX)
        return TD_EINVAL;
    *t = (int64_t)sum;
    return 0;
}

/* The times of CPU slot w's records so far are exact and not negative (see above). */
static int check_cpu_times(Decoder *d, CpuWork *w)
{
    int64_t last;
    if (!w->records || (exact_time(d->f, w->prev_raw, &last) == 0 && w->first_ts >= 0))
        return 0;
    snprintf(w->err, sizeof(w->err), "corrupt %s: the times of CPU %u's records (raw clock "
             "up to %" PRIu64 "%s, time offset options %+" PRId64 " ns) fall outside 0 to 2^63 "
             "ns", d->f->kind, w->cpu, w->prev_raw, d->f->has_tsc2nsec ? ", TSC2NSEC" : "",
             d->f->ts_offset);
    return REC_DAMAGE;
}

/* Every record within MAX_TRACE_SPAN of the trace's first one (see above). */
static int check_trace_span(Decoder *d, char *err)
{
    int first = -1, last = -1;
    for (int s = 0; s < d->nwork; s++) {
        const CpuWork *w = &d->work[s];
        if (!w->records)
            continue;
        if (first < 0 || w->first_ts < d->work[first].first_ts)
            first = s;
        if (last < 0 || w->last_ts > d->work[last].last_ts)
            last = s;
    }
    if (first < 0)
        return 0;
    /* both are in 0..INT64_MAX (check_cpu_times): the difference cannot overflow */
    int64_t span = d->work[last].last_ts - d->work[first].first_ts;
    if (span <= MAX_TRACE_SPAN)
        return 0;
    return seterr(err, "corrupt %s: CPU %u has a record at %" PRId64 " ns, %.0f days after "
                  "the trace's first record (CPU %u, at %" PRId64 " ns): more than the %d "
                  "years any recording spans, so a timestamp is damaged", d->f->kind,
                  d->work[last].cpu, d->work[last].last_ts, (double)span / 86400e9,
                  d->work[first].cpu, d->work[first].first_ts, MAX_TRACE_SPAN_YEARS), TD_FAIL;
}

static int cpu_task(Decoder *d, int i)
{
    CpuWork *w = &d->work[i];
    int rc = decode_cpu(d, w);
    if (rc == 0)
        rc = check_cpu_times(d, w);
    if (rc < 0) {
        if (rc == REC_DAMAGE && !w->err[0])
            snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u data", d->f->kind, w->cpu);
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
        pool_fail(d, REC_DAMAGE, "more than 4 billion records of one event");
        return REC_DAMAGE;
    }
    int wide = d->nwork > ORDER_NARROW_MAX;
    void *order = malloc((size_t)(total ? total : 1) * (wide ? 4 : 1));
    if (!order) {
        pool_fail(d, REC_NOMEM, NULL);
        return REC_NOMEM;
    }
    d->order_cpu[ev] = order;
    d->order_wide = wide;
    /* the slots that have rows: two (a 2-CPU trace) are merged by two cursors */
    int with[2], nwith = 0;
    for (int s = 0; s < d->nwork && nwith <= 2; s++)
        if (d->work[s].parts[ev].take) {
            if (nwith < 2)
                with[nwith] = s;
            nwith++;
        }
    if (nwith <= 2 && !wide) {
        uint8_t *oc = order;
        if (nwith == 0)
            return 0;
        uint8_t s0 = (uint8_t)with[0];
        if (nwith == 1) {
            memset(oc, s0, (size_t)total);
            return 0;
        }
        uint8_t s1 = (uint8_t)with[1];
        const int64_t *a = (const int64_t *)d->work[s0].parts[ev].cols[0].values.data;
        const int64_t *b = (const int64_t *)d->work[s1].parts[ev].cols[0].values.data;
        int64_t na = d->work[s0].parts[ev].take, nb = d->work[s1].parts[ev].take;
        int64_t i = 0, j = 0, o = 0;
        /* ties go to the lower slot (s0 < s1), as in the heap below */
        while (i < na && j < nb) {
            int t = b[j] < a[i];
            oc[o++] = t ? s1 : s0;
            i += !t;
            j += t;
        }
        if (i < na)
            memset(oc + o, s0, (size_t)(na - i));
        else if (j < nb)
            memset(oc + o, s1, (size_t)(nb - j));
        return 0;
    }
    /* k-way merge with a binary heap of (next ts, slot) */
    int k = 0;
    int *heap = malloc((size_t)(d->nwork > 0 ? d->nwork : 1) * sizeof(int));
    int64_t *pos = calloc((size_t)(d->nwork > 0 ? d->nwork : 1), sizeof(int64_t));
    if (!heap || !pos) {
        free(heap);
        free(pos);
        pool_fail(d, REC_NOMEM, NULL);
        return REC_NOMEM;
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
        if (wide)
            ((uint32_t *)order)[o] = (uint32_t)s;
        else
            ((uint8_t *)order)[o] = (uint8_t)s;
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
    const uint8_t *o8 = d->order_wide ? NULL : (const uint8_t *)d->order_cpu[ev];
    const uint32_t *o32 = d->order_wide ? (const uint32_t *)d->order_cpu[ev] : NULL;
#define SLOT_AT(r) (o8 ? (uint32_t)o8[r] : o32[r])
    /* one slot with rows: its column is copied whole */
    int nwith = 0, s0 = 0;
    for (int s = d->nwork - 1; s >= 0; s--)
        if (d->work[s].parts[ev].take) {
            nwith++;
            s0 = s;
        }
    int rc = -1;
    int32_t **map = NULL;
    /* each slot's rows go out in their order: next[s] is slot s's next row */
    uint32_t *next = calloc((size_t)(d->nwork > 0 ? d->nwork : 1), sizeof(uint32_t));
    if (!next)
        goto done;
    switch (dst->kind) {
    case TD_INT: {
        size_t w = (size_t)dst->bits / 8;
        buf_advise_huge(&dst->values, (size_t)total * w);
        if (buf_reserve(&dst->values, (size_t)total * w) < 0)
            goto done;
        char *o = dst->values.data;
        if (nwith == 1) {
            memcpy(o, d->work[s0].parts[ev].cols[col].values.data, (size_t)total * w);
            dst->values.len = (size_t)total * w;
            break;
        }
        /* each slot's column once, not through four loads a row */
        const char **src = malloc((size_t)(d->nwork > 0 ? d->nwork : 1) * sizeof(char *));
        if (!src)
            goto done;
        for (int s = 0; s < d->nwork; s++)
            src[s] = d->work[s].parts[ev].take ? d->work[s].parts[ev].cols[col].values.data
                                               : NULL;
        /* a constant size per case, so that memcpy is one load and one store */
#define GATHER(T, OC)                                                                  \
        for (int64_t r = 0; r < total; r++) {                                          \
            uint32_t s = OC[r];                                                        \
            memcpy(o + (size_t)r * sizeof(T), src[s] + (size_t)next[s]++ * sizeof(T),  \
                   sizeof(T));                                                         \
        }
#define GATHER_W(T)                                                                    \
        if (o8) {                                                                      \
            GATHER(T, o8)                                                              \
        } else {                                                                       \
            GATHER(T, o32)                                                             \
        }
        switch (w) {
        case 1: GATHER_W(uint8_t) break;
        case 2: GATHER_W(uint16_t) break;
        case 4: GATHER_W(uint32_t) break;
        default: GATHER_W(uint64_t) break;
        }
        free(src);
#undef GATHER_W
#undef GATHER
        dst->values.len = (size_t)total * w;
        break;
    }
    case TD_STR: case TD_DYNSTR: case TD_SYM: {
        map = calloc((size_t)(d->nwork > 0 ? d->nwork : 1), sizeof(int32_t *));
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
        buf_advise_huge(&dst->str.indices, (size_t)total * 4);
        if (buf_reserve(&dst->str.indices, (size_t)total * 4) < 0)
            goto done;
        int32_t *o = (int32_t *)dst->str.indices.data;
        const int32_t **isrc = malloc((size_t)(d->nwork > 0 ? d->nwork : 1) * sizeof(int32_t *));
        if (!isrc)
            goto done;
        for (int s = 0; s < d->nwork; s++)
            isrc[s] = d->work[s].parts[ev].take
                      ? (const int32_t *)d->work[s].parts[ev].cols[col].str.indices.data : NULL;
        /* a local index's first use adds its string to the output's dictionary (so the
           dictionary is in order of first use in the merged rows) */
#define STR_ROW(s, li)                                                                 \
            int32_t gi = map[s][li];                                                   \
            if (gi < 0) {                                                              \
                const StrCol *sc = &d->work[s].parts[ev].cols[col].str;                \
                const int32_t *offs = (const int32_t *)sc->offsets.data;               \
                /* a dictionary of empty strings only has no characters at all */      \
                gi = strcol_intern_valid(&dst->str, sc->chars.data ? sc->chars.data    \
                                         + offs[li] : "",                              \
                                         (size_t)(offs[li + 1] - offs[li]));           \
                if (gi < 0) {                                                          \
                    free(isrc);                                                        \
                    goto done;                                                         \
                }                                                                      \
                map[s][li] = gi;                                                       \
            }                                                                          \
            o[r] = gi;
        if (o8) {
            for (int64_t r = 0; r < total; r++) {
                uint32_t s = o8[r];
                int32_t li = isrc[s][next[s]++];
                STR_ROW(s, li)
            }
        } else {
            for (int64_t r = 0; r < total; r++) {
                uint32_t s = o32[r];
                int32_t li = isrc[s][next[s]++];
                STR_ROW(s, li)
            }
        }
#undef STR_ROW
        free(isrc);
        dst->str.indices.len = (size_t)total * 4;
        break;
    }
    default: {          /* lists and binary: offsets (rows + 1) and values */
        size_t w = dst->kind == TD_BIN ? 1 : (size_t)dst->bits / 8;
        int32_t zero = 0;
        buf_advise_huge(&dst->offsets, (size_t)(total + 1) * 4);
        if (buf_reserve(&dst->offsets, (size_t)(total + 1) * 4) < 0 ||
            buf_put(&dst->offsets, &zero, 4) < 0)
            goto done;
        int64_t end = 0;
        for (int64_t r = 0; r < total; r++) {
            uint32_t s = SLOT_AT(r);
            const td_column *sc = &d->work[s].parts[ev].cols[col];
            const int32_t *offs = (const int32_t *)sc->offsets.data;
            uint32_t row = next[s]++;
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
#undef SLOT_AT
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
        pool_fail(d, REC_NOMEM, NULL);
    return rc;
}

/* ------------------------------------------------------------ decoding */

static int cpu_slot_cmp(const void *a, const void *b)
{
    const CpuWork *x = a, *y = b;
    return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
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
        return TD_ENOMEM;
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

/* trace.dat: a slot per CPU with data in the buffer read. */
static Decoder *decoder_new(td_file *f, int jobs, char *err)
{
    Decoder *d = decoder_alloc(f, jobs, err);
    if (!d)
        return NULL;
    Buffer *b = &f->buffers[f->sel];
    d->b = b;
    d->work = calloc((size_t)(b->ncpu ? b->ncpu : 1), sizeof(CpuWork));
    if (!d->work)
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
    int64_t records = d->more_records, unknown = d->more_unknown;
    /* (perf.data: the span of the samples that count, INT64_MAX..INT64_MIN if none) */
    int64_t first = d->more_records ? d->more_first_ts : INT64_MAX;
    int64_t last = d->more_records ? d->more_last_ts : INT64_MIN;
    int64_t blocks = 0;
    for (int s = 0; s < d->nwork; s++) {
        CpuWork *w = &d->work[s];
        blocks += w->blocks;
        records += w->records;
        unknown += w->unknown;
        if (w->records) {
            if (w->first_ts < first)
                first = w->first_ts;
            if (w->last_ts > last)
                last = w->last_ts;
        }
    }
    if (!f->src) {      /* (perf.data: its rounds, counted when a range is set) */
        f->meta.blocks_decoded = blocks;
        if (!f->meta.ranged)
            f->meta.blocks_total = blocks;     /* a whole read decodes every block */
    }
    f->meta.records = records;
    f->meta.unknown_records = unknown;
    f->meta.first_ts = records && first <= last ? first : 0;
    f->meta.last_ts = records && first <= last ? last : 0;
}

/* Records of unknown event ids: a few are skipped with a warning, many are damage. */
static int judge_unknown(td_file *f, char *err)
{
    int64_t unknown = f->meta.unknown_records, records = f->meta.records;
    if (unknown && unknown * 100 > records)
        return seterr(err, "corrupt %s: %" PRId64 " of %" PRId64 " records carry an "
                      "event id that no event format in the file has", f->kind, unknown,
                      records), TD_FAIL;
    if (unknown && td_warn(f, "skipped %" PRId64 " of %" PRId64 " records whose event id has no "
                        "format in the file", unknown, records) < 0)
        return seterr(err, "out of memory"), TD_FAIL;
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
        return seterr(err, "out of memory"), TD_FAIL;
    /* one event at a time, so that only its order arrays exist (8 bytes a row) */
    for (int e = 0; e < f->nevents && !d->failed; e++) {
        td_event *ev = &f->events[e];
        free_columns(ev->cols, ev->ncols);
        ev->cols = NULL;
        ev->ncols = 0;
        if (!ev->wanted)
            continue;
        int64_t rows = 0;
        for (int s = 0; s < d->nwork; s++)
            rows += d->work[s].parts[e].take;
        if (!rows && f->no_empty_tables)
            continue;
        if (init_columns(f, e, &d->layouts[e], &ev->cols, &ev->ncols) < 0)
            return seterr(err, "out of memory"), TD_FAIL;
        for (int c = 0; c < ev->ncols; c++) {
            d->tasks[c].ev = e;
            d->tasks[c].col = c;
        }
        d->ntasks = ev->ncols;
        /* threads pay off for big tables only: a file has hundreds of small ones */
        if (order_task(d, e) == 0)
            run_pool(d, rows < GATHER_THREADED_ROWS ? 1 : d->jobs, ev->ncols, gather_task,
                     NULL, NULL);
        free(d->order_cpu[e]);
        d->order_cpu[e] = NULL;
#ifdef __GLIBC__
        /* the part columns just gathered were freed, the small ones into malloc's
           arenas (a perf.data has many slots, so many columns under the size that
           gets its own mapping): give their pages back before the next event's
           output columns grow, or the merge holds both */
        if (rows >= GATHER_THREADED_ROWS)
            malloc_trim(0);
#endif
    }
    if (d->failed)
        return seterr(err, "%s", d->err[0] ? d->err : "out of memory"), TD_FAIL;
    for (int s = 0; s < d->nwork; s++)
        for (int e = 0; e < f->nevents; e++) {
            Part *pt = &d->work[s].parts[e];
            pt->rows -= pt->take;
            pt->take = 0;
            pt->room = 0;       /* the gather freed or moved the columns */
            f->events[e].count += pt->seen;
            pt->seen = 0;
        }
    f->meta.nwarnings = f->nwarnings;
    f->meta.warnings = (const char *const *)f->warnings;
    f->meta.lost_per_cpu = f->lost_per_cpu;
    return 0;
}

int td_decode(td_file *f, int jobs, td_tick tick, void *ctx, char *err)
{
    Decoder *d = f->src ? f->src->decoder_new(f, jobs, err) : decoder_new(f, jobs, err);
    if (!d)
        return TD_FAIL;
    int rc = -1;
    if (f->src)
        f->src->run(d, tick, ctx);
    else
        run_pool(d, d->jobs, d->nwork, cpu_task, tick, ctx);
    if (d->failed) {
        if (d->failed == 3)
            rc = TD_STOPPED;
        else
            seterr(err, "%s", d->err[0] ? d->err : "corrupt data");
        goto out;
    }
    if (!f->src && check_trace_span(d, err) < 0)
        goto out;
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
        return seterr(err, "out of memory"), TD_FAIL;
    st->d = f->src ? f->src->decoder_new(f, 1, err) : decoder_new(f, 1, err);
    if (!st->d) {
        free(st);
        return TD_FAIL;
    }
    st->d->streaming = 1;
    st->done = calloc((size_t)st->d->nwork + 1, sizeof(int));
    if (!st->done) {
        td_stream_close(st);
        return seterr(err, "out of memory"), TD_FAIL;
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

/* trace.dat: decode until batch_rows rows wait; *horizon: rows before it can go out
   (every CPU is decoded past it), *all_done: nothing is left to decode. */
static int tracedat_stream_step(td_stream *st, int64_t batch_rows, int64_t *horizon,
                                int *all_done, char *err)
{
    Decoder *d = st->d;
    td_file *f = d->f;
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
        if (rc >= 0 && check_cpu_times(d, &d->work[behind]) < 0)
            rc = REC_DAMAGE;
        if (rc < 0) {
            if (!d->work[behind].err[0])
                snprintf(d->work[behind].err, TD_ERRLEN, "corrupt %s", f->kind);
            return seterr(err, "%s",
                          rc == REC_NOMEM ? "out of memory" : d->work[behind].err), TD_FAIL;
        }
        if (rc == 0)
            st->done[behind] = 1;
        if (pending_rows(d) >= batch_rows)
            break;
    }
    if (check_trace_span(d, err) < 0)
        return TD_FAIL;
    /* the horizon: rows before the earliest "last decoded" time of a CPU that is
       not done can go out; with every CPU done, all can */
    *horizon = INT64_MAX;
    *all_done = 1;
    for (int s = 0; s < d->nwork; s++)
        if (!st->done[s]) {
            *all_done = 0;
            if (d->work[s].last_ts < *horizon)
                *horizon = d->work[s].last_ts;
        }
    return 0;
}

int td_stream_next(td_stream *st, int64_t batch_rows, char *err)
{
    Decoder *d = st->d;
    td_file *f = d->f;
    err[0] = 0;
    f->err = err;
    if (st->finished)
        return 0;
    int64_t horizon = INT64_MAX;
    int all_done = 1;
    if (f->src) {
        if (f->src->stream_step(d, batch_rows, &horizon, &all_done, err) < 0)
            return TD_FAIL;
    } else if (tracedat_stream_step(st, batch_rows, &horizon, &all_done, err) < 0) {
        return TD_FAIL;
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
            return TD_FAIL;
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
