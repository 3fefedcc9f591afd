/*
 * _pass_waits.c: the per-task state machine of the waits model (waits.py, build), one
 * pass over the events of every task in (task, time) order.
 */
#include "_passes.h"

enum { OUT_R = 0, OUT_S = 1, WAKE = 2, IN = 3 };

/*
 * The events are rows of task, kind, row and ts; src lists them in (task, time) order
 * (every entry checked to be a row before this runs).  An epoch runs from a task's first
 * event or a switch-out of it to the next.  Its wait is armed at a preempting switch-out
 * (its head), at the first wake-up after a sleeping switch-out (or of a task first seen
 * by a wake-up), or at a task's first switch-in when that is its first event (a switch
 * row: row < 2 * ns); it ends at the first switch-in at or after the arming.  Left out
 * (when unseen): a sleeping wait whose second wake-up comes strictly before the time of
 * that end.  Per wait that ends, in epoch order, as rows: out_a (where it is armed),
 * out_e (its end), out_head (the epoch's head); out_kind (0 woken, 1 preempted, 2 first
 * seen).
 */
static Py_ssize_t epochs(const int64_t *src, Py_ssize_t n, const int64_t *task,
                         const int8_t *kind, const int64_t *row, const int64_t *ts, int64_t ns,
                         int unseen, int64_t *out_a, int64_t *out_e, int64_t *out_head,
                         int8_t *out_kind)
{
    Py_ssize_t m = 0, h = 0;
    while (h < n) {
        int64_t hr = src[h], who = task[hr];
        int first = h == 0 || who != task[src[h - 1]];
        int hk = kind[hr];
        /* the epoch: h up to the next switch-out or first event of a task */
        Py_ssize_t wake1 = -1, wake2 = -1, in_any = -1, in_after = -1, i = h;
        for (;;) {
            int k = kind[src[i]];
            if (k == WAKE) {
                if (wake1 < 0)
                    wake1 = i;
                else if (wake2 < 0)
                    wake2 = i;
            } else if (k == IN) {
                if (in_any < 0)
                    in_any = i;
                if (wake1 >= 0 && in_after < 0)
                    in_after = i;
            }
            if (++i >= n)
                break;
            int64_t r = src[i];
            if (task[r] != who || kind[r] == OUT_R || kind[r] == OUT_S)
                break;
        }
        Py_ssize_t next = i, armed = -1, end = -1;
        int sleeping = hk == OUT_S || (first && hk == WAKE);
        int seen_in = first && hk == IN && row[hr] < 2 * ns;
        if (hk == OUT_R || seen_in) {
            armed = h;
            end = in_any;
        } else if (sleeping && wake1 >= 0) {
            armed = wake1;
            end = in_after;
        }
        if (end >= 0 && !(unseen && sleeping && wake2 >= 0 && ts[src[wake2]] < ts[src[end]])) {
            out_a[m] = src[armed];
            out_e[m] = src[end];
            out_head[m] = hr;
            out_kind[m] = seen_in ? 2 : (hk == OUT_R ? 1 : 0);
            m++;
        }
        h = next;
    }
    return m;
}

/* wait_epochs(src, task, kind, row, ts, ns, rewoken_unseen, out_a, out_e, out_head,
 * out_kind) -> number of waits written */
