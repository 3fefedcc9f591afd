/*
 * _td_records.c: records into columns.  The output columns of an event (the
 * common ones, then the format's fields), one record appended to them, and the
 * ring-buffer pages of a trace.dat CPU: a u64 timestamp, the commit word, then
 * events with a 32-bit header (type_len:5, time_delta:27), time extends,
 * absolute time stamps and padding.
 */
#include "_td_internal.h"

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

int make_layout(td_file *f, int idx, Layout *lay)
{
    EvInfo *in = &f->info[idx];
    lay->nfields = in->nfields;
    lay->prev_state = -1;
    lay->split = NULL;
    lay->kind = calloc((size_t)in->nfields + 1, sizeof(enum td_kind));
    /* the split format is 6 KiB: a file has thousands of formats, one needs it kept */
    SplitFmt *sp = malloc(sizeof(SplitFmt));
    if (!lay->kind || !sp) {
        free(lay->kind);
        lay->kind = NULL;
        free(sp);
        return TD_ENOMEM;
    }
    lay->pf_ok = in->print_fmt &&
                 split_print_fmt(in->print_fmt, &sp->pf, sp->fmtbuf, sizeof(sp->fmtbuf)) == 0;
    for (int i = 0; i < in->nfields; i++) {
        lay->kind[i] = field_kind(&in->fields[i], &sp->pf, lay->pf_ok);
        if (!strcmp(f->events[idx].name, "sched_switch") &&
            !strcmp(in->fields[i].name, "prev_state") && lay->kind[i] == TD_INT)
            lay->prev_state = i;
    }
    if (lay->prev_state >= 0 && lay->pf_ok)
        lay->split = sp;
    else
        free(sp);
    /* the fast path's ops: fields the format places inside its fixed part (checked
       against each record's size by record_too_short, as for the generic path) */
    lay->ops = NULL;
    int fast = !f->swap && in->nfields > 0 && in->nextra == 0 && in->ncommon == NCOMMON;
    for (int i = 0; i < in->nfields && fast; i++) {
        const Field *fl = &in->fields[i];
        fast = (lay->kind[i] == TD_INT && fl->size >= 1 && fl->size <= 8 &&
                (fl->size & (fl->size - 1)) == 0) ||
               (lay->kind[i] == TD_STR && fl->size >= 1 && fl->size <= 16);
        fast = fast && fl->offset >= 0 && fl->offset + fl->size <= in->fields_end;
    }
    if (fast && !(lay->ops = calloc((size_t)in->nfields, sizeof(FieldOp)))) {
        free_layout(lay);
        return TD_ENOMEM;
    }
    for (int i = 0, k = NCOMMON; fast && i < in->nfields; i++, k++) {
        const Field *fl = &in->fields[i];
        FieldOp *op = &lay->ops[i];
        op->off = fl->offset;
        op->size = (uint8_t)fl->size;
        op->col = (uint16_t)k;
        if (lay->kind[i] == TD_STR)
            op->code = OP_STR;
        else if (i == lay->prev_state)
            op->code = OP_STATE, k++;   /* prev_state_str follows */
        else
            op->code = fl->size == 1 ? OP_I8 : fl->size == 2 ? OP_I16
                       : fl->size == 4 ? OP_I32 : OP_I64;
    }
    return 0;
}

void free_layout(Layout *lay)
{
    free(lay->kind);
    free(lay->split);
    free(lay->ops);
    lay->kind = NULL;
    lay->split = NULL;
    lay->ops = NULL;
}

/* Whether a wanted event has a field printed as a kernel symbol (%ps), which
   only kallsyms can name: 1, 0, or TD_ENOMEM. */
int td_needs_kallsyms(td_file *f)
{
    for (int e = 0; e < f->nevents; e++) {
        if (!f->events[e].wanted || !f->info[e].nfields)
            continue;
        Layout lay;
        memset(&lay, 0, sizeof(lay));
        if (make_layout(f, e, &lay) < 0)
            return TD_ENOMEM;
        int found = 0;
        for (int i = 0; i < f->info[e].nfields && !found; i++)
            found = lay.kind[i] == TD_SYM;
        free_layout(&lay);
        if (found)
            return 1;
    }
    return 0;
}

/* Output columns of event idx: the common ones, the format's fields (and
   prev_state_str), then the perf.data sample columns. */
int event_ncols(const td_file *f, int idx, const Layout *lay)
{
    const EvInfo *in = &f->info[idx];
    return in->ncommon + in->nfields + (lay->prev_state >= 0) + in->nextra;
}

/* The columns of one event, allocated empty, in output order. */
int init_columns(td_file *f, int idx, const Layout *lay, td_column **out, int *ncols)
{
    EvInfo *in = &f->info[idx];
    int n = event_ncols(f, idx, lay);
    td_column *c = calloc((size_t)n, sizeof(td_column));
    if (!c)
        return TD_ENOMEM;
    static const struct { const char *name; enum td_kind k; int bits, sgn; } common[NCOMMON] = {
        {"ts", TD_INT, 64, 1}, {"cpu", TD_INT, 32, 1}, {"common_pid", TD_INT, 32, 1},
        {"common_comm", TD_STR, 0, 0}, {"common_flags", TD_INT, 8, 0},
        {"common_preempt_count", TD_INT, 8, 0}};
    for (int i = 0; i < in->ncommon; i++) {
        c[i].name = (char *)common[i].name;
        c[i].kind = common[i].k;
        c[i].bits = common[i].bits;
        c[i].is_signed = common[i].sgn;
    }
    int k = in->ncommon;
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
    for (int i = 0; i < in->nextra; i++) {
        td_column *col = &c[k++];
        col->name = (char *)in->extra[i].name;
        col->kind = in->extra[i].kind;
        col->bits = in->extra[i].bits;
        col->is_signed = in->extra[i].is_signed;
    }
    *out = c;
    *ncols = n;
    return 0;
}

