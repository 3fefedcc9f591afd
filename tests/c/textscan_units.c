/*
 * textscan_units.c: unit tests of the text scanner's field parsers
 * (schedwake/ingest/_textscan.c), on hand-made lines, good and malformed: timestamps,
 * integers, hex numbers, latency flags, state letters, "comm-pid", the event part,
 * whole line prefixes of the four layouts (ftrace, trace-cmd report, latency, perf
 * script), lost-event lines, callchain frame lines and the layout matcher.
 *
 * The scanner's parsers are static: this file includes _textscan.c itself, so it
 * needs Python's headers and libpython to link, though no test calls into Python.
 * Built and run by tests/test_c_units.py (with ASan and UBSan where the compiler
 * has them), as tdcore_units.c is.
 */
#include "_textscan.c"

#include <stdio.h>

#include "check.h"

/* A line as the scanner sees it: its bytes, without the line end. */
#define SPAN(s) (s), (s) + strlen(s)

static int text_is(const char *p, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(p, want, n) == 0;
}

/* ------------------------------------------------------------ numbers */

static void test_parse_ts(void)
{
    int64_t ts = 0;
    const char *after;
    int dec = -1;
    const char *l = "1234.567890: sched_switch";
    CHECK(parse_ts(SPAN(l), &ts, &after, &dec) == 0);
    CHECK(ts == 1234567890000LL && dec == 6 && *after == ' ');
    CHECK(parse_ts(SPAN("5:"), &ts, &after, &dec) == 0 && ts == 5 && dec == 0);
    /* more than 9 decimals: cut to nanoseconds, the count kept */
    CHECK(parse_ts(SPAN("1.1234567891:"), &ts, &after, &dec) == 0);
    CHECK(ts == 1123456789LL && dec == 10);
    /* malformed */
    CHECK(parse_ts(SPAN("1.:"), &ts, &after, &dec) < 0);               /* no decimals */
    CHECK(parse_ts(SPAN("12.5 x"), &ts, &after, &dec) < 0);            /* no ':' */
    CHECK(parse_ts(SPAN("12.5"), &ts, &after, &dec) < 0);              /* line ends */
    CHECK(parse_ts(SPAN(":"), &ts, &after, &dec) < 0);
    CHECK(parse_ts(SPAN("x1.5:"), &ts, &after, &dec) < 0);
    CHECK(parse_ts(SPAN("1234567890123456789:"), &ts, &after, &dec) < 0);  /* 19 digits */
    CHECK(parse_ts(SPAN("123456789012345678:"), &ts, &after, &dec) == 0);  /* 18: a counter */
    CHECK(parse_ts(SPAN("9000000001.0:"), &ts, &after, &dec) < 0);     /* ns overflow */
    CHECK(parse_ts(SPAN("9000000000.999999999:"), &ts, &after, &dec) == 0);
    CHECK(ts == 9000000000999999999LL);
}

static void test_parse_int_hex(void)
{
    int64_t v = 0;
    const char *after;
    const char *l = "-42 rest";
    CHECK(parse_int(SPAN(l), &v, &after) == 0 && v == -42 && after == l + 3);
    CHECK(parse_int(SPAN("18446744073709551615"), &v, &after) == 0);   /* 64 bits: kept */
    CHECK(parse_int(SPAN("18446744073709551616"), &v, &after) < 0);    /* 65 bits */
    CHECK(parse_int(SPAN("-"), &v, &after) < 0);
    CHECK(parse_int(SPAN("x1"), &v, &after) < 0);
    CHECK(parse_int(SPAN(""), &v, &after) < 0);

    CHECK(parse_hex(SPAN("0xffffffff81000000 x"), &v, &after) == 0);
    CHECK((uint64_t)v == 0xffffffff81000000ULL && *after == ' ');
    CHECK(parse_hex(SPAN("ABC"), &v, &after) == 0 && v == 0xabc);
    CHECK(parse_hex(SPAN("(null)"), &v, &after) == 0 && v == 0);
    CHECK(parse_hex(SPAN("0x"), &v, &after) < 0);
    CHECK(parse_hex(SPAN("g1"), &v, &after) < 0);
    CHECK(parse_hex(SPAN("0x11111111111111111"), &v, &after) < 0);    /* 17 digits */
}

