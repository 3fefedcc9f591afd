/*
 * _pass_wakeups.c: the wake-ups' searches of schedwake/model/wakeups.py.
 *
 * settling_walk: for each candidate migration of a wake-up, the first event of the
 * wakee (a sched_wakeup or a switch-in) at or after the waking that settled the
 * wake-up without it.  One walk backward in time over the events (in time order, as
 * the event tables are) and the candidates (by time, through ``order``), a table
 * holding each key's first event passed and its first event at a later time: no sort
 * of the events by key, no second search for the events that do not settle.
 */
#include <stdlib.h>

#include "_passes.h"

/* 0: out filled; 1: the events, or the candidates through ``order`` (NULL: as they
 * are; a permutation), not in time order (nothing written); -1: no memory; -2: a key
 * outside [lo, lo + span) or an order outside the candidates */
static int settling_walk(const int64_t *c_ts, const void *c_key, Py_ssize_t cks,
                         const void *c_cpu, Py_ssize_t ccs, const void *c_dest,
                         Py_ssize_t cds, const int64_t *order, Py_ssize_t n,
                         const int64_t *ts, const void *key, Py_ssize_t ks, const void *cpu,
                         Py_ssize_t cs, const void *placed, Py_ssize_t ps, Py_ssize_t m,
                         int64_t lo, int64_t span, int64_t *out)
{
    for (Py_ssize_t j = 0; j < m; j++) {
        if ((uint64_t)key_at(key, ks, j) - (uint64_t)lo >= (uint64_t)span)
            return -2;
        if (j && ts[j] < ts[j - 1])
            return 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((uint64_t)key_at(c_key, cks, i) - (uint64_t)lo >= (uint64_t)span)
            return -2;
        if (order && (uint64_t)order[i] >= (uint64_t)n)
            return -2;
    }
    for (Py_ssize_t r = 1; r < n; r++)   /* the candidates by time */
        if (order ? c_ts[order[r]] < c_ts[order[r - 1]] : c_ts[r] < c_ts[r - 1])
            return 1;
    /* per key: its first event passed (at or after the walk's time), and its first
     * event at a later time than that one's; -1: none */
    int64_t *first = malloc((size_t)span * sizeof(int64_t));
    int64_t *later = malloc((size_t)span * sizeof(int64_t));
    if (!first || !later) {
        free(first);
        free(later);
        return -1;
    }
    for (int64_t k = 0; k < span; k++)
        first[k] = later[k] = -1;
    Py_ssize_t j = m - 1;
    for (Py_ssize_t r = n - 1; r >= 0; r--) {
        Py_ssize_t i = order ? (Py_ssize_t)order[r] : r;
        int64_t t = c_ts[i];
        for (; j >= 0 && ts[j] >= t; j--) {
            uint64_t k = (uint64_t)key_at(key, ks, j) - (uint64_t)lo;
            int64_t f = first[k];
            if (f < 0)
                later[k] = -1;
            else if (ts[f] > ts[j])
                later[k] = f;
            first[k] = j;
        }
        uint64_t k = (uint64_t)key_at(c_key, cks, i) - (uint64_t)lo;
        int64_t e = first[k];
        /* an event on another CPU that puts the task where the migration takes it
         * does not settle it (a clock behind): the task's next one, at a later time */
        if (e >= 0 && key_at(placed, ps, e) == key_at(c_dest, cds, i) &&
            key_at(cpu, cs, e) != key_at(c_cpu, ccs, i))
            e = later[k];
        out[i] = e >= 0 ? ts[e] : INT64_MAX;
    }
    free(first);
    free(later);
    return 0;
}