void free_columns(td_column *c, int n)
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

/* A string column's index for raw bytes p[0..n) (n <= 16), through a cache.  The
   key is the bytes themselves: the common width (a task name, TASK_COMM_LEN 16) is
   read in two fixed loads, not a memcpy of a variable length. */
static inline int32_t cached_fixed(Cache *cache, StrCol *s, const uint8_t *p, int n)
{
    uint64_t lo = 0, hi = 0;
    if (n == 16) {
        memcpy(&lo, p, 8);
        memcpy(&hi, p + 8, 8);
    } else {
        memcpy(&lo, p, n < 8 ? (size_t)n : 8);
        if (n > 8)
            memcpy(&hi, p + 8, (size_t)n - 8);
    }
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

int part_init(td_file *f, Decoder *d, int ev, Part *pt)
{
    if (init_columns(f, ev, &d->layouts[ev], &pt->cols, &pt->ncols) < 0)
        return TD_ENOMEM;
    pt->caches = calloc((size_t)pt->ncols, sizeof(Cache *));
    if (!pt->caches)
        return TD_ENOMEM;
    return 0;
}

/* The dictionary index of the current task's name in a part's common_comm (column
   3), cached under `key`: `name`, or (name NULL) the saved cmdlines' name of `pid`,
   looked up on a miss only.  The index, or TD_ENOMEM. */
static inline int32_t comm_index(Part *pt, const td_file *f, uint64_t key, const char *name,
                                 int32_t pid)
{
    Cache *cc = cache_of(pt, 3);
    if (!cc)
        return TD_ENOMEM;
    size_t slot = (key ^ (key >> 12)) & (CACHE_SIZE - 1);
    if (cc->idx[slot] && cc->key[slot] == key)
        return cc->idx[slot] - 1;
    if (!name)
        name = comm_of(f, pid);
    int32_t idx = strcol_intern(&pt->cols[3].str, name, strlen(name));
    if (idx >= 0) {
        cc->key[slot] = key;
        cc->idx[slot] = idx + 1;
    }
    return idx;
}

/* Append the current task's name `name` (its dictionary index cached under `key`) to
   a part's common_comm.  TD_OK or TD_ENOMEM. */
int append_comm(Part *pt, uint64_t key, const char *name)
{
    pt->room = 0;       /* a row appended outside append_record() */
    return put_index(&pt->cols[3].str, comm_index(pt, NULL, key, name, 0));
}

/* The rows a part of CPU slot w will have when its data is decoded, estimated from
   the share of the data decoded so far (trace.dat, a whole read; else 0: unknown). */
static int64_t expect_rows(const Decoder *d, const CpuWork *w, int64_t rows)
{
    if (!d->b || d->streaming || d->f->span || !w->started)
        return 0;
    double done;
    if (d->b->compressed)
        done = w->r.size ? (double)w->r.pos / (double)w->r.size : 0;
    else
        done = d->b->cpu[w->cpu_slot].size
               ? (double)w->pos / (double)d->b->cpu[w->cpu_slot].size : 0;
    /* a few per cent under: the last huge page of a column should be one it fills */
    return done > 0.01 ? (int64_t)((double)rows / done * 0.94) : 0;
}

/* Make room for at least one more row in every fixed-width column of a record
   (a number, a string's dictionary index, a list's offset): pt->room rows.  The
   appends then write these without a check each.  Columns that will hold `expect`
   rows (0: unknown) get that many in huge pages (buf_advise_huge).  TD_OK or
   TD_ENOMEM. */
static int part_reserve(Part *pt, int ncols, int64_t expect)
{
    int64_t grow = pt->rows < 1024 ? 1024 : pt->rows / 2;
    for (int k = 0; k < ncols; k++) {
        td_column *col = &pt->cols[k];
        Buf *b;
        size_t w;
        switch (col->kind) {
        case TD_INT: b = &col->values; w = (size_t)col->bits / 8; break;
        case TD_STR: case TD_DYNSTR: case TD_SYM: b = &col->str.indices; w = 4; break;
        default: b = &col->offsets; w = 4; break;
        }
        if (expect > pt->rows)
            buf_advise_huge(b, (size_t)expect * w + BUF_HUGE / 2);
        if (buf_reserve(b, (size_t)grow * w) < 0)
            return TD_ENOMEM;
    }
    pt->room = grow;
    return 0;
}

/* REC_DAMAGE (w->err says which field) when a record of event ev is too short for
   its format's fixed fields, else 0: each field would read bytes of the next record
   or none (a kernel record always holds its event's whole struct). */
static int short_record(const td_file *f, CpuWork *w, int ev, int size, int64_t ts)
{
    const EvInfo *in = &f->info[ev];
    const Field *past = NULL;
    for (int i = 0; i < in->nfields && !past; i++)
        if (in->fields[i].offset + in->fields[i].size > size)
            past = &in->fields[i];
    snprintf(w->err, sizeof(w->err), "corrupt %s: a %s record of %d bytes on CPU %u (at %"
             PRId64 " ns) ends before its field %s (bytes %d..%d of the format)", f->kind,
             f->events[ev].name, size, w->cpu, ts, past ? past->name : "?",
             past ? past->offset : 0, past ? past->offset + past->size : in->fields_end);
    return REC_DAMAGE;
}

static inline int record_too_short(const td_file *f, CpuWork *w, int ev, int size, int64_t ts)
{
    return size >= f->info[ev].fields_end ? 0 : short_record(f, w, ev, size, ts);
}

/* Where a __data_loc/__rel_loc field's value lies in the record: 0 with *s, *n
   set, or REC_DAMAGE (w->err says which field points where) when outside. */
static int dynamic_value(const td_file *f, CpuWork *w, int ev, const Field *fl,
                         const uint8_t *rec, int size, const uint8_t **s, size_t *n)
{
    int swap = f->swap;
    uint32_t loc = (uint32_t)ld(rec + fl->offset, fl->size >= 4 ? 4 : fl->size >= 2 ? 2 : 1,
                                swap);
    size_t off = loc & 0xffff, len = fl->size >= 4 ? loc >> 16 : 0;
    if (fl->is_relative)
        off += (size_t)fl->offset + (size_t)fl->size;
    if (fl->size < 4)       /* old 2-byte form: a NUL-terminated string */
        len = off < (size_t)size ? (size_t)size - off : 0;
    if (off > (size_t)size || len > (size_t)size - off) {
        snprintf(w->err, sizeof(w->err), "corrupt %s: a %s record of %d bytes on CPU %u: "
                 "its field %s (%s) points to bytes %zu..%zu, outside the record", f->kind,
                 f->events[ev].name, size, w->cpu, fl->name, fl->type, off, off + len);
        return REC_DAMAGE;
    }
    *s = rec + off;
    *n = len;
    return 0;
}

/* Append the text of sched_switch's prev_state value sv to its prev_state_str
   column ps (the values seen are kept with their dictionary index).  0, REC_NOMEM,
   or REC_DAMAGE (the print format does not evaluate for it). */
static int append_state(Decoder *d, CpuWork *w, Part *pt, const Layout *lay,
                        const EvInfo *in, td_column *ps, int64_t sv, const uint8_t *rec,
                        int size)
{
    int32_t idx = -1;
    for (int s = 0; s < pt->nstates; s++)
        if (pt->state_vals[s] == sv) {
            idx = pt->state_idx[s];
            break;
        }
    if (idx < 0) {
        char text[96];
        if (!lay->split ||
            prev_state_text(d->f, in, &lay->split->pf, rec, size, text, sizeof(text)) < 0) {
            snprintf(w->err, sizeof(w->err), "corrupt %s: the print format "
                     "of sched_switch does not evaluate for prev_state=%" PRId64, d->f->kind, sv);
            return REC_DAMAGE;
        }
        idx = strcol_intern(&ps->str, text, strlen(text));
        if (idx < 0)
            return REC_NOMEM;
        if (pt->nstates < 64) {
            pt->state_vals[pt->nstates] = sv;
            pt->state_idx[pt->nstates++] = idx;
        }
    }
    put_fixed(&ps->str.indices, (uint32_t)idx, 4);
    return 0;
}

/* Append one record (its payload rec[0..size), at least the common fields) to the
   event's partial table: the common columns and the format's fields.  `comm` is
   the current task's name where the caller knows it (perf.data: its COMM
   history), NULL to take it from the saved cmdlines.  The caller appends the
   event's extra columns, if any. */
int append_record(Decoder *d, CpuWork *w, int ev, const uint8_t *rec, int size, int64_t ts,
                  const char *comm)
{
    td_file *f = d->f;
    Part *pt = &w->parts[ev];
    if (record_too_short(f, w, ev, size, ts))
        return REC_DAMAGE;
    if (!pt->cols && part_init(f, d, ev, pt) < 0)
        return REC_NOMEM;
    const EvInfo *in = &f->info[ev];
    const Layout *lay = &d->layouts[ev];
    td_column *c = pt->cols;
    int swap = f->swap;
    if (pt->room == 0 &&
        part_reserve(pt, pt->ncols - in->nextra, expect_rows(d, w, pt->rows)) < 0)
        return REC_NOMEM;
    pt->room--;
    /* below, every fixed-width column has room for this row (part_reserve) */
    int32_t pid = (int32_t)ld(rec + f->common_pid_off, 4, swap);
    put_fixed(&c[0].values, (uint64_t)ts, 8);
    put_fixed(&c[1].values, w->cpu, 4);
    put_fixed(&c[2].values, (uint32_t)pid, 4);
    put_fixed(&c[4].values, rec[f->common_flags_off], 1);
    put_fixed(&c[5].values, rec[f->common_preempt_off], 1);
    /* the key: the pid (cmdlines give one name a pid), or the name's own address (a
       perf COMM history entry, one string per entry) */
    int32_t ci = comm_index(pt, f, comm ? (uint64_t)(uintptr_t)comm : (uint64_t)(uint32_t)pid,
                            comm, pid);
    if (ci < 0)
        return REC_NOMEM;
    put_fixed(&c[3].str.indices, (uint32_t)ci, 4);
    if (lay->ops) {
        /* every field a fixed-width number or a short string inside the record's
           fixed part (record_too_short checked it): no per-field decisions but one */
        const FieldOp *op = lay->ops, *end = op + in->nfields;
        for (; op < end; op++) {
            const uint8_t *p = rec + op->off;
            td_column *col = &c[op->col];
            switch (op->code) {
            case OP_I8: put_fixed(&col->values, *p, 1); break;
            case OP_I16: memcpy(col->values.data + col->values.len, p, 2);
                col->values.len += 2; break;
            case OP_I32: memcpy(col->values.data + col->values.len, p, 4);
                col->values.len += 4; break;
            case OP_I64: memcpy(col->values.data + col->values.len, p, 8);
                col->values.len += 8; break;
            case OP_STATE: {
                uint64_t v = ld(p, op->size, 0);
                put_fixed(&col->values, v, op->size);
                int rc = append_state(d, w, pt, lay, in, col + 1, (int64_t)v, rec, size);
                if (rc < 0)
                    return rc;
                break;
            }
            default: {      /* OP_STR */
                Cache *cc = pt->caches[op->col];
                if (!cc && !(cc = cache_of(pt, op->col)))
                    return REC_NOMEM;
                int32_t idx = cached_fixed(cc, &col->str, p, op->size);
                if (idx < 0)
                    return REC_NOMEM;
                put_fixed(&col->str.indices, (uint32_t)idx, 4);
                break;
            }
            }
        }
        pt->rows++;
        return 0;
    }
    int k = NCOMMON;
    for (int i = 0; i < in->nfields; i++, k++) {
        const Field *fl = &in->fields[i];
        td_column *col = &c[k];
        /* inside the record: record_too_short() checked the fixed fields' end */
        const uint8_t *p = rec + fl->offset;
        switch (col->kind) {
        case TD_INT: {
            uint64_t v = ld(p, fl->size, swap);
            put_fixed(&col->values, v, fl->size);
            if (i == lay->prev_state) {
                int rc = append_state(d, w, pt, lay, in, &c[++k], (int64_t)v, rec, size);
                if (rc < 0)
                    return rc;
            }
            break;
        }
        case TD_SYM: {
            uint64_t addr = ld(p, fl->size, swap);
            Cache *cc = cache_of(pt, k);
            if (!cc)
                return REC_NOMEM;
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
                    return REC_NOMEM;
                cc->key[slot] = addr;
                cc->idx[slot] = idx + 1;
            }
            put_fixed(&col->str.indices, (uint32_t)idx, 4);
            break;
        }
        case TD_STR: {
            int32_t idx;
            if (fl->size > 0 && fl->size <= 16) {
                Cache *cc = cache_of(pt, k);
                if (!cc)
                    return REC_NOMEM;
                idx = cached_fixed(cc, &col->str, p, fl->size);
            } else {
                size_t room = fl->size ? (size_t)fl->size : (size_t)(size - fl->offset);
                idx = strcol_intern(&col->str, (const char *)p, strnlen((const char *)p, room));
            }
            if (idx < 0)
                return REC_NOMEM;
            put_fixed(&col->str.indices, (uint32_t)idx, 4);
            break;
        }
        case TD_DYNSTR:
        case TD_DYNARRAY: {
            const uint8_t *s;
            size_t n;
            if (dynamic_value(f, w, ev, fl, rec, size, &s, &n))
                return REC_DAMAGE;
            if (col->kind == TD_DYNSTR) {
                int32_t idx = strcol_intern(&col->str, (const char *)s,
                                            strnlen((const char *)s, n));
                if (idx < 0)
                    return REC_NOMEM;
                put_fixed(&col->str.indices, (uint32_t)idx, 4);
            } else {
                int e = fl->elem;
                for (size_t q = 0; q + (size_t)e <= n; q += (size_t)e)
                    if (put_num(&col->values, ld(s + q, e, swap), e))
                        return REC_NOMEM;
                int64_t end = (int64_t)(col->values.len / (size_t)e);
                if (end > INT32_MAX)
                    return REC_NOMEM;
                put_fixed(&col->offsets, (uint32_t)end, 4);
            }
            break;
        }
        case TD_ARRAY: {
            int e = fl->elem;
            int room = fl->size ? fl->size : (size > fl->offset ? size - fl->offset : 0);
            for (int q = 0; q + e <= room; q += e)
                if (put_num(&col->values, ld(p + q, e, swap), e))
                    return REC_NOMEM;
            int64_t end = (int64_t)(col->values.len / (size_t)e);
            if (end > INT32_MAX)
                return REC_NOMEM;
            put_fixed(&col->offsets, (uint32_t)end, 4);
            break;
        }
        case TD_BIN: {
            if (buf_put(&col->values, p, (size_t)fl->size))
                return REC_NOMEM;
            if (col->values.len > INT32_MAX)
                return REC_NOMEM;
            put_fixed(&col->offsets, (uint32_t)col->values.len, 4);
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

/* A time-range read: a record (or a lost-event row) at time t must not be before its
   page's time (`lo`), which the blocks to decode were chosen by (the records after it
   in the page, and the next pages, are not before it either: decode_page checks). */
static int before_its_page(const Decoder *d, CpuWork *w, int64_t t, int64_t lo, uint64_t foff)
{
    if (t >= lo)
        return 0;
    snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %" PRIu64 " has a "
             "record at time %" PRId64 ", before the page's own time %" PRId64 ": its pages are "
             "not in time order, and a time range of it cannot be read (read it whole)",
             d->f->kind, w->cpu, foff, t, lo);
    return 1;
}

/* Decode one ring-buffer page at file offset `foff`.  *prev_raw carries the last
   raw timestamp of this CPU, to refuse time going backwards.  `ranged` (a constant:
   decode_page and decode_page_ranged are its two copies, so that the whole read
   pays nothing for ranges) keeps only records in [f->range_t0, f->range_t1). */
static inline __attribute__((always_inline)) int decode_page_in(Decoder *d, CpuWork *w,
                                                                const uint8_t *page,
                                                                uint64_t foff, const int ranged)
{
    uint64_t *prev_raw = &w->prev_raw;
    int *first_page = &w->first_page;
    td_file *f = d->f;
    uint32_t psize = d->b->page_size;
    int swap = f->swap;
    uint64_t ts = ld(page, 8, swap);
    uint64_t commit = ld(page + 8, f->commit_size, swap);
    const int64_t page_lo = ranged ? (int64_t)(tsc_ns(f, ts) + (uint64_t)f->ts_offset) : 0;
    uint32_t size = (uint32_t)commit & COMMIT_MASK;
    const uint8_t *data = page + f->data_offset;
    uint32_t room = psize - (uint32_t)f->data_offset;
    /* the commit word is the bytes of events and two flags of lost events (bit 31, a
       negative int, sign-extends into the upper half of a 64-bit local_t): the kernel
       sets no other bit, so one set is a damaged word whose size cannot be trusted */
    uint64_t upper = commit >> 32;
    if ((commit >> 27 & 7) || (upper && !(upper == 0xffffffffu && (commit & MISSING_EVENTS)))) {
        snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %" PRIu64
                 " has commit word 0x%" PRIx64 ", with bits the kernel never sets", d->f->kind,
                 w->cpu, foff, commit);
        return REC_DAMAGE;
    }
    if (size > room) {
        snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %" PRIu64
                 " says %u bytes of events, more than its %u", d->f->kind, w->cpu, foff, size, room);
        return REC_DAMAGE;
    }
    int64_t missed = 0;
    if (commit & MISSING_EVENTS) {
        missed = -1;
        if (commit & MISSING_STORED) {
            if ((uint32_t)f->long_size > room - size) {
                snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %"
                         PRIu64 " has no room for its lost-event count", d->f->kind, w->cpu, foff);
                return REC_DAMAGE;
            }
            uint64_t n = ld(data + size, f->long_size, swap);
            if (n > MAX_LOST) {
                snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %"
                         PRIu64 " says %" PRIu64 " events were lost before it", d->f->kind, w->cpu, foff, n);
                return REC_DAMAGE;
            }
            missed = n > 0 ? (int64_t)n : -1;
        }
    }
    if (size == 0 && !missed) {
        /* an empty page: real recordings have none between full ones; a zeroed
           page (timestamp 0) is damage that would hide its events */
        if (ts == 0 && commit == 0) {
            snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %"
                     PRIu64 " is all zeros (its events are lost)", d->f->kind, w->cpu, foff);
            return REC_DAMAGE;
        }
        /* a page that says it holds no event but has event headers: a damaged
           commit word that hides them */
        if (room >= 4 && ld(data, 4, swap) != 0) {
            snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %" PRIu64
                     " says it holds 0 bytes of events, but its data starts with an event"
                     " header (its events would be lost)", d->f->kind, w->cpu, foff);
            return REC_DAMAGE;
        }
        return 0;
    }
    if (*first_page == 0 && ts < *prev_raw) {
        snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %" PRIu64
                 " starts at time %" PRIu64 ", before the previous page's last event (%" PRIu64
                 ")", d->f->kind, w->cpu, foff, ts, *prev_raw);
        return REC_DAMAGE;
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
            snprintf(w->err, sizeof(w->err), "corrupt %s: time goes backwards on CPU %u"
                     " in the page at offset %" PRIu64 " (%" PRIu64 " after %" PRIu64 ")", d->f->kind,
                     w->cpu, foff, ts, *prev_raw);
            return REC_DAMAGE;
        }
        *prev_raw = ts;
        *first_page = 0;
        int64_t t = (int64_t)(tsc_ns(f, ts) + (uint64_t)f->ts_offset);
        if (ranged) {
            if (before_its_page(d, w, t, page_lo, foff))
                return REC_DAMAGE;
            if (t < f->range_t0 || t >= f->range_t1) {
                got_missed = 1;     /* the page's lost row has this time: outside too */
                continue;
            }
        }
        w->records++;
        if (w->records == 1)
            w->first_ts = t;
        w->last_ts = t;
        if (!got_missed) {
            int64_t cpu = w->cpu;
            int32_t cpu32 = (int32_t)cpu;
            if (buf_put(&w->lost_ts, &t, 8) || buf_put(&w->lost_cpu, &cpu32, 4) ||
                buf_put(&w->lost_count, &missed, 8))
                return REC_NOMEM;
            w->lost_sum = w->lost_sum > INT64_MAX - MAX_LOST ? INT64_MAX
                          : w->lost_sum + (missed > 0 ? missed : 1);
            got_missed = 1;
        }
        if ((int)len < f->common_size) {
            snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u record of %u bytes at "
                     "offset %" PRIu64 " is shorter than the common event header", d->f->kind, w->cpu, len,
                     foff + (uint64_t)f->data_offset + (uint64_t)(payload - data));
            return REC_DAMAGE;
        }
        uint64_t id = ld(payload + f->common_type_off, f->common_type_size, swap);
        int32_t idx = id <= (uint64_t)f->max_id ? f->by_id[id] : -1;
        if (idx < 0) {
            w->unknown++;
            continue;
        }
        w->parts[idx].seen++;
        if (f->events[idx].wanted) {
            int rc = append_record(d, w, idx, payload, (int)len, t, NULL);
            if (rc < 0)
                return rc;
        } else if (record_too_short(f, w, idx, (int)len, t)) {
            return REC_DAMAGE;  /* read or not: the data is damaged */
        }
    }
