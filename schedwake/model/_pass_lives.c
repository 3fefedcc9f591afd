/*
 * _pass_lives.c: which pids may have more than one life (schedwake/model/lives.py).
 *
 * A pid has a boundary only if, in its events' (ts, birth < event < death) order,
 * a row follows a death or a birth follows an ordinary event.  Per pid that needs
 * only a few extremes: it may have a boundary when it dies twice, when it has an event
 * at or after its first death, or when its last birth comes after its first event.
 * Those pids' rows are the only ones lives.py sorts; a trace whose pids each name
 * one task (most) sorts nothing.  The rows come in parts (each event table's columns
 * as they are: no concatenated copy of millions of rows), a flag a row of each.
 */
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

enum { ACT = 0, DEATH = 1, BIRTH = 2 };   /* lives.py's kinds */

typedef struct {
    int64_t first_death, last_other, last_birth, first_act;
    int32_t deaths;
} PidExtremes;

/* One part of the rows: pid (4- or 8-byte ints), ts, and kind (1-byte codes, or one
 * kind for the part's every row when NULL), out (a flag a row). */
typedef struct {
    const void *pid;
    Py_ssize_t pid_size;
    const int64_t *ts;
    const int8_t *kind;
    int8_t one_kind;
    Py_ssize_t n;
    uint8_t *out;
} LifeRows;

/* Which rows of the parts may have two lives: each pid's extremes over every part,
 * then each row's flag.  Pids in [lo, lo + span); kinds 0..2; -2 on a pid or kind out
 * of range, -1 on no memory. */
static int life_candidates_of(const LifeRows *parts, int nparts, int64_t lo, int64_t span)
{
    int32_t *slot = malloc((size_t)span * sizeof(int32_t));
    PidExtremes *ex = NULL;
    size_t used = 0, cap = 0;
    int rc = 0;
    if (!slot)
        return -1;
    memset(slot, 0xff, (size_t)span * sizeof(int32_t));   /* -1: not seen */
    for (int p = 0; p < nparts; p++) {
        const LifeRows *r = &parts[p];
        for (Py_ssize_t i = 0; i < r->n; i++) {
            uint64_t k = (uint64_t)key_at(r->pid, r->pid_size, i) - (uint64_t)lo;
            int8_t kind = r->kind ? r->kind[i] : r->one_kind;
            if (k >= (uint64_t)span || kind < ACT || kind > BIRTH) {
                rc = -2;
                goto done;
            }
            int32_t s = slot[k];
            if (s < 0) {
                if (used == cap) {
                    size_t ncap = cap ? 2 * cap : 1024;
                    PidExtremes *q = realloc(ex, ncap * sizeof(*ex));
                    if (!q) {
                        rc = -1;
                        goto done;
                    }
                    ex = q;
                    cap = ncap;
                }
                s = slot[k] = (int32_t)used++;
                ex[s] = (PidExtremes){INT64_MAX, INT64_MIN, INT64_MIN, INT64_MAX, 0};
            }
            PidExtremes *e = &ex[s];
            int64_t t = r->ts[i];
            if (kind == DEATH) {
                e->deaths += e->deaths < 2;
                if (t < e->first_death)
                    e->first_death = t;
                continue;
            }
            if (t > e->last_other)
                e->last_other = t;
            if (kind == BIRTH) {
                if (t > e->last_birth)
                    e->last_birth = t;
            } else if (t < e->first_act) {
                e->first_act = t;
            }
        }
    }
    for (int p = 0; p < nparts; p++) {
        const LifeRows *r = &parts[p];
        for (Py_ssize_t i = 0; i < r->n; i++) {
            int64_t pid = key_at(r->pid, r->pid_size, i);
            const PidExtremes *e = &ex[slot[(uint64_t)pid - (uint64_t)lo]];
            /* (an event at the death's time comes before it: counted, to be safe; pid
             * 0, the idle task, is never one task's) */
            r->out[i] = pid != 0 && (e->deaths > 1 ||
                                     (e->deaths == 1 && e->last_other >= e->first_death) ||
                                     e->last_birth > e->first_act);
        }
    }
done:
    free(slot);
    free(ex);
    return rc;
}

