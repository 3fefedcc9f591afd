/* The model's compiled passes: PASS(name, docstring), one line each; pass_<name> is
 * defined in the _pass_*.c file the line names. */
/* _pass_order.c */
PASS(counting_order,
     "counting_order(key, lo, span, out): out[:] = the stable order of key (ints in "
     "[lo, lo + span)), by one counting sort")
PASS(pack_by,
     "pack_by(key, ts, by, k0, t0, tbits, out): out[i] = (key[by[i]] - k0) << tbits | "
     "(ts[by[i]] - t0), the rows' (key, ts) packed into an int64 in the order by")
PASS(ascending,
     "ascending(key) -> bool: whether the keys (4- or 8-byte ints) never decrease; stops at "
     "the first that does")
/* _pass_lives.c */
PASS(life_candidates,
     "life_candidates(parts, lo, span, outs): outs[j][i] = whether row i of part j (a "
     "(pid, ts, kind) of arrays, kind an array of codes or one int for all; pids in "
     "[lo, lo + span)) may have two lives, from its pid's deaths, births and other "
     "events over every part")
/* _pass_asof.c */
PASS(asof_merge,
     "asof_merge(lts, lkey, rts, rkey, lo, span, backward, allow_exact, out) -> bool: "
     "out[i] = left row i's as-of match, both sides in time order, keys in "
     "[lo, lo + span); False (out not filled) when a side is not in time order")
PASS(asof_slots,
     "asof_slots(lts, slot, rts, order, starts, ends, backward, allow_exact, out): "
     "out[i] = the right row (a position in rts) of left row i's as-of match within its "
     "key's range [starts[slot[i]], ends[slot[i]]) of order (None: the rows' own), or -1")
/* _pass_groups.c */
PASS(in_table,
     "in_table(values, table, lo, out): out[i] = whether table[values[i] - lo] is set "
     "(False outside the table); over a table of int64 slots (out int64 too), the slot "
     "(-1 outside the table)")
PASS(take_fill,
     "take_fill(arr, idx, fill, out): out[i] = arr[idx[i]], fill where idx[i] < 0 (arr: "
     "flags or 4- or 8-byte ints; out: as wide or wider)")
PASS(group_sums,
     "group_sums(key, weight, most): the distinct keys (int64s >= 0) in order, each one's "
     "rows and the sum of its weights (None: 0), as three bytes objects of int64s; None "
     "when there are more than most distinct keys")
/* _pass_task_states.c */
PASS(task_sort_parts,
     "task_sort_parts(parts, slots, lo, span, out[, counts]) -> m: out[:m] = the rows (a uint8 "
     "view of a task_states._ROW array) of the parts but those of key 0, in (slot, ts, "
     "prio) order, ties in part order; a part: (ts, key, cpu, code, prio, letters, mark), "
     "arrays of 1-, 4- or 8-byte ints (ts 8, key 4 or 8) or one int for all, each in "
     "(ts, prio) order; slots: None (a row's slot: its key - lo) or an int64 array a "
     "part; slots in [0, span); -1 - j: part j not in order (nothing written); counts "
     "(int64s, one a slot): each slot's rows")
PASS(keyed_last_below,
     "keyed_last_below(rows, qkey, qts, out): out[j] = the last of the rows (in (key, "
     "ts) order) with key qkey[j] and ts below qts[j], else -1")
PASS(merge_rows_into,
     "merge_rows_into(buf, n, b): buf[:n + len(b)] = the rows buf[:n] and b (each in "
     "(key, ts, prio) order) merged in that order, buf's first on ties")
PASS(task_states_in_flight,
     "task_states_in_flight(rows, at, wake) -> m: the switch-outs asleep of a task woken "
     "since its switch-in (at[:m]) and that wake-up's row (wake[:m]); rows: a uint8 view "
     "of a task_states._ROW array in (key, ts, prio) order")
PASS(task_states_scan,
     "task_states_scan(rows, gkey, gflags, gend, unseen_given, out_key, out_cpu, "
     "out_start, out_end, out_state, out_since[, out_pid, pid_mask]) -> m: the task "
     "states' intervals of rows (a uint8 view of a task_states._ROW array) in (task, ts, "
     "prio) order, each task's key gkey[g]; out_pid: each interval's key & pid_mask as "
     "int32")