/* ------------------------------------------------ flags and states */

static void test_decode_lat(void)
{
    uint8_t flags = 0, pc = 0;
    /* kernel printer: irqs off, hardirq, preempt count 1 */
    CHECK(decode_lat(0, "d.h1", 4, &flags, &pc) == 0 && flags == 0x09 && pc == 1);
    /* need-resched N, softirq, two preempt-count digits */
    CHECK(decode_lat(0, "dNs21", 5, &flags, &pc) == 0 && flags == (0x01 | 0x24 | 0x10));
    CHECK(pc == 0x12);
    CHECK(decode_lat(0, "....", 4, &flags, &pc) == 0 && flags == 0 && pc == 0);
    CHECK(decode_lat(1, "..H.", 4, &flags, &pc) == 0 && flags == 0x18);
    CHECK(decode_lat(0, "...1.f", 6, &flags, &pc) == 0);     /* a sixth, hex or '.' */
    /* malformed */
    CHECK(decode_lat(0, "...", 3, &flags, &pc) < 0);        /* too short */
    CHECK(decode_lat(0, "....1..", 7, &flags, &pc) < 0);    /* too long */
    CHECK(decode_lat(0, "q...", 4, &flags, &pc) < 0);       /* not a flag letter */
    CHECK(decode_lat(0, ".h..", 4, &flags, &pc) < 0);       /* a letter of another column */
    CHECK(decode_lat(0, "...g", 4, &flags, &pc) < 0);       /* preempt count not hex */
    CHECK(decode_lat(0, "...1.z", 6, &flags, &pc) < 0);
}

static void test_state_bit(void)
{
    CHECK(state_bit('S') == 0 && state_bit('D') == 1 && state_bit('L') == 12);
    CHECK(state_bit('R') < 0 && state_bit('?') < 0 && state_bit(0) < 0);
}

/* ------------------------------------------------------ line prefixes */

static void test_split_comm_pid(void)
{
    Prefix px;
    memset(&px, 0, sizeof(px));
    const char *l = "kworker/0:1-1234";
    CHECK(split_comm_pid(SPAN(l), &px) == 0);
    CHECK(px.pid == 1234 && text_is(px.comm, px.commlen, "kworker/0:1"));
    l = "a-b-7";            /* the last '-' splits */
    CHECK(split_comm_pid(SPAN(l), &px) == 0 && px.pid == 7 && text_is(px.comm, px.commlen, "a-b"));
    CHECK(split_comm_pid(SPAN("1234"), &px) < 0);              /* no comm, no '-' */
    CHECK(split_comm_pid(SPAN("bash-"), &px) < 0);             /* no pid */
    CHECK(split_comm_pid(SPAN("bash_12"), &px) < 0);
    CHECK(split_comm_pid(SPAN("bash-12345678901"), &px) < 0);  /* 11 digits */
    CHECK(split_comm_pid(SPAN("bash-2147483648"), &px) < 0);   /* over int32 */
    CHECK(split_comm_pid(SPAN("bash-2147483647"), &px) == 0 && px.pid == INT32_MAX);
}

