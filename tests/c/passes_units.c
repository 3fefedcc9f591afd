/*
 * passes_units.c: unit tests of the model's compiled passes (schedwake/model/_pass_*.c)
 * on hand-made and random arrays, against plain loops: the counting sort's order, the
 * pids that may have two lives, the keyed as-of search in both directions, exact or
 * strict, from any hint, with times at the ends of int64, the lookup in a table (of flags
 * or of slots), the
 * groups of a hash table, completeness's runs by (pid, start) and its timeline's rows
 * within outputs of any size, idle while runnable's sweep, the intervals that overlap a
 * union of pieces and a row's neighbors of the same key.
 *
 * The passes' loops are static: this file includes their C files, so it needs Python's
 * headers and libpython to link, though no test calls into Python.  Built and run by
 * tests/test_c_units.py with ASan and UBSan where the compiler has them.
 */
#include "_pass_order.c"
#include "_pass_lives.c"
#include "_pass_asof.c"
#include "_pass_groups.c"
#include "_pass_detect.c"
#include "_pass_completeness.c"

#include <stdio.h>

#include "check.h"

/* a small deterministic generator (xorshift64*) */
static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static int64_t rnd_in(int64_t lo, int64_t hi)   /* in [lo, hi], hi - lo < 2**62 */
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ------------------------------------------------------------ counting_order */

static void test_counting_order(void)
{
    enum { N = 3000 };
    int64_t key[N], out[N];
    int32_t key32[N];
    for (int trial = 0; trial < 40; trial++) {
        int64_t lo = trial % 2 ? -((int64_t)1 << 62) : rnd_in(-50, 50);
        int64_t span = rnd_in(1, 300);
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        for (Py_ssize_t i = 0; i < n; i++)
            key[i] = lo + rnd_in(0, span - 1);
        CHECK(counting_order_int64_t(key, n, lo, span, out) == 0);
        int ok = 1;
        char *seen = calloc((size_t)n + 1, 1);
        for (Py_ssize_t i = 0; i < n; i++) {
            ok &= out[i] >= 0 && out[i] < n && !seen[out[i]];
            if (out[i] >= 0 && out[i] < n)
                seen[out[i]] = 1;
            if (i && ok)   /* keys ascending, ties in their rows' order */
                ok &= key[out[i - 1]] < key[out[i]] ||
                      (key[out[i - 1]] == key[out[i]] && out[i - 1] < out[i]);
        }
        free(seen);
        CHECK(ok);
    }
    /* keys outside the range, at the ends of int64 too: refused, no overflow */
    int64_t edge[] = {INT64_MIN, INT64_MAX, 0};
    CHECK(counting_order_int64_t(edge, 3, 0, 1, out) == -2);
    CHECK(counting_order_int64_t(edge + 1, 2, -((int64_t)1 << 62), 1000, out) == -2);
    for (int i = 0; i < 5; i++)
        key32[i] = INT32_MAX - i;
    CHECK(counting_order_int32_t(key32, 5, INT32_MAX - 4, 5, out) == 0);
    CHECK(out[0] == 4 && out[4] == 0);
    CHECK(counting_order_int32_t(key32, 5, INT32_MAX - 3, 4, out) == -2);
}

/* ------------------------------------------------------------ life_candidates */

/* life_candidates_of over one part of int64 pids and a kind a row */
static int life_candidates(const int64_t *pid, const int64_t *ts, const int8_t *kind,
                           Py_ssize_t n, int64_t lo, int64_t span, uint8_t *out)
{
    LifeRows part = {pid, 8, ts, kind, 0, n, out};
    return life_candidates_of(&part, 1, lo, span);
}

/* Whether pid p has a boundary: its rows in (ts, birth < other < death) order, a row
 * after a death or a birth after another event (lives.py's rule), by brute force. */