PyObject *pass_settling_walk(PyObject *self, PyObject *args)
{
    PyObject *cts_o, *ckey_o, *ccpu_o, *cdest_o, *order_o, *ts_o, *key_o, *cpu_o, *placed_o,
        *out_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOLLO", &cts_o, &ckey_o, &ccpu_o, &cdest_o, &order_o,
                          &ts_o, &key_o, &cpu_o, &placed_o, &lo, &span, &out_o))
        return NULL;
    if (!range_ok("settling_walk", lo, span))
        return NULL;
    Arr cts, ckey, ccpu, cdest, order, ts, key, cpu, placed, out;
    ArrSpec spec[] = {
        {cts_o, &cts, 8, 0, "settling_walk c_ts"},
        {ckey_o, &ckey, ARR_KEY, 0, "settling_walk c_key"},
        {ccpu_o, &ccpu, ARR_KEY, 0, "settling_walk c_cpu"},
        {cdest_o, &cdest, ARR_KEY, 0, "settling_walk c_dest"},
        {order_o == Py_None ? NULL : order_o, &order, 8, 0, "settling_walk order"},
        {ts_o, &ts, 8, 0, "settling_walk ts"},
        {key_o, &key, ARR_KEY, 0, "settling_walk key"},
        {cpu_o, &cpu, ARR_KEY, 0, "settling_walk cpu"},
        {placed_o, &placed, ARR_KEY, 0, "settling_walk placed"},
        {out_o, &out, 8, 1, "settling_walk out"},
    };
    const int ns = 10;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&cts), m = arr_len(&ts);
    if (arr_len(&ckey) != n || arr_len(&ccpu) != n || arr_len(&cdest) != n ||
        (order.held && arr_len(&order) != n) || arr_len(&out) != n || arr_len(&key) != m ||
        arr_len(&cpu) != m || arr_len(&placed) != m)
        return value_error(spec, ns, "settling_walk: arrays of different lengths");
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = settling_walk(cts.view.buf, ckey.view.buf, ckey.view.itemsize, ccpu.view.buf,
                       ccpu.view.itemsize, cdest.view.buf, cdest.view.itemsize,
                       order.held ? order.view.buf : NULL, n, ts.view.buf, key.view.buf,
                       key.view.itemsize, cpu.view.buf, cpu.view.itemsize, placed.view.buf,
                       placed.view.itemsize, m, lo, span, out.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (pass_failed(rc, "settling_walk: a key outside [lo, lo + span) or an order outside "
                        "the candidates") < 0)
        return NULL;
    return PyBool_FromLong(rc == 0);
}

/* out[i] = the time of the next row after i (in time order) of key[i], int64 max if
 * none: one backward walk, a table of each key's time last passed.  0; 1: ts not in
 * time order (nothing written); -1: no memory; -2: a key outside [lo, lo + span) */
static int next_of_key(const int64_t *ts, const void *key, Py_ssize_t ks, Py_ssize_t n,
                       int64_t lo, int64_t span, int64_t *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((uint64_t)key_at(key, ks, i) - (uint64_t)lo >= (uint64_t)span)
            return -2;
        if (i && ts[i] < ts[i - 1])
            return 1;
    }
    int64_t *later = malloc((size_t)span * sizeof(int64_t));
    if (!later)
        return -1;
    for (int64_t k = 0; k < span; k++)
        later[k] = INT64_MAX;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        uint64_t k = (uint64_t)key_at(key, ks, i) - (uint64_t)lo;
        out[i] = later[k];
        later[k] = ts[i];
    }
    free(later);
    return 0;
}

PyObject *pass_next_of_key(PyObject *self, PyObject *args)
{
    PyObject *ts_o, *key_o, *out_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOLLO", &ts_o, &key_o, &lo, &span, &out_o))
        return NULL;
    if (!range_ok("next_of_key", lo, span))
        return NULL;
    Arr ts, key, out;
    ArrSpec spec[] = {
        {ts_o, &ts, 8, 0, "next_of_key ts"},
        {key_o, &key, ARR_KEY, 0, "next_of_key key"},
        {out_o, &out, 8, 1, "next_of_key out"},
    };
    const int ns = 3;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&ts);
    if (arr_len(&key) != n || arr_len(&out) != n)
        return value_error(spec, ns, "next_of_key: arrays of different lengths");
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = next_of_key(ts.view.buf, key.view.buf, key.view.itemsize, n, lo, span, out.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (pass_failed(rc, "next_of_key: a key outside [lo, lo + span)") < 0)
        return NULL;
    return PyBool_FromLong(rc == 0);
}

