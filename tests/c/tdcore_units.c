/*
 * tdcore_units.c: unit tests of schedwake's C decoder (schedwake/ingest/_td_*.c),
 * fed literal bytes: one event format text, one ring-buffer page in a trace.dat, and
 * perf.data records (a tracepoint sample, a profile sample with a callchain, records
 * inside COMPRESSED records that straddle them, damaged ones).  Built and run by
 * tests/test_c_units.py (with ASan and UBSan where the compiler has them).
 *
 * Each test builds a whole file in memory with the small writers below, opens and
 * decodes it through the public interface (_tdcore.h), and checks the columns; the
 * integer parser of format texts and options is tested on its own.
 */
#include "_td_internal.h"       /* parse_int, the option ids */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "check.h"

/* ------------------------------------------------------------ a byte writer */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} W;

static void put(W *w, const void *src, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 256;
        w->p = realloc(w->p, w->cap);
        if (!w->p)
            abort();
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}
static void u8(W *w, uint8_t v) { put(w, &v, 1); }
static void u16(W *w, uint16_t v) { put(w, &v, 2); }
static void u32(W *w, uint32_t v) { put(w, &v, 4); }
static void u64(W *w, uint64_t v) { put(w, &v, 8); }
static void str0(W *w, const char *s) { put(w, s, strlen(s) + 1); }
static void pad8(W *w)
{
    while (w->n % 8)
        u8(w, 0);
}

static const char HEADER_PAGE[] =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char HEADER_EVENT[] =
    "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

/* sched_switch of Linux 6.18, as /sys/kernel/tracing/events/sched/sched_switch/format */
static const char SCHED_SWITCH[] =
    "name: sched_switch\nID: 372\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s "
    "next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, "
    "(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | "
    "0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & "
    "((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | "
    "0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" "
    "}, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" "
    "}, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | "
    "0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) "
    "+ 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n";

/* The tracing metadata (trace.dat's head, perf.data's tracing data) up to the
   cmdlines: version "6" for trace.dat, "0.6" for perf. */
static void tracing_head(W *w, const char *version, const char *cmdlines)
{
    put(w, "\x17\x08\x44tracing", 10);
    str0(w, version);
    u8(w, 0);               /* little endian */
    u8(w, 8);               /* long size */
    u32(w, 4096);           /* page size */
    str0(w, "header_page");
    u64(w, strlen(HEADER_PAGE));
    put(w, HEADER_PAGE, strlen(HEADER_PAGE));
    str0(w, "header_event");
    u64(w, strlen(HEADER_EVENT));
    put(w, HEADER_EVENT, strlen(HEADER_EVENT));
    u32(w, 0);              /* ftrace formats */
    u32(w, 1);              /* systems */
    str0(w, "sched");
    u32(w, 1);
    u64(w, strlen(SCHED_SWITCH));
    put(w, SCHED_SWITCH, strlen(SCHED_SWITCH));
    u32(w, 0);              /* kallsyms */
    u32(w, 0);              /* printk */
    u64(w, strlen(cmdlines));
    put(w, cmdlines, strlen(cmdlines));
}

/* The 64 payload bytes of a sched_switch record. */
static void switch_payload(uint8_t rec[64], int32_t pid, const char *prev, long state,
                           const char *next, int32_t next_pid, uint8_t flags)
{
    memset(rec, 0, 64);
    uint16_t type = 372;
    memcpy(rec, &type, 2);
    rec[2] = flags;
    rec[3] = 1;
    memcpy(rec + 4, &pid, 4);
    strncpy((char *)rec + 8, prev, 16);
    memcpy(rec + 24, &pid, 4);
    int32_t prio = 120;
    memcpy(rec + 28, &prio, 4);
    int64_t st = state;
    memcpy(rec + 32, &st, 8);
    strncpy((char *)rec + 40, next, 16);
    memcpy(rec + 56, &next_pid, 4);
    memcpy(rec + 60, &prio, 4);
}

static td_event *event_named(td_file *f, const char *name)
{
    for (int i = 0; i < td_nevents(f); i++)
        if (!strcmp(td_event_at(f, i)->name, name))
            return td_event_at(f, i);
    return NULL;
}

static td_column *column(td_event *ev, const char *name)
{
    for (int i = 0; ev && i < ev->ncols; i++)
        if (!strcmp(ev->cols[i].name, name))
            return &ev->cols[i];
    return NULL;
}

