/*
 * _pass_completeness.c: the proofs of schedwake/model/completeness.py.
 *
 * event_segments: each event (a proof of the task current on its CPU) placed in the
 * segment of its CPU's switches it falls in, and told whether it is that segment's
 * task's.  One pass over the events instead of NumPy's gathers of each switch column
 * through the segment of every event (1.6 M wake-ups on big.dat, seven tables).
 *
 * timeline_rows: the timeline's rows in (CPU, time) order as one walk over the
 * segments (a clean one itself, a suspect one its runs) filling the holes as it goes,
 * instead of two lexsorts of millions of rows.  runs_order: the runs by (pid, start),
 * a counting sort by pid and a merge of each task's per-CPU sequences; runs_columns
 * their columns in that order, in one pass.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

enum { SEG_NONE = 0, SEG_OWN = 1, SEG_OTHER = 2, SEG_TIE = 3 };

/* event i in segment k (-1: none): seg[i] k, status[i] as the enum says; -2 when k is
 * outside the m switches */
static inline int place_event_in(Py_ssize_t i, int64_t k, Py_ssize_t m, const int64_t *ets,
                                 const void *epid, Py_ssize_t psize, const int64_t *sw_ts,
                                 const void *sw_next, Py_ssize_t nsize, int64_t *seg,
                                 int8_t *status)
{
    if (k < 0) {
        seg[i] = -1;
        status[i] = SEG_NONE;
        return 0;
    }
    if (k >= m)
        return -2;
    seg[i] = k;
    if (key_at(epid, psize, i) == key_at(sw_next, nsize, k))
        status[i] = SEG_OWN;
    else
        status[i] = ets[i] == sw_ts[k] ? SEG_TIE : SEG_OTHER;
    return 0;
}

/* event i in the segment of switch p (a position in the given order; -1: none), its
 * rank; -2 when p or its rank is outside the m switches */
static inline int place_event(Py_ssize_t i, int64_t p, const int64_t *rank, Py_ssize_t m,
                              const int64_t *ets, const void *epid, Py_ssize_t psize,
                              const int64_t *sw_ts, const void *sw_next, Py_ssize_t nsize,
                              int64_t *seg, int8_t *status)
{
    if (p >= m)
        return -2;
    int64_t k = p < 0 ? -1 : rank[p];
    if (p >= 0 && k < 0)
        return -2;
    return place_event_in(i, k, m, ets, epid, psize, sw_ts, sw_next, nsize, seg, status);
}

/* seg[i] = rank[pos[i]] (-1 when pos[i] < 0); status[i] as the enum says: SEG_TIE an
 * event of another task stamped with the very time of its segment's switch.  -2 when
 * a position or a rank is outside the m switches. */
static int event_segments(const int64_t *pos, Py_ssize_t n, const int64_t *rank,
                          Py_ssize_t m, const int64_t *ets, const void *epid,
                          Py_ssize_t psize, const int64_t *sw_ts, const void *sw_next,
                          Py_ssize_t nsize, int64_t *seg, int8_t *status)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (place_event(i, pos[i], rank, m, ets, epid, psize, sw_ts, sw_next, nsize, seg,
                        status) < 0)
            return -2;
    }
    return 0;
}

PyObject *pass_event_segments(PyObject *self, PyObject *args)
{
    PyObject *pos_o, *rank_o, *ets_o, *epid_o, *swts_o, *swnext_o, *seg_o, *status_o;
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &pos_o, &rank_o, &ets_o, &epid_o, &swts_o,
                          &swnext_o, &seg_o, &status_o))
        return NULL;
    Arr pos, rank, ets, epid, swts, swnext, seg, status;
    ArrSpec spec[] = {
        {pos_o, &pos, 8, 0, "event_segments pos"},
        {rank_o, &rank, 8, 0, "event_segments rank"},
        {ets_o, &ets, 8, 0, "event_segments ets"},
        {swts_o, &swts, 8, 0, "event_segments sw_ts"},
        {seg_o, &seg, 8, 1, "event_segments seg"},
        {status_o, &status, 1, 1, "event_segments status"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    epid.held = swnext.held = 0;
    if (arr_get_key(epid_o, &epid, "event_segments epid") < 0 ||
        arr_get_key(swnext_o, &swnext, "event_segments sw_next") < 0) {
        arr_release(&epid);
        arrs_release(spec, NSPEC);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = arr_len(&pos), m = arr_len(&rank);
    if (arr_len(&ets) != n || arr_len(&epid) != n || arr_len(&seg) != n ||
        arr_len(&status) != n || arr_len(&swts) != m || arr_len(&swnext) != m) {
        PyErr_SetString(PyExc_ValueError, "event_segments: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = event_segments(pos.view.buf, n, rank.view.buf, m, ets.view.buf, epid.view.buf,
                        epid.view.itemsize, swts.view.buf, swnext.view.buf,
                        swnext.view.itemsize, seg.view.buf, status.view.buf);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "event_segments: a position or rank outside the switches") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&epid);
    arr_release(&swnext);
    arrs_release(spec, NSPEC);
    return result;
}

/* ------------------------------------------------------- event_segments_walk */

/* As event_segments, each event's switch found by one walk over the events and the
 * switches, both in time order (their given order): per CPU (in [lo, lo + span)) the
 * last switch at or before the event, an event of a CPU outside the range none.  A
 * switch's segment (its (CPU, time) rank) is its CPU's first's, first[c - lo], plus
 * the switches of that CPU passed before it: the (CPU, time) order of switches in time
 * order is their stable order by CPU, so no rank of every switch is needed.  1: the
 * events are not in time order (the outputs partly written); -1: no memory; -2: a
 * switch's CPU outside the range, or a segment outside the switches. */
static int event_segments_walk(const int64_t *ets, const void *ecpu, Py_ssize_t csize,
                               const void *epid, Py_ssize_t psize, Py_ssize_t n,
                               const int64_t *gts, const void *gcpu, Py_ssize_t gsize,
                               const int64_t *first, Py_ssize_t m, const int64_t *sw_ts,
                               const void *sw_next, Py_ssize_t nsize, int64_t lo, int64_t span,
                               int64_t *seg, int8_t *status)
{
    /* per CPU: the segment of its last switch passed, and of its next */
    int64_t *last = malloc((size_t)span * sizeof(int64_t));
    int64_t *next = malloc((size_t)span * sizeof(int64_t));
    if (!last || !next) {
        free(last);
        free(next);
        return -1;
    }
    for (int64_t c = 0; c < span; c++) {
        last[c] = -1;
        next[c] = first[c];
    }
    int rc = 0;
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        int64_t t = ets[i];
        if (i > 0 && t < ets[i - 1]) {
            rc = 1;
            break;
        }
        for (; j < m && gts[j] <= t; j++) {
            int64_t c = key_at(gcpu, gsize, j) - lo;
            if ((uint64_t)c >= (uint64_t)span) {
                rc = -2;
                break;
            }
            last[c] = next[c]++;
            if (last[c] < 0) {
                rc = -2;
                break;
            }
        }
        if (rc)
            break;
        int64_t c = key_at(ecpu, csize, i) - lo;
        int64_t k = (uint64_t)c < (uint64_t)span ? last[c] : -1;
        rc = place_event_in(i, k, m, ets, epid, psize, sw_ts, sw_next, nsize, seg, status);
    }
    free(last);
    free(next);
    return rc;
}