page_done:
    if (!got_missed) {
        /* a page that lost events before it but holds no record: still say so */
        int64_t t = (int64_t)(tsc_ns(f, ts) + (uint64_t)f->ts_offset);
        if (ranged) {
            if (before_its_page(d, w, t, page_lo, foff))
                return REC_DAMAGE;
            if (t < f->range_t0 || t >= f->range_t1)
                return 0;
        }
        int32_t cpu = (int32_t)w->cpu;
        if (buf_put(&w->lost_ts, &t, 8) || buf_put(&w->lost_cpu, &cpu, 4) ||
            buf_put(&w->lost_count, &missed, 8))
            return REC_NOMEM;
        w->lost_sum = w->lost_sum > INT64_MAX - MAX_LOST ? INT64_MAX
                      : w->lost_sum + (missed > 0 ? missed : 1);
    }
    return 0;
bad:
    snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u page at offset %" PRIu64
             ": an event at byte %u runs past the page's %u bytes of events", d->f->kind, w->cpu, foff,
             pos, size);
    return REC_DAMAGE;
}

static int decode_page(Decoder *d, CpuWork *w, const uint8_t *page, uint64_t foff)
{
    return decode_page_in(d, w, page, foff, 0);
}

static int decode_page_ranged(Decoder *d, CpuWork *w, const uint8_t *page, uint64_t foff)
{
    return decode_page_in(d, w, page, foff, 1);
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

int decode_step(Decoder *d, CpuWork *w)
{
    td_file *f = d->f;
    const CpuData *c = &d->b->cpu[w->cpu_slot];
    uint32_t psize = d->b->page_size;
    if (d->cancel)
        return REC_CANCELLED;
    const BlockSpan *span = f->span ? &f->span[w->cpu_slot] : NULL;
    if (!d->b->compressed) {
        if (!w->started) {
            if (span)
                w->pos = (uint64_t)span->first * psize;
            w->started = 1;
        }
        if (w->pos >= (span ? (uint64_t)span->end * psize : c->size))
            return 0;
        int rc;
        if (span) {
            rc = decode_page_ranged(d, w, f->data + c->offset + w->pos, c->offset + w->pos);
        } else {
            rc = decode_page(d, w, f->data + c->offset + w->pos, c->offset + w->pos);
        }
        if (rc < 0)
            return rc;
        w->blocks++;
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
            return REC_DAMAGE;
        w->started = 1;
    }
    if (w->pos >= w->chunk_len) {
        uint64_t csize, usize;
        const uint8_t *src;
        for (;;) {
            if (w->chunk_no == w->nchunks) {
                if (w->r.pos != w->r.size) {
                    snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u compressed data "
                             "has %zu bytes after its %" PRIu64 " chunks (offset %" PRIu64 ")",
                             d->f->kind, w->cpu, w->r.size - w->r.pos, w->nchunks,
                             w->r.base + w->r.pos);
                    return REC_DAMAGE;
                }
                return 0;
            }
            if (span && w->chunk_no >= (uint64_t)span->end)
                return 0;
            if (rd_u(&w->r, 4, &csize, "chunk compressed size") < 0 ||
                rd_u(&w->r, 4, &usize, "chunk size") < 0)
                return REC_DAMAGE;
            w->chunk_off = w->r.base + w->r.pos;
            if (rd_bytes(&w->r, (size_t)csize, &src, "compressed chunk") < 0)
                return REC_DAMAGE;
            if (!span || w->chunk_no >= (uint64_t)span->first)
                break;
            w->chunk_no++;      /* before the range: its header is all that is read */
        }
        if (usize > MAX_CHUNK_BYTES || usize % psize) {
            snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u chunk at offset %"
                     PRIu64 " says %" PRIu64 " bytes, not whole pages of %u (at most %u)", d->f->kind,
                     w->cpu, w->chunk_off, usize, psize, MAX_CHUNK_BYTES);
            return REC_DAMAGE;
        }
        if (usize > w->chunk_cap) {
            uint8_t *nb = realloc(w->chunk, (size_t)usize);
            if (!nb)
                return REC_NOMEM;
            w->chunk = nb;
            w->chunk_cap = (size_t)usize;
        }
        if (decompress_with(&w->zctx, f->comp, src, (size_t)csize, w->chunk, (size_t)usize) < 0) {
            snprintf(w->err, sizeof(w->err), "corrupt %s: CPU %u chunk at offset %"
                     PRIu64 " does not decompress to its %" PRIu64 " bytes", d->f->kind, w->cpu,
                     w->chunk_off, usize);
            return REC_DAMAGE;
        }
        w->chunk_no++;
        w->blocks++;
        w->chunk_len = usize;
        w->pos = 0;
        __atomic_fetch_add(&d->bytes_done, (int64_t)(csize + 8), __ATOMIC_RELAXED);
        release_consumed(d, w, w->r.base + w->r.pos);
        if (!usize)
            return 1;
    }
    int rc = span ? decode_page_ranged(d, w, w->chunk + w->pos, w->chunk_off)
                  : decode_page(d, w, w->chunk + w->pos, w->chunk_off);
    if (rc < 0)
        return rc;
    w->pos += psize;
    return 1;
}