static int64_t int_at(td_column *c, int64_t row)
{
    if (!c || c->kind != TD_INT)
        return INT64_MIN;
    switch (c->bits) {
    case 8: return c->is_signed ? ((int8_t *)c->values.data)[row] : ((uint8_t *)c->values.data)[row];
    case 16: return c->is_signed ? ((int16_t *)c->values.data)[row] : ((uint16_t *)c->values.data)[row];
    case 32: return c->is_signed ? ((int32_t *)c->values.data)[row] : ((uint32_t *)c->values.data)[row];
    }
    return ((int64_t *)c->values.data)[row];
}

/* The string of row `row` of a dictionary column, in buf. */
static const char *str_at(td_column *c, int64_t row, char *buf, size_t cap)
{
    if (!c || (c->kind != TD_STR && c->kind != TD_DYNSTR && c->kind != TD_SYM))
        return "?";
    int32_t idx = ((int32_t *)c->str.indices.data)[row];
    const int32_t *off = (const int32_t *)c->str.offsets.data;
    size_t n = (size_t)(off[idx + 1] - off[idx]);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, c->str.chars.data + off[idx], n);
    buf[n] = 0;
    return buf;
}

static int decode(const W *w, td_file **f, char *err)
{
    int rc = td_open(f, w->p, w->n, err);
    if (rc == 0) {
        td_want_all(*f, 1);
        rc = td_decode(*f, 1, NULL, NULL, err);
    }
    return rc;
}

/* decode() of a file that must decode: checked, and its error said if not. */
static int decoded_ok(const W *w, td_file **f, char *err)
{
    int rc = decode(w, f, err);
    CHECK(rc == 0);
    if (rc)
        fprintf(stderr, "  %s\n", err);
    return rc == 0;
}

/* ------------------------------------------------------------ trace.dat */

/* An option of a v6 file: id and bytes. */
typedef struct {
    uint16_t id;
    const void *data;
    uint32_t size;
} Opt;

/* A text option (DATE, OFFSET, CPUSTAT): the text and its NUL. */
#define TEXT_OPT(id, text) ((Opt){(id), (text), sizeof(text)})

/* A trace.dat v6 with one CPU whose one page (timestamp ts0) holds two sched_switch
   records, the second after a time extend of ext_hi << 27 + 3 ns; opts after the CPU
   count. */
static void tracedat_one_page(W *w, const Opt *opts, int nopts, uint64_t ts0, uint32_t ext_hi)
{
    tracing_head(w, "6", "42 worker\n");
    u32(w, 1);                          /* CPUs */
    put(w, "options  ", 10);
    for (int i = 0; i < nopts; i++) {
        u16(w, opts[i].id);
        u32(w, opts[i].size);
        put(w, opts[i].data, opts[i].size);
    }
    u16(w, 0);                          /* OPT_DONE */
    put(w, "flyrecord", 10);
    size_t table = w->n;
    u64(w, 0);
    u64(w, 4096);
    while (w->n % 4096)
        u8(w, 0);
    uint64_t page_off = w->n;
    memcpy(w->p + table, &page_off, 8);
    uint8_t page[4096] = {0};
    memcpy(page, &ts0, 8);
    size_t pos = 16;
    uint8_t rec[64];
    /* record 1: type_len 16 (64 bytes = 16 words), delta 5 */
    uint32_t hdr = 16u | (5u << 5);
    memcpy(page + pos, &hdr, 4);
    switch_payload(rec, 42, "worker", 0x100, "swapper/0", 0, 0x8d);     /* R+ */
    memcpy(page + pos + 4, rec, 64);
    pos += 68;
    /* a time extend of ext_hi << 27 + 3 ns, then record 2 (delta 2) */
    uint32_t ext = 30u | (3u << 5);
    memcpy(page + pos, &ext, 4);
    memcpy(page + pos + 4, &ext_hi, 4);
    pos += 8;
    hdr = 16u | (2u << 5);
    memcpy(page + pos, &hdr, 4);
    switch_payload(rec, 42, "worker", 2, "swapper/0", 0, 0x01);         /* D */
    memcpy(page + pos + 4, rec, 64);
    pos += 68;
    uint64_t commit = pos - 16;
    memcpy(page + 8, &commit, 8);
    put(w, page, sizeof(page));
}

