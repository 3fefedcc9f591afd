/*
 * _pass_task_states.c: the per-row passes of the task states (task_states.py):
 * ordering the tasks' events by (task, time, priority), the scan of each task's
 * events in that order that gives its intervals, and the sums of the intervals' ns
 * per group and state.  task_states.py says what the states mean; here are only the
 * loops.  Every index read from an array is checked against the array it indexes
 * before use; an array of the wrong kind or length raises, as does a code or group
 * out of its range.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

/* the codes of task_states.py (_RUN ... _KEEP, _PRIO_OUT) */
enum { RUN, PRE, WOKEN, SLEEP, BLOCK, UNK, DEAD, WAKE, KEEP, NCODES };
enum { PRIO_OUT = 1 };
#define NSTATES 6
/* per-task flags of task_states_scan */
enum { G_BORN = 1, G_UNSEEN = 2, G_GONE = 4 };

/* Take each of n (object, array, item size, writable, name) arguments; on failure
 * release those taken and return -1 (a Python error set). */
typedef struct {
    PyObject *obj;
    Arr *arr;
    Py_ssize_t itemsize;
    int writable;
    const char *what;
} ArrSpec;

static int arrs_get(ArrSpec *spec, int n)
{
    for (int i = 0; i < n; i++) {
        spec[i].arr->held = 0;
    }
    for (int i = 0; i < n; i++) {
        if (arr_get(spec[i].obj, spec[i].arr, spec[i].itemsize, spec[i].writable,
                    spec[i].what) < 0) {
            for (int j = 0; j < i; j++)
                arr_release(spec[j].arr);
            return -1;
        }
    }
    return 0;
}

static void arrs_release(ArrSpec *spec, int n)
{
    for (int i = 0; i < n; i++)
        arr_release(spec[i].arr);
}

static PyObject *value_error(ArrSpec *spec, int n, const char *msg)
{
    arrs_release(spec, n);
    PyErr_SetString(PyExc_ValueError, msg);
    return NULL;
}

/* ---- ts_merge_order --------------------------------------------------------- */

/* (ts, prio) of row a before that of row b */
static inline int tp_less(const int64_t *ts, const int8_t *prio, int64_t a, int64_t b)
{
    return ts[a] < ts[b] || (ts[a] == ts[b] && prio[a] < prio[b]);
}

/* heap of runs by (ts, prio) of their next row, then run number */
static inline int run_less(const int64_t *ts, const int8_t *prio, const int64_t *head,
                           int64_t r, int64_t s)
{
    int64_t a = head[r], b = head[s];
    if (tp_less(ts, prio, a, b))
        return 1;
    if (tp_less(ts, prio, b, a))
        return 0;
    return r < s;
}

static void sift_down(int64_t *heap, int64_t size, int64_t at, const int64_t *ts,
                      const int8_t *prio, const int64_t *head)
{
    for (;;) {
        int64_t l = 2 * at + 1, m = at;
        if (l < size && run_less(ts, prio, head, heap[l], heap[m]))
            m = l;
        if (l + 1 < size && run_less(ts, prio, head, heap[l + 1], heap[m]))
            m = l + 1;
        if (m == at)
            return;
        int64_t t = heap[at];
        heap[at] = heap[m];
        heap[m] = t;
        at = m;
    }
}

/* The stable order by (ts, prio) of n rows made of k runs [bounds[j], bounds[j+1]),
 * each already in that order: one k-way merge (a heap of the runs).  -1: no memory. */
static int merge_runs(const int64_t *ts, const int8_t *prio, const int64_t *bounds,
                      int64_t k, int64_t *out)
{
    int64_t *head = malloc(sizeof(int64_t) * (size_t)(2 * k + 1));
    if (!head)
        return -1;
    int64_t *heap = head + k, size = 0, o = 0;
    for (int64_t r = 0; r < k; r++) {
        head[r] = bounds[r];
        if (bounds[r] < bounds[r + 1])
            heap[size++] = r;
    }
    for (int64_t at = size / 2 - 1; at >= 0; at--)
        sift_down(heap, size, at, ts, prio, head);
    while (size > 0) {
        int64_t r = heap[0];
        out[o++] = head[r]++;
        if (head[r] == bounds[r + 1])
            heap[0] = heap[--size];
        sift_down(heap, size, 0, ts, prio, head);
    }
    free(head);
    return 0;
}