PyObject *pass_event_segments_walk(PyObject *self, PyObject *args)
{
    PyObject *ets_o, *ecpu_o, *epid_o, *gts_o, *gcpu_o, *first_o, *swts_o, *swnext_o, *seg_o,
        *status_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOOOOOOLLOO", &ets_o, &ecpu_o, &epid_o, &gts_o, &gcpu_o,
                          &first_o, &swts_o, &swnext_o, &lo, &span, &seg_o, &status_o))
        return NULL;
    if (!range_ok("event_segments_walk", lo, span))
        return NULL;
    Arr ets, gts, first, swts, seg, status;
    Arr ecpu = {.held = 0}, epid = {.held = 0}, gcpu = {.held = 0}, swnext = {.held = 0};
    ArrSpec spec[] = {
        {ets_o, &ets, 8, 0, "event_segments_walk ets"},
        {gts_o, &gts, 8, 0, "event_segments_walk given_ts"},
        {first_o, &first, 8, 0, "event_segments_walk first"},
        {swts_o, &swts, 8, 0, "event_segments_walk sw_ts"},
        {seg_o, &seg, 8, 1, "event_segments_walk seg"},
        {status_o, &status, 1, 1, "event_segments_walk status"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    PyObject *result = NULL;
    if (arr_get_key(ecpu_o, &ecpu, "event_segments_walk ecpu") < 0 ||
        arr_get_key(epid_o, &epid, "event_segments_walk epid") < 0 ||
        arr_get_key(gcpu_o, &gcpu, "event_segments_walk given_cpu") < 0 ||
        arr_get_key(swnext_o, &swnext, "event_segments_walk sw_next") < 0)
        goto done;
    Py_ssize_t n = arr_len(&ets), m = arr_len(&gts);
    if (arr_len(&ecpu) != n || arr_len(&epid) != n || arr_len(&seg) != n ||
        arr_len(&status) != n || arr_len(&gcpu) != m || arr_len(&first) != span ||
        arr_len(&swts) != m || arr_len(&swnext) != m) {
        PyErr_SetString(PyExc_ValueError, "event_segments_walk: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = event_segments_walk(ets.view.buf, ecpu.view.buf, ecpu.view.itemsize, epid.view.buf,
                             epid.view.itemsize, n, gts.view.buf, gcpu.view.buf,
                             gcpu.view.itemsize, first.view.buf, m, swts.view.buf,
                             swnext.view.buf, swnext.view.itemsize, lo, span, seg.view.buf,
                             status.view.buf);
    Py_END_ALLOW_THREADS
    if (rc == 1)
        result = Py_NewRef(Py_False);
    else if (pass_failed(rc, "event_segments_walk: a switch's CPU outside [lo, lo + span) "
                             "or a segment outside the switches") == 0)
        result = Py_NewRef(Py_True);
done:
    arr_release(&ecpu);
    arr_release(&epid);
    arr_release(&gcpu);
    arr_release(&swnext);
    arrs_release(spec, NSPEC);
    return result;
}

/* ---------------------------------------------------------------- runs_columns */

/* the runs' sources: the segments' (a run of each, its switch-in's task) and the
 * group runs' columns */
typedef struct {
    const int64_t *start, *end, *earliest;
    const void *cpu, *pid;
    Py_ssize_t csize, psize;
    const int32_t *code;
    const uint8_t *flag; /* a segment: the CPU's last; a group run: exact */
    const int8_t *endkind;
    Py_ssize_t n;
} RunSource;

typedef struct {
    int32_t *pid, *code, *cpu;
    int64_t *start, *end, *earliest;
    uint8_t *exact;
    int8_t *endkind;
} RunColumns;

/* Row i of the runs from src[i] (runs_order's: segment k >= 0, group run ~j): a
 * segment's run from its switch (exact, earliest there) to its end, of kind end_trace
 * when the CPU's last, else end_switch.  -2: a source outside its rows. */
static int runs_columns(const int64_t *src, Py_ssize_t n, const RunSource *sw,
                        const RunSource *g, int8_t end_switch, int8_t end_trace,
                        RunColumns *o)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = src[i];
        if (k >= 0) {
            if (k >= sw->n)
                return -2;
            o->pid[i] = (int32_t)key_at(sw->pid, sw->psize, k);
            o->code[i] = sw->code[k];
            o->cpu[i] = (int32_t)key_at(sw->cpu, sw->csize, k);
            o->start[i] = o->earliest[i] = sw->start[k];
            o->end[i] = sw->end[k];
            o->exact[i] = 1;
            o->endkind[i] = sw->flag[k] ? end_trace : end_switch;
        } else {
            int64_t j = ~k;
            if (j >= g->n)
                return -2;
            o->pid[i] = (int32_t)key_at(g->pid, g->psize, j);
            o->code[i] = g->code[j];
            o->cpu[i] = (int32_t)key_at(g->cpu, g->csize, j);
            o->start[i] = g->start[j];
            o->earliest[i] = g->earliest[j];
            o->end[i] = g->end[j];
            o->exact[i] = g->flag[j];
            o->endkind[i] = g->endkind[j];
        }
    }
    return 0;
}