static void test_tracedat_page(void)
{
    W w = {0};
    tracedat_one_page(&w, NULL, 0, 1000000000, 1);
    char err[TD_ERRLEN] = "", buf[64];
    td_file *f = NULL;
    if (decoded_ok(&w, &f, err)) {
        td_event *ev = event_named(f, "sched_switch");
        CHECK(ev && ev->count == 2);
        CHECK(int_at(column(ev, "ts"), 0) == 1000000005);
        CHECK(int_at(column(ev, "ts"), 1) == 1000000005 + (1 << 27) + 3 + 2);
        CHECK(!strcmp(str_at(column(ev, "prev_state_str"), 0, buf, sizeof(buf)), "R+"));
        CHECK(!strcmp(str_at(column(ev, "prev_state_str"), 1, buf, sizeof(buf)), "D"));
        CHECK(!strcmp(str_at(column(ev, "common_comm"), 0, buf, sizeof(buf)), "worker"));
        CHECK(!strcmp(str_at(column(ev, "next_comm"), 0, buf, sizeof(buf)), "swapper/0"));
        CHECK(int_at(column(ev, "common_flags"), 0) == 0x8d);
        CHECK(int_at(column(ev, "prev_pid"), 1) == 42);
    }
    td_close(f);
    free(w.p);
}

/* parse_int: a value that does not fit int64_t is no value (never a wrapped one,
   never a negated INT64_MIN: UBSan aborts this test on either). */