PyObject *pass_ts_merge_order(PyObject *self, PyObject *args)
{
    PyObject *o_ts, *o_prio, *o_bounds, *o_out;
    if (!PyArg_ParseTuple(args, "OOOO", &o_ts, &o_prio, &o_bounds, &o_out))
        return NULL;
    Arr ts, prio, bounds, out;
    ArrSpec spec[] = {
        {o_ts, &ts, 8, 0, "ts_merge_order ts"},
        {o_prio, &prio, 1, 0, "ts_merge_order prio"},
        {o_bounds, &bounds, 8, 0, "ts_merge_order bounds"},
        {o_out, &out, 8, 1, "ts_merge_order out"},
    };
    const int ns = 4;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&ts), nb = arr_len(&bounds);
    if (arr_len(&prio) != n || arr_len(&out) != n)
        return value_error(spec, ns, "ts_merge_order: ts, prio and out must be as long");
    const int64_t *b = bounds.view.buf, *t = ts.view.buf;
    const int8_t *p = prio.view.buf;
    if (nb < 1 || b[0] != 0 || b[nb - 1] != n)
        return value_error(spec, ns, "ts_merge_order: bounds must run from 0 to len(ts)");
    for (Py_ssize_t j = 0; j + 1 < nb; j++)
        if (b[j] > b[j + 1])
            return value_error(spec, ns, "ts_merge_order: bounds must not decrease");
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j + 1 < nb && !rc; j++)
        for (int64_t i = b[j] + 1; i < b[j + 1]; i++)
            if (tp_less(t, p, i, i - 1)) {
                rc = -2;
                break;
            }
    if (!rc)
        rc = merge_runs(t, p, b, nb - 1, out.view.buf);
    Py_END_ALLOW_THREADS
    if (rc == -2)
        return value_error(spec, ns, "ts_merge_order: a run out of (ts, prio) order");
    arrs_release(spec, ns);
    if (rc < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ---- keyed_last_below ------------------------------------------------------- */

PyObject *pass_keyed_last_below(PyObject *self, PyObject *args)
{
    PyObject *o_key, *o_ts, *o_qkey, *o_qts, *o_out;
    if (!PyArg_ParseTuple(args, "OOOOO", &o_key, &o_ts, &o_qkey, &o_qts, &o_out))
        return NULL;
    Arr key, ts, qkey, qts, out;
    ArrSpec spec[] = {
        {o_key, &key, 8, 0, "keyed_last_below key"},
        {o_ts, &ts, 8, 0, "keyed_last_below ts"},
        {o_qkey, &qkey, 8, 0, "keyed_last_below qkey"},
        {o_qts, &qts, 8, 0, "keyed_last_below qts"},
        {o_out, &out, 8, 1, "keyed_last_below out"},
    };
    const int ns = 5;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&key), q = arr_len(&qkey);
    if (arr_len(&ts) != n || arr_len(&qts) != q || arr_len(&out) != q)
        return value_error(spec, ns, "keyed_last_below: arrays of unequal lengths");
    const int64_t *k = key.view.buf, *t = ts.view.buf, *qk = qkey.view.buf,
                  *qt = qts.view.buf;
    int64_t *o = out.view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < q; j++) {
        /* the first row not below (qk, qt): every position stays in [0, n] */
        Py_ssize_t lo = 0, hi = n;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (k[mid] < qk[j] || (k[mid] == qk[j] && t[mid] < qt[j]))
                lo = mid + 1;
            else
                hi = mid;
        }
        o[j] = (lo > 0 && k[lo - 1] == qk[j]) ? (int64_t)(lo - 1) : -1;
    }
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    Py_RETURN_NONE;
}

/* ---- keyed_merge_order ------------------------------------------------------ */