PyObject *pass_runs_columns(PyObject *self, PyObject *args)
{
    PyObject *src_o, *s_start, *s_end, *s_cpu, *s_pid, *s_code, *s_last, *g_start, *g_end,
        *g_earliest, *g_cpu, *g_pid, *g_code, *g_exact, *g_endkind, *o_pid, *o_code, *o_cpu,
        *o_start, *o_end, *o_exact, *o_earliest, *o_endkind;
    int end_switch, end_trace;
    if (!PyArg_ParseTuple(args, "O(OOOOOO)(OOOOOOOO)ii(OOOOOOOO)", &src_o, &s_start, &s_end,
                          &s_cpu, &s_pid, &s_code, &s_last, &g_start, &g_end, &g_earliest,
                          &g_cpu, &g_pid, &g_code, &g_exact, &g_endkind, &end_switch,
                          &end_trace, &o_pid, &o_code, &o_cpu, &o_start, &o_end, &o_exact,
                          &o_earliest, &o_endkind))
        return NULL;
    Arr src, ss, se, sc, sl, gs, ge, ga, gc, gx, gk, op, oc, ou, os, oe, ox, oa, ok;
    Arr scpu = {.held = 0}, spid = {.held = 0}, gcpu = {.held = 0}, gpid = {.held = 0};
    ArrSpec spec[] = {
        {src_o, &src, 8, 0, "runs_columns src"},
        {s_start, &ss, 8, 0, "runs_columns sw start"},
        {s_end, &se, 8, 0, "runs_columns sw end"},
        {s_code, &sc, 4, 0, "runs_columns sw code"},
        {s_last, &sl, 1, 0, "runs_columns sw last"},
        {g_start, &gs, 8, 0, "runs_columns group start"},
        {g_end, &ge, 8, 0, "runs_columns group end"},
        {g_earliest, &ga, 8, 0, "runs_columns group earliest"},
        {g_code, &gc, 4, 0, "runs_columns group code"},
        {g_exact, &gx, 1, 0, "runs_columns group exact"},
        {g_endkind, &gk, 1, 0, "runs_columns group endkind"},
        {o_pid, &op, 4, 1, "runs_columns out pid"},
        {o_code, &oc, 4, 1, "runs_columns out code"},
        {o_cpu, &ou, 4, 1, "runs_columns out cpu"},
        {o_start, &os, 8, 1, "runs_columns out start"},
        {o_end, &oe, 8, 1, "runs_columns out end"},
        {o_exact, &ox, 1, 1, "runs_columns out exact"},
        {o_earliest, &oa, 8, 1, "runs_columns out earliest"},
        {o_endkind, &ok, 1, 1, "runs_columns out endkind"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    PyObject *result = NULL;
    if (arr_get_key(s_cpu, &scpu, "runs_columns sw cpu") < 0 ||
        arr_get_key(s_pid, &spid, "runs_columns sw pid") < 0 ||
        arr_get_key(g_cpu, &gcpu, "runs_columns group cpu") < 0 ||
        arr_get_key(g_pid, &gpid, "runs_columns group pid") < 0)
        goto done;
    Py_ssize_t n = arr_len(&src), m = arr_len(&ss), ng = arr_len(&gs);
    int ok_len = arr_len(&se) == m && arr_len(&scpu) == m && arr_len(&spid) == m &&
                 arr_len(&sc) == m && arr_len(&sl) == m && arr_len(&ge) == ng &&
                 arr_len(&ga) == ng && arr_len(&gcpu) == ng && arr_len(&gpid) == ng &&
                 arr_len(&gc) == ng && arr_len(&gx) == ng && arr_len(&gk) == ng;
    for (int i = 11; i < NSPEC; i++)
        ok_len = ok_len && arr_len(spec[i].arr) == n;
    if (!ok_len) {
        PyErr_SetString(PyExc_ValueError, "runs_columns: arrays of different lengths");
        goto done;
    }
    RunSource sw = {ss.view.buf, se.view.buf, ss.view.buf, scpu.view.buf, spid.view.buf,
                    scpu.view.itemsize, spid.view.itemsize, sc.view.buf, sl.view.buf, NULL,
                    m};
    RunSource g = {gs.view.buf, ge.view.buf, ga.view.buf, gcpu.view.buf, gpid.view.buf,
                   gcpu.view.itemsize, gpid.view.itemsize, gc.view.buf, gx.view.buf,
                   gk.view.buf, ng};
    RunColumns o = {op.view.buf, oc.view.buf, ou.view.buf, os.view.buf,
                    oe.view.buf, oa.view.buf, ox.view.buf, ok.view.buf};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = runs_columns(src.view.buf, n, &sw, &g, (int8_t)end_switch, (int8_t)end_trace, &o);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "runs_columns: a source outside its rows") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&scpu);
    arr_release(&spid);
    arr_release(&gcpu);
    arr_release(&gpid);
    arrs_release(spec, NSPEC);
    return result;
}