PASS(task_states_sums,
     "task_states_sums(rows, gkey, gflags, gend, unseen_given, cpu_hi, out_key, out_cpu, "
     "out_ns) "
     "-> m: the ns of task_states_scan's intervals summed per (task, CPU) and state, "
     "without making them: groups in (key, CPU) order, out_ns 6 a group (the states' "
     "order); every CPU in [-1, cpu_hi]")
PASS(dense_codes,
     "dense_codes(key, lo, span, codes, levels) -> m: codes[:] = each key's rank among "
     "the distinct keys (ints in [lo, lo + span)), levels[:m] = those keys ascending")
PASS(seconds_texts,
     "seconds_texts(ns, glue) -> bytes: the rows of ns (int64s in [0, 10**15), "
     "len(glue) + 1 a row) as the texts of their seconds (as repr() writes ns / 1e9) "
     "with glue[j] (bytes) between values j and j + 1, a NUL after each row but the last")
PASS(state_sums,
     "state_sums(group, state, start, end, out): out[g * 6 + s] = the sum of "
     "max(end - start, 0) of the rows of group g in state s")
/* _pass_waits.c */
PASS(wait_epochs,
     "wait_epochs(src, task, kind, row, ts, ns, rewoken_unseen, out_a, out_e, out_head, "
     "out_kind) -> int: the waits of the events src lists in (task, time) order, one per "
     "epoch that ends in a switch-in, as rows")
PASS(preempted_ends,
     "preempted_ends(sts, prev_key, next_key, runnable, cts, ckey, ctie, crow, out) -> "
     "bool: out[i] = the row that ends the preempted wait switch-out i arms (a switch-in "
     "ns + j, a run 2 ns + crow[c]), else -1; False when it cannot answer")
PASS(stretch_parts,
     "stretch_parts(ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter, sums, out_g, "
     "out_pid, out_comm, out_prio, out_ns) -> m: per stretch g (rows [r0[g], r1[g]) of "
     "the CPU index, clipped to [a[g], b[g])) the waiter's, lost, missing and idle time "
     "and idle rows (sums[5 g:5 g + 5]), and the other tasks' time by (pid, comm, prio)")
PASS(task_order,
     "task_order(task, by_time, pid, lo, span, out) -> int: the rows by_time lists but pid "
     "0's, stably by task (keys in [lo, lo + span)), into out; the number placed")
/* _pass_completeness.c */
PASS(event_segments,
     "event_segments(pos, rank, ets, epid, sw_ts, sw_next, seg, status): seg[i] = "
     "rank[pos[i]] (-1 when pos[i] < 0), the segment of event i; status[i]: 0 none, 1 "
     "the segment's task (sw_next), 2 another, 3 another at the time of its switch")
PASS(event_segments_walk,
     "event_segments_walk(ets, ecpu, epid, given_ts, given_cpu, first, sw_ts, sw_next, lo, "
     "span, seg, status) -> bool: as event_segments, each event's switch (of its CPU, in "
     "[lo, lo + span), the last at or before it) found by one walk over the events and the "
     "switches in their given (time) order, its segment first[cpu - lo] (the CPU's first "
     "switch in (CPU, time) order) plus the CPU's switches before it; False (outputs "
     "partly written) when the events are not in time order")
PASS(group_running_max,
     "group_running_max(values, new_group, out): out[i] = the maximum of values over row "
     "i's group up to i, a group starting at each row whose new_group is set")
PASS(timeline_rows,
     "timeline_rows(sw_ts, sw_end, sw_cpu, sw_pid, sw_code, clean, r_seg, r_start, r_end, "
     "r_pid, r_code, t_end, out_cpu, out_start, out_end, out_pid, out_code, out_state) -> m: "
     "the timeline's rows[:m] of the segments (by CPU, time): a clean one itself, another "
     "its runs (r_seg ascending), an unknown row (state 2, pid and code -1) between rows "
     "that do not meet, from each CPU's first switch to t_end")