static void test_parse_int(void)
{
    static const struct { const char *text; int ok; int64_t v; } cases[] = {
        {"9223372036854775807", 1, INT64_MAX},
        {"-9223372036854775808", 1, INT64_MIN},
        {"-0x8000000000000000", 1, INT64_MIN},
        {"0x7fffffffffffffff", 1, INT64_MAX},
        {"-1", 1, -1},
        {"0", 1, 0},
        {"0x10UL", 1, 16},
        {"9223372036854775808", 0, 0},
        {"-9223372036854775809", 0, 0},
        {"0xffffffffffffffff", 0, 0},
        {"18446744073709551616", 0, 0},
        {"-", 0, 0},
        {"x", 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int64_t v = 12345;
        const char *t = cases[i].text;
        int rc = parse_int(t, t + strlen(t), &v, NULL);
        CHECK(rc == (cases[i].ok ? 0 : -1));
        if (cases[i].ok)
            CHECK(v == cases[i].v);
        if ((rc == 0) != cases[i].ok)
            fprintf(stderr, "  parse_int(\"%s\") = %d\n", t, rc);
    }
}

/* What td_open, then td_decode, say of a one-page file with these options; the
   first record's time in *ts0 when it decodes. */
static int decode_with(const Opt *opts, int nopts, uint64_t ts0, uint32_t ext_hi, char *err,
                       int64_t *first)
{
    W w = {0};
    tracedat_one_page(&w, opts, nopts, ts0, ext_hi);
    td_file *f = NULL;
    err[0] = 0;
    int rc = decode(&w, &f, err);
    if (rc == 0 && first)
        *first = int_at(column(event_named(f, "sched_switch"), "ts"), 0);
    td_close(f);
    free(w.p);
    return rc;
}

/* The time options and the records' times: checked arithmetic, a sane range. */
static void test_time_overflow(void)
{
    char err[TD_ERRLEN];
    int64_t first = 0;
    /* OFFSET and DATE move every time: -1 s of 1000000005 ns leaves 5 */
    Opt back = TEXT_OPT(OPT_OFFSET, "-1000000000");
    CHECK(decode_with(&back, 1, 1000000000, 1, err, &first) == 0 && first == 5);
    Opt date = TEXT_OPT(OPT_DATE, "0x10");      /* 16 us */
    CHECK(decode_with(&date, 1, 1000000000, 1, err, &first) == 0 && first == 1000016005);
    /* OFFSET INT64_MAX: the records' times would wrap to negative */
    Opt max = TEXT_OPT(OPT_OFFSET, "9223372036854775807");
    CHECK(decode_with(&max, 1, 1000000000, 1, err, NULL) < 0);
    CHECK(strstr(err, "CPU 0") && strstr(err, "outside 0 to 2^63"));
    /* OFFSET INT64_MIN: negative times */
    Opt min = TEXT_OPT(OPT_OFFSET, "-9223372036854775808");
    CHECK(decode_with(&min, 1, 1000000000, 1, err, NULL) < 0);
    CHECK(strstr(err, "outside 0 to 2^63") != NULL);
    /* one ns before the clock's zero */
    Opt neg = TEXT_OPT(OPT_OFFSET, "-1000000006");
    CHECK(decode_with(&neg, 1, 1000000000, 1, err, NULL) < 0);
    /* two OFFSETs whose sum overflows, a DATE beyond 64 bits of ns, an OFFSET beyond
       64 bits: the file is refused when opened, naming the option */
    Opt two[] = {TEXT_OPT(OPT_OFFSET, "0x4000000000000000"),
                 TEXT_OPT(OPT_OFFSET, "0x4000000000000000")};
    CHECK(decode_with(two, 2, 1000000000, 1, err, NULL) < 0);
    CHECK(strstr(err, "OFFSET option") && strstr(err, "beyond 64 bits"));
    Opt big_date = TEXT_OPT(OPT_DATE, "9223372036854776");
    CHECK(decode_with(&big_date, 1, 1000000000, 1, err, NULL) < 0);
    CHECK(strstr(err, "DATE option") && strstr(err, "microseconds"));
    Opt past = TEXT_OPT(OPT_OFFSET, "9223372036854775808");
    CHECK(decode_with(&past, 1, 1000000000, 1, err, NULL) < 0);
    CHECK(strstr(err, "OFFSET option") && strstr(err, "not a number"));
    /* TSC2NSEC that multiplies the raw clock past 64 bits: exact in 128 */
    struct { uint32_t mult, shift; uint64_t off; } tsc = {0xffffffffu, 0, 0};
    Opt conv = {OPT_TSC2NSEC, &tsc, 16};
    CHECK(decode_with(&conv, 1, 1ull << 33, 1, err, NULL) < 0);
    CHECK(strstr(err, "TSC2NSEC") != NULL);
    /* a time extend of 2^32 << 27 ns (18 years) between two records of a CPU */
    CHECK(decode_with(NULL, 0, 1000000000, 0xffffffffu, err, NULL) < 0);
    CHECK(strstr(err, "days after the trace's first record") != NULL);
    /* 9 years is a long recording, not damage */
    CHECK(decode_with(NULL, 0, 1000000000, 2000000000u, err, NULL) == 0);
}

/* ------------------------------------------------------------- perf.data */

#define S_IP (1u << 0)
#define S_TID (1u << 1)
#define S_TIME (1u << 2)
#define S_CPU (1u << 7)
#define S_PERIOD (1u << 8)
#define S_CALLCHAIN (1u << 5)
#define S_RAW (1u << 10)
#define S_IDENTIFIER (1u << 16)

static void record_header(W *w, uint32_t type, uint16_t misc, uint16_t size)
{
    u32(w, type);
    u16(w, misc);
    u16(w, size);
}

/* HEADER_ATTR of a pipe-mode file: a 128-byte perf_event_attr, then the ids. */
static void header_attr(W *w, uint32_t type, uint64_t config, uint64_t sample_type,
                        uint64_t period, uint64_t id)
{
    record_header(w, 64, 0, 8 + 128 + 8);
    uint8_t attr[128] = {0};
    uint32_t size = 128;
    uint64_t flags = 1ull << 18;        /* sample_id_all */
    memcpy(attr, &type, 4);
    memcpy(attr + 4, &size, 4);
    memcpy(attr + 8, &config, 8);
    memcpy(attr + 16, &period, 8);
    memcpy(attr + 24, &sample_type, 8);
    memcpy(attr + 40, &flags, 8);
    put(w, attr, sizeof(attr));
    u64(w, id);
}

/* The sample_id trailer of a non-sample record: TID, TIME, CPU, IDENTIFIER. */
static void sample_id(W *w, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu,
                      uint64_t id)
{
    u32(w, pid);
    u32(w, tid);
    u64(w, time);
    u32(w, cpu);
    u32(w, 0);
    u64(w, id);
}

/* A COMM record as the kernel writes it: the name NUL-terminated, padded to u64s. */
static void comm_record(W *w, uint32_t pid, const char *comm, uint64_t time, uint64_t id)
{
    char name[16] = {0};
    strncpy(name, comm, 15);
    uint16_t len = (uint16_t)((strlen(name) + 1 + 7) & ~7u);
    record_header(w, 3, 0, (uint16_t)(8 + 8 + len + 32));
    u32(w, pid);
    u32(w, pid);
    put(w, name, len);
    sample_id(w, pid, pid, time, 0, id);
}

/* A tracepoint SAMPLE: IDENTIFIER IP TID TIME CPU PERIOD RAW. */
static void switch_sample(W *w, uint64_t id, uint32_t tid, uint64_t time, uint32_t cpu,
                          const char *prev, long state)
{
    uint8_t raw[64];
    switch_payload(raw, (int32_t)tid, prev, state, "swapper/1", 0, 0x0c);
    /* raw: u32 size + data, padded so that the two are a multiple of 8 */
    uint32_t raw_size = 68;
    record_header(w, 9, 1, (uint16_t)(8 + 8 * 6 + 4 + raw_size));
    u64(w, id);
    u64(w, 0xffffffff81000000ull);
    u32(w, tid);
    u32(w, tid);
    u64(w, time);
    u32(w, cpu);
    u32(w, 0);
    u64(w, 1);
    u32(w, raw_size);
    put(w, raw, 64);
    u32(w, 0);
}

/* The offset of the last record of `type` (0: of any type) in a pipe-mode file. */
static size_t last_record(const W *w, uint32_t type)
{
    size_t last = 0;
    for (size_t pos = 16; pos + 8 <= w->n;) {
        uint32_t t;
        uint16_t size;
        memcpy(&t, w->p + pos, 4);
        memcpy(&size, w->p + pos + 6, 2);
        if (!type || t == type)
            last = pos;
        if (t == 66) {          /* HEADER_TRACING_DATA: its data follows it */
            uint32_t tsize;
            memcpy(&tsize, w->p + pos + 8, 4);
            pos += tsize;
        }
        pos += size;
    }
    return last;
}

static void pipe_head(W *w)
{
    put(w, "PERFILE2", 8);
    u64(w, 16);
}

static void tracing_record(W *w)
{
    W t = {0};
    tracing_head(&t, "0.6", "");
    pad8(&t);
    record_header(w, 66, 0, 16);
    u32(w, (uint32_t)t.n);
    u32(w, 0);
    put(w, t.p, t.n);
    free(t.p);
}

static const uint64_t TP_SAMPLE = S_IDENTIFIER | S_IP | S_TID | S_TIME | S_CPU | S_PERIOD | S_RAW;

/* HEADER_FEATURE COMPRESSED (pipe mode): version, type (zstd), level, ratio, mmap_len. */
static void compressed_feature(W *w, uint32_t mmap_len)
{
    record_header(w, 80, 0, 16 + 24);
    u64(w, 27);
    u32(w, 0);
    u32(w, 1);
    u32(w, 1);
    u32(w, 4);
    u32(w, mmap_len);
    u32(w, 0);
}

/* The records of `inner` as COMPRESSED2 records of one zstd stream, cut in `parts`. */
static void compressed_records(W *w, const W *inner, int parts)
{
    size_t cap = ZSTD_compressBound(inner->n);
    uint8_t *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, inner->p, inner->n, 3);
    CHECK(!ZSTD_isError(zn));
    size_t from = 0;
    for (int part = 0; part < parts && !ZSTD_isError(zn); part++) {
        size_t n = part == parts - 1 ? zn - from : zn / (size_t)parts;
        size_t padded = (n + 7) & ~(size_t)7;
        record_header(w, 83, 0, (uint16_t)(16 + padded));
        u64(w, n);
        put(w, z + from, n);
        while (w->n % 8)
            u8(w, 0);
        from += n;
    }
    free(z);
}