/* ------------------------------------------------------------ group_running_max */

/* out[i] = the maximum of values over i's group up to i, a group starting at each row
 * whose new_group is set (and at row 0) */
static void group_running_max(const int64_t *values, const uint8_t *new_group, Py_ssize_t n,
                              int64_t *out)
{
    int64_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || new_group[i] || values[i] > m)
            m = values[i];
        out[i] = m;
    }
}

PyObject *pass_group_running_max(PyObject *self, PyObject *args)
{
    PyObject *values_o, *new_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO", &values_o, &new_o, &out_o))
        return NULL;
    Arr values, new_group, out;
    ArrSpec spec[] = {
        {values_o, &values, 8, 0, "group_running_max values"},
        {new_o, &new_group, 1, 0, "group_running_max new_group"},
        {out_o, &out, 8, 1, "group_running_max out"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&values);
    if (arr_len(&new_group) != n || arr_len(&out) != n)
        return value_error(spec, NSPEC, "group_running_max: arrays of different lengths");
    Py_BEGIN_ALLOW_THREADS
    group_running_max(values.view.buf, new_group.view.buf, n, out.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, NSPEC);
    return Py_NewRef(Py_None);
}

/* --------------------------------------------------------------- timeline_rows */

enum { TL_RUNNING = 0, TL_IDLE = 1, TL_UNKNOWN = 2 };

typedef struct {
    int32_t *cpu, *pid, *code;
    int64_t *start, *end;
    int8_t *state;
    Py_ssize_t m, cap;
} TimelineOut;

/* one row; -2 when the outputs are full */
static int tl_put(TimelineOut *o, int64_t cpu, int64_t start, int64_t end, int64_t pid,
                  int32_t code, int8_t state)
{
    if (o->m >= o->cap)
        return -2;
    Py_ssize_t i = o->m++;
    o->cpu[i] = (int32_t)cpu;
    o->start[i] = start;
    o->end[i] = end;
    o->pid[i] = (int32_t)pid;
    o->code[i] = code;
    o->state[i] = state;
    return 0;
}

/* a known row, after the unknown stretch since the CPU's previous row (*cursor: its
 * end) when there is one */
static int tl_known(TimelineOut *o, int64_t *cursor, int64_t cpu, int64_t start, int64_t end,
                    int64_t pid, int32_t code)
{
    if (start > *cursor && tl_put(o, cpu, *cursor, start, -1, -1, TL_UNKNOWN) < 0)
        return -2;
    *cursor = end;
    return tl_put(o, cpu, start, end, pid, code, (int32_t)pid == 0 ? TL_IDLE : TL_RUNNING);
}

/* The timeline of the n segments (in (CPU, time) order): per segment, itself when
 * clean, else its runs (r_seg ascending, each run's rows in time order); an unknown
 * row wherever a CPU's next row starts after the previous one ends (from its first
 * switch; to t_end after its last).  -2: r_seg not ascending or outside the segments,
 * or more rows than the outputs hold. */
static int timeline_rows(const int64_t *sw_ts, const int64_t *sw_end, const void *sw_cpu,
                         Py_ssize_t csize, const void *sw_pid, Py_ssize_t psize,
                         const int32_t *sw_code, const uint8_t *clean, Py_ssize_t n,
                         const int64_t *r_seg, const int64_t *r_start, const int64_t *r_end,
                         const void *r_pid, Py_ssize_t rsize, const int32_t *r_code,
                         Py_ssize_t nr, int64_t t_end, TimelineOut *o)
{
    Py_ssize_t j = 0;
    int64_t cursor = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t cpu = key_at(sw_cpu, csize, k);
        if (k == 0 || cpu != key_at(sw_cpu, csize, k - 1))
            cursor = sw_ts[k];
        if (clean[k] &&
            tl_known(o, &cursor, cpu, sw_ts[k], sw_end[k], key_at(sw_pid, psize, k),
                     sw_code[k]) < 0)
            return -2;
        for (; j < nr && r_seg[j] == k; j++) {
            if (tl_known(o, &cursor, cpu, r_start[j], r_end[j], key_at(r_pid, rsize, j),
                         r_code[j]) < 0)
                return -2;
        }
        int last = k == n - 1 || cpu != key_at(sw_cpu, csize, k + 1);
        if (last && t_end > cursor && tl_put(o, cpu, cursor, t_end, -1, -1, TL_UNKNOWN) < 0)
            return -2;
    }
    return j == nr ? 0 : -2;
}