PASS(runs_order,
     "runs_order(seg, sw_pid, sw_ts, g_pid, g_start, lo, span, out): out[:] = the runs "
     "(the segments seg, then the group runs) by (pid, start), ties in that order: a "
     "segment's index, or ~j for group run j; pids in [lo, lo + span)")
PASS(runs_columns,
     "runs_columns(src, (start, end, cpu, pid, code, last), (start, end, earliest, cpu, pid, "
     "code, exact, endkind), end_switch, end_trace, (pid, code, cpu, start, end, exact, "
     "earliest, endkind)): the runs' columns in runs_order's order src, from the segments "
     "(k >= 0: exact, to the next switch, end_trace when the CPU's last) and the group runs "
     "(~j)")
PASS(unwoken_candidates,
     "unwoken_candidates(sts, nkey, pkey, nxt, asleep, ((ts, key), ...), lo, span, out_switch, "
     "out_ts, out_wake) -> int: one walk over the switches (in time order; next and prev "
     "keys, next pid, asleep at the switch-out) and up to 4 wake-up tables (in time order): "
     "the switch-ins of a task (nxt > 0) whose last earlier switch-out slept with no "
     "wake-up since, as (switch, that switch-out's ts, the last wake-up at or before the "
     "switch-in, int64 min if none); their count, -1 (nothing written) when a table is "
     "not in time order; keys in [lo, lo + span)")
PASS(rewoken_walk,
     "rewoken_walk(ts, key, run_start, run_end, run_key, lo, span, out) -> int: one walk "
     "over the wake-ups (ts, key; in time order): out[:count] = those whose key had an "
     "earlier wake-up (strictly) that no run of the key begun by them reaches (the runs: "
     "each key's one range, by start; the furthest end of those begun, -1 when none); "
     "count, or -1 (nothing written) when the wake-ups or a key's runs are out of order; "
     "keys in [lo, lo + span)")
/* _pass_wakeups.c */
PASS(settling_walk,
     "settling_walk(c_ts, c_key, c_cpu, c_dest, order, ts, key, cpu, placed, lo, span, out) "
     "-> bool: out[i] = the time of the first event (ts, key, cpu, placed; in time order) "
     "of key c_key[i] at or after c_ts[i], the next one at a later time when that one is "
     "on another CPU than c_cpu[i] and places the task on c_dest[i]; int64 max if none; "
     "False (out not filled) when the events or the candidates (through order, a "
     "permutation; None: as they are) are not in time order")
PASS(next_of_key,
     "next_of_key(ts, key, lo, span, out) -> bool: out[i] = the time of the next row of "
     "key[i] (ints in [lo, lo + span)) after row i, int64 max if none; False (out not "
     "filled) when ts is not in time order")
PASS(wake_runs,
     "wake_runs(ts, key, rkey, rstart, reach, earliest, rcpu, rend, rcode, lo, span, (index, "
     "running, next_ts, next_from, cpu, end_ts, ended)) -> bool: per wake-up (in time "
     "order), its key's next run at or after it (rows of a key together, in time order) "
     "and that run's columns (none: -1, int64 max, False), and whether the run before it "
     "reaches it; False (outputs not filled) when an order does not hold")
/* _pass_detect.c */
PASS(gap_sweep,
     "gap_sweep(ts, code, ncpu, out_start, out_end) -> m: idle while runnable's gap over "
     "the interval ends in time order (ts; code: CPU << 3 | kind, 0/1 idle start/end, 2/3 "
     "wait, 4/5 unknown, CPUs in [0, ncpu)): the segments, touching pieces joined, "
     "out_start[:m], out_end[:m]")
PASS(overlapping,
     "overlapping(start, end, us, ue, out): out[i] = whether [min(start[i], end[i]), "
     "max(start[i], end[i])) overlaps one of the pieces [us[j], ue[j]) (disjoint, in time "
     "order; int64s)")
PASS(key_neighbors,
     "key_neighbors(key, rows, lo, span, out_prev, out_next): for each of rows (ascending "
     "positions in key), the row before and the row after it with the same key (ints in "
     "[lo, lo + span)), -1 where none")
PASS(key_last_rows,
     "key_last_rows(key, lo, span, last): last[k - lo] = the last row of each key k "
     "(4- or 8-byte ints in [lo, lo + span)), -1 where no row has it")