static void test_perf_tracepoint(void)
{
    W w = {0};
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    tracing_record(&w);
    comm_record(&w, 42, "before", 10, 7);
    switch_sample(&w, 7, 42, 100, 1, "before", 1);
    comm_record(&w, 42, "after", 150, 7);       /* exec: a new name from then on */
    switch_sample(&w, 7, 42, 200, 1, "after", 0x100);
    record_header(&w, 68, 0, 8);                /* FINISHED_ROUND */

    char err[TD_ERRLEN] = "", buf[64];
    td_file *f = NULL;
    if (decoded_ok(&w, &f, err)) {
        td_event *ev = event_named(f, "sched_switch");
        CHECK(ev && ev->count == 2);
        CHECK(int_at(column(ev, "cpu"), 1) == 1);
        CHECK(int_at(column(ev, "ts"), 1) == 200);
        CHECK(!strcmp(str_at(column(ev, "common_comm"), 0, buf, sizeof(buf)), "before"));
        CHECK(!strcmp(str_at(column(ev, "common_comm"), 1, buf, sizeof(buf)), "after"));
        CHECK(!strcmp(str_at(column(ev, "prev_state_str"), 0, buf, sizeof(buf)), "S"));
        CHECK(!strcmp(str_at(column(ev, "prev_state_str"), 1, buf, sizeof(buf)), "R+"));
        CHECK(int_at(column(ev, "common_flags"), 0) == 0x0c);
        td_perf_info *in = td_get_perf(f);
        CHECK(in && in->pipe == 1 && in->rounds == 1 && in->nattrs == 1);
        CHECK(in && in->comms.ts.len == 2 * 8);
    }
    td_close(f);

    /* the same bytes with the second sample's size field too large: refused, naming
       the record and its offset */
    size_t at = last_record(&w, 9);
    uint16_t big = 0xfff8;
    memcpy(w.p + at + 6, &big, 2);
    err[0] = 0;
    CHECK(decode(&w, &f, err) < 0);
    CHECK(strstr(err, "perf.data") && strstr(err, "SAMPLE") && strstr(err, "offset"));
    td_close(f);
    free(w.p);
}