PyObject *pass_timeline_rows(PyObject *self, PyObject *args)
{
    PyObject *swts_o, *swend_o, *swcpu_o, *swpid_o, *swcode_o, *clean_o, *rseg_o, *rstart_o,
        *rend_o, *rpid_o, *rcode_o, *ocpu_o, *ostart_o, *oend_o, *opid_o, *ocode_o, *ostate_o;
    long long t_end;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOLOOOOOO", &swts_o, &swend_o, &swcpu_o, &swpid_o,
                          &swcode_o, &clean_o, &rseg_o, &rstart_o, &rend_o, &rpid_o, &rcode_o,
                          &t_end, &ocpu_o, &ostart_o, &oend_o, &opid_o, &ocode_o, &ostate_o))
        return NULL;
    Arr swts, swend, swcode, clean, rseg, rstart, rend, rcode, ocpu, ostart, oend, opid, ocode,
        ostate;
    Arr swcpu = {.held = 0}, swpid = {.held = 0}, rpid = {.held = 0};
    ArrSpec spec[] = {
        {swts_o, &swts, 8, 0, "timeline_rows sw_ts"},
        {swend_o, &swend, 8, 0, "timeline_rows sw_end"},
        {swcode_o, &swcode, 4, 0, "timeline_rows sw_code"},
        {clean_o, &clean, 1, 0, "timeline_rows clean"},
        {rseg_o, &rseg, 8, 0, "timeline_rows r_seg"},
        {rstart_o, &rstart, 8, 0, "timeline_rows r_start"},
        {rend_o, &rend, 8, 0, "timeline_rows r_end"},
        {rcode_o, &rcode, 4, 0, "timeline_rows r_code"},
        {ocpu_o, &ocpu, 4, 1, "timeline_rows out_cpu"},
        {ostart_o, &ostart, 8, 1, "timeline_rows out_start"},
        {oend_o, &oend, 8, 1, "timeline_rows out_end"},
        {opid_o, &opid, 4, 1, "timeline_rows out_pid"},
        {ocode_o, &ocode, 4, 1, "timeline_rows out_code"},
        {ostate_o, &ostate, 1, 1, "timeline_rows out_state"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    PyObject *result = NULL;
    if (arr_get_key(swcpu_o, &swcpu, "timeline_rows sw_cpu") < 0 ||
        arr_get_key(swpid_o, &swpid, "timeline_rows sw_pid") < 0 ||
        arr_get_key(rpid_o, &rpid, "timeline_rows r_pid") < 0)
        goto done;
    Py_ssize_t n = arr_len(&swts), nr = arr_len(&rseg), cap = arr_len(&ocpu);
    if (arr_len(&swend) != n || arr_len(&swcpu) != n || arr_len(&swpid) != n ||
        arr_len(&swcode) != n || arr_len(&clean) != n || arr_len(&rstart) != nr ||
        arr_len(&rend) != nr || arr_len(&rpid) != nr || arr_len(&rcode) != nr ||
        arr_len(&ostart) != cap || arr_len(&oend) != cap || arr_len(&opid) != cap ||
        arr_len(&ocode) != cap || arr_len(&ostate) != cap) {
        PyErr_SetString(PyExc_ValueError, "timeline_rows: arrays of different lengths");
        goto done;
    }
    TimelineOut o = {ocpu.view.buf, opid.view.buf, ocode.view.buf, ostart.view.buf,
                     oend.view.buf, ostate.view.buf, 0, cap};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = timeline_rows(swts.view.buf, swend.view.buf, swcpu.view.buf, swcpu.view.itemsize,
                       swpid.view.buf, swpid.view.itemsize, swcode.view.buf, clean.view.buf, n,
                       rseg.view.buf, rstart.view.buf, rend.view.buf, rpid.view.buf,
                       rpid.view.itemsize, rcode.view.buf, nr, (int64_t)t_end, &o);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "timeline_rows: runs' segments not ascending within the segments, "
                        "or more rows than the outputs hold") == 0)
        result = PyLong_FromSsize_t(o.m);
done:
    arr_release(&swcpu);
    arr_release(&swpid);
    arr_release(&rpid);
    arrs_release(spec, NSPEC);
    return result;
}

/* ----------------------------------------------------------------- runs_order */

/* a run's start: a segment's switch-in (src >= 0) or group run ~src's */
static inline int64_t run_start_of(int64_t src, const int64_t *sw_ts, const int64_t *g_start)
{
    return src >= 0 ? sw_ts[src] : g_start[~src];
}

/* the end of the sequence of non-decreasing starts from v[a] */
static inline Py_ssize_t ascending_to(const int64_t *v, Py_ssize_t a, Py_ssize_t n,
                                      const int64_t *sw_ts, const int64_t *g_start)
{
    Py_ssize_t i = a + 1;
    while (i < n && run_start_of(v[i - 1], sw_ts, g_start) <= run_start_of(v[i], sw_ts, g_start))
        i++;
    return i;
}

/* v[0:n] stably by start: a natural merge sort (a task's runs come as one sequence in
 * time order per CPU, the groups' after them: a few merges), aux of n slots */
static void sort_by_start(int64_t *v, Py_ssize_t n, int64_t *aux, const int64_t *sw_ts,
                          const int64_t *g_start)
{
    for (;;) {
        Py_ssize_t lo = 0;
        while (lo < n) {
            Py_ssize_t mid = ascending_to(v, lo, n, sw_ts, g_start);
            if (mid == n) {
                if (lo == 0)
                    return;
                break;
            }
            Py_ssize_t hi = ascending_to(v, mid, n, sw_ts, g_start);
            /* merge v[lo:mid] and v[mid:hi], the left first on ties */
            Py_ssize_t i = lo, j = mid, k = 0;
            while (i < mid && j < hi) {
                if (run_start_of(v[j], sw_ts, g_start) < run_start_of(v[i], sw_ts, g_start))
                    aux[k++] = v[j++];
                else
                    aux[k++] = v[i++];
            }
            while (i < mid)
                aux[k++] = v[i++];
            while (j < hi)
                aux[k++] = v[j++];
            memcpy(v + lo, aux, (size_t)k * sizeof(int64_t));
            lo = hi;
        }
    }
}

/* The runs' order by (pid, start), ties in their given order: first the segments seg
 * (in order), then the group runs; out[i] = a segment's index, or ~j for group run j.
 * A counting sort by pid (in [lo, lo + span)), then each pid's runs sorted by start.
 * -1: no memory; -2: a segment index outside the switches or a pid outside the range. */
