/*
 * check.h: the checks of the C unit tests (tests/c/*_units.c, run by
 * tests/test_c_units.py): CHECK(cond) counts, and says on stderr which failed and
 * where; checks_done() prints "N checks, M failed", which the Python side reads, and
 * is main()'s exit status.
 */
#ifndef SCHEDWAKE_TESTS_CHECK_H
#define SCHEDWAKE_TESTS_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            failures++;                                                              \
            fprintf(stderr, "%s:%d: %s: failed: %s\n", __FILE__, __LINE__, __func__, #cond); \
        }                                                                            \
    } while (0)

static inline int checks_done(void)
{
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

#endif