/* A cpu-clock sample with a callchain: kernel frames, the user marker, a user frame. */
static void test_perf_callchain(void)
{
    W w = {0};
    pipe_head(&w);
    uint64_t st = S_IDENTIFIER | S_IP | S_TID | S_TIME | S_CPU | S_PERIOD | S_CALLCHAIN;
    header_attr(&w, 1, 0, st, 250000, 9);
    uint64_t chain[] = {(uint64_t)-128, 0xffffffff81001000ull, 0xffffffff81002000ull,
                        (uint64_t)-512, 0x401000};
    record_header(&w, 9, 1, (uint16_t)(8 + 8 * 6 + 8 + sizeof(chain)));
    u64(&w, 9);
    u64(&w, 0xffffffff81001000ull);
    u32(&w, 77);
    u32(&w, 78);
    u64(&w, 5000);
    u32(&w, 0);
    u32(&w, 0);
    u64(&w, 250000);
    u64(&w, 5);
    put(&w, chain, sizeof(chain));

    char err[TD_ERRLEN] = "", buf[64];
    td_file *f = NULL;
    if (decoded_ok(&w, &f, err)) {
        td_event *ev = event_named(f, "cpu-clock");
        CHECK(ev && ev->count == 1);
        CHECK(int_at(column(ev, "common_pid"), 0) == 78);
        CHECK(int_at(column(ev, "pid"), 0) == 77);
        CHECK(int_at(column(ev, "period"), 0) == 250000);
        CHECK(int_at(column(ev, "cpumode"), 0) == 1);
        CHECK(!strcmp(str_at(column(ev, "common_comm"), 0, buf, sizeof(buf)), ":78"));
        td_column *cc = column(ev, "callchain"), *cx = column(ev, "callchain_context");
        CHECK(cc && cc->values.len == 3 * 8 && cx && cx->values.len == 3);
        if (cc && cx && cc->values.len == 24 && cx->values.len == 3) {
            const uint64_t *a = (const uint64_t *)cc->values.data;
            const uint8_t *m = (const uint8_t *)cx->values.data;
            CHECK(a[0] == 0xffffffff81001000ull && a[2] == 0x401000);
            CHECK(m[0] == 1 && m[1] == 1 && m[2] == 2);
        }
        CHECK(!strcmp(td_perf_attr_at(f, 0)->name, "cpu-clock"));
    }
    td_close(f);
    free(w.p);
}

/* Records inside COMPRESSED records: one zstd stream whose output is split across
   two records in the middle of a sample. */
static void test_perf_compressed(void)
{
    W inner = {0};
    comm_record(&inner, 42, "zipped", 10, 7);
    switch_sample(&inner, 7, 42, 100, 0, "zipped", 1);
    switch_sample(&inner, 7, 42, 300, 0, "zipped", 2);
    size_t cap = ZSTD_compressBound(inner.n);
    uint8_t *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, inner.p, inner.n, 3);
    CHECK(!ZSTD_isError(zn));

    W w = {0};
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    compressed_feature(&w, 129 * 4096);
    tracing_record(&w);
    size_t half = zn / 2;
    for (int part = 0; part < 2; part++) {
        size_t from = part ? half : 0, n = part ? zn - half : half;
        size_t padded = (n + 7) & ~(size_t)7;
        record_header(&w, 83, 0, (uint16_t)(16 + padded));     /* COMPRESSED2 */
        u64(&w, n);
        put(&w, z + from, n);
        while (w.n % 8)
            u8(&w, 0);
    }
    record_header(&w, 68, 0, 8);

    char err[TD_ERRLEN] = "", buf[64];
    td_file *f = NULL;
    if (decoded_ok(&w, &f, err)) {
        td_event *ev = event_named(f, "sched_switch");
        CHECK(ev && ev->count == 2);
        CHECK(!strcmp(str_at(column(ev, "common_comm"), 1, buf, sizeof(buf)), "zipped"));
        CHECK(!strcmp(str_at(column(ev, "prev_state_str"), 1, buf, sizeof(buf)), "D"));
        CHECK(td_get_perf(f)->compressed == 1);
    }
    td_close(f);

    /* the stream cut after its first record: the data ends inside a record */
    w.n -= 8;                               /* drop FINISHED_ROUND */
    w.n = last_record(&w, 0);               /* without the second COMPRESSED2 */
    err[0] = 0;
    CHECK(decode(&w, &f, err) < 0);
    CHECK(strstr(err, "truncated perf.data") != NULL);
    td_close(f);
    free(z);
    free(inner.p);
    free(w.p);
}

/* A sample whose payload's common_type is another attribute's tracepoint: the ids
   contradict the payloads (exchanged id lists), the file is refused naming the
   sample's offset; a payload of a tracepoint the file does not have (0xffff) is left
   out with a warning when few, the file refused when many (#37). */