PyObject *pass_wait_epochs(PyObject *self, PyObject *args)
{
    PyObject *src_o, *task_o, *kind_o, *row_o, *ts_o, *a_o, *e_o, *h_o, *k_o;
    long long ns;
    int unseen;
    if (!PyArg_ParseTuple(args, "OOOOOLpOOOO", &src_o, &task_o, &kind_o, &row_o, &ts_o, &ns,
                          &unseen, &a_o, &e_o, &h_o, &k_o))
        return NULL;
    if (ns < 0 || ns > ((long long)1 << 60)) {
        PyErr_SetString(PyExc_ValueError, "wait_epochs: ns out of range");
        return NULL;
    }
    Arr src = {0}, task = {0}, kind = {0}, row = {0}, ts = {0};
    Arr oa = {0}, oe = {0}, oh = {0}, ok = {0};
    PyObject *res = NULL;
    if (arr_get(src_o, &src, 8, 0, "wait_epochs src") < 0 ||
        arr_get(task_o, &task, 8, 0, "wait_epochs task") < 0 ||
        arr_get(kind_o, &kind, 1, 0, "wait_epochs kind") < 0 ||
        arr_get(row_o, &row, 8, 0, "wait_epochs row") < 0 ||
        arr_get(ts_o, &ts, 8, 0, "wait_epochs ts") < 0 ||
        arr_get(a_o, &oa, 8, 1, "wait_epochs out_a") < 0 ||
        arr_get(e_o, &oe, 8, 1, "wait_epochs out_e") < 0 ||
        arr_get(h_o, &oh, 8, 1, "wait_epochs out_head") < 0 ||
        arr_get(k_o, &ok, 1, 1, "wait_epochs out_kind") < 0)
        goto done;
    Py_ssize_t n = arr_len(&src), rows = arr_len(&task);
    if (arr_len(&kind) != rows || arr_len(&row) != rows || arr_len(&ts) != rows) {
        PyErr_SetString(PyExc_ValueError, "wait_epochs: task, kind, row, ts: one slot a row");
        goto done;
    }
    if (arr_len(&oa) != n || arr_len(&oe) != n || arr_len(&oh) != n || arr_len(&ok) != n) {
        PyErr_SetString(PyExc_ValueError, "wait_epochs: the outputs need one slot a src entry");
        goto done;
    }
    const int64_t *sp = src.view.buf;
    const int8_t *kd = kind.view.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !bad; i++)
        if ((uint64_t)sp[i] >= (uint64_t)rows)
            bad = 1;
    for (Py_ssize_t i = 0; i < rows && !bad; i++)
        if (kd[i] < OUT_R || kd[i] > IN)
            bad = 2;
    Py_END_ALLOW_THREADS
    if (bad == 1) {
        PyErr_SetString(PyExc_ValueError, "wait_epochs: a src entry outside the rows");
        goto done;
    }
    if (bad == 2) {
        PyErr_SetString(PyExc_ValueError, "wait_epochs: a kind outside 0..3");
        goto done;
    }
    Py_ssize_t m;
    Py_BEGIN_ALLOW_THREADS
    m = epochs(sp, n, task.view.buf, kd, row.view.buf, ts.view.buf, ns, unseen, oa.view.buf,
               oe.view.buf, oh.view.buf, ok.view.buf);
    Py_END_ALLOW_THREADS
    res = PyLong_FromSsize_t(m);
done:
    arr_release(&src);
    arr_release(&task);
    arr_release(&kind);
    arr_release(&row);
    arr_release(&ts);
    arr_release(&oa);
    arr_release(&oe);
    arr_release(&oh);
    arr_release(&ok);
    return res;
}

/*
 * task_order(task, by_time, pid, lo, span, out) -> int
 *
 * The rows by_time lists (in time order), but those of pid 0 (the idle task never
 * waits), stably ordered by task (keys in [lo, lo + span)) into out: one counting sort
 * through the rows, the gathers and the filter in the same pass.  Returns the number of
 * rows placed.  ValueError on a by_time entry outside the rows or a key outside the
 * range (checked before anything is written).
 */
PyObject *pass_task_order(PyObject *self, PyObject *args)
{
    PyObject *task_o, *by_o, *pid_o, *out_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOLLO", &task_o, &by_o, &pid_o, &lo, &span, &out_o))
        return NULL;
    if (!range_ok("task_order", lo, span))
        return NULL;
    Arr task = {0}, by = {0}, pid = {0}, out = {0};
    PyObject *res = NULL;
    if (arr_get(task_o, &task, 8, 0, "task_order task") < 0 ||
        arr_get(by_o, &by, 8, 0, "task_order by_time") < 0 ||
        arr_get(pid_o, &pid, 8, 0, "task_order pid") < 0 ||
        arr_get(out_o, &out, 8, 1, "task_order out") < 0)
        goto done;
    Py_ssize_t rows = arr_len(&task), n = arr_len(&by);
    if (arr_len(&pid) != rows) {
        PyErr_SetString(PyExc_ValueError, "task_order: task and pid: one slot a row");
        goto done;
    }
    if (arr_len(&out) != n) {
        PyErr_SetString(PyExc_ValueError, "task_order: out must have one slot a by_time entry");
        goto done;
    }
    const int64_t *tk = task.view.buf, *bt = by.view.buf, *pd = pid.view.buf;
    int64_t *o = out.view.buf;
    int rc = 0;
    Py_ssize_t m = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !rc; i++) {
        int64_t r = bt[i];
        if ((uint64_t)r >= (uint64_t)rows)
            rc = -3;
        else if (pd[r] != 0 && (uint64_t)tk[r] - (uint64_t)lo >= (uint64_t)span)
            rc = -2;
    }
    int64_t *first = rc ? NULL : calloc((size_t)span + 1, sizeof(int64_t));
    if (!rc && !first)
        rc = -1;
    if (!rc) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t r = bt[i];
            if (pd[r] != 0)
                first[(uint64_t)tk[r] - (uint64_t)lo + 1]++;
        }
        for (int64_t k = 0; k < span; k++)
            first[k + 1] += first[k];
        m = first[span];
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t r = bt[i];
            if (pd[r] != 0)
                o[first[(uint64_t)tk[r] - (uint64_t)lo]++] = r;
        }
    }
    free(first);
    Py_END_ALLOW_THREADS
    if (rc == -1)
        PyErr_NoMemory();
    else if (rc == -2)
        PyErr_SetString(PyExc_ValueError, "task_order: a task outside [lo, lo + span)");
    else if (rc == -3)
        PyErr_SetString(PyExc_ValueError, "task_order: a by_time entry outside the rows");
    else
        res = PyLong_FromSsize_t(m);
