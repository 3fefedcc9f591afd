/*
 * _pass_lives.c: which pids may have more than one life (schedwake/model/lives.py).
 *
 * A pid has a boundary only if, in its events' (ts, birth < event < death) order,
 * a row follows a death or a birth follows an ordinary event.  Per pid that needs
 * only a few extremes: it may have a boundary when it dies twice, when it has an event
 * at or after its first death, or when its last birth comes after its first event.
 * Those pids' rows are the only ones lives.py sorts; a trace whose pids each name
 * one task (most) sorts nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

enum { ACT = 0, DEATH = 1, BIRTH = 2 };   /* lives.py's kinds */

typedef struct {
    int64_t first_death, last_other, last_birth, first_act;
    int32_t deaths;
} PidExtremes;

/* rows' pids in [lo, lo + span); kinds 0..2; returns -2 on a pid or kind out of range */
static int life_candidates(const int64_t *pid, const int64_t *ts, const int8_t *kind,
                           Py_ssize_t n, int64_t lo, int64_t span, uint8_t *out)
{
    int32_t *slot = malloc((size_t)span * sizeof(int32_t));
    PidExtremes *ex = NULL;
    size_t used = 0, cap = 0;
    int rc = 0;
    if (!slot)
        return -1;
    memset(slot, 0xff, (size_t)span * sizeof(int32_t));   /* -1: not seen */
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t k = (uint64_t)pid[i] - (uint64_t)lo;
        if (k >= (uint64_t)span || kind[i] < ACT || kind[i] > BIRTH) {
            rc = -2;
            goto done;
        }
        int32_t s = slot[k];
        if (s < 0) {
            if (used == cap) {
                size_t ncap = cap ? 2 * cap : 1024;
                PidExtremes *p = realloc(ex, ncap * sizeof(*ex));
                if (!p) {
                    rc = -1;
                    goto done;
                }
                ex = p;
                cap = ncap;
            }
            s = slot[k] = (int32_t)used++;
            ex[s] = (PidExtremes){INT64_MAX, INT64_MIN, INT64_MIN, INT64_MAX, 0};
        }
        PidExtremes *e = &ex[s];
        int64_t t = ts[i];
        if (kind[i] == DEATH) {
            e->deaths += e->deaths < 2;
            if (t < e->first_death)
                e->first_death = t;
            continue;
        }
        if (t > e->last_other)
            e->last_other = t;
        if (kind[i] == BIRTH) {
            if (t > e->last_birth)
                e->last_birth = t;
        } else if (t < e->first_act) {
            e->first_act = t;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const PidExtremes *e = &ex[slot[(uint64_t)pid[i] - (uint64_t)lo]];
        /* (an event at the death's time comes before it: counted, to be safe; pid 0,
         * the idle task, is never one task's) */
        out[i] = pid[i] != 0 &&
                 (e->deaths > 1 || (e->deaths == 1 && e->last_other >= e->first_death) ||
                  e->last_birth > e->first_act);
    }
done:
    free(slot);
    free(ex);
    return rc;
}

PyObject *pass_life_candidates(PyObject *self, PyObject *args)
{
    PyObject *pid_obj, *ts_obj, *kind_obj, *out_obj;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "OOOLLO", &pid_obj, &ts_obj, &kind_obj, &lo, &span, &out_obj))
        return NULL;
    if (!range_ok("life_candidates", lo, span))
        return NULL;
    Arr pid = {0}, ts = {0}, kind = {0}, out = {0};
    PyObject *result = NULL;
    if (arr_get(pid_obj, &pid, 8, 0, "life_candidates pid") < 0 ||
        arr_get(ts_obj, &ts, 8, 0, "life_candidates ts") < 0 ||
        arr_get(kind_obj, &kind, 1, 0, "life_candidates kind") < 0 ||
        arr_get(out_obj, &out, 1, 1, "life_candidates out") < 0)
        goto done;
    Py_ssize_t n = arr_len(&pid);
    if (arr_len(&ts) != n || arr_len(&kind) != n || arr_len(&out) != n) {
        PyErr_SetString(PyExc_ValueError, "life_candidates: arrays of different lengths");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = life_candidates(pid.view.buf, ts.view.buf, kind.view.buf, n, lo, span, out.view.buf);
    Py_END_ALLOW_THREADS
    if (pass_failed(rc, "life_candidates: a pid outside [lo, lo + span) or a kind outside "
                        "0..2") == 0)
        result = Py_NewRef(Py_None);
done:
    arr_release(&pid);
    arr_release(&ts);
    arr_release(&kind);
    arr_release(&out);
    return result;
}