static void test_perf_payload_type(void)
{
    /* sched_switch (372) with id 7, and a second tracepoint 373 (no format) id 8:
       a sample of id 7 whose payload says 373 */
    W w = {0};
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    header_attr(&w, 2, 373, TP_SAMPLE, 1, 8);
    tracing_record(&w);
    switch_sample(&w, 7, 42, 100, 0, "a", 1);
    switch_sample(&w, 7, 42, 200, 0, "b", 1);
    size_t at = last_record(&w, 9);
    uint16_t other = 373;
    memcpy(w.p + at + 8 + 8 * 6 + 4, &other, 2);
    record_header(&w, 68, 0, 8);
    char err[TD_ERRLEN] = "";
    td_file *f = NULL;
    CHECK(decode(&w, &f, err) < 0);
    char want[64];
    snprintf(want, sizeof(want), "offset %zu", at);
    CHECK(strstr(err, want) && strstr(err, "contradict") && strstr(err, "373") &&
          strstr(err, "sched_switch"));
    td_close(f);

    /* 0xffff: one of 12 samples left out of the counts, the tables and the time span */
    free(w.p);
    memset(&w, 0, sizeof(w));
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    tracing_record(&w);
    for (int i = 0; i < 12; i++)
        switch_sample(&w, 7, 42, 1000 + 100 * (uint64_t)i, 0, "a", 1);
    switch_sample(&w, 7, 42, 1ull << 40, 0, "late", 1);     /* the damaged one */
    at = last_record(&w, 9);
    uint16_t ffff = 0xffff;
    memcpy(w.p + at + 8 + 8 * 6 + 4, &ffff, 2);
    record_header(&w, 68, 0, 8);
    err[0] = 0;
    if (decoded_ok(&w, &f, err)) {
        td_event *ev = event_named(f, "sched_switch");
        CHECK(ev && ev->count == 12);
        td_meta *m = td_get_meta(f);
        CHECK(m->first_ts == 1000 && m->last_ts == 2100);
        CHECK(m->nwarnings >= 1 && strstr(m->warnings[0], "1 of 13 tracepoint samples") &&
              strstr(m->warnings[0], "65535"));
        td_perf_info *in = td_get_perf(f);
        CHECK(in->timed_samples == 12 && in->time_high[0] == 2100 && in->time_low[0] == 1000);
    }
    td_close(f);

    /* every sample's payload 0xffff: refused */
    for (size_t pos = 16; pos + 8 <= w.n;) {
        uint32_t t;
        uint16_t size;
        memcpy(&t, w.p + pos, 4);
        memcpy(&size, w.p + pos + 6, 2);
        if (t == 9)
            memcpy(w.p + pos + 8 + 8 * 6 + 4, &ffff, 2);
        if (t == 66) {
            uint32_t tsize;
            memcpy(&tsize, w.p + pos + 8, 4);
            pos += tsize;
        }
        pos += size;
    }
    err[0] = 0;
    CHECK(decode(&w, &f, err) < 0);
    CHECK(strstr(err, "13 of 13 tracepoint samples") != NULL);
    td_close(f);
    free(w.p);
}

/* A tracepoint without a format whose samples come first: left out, they neither
   count nor start the time span at 0 (#37: a duration of 2,039 s). */
static void test_perf_no_format_first(void)
{
    W w = {0};
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    header_attr(&w, 2, 99999, TP_SAMPLE, 1, 8);
    tracing_record(&w);
    switch_sample(&w, 8, 42, 5000, 0, "nofmt", 1);
    switch_sample(&w, 7, 42, 6000, 0, "a", 1);
    switch_sample(&w, 7, 42, 7000, 0, "b", 1);
    record_header(&w, 68, 0, 8);
    char err[TD_ERRLEN] = "";
    td_file *f = NULL;
    if (decoded_ok(&w, &f, err)) {
        td_meta *m = td_get_meta(f);
        CHECK(m->first_ts == 6000 && m->last_ts == 7000);
        CHECK(m->nwarnings >= 1 && strstr(m->warnings[0], "tracepoint id 99999") &&
              strstr(m->warnings[0], "left out"));
    }
    td_close(f);
    free(w.p);
}

/* COMPRESSED records against the COMPRESSED feature (#37): a record that decompresses
   beyond its mmap_len, an mmap_len of 0xffffffff or 0, compressed records without the
   feature, and records that decompress beyond 100 times their size and 16 MiB. */