PyObject *pass_keyed_merge_order(PyObject *self, PyObject *args)
{
    PyObject *o_a, *o_b, *o_key, *o_ts, *o_prio, *o_out;
    if (!PyArg_ParseTuple(args, "OOOOOO", &o_a, &o_b, &o_key, &o_ts, &o_prio, &o_out))
        return NULL;
    Arr a, b, key, ts, prio, out;
    ArrSpec spec[] = {
        {o_a, &a, 8, 0, "keyed_merge_order a"},
        {o_b, &b, 8, 0, "keyed_merge_order b"},
        {o_key, &key, 8, 0, "keyed_merge_order key"},
        {o_ts, &ts, 8, 0, "keyed_merge_order ts"},
        {o_prio, &prio, 1, 0, "keyed_merge_order prio"},
        {o_out, &out, 8, 1, "keyed_merge_order out"},
    };
    const int ns = 6;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&key), na = arr_len(&a), nb = arr_len(&b);
    if (arr_len(&ts) != n || arr_len(&prio) != n || arr_len(&out) != na + nb)
        return value_error(spec, ns, "keyed_merge_order: arrays of unequal lengths");
    const int64_t *ia = a.view.buf, *ib = b.view.buf, *k = key.view.buf, *t = ts.view.buf;
    const int8_t *p = prio.view.buf;
    int64_t *o = out.view.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < na && !bad; j++)
        bad = (uint64_t)ia[j] >= (uint64_t)n;
    for (Py_ssize_t j = 0; j < nb && !bad; j++)
        bad = (uint64_t)ib[j] >= (uint64_t)n;
    if (!bad) {
        Py_ssize_t x = 0, y = 0, z = 0;
        while (x < na && y < nb) {
            int64_t r = ia[x], s = ib[y];
            /* b's row first only when strictly below a's (ties: a's rows first) */
            int b_first = k[s] < k[r] ||
                          (k[s] == k[r] && (t[s] < t[r] || (t[s] == t[r] && p[s] < p[r])));
            o[z++] = b_first ? ib[y++] : ia[x++];
        }
        while (x < na)
            o[z++] = ia[x++];
        while (y < nb)
            o[z++] = ib[y++];
    }
    Py_END_ALLOW_THREADS
    if (bad)
        return value_error(spec, ns, "keyed_merge_order: a row outside the arrays");
    arrs_release(spec, ns);
    Py_RETURN_NONE;
}

/* ---- task_states_in_flight -------------------------------------------------- */

PyObject *pass_task_states_in_flight(PyObject *self, PyObject *args)
{
    PyObject *o_key, *o_code, *o_prio, *o_at, *o_wake;
    if (!PyArg_ParseTuple(args, "OOOOO", &o_key, &o_code, &o_prio, &o_at, &o_wake))
        return NULL;
    Arr key, code, prio, at, wake;
    ArrSpec spec[] = {
        {o_key, &key, 8, 0, "task_states_in_flight key"},
        {o_code, &code, 1, 0, "task_states_in_flight code"},
        {o_prio, &prio, 1, 0, "task_states_in_flight prio"},
        {o_at, &at, 8, 1, "task_states_in_flight at"},
        {o_wake, &wake, 8, 1, "task_states_in_flight wake"},
    };
    const int ns = 5;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&key);
    if (arr_len(&code) != n || arr_len(&prio) != n || arr_len(&at) != n ||
        arr_len(&wake) != n)
        return value_error(spec, ns, "task_states_in_flight: arrays of unequal lengths");
    const int64_t *k = key.view.buf;
    const int8_t *c = code.view.buf, *p = prio.view.buf;
    int64_t *oa = at.view.buf, *ow = wake.view.buf;
    Py_ssize_t m = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t last_in = -1, last_wake = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || k[i] != k[i - 1])
            last_in = last_wake = -1;
        if (c[i] == RUN)
            last_in = i;
        else if (c[i] == WAKE)
            last_wake = i;
        if (p[i] == PRIO_OUT && last_wake > last_in && last_in >= 0 &&
            (c[i] == SLEEP || c[i] == BLOCK)) {
            oa[m] = i;
            ow[m] = last_wake;
            m++;
        }
    }
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    return PyLong_FromSsize_t(m);
}

/* ---- task_states_scan ------------------------------------------------------- */

typedef struct {
    const int64_t *ts, *key, *cpu, *letters, *gend;
    const int8_t *code, *prio, *mark, *gflags;
    Py_ssize_t n, ngroups;
    int unseen_given;
    int64_t *o_key, *o_start, *o_end;
    int32_t *o_cpu, *o_since;
    int8_t *o_state;
} Scan;