int decode_cpu(Decoder *d, CpuWork *w)
{
    int rc;
    while ((rc = decode_step(d, w)) > 0)
        ;
    free(w->chunk);
    w->chunk = NULL;
    w->chunk_cap = 0;
    decompress_end(&w->zctx);
    return rc;
}


/* ---------------------------------------------------------- the index */

/*
 * A CPU's blocks are known from its data's layout: pages at every page_size bytes,
 * or chunks one after the other (a u32 count, then per chunk its compressed size,
 * its size and its bytes).  A block's time is its first page's that holds anything,
 * read when asked for: td_index() reads them all (a page header per page; per chunk
 * its first non-empty page decompressed, which with zstd means its first block of
 * up to 128 KiB: in practice the chunk), td_set_time_range() only the O(log n) its
 * binary search probes per CPU.
 */

#define NO_TS INT64_MIN             /* a block that holds nothing */
#define UNKNOWN_TS (INT64_MIN + 1)  /* not read yet */

/* The time of a page by its header, or NO_TS when it holds nothing: no byte of
   events and no lost-event flag (such a page's header time is not checked against
   its neighbours' by decode_page). */
static int64_t page_time(const td_file *f, const uint8_t *page)
{
    uint64_t commit = ld(page + 8, f->commit_size, f->swap);
    if (!(commit & COMMIT_MASK) && !(commit & MISSING_EVENTS))
        return NO_TS;
    return (int64_t)(tsc_ns(f, ld(page, 8, f->swap)) + (uint64_t)f->ts_offset);
}

