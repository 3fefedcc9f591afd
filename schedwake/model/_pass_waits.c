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
