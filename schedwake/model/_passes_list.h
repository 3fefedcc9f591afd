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
PASS(keyed_merge_order,
     "keyed_merge_order(a, b, key, ts, prio, out): out[:] = the rows of a and b (each in "
     "(key, ts, prio) order) merged in that order, a's first on ties")
PASS(task_states_in_flight,
     "task_states_in_flight(key, code, prio, at, wake) -> m: the switch-outs asleep of "
     "a task woken since its switch-in (at[:m]) and that wake-up's row (wake[:m])")
PASS(task_states_scan,
     "task_states_scan(ts, key, cpu, code, prio, letters, mark, gflags, gend, "
     "unseen_given, out_key, out_cpu, out_start, out_end, out_state, out_since) -> m: "
     "the task states' intervals of rows in (task, ts, prio) order")
PASS(state_sums,
     "state_sums(group, state, dur, out): out[g * 6 + s] = the sum of dur of the rows "
     "of group g in state s")