static int has_boundary(const int64_t *pid, const int64_t *ts, const int8_t *kind,
                        Py_ssize_t n, int64_t p)
{
    static const int prio[3] = {1, 2, 0};   /* ACT, DEATH, BIRTH */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pid[i] != p)
            continue;
        /* the row just before row i in the pid's order (none: -1) */
        Py_ssize_t before = -1;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (pid[j] != p || j == i)
                continue;
            int earlier = ts[j] < ts[i] || (ts[j] == ts[i] && (prio[kind[j]] < prio[kind[i]] ||
                                            (prio[kind[j]] == prio[kind[i]] && j < i)));
            if (!earlier)
                continue;
            if (before < 0 || ts[j] > ts[before] ||
                (ts[j] == ts[before] && (prio[kind[j]] > prio[kind[before]] ||
                                         (prio[kind[j]] == prio[kind[before]] && j > before))))
                before = j;
        }
        if (before >= 0 && (kind[before] == DEATH || (kind[i] == BIRTH && kind[before] == ACT)))
            return 1;
    }
    return 0;
}

static void test_life_candidates(void)
{
    enum { N = 40 };
    int64_t pid[N], ts[N];
    int8_t kind[N];
    uint8_t out[N];
    int missed = 0, flagged = 0;
    for (int trial = 0; trial < 2000; trial++) {
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        for (Py_ssize_t i = 0; i < n; i++) {
            pid[i] = rnd_in(0, 5);
            ts[i] = trial % 7 ? rnd_in(0, 12) : (rnd() & 1 ? INT64_MAX : INT64_MIN);
            kind[i] = (int8_t)(rnd_in(0, 4) < 3 ? ACT : rnd_in(1, 2));
        }
        CHECK(life_candidates(pid, ts, kind, n, 0, 6, out) == 0);
        for (Py_ssize_t i = 0; i < n; i++) {
            int truth = pid[i] != 0 && has_boundary(pid, ts, kind, n, pid[i]);
            missed += truth && !out[i];   /* a pid with a boundary is always flagged */
            flagged += out[i];
        }
    }
    CHECK(missed == 0);
    CHECK(flagged > 0);
    int64_t p2[] = {3, 9}, t2[] = {0, 0};
    int8_t k2[] = {ACT, 3};
    CHECK(life_candidates(p2, t2, k2, 1, 3, 1, out) == 0);
    CHECK(life_candidates(p2, t2, k2, 2, 3, 7, out) == -2);   /* a kind outside 0..2 */
    CHECK(life_candidates(p2, t2, k2, 2, 3, 6, out) == -2);   /* a pid outside the range */
    int64_t p3[] = {INT64_MIN, INT64_MAX};
    CHECK(life_candidates(p3, t2, k2, 2, 0, 10, out) == -2);
    /* the rows in parts (the ordinary events as int32 pids of one kind, the others as
     * they are): each row flagged as in one part */
    for (int trial = 0; trial < 300; trial++) {
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N), na = 0, nb = 0;
        int32_t pa[N];
        int64_t ta[N], pb[N], tb[N];
        int8_t kb[N];
        uint8_t oa[N], ob[N];
        for (Py_ssize_t i = 0; i < n; i++) {
            pid[i] = rnd_in(0, 5);
            ts[i] = rnd_in(0, 12);
            kind[i] = (int8_t)(rnd_in(0, 4) < 3 ? ACT : rnd_in(1, 2));
            if (kind[i] == ACT) {
                pa[na] = (int32_t)pid[i];
                ta[na++] = ts[i];
            } else {
                pb[nb] = pid[i];
                tb[nb] = ts[i];
                kb[nb++] = kind[i];
            }
        }
        CHECK(life_candidates(pid, ts, kind, n, 0, 6, out) == 0);
        LifeRows parts[2] = {{pa, 4, ta, NULL, ACT, na, oa}, {pb, 8, tb, kb, 0, nb, ob}};
        CHECK(life_candidates_of(parts, 2, 0, 6) == 0);
        int ok = 1;
        for (Py_ssize_t i = 0, a = 0, b = 0; i < n; i++)
            ok &= out[i] == (kind[i] == ACT ? oa[a++] : ob[b++]);
        CHECK(ok);
    }
    LifeRows bad = {p2, 8, t2, NULL, 3, 1, out};   /* one kind outside 0..2 */
    CHECK(life_candidates_of(&bad, 1, 3, 1) == -2);
}