static int runs_order(const int64_t *seg, Py_ssize_t ns, const void *sw_pid, Py_ssize_t psize,
                      const int64_t *sw_ts, Py_ssize_t n, const void *g_pid, Py_ssize_t gsize,
                      const int64_t *g_start, Py_ssize_t ng, int64_t lo, int64_t span,
                      int64_t *out)
{
    Py_ssize_t total = ns + ng;
    Py_ssize_t *at = calloc((size_t)span + 1, sizeof(Py_ssize_t));
    if (!at)
        return -1;
    int rc = -2;
    for (Py_ssize_t i = 0; i < total; i++) {
        int64_t p;
        if (i < ns) {
            if ((uint64_t)seg[i] >= (uint64_t)n)
                goto done;
            p = key_at(sw_pid, psize, seg[i]);
        } else {
            p = key_at(g_pid, gsize, i - ns);
        }
        if (p < lo || p - lo >= span)
            goto done;
        at[p - lo + 1]++;
    }
    Py_ssize_t widest = 0;
    for (int64_t s = 0; s < span; s++) {
        if (at[s + 1] > widest)
            widest = at[s + 1];
        at[s + 1] += at[s];
    }
    for (Py_ssize_t i = 0; i < ns; i++)
        out[at[key_at(sw_pid, psize, seg[i]) - lo]++] = seg[i];
    for (Py_ssize_t j = 0; j < ng; j++)
        out[at[key_at(g_pid, gsize, j) - lo]++] = ~(int64_t)j;
    int64_t *aux = malloc((size_t)(widest > 0 ? widest : 1) * sizeof(int64_t));
    if (!aux) {
        rc = -1;
        goto done;
    }
    /* (at[s] is now where pid lo + s's runs end) */
    Py_ssize_t begin = 0;
    for (int64_t s = 0; s < span; s++) {
        if (at[s] - begin > 1)
            sort_by_start(out + begin, at[s] - begin, aux, sw_ts, g_start);
        begin = at[s];
    }
    free(aux);
    rc = 0;
done:
    free(at);
    return rc;
}

PyObject *pass_runs_order(PyObject *self, PyObject *args)
{
    PyObject *seg_o, *swpid_o, *swts_o, *gpid_o, *gstart_o, *out_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOOOLLO", &seg_o, &swpid_o, &swts_o, &gpid_o, &gstart_o, &lo,
                          &span, &out_o))
        return NULL;
    if (!range_ok("runs_order", lo, span))
        return NULL;
    Arr seg, swts, gstart, out;
    Arr swpid = {.held = 0}, gpid = {.held = 0};
    ArrSpec spec[] = {
        {seg_o, &seg, 8, 0, "runs_order seg"},
        {swts_o, &swts, 8, 0, "runs_order sw_ts"},
        {gstart_o, &gstart, 8, 0, "runs_order g_start"},
        {out_o, &out, 8, 1, "runs_order out"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    PyObject *result = NULL;
    if (arr_get_key(swpid_o, &swpid, "runs_order sw_pid") < 0 ||
        arr_get_key(gpid_o, &gpid, "runs_order g_pid") < 0)
        goto done;
    Py_ssize_t ns = arr_len(&seg), n = arr_len(&swts), ng = arr_len(&gstart);
    if (arr_len(&swpid) != n || arr_len(&gpid) != ng || arr_len(&out) != ns + ng) {
        PyErr_SetString(PyExc_ValueError, "runs_order: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = runs_order(seg.view.buf, ns, swpid.view.buf, swpid.view.itemsize, swts.view.buf, n,
                    gpid.view.buf, gpid.view.itemsize, gstart.view.buf, ng, lo, span,
                    out.view.buf);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "runs_order: a segment outside the switches or a pid outside "
                        "[lo, lo + span)") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&swpid);
    arr_release(&gpid);
    arrs_release(spec, NSPEC);
    return result;
}

/* ---------------------------------------------------------------- unwoken_candidates */

/* The wake-up tables of unwoken_candidates: (ts, key) pairs, each in time order. */
typedef struct {
    const int64_t *ts;
    const void *key;
    Py_ssize_t ksize, n;
} WakeTable;

enum { MAX_WAKE_TABLES = 4 };

static int ts_ascending(const int64_t *ts, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (ts[i] < ts[i - 1])
            return 0;
    return 1;
}

/* One walk over the switches (in time order) and the wake-up tables: per key its last
 * switch-out before the switch at hand (strictly earlier) and whether it slept there,
 * and its last wake-up at or before it.  Switch r goes out (its index, that
 * switch-out's time, the last wake-up: INT64_MIN when none) when its task (nxt > 0)
 * slept at that switch-out and no wake-up came since.  *count: how many went out.
 * 0: done; 1: a table not in time order (nothing written); -1: no memory; -2: a key
 * outside [lo, lo + span). */