static void test_parse_event_part(void)
{
    Prefix px;
    memset(&px, 0, sizeof(px));
    const char *l = " sched_switch:   prev_comm=a prev_pid=1  \r";
    CHECK(parse_event_part(SPAN(l), &px, MODE_FTRACE) == 0);
    CHECK(text_is(px.ev, px.evlen, "sched_switch") && px.pad == 3);
    CHECK(text_is(px.body, (size_t)(px.bend - px.body), "prev_comm=a prev_pid=1"));
    l = " (+12) sched:sched_waking: comm=x";        /* trace-cmd --ts-diff */
    CHECK(parse_event_part(SPAN(l), &px, MODE_REPORT) == 0);
    CHECK(text_is(px.ev, px.evlen, "sched:sched_waking") && !px.has_period);
    l = "     250000 cpu-clock:u: ffffffff81000000 f";   /* perf script's period */
    CHECK(parse_event_part(SPAN(l), &px, MODE_PERF) == 0);
    CHECK(px.has_period && px.period == 250000 && text_is(px.ev, px.evlen, "cpu-clock:u"));
    l = " sched_switch:";                               /* no body */
    CHECK(parse_event_part(SPAN(l), &px, MODE_FTRACE) == 0 && px.body == px.bend);
    /* malformed */
    CHECK(parse_event_part(SPAN(" sched_switch prev_comm=a"), &px, MODE_FTRACE) < 0);
    CHECK(parse_event_part(SPAN(" (+12 sched_switch: x"), &px, MODE_REPORT) < 0);
    CHECK(parse_event_part(SPAN(" : x"), &px, MODE_FTRACE) < 0);       /* no name */
    CHECK(parse_event_part(SPAN(" sch\xc3\xa9" "d: x"), &px, MODE_FTRACE) < 0);   /* not ASCII */
    CHECK(parse_event_part(SPAN(""), &px, MODE_FTRACE) < 0);
    CHECK(parse_event_part(SPAN(" 99999999999999999999 e: x"), &px, MODE_PERF) < 0);
}

static int prefix(int mode, const char *line, Prefix *px)
{
    Scanner s;
    memset(&s, 0, sizeof(s));
    s.mode = mode;
    s.flagmode = mode == MODE_REPORT;
    memset(px, 0, sizeof(*px));
    return parse_prefix(&s, SPAN(line), px);
}

static void test_parse_prefix(void)
{
    Prefix px;
    /* ftrace, with latency flags */
    CHECK(prefix(MODE_FTRACE, "          <idle>-0       [001] d.h1.  1234.567890: "
                 "sched_wakeup: comm=foo pid=1", &px) == 0);
    CHECK(text_is(px.comm, px.commlen, "<idle>") && px.pid == 0 && px.cpu == 1);
    CHECK(px.haslat && px.flags == 0x09 && px.pc == 1 && px.ts == 1234567890000LL);
    CHECK(text_is(px.ev, px.evlen, "sched_wakeup") && px.decimals == 6);
    /* trace-cmd report, no flags, a comm with a space and a bracket */
    CHECK(prefix(MODE_REPORT, "   my [x] task-77   [002]   100.000001: sched_switch: a=1", &px)
          == 0);
    CHECK(text_is(px.comm, px.commlen, "my [x] task") && px.pid == 77 && px.cpu == 2);
    CHECK(!px.haslat && px.ts == 100000001000LL);
    /* the tgid column, and --ts-diff */
    CHECK(prefix(MODE_FTRACE, "bash-1234  ( 1230) [003] ....  5.5: (+3) e: x", &px) == 0);
    CHECK(px.pid == 1234 && px.cpu == 3 && px.ts == 5500000000LL);
    /* perf script: pid/tid (common_pid is the tid) */
    CHECK(prefix(MODE_PERF, "perf-exec  1234/1235 [003] 55.123456: sched:sched_switch: x",
                 &px) == 0);
    CHECK(px.pid == 1235 && px.cpu == 3 && text_is(px.comm, px.commlen, "perf-exec"));
    CHECK(prefix(MODE_PERF, "swapper     0 [000] 1.000000: cpu-clock: ", &px) == 0);
    CHECK(px.pid == 0 && text_is(px.ev, px.evlen, "cpu-clock"));
    /* latency layout: <cpu><flags> in one token */
    CHECK(prefix(MODE_FTRACE, "  bash-1234    2d..1  100.500000: sched_switch: x", &px) == 0);
    CHECK(px.cpu == 2 && px.haslat && px.flags == 0x01 && px.pc == 1 && px.pid == 1234);

    /* malformed */
    CHECK(prefix(MODE_FTRACE, "garbage", &px) < 0);
    CHECK(prefix(MODE_FTRACE, "", &px) < 0);
    CHECK(prefix(MODE_FTRACE, "bash-1234 [001] 12.5 sched_switch: x", &px) < 0);   /* ts: */
    CHECK(prefix(MODE_FTRACE, "bash [001] 1.0: e: x", &px) < 0);                    /* pid */
    CHECK(prefix(MODE_FTRACE, "bash-1 [0a1] 1.0: e: x", &px) < 0);                  /* cpu */
    CHECK(prefix(MODE_FTRACE, "bash-1 [001] d.Q. 1.0: e: x", &px) < 0);             /* flag */
    CHECK(prefix(MODE_FTRACE, "bash-99999999999 [001] 1.0: e: x", &px) < 0);
    CHECK(prefix(MODE_FTRACE, "bash-1 [001] 1.0 e x", &px) < 0);
    CHECK(prefix(MODE_FTRACE, "bash-1 (12 [001] 1.0: e: x", &px) < 0);              /* ( */
    CHECK(prefix(MODE_PERF, "perf x/ [003] 1.0: e: x", &px) < 0);
    CHECK(prefix(MODE_PERF, "perf 99999999999 [003] 1.0: e: x", &px) < 0);
    CHECK(prefix(MODE_FTRACE, "[001] 1.0: e: x", &px) < 0);
}

