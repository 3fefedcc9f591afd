/* The model's compiled passes: PASS(name, docstring), one line each; pass_<name> is
 * defined in the _pass_*.c file the line names. */
/* _pass_order.c */
PASS(counting_order,
     "counting_order(key, lo, span, out): out[:] = the stable order of key (ints in "
     "[lo, lo + span)), by one counting sort")
