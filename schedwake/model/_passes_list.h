/* The model's compiled passes: PASS(name, docstring), one line each; pass_<name> is
 * defined in the _pass_*.c file the line names. */
/* _pass_order.c */
PASS(counting_order,
     "counting_order(key, lo, span, out): out[:] = the stable order of key (ints in "
     "[lo, lo + span)), by one counting sort")
/* _pass_task_states.c */
PASS(ts_merge_order,
     "ts_merge_order(ts, prio, bounds, out): out[:] = the stable order by (ts, prio) of "
     "rows made of runs [bounds[j], bounds[j + 1]) each already in that order")
PASS(keyed_last_below,
     "keyed_last_below(key, ts, qkey, qts, out): out[j] = the last row with key qkey[j] "
     "and ts below qts[j] of rows sorted by (key, ts), else -1")
PASS(merge_rows,
     "merge_rows(a, b, out): out = the rows of a and b (uint8 views of task_states._ROW "
     "arrays, each in (key, ts, prio) order) merged in that order, a's first on ties")
PASS(task_states_in_flight,
     "task_states_in_flight(rows, at, wake) -> m: the switch-outs asleep of a task woken "
     "since its switch-in (at[:m]) and that wake-up's row (wake[:m]); rows: a uint8 view "
     "of a task_states._ROW array in (key, ts, prio) order")
PASS(task_states_scan,
     "task_states_scan(rows, gflags, gend, unseen_given, out_key, out_cpu, out_start, "
     "out_end, out_state, out_since) -> m: the task states' intervals of rows (a uint8 "
     "view of a task_states._ROW array) in (key, ts, prio) order")
PASS(dense_codes,
     "dense_codes(key, lo, span, codes, levels) -> m: codes[:] = each key's rank among "
     "the distinct keys (ints in [lo, lo + span)), levels[:m] = those keys ascending")
PASS(state_sums,
     "state_sums(group, state, start, end, out): out[g * 6 + s] = the sum of "
     "max(end - start, 0) of the rows of group g in state s")