/* The blocks of every CPU of the buffer, their times not read yet (UNKNOWN_TS); for
   compressed data the file offset of each chunk's header, its sizes checked as
   decode_step checks them. */
static int index_layout(td_file *f)
{
    const Buffer *b = &f->buffers[f->sel];
    uint32_t psize = b->page_size;
    td_cpu_blocks *ix = calloc((size_t)(b->ncpu ? b->ncpu : 1), sizeof(*ix));
    uint64_t **hdr = calloc((size_t)(b->ncpu ? b->ncpu : 1), sizeof(*hdr));
    if (own(f, ix) < 0 || own(f, hdr) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    for (int s = 0; s < b->ncpu; s++) {
        const CpuData *c = &b->cpu[s];
        int64_t n = 0;
        ix[s].cpu = c->cpu;
        if (c->size && !b->compressed) {
            n = (int64_t)(c->size / psize);     /* check_buffer: whole pages, in the file */
        } else if (c->size) {
            Rd r = {f->data + c->offset, (size_t)c->size + 4, 0, c->offset,
                    "compressed CPU data", f->swap, f->err};
            uint64_t nchunks, csize, usize;
            const uint8_t *src;
            if (rd_u(&r, 4, &nchunks, "chunk count") < 0)
                return TD_FAIL;
            /* each chunk takes 8 bytes at least: more than fit is damage */
            if (nchunks > (r.size - r.pos) / 8)
                return rd_fail(&r, "more chunks than the CPU's data can hold");
            hdr[s] = malloc((size_t)(nchunks ? nchunks : 1) * sizeof(uint64_t));
            if (own(f, hdr[s]) < 0)
                return seterr(f->err, "out of memory"), TD_FAIL;
            for (; n < (int64_t)nchunks; n++) {
                hdr[s][n] = r.base + r.pos;
                if (rd_u(&r, 4, &csize, "chunk compressed size") < 0 ||
                    rd_u(&r, 4, &usize, "chunk size") < 0 ||
                    rd_bytes(&r, (size_t)csize, &src, "compressed chunk") < 0)
                    return TD_FAIL;
                if (usize > MAX_CHUNK_BYTES || usize % psize)
                    return seterr(f->err, "corrupt %s: CPU %u chunk at offset %" PRIu64 " says %"
                                  PRIu64 " bytes, not whole pages of %u (at most %u)", f->kind,
                                  c->cpu, hdr[s][n] + 8, usize, psize, MAX_CHUNK_BYTES), TD_FAIL;
            }
        }
        ix[s].nblocks = n;
        ix[s].first_ts = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
        if (own(f, ix[s].first_ts) < 0)
            return seterr(f->err, "out of memory"), TD_FAIL;
        for (int64_t i = 0; i < n; i++)
            ix[s].first_ts[i] = UNKNOWN_TS;
    }
    f->index = ix;
    f->chunk_hdr = hdr;
    return TD_OK;
}

/* Scratch for reading blocks' times: a page, and a decompression stream. */
typedef struct {
    uint8_t *page;
    Inflow in;
} Probe;

/* Block i of CPU slot s: its own time (NO_TS: it holds nothing), read once. */
static int raw_time(td_file *f, Probe *pr, int s, int64_t i, int64_t *t)
{
    const Buffer *b = &f->buffers[f->sel];
    const CpuData *c = &b->cpu[s];
    int64_t *slot = &f->index[s].first_ts[i];
    uint32_t psize = b->page_size;
    if (*slot != UNKNOWN_TS) {
        *t = *slot;
        return TD_OK;
    }
    if (!b->compressed) {
        *t = *slot = page_time(f, f->data + c->offset + (uint64_t)i * psize);
        return TD_OK;
    }
    /* index_layout checked the header and that the bytes are in the file */
    uint64_t at = f->chunk_hdr[s][i];
    uint64_t csize = ld(f->data + at, 4, f->swap), usize = ld(f->data + at + 4, 4, f->swap);
    int rc = inflow_begin(&pr->in, f->comp, f->data + at + 8, (size_t)csize);
    int64_t found = NO_TS;
    for (uint64_t p = 0; rc == TD_OK && p < usize / psize && found == NO_TS; p++)
        if ((rc = inflow_read(&pr->in, pr->page, psize)) == TD_OK)
            found = page_time(f, pr->page);
    if (rc < 0)
        return seterr(f->err, "corrupt %s: CPU %u chunk at offset %" PRIu64 " does not "
                      "decompress to its %" PRIu64 " bytes", f->kind, c->cpu, at + 8, usize),
               TD_FAIL;
    *t = *slot = found;
    return TD_OK;
}

/* The time of block i (i == nblocks: the end, INT64_MAX): its own, or the next
   block's that holds anything when it holds nothing. */
static int block_time(td_file *f, Probe *pr, int s, int64_t i, int64_t *t)
{
    for (; i < f->index[s].nblocks; i++) {
        if (raw_time(f, pr, s, i, t) < 0)
            return TD_FAIL;
        if (*t != NO_TS)
            return TD_OK;
    }
    *t = INT64_MAX;
    return TD_OK;
}

static int probe_begin(td_file *f, Probe *pr)
{
    memset(pr, 0, sizeof(*pr));
    pr->page = malloc(f->buffers[f->sel].page_size);
    return pr->page ? TD_OK : (seterr(f->err, "out of memory"), TD_FAIL);
}

static void probe_end(Probe *pr)
{
    free(pr->page);
    inflow_end(&pr->in);
}

int td_index(td_file *f, const td_cpu_blocks **out, int *ncpus, char *err)
{
    *out = NULL;
    *ncpus = 0;
    char *keep = f->err;
    f->err = err;
    int n = f->src ? 1 : f->buffers[f->sel].ncpu, rc = TD_OK;
    if (f->src) {
        rc = f->index ? TD_OK : f->src->index(f, &n);
    } else if (!f->index_full) {
        Probe pr = {0};
        rc = f->index ? TD_OK : index_layout(f);
        if (rc == TD_OK)
            rc = probe_begin(f, &pr);
        for (int s = 0; rc == TD_OK && s < n; s++) {
            td_cpu_blocks *ix = &f->index[s];
            int64_t next = INT64_MAX, t = 0;
            /* every block's own time, then each that holds nothing takes the next's */
            for (int64_t i = 0; rc == TD_OK && i < ix->nblocks; i++)
                rc = raw_time(f, &pr, s, i, &t);
            for (int64_t i = ix->nblocks - 1; rc == TD_OK && i >= 0; i--) {
                if (ix->first_ts[i] == NO_TS)
                    ix->first_ts[i] = next;
                next = ix->first_ts[i];
            }
        }
        probe_end(&pr);
        f->index_full = rc == TD_OK;
    }
    f->err = keep;
    if (rc < 0)
        return TD_FAIL;
    *out = f->index;
    *ncpus = n;
    return TD_OK;
}

/* The first block i of CPU slot s in [lo, n) whose time is >= v (n: none). */
static int first_at_or_after(td_file *f, Probe *pr, int s, int64_t lo, int64_t v, int64_t *out)
{
    int64_t hi = f->index[s].nblocks, t;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (block_time(f, pr, s, mid, &t) < 0)
            return TD_FAIL;
        if (t < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    *out = lo;
    return TD_OK;
}

int td_set_time_range(td_file *f, int64_t t0, int64_t t1, char *err)
{
    if (t0 >= t1)
        return seterr(err, "time range: t0 (%" PRId64 ") must be before t1 (%" PRId64 ")", t0,
                      t1), TD_FAIL;
    f->range_t0 = t0;
    f->range_t1 = t1;
    f->meta.ranged = 1;
    f->meta.range_t0 = t0;
    f->meta.range_t1 = t1;
    if (f->src)                 /* perf.data: its rounds */
        return f->src->set_time_range(f, t0, t1, err);
    char *keep = f->err;
    f->err = err;
    int n = f->buffers[f->sel].ncpu, rc = f->index ? TD_OK : index_layout(f);
    BlockSpan *span = NULL;
    Probe pr = {0};
    if (rc == TD_OK) {
        span = calloc((size_t)(n ? n : 1), sizeof(*span));
        rc = own(f, span) < 0 ? (seterr(err, "out of memory"), TD_FAIL) : probe_begin(f, &pr);
    }
    int64_t total = 0;
    for (int s = 0; rc == TD_OK && s < n; s++) {
        /* block i holds [time(i), time(i + 1)]: the first that can reach t0 is the one
           before the first block starting at t0 or later; the blocks from the first
           starting at t1 or later hold nothing before t1 (decode_page checks both of
           the blocks it decodes: pages in time order, records not before their page) */
        int64_t nb = f->index[s].nblocks, first = 0, end = 0;
        if (nb)
            rc = first_at_or_after(f, &pr, s, 1, t0, &first);
        if (rc == TD_OK && first > 0)
            first--;
        if (rc == TD_OK)
            rc = first_at_or_after(f, &pr, s, first, t1, &end);
        span[s] = (BlockSpan){first, end > first ? end : first};
        total += nb;
    }
    probe_end(&pr);
    f->err = keep;
    if (rc < 0)
        return TD_FAIL;
    f->span = span;
    f->meta.blocks_total = total;
    return TD_OK;
}
