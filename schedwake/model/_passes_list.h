/* The model's compiled passes: PASS(name, docstring), one line each; pass_<name> is
 * defined in the _pass_*.c file the line names. */
/* _pass_order.c */
PASS(counting_order,
     "counting_order(key, lo, span, out): out[:] = the stable order of key (ints in "
     "[lo, lo + span)), by one counting sort")
/* _pass_lives.c */
PASS(life_candidates,
     "life_candidates(pid, ts, kind, lo, span, out): out[i] = whether row i's pid (in "
     "[lo, lo + span)) may have two lives, from its deaths, births and other events")
/* _pass_asof.c */
PASS(asof_slots,
     "asof_slots(lts, slot, rts, order, starts, ends, backward, allow_exact, out): "
     "out[i] = the right row (a position in rts) of left row i's as-of match within its "
     "key's range [starts[slot[i]], ends[slot[i]]) of order (None: the rows' own), or -1")
/* _pass_groups.c */
PASS(distinct_per_key,
     "distinct_per_key(key, val, klo, kspan, vlo, vspan, rows, values): per key value in "
     "[klo, klo + kspan), its rows and its distinct values (in [vlo, vlo + vspan))")
PASS(in_table,
     "in_table(values, table, lo, out): out[i] = whether table[values[i] - lo] is set "
     "(False outside the table)")
PASS(group_sums,
     "group_sums(key, weight, most): the distinct keys (int64s >= 0) in order, each one's "
     "rows and the sum of its weights (None: 0), as three bytes objects of int64s; None "
     "when there are more than most distinct keys")