done:
    arr_release(&task);
    arr_release(&by);
    arr_release(&pid);
    arr_release(&out);
    return res;
}

/* The state of the preempted waits' pass: per pid slot, its current life key (cur) and
 * the switch-out that armed its wait (pend, -1: none); out: per switch-out, the row
 * that ends the wait it arms. */
typedef struct {
    int64_t lo, span, ns;
    int64_t *cur, *pend, *out;
} Preempt;

/* One event of the life ``key`` (pid 0's left out): a switch-out (``row`` its switch
 * row) that arms (``arm``) or disarms its task's wait, or a run shown at ``row`` (a
 * switch-in ns + j, a run 2 ns + its row) that ends an armed wait there.  An event of
 * a later life of the pid starts afresh; -4: an earlier life's after a later one's. */
static inline int preempt_step(Preempt *p, int64_t key, int is_out, int arm, int64_t row)
{
    const int64_t low = ((int64_t)1 << 32) - 1;
    if ((key & low) == 0)
        return 0;
    int64_t s = (key & low) - p->lo;
    if ((uint64_t)s >= (uint64_t)p->span) /* (read again: checked again) */
        return -2;
    if (key != p->cur[s]) {
        if (key < p->cur[s])
            return -4;
        p->cur[s] = key;
        p->pend[s] = -1;
    }
    if (is_out) {
        p->pend[s] = arm ? row : -1;
        return 0;
    }
    if (p->pend[s] >= 0)
        p->out[p->pend[s]] = row;
    p->pend[s] = -1;
    return 0;
}

/*
 * The switches (rows 0..ns-1, in time order: a switch's switch-out at tie 2i, its
 * switch-in at 2i + 1) and the runs whose switch-in is missing (in (ts, tie) order),
 * merged by (ts, tie) (a switch first on equal ones, as the waits' stable order puts
 * them), each event applied to its pid's state (preempt_step).
 */
static int preempted_loop(Preempt *p, const int64_t *sts, const int64_t *pkey,
                          const int64_t *nkey, const uint8_t *runnable, const int64_t *cts,
                          const int64_t *ckey, const int64_t *ctie, const int64_t *crow,
                          Py_ssize_t nc)
{
    Py_ssize_t c = 0, ns = p->ns;
    int rc = 0;
    for (Py_ssize_t e = 0; e <= 2 * ns && !rc; e++) {
        /* the runs before event e (all that are left after the last) */
        Py_ssize_t i = e / 2;
        for (; c < nc && !rc &&
               (e == 2 * ns || cts[c] < sts[i] || (cts[c] == sts[i] && ctie[c] < e));
             c++)
            rc = preempt_step(p, ckey[c], 0, 0, 2 * ns + crow[c]);
        if (e == 2 * ns || rc)
            break;
        if (e % 2 == 0)
            rc = preempt_step(p, pkey[i], 1, runnable[i] != 0, i);
        else
            rc = preempt_step(p, nkey[i], 0, 0, ns + i);
    }
    return rc;
}