/* --------------------------------------------------------- other lines */

static void test_lost_lines(void)
{
    int64_t cpu = -9, count = -9;
    CHECK(parse_lost(SPAN("CPU:3 [LOST 12 EVENTS]"), &cpu, &count) == 0);
    CHECK(cpu == 3 && count == 12);
    CHECK(parse_lost(SPAN("CPU:1 [LOST EVENTS]"), &cpu, &count) == 0 && count == -1);
    CHECK(parse_lost(SPAN("CPU:0 [5 EVENTS DROPPED]"), &cpu, &count) == 0 && count == 5);
    CHECK(parse_lost(SPAN("CPU:7 [EVENTS DROPPED]"), &cpu, &count) == 0);
    CHECK(cpu == 7 && count == -1);
    CHECK(parse_lost(SPAN("CPU:x [LOST 1 EVENTS]"), &cpu, &count) < 0);
    CHECK(parse_lost(SPAN("CPU:1 LOST 1 EVENTS"), &cpu, &count) < 0);
    CHECK(parse_lost(SPAN("CPU:1 [LOST x EVENTS]"), &cpu, &count) < 0);
    CHECK(parse_lost(SPAN("CPU:1 [5 EVENTS LOST]"), &cpu, &count) < 0);
    CHECK(parse_lost(SPAN("CPU:"), &cpu, &count) < 0);

    CHECK(parse_perf_lost(SPAN("perf 123 [002] 5.0: PERF_RECORD_LOST lost 7"), &cpu,
                          &count) == 0);
    CHECK(cpu == 2 && count == 7);
    CHECK(parse_perf_lost(SPAN("perf 123 002 5.0: PERF_RECORD_LOST lost 7"), &cpu, &count) < 0);
    CHECK(parse_perf_lost(SPAN("perf 123 [002] 5.0: PERF_RECORD_LOST lost "), &cpu, &count) < 0);
    CHECK(parse_perf_lost(SPAN("perf 123 [0x2] 5.0: PERF_RECORD_LOST lost 7"), &cpu, &count)
          < 0);
    CHECK(parse_perf_lost(SPAN("perf 123 [002] 5.0: PERF_RECORD_LOST_SAMPLES lost 7"), &cpu,
                          &count) < 0);
}

static void test_frames_and_headers(void)
{
    CHECK(is_frame_line(SPAN("\t    ffffffff81000000 schedule+0x1 ([kernel.kallsyms])")));
    CHECK(is_frame_line(SPAN(" 7f00 f")));
    CHECK(!is_frame_line(SPAN("ffffffff81000000 schedule")));    /* no indent */
    CHECK(!is_frame_line(SPAN("    zzz f")));
    CHECK(!is_frame_line(SPAN("    ffff")));                     /* nothing after */
    CHECK(!is_frame_line(SPAN("")));
    CHECK(is_header_start(SPAN("# tracer: nop")));
    CHECK(is_header_start(SPAN("# ========")));
    CHECK(!is_header_start(SPAN("# entries-in-buffer")));
    CHECK(!is_header_start(SPAN(" # tracer: nop")));
}