/* ------------------------------------------------------------ asof_slots */

static void test_asof_slots(void)
{
    enum { M = 400, N = 300, KEYS = 4 };
    int64_t rts[M], order[M], starts[KEYS], ends[KEYS], lts[N], slot[N], out[N];
    Py_ssize_t hint[KEYS];
    for (int trial = 0; trial < 300; trial++) {
        /* each key's rows: a range of order, times ascending (ties too) */
        Py_ssize_t m = 0;
        for (int s = 0; s < KEYS; s++) {
            starts[s] = m;
            Py_ssize_t len = (Py_ssize_t)rnd_in(0, M / KEYS);
            int64_t t = trial % 5 == 0 ? INT64_MIN : rnd_in(-20, 20);
            for (Py_ssize_t j = 0; j < len; j++) {
                rts[m] = t;
                t += trial % 5 == 0 && j + 2 == len ? INT64_MAX : rnd_in(0, 3);
                m++;
            }
            ends[s] = m;
        }
        /* order: the rows shuffled, rts gathered back (any permutation will do) */
        int64_t by_line[M];
        for (Py_ssize_t j = 0; j < m; j++)
            order[j] = j;
        for (Py_ssize_t j = m - 1; j > 0; j--) {
            Py_ssize_t r = (Py_ssize_t)rnd_in(0, j), t = order[j];
            order[j] = order[r];
            order[r] = t;
        }
        for (Py_ssize_t j = 0; j < m; j++)
            by_line[j] = rts[j];
        for (Py_ssize_t j = 0; j < m; j++)
            rts[order[j]] = by_line[j];
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        for (Py_ssize_t i = 0; i < n; i++) {
            slot[i] = rnd_in(-1, KEYS - 1);
            lts[i] = rnd() % 9 == 0 ? (rnd() & 1 ? INT64_MAX : INT64_MIN) : rnd_in(-25, 60);
        }
        if (trial % 2) {   /* left rows in time order: the gallop's usual case */
            for (Py_ssize_t i = 1; i < n; i++)
                for (Py_ssize_t j = i; j > 0 && lts[j - 1] > lts[j]; j--) {
                    int64_t t = lts[j];
                    lts[j] = lts[j - 1];
                    lts[j - 1] = t;
                }
        }
        for (int dir = 0; dir < 4; dir++) {
            int backward = dir & 1, exact = dir >> 1;
            for (int s = 0; s < KEYS; s++)
                hint[s] = (Py_ssize_t)(rnd() % 3 ? starts[s] : ends[s]);
            Line l = {rts, order};
            asof_slots(lts, slot, n, &l, starts, ends, hint, backward, exact, out);
            int ok = 1;
            for (Py_ssize_t i = 0; i < n; i++) {
                int64_t want = -1;
                if (slot[i] >= 0) {
                    for (int64_t j = starts[slot[i]]; j < ends[slot[i]]; j++) {
                        int64_t t = by_line[j];
                        int hit = backward ? (exact ? t <= lts[i] : t < lts[i])
                                           : (exact ? t >= lts[i] : t > lts[i]);
                        if (hit && (backward || want < 0))
                            want = order[j];
                    }
                }
                ok &= out[i] == want;
            }
            CHECK(ok);
        }
    }
}

/* ------------------------------------------------------------ asof_merge */