static void test_perf_decompression_limits(void)
{
    W inner = {0};
    for (int i = 0; i < 200; i++)       /* 200 samples of 120 bytes: 24,000 bytes */
        switch_sample(&inner, 7, 42, 100 + (uint64_t)i, 0, "zipped", 1);
    char err[TD_ERRLEN] = "";
    td_file *f = NULL;
    uint32_t lens[] = {129 * 4096, 8192, 0xffffffffu, 0, 1};
    for (int k = 0; k < 6; k++) {
        W w = {0};
        pipe_head(&w);
        header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
        if (k < 5)
            compressed_feature(&w, lens[k]);
        tracing_record(&w);
        compressed_records(&w, &inner, 2);
        record_header(&w, 68, 0, 8);
        err[0] = 0;
        int rc = decode(&w, &f, err);
        if (k == 0) {
            CHECK(rc == 0);
            td_event *ev = rc == 0 ? event_named(f, "sched_switch") : NULL;
            CHECK(ev && ev->count == 200);
        } else if (k == 1) {    /* 12,000 bytes a record, in buffers of 8,192 */
            CHECK(rc < 0 && strstr(err, "more than the 8192 bytes") && strstr(err, "mmap_len"));
        } else if (k < 5) {
            char want[64];
            snprintf(want, sizeof(want), "held %u bytes", lens[k]);
            CHECK(rc < 0 && strstr(err, want) && strstr(err, "mmap_len"));
        } else {
            CHECK(rc < 0 && strstr(err, "without the COMPRESSED feature"));
        }
        if (rc < 0 && k == 0)
            fprintf(stderr, "  %s\n", err);
        td_close(f);
        free(w.p);
    }

    /* 40 records of 600,000 bytes each, a few hundred bytes compressed */
    W big = {0};
    for (int i = 0; i < 5000; i++)
        switch_sample(&big, 7, 42, 100, 0, "same", 1);
    W w = {0};
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    compressed_feature(&w, 257 * 4096);
    tracing_record(&w);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(big.n);
    uint8_t *z = malloc(cap);
    for (int r = 0; r < 40; r++) {
        ZSTD_inBuffer in = {big.p, big.n, 0};
        ZSTD_outBuffer out = {z, cap, 0};
        size_t left;
        do
            left = ZSTD_compressStream2(c, &out, &in, r == 39 ? ZSTD_e_end : ZSTD_e_flush);
        while (!ZSTD_isError(left) && left);
        CHECK(!ZSTD_isError(left) && out.pos < 60000);
        size_t padded = (out.pos + 7) & ~(size_t)7;
        record_header(&w, 83, 0, (uint16_t)(16 + padded));
        u64(&w, out.pos);
        put(&w, z, out.pos);
        while (w.n % 8)
            u8(&w, 0);
    }
    record_header(&w, 68, 0, 8);
    err[0] = 0;
    CHECK(decode(&w, &f, err) < 0);
    CHECK(strstr(err, "100 times their size") && strstr(err, "bomb"));
    td_close(f);
    ZSTD_freeCCtx(c);
    free(z);
    free(w.p);
    free(big.p);
    free(inner.p);
}

/* Two samples 2^62 ns (146 years) apart: a damaged timestamp, not a recording. */
static void test_perf_time_span(void)
{
    W w = {0};
    pipe_head(&w);
    header_attr(&w, 2, 372, TP_SAMPLE, 1, 7);
    tracing_record(&w);
    switch_sample(&w, 7, 42, 100, 0, "early", 1);
    switch_sample(&w, 7, 42, 1ull << 62, 0, "late", 1);
    record_header(&w, 68, 0, 8);
    char err[TD_ERRLEN] = "";
    td_file *f = NULL;
    CHECK(decode(&w, &f, err) < 0);
    CHECK(strstr(err, "perf.data") && strstr(err, "days"));
    td_close(f);
    free(w.p);
}

/* A file of two events whose samples carry no id: no sample can be attributed. */
static void test_perf_unattributable(void)
{
    W w = {0};
    pipe_head(&w);
    header_attr(&w, 1, 0, S_IP | S_TID | S_TIME, 1000, 1);
    header_attr(&w, 1, 1, S_IP | S_TID | S_TIME, 1000, 2);
    char err[TD_ERRLEN] = "";
    td_file *f = NULL;
    int rc = td_open(&f, w.p, w.n, err);
    CHECK(rc < 0);
    CHECK(strstr(err, "no event id") != NULL);
    td_close(f);
    free(w.p);
}

int main(void)
{
    test_tracedat_page();
    test_parse_int();
    test_time_overflow();
    test_perf_tracepoint();
    test_perf_callchain();
    test_perf_compressed();
    test_perf_unattributable();
    test_perf_time_span();
    test_perf_payload_type();
    test_perf_no_format_first();
    test_perf_decompression_limits();
    return checks_done();
}