static int unwoken_candidates(const int64_t *sts, const void *nkey, Py_ssize_t nsize,
                              const void *pkey, Py_ssize_t psize, const void *nxt,
                              Py_ssize_t xsize, const uint8_t *asleep, Py_ssize_t n,
                              const WakeTable *w, int nw, int64_t lo, int64_t span,
                              int64_t *o_sw, int64_t *o_out, int64_t *o_wake, Py_ssize_t *count)
{
    if (!ts_ascending(sts, n))
        return 1;
    for (int t = 0; t < nw; t++)
        if (!ts_ascending(w[t].ts, w[t].n))
            return 1;
    int64_t *out_ts = malloc((size_t)span * sizeof(int64_t));
    int64_t *wake = malloc((size_t)span * sizeof(int64_t));
    uint8_t *slept = calloc((size_t)span, 1);
    Py_ssize_t pos[MAX_WAKE_TABLES] = {0};
    int rc = -1;
    if (!out_ts || !wake || !slept)
        goto done;
    for (int64_t s = 0; s < span; s++)
        out_ts[s] = wake[s] = INT64_MIN;
    rc = -2;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n;) {
        int64_t now = sts[i];
        Py_ssize_t j = i;
        while (j < n && sts[j] == now)
            j++;
        /* the wake-ups up to now (at it too), then the switch-ins at now against the
         * switch-outs before it, then those switch-outs */
        for (int t = 0; t < nw; t++) {
            for (; pos[t] < w[t].n && w[t].ts[pos[t]] <= now; pos[t]++) {
                uint64_t k = (uint64_t)key_at(w[t].key, w[t].ksize, pos[t]) - (uint64_t)lo;
                if (k >= (uint64_t)span)
                    goto done;
                if (w[t].ts[pos[t]] > wake[k])
                    wake[k] = w[t].ts[pos[t]];
            }
        }
        for (Py_ssize_t r = i; r < j; r++) {
            uint64_t k = (uint64_t)key_at(nkey, nsize, r) - (uint64_t)lo;
            if (k >= (uint64_t)span)
                goto done;
            if (key_at(nxt, xsize, r) > 0 && slept[k] && out_ts[k] != INT64_MIN &&
                wake[k] < out_ts[k]) {
                o_sw[m] = r;
                o_out[m] = out_ts[k];
                o_wake[m] = wake[k];
                m++;
            }
        }
        for (Py_ssize_t r = i; r < j; r++) {
            uint64_t k = (uint64_t)key_at(pkey, psize, r) - (uint64_t)lo;
            if (k >= (uint64_t)span)
                goto done;
            out_ts[k] = now;
            slept[k] = asleep[r] != 0;
        }
        i = j;
    }
    *count = m;
    rc = 0;
done:
    free(out_ts);
    free(wake);
    free(slept);
    return rc;
}