static void test_asof_merge(void)
{
    enum { N = 200, M = 200 };
    int64_t lts[N], rts[M], lkey[N], rkey[M], out[N];
    int32_t lkey32[N];
    for (int trial = 0; trial < 400; trial++) {
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N), m = (Py_ssize_t)rnd_in(0, M);
        int64_t t = trial % 9 == 0 ? INT64_MIN : rnd_in(-5, 5);
        for (Py_ssize_t i = 0; i < n; i++) {
            t += rnd_in(0, 2);
            lts[i] = t;
            lkey[i] = rnd_in(-3, 3);
            lkey32[i] = (int32_t)lkey[i];
        }
        t = trial % 9 == 0 ? INT64_MIN : rnd_in(-5, 5);
        for (Py_ssize_t j = 0; j < m; j++) {
            t += rnd_in(0, 2);
            rts[j] = t;
            rkey[j] = rnd_in(-3, 3);
        }
        for (int dir = 0; dir < 4; dir++) {
            int backward = dir & 1, exact = dir >> 1;
            int rc = asof_merge(lts, trial % 2 ? (void *)lkey32 : (void *)lkey,
                                trial % 2 ? 4 : 8, n, rts, rkey, 8, m, -3, 7, backward, exact,
                                out);
            CHECK(rc == 0);
            int ok = 1;
            for (Py_ssize_t i = 0; i < n; i++) {
                int64_t want = -1;
                for (Py_ssize_t j = 0; j < m; j++) {
                    if (rkey[j] != lkey[i])
                        continue;
                    int hit = backward ? (exact ? rts[j] <= lts[i] : rts[j] < lts[i])
                                       : (exact ? rts[j] >= lts[i] : rts[j] > lts[i]);
                    if (hit && (backward || want < 0))
                        want = j;
                }
                ok &= out[i] == want;
            }
            CHECK(ok);
        }
    }
    /* out of time order: nothing done; a key out of range: refused */
    int64_t ts2[] = {5, 3}, k2[] = {0, 0}, o2[2] = {7, 7};
    CHECK(asof_merge(ts2, k2, 8, 2, ts2, k2, 8, 2, 0, 1, 1, 1, o2) == 1 && o2[0] == 7);
    int64_t far[] = {INT64_MIN, INT64_MAX}, ts3[] = {3, 5};
    CHECK(asof_merge(ts3, far, 8, 2, ts3, k2, 8, 2, 0, 1, 1, 1, o2) == -2);
    CHECK(asof_merge(ts3, k2, 8, 2, ts3, far, 8, 2, 0, 1, 0, 1, o2) == -2);
    /* out of time order: not answered, whatever the keys (they are not read) */
    CHECK(asof_merge(ts2, far, 8, 2, ts3, k2, 8, 2, 0, 1, 1, 1, o2) == 1 && o2[0] == 7);
}

/* ------------------------------------------------------------ groups */