/* wake_runs: per wake-up (ts, key; in time order), its wakee's runs (rkey, rstart:
 * each key's rows together, in time order): the next run begun at or after the waking
 * (out_index, -1 if none) and its start, earliest start, CPU, end and whether a
 * switch-out ended it (rcode 0), and whether the run begun last before the waking
 * reaches it (reach, the task's furthest end by then: it was running).  One walk
 * forward in time, a pointer per key into its rows that only moves on: no search.
 * 0; 1: the wake-ups not in time order, or a key's runs apart or not in time order
 * (nothing written); -1: no memory; -2: a key outside [lo, lo + span) */
typedef struct {
    const int64_t *ts;
    const void *key;
    Py_ssize_t ks;
    Py_ssize_t n;
    const void *rkey;
    Py_ssize_t rks;
    const int64_t *rstart, *reach, *earliest, *rend;
    const int32_t *rcpu;
    const int8_t *rcode;
    Py_ssize_t m;
    int64_t lo, span;
    int64_t *index, *next_ts, *next_from, *end_ts;
    int32_t *cpu;
    uint8_t *running, *ended;
} WakeRuns;

static int wake_runs(const WakeRuns *w)
{
    for (Py_ssize_t i = 0; i < w->n; i++) {
        if ((uint64_t)key_at(w->key, w->ks, i) - (uint64_t)w->lo >= (uint64_t)w->span)
            return -2;
        if (i && w->ts[i] < w->ts[i - 1])
            return 1;
    }
    for (Py_ssize_t r = 0; r < w->m; r++)
        if ((uint64_t)key_at(w->rkey, w->rks, r) - (uint64_t)w->lo >= (uint64_t)w->span)
            return -2;
    /* per key: its rows [first, end) and the walk's place in them (-1: no rows) */
    int64_t *first = malloc((size_t)w->span * sizeof(int64_t));
    int64_t *end = malloc((size_t)w->span * sizeof(int64_t));
    int64_t *at = malloc((size_t)w->span * sizeof(int64_t));
    if (!first || !end || !at) {
        free(first);
        free(end);
        free(at);
        return -1;
    }
    for (int64_t k = 0; k < w->span; k++)
        first[k] = end[k] = at[k] = -1;
    int rc = 0;
    for (Py_ssize_t r = 0; r < w->m && rc == 0; r++) {
        uint64_t k = (uint64_t)key_at(w->rkey, w->rks, r) - (uint64_t)w->lo;
        if (r && (uint64_t)key_at(w->rkey, w->rks, r - 1) - (uint64_t)w->lo == k) {
            if (w->rstart[r] < w->rstart[r - 1])
                rc = 1;   /* a key's runs not in time order */
        } else if (first[k] >= 0) {
            rc = 1;       /* a key's runs apart */
        } else {
            first[k] = at[k] = r;
        }
        end[k] = r + 1;
    }
    for (Py_ssize_t i = 0; i < w->n && rc == 0; i++) {
        uint64_t k = (uint64_t)key_at(w->key, w->ks, i) - (uint64_t)w->lo;
        int64_t t = w->ts[i], p = at[k];
        if (p >= 0) {
            while (p < end[k] && w->rstart[p] < t)
                p++;
            at[k] = p;
        }
        int64_t before = p > first[k] ? p - 1 : -1;   /* (p -1: no rows, none) */
        w->running[i] = before >= 0 && w->reach[before] >= t;
        if (p >= 0 && p < end[k]) {
            w->index[i] = p;
            w->next_ts[i] = w->rstart[p];
            w->next_from[i] = w->earliest[p];
            w->cpu[i] = w->rcpu[p];
            w->end_ts[i] = w->rend[p];
            w->ended[i] = w->rcode[p] == 0;
        } else {
            w->index[i] = -1;
            w->next_ts[i] = w->next_from[i] = w->end_ts[i] = INT64_MAX;
            w->cpu[i] = -1;
            w->ended[i] = 0;
        }
    }
    free(first);
    free(end);
    free(at);
    return rc;
}