/*
 * preempted_ends(sts, prev_key, next_key, runnable, cts, ckey, ctie, crow, out) -> bool
 *
 * The preempted waits (waits.py, preempted): out[i] = the row that ends the wait
 * switch-out i arms when it switches its task out runnable (runnable[i]): the task's
 * next switch-in (ns + j) or run whose switch-in is missing (2 ns + crow[c]) before its
 * next switch-out, else -1.  The switches' times sts, their prev and next life keys;
 * the runs' times cts, life keys ckey, ties ctie (compared with the switches' 2i and
 * 2i + 1) and rows crow.  False (out not to be read) when the switches are not in time
 * order, the runs not in (ts, tie) order, the pids (the keys' low 32 bits) span more
 * than 4 slots a row, or a pid's life keys go back in time; ValueError on a run's row
 * outside [0, 2**61].
 */
PyObject *pass_preempted_ends(PyObject *self, PyObject *args)
{
    PyObject *o[9];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8]))
        return NULL;
    Arr sts, pk, nk, run, cts, ck, ct, cr, out;
    ArrSpec spec[] = {
        {o[0], &sts, 8, 0, "preempted_ends sts"},  {o[1], &pk, 8, 0, "preempted_ends prev_key"},
        {o[2], &nk, 8, 0, "preempted_ends next_key"}, {o[3], &run, 1, 0, "preempted_ends runnable"},
        {o[4], &cts, 8, 0, "preempted_ends cts"},  {o[5], &ck, 8, 0, "preempted_ends ckey"},
        {o[6], &ct, 8, 0, "preempted_ends ctie"},  {o[7], &cr, 8, 0, "preempted_ends crow"},
        {o[8], &out, 8, 1, "preempted_ends out"},
    };
    const int n_spec = 9;
    if (arrs_get(spec, n_spec) < 0)
        return NULL;
    Py_ssize_t ns = arr_len(&sts), nc = arr_len(&cts);
    if (arr_len(&pk) != ns || arr_len(&nk) != ns || arr_len(&run) != ns || arr_len(&out) != ns)
        return value_error(spec, n_spec, "preempted_ends: the switches' arrays and out: "
                                         "one slot a switch");
    if (arr_len(&ck) != nc || arr_len(&ct) != nc || arr_len(&cr) != nc)
        return value_error(spec, n_spec, "preempted_ends: the runs' arrays: one slot a run");
    const int64_t *t = sts.view.buf, *p = pk.view.buf, *x = nk.view.buf;
    const int64_t *u = cts.view.buf, *k = ck.view.buf, *v = ct.view.buf, *r = cr.view.buf;
    const int64_t low = ((int64_t)1 << 32) - 1;
    int rc = 0;
    Preempt st = {0, 0, ns, NULL, NULL, out.view.buf};
    Py_BEGIN_ALLOW_THREADS
    /* the orders, the runs' rows, and the pids' range (pid 0 aside) */
    int64_t lo = INT64_MAX, hi = -1;
    for (Py_ssize_t i = 0; i < ns && !rc; i++) {
        if (i && t[i] < t[i - 1])
            rc = 1;
        for (int side = 0; side < 2; side++) {
            int64_t pid = (side ? x[i] : p[i]) & low;
            if (pid) {
                lo = pid < lo ? pid : lo;
                hi = pid > hi ? pid : hi;
            }
        }
    }
    for (Py_ssize_t c = 0; c < nc && !rc; c++) {
        if (c && (u[c] < u[c - 1] || (u[c] == u[c - 1] && v[c] < v[c - 1])))
            rc = 1;
        if (r[c] < 0 || r[c] > ((int64_t)1 << 61))
            rc = -2;
        int64_t pid = k[c] & low;
        if (pid) {
            lo = pid < lo ? pid : lo;
            hi = pid > hi ? pid : hi;
        }
    }
    if (!rc && hi >= lo && hi - lo >= 4 * (ns + nc) + (1 << 16))
        rc = 1;
    if (!rc && hi >= lo) {
        st.lo = lo;
        st.span = hi - lo + 1;
        st.cur = malloc(sizeof(int64_t) * (size_t)(hi - lo + 1));
        st.pend = malloc(sizeof(int64_t) * (size_t)(hi - lo + 1));
        if (!st.cur || !st.pend)
            rc = -1;
        for (int64_t s = 0; !rc && s <= hi - lo; s++) {
            st.cur[s] = INT64_MIN;
            st.pend[s] = -1;
        }
    }
    if (!rc) {
        for (Py_ssize_t i = 0; i < ns; i++)
            st.out[i] = -1;
        rc = preempted_loop(&st, t, p, x, run.view.buf, u, k, v, r, nc);
    }
    free(st.cur);
    free(st.pend);
    Py_END_ALLOW_THREADS
    arrs_release(spec, n_spec);
    if (rc == -4)
        rc = 1; /* (out written, but not answered: the caller does not read it) */
    if (pass_failed(rc, "preempted_ends: a run's row outside [0, 2**61], or a pid outside "
                        "the range") < 0)
        return NULL;
    return PyBool_FromLong(rc == 0);
}