static void test_groups(void)
{
    enum { N = 500, V = 5 };
    uint8_t table[V], out[N];
    int32_t val32[N];
    for (int trial = 0; trial < 200; trial++) {
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        for (int v = 0; v < V; v++)
            table[v] = (uint8_t)(rnd() & 1);
        for (Py_ssize_t i = 0; i < n; i++)
            val32[i] = (int32_t)(trial % 4 ? rnd_in(-3, V + 3) : (rnd() & 1 ? INT32_MIN : INT32_MAX));
        in_table_int32_t(val32, n, table, V, 0, out);
        int ok = 1;
        for (Py_ssize_t i = 0; i < n; i++)
            ok &= out[i] == (val32[i] >= 0 && val32[i] < V && table[val32[i]]);
        CHECK(ok);
    }
    /* group_sums: keys spread over a wide range, the table grown several times */
    for (int trial = 0; trial < 20; trial++) {
        enum { G = 5000 };
        static int64_t gk[G], gw[G];
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, G);
        int64_t spread = trial % 2 ? 3000 : INT64_MAX / 2;
        for (Py_ssize_t i = 0; i < n; i++) {
            gk[i] = rnd_in(0, 2999) * (spread / 3000);
            gw[i] = rnd_in(-5, 5);
        }
        Group *g = NULL;
        size_t groups = 0;
        CHECK(group_sums(gk, gw, n, (size_t)n + 1, &g, &groups) == 0);
        int ok = 1;
        int64_t total_n = 0;
        for (size_t j = 0; j < groups; j++) {
            int64_t cnt = 0, sum = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                if (gk[i] == g[j].key) {
                    cnt++;
                    sum += gw[i];
                }
            ok &= cnt == g[j].n && sum == g[j].sum && cnt > 0;
            ok &= j == 0 || g[j - 1].key < g[j].key;
            total_n += g[j].n;
        }
        CHECK(ok && total_n == n);
        free(g);
        if (groups > 1)   /* more keys than allowed: given up, nothing returned */
            CHECK(group_sums(gk, NULL, n, groups - 1, &g, &groups) == -3);
    }
    int64_t neg[] = {4, -1};
    Group *g = NULL;
    size_t groups = 0;
    CHECK(group_sums(neg, NULL, 2, 10, &g, &groups) == -2);
    int64_t edge[] = {INT64_MIN, INT64_MAX};
    in_table_int64_t(edge, 2, table, V, -((int64_t)1 << 62), out);
    CHECK(out[0] == 0 && out[1] == 0);
    /* a table of slots: the slot inside, -1 outside (the ends of both key types) */
    int64_t slots[V], sout[N];
    for (int trial = 0; trial < 200; trial++) {
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        int64_t lo = rnd_in(-4, 4);
        for (int v = 0; v < V; v++)
            slots[v] = rnd_in(-1, 9);
        for (Py_ssize_t i = 0; i < n; i++)
            val32[i] = (int32_t)(trial % 4 ? rnd_in(-8, V + 8) : (rnd() & 1 ? INT32_MIN : INT32_MAX));
        slot_in_table_int32_t(val32, n, slots, V, lo, sout);
        int ok = 1;
        for (Py_ssize_t i = 0; i < n; i++)
            ok &= sout[i] == (val32[i] >= lo && val32[i] < lo + V ? slots[val32[i] - lo] : -1);
        CHECK(ok);
    }
    slot_in_table_int64_t(edge, 2, slots, V, -((int64_t)1 << 62), sout);
    CHECK(sout[0] == -1 && sout[1] == -1);
}

/* ------------------------------------------------------------ gap_sweep */

/* The gap after end i of (ts, code) in time order, by recounting every CPU's open
 * intervals over ends 0..i: some CPU idle and another busy with a wait (not idle, not
 * unknown). */
static int gap_after(const int64_t *code, Py_ssize_t i, int64_t ncpu)
{
    int idle = 0, busy = 0;
    for (int64_t c = 0; c < ncpu; c++) {
        int open[3] = {0, 0, 0};
        for (Py_ssize_t j = 0; j <= i; j++)
            if (code[j] >> 3 == c)
                open[(code[j] & 7) >> 1] += (code[j] & 1) ? -1 : 1;
        idle += open[0] > 0;
        busy += open[1] > 0 && open[0] <= 0 && open[2] <= 0;
    }
    return idle && busy;
}

