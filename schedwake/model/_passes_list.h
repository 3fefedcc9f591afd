/* The model's compiled passes: PASS(name, docstring), one line each; pass_<name> is
 * defined in the _pass_*.c file the line names. */
/* _pass_order.c */
PASS(counting_order,
     "counting_order(key, lo, span, out): out[:] = the stable order of key (ints in "
     "[lo, lo + span)), by one counting sort")
/* _pass_completeness.c */
PASS(asof_last,
     "asof_last(lts, lkey, rts, rkey, lo, span, strict, out) -> bool: both sides in time "
     "order, keys in [lo, lo + span): out[i] = the last right row of left row i's key with "
     "rts <= lts (< when strict), or -1; False when a side is not in time order")
PASS(asof_grouped,
     "asof_grouped(lts, lkey, rts, rkey, lo, span, forward, strict, out) -> bool: the right "
     "rows in (key, time) order, keys in [lo, lo + span): out[i] = the right row of left row "
     "i's key nearest in time backward or forward, or -1; False when the right rows are "
     "not in (key, time) order")
/* _pass_waits.c */
PASS(wait_epochs,
     "wait_epochs(src, task, kind, row, ts, ns, rewoken_unseen, out_a, out_e, out_head, "
     "out_kind) -> int: the waits of the events src lists in (task, time) order, one per "
     "epoch that ends in a switch-in, as rows")
PASS(task_order,
     "task_order(task, by_time, pid, lo, span, out) -> int: the rows by_time lists but pid "
     "0's, stably by task (keys in [lo, lo + span)), into out; the number placed")
