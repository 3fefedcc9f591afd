/*
 * _pass_completeness.c: the proofs of schedwake/model/completeness.py.
 *
 * event_segments: each event (a proof of the task current on its CPU) placed in the
 * segment of its CPU's switches it falls in, and told whether it is that segment's
 * task's.  One pass over the events instead of NumPy's gathers of each switch column
 * through the segment of every event (1.6 M wake-ups on big.dat, seven tables).
 */
#include "_passes.h"

enum { SEG_NONE = 0, SEG_OWN = 1, SEG_OTHER = 2, SEG_TIE = 3 };

/* seg[i] = rank[pos[i]] (-1 when pos[i] < 0); status[i] as the enum says: SEG_TIE an
 * event of another task stamped with the very time of its segment's switch.  -2 when
 * a position or a rank is outside the m switches. */
static int event_segments(const int64_t *pos, Py_ssize_t n, const int64_t *rank,
                          Py_ssize_t m, const int64_t *ets, const void *epid,
                          Py_ssize_t psize, const int64_t *sw_ts, const void *sw_next,
                          Py_ssize_t nsize, int64_t *seg, int8_t *status)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t p = pos[i];
        if (p < 0) {
            seg[i] = -1;
            status[i] = SEG_NONE;
            continue;
        }
        if (p >= m)
            return -2;
        int64_t k = rank[p];
        if ((uint64_t)k >= (uint64_t)m)
            return -2;
        seg[i] = k;
        if (key_at(epid, psize, i) == key_at(sw_next, nsize, k))
            status[i] = SEG_OWN;
        else
            status[i] = ets[i] == sw_ts[k] ? SEG_TIE : SEG_OTHER;
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