/* ------------------------------------------------------------ layouts */

static Item lit(const char *s)
{
    return (Item){K_LIT, (char *)s, strlen(s), 0};
}

static void test_match_items(void)
{
    /* "comm=%s pid=%d prio=%d state=%S" */
    Variant v = {.nitems = 8, .allow_trailing = 0};
    v.items[0] = lit("comm=");
    v.items[1] = (Item){K_STR, NULL, 0, 0};
    v.items[2] = lit(" pid=");
    v.items[3] = (Item){K_INT, NULL, 0, 1};
    v.items[4] = lit(" prio=");
    v.items[5] = (Item){K_INT, NULL, 0, 2};
    v.items[6] = lit(" state=");
    v.items[7] = (Item){K_STATE, NULL, 0, 3};
    variant_prepare(&v);
    Match m;
    memset(&m, 0, sizeof(m));
    m.budget = MATCH_BUDGET;
    /* a comm holding the next literal: the match goes on to a later one */
    const char *l = "comm=a pid=b pid=12 prio=-3 state=D|W+";
    CHECK(match_items(&v, 0, SPAN(l), &m) == 1);
    CHECK(text_is(m.sp[0], m.sl[0], "a pid=b") && m.val[1] == 12 && m.val[2] == -3);
    CHECK(m.val[3] == ((1 << 1) | (1 << 9) | (1 << 15)) && m.set == 0xf);
    memset(&m, 0, sizeof(m));
    m.budget = MATCH_BUDGET;
    CHECK(match_items(&v, 0, SPAN("comm=a pid=1 prio=2 state=R"), &m) == 1 && m.val[3] == 0);
    /* malformed */
    const char *bad[] = {
        "comm=a pid=x prio=2 state=S",      /* not a number */
        "comm=a pid=1 prio=2 state=Q",      /* not a state letter */
        "comm=a pid=1 prio=2 state=",       /* no state */
        "comm=a pid=1 prio=2",              /* cut short */
        "comm=a pid=1 prio=2 state=S x",    /* trailing text */
        "com=a pid=1 prio=2 state=S",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&m, 0, sizeof(m));
        m.budget = MATCH_BUDGET;
        CHECK(match_items(&v, 0, SPAN(bad[i]), &m) == 0);
    }
    v.allow_trailing = 1;
    memset(&m, 0, sizeof(m));
    m.budget = MATCH_BUDGET;
    CHECK(match_items(&v, 0, SPAN("comm=a pid=1 prio=2 state=S x"), &m) == 1);
    /* a line holding the literal after a string many times: the budget ends the try */
    char many[4096] = "comm=";
    for (int i = 0; i < 200; i++)
        strcat(many, " pid=");
    memset(&m, 0, sizeof(m));
    m.budget = MATCH_BUDGET;
    CHECK(match_items(&v, 0, SPAN(many), &m) == 0 && m.budget < 0);
    /* hex and a string to the end */
    Variant h = {.nitems = 3};
    h.items[0] = (Item){K_HEX, NULL, 0, 0};
    h.items[1] = lit(" ");
    h.items[2] = (Item){K_SYM, NULL, 0, 1};
    variant_prepare(&h);
    memset(&m, 0, sizeof(m));
    m.budget = MATCH_BUDGET;
    CHECK(match_items(&h, 0, SPAN("0x10 do_work+0x4"), &m) == 1);
    CHECK(m.val[0] == 16 && text_is(m.sp[1], m.sl[1], "do_work+0x4"));
}

int main(void)
{
    init_flag_tables();
    test_parse_ts();
    test_parse_int_hex();
    test_decode_lat();
    test_state_bit();
    test_split_comm_pid();
    test_parse_event_part();
    test_parse_prefix();
    test_lost_lines();
    test_frames_and_headers();
    test_match_items();
    return checks_done();
}