/* -1: no memory; -2: a code out of range; -3: more tasks than flags; -4: fewer */
static Py_ssize_t scan(const Scan *s)
{
    int8_t *ncode = NULL;
    int64_t *bump = NULL;
    Py_ssize_t cap = 0, m = 0, g = 0;
    int64_t run = 0; /* the running sum of the marks, over all rows */
    Py_ssize_t a = 0;
    Py_ssize_t rc = 0;
    while (a < s->n) {
        Py_ssize_t b = a + 1;
        while (b < s->n && s->key[b] == s->key[a])
            b++;
        if (g >= s->ngroups) {
            rc = -3;
            goto done;
        }
        Py_ssize_t len = b - a;
        if (len > cap) {
            free(ncode);
            free(bump);
            cap = len > 2 * cap ? len : 2 * cap;
            ncode = malloc((size_t)cap);
            bump = malloc(sizeof(int64_t) * (size_t)cap);
            if (!ncode || !bump) {
                rc = -1;
                goto done;
            }
        }
        memset(bump, 0, sizeof(int64_t) * (size_t)len);
        /* the wake-ups: a wake-up of a task off the CPU wakes it; one of a task
         * already woken and not seen running since makes the time from that earlier
         * wake-up (or its woken state) unknown */
        int last_def = -1;
        int64_t def_at = -1, wake_at = -1;
        for (Py_ssize_t i = a; i < b; i++) {
            int c = s->code[i];
            if (c < 0 || c >= NCODES) {
                rc = -2;
                goto done;
            }
            ncode[i - a] = (int8_t)c;
            if (c <= DEAD) {
                last_def = c;
                def_at = i;
            } else if (c == WAKE) {
                int running = last_def == RUN || last_def == PRE;
                int by_wake = wake_at > def_at;
                if (!running && (by_wake || last_def == WOKEN)) {
                    int64_t since = by_wake ? wake_at : def_at; /* in [a, i) */
                    bump[since - a] += 1;
                    bump[i - a] -= 1;
                }
                ncode[i - a] = running ? KEEP : WOKEN;
                wake_at = i;
            }
        }
        int flags = s->gflags[g];
        int state = -1, pst = -1;
        int64_t where = -1, carry = -1, pwhere = -1, psince = -1;
        int64_t p_start = 0;
        int have = 0;
        for (Py_ssize_t i = a; i < b; i++) {
            int c = ncode[i - a];
            if (c != KEEP)
                state = c;
            int st = state >= 0 ? state : (flags & G_BORN ? DEAD : UNK);
            run += s->mark[i] + bump[i - a];
            if (run > 0 && st != DEAD)
                st = UNK;
            if ((flags & G_UNSEEN) && st == WOKEN)
                st = UNK;
            if (s->cpu[i] >= 0)
                where = s->cpu[i];
            int64_t cv = s->prio[i] == PRIO_OUT ? s->letters[i] + 1 : (s->code[i] <= DEAD ? 0 : -1);
            if (cv >= 0)
                carry = cv;
            int64_t since = carry - 1 > -1 ? carry - 1 : -1;
            if (st == RUN)
                since = -1;
            if (i > a && st == pst && where == pwhere && since == psince)
                continue; /* nothing changes: the interval goes on */
            if (have && pst != DEAD && s->ts[i] > p_start) {
                s->o_end[m] = s->ts[i];
                m++;
            }
            /* the row in the making (kept when it ends after it starts, alive) */
            s->o_key[m] = s->key[i];
            s->o_cpu[m] = (int32_t)where;
            s->o_start[m] = p_start = s->ts[i];
            s->o_state[m] = (int8_t)st;
            s->o_since[m] = (int32_t)since;
            have = 1;
            pst = st;
            pwhere = where;
            psince = since;
        }
        /* the task's last interval: to its end; unknown when its death is missing; a
         * wait after a wake-up that no run ends is not proven on a trace lacking events */
        if (have) {
            int st = pst;
            if ((flags & G_GONE) && st != DEAD)
                st = UNK;
            if (s->unseen_given && st == WOKEN)
                st = UNK;
            s->o_state[m] = (int8_t)st;
            if (st != DEAD && s->gend[g] > p_start) {
                s->o_end[m] = s->gend[g];
                m++;
            }
        }
        g++;
        a = b;
    }
    if (g != s->ngroups)
        rc = -4;
done:
    free(ncode);
    free(bump);
    return rc < 0 ? rc : m;
}