static void test_gap_sweep(void)
{
    enum { N = 120 };
    int64_t ts[N], code[N], s[N], e[N], rs[N], re[N];
    for (int trial = 0; trial < 300; trial++) {
        int64_t ncpu = rnd_in(1, 4);
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        int64_t t = trial % 7 ? rnd_in(-100, 100) : INT64_MAX - 4 * N;
        for (Py_ssize_t i = 0; i < n; i++) {
            t += rnd_in(0, 3);
            ts[i] = t;
            code[i] = rnd_in(0, ncpu - 1) << 3 | rnd_in(0, 5);
        }
        Py_ssize_t m = gap_sweep(ts, code, 8, n, ncpu, s, e);
        /* the pieces from end i to the next end, later, where the gap is; touching
         * pieces joined */
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i + 1 < n; i++) {
            if (ts[i + 1] == ts[i] || !gap_after(code, i, ncpu))
                continue;
            if (k && re[k - 1] == ts[i]) {
                re[k - 1] = ts[i + 1];
            } else {
                rs[k] = ts[i];
                re[k++] = ts[i + 1];
            }
        }
        int ok = m == k;
        for (Py_ssize_t i = 0; ok && i < k; i++)
            ok &= s[i] == rs[i] && e[i] == re[i];
        CHECK(ok);
    }
    /* a CPU or a kind out of range, a negative code: refused */
    int64_t bad_ts[] = {0, 1};
    int64_t bad_cpu[] = {0, 2 << 3};
    int64_t bad_kind[] = {6, 0};
    int64_t neg[] = {-1, 0};
    CHECK(gap_sweep(bad_ts, bad_cpu, 8, 2, 2, s, e) == -2);
    CHECK(gap_sweep(bad_ts, bad_kind, 8, 2, 2, s, e) == -2);
    CHECK(gap_sweep(bad_ts, neg, 8, 2, 2, s, e) == -2);
    CHECK(gap_sweep(bad_ts, bad_cpu, 8, 0, 2, s, e) == 0);
}

/* ------------------------------------------------------------ overlapping */

static void test_overlapping(void)
{
    enum { N = 200, K = 12 };
    int64_t start[N], end[N], us[K], ue[K];
    uint8_t out[N];
    for (int trial = 0; trial < 200; trial++) {
        Py_ssize_t k = (Py_ssize_t)rnd_in(0, K), n = (Py_ssize_t)rnd_in(0, N);
        int64_t t = trial % 5 ? rnd_in(-50, 50) : INT64_MIN + 16;
        for (Py_ssize_t j = 0; j < k; j++) {   /* disjoint pieces in time order */
            us[j] = t += rnd_in(0, 5);
            ue[j] = t += rnd_in(1, 5);
        }
        int64_t base = k ? us[0] - 5 : 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            /* mostly in time order (the hint), some backward intervals */
            start[i] = (i % 9 ? base + i / 3 : base + rnd_in(0, 80));
            end[i] = start[i] + rnd_in(-6, 10);
        }
        overlapping(start, end, n, us, ue, k, out);
        int ok = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t lo = start[i] < end[i] ? start[i] : end[i];
            int64_t hi = start[i] < end[i] ? end[i] : start[i];
            int want = 0;
            for (Py_ssize_t j = 0; j < k; j++)
                want |= us[j] < hi && ue[j] > lo;
            ok &= out[i] == want;
        }
        CHECK(ok);
    }
}

/* ------------------------------------------------------------ key_neighbors */

static void test_key_neighbors(void)
{
    enum { N = 300 };
    int64_t key[N], rows[N], prev[N], next[N];
    int32_t key32[N];
    for (int trial = 0; trial < 100; trial++) {
        int64_t lo = trial % 3 ? rnd_in(-5, 5) : INT64_MAX - 8, span = rnd_in(1, 8);
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N), m = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            key[i] = lo + rnd_in(0, span - 1);
            key32[i] = (int32_t)rnd_in(0, span - 1);
            if (rnd() % 3 == 0)
                rows[m++] = i;
        }
        CHECK(key_neighbors(key, 8, n, rows, m, lo, span, prev, next) == 0);
        int ok = 1;
        for (Py_ssize_t j = 0; j < m; j++) {   /* the nearest rows of the key, by a scan */
            int64_t p = -1, q = -1;
            for (int64_t i = rows[j] - 1; i >= 0 && p < 0; i--)
                if (key[i] == key[rows[j]])
                    p = i;
            for (int64_t i = rows[j] + 1; i < n && q < 0; i++)
                if (key[i] == key[rows[j]])
                    q = i;
            ok &= prev[j] == p && next[j] == q;
        }
        CHECK(ok);
        CHECK(key_neighbors(key32, 4, n, rows, m, 0, span, prev, next) == 0);
    }
    /* a key outside the range, rows out of order or outside the keys: refused */
    int64_t k[] = {0, 1, 2}, r_bad[] = {2, 1}, r_out[] = {3}, r_neg[] = {-1};
    CHECK(key_neighbors(k, 8, 3, r_bad, 0, 0, 2, prev, next) == -2);
    CHECK(key_neighbors(k, 8, 3, r_bad, 2, 0, 3, prev, next) == -2);
    CHECK(key_neighbors(k, 8, 3, r_out, 1, 0, 3, prev, next) == -2);
    CHECK(key_neighbors(k, 8, 3, r_neg, 1, 0, 3, prev, next) == -2);
}