/* ---- stretch_parts ------------------------------------------------------------ */

/* a task that ran in a stretch: its (pid, comm, prio) and time */
typedef struct {
    int64_t pid, comm, prio, ns;
} TaskRun;

static int task_run_cmp(const void *x, const void *y)
{
    const TaskRun *p = x, *q = y;
    if (p->pid != q->pid)
        return p->pid < q->pid ? -1 : 1;
    if (p->comm != q->comm)
        return p->comm < q->comm ? -1 : 1;
    if (p->prio != q->prio)
        return p->prio < q->prio ? -1 : 1;
    return 0;
}

enum { S_RAN, S_LOST, S_MISSING, S_IDLE, S_IDLE_ROWS, S_COLS };

/*
 * The stretches' intervals (rows [r0[g], r1[g]) of the CPU index's columns, each
 * clipped to [a[g], b[g]): it ends where the next row begins, the last at b[g]) summed
 * per stretch: sums[g * S_COLS + ...] the time the waiting task (waiter[g]) ran
 * (known), the unknown time with lost events and without, the idle time (known, pid 0,
 * not the waiter) and the idle rows; and the other tasks' time by (pid, comm, prio)
 * (known rows of time > 0), ascending within each stretch, as out_*[:m].  -1: no
 * memory.
 */
static int64_t stretch_loop(const int64_t *ts, const int64_t *pid, const int64_t *comm,
                            const int64_t *prio, const uint8_t *known, const uint8_t *lost,
                            const int64_t *r0, const int64_t *r1, const int64_t *a,
                            const int64_t *b, const int64_t *waiter, Py_ssize_t ns,
                            int64_t *sums, int64_t *og, int64_t *opid, int64_t *ocomm,
                            int64_t *oprio, int64_t *ons)
{
    int64_t most = 0, m = 0;
    for (Py_ssize_t g = 0; g < ns; g++)
        most = r1[g] - r0[g] > most ? r1[g] - r0[g] : most;
    /* the distinct tasks of a stretch, found through a hash table of their slots */
    int64_t cap = 16;
    while (cap < 2 * most)
        cap *= 2;
    TaskRun *runs = malloc(sizeof(TaskRun) * (size_t)(most + 1));
    int64_t *slot = malloc(sizeof(int64_t) * (size_t)cap);
    if (!runs || !slot) {
        free(runs);
        free(slot);
        return -1;
    }
    for (Py_ssize_t g = 0; g < ns; g++) {
        int64_t *s = sums + g * S_COLS, k = 0, rows = r1[g] - r0[g], size = 16;
        while (size < 2 * rows)
            size *= 2;
        for (int64_t i = 0; i < size; i++)
            slot[i] = -1;
        for (int c = 0; c < S_COLS; c++)
            s[c] = 0;
        for (int64_t r = r0[g]; r < r1[g]; r++) {
            int64_t st = ts[r] > a[g] ? ts[r] : a[g];
            int64_t en = r == r1[g] - 1 ? b[g] : (ts[r + 1] < b[g] ? ts[r + 1] : b[g]);
            int64_t dur = en - st;
            if (!known[r]) {
                s[lost[r] ? S_LOST : S_MISSING] += dur;
            } else if (pid[r] == waiter[g]) {
                s[S_RAN] += dur;
            } else if (pid[r] == 0) {
                s[S_IDLE] += dur;
                s[S_IDLE_ROWS]++;
            } else if (dur > 0) {
                TaskRun t = {pid[r], comm[r], prio[r], dur};
                uint64_t h = (uint64_t)t.pid * 0x9E3779B97F4A7C15ULL ^
                             (uint64_t)t.comm * 0xC2B2AE3D27D4EB4FULL ^
                             (uint64_t)t.prio * 0x165667B19E3779F9ULL;
                int64_t at = (int64_t)((h ^ (h >> 29)) & (uint64_t)(size - 1));
                while (slot[at] >= 0 && task_run_cmp(&runs[slot[at]], &t))
                    at = (at + 1) & (size - 1);
                if (slot[at] >= 0) {
                    runs[slot[at]].ns += dur;
                } else {
                    slot[at] = k;
                    runs[k++] = t;
                }
            }
        }
        /* (one run a task now: in (pid, comm, prio) order) */
        qsort(runs, (size_t)k, sizeof(TaskRun), task_run_cmp);
        for (int64_t i = 0; i < k; i++) {
            og[m] = g;
            opid[m] = runs[i].pid;
            ocomm[m] = runs[i].comm;
            oprio[m] = runs[i].prio;
            ons[m++] = runs[i].ns;
        }
    }
    free(runs);
    free(slot);
    return m;
}