PyObject *pass_task_states_scan(PyObject *self, PyObject *args)
{
    PyObject *o[16];
    int unseen_given;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOpOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &unseen_given, &o[9], &o[10], &o[11],
                          &o[12], &o[13], &o[14]))
        return NULL;
    Arr ts, key, cpu, code, prio, letters, mark, gflags, gend, okey, ocpu, ostart, oend,
        ostate, osince;
    ArrSpec spec[] = {
        {o[0], &ts, 8, 0, "task_states_scan ts"},
        {o[1], &key, 8, 0, "task_states_scan key"},
        {o[2], &cpu, 8, 0, "task_states_scan cpu"},
        {o[3], &code, 1, 0, "task_states_scan code"},
        {o[4], &prio, 1, 0, "task_states_scan prio"},
        {o[5], &letters, 8, 0, "task_states_scan letters"},
        {o[6], &mark, 1, 0, "task_states_scan mark"},
        {o[7], &gflags, 1, 0, "task_states_scan gflags"},
        {o[8], &gend, 8, 0, "task_states_scan gend"},
        {o[9], &okey, 8, 1, "task_states_scan out key"},
        {o[10], &ocpu, 4, 1, "task_states_scan out cpu"},
        {o[11], &ostart, 8, 1, "task_states_scan out start"},
        {o[12], &oend, 8, 1, "task_states_scan out end"},
        {o[13], &ostate, 1, 1, "task_states_scan out state"},
        {o[14], &osince, 4, 1, "task_states_scan out since"},
    };
    const int ns = 15;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&ts);
    for (int i = 1; i < ns; i++) {
        if (i == 7 || i == 8)
            continue;
        if (arr_len(spec[i].arr) != n)
            return value_error(spec, ns, "task_states_scan: the rows' arrays must be as long");
    }
    if (arr_len(&gend) != arr_len(&gflags))
        return value_error(spec, ns, "task_states_scan: gflags and gend must be as long");
    Scan s = {
        .ts = ts.view.buf, .key = key.view.buf, .cpu = cpu.view.buf,
        .letters = letters.view.buf, .gend = gend.view.buf, .code = code.view.buf,
        .prio = prio.view.buf, .mark = mark.view.buf, .gflags = gflags.view.buf,
        .n = n, .ngroups = arr_len(&gflags), .unseen_given = unseen_given,
        .o_key = okey.view.buf, .o_start = ostart.view.buf, .o_end = oend.view.buf,
        .o_cpu = ocpu.view.buf, .o_since = osince.view.buf, .o_state = ostate.view.buf,
    };
    Py_ssize_t m;
    Py_BEGIN_ALLOW_THREADS
    m = scan(&s);
    Py_END_ALLOW_THREADS
    arrs_release(spec, ns);
    if (m == -1)
        return PyErr_NoMemory();
    if (m == -2) {
        PyErr_SetString(PyExc_ValueError, "task_states_scan: a code out of range");
        return NULL;
    }
    if (m < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "task_states_scan: gflags must have one entry per task");
        return NULL;
    }
    return PyLong_FromSsize_t(m);
}

/* ---- state_sums ------------------------------------------------------------- */

PyObject *pass_state_sums(PyObject *self, PyObject *args)
{
    PyObject *o_group, *o_state, *o_dur, *o_out;
    if (!PyArg_ParseTuple(args, "OOOO", &o_group, &o_state, &o_dur, &o_out))
        return NULL;
    Arr group, state, dur, out;
    ArrSpec spec[] = {
        {o_group, &group, 8, 0, "state_sums group"},
        {o_state, &state, 1, 0, "state_sums state"},
        {o_dur, &dur, 8, 0, "state_sums dur"},
        {o_out, &out, 8, 1, "state_sums out"},
    };
    const int ns = 4;
    if (arrs_get(spec, ns) < 0)
        return NULL;
    Py_ssize_t n = arr_len(&group), cells = arr_len(&out);
    if (arr_len(&state) != n || arr_len(&dur) != n || cells % NSTATES)
        return value_error(spec, ns,
                           "state_sums: group, state and dur as long, out a row per group");
    const int64_t *gr = group.view.buf, *d = dur.view.buf;
    const int8_t *st = state.view.buf;
    int64_t *o = out.view.buf;
    uint64_t groups = (uint64_t)(cells / NSTATES);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(o, 0, sizeof(int64_t) * (size_t)cells);
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((uint64_t)gr[i] >= groups || st[i] < 0 || st[i] >= NSTATES) {
            bad = 1;
            break;
        }
        /* (unsigned: wraps as NumPy's int64 sums do, never undefined) */
        uint64_t *cell = (uint64_t *)&o[gr[i] * NSTATES + st[i]];
        *cell += (uint64_t)d[i];
    }
    Py_END_ALLOW_THREADS
    if (bad)
        return value_error(spec, ns, "state_sums: a group or state out of range");
    arrs_release(spec, ns);
    Py_RETURN_NONE;
}