/* ---------------------------------------------------------- key_last_rows */

static void test_key_last_rows(void)
{
    enum { N = 200, SPAN = 9 };
    int64_t key[N], last[SPAN];
    for (int trial = 0; trial < 100; trial++) {
        int64_t lo = trial % 4 ? rnd_in(-3, 3) : INT64_MIN + 1, span = rnd_in(1, SPAN);
        Py_ssize_t n = (Py_ssize_t)rnd_in(0, N);
        for (Py_ssize_t i = 0; i < n; i++)
            key[i] = lo + rnd_in(0, span - 1);
        CHECK(key_last_rows(key, 8, n, lo, span, last) == 0);
        int ok = 1;
        for (int64_t k = 0; k < span; k++) { /* the last row with that key, or -1 */
            int64_t want = -1;
            for (Py_ssize_t i = 0; i < n; i++)
                if (key[i] == lo + k)
                    want = i;
            ok &= last[k] == want;
        }
        CHECK(ok);
    }
    int64_t bad[] = {0, 5};
    CHECK(key_last_rows(bad, 8, 2, 0, 5, last) == -2);
    CHECK(key_last_rows(bad, 8, 2, 1, 5, last) == -2);
}

/* ------------------------------------------------------- runs_order, timeline_rows */

/* runs_order against an insertion sort by (pid, start, source order) */
static void test_runs_order(void)
{
    enum { M = 400, G = 60 };
    int64_t sw_ts[M], seg[M], g_start[G], out[M + G], want[M + G];
    int32_t sw_pid[M];
    int64_t g_pid[G];
    for (int trial = 0; trial < 60; trial++) {
        Py_ssize_t m = (Py_ssize_t)rnd_in(0, M), ng = (Py_ssize_t)rnd_in(0, G), ns = 0;
        int64_t tasks = rnd_in(1, 12), t = 0;
        for (Py_ssize_t k = 0; k < m; k++) {
            if (rnd() % 7 == 0)
                t = 0; /* another CPU's switches */
            t += rnd_in(0, 3);
            sw_ts[k] = t;
            sw_pid[k] = (int32_t)rnd_in(1, tasks);
            if (rnd() % 3)
                seg[ns++] = k;
        }
        for (Py_ssize_t j = 0; j < ng; j++) {
            g_pid[j] = rnd_in(1, tasks);
            g_start[j] = rnd_in(0, 200);
        }
        CHECK(runs_order(seg, ns, sw_pid, 4, sw_ts, m, g_pid, 8, g_start, ng, 1, tasks, out) ==
              0);
        Py_ssize_t n = 0;
        for (Py_ssize_t i = 0; i < ns + ng; i++) {
            int64_t src = i < ns ? seg[i] : ~(int64_t)(i - ns);
            int64_t p = src >= 0 ? sw_pid[src] : g_pid[~src];
            int64_t s = src >= 0 ? sw_ts[src] : g_start[~src];
            Py_ssize_t at = n++;
            while (at > 0) {
                int64_t q = want[at - 1] >= 0 ? sw_pid[want[at - 1]] : g_pid[~want[at - 1]];
                int64_t u = want[at - 1] >= 0 ? sw_ts[want[at - 1]] : g_start[~want[at - 1]];
                if (q < p || (q == p && u <= s))
                    break;
                want[at] = want[at - 1];
                at--;
            }
            want[at] = src;
        }
        CHECK(memcmp(out, want, (size_t)n * sizeof(int64_t)) == 0);
    }
    /* a pid outside the range, a segment past the switches */
    int64_t one[1] = {0}, past[1] = {5}, o[2];
    int32_t pid[1] = {7};
    int64_t ts[1] = {0};
    CHECK(runs_order(one, 1, pid, 4, ts, 1, NULL, 8, NULL, 0, 1, 6, o) == -2);
    CHECK(runs_order(past, 1, pid, 4, ts, 1, NULL, 8, NULL, 0, 1, 10, o) == -2);
}