/* stretch_parts(ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter, sums, out_g,
 * out_pid, out_comm, out_prio, out_ns) -> m */
PyObject *pass_stretch_parts(PyObject *self, PyObject *args)
{
    PyObject *o[17];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14],
                          &o[15], &o[16]))
        return NULL;
    Arr ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter, sums, og, op, oc, opr, ons;
    ArrSpec spec[] = {
        {o[0], &ts, 8, 0, "stretch_parts ts"},        {o[1], &pid, 8, 0, "stretch_parts pid"},
        {o[2], &comm, 8, 0, "stretch_parts comm"},    {o[3], &prio, 8, 0, "stretch_parts prio"},
        {o[4], &known, 1, 0, "stretch_parts known"},  {o[5], &lost, 1, 0, "stretch_parts lost"},
        {o[6], &r0, 8, 0, "stretch_parts r0"},        {o[7], &r1, 8, 0, "stretch_parts r1"},
        {o[8], &a, 8, 0, "stretch_parts a"},          {o[9], &b, 8, 0, "stretch_parts b"},
        {o[10], &waiter, 8, 0, "stretch_parts waiter"}, {o[11], &sums, 8, 1, "stretch_parts sums"},
        {o[12], &og, 8, 1, "stretch_parts out_g"},    {o[13], &op, 8, 1, "stretch_parts out_pid"},
        {o[14], &oc, 8, 1, "stretch_parts out_comm"}, {o[15], &opr, 8, 1, "stretch_parts out_prio"},
        {o[16], &ons, 8, 1, "stretch_parts out_ns"},
    };
    const int n_spec = 17;
    if (arrs_get(spec, n_spec) < 0)
        return NULL;
    Py_ssize_t rows = arr_len(&ts), ns = arr_len(&r0), out = arr_len(&og);
    if (arr_len(&pid) != rows || arr_len(&comm) != rows || arr_len(&prio) != rows ||
        arr_len(&known) != rows || arr_len(&lost) != rows)
        return value_error(spec, n_spec, "stretch_parts: ts, pid, comm, prio, known, lost: "
                                         "one slot a row");
    if (arr_len(&r1) != ns || arr_len(&a) != ns || arr_len(&b) != ns || arr_len(&waiter) != ns ||
        arr_len(&sums) != ns * S_COLS)
        return value_error(spec, n_spec, "stretch_parts: r0, r1, a, b, waiter: one slot a "
                                         "stretch, sums five");
    if (arr_len(&op) != out || arr_len(&oc) != out || arr_len(&opr) != out ||
        arr_len(&ons) != out)
        return value_error(spec, n_spec, "stretch_parts: the outputs: one length");
    const int64_t *p0 = r0.view.buf, *p1 = r1.view.buf;
    int64_t total = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < ns && !bad; g++) {
        if (p0[g] < 0 || p1[g] < p0[g] || p1[g] > rows)
            bad = 1;
        else
            total += p1[g] - p0[g];
    }
    Py_END_ALLOW_THREADS
    if (bad)
        return value_error(spec, n_spec, "stretch_parts: a stretch's rows outside the rows");
    if (total > out)
        return value_error(spec, n_spec, "stretch_parts: the outputs need one slot a row");
    int64_t m;
    Py_BEGIN_ALLOW_THREADS
    m = stretch_loop(ts.view.buf, pid.view.buf, comm.view.buf, prio.view.buf, known.view.buf,
                     lost.view.buf, p0, p1, a.view.buf, b.view.buf, waiter.view.buf, ns,
                     sums.view.buf, og.view.buf, op.view.buf, oc.view.buf, opr.view.buf,
                     ons.view.buf);
    Py_END_ALLOW_THREADS
    arrs_release(spec, n_spec);
    if (m < 0)
        return PyErr_NoMemory();
    return PyLong_FromLongLong(m);
}