#define LIFE_MAX_PARTS 16

PyObject *pass_life_candidates(PyObject *self, PyObject *args)
{
    PyObject *parts_o, *outs_o;
    long long lo, span;
    if (!PyArg_ParseTuple(args, "O!LLO!", &PyTuple_Type, &parts_o, &lo, &span, &PyTuple_Type,
                          &outs_o))
        return NULL;
    if (!range_ok("life_candidates", lo, span))
        return NULL;
    Py_ssize_t np_ = PyTuple_GET_SIZE(parts_o);
    if (np_ > LIFE_MAX_PARTS || PyTuple_GET_SIZE(outs_o) != np_) {
        PyErr_SetString(PyExc_ValueError, "life_candidates: at most 16 parts, an out each");
        return NULL;
    }
    Arr arrs[LIFE_MAX_PARTS * 4];
    ArrSpec spec[LIFE_MAX_PARTS * 4];
    LifeRows parts[LIFE_MAX_PARTS];
    int kinds[LIFE_MAX_PARTS];   /* a part's one kind, -1: an array of them */
    int na = 0;
    for (Py_ssize_t p = 0; p < np_; p++) {
        PyObject *part = PyTuple_GET_ITEM(parts_o, p);
        if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 3) {
            PyErr_SetString(PyExc_TypeError, "life_candidates: a part is (pid, ts, kind)");
            return NULL;
        }
        PyObject *pid_o = PyTuple_GET_ITEM(part, 0), *kind_o = PyTuple_GET_ITEM(part, 2);
        Py_ssize_t size = buf_itemsize(pid_o);
        if (size < 0)
            return NULL;
        spec[na] = (ArrSpec){pid_o, &arrs[na], size == 4 ? 4 : 8, 0, "life_candidates pid"};
        spec[na + 1] = (ArrSpec){PyTuple_GET_ITEM(part, 1), &arrs[na + 1], 8, 0,
                                 "life_candidates ts"};
        spec[na + 2] = (ArrSpec){PyTuple_GET_ITEM(outs_o, p), &arrs[na + 2], 1, 1,
                                 "life_candidates out"};
        na += 3;
        kinds[p] = -1;
        if (PyLong_Check(kind_o)) {
            long k = PyLong_AsLong(kind_o);
            if (k == -1 && PyErr_Occurred())
                return NULL;
            kinds[p] = k < 0 || k > 127 ? 127 : (int)k;   /* (out of range: refused below) */
        } else {
            spec[na] = (ArrSpec){kind_o, &arrs[na], 1, 0, "life_candidates kind"};
            na++;
        }
    }
    if (arrs_get(spec, na) < 0)
        return NULL;
    for (Py_ssize_t p = 0, a = 0; p < np_; p++) {
        Arr *pid = &arrs[a], *ts = &arrs[a + 1], *out = &arrs[a + 2];
        Arr *kind = kinds[p] < 0 ? &arrs[a + 3] : NULL;
        a += kind ? 4 : 3;
        Py_ssize_t n = arr_len(pid);
        if (arr_len(ts) != n || arr_len(out) != n || (kind && arr_len(kind) != n))
            return value_error(spec, na, "life_candidates: arrays of different lengths");
        parts[p] = (LifeRows){pid->view.buf, pid->view.itemsize, ts->view.buf,
                              kind ? kind->view.buf : NULL, (int8_t)(kind ? 0 : kinds[p]), n,
                              out->view.buf};
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = life_candidates_of(parts, (int)np_, lo, span);
    Py_END_ALLOW_THREADS
    arrs_release(spec, na);
    if (pass_failed(rc, "life_candidates: a pid outside [lo, lo + span) or a kind outside "
                        "0..2") < 0)
        return NULL;
    Py_RETURN_NONE;
}