/* timeline_rows: rows within the outputs whatever their size (-2 when they are
 * short), every CPU's rows meeting from its first switch to t_end */
static void test_timeline_rows(void)
{
    enum { N = 200, R = 100, CAP = 2 * (N + R) + 8 };
    int64_t ts[N], end[N], r_seg[R], r_start[R], r_end[R], r_pid[R], o_start[CAP], o_end[CAP];
    int32_t cpu[N], pid[N], code[N], r_code[R], o_cpu[CAP], o_pid[CAP], o_code[CAP];
    uint8_t clean[N];
    int8_t o_state[CAP];
    for (int trial = 0; trial < 80; trial++) {
        Py_ssize_t n = (Py_ssize_t)rnd_in(1, N), nr = 0;
        int64_t t_end = 1000;
        for (Py_ssize_t k = 0; k < n; k++) {
            int new_cpu = k == 0 || rnd() % 20 == 0;
            cpu[k] = k == 0 ? 0 : cpu[k - 1] + new_cpu;
            ts[k] = new_cpu ? rnd_in(0, 50) : ts[k - 1] + rnd_in(0, 9);
            pid[k] = (int32_t)rnd_in(0, 3);
            code[k] = (int32_t)k;
            clean[k] = rnd() % 3 != 0;
        }
        for (Py_ssize_t k = 0; k < n; k++)
            end[k] = k + 1 < n && cpu[k + 1] == cpu[k] ? ts[k + 1] : t_end;
        for (Py_ssize_t k = 0; k < n && nr < R - 2; k++) {
            if (clean[k])
                continue;
            int64_t a = ts[k];
            for (int r = 0; r < 2 && a < end[k]; r++) {
                int64_t s = rnd_in(a, end[k]), e = rnd_in(s, end[k]);
                if (e > s) {
                    r_seg[nr] = k, r_start[nr] = s, r_end[nr] = e, r_pid[nr] = rnd_in(0, 3);
                    r_code[nr++] = -7;
                }
                a = e;
            }
        }
        Py_ssize_t cap = (Py_ssize_t)rnd_in(0, CAP);
        TimelineOut o = {o_cpu, o_pid, o_code, o_start, o_end, o_state, 0, cap};
        int rc = timeline_rows(ts, end, cpu, 4, pid, 4, code, clean, n, r_seg, r_start, r_end,
                               r_pid, 8, r_code, nr, t_end, &o);
        CHECK(rc == 0 || rc == -2);
        CHECK(o.m <= cap);
        if (rc != 0)
            continue;
        int ok = 1;
        for (Py_ssize_t i = 0; i < o.m; i++) {
            int first = i == 0 || o_cpu[i] != o_cpu[i - 1];
            ok &= first || o_start[i] == o_end[i - 1];   /* they meet */
            ok &= i + 1 < o.m && o_cpu[i + 1] == o_cpu[i] ? 1 : o_end[i] == t_end;
            ok &= (o_state[i] == 2) == (o_pid[i] == -1 && o_code[i] == -1);
        }
        CHECK(ok);
    }
}

int main(void)
{
    test_key_last_rows();
    test_key_neighbors();
    test_gap_sweep();
    test_overlapping();
    test_groups();
    test_asof_merge();
    test_counting_order();
    test_life_candidates();
    test_asof_slots();
    test_runs_order();
    test_timeline_rows();
    return checks_done();
}