PyObject *pass_unwoken_candidates(PyObject *self, PyObject *args)
{
    PyObject *sts_o, *nkey_o, *pkey_o, *nxt_o, *asleep_o, *wakes_o, *osw_o, *oout_o, *owake_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOOOO!LLOOO", &sts_o, &nkey_o, &pkey_o, &nxt_o, &asleep_o,
                          &PyTuple_Type, &wakes_o, &lo, &span, &osw_o, &oout_o, &owake_o))
        return NULL;
    if (!range_ok("unwoken_candidates", lo, span))
        return NULL;
    Py_ssize_t nw = PyTuple_GET_SIZE(wakes_o);
    if (nw > MAX_WAKE_TABLES) {
        PyErr_SetString(PyExc_ValueError, "unwoken_candidates: at most 4 wake-up tables");
        return NULL;
    }
    PyObject *wts_o[MAX_WAKE_TABLES], *wkey_o[MAX_WAKE_TABLES];
    for (Py_ssize_t t = 0; t < nw; t++) {
        PyObject *pair = PyTuple_GET_ITEM(wakes_o, t);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "unwoken_candidates: wakes: (ts, key) pairs");
            return NULL;
        }
        wts_o[t] = PyTuple_GET_ITEM(pair, 0);
        wkey_o[t] = PyTuple_GET_ITEM(pair, 1);
    }
    Arr sts, asleep, osw, oout, owake;
    Arr nkey = {.held = 0}, pkey = {.held = 0}, nxt = {.held = 0};
    Arr wts[MAX_WAKE_TABLES], wkey[MAX_WAKE_TABLES];
    for (int t = 0; t < MAX_WAKE_TABLES; t++)
        wts[t].held = wkey[t].held = 0;
    ArrSpec spec[] = {
        {sts_o, &sts, 8, 0, "unwoken_candidates sts"},
        {asleep_o, &asleep, 1, 0, "unwoken_candidates asleep"},
        {osw_o, &osw, 8, 1, "unwoken_candidates out_switch"},
        {oout_o, &oout, 8, 1, "unwoken_candidates out_ts"},
        {owake_o, &owake, 8, 1, "unwoken_candidates out_wake"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    PyObject *result = NULL;
    if (arr_get_key(nkey_o, &nkey, "unwoken_candidates nkey") < 0 ||
        arr_get_key(pkey_o, &pkey, "unwoken_candidates pkey") < 0 ||
        arr_get_key(nxt_o, &nxt, "unwoken_candidates nxt") < 0)
        goto done;
    WakeTable w[MAX_WAKE_TABLES];
    for (Py_ssize_t t = 0; t < nw; t++) {
        if (arr_get(wts_o[t], &wts[t], 8, 0, "unwoken_candidates wake ts") < 0 ||
            arr_get_key(wkey_o[t], &wkey[t], "unwoken_candidates wake key") < 0)
            goto done;
        w[t] = (WakeTable){wts[t].view.buf, wkey[t].view.buf, wkey[t].view.itemsize,
                           arr_len(&wts[t])};
        if (arr_len(&wkey[t]) != w[t].n) {
            PyErr_SetString(PyExc_ValueError, "unwoken_candidates: arrays of different lengths");
            goto done;
        }
    }
    Py_ssize_t n = arr_len(&sts);
    if (arr_len(&nkey) != n || arr_len(&pkey) != n || arr_len(&nxt) != n ||
        arr_len(&asleep) != n || arr_len(&osw) != n || arr_len(&oout) != n ||
        arr_len(&owake) != n) {
        PyErr_SetString(PyExc_ValueError, "unwoken_candidates: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_ssize_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = unwoken_candidates(sts.view.buf, nkey.view.buf, nkey.view.itemsize, pkey.view.buf,
                            pkey.view.itemsize, nxt.view.buf, nxt.view.itemsize,
                            asleep.view.buf, n, w, (int)nw, lo, span, osw.view.buf,
                            oout.view.buf, owake.view.buf, &count);
    Py_END_ALLOW_THREADS
    if (rc == 1)
        result = PyLong_FromLong(-1);
    else if (pass_failed(rc, "unwoken_candidates: a key outside [lo, lo + span)") == 0)
        result = PyLong_FromSsize_t(count);
done:
    arr_release(&nkey);
    arr_release(&pkey);
    arr_release(&nxt);
    for (int t = 0; t < MAX_WAKE_TABLES; t++) {
        arr_release(&wts[t]);
        arr_release(&wkey[t]);
    }
    arrs_release(spec, NSPEC);
    return result;
}

/* ---------------------------------------------------------------- rewoken_walk */

/* One walk over the wake-ups in time order: per key its last wake-up strictly before
 * the one at hand, and a cursor into its runs (their rows a range of the runs, by
 * start) past those begun by it, with the furthest end of those.  Wake-up i goes out
 * (out[count++] = i) when its task had an earlier wake-up and none of its runs begun
 * by i reaches back to that one.  0: done; 1: the wake-ups not in time order, a key's
 * runs not one range or not by start (nothing written); -1: no memory; -2: a key
 * outside [lo, lo + span). */
static int rewoken_walk(const int64_t *ts, const void *key, Py_ssize_t ksize, Py_ssize_t n,
                        const int64_t *r_start, const int64_t *r_end, const void *r_key,
                        Py_ssize_t rsize, Py_ssize_t m, int64_t lo, int64_t span, int64_t *out,
                        Py_ssize_t *count)
{
    if (!ts_ascending(ts, n))
        return 1;
    /* per key: its runs [at, end), the furthest end of those passed, its last wake-up
     * and the one before (strictly earlier) */
    typedef struct {
        Py_ssize_t at, end;
        int64_t reach, last, before;
        int passed; /* (a run of it passed: reach holds) */
    } Task;
    Task *task = malloc((size_t)span * sizeof(Task));
    if (!task)
        return -1;
    for (int64_t s = 0; s < span; s++)
        task[s] = (Task){-1, -1, INT64_MIN, INT64_MIN, INT64_MIN, 0};
    int rc = -2;
    for (Py_ssize_t j = 0; j < m; j++) {
        uint64_t k = (uint64_t)key_at(r_key, rsize, j) - (uint64_t)lo;
        if (k >= (uint64_t)span)
            goto done;
        if (task[k].end == j) {
            if (r_start[j] < r_start[j - 1]) {
                rc = 1;
                goto done;
            }
            task[k].end = j + 1;
        } else if (task[k].at >= 0) {
            rc = 1; /* (its runs in two ranges) */
            goto done;
        } else {
            task[k].at = j;
            task[k].end = j + 1;
        }
    }
    Py_ssize_t c = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t k = (uint64_t)key_at(key, ksize, i) - (uint64_t)lo;
        if (k >= (uint64_t)span)
            goto done;
        Task *t = &task[k];
        int64_t now = ts[i], prev;
        if (now == t->last) {
            prev = t->before;
        } else {
            prev = t->last;
            t->before = t->last;
            t->last = now;
        }
        for (; t->at >= 0 && t->at < t->end && r_start[t->at] <= now; t->at++) {
            if (!t->passed || r_end[t->at] > t->reach)
                t->reach = r_end[t->at];
            t->passed = 1;
        }
        /* (prev INT64_MIN: no earlier wake-up; no run begun by now reaches -1, as the
         * as-of search's fill) */
        if (prev != INT64_MIN && (t->passed ? t->reach : -1) < prev)
            out[c++] = i;
    }
    *count = c;
    rc = 0;
done:
    free(task);
    return rc;
}

PyObject *pass_rewoken_walk(PyObject *self, PyObject *args)
{
    PyObject *ts_o, *key_o, *rstart_o, *rend_o, *rkey_o, *out_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOOOLLO", &ts_o, &key_o, &rstart_o, &rend_o, &rkey_o, &lo,
                          &span, &out_o))
        return NULL;
    if (!range_ok("rewoken_walk", lo, span))
        return NULL;
    Arr ts, rstart, rend, out;
    Arr key = {.held = 0}, rkey = {.held = 0};
    ArrSpec spec[] = {
        {ts_o, &ts, 8, 0, "rewoken_walk ts"},
        {rstart_o, &rstart, 8, 0, "rewoken_walk run_start"},
        {rend_o, &rend, 8, 0, "rewoken_walk run_end"},
        {out_o, &out, 8, 1, "rewoken_walk out"},
    };
    enum { NSPEC = sizeof(spec) / sizeof(spec[0]) };
    if (arrs_get(spec, NSPEC) < 0)
        return NULL;
    PyObject *result = NULL;
    if (arr_get_key(key_o, &key, "rewoken_walk key") < 0 ||
        arr_get_key(rkey_o, &rkey, "rewoken_walk run_key") < 0)
        goto done;
    Py_ssize_t n = arr_len(&ts), m = arr_len(&rstart);
    if (arr_len(&key) != n || arr_len(&out) != n || arr_len(&rend) != m ||
        arr_len(&rkey) != m) {
        PyErr_SetString(PyExc_ValueError, "rewoken_walk: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_ssize_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = rewoken_walk(ts.view.buf, key.view.buf, key.view.itemsize, n, rstart.view.buf,
                      rend.view.buf, rkey.view.buf, rkey.view.itemsize, m, lo, span,
                      out.view.buf, &count);
    Py_END_ALLOW_THREADS
    if (rc == 1)
        result = PyLong_FromLong(-1);
    else if (pass_failed(rc, "rewoken_walk: a key outside [lo, lo + span)") == 0)
        result = PyLong_FromSsize_t(count);
done:
    arr_release(&key);
    arr_release(&rkey);
    arrs_release(spec, NSPEC);
    return result;
}