PyObject *pass_wake_runs(PyObject *self, PyObject *args)
{
    PyObject *ts_o, *key_o, *rkey_o, *rstart_o, *reach_o, *earliest_o, *rcpu_o, *rend_o,
        *rcode_o, *outs_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOLLO!", &ts_o, &key_o, &rkey_o, &rstart_o, &reach_o,
                          &earliest_o, &rcpu_o, &rend_o, &rcode_o, &lo, &span, &PyTuple_Type,
                          &outs_o))
        return NULL;
    if (!range_ok("wake_runs", lo, span))
        return NULL;
    if (PyTuple_GET_SIZE(outs_o) != 7) {
        PyErr_SetString(PyExc_ValueError, "wake_runs: 7 outputs are needed");
        return NULL;
    }
    Arr ts, key, rkey, rstart, reach, earliest, rcpu, rend, rcode, o[7];
    ArrSpec spec[] = {
        {ts_o, &ts, 8, 0, "wake_runs ts"},
        {key_o, &key, ARR_KEY, 0, "wake_runs key"},
        {rkey_o, &rkey, ARR_KEY, 0, "wake_runs rkey"},
        {rstart_o, &rstart, 8, 0, "wake_runs rstart"},
        {reach_o, &reach, 8, 0, "wake_runs reach"},
        {earliest_o, &earliest, 8, 0, "wake_runs earliest"},
        {rcpu_o, &rcpu, 4, 0, "wake_runs rcpu"},
        {rend_o, &rend, 8, 0, "wake_runs rend"},
        {rcode_o, &rcode, 1, 0, "wake_runs rcode"},
        {PyTuple_GET_ITEM(outs_o, 0), &o[0], 8, 1, "wake_runs out_index"},
        {PyTuple_GET_ITEM(outs_o, 1), &o[1], 1, 1, "wake_runs out_running"},
        {PyTuple_GET_ITEM(outs_o, 2), &o[2], 8, 1, "wake_runs out_next_ts"},
        {PyTuple_GET_ITEM(outs_o, 3), &o[3], 8, 1, "wake_runs out_next_from"},
        {PyTuple_GET_ITEM(outs_o, 4), &o[4], 4, 1, "wake_runs out_cpu"},
        {PyTuple_GET_ITEM(outs_o, 5), &o[5], 8, 1, "wake_runs out_end_ts"},
        {PyTuple_GET_ITEM(outs_o, 6), &o[6], 1, 1, "wake_runs out_ended"},
    };
    const int ns = 16;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&ts), m = arr_len(&rkey);
    int same = arr_len(&key) == n;
    for (int j = 0; j < 7; j++)
        same = same && arr_len(&o[j]) == n;
    if (!same || arr_len(&rstart) != m || arr_len(&reach) != m || arr_len(&earliest) != m ||
        arr_len(&rcpu) != m || arr_len(&rend) != m || arr_len(&rcode) != m)
        return value_error(spec, ns, "wake_runs: arrays of different lengths");
    WakeRuns w = {ts.view.buf, key.view.buf, key.view.itemsize, n, rkey.view.buf,
                  rkey.view.itemsize, rstart.view.buf, reach.view.buf, earliest.view.buf,
                  rend.view.buf, rcpu.view.buf, rcode.view.buf, m, lo, span,
                  o[0].view.buf, o[2].view.buf, o[3].view.buf, o[5].view.buf,
                  o[4].view.buf, o[1].view.buf, o[6].view.buf};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = wake_runs(&w);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (pass_failed(rc, "wake_runs: a key outside [lo, lo + span)") < 0)
        return NULL;
    return PyBool_FromLong(rc == 0);
}
