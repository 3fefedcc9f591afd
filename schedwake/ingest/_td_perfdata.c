/*
 * _td_perfdata.c: the perf.data file layer and its records (perf's
 * tools/perf/Documentation/perf.data-file-format.txt).
 *
 *   file mode: a header (magic "PERFILE2", sizes, the attribute, data and
 *       feature-bitmap sections), the attributes (perf_event_attr + the ids of
 *       its events, `attr_size` bytes each: any perf version), the data (a
 *       stream of records), then one section per feature bit (tracing data,
 *       build ids, os release, CPU and cache topology, ...).
 *   pipe mode (perf record -o -): a 16-byte header, then only records: the
 *       attributes, the tracing data and the features arrive as records
 *       (HEADER_ATTR, HEADER_TRACING_DATA followed by its bytes, HEADER_FEATURE).
 *   records: a header {u32 type, u16 misc, u16 size}; SAMPLE records carry the
 *       fields their attribute's sample_type asks for, in the kernel's order;
 *       other kernel records end with a sample_id trailer (sample_id_all);
 *       COMPRESSED/COMPRESSED2 records (perf record -z) hold one zstd stream
 *       across records, whose output is more records, which may straddle them.
 *
 * The tracing data is the head of a trace.dat v6 (magic, header_page,
 * header_event, ftrace and event formats, kallsyms, printk, saved cmdlines), so
 * it is read by _td_format.c and _td_symbols.c, and tracepoint samples (their
 * RAW payload is the ring-buffer record) go through append_record() as
 * trace.dat records do.  Other samples (cpu-clock, cycles, any profile) get the
 * columns of NCOMMON_SAMPLE and the extra columns below.
 *
 * Two passes.  perf_open() reads the header, the attributes and the features,
 * then walks every record once: pipe-mode metadata, the comm/fork/exit history
 * (a sample's task name is its tid's name at the sample's time, as perf script
 * prints it), memory maps, losses, FINISHED_ROUND ordering, the record ranges
 * for threads.  perf_run() then decodes the samples, ranges in parallel when the
 * records are not compressed, each range's samples of a CPU into sorted runs
 * (slots) that the merge of _td_merge.c puts into (timestamp, CPU) order:
 * perf_source, the merge's Source interface, is all the merge knows of them.
 *
 * Same rules as the trace.dat layer: every length, offset and count read from
 * the file is checked before use (multiplications included), allocations are
 * capped, decompression streams through a bounded window with a cap per
 * record, and damage is one message naming the record type and file offset.
 */
#include "_td_internal.h"

#include <zstd.h>

#define PERF_HEADER_SIZE 104u       /* perf_file_header with the feature bitmap */
#define PERF_HEADER_OLD 72u         /* ... without it (old perf) */
#define PIPE_HEADER_SIZE 16u
#define MAX_ATTRS 4096
#define MAX_ATTR_BYTES 4096
#define MAX_IDS (1u << 24)
#define MAX_FEATURE_BYTES (1ull << 30)
#define MAX_SLOTS 4096              /* sorted runs of CPU samples, over all ranges */
#define MAX_RANGES 256
#define ZWINDOW ((size_t)1 << 20)   /* decompressed bytes processed at a time */
/* Decompression limits (docs/reliability.md): perf itself refuses a COMPRESSED record
   that decompresses to more than the COMPRESSED feature's mmap_len (the size of the
   buffer whose bytes it compressed), which is (2^n + 1) pages: at most the kernel's
   largest perf buffer, 2^19 pages, and a page of 64 KiB.  Over a whole file the records
   decompress to at most ZRATIO_MAX times their compressed bytes and ZOUT_FLOOR (perf's
   own files: 4 to 20 times; a file of identical samples far more) */
#define MAX_COMP_MMAP_LEN (((uint64_t)2 << 30) + ((uint64_t)64 << 10))
#define ZRATIO_MAX 100
#define ZOUT_FLOOR ((uint64_t)16 << 20)
/* Tracepoint samples whose payload is another tracepoint than their attribute's
   (common_type != config) and names none of the file's events: left out with a
   warning when at most PAYLOAD_BAD_FEW and at most 1% of the tracepoint samples,
   the file refused beyond */
#define PAYLOAD_BAD_FEW 10
#define NO_TIME INT64_MIN
#define ZSTD_BLOCK_HEADER 3         /* bytes of a zstd block header (RFC 8878) */

enum {
    PR_MMAP = 1, PR_LOST = 2, PR_COMM = 3, PR_EXIT = 4, PR_THROTTLE = 5, PR_UNTHROTTLE = 6,
    PR_FORK = 7, PR_SAMPLE = 9, PR_MMAP2 = 10, PR_LOST_SAMPLES = 13,
    PR_HEADER_ATTR = 64, PR_HEADER_EVENT_TYPE = 65, PR_HEADER_TRACING_DATA = 66,
    PR_HEADER_BUILD_ID = 67, PR_FINISHED_ROUND = 68, PR_ID_INDEX = 69, PR_EVENT_UPDATE = 78,
    PR_HEADER_FEATURE = 80, PR_COMPRESSED = 81, PR_COMPRESSED2 = 83,
};

/* sample_type bits (include/uapi/linux/perf_event.h) */
enum {
    S_IP = 1 << 0, S_TID = 1 << 1, S_TIME = 1 << 2, S_ADDR = 1 << 3, S_READ = 1 << 4,
    S_CALLCHAIN = 1 << 5, S_ID = 1 << 6, S_CPU = 1 << 7, S_PERIOD = 1 << 8,
    S_STREAM_ID = 1 << 9, S_RAW = 1 << 10, S_BRANCH_STACK = 1 << 11, S_REGS_USER = 1 << 12,
    S_STACK_USER = 1 << 13, S_WEIGHT = 1 << 14, S_DATA_SRC = 1 << 15, S_IDENTIFIER = 1 << 16,
    S_TRANSACTION = 1 << 17, S_REGS_INTR = 1 << 18, S_PHYS_ADDR = 1 << 19, S_AUX = 1 << 20,
    S_CGROUP = 1 << 21, S_DATA_PAGE_SIZE = 1 << 22, S_CODE_PAGE_SIZE = 1 << 23,
    S_WEIGHT_STRUCT = 1 << 24,
};
#define BRANCH_HW_INDEX (1ull << 17)     /* PERF_SAMPLE_BRANCH_HW_INDEX */
#define BRANCH_COUNTERS (1ull << 19)     /* PERF_SAMPLE_BRANCH_COUNTERS */
enum { RF_ENABLED = 1, RF_RUNNING = 2, RF_ID = 4, RF_GROUP = 8, RF_LOST = 16 };
enum { T_HARDWARE = 0, T_SOFTWARE = 1, T_TRACEPOINT = 2, T_HW_CACHE = 3, T_RAW = 4,
       T_BREAKPOINT = 5 };

/* feature bits of the file header (tools/perf/util/header.h) */
enum {
    F_TRACING_DATA = 1, F_BUILD_ID = 2, F_HOSTNAME = 3, F_OSRELEASE = 4, F_VERSION = 5,
    F_ARCH = 6, F_NRCPUS = 7, F_CPUDESC = 8, F_CPUID = 9, F_TOTAL_MEM = 10, F_CMDLINE = 11,
    F_EVENT_DESC = 12, F_CPU_TOPOLOGY = 13, F_NUMA_TOPOLOGY = 14, F_CACHE = 20,
    F_SAMPLE_TIME = 21, F_CLOCKID = 23, F_DIR_FORMAT = 24, F_COMPRESSED = 27,
    F_CLOCK_DATA = 29, F_LAST = 256,
};

/* callchain context markers (PERF_CONTEXT_*), as u64 */
#define CTX_MAX ((uint64_t)-4095)
#define CTX_HV ((uint64_t)-32)
#define CTX_KERNEL ((uint64_t)-128)
#define CTX_USER ((uint64_t)-512)
#define CTX_GUEST_KERNEL ((uint64_t)-2176)
#define CTX_GUEST_USER ((uint64_t)-2560)

/* cpumode codes (PERF_RECORD_MISC_*), also the callchain_context values */
enum { MODE_UNKNOWN = 0, MODE_KERNEL = 1, MODE_USER = 2, MODE_HV = 3, MODE_GUEST_KERNEL = 4,
       MODE_GUEST_USER = 5 };
#define MISC_CPUMODE_MASK 7
#define MISC_COMM_EXEC (1u << 13)
#define MISC_BUILD_ID_SIZE (1u << 15)
#define MISC_LOST_SAMPLES_BPF (1u << 15)

#define NO_MODIFIERS (-1)

typedef struct {
    td_perf_attr pub;
    uint32_t size;              /* its perf_event_attr's own size */
    uint64_t flags, branch_sample_type, regs_user, regs_intr;
    int sample_id_size;         /* bytes of the sample_id trailer of other records */
    int id_pos;                 /* u64 index of the event id in a sample, -1 */
    int is_pos;                 /* ... counted from the end of a sample_id trailer, -1 */
    int modifiers_at;           /* where the modifiers start in pub.name, NO_MODIFIERS */
    int has_format;             /* a tracepoint with a format in the tracing data */
    int64_t bad_payloads;       /* its samples whose payload is another tracepoint */
} Attr;

typedef struct {
    uint64_t id;
    int attr;
} IdMap;

typedef struct {
    int32_t tid;
    int64_t ts;                 /* NO_TIME: from the start */
    int64_t seq;                /* file order, for equal times */
    const char *comm;           /* owned by the file, one per entry */
} CommAt;

/* A range of the record stream, decoded by one task. */
typedef struct {
    uint64_t start, end;        /* file offsets of whole records */
} Range;

struct PerfFile {
    int swap, pipe, compressed;
    uint64_t data_start, data_end;      /* the record stream's file offsets */
    Attr *attrs;
    int nattrs;
    IdMap *ids;
    size_t nids;
    int id_mode;                /* 0: one attribute; 1: IDENTIFIER; 2: ID at id_pos */
    int tracepoints;            /* attributes of tracepoints */
    td_perf_info info;
    Buf packages, dies, threads, numa, cache, build_ids, core_id, socket_id, die_id;
    /* task names in time: sorted by (tid, ts, seq) */
    CommAt *comms;
    size_t ncomms, comms_cap;
    int64_t seq;
    Buf fork_rows;              /* pass 1: (ts, seq, pid, ppid, tid, ptid) for the names */
    /* ordering (FINISHED_ROUND, as perf's ordered events flush) */
    int64_t max_ts, next_flush, last_flush;
    int64_t first_ts, last_ts;
    Range *ranges;
    int nranges;
    /* the rounds: file offsets after each top-level FINISHED_ROUND, and per round (the
       records up to each, then the tail) the span of its samples' times (INT64_MAX,
       INT64_MIN: none); a time-range read decodes the rounds that meet it */
    Buf round_ends, round_spans;
    int64_t round_lo, round_hi;         /* pass 1: the current round's span so far */
    uint64_t zcap;              /* bytes one compressed record may decompress to */
    int64_t bad_payloads;       /* tracepoint samples left out: payload not theirs */
    uint64_t bad_payload_off;   /* the first one's file offset */
    uint32_t bad_payload_type;  /* ... its payload's common_type */
    int bad_payload_attr;
    int64_t tp_samples;         /* tracepoint samples with a payload checked */
    Buf lost_rows;              /* LOST: (ts, cpu, count) triples, int64 */
    Buf lost_sample_rows;       /* LOST_SAMPLES: (id, cpu or -1, count) */
    Buf id_cpu;                 /* ID_INDEX: (id, cpu) pairs */
    size_t id_cpu_sorted;       /* pairs sorted by id so far */
    int64_t lost_unknown_cpu;
    int max_cpu;
    int no_time_attr, no_cpu_attr;      /* an attribute of samples without time/CPU */
    int tracing_done;
};

/* ------------------------------------------------------------ helpers */

static inline uint64_t pld(const PerfFile *p, const uint8_t *q, int n)
{
    return ld(q, n, p->swap);
}

int perf_sniff(const uint8_t *data, size_t size)
{
    return size >= 8 && (!memcmp(data, "PERFILE2", 8) || !memcmp(data, "2ELIFREP", 8) ||
                         !memcmp(data, "PERFFILE", 8));
}

static const char *rec_name(uint32_t type)
{
    switch (type) {
    case PR_MMAP: return "MMAP";
    case PR_LOST: return "LOST";
    case PR_COMM: return "COMM";
    case PR_EXIT: return "EXIT";
    case PR_THROTTLE: return "THROTTLE";
    case PR_UNTHROTTLE: return "UNTHROTTLE";
    case PR_FORK: return "FORK";
    case PR_SAMPLE: return "SAMPLE";
    case PR_MMAP2: return "MMAP2";
    case PR_LOST_SAMPLES: return "LOST_SAMPLES";
    case PR_HEADER_ATTR: return "HEADER_ATTR";
    case PR_HEADER_TRACING_DATA: return "HEADER_TRACING_DATA";
    case PR_HEADER_BUILD_ID: return "HEADER_BUILD_ID";
    case PR_FINISHED_ROUND: return "FINISHED_ROUND";
    case PR_ID_INDEX: return "ID_INDEX";
    case PR_EVENT_UPDATE: return "EVENT_UPDATE";
    case PR_HEADER_FEATURE: return "HEADER_FEATURE";
    case PR_COMPRESSED: return "COMPRESSED";
    case PR_COMPRESSED2: return "COMPRESSED2";
    }
    return "record";
}

/* A perf string: u32 length (padding and NUL included), then the bytes. */
static int rd_pstr(Rd *r, const char **s, size_t *n, const char *what)
{
    uint64_t len;
    const uint8_t *b;
    if (rd_u(r, 4, &len, what) < 0 || rd_bytes(r, len > r->size ? r->size + 1 : (size_t)len,
                                                &b, what) < 0)
        return TD_FAIL;
    const uint8_t *nul = memchr(b, 0, (size_t)len);
    *s = (const char *)b;
    *n = nul ? (size_t)(nul - b) : (size_t)len;
    return 0;
}

static int own_pstr(td_file *f, Rd *r, const char **out, const char *what)
{
    const char *s;
    size_t n;
    if (rd_pstr(r, &s, &n, what) < 0)
        return TD_FAIL;
    *out = own_str(f, s, n);
    return *out ? TD_OK : TD_ENOMEM;
}

/* The int32 end offset of one more row of a binary column in b. */
static int put_end(Buf *b, size_t end)
{
    if (end > INT32_MAX)
        return TD_EINVAL;
    if (b->len == 0) {
        int32_t zero = 0;
        if (buf_put(b, &zero, 4) < 0)
            return TD_EINVAL;
    }
    int32_t e = (int32_t)end;
    return buf_put(b, &e, 4);
}

static int push(td_file *f, Buf *b, const void *v, size_t n)
{
    if (buf_put(b, v, n) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    return 0;
}

/* ------------------------------------------------------------ attributes */

static const char *const hw_names[] = {
    "cycles", "instructions", "cache-references", "cache-misses", "branches",
    "branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
    "ref-cycles"};
static const char *const sw_names[] = {
    "cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
    "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
    "bpf-output", "cgroup-switches"};

/* The name perf gives an attribute that the file does not name (pipe mode). */
static int attr_default_name(td_file *f, Attr *a)
{
    char name[128];
    const td_perf_attr *pa = &a->pub;
    if (pa->type == T_HARDWARE && pa->config < sizeof(hw_names) / sizeof(hw_names[0]))
        snprintf(name, sizeof(name), "%s", hw_names[pa->config]);
    else if (pa->type == T_SOFTWARE && pa->config < sizeof(sw_names) / sizeof(sw_names[0]))
        snprintf(name, sizeof(name), "%s", sw_names[pa->config]);
    else if (pa->type == T_RAW)
        snprintf(name, sizeof(name), "r%" PRIx64, pa->config);
    else if (pa->type == T_BREAKPOINT)
        snprintf(name, sizeof(name), "breakpoint");
    else
        snprintf(name, sizeof(name), "type%u-config0x%" PRIx64, pa->type, pa->config);
    size_t n = strlen(name);
    /* modifiers as evsel__add_modifiers() writes them: k/u/h, then p's */
    char mods[16];
    size_t m = 0;
    if (pa->exclude_user || pa->exclude_kernel || (a->flags >> 6 & 1)) {
        if (!pa->exclude_kernel)
            mods[m++] = 'k';
        if (!pa->exclude_user)
            mods[m++] = 'u';
        if (!(a->flags >> 6 & 1))
            mods[m++] = 'h';
    }
    for (int i = 0; i < pa->precise_ip && i < 3; i++)
        mods[m++] = 'p';
    if (m && n + 1 + m < sizeof(name)) {
        name[n] = ':';
        memcpy(name + n + 1, mods, m);
        name[n + 1 + m] = 0;
    }
    a->pub.name = own_str(f, name, strlen(name));
    return a->pub.name ? TD_OK : TD_ENOMEM;
}

/* One perf_event_attr of `asize` bytes at r's cursor (any perf version: fields
   past the attr's own size are zero). */
static int parse_attr(td_file *f, PerfFile *p, Rd *r, size_t asize, Attr *a)
{
    const uint8_t *b;
    if (rd_bytes(r, asize, &b, "event attribute") < 0)
        return TD_FAIL;
    uint8_t buf[136] = {0};
    uint32_t own_size = (uint32_t)pld(p, b + 4, 4);
    if (asize < 8)
        return seterr(f->err, "corrupt perf.data: an event attribute of %zu bytes", asize), TD_FAIL;
    if (own_size == 0)
        own_size = 64;      /* PERF_ATTR_SIZE_VER0 */
    if (own_size < 64 || own_size > asize)
        return seterr(f->err, "corrupt perf.data: an event attribute says it has %u bytes "
                      "(its record gives it %zu; at least 64)", own_size, asize), TD_FAIL;
    memcpy(buf, b, own_size < sizeof(buf) ? own_size : sizeof(buf));
    memset(a, 0, sizeof(*a));
    a->size = own_size;
    td_perf_attr *pa = &a->pub;
    pa->type = (uint32_t)pld(p, buf, 4);
    pa->config = pld(p, buf + 8, 8);
    pa->sample_period = pld(p, buf + 16, 8);
    pa->sample_type = pld(p, buf + 24, 8);
    pa->read_format = pld(p, buf + 32, 8);
    a->flags = pld(p, buf + 40, 8);
    a->branch_sample_type = pld(p, buf + 72, 8);
    a->regs_user = pld(p, buf + 80, 8);
    a->regs_intr = pld(p, buf + 96, 8);
    pa->freq = (int)(a->flags >> 10 & 1);
    pa->exclude_user = (int)(a->flags >> 4 & 1);
    pa->exclude_kernel = (int)(a->flags >> 5 & 1);
    pa->precise_ip = (int)(a->flags >> 15 & 3);
    pa->sample_id_all = (int)(a->flags >> 18 & 1);
    pa->use_clockid = (int)(a->flags >> 25 & 1);
    pa->clockid = (int32_t)pld(p, buf + 92, 4);
    pa->event = -1;
    a->modifiers_at = NO_MODIFIERS;
    uint64_t st = pa->sample_type;
    /* where the event id is: IDENTIFIER first; ID after IP, TID, TIME, ADDR */
    a->id_pos = st & S_IDENTIFIER ? 0
              : st & S_ID ? !!(st & S_IP) + !!(st & S_TID) + !!(st & S_TIME) + !!(st & S_ADDR)
              : -1;
    a->sample_id_size = 8 * (!!(st & S_TID) + !!(st & S_TIME) + !!(st & S_ID) +
                             !!(st & S_STREAM_ID) + !!(st & S_CPU) + !!(st & S_IDENTIFIER));
    a->is_pos = st & S_IDENTIFIER ? 1 : st & S_ID ? 1 + !!(st & S_STREAM_ID) + !!(st & S_CPU)
              : -1;
    return 0;
}

static int add_attr(td_file *f, PerfFile *p, Attr **out)
{
    if (p->nattrs >= MAX_ATTRS)
        return seterr(f->err, "corrupt perf.data: more than %d event attributes",
                      MAX_ATTRS), TD_FAIL;
    if (p->nattrs % 16 == 0) {
        Attr *n = realloc(p->attrs, ((size_t)p->nattrs + 16) * sizeof(*n));
        if (!n)
            return seterr(f->err, "out of memory"), TD_FAIL;
        p->attrs = n;
    }
    *out = &p->attrs[p->nattrs++];
    return 0;
}

static int add_ids(td_file *f, PerfFile *p, int attr, const uint8_t *b, uint64_t n)
{
    if (n > MAX_IDS || p->nids + n > MAX_IDS)
        return seterr(f->err, "corrupt perf.data: more than %u event ids", MAX_IDS), TD_FAIL;
    IdMap *m = realloc(p->ids, (p->nids + (size_t)n + 1) * sizeof(*m));
    if (!m)
        return seterr(f->err, "out of memory"), TD_FAIL;
    p->ids = m;
    for (uint64_t i = 0; i < n; i++)
        p->ids[p->nids++] = (IdMap){pld(p, b + 8 * i, 8), attr};
    p->attrs[attr].pub.nids += (int64_t)n;
    return 0;
}

static int idmap_cmp(const void *a, const void *b)
{
    const IdMap *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

#define UNKNOWN_ATTR (-1)        /* an event id no attribute has */
#define NO_ATTR (-2)             /* a record without an event: other_attr() */

static int attr_of_id(const PerfFile *p, uint64_t id)
{
    size_t lo = 0, hi = p->nids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->ids[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nids && p->ids[lo].id == id ? p->ids[lo].attr : UNKNOWN_ATTR;
}

/* How a record finds its attribute: by the only one, or by an id every
   attribute puts in the same place.  A file that allows neither is refused. */
static int choose_id_mode(td_file *f, PerfFile *p)
{
    if (p->nattrs == 0)
        return seterr(f->err, "corrupt perf.data: the file has no event attributes"), TD_FAIL;
    if (p->nids)
        qsort(p->ids, p->nids, sizeof(IdMap), idmap_cmp);
    for (size_t i = 1; i < p->nids; i++)
        if (p->ids[i].id == p->ids[i - 1].id && p->ids[i].attr != p->ids[i - 1].attr)
            return seterr(f->err, "corrupt perf.data: event id %" PRIu64 " belongs to two "
                          "event attributes", p->ids[i].id), TD_FAIL;
    if (p->nattrs == 1) {
        p->id_mode = 0;
        return 0;
    }
    int all_identifier = 1, same_pos = 1, same_is = 1;
    for (int i = 0; i < p->nattrs; i++) {
        Attr *a = &p->attrs[i];
        if (!(a->pub.sample_type & S_IDENTIFIER))
            all_identifier = 0;
        if (a->id_pos < 0 || a->id_pos != p->attrs[0].id_pos)
            same_pos = 0;
        if (a->pub.sample_id_all && (a->is_pos < 0 || a->is_pos != p->attrs[0].is_pos))
            same_is = 0;
    }
    if (all_identifier) {
        p->id_mode = 1;
    } else if (same_pos && same_is) {
        p->id_mode = 2;
    } else {
        return seterr(f->err, "unsupported perf.data: %d events whose records carry no event "
                      "id in one place (record with one event, or with -e ... and perf's "
                      "default sample ids), so no sample can be given to its event",
                      p->nattrs), TD_FAIL;
    }
    if (!p->nids)
        return seterr(f->err, "corrupt perf.data: %d event attributes but no event ids",
                      p->nattrs), TD_FAIL;
    return 0;
}

/* The event id a non-sample record's sample_id carries, UINT64_MAX if none. */
static uint64_t record_id(const PerfFile *p, const uint8_t *rec, size_t size)
{
    size_t back = 8 * (size_t)p->attrs[0].is_pos;
    if (p->attrs[0].is_pos < 0 || back + 8 > size)
        return UINT64_MAX;
    return pld(p, rec + size - back, 8);
}

static int pair_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The CPU ID_INDEX gives event id `id` (a per-CPU event of a task recorded without
   -a has no CPU in its samples, but its id is the one of that CPU's event); NO_CPU. */
#define NO_CPU (-1)             /* a sample's CPU column when it has none */

static int32_t cpu_of_id(PerfFile *p, uint64_t id)
{
    size_t n = p->id_cpu.len / 16;
    int64_t *ic = (int64_t *)p->id_cpu.data;
    if (p->id_cpu_sorted != n) {
        qsort(ic, n, 16, pair_cmp);
        p->id_cpu_sorted = n;
    }
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ic[2 * mid] < (int64_t)id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && ic[2 * lo] == (int64_t)id && ic[2 * lo + 1] >= 0 && ic[2 * lo + 1] < MAX_CPUS)
        return (int32_t)ic[2 * lo + 1];
    return NO_CPU;
}

/* The attribute of a SAMPLE record, UNKNOWN_ATTR when its id is unknown. */
static int sample_attr(const PerfFile *p, const uint8_t *rec, size_t size)
{
    if (p->id_mode == 0)
        return 0;
    size_t pos = 8 + 8 * (size_t)(p->id_mode == 1 ? 0 : p->attrs[0].id_pos);
    if (pos + 8 > size)
        return UNKNOWN_ATTR;
    return attr_of_id(p, pld(p, rec + pos, 8));
}

/* The attribute of another kernel record (its sample_id trailer), UNKNOWN_ATTR unknown. */
static int other_attr(const PerfFile *p, const uint8_t *rec, size_t size)
{
    if (p->id_mode == 0)
        return 0;
    size_t back = 8 * (size_t)p->attrs[0].is_pos;
    if (p->attrs[0].is_pos < 0 || back + 8 > size)
        return UNKNOWN_ATTR;
    uint64_t id = pld(p, rec + size - back, 8);
    /* id 0: a record perf synthesized (the tasks and maps that existed when it
       started), whose sample_id perf leaves zero */
    return id == 0 ? NO_ATTR : attr_of_id(p, id);
}

/* --------------------------------------------------------------- samples */

typedef struct {
    uint64_t ip, addr, period, id;
    int64_t time;               /* NO_TIME when the sample has none */
    uint32_t pid, tid;
    int32_t cpu;                /* -1 when the sample has none */
    uint64_t nchain;
    const uint8_t *chain;       /* nchain u64 */
    uint32_t raw_size;
    const uint8_t *raw;
} Sample;

/* The fields of a SAMPLE record (rec[0..size)) that come before what we skip. */
static int parse_sample(const PerfFile *p, const Attr *a, const uint8_t *rec, size_t size,
                        Sample *s)
{
    const uint8_t *q = rec + 8, *end = rec + size;
    uint64_t st = a->pub.sample_type;
    memset(s, 0, sizeof(*s));
    s->time = NO_TIME;
    s->cpu = -1;
    s->period = a->pub.freq ? 0 : a->pub.sample_period;
#define NEED(n) do { if ((uint64_t)(end - q) < (uint64_t)(n)) return TD_EINVAL; } while (0)
#define U64(v) do { NEED(8); (v) = pld(p, q, 8); q += 8; } while (0)
    if (st & S_IDENTIFIER)
        U64(s->id);
    if (st & S_IP)
        U64(s->ip);
    if (st & S_TID) {
        NEED(8);
        s->pid = (uint32_t)pld(p, q, 4);
        s->tid = (uint32_t)pld(p, q + 4, 4);
        q += 8;
    }
    if (st & S_TIME) {
        uint64_t t;
        U64(t);
        s->time = (int64_t)(t & INT64_MAX);
    }
    if (st & S_ADDR)
        U64(s->addr);
    if (st & S_ID)
        U64(s->id);
    if (st & S_STREAM_ID) {
        uint64_t skip;
        U64(skip);
        (void)skip;
    }
    if (st & S_CPU) {
        NEED(8);
        s->cpu = (int32_t)pld(p, q, 4);
        q += 8;
    }
    if (st & S_PERIOD)
        U64(s->period);
    if (st & S_READ) {
        uint64_t rf = a->pub.read_format;
        uint64_t per = 8 * (1 + !!(rf & RF_ID) + !!(rf & RF_LOST));
        if (rf & RF_GROUP) {
            uint64_t nr;
            U64(nr);
            uint64_t head = 8 * (!!(rf & RF_ENABLED) + !!(rf & RF_RUNNING));
            NEED(head);
            q += head;
            if (nr > (uint64_t)(end - q) / per)
                return TD_EINVAL;
            q += nr * per;
        } else {
            uint64_t n = per + 8 * (!!(rf & RF_ENABLED) + !!(rf & RF_RUNNING));
            NEED(n);
            q += n;
        }
    }
    if (st & S_CALLCHAIN) {
        U64(s->nchain);
        if (s->nchain > (uint64_t)(end - q) / 8)
            return TD_EINVAL;
        s->chain = q;
        q += s->nchain * 8;
    }
    if (st & S_RAW) {
        NEED(4);
        s->raw_size = (uint32_t)pld(p, q, 4);
        q += 4;
        NEED(s->raw_size);
        s->raw = q;
        q += s->raw_size;
    }
    /* the fields after RAW are not used, but measured: a sample must end where its
       fields end (a damaged size would otherwise be read as a longer record) */
    uint64_t n;
    if (st & S_BRANCH_STACK) {
        U64(n);
        if (a->branch_sample_type & BRANCH_HW_INDEX) {
            NEED(8);
            q += 8;
        }
        uint64_t per = 24 + (a->branch_sample_type & BRANCH_COUNTERS ? 8 : 0);
        if (n > (uint64_t)(end - q) / per)
            return TD_EINVAL;
        q += n * per;
    }
    if (st & S_REGS_USER) {
        U64(n);
        if (n) {
            NEED(8 * (uint64_t)__builtin_popcountll(a->regs_user));
            q += 8 * __builtin_popcountll(a->regs_user);
        }
    }
    if (st & S_STACK_USER) {
        U64(n);
        NEED(n);
        q += n;
        if (n) {
            NEED(8);
            q += 8;
        }
    }
    int fixed = !!(st & (S_WEIGHT | S_WEIGHT_STRUCT)) + !!(st & S_DATA_SRC) +
                !!(st & S_TRANSACTION);
    NEED(8 * fixed);
    q += 8 * fixed;
    if (st & S_REGS_INTR) {
        U64(n);
        if (n) {
            NEED(8 * (uint64_t)__builtin_popcountll(a->regs_intr));
            q += 8 * __builtin_popcountll(a->regs_intr);
        }
    }
    fixed = !!(st & S_PHYS_ADDR) + !!(st & S_CGROUP) + !!(st & S_DATA_PAGE_SIZE) +
            !!(st & S_CODE_PAGE_SIZE);
    NEED(8 * fixed);
    q += 8 * fixed;
    if (st & S_AUX) {
        U64(n);
        NEED(n);
        q += n;
    }
#undef U64
#undef NEED
    return q == end ? TD_OK : TD_EINVAL;
}

/* The sample_id trailer of a non-sample record: time, tid, cpu.  TD_OK, or TD_EINVAL when
   the record is too short for it. */
static int parse_sample_id(const PerfFile *p, const Attr *a, const uint8_t *rec, size_t size,
                           size_t body, Sample *s)
{
    memset(s, 0, sizeof(*s));
    s->time = NO_TIME;
    s->cpu = -1;
    if (!a || !a->pub.sample_id_all)
        return 0;
    if (body > size || (size_t)a->sample_id_size > size - body)
        return TD_EINVAL;
    const uint8_t *q = rec + size;
    uint64_t st = a->pub.sample_type;
    if (st & S_IDENTIFIER)
        q -= 8;
    if (st & S_CPU) {
        q -= 8;
        s->cpu = (int32_t)pld(p, q, 4);
    }
    if (st & S_STREAM_ID)
        q -= 8;
    if (st & S_ID)
        q -= 8;
    if (st & S_TIME) {
        q -= 8;
        s->time = (int64_t)(pld(p, q, 8) & INT64_MAX);
    }
    if (st & S_TID) {
        q -= 8;
        s->pid = (uint32_t)pld(p, q, 4);
        s->tid = (uint32_t)pld(p, q + 4, 4);
    }
    return 0;
}

/* ------------------------------------------------------------- features */

static int feature_cpu_topology(td_file *f, PerfFile *p, Rd *r)
{
    td_perf_info *in = &p->info;
    Buf *lists[2] = {&p->packages, &p->threads};
    int *counts[2] = {&in->n_packages, &in->n_threads};
    for (int k = 0; k < 2; k++) {
        uint64_t n;
        if (rd_u(r, 4, &n, "CPU_TOPOLOGY count") < 0)
            return TD_FAIL;
        if (n > MAX_CPUS)
            return seterr(f->err, "corrupt perf.data: CPU_TOPOLOGY lists %" PRIu64
                          " sibling sets", n), TD_FAIL;
        for (uint64_t i = 0; i < n; i++) {
            const char *s;
            if (own_pstr(f, r, &s, "CPU_TOPOLOGY sibling list") < 0 ||
                push(f, lists[k], &s, sizeof(s)) < 0)
                return TD_FAIL;
        }
        *counts[k] = (int)n;
    }
    /* then, where the file has them (perf >= 4.19): core and socket id per CPU */
    int ncpu = in->nr_cpus_avail;
    if (r->size - r->pos >= (size_t)ncpu * 8 && ncpu > 0) {
        for (int c = 0; c < ncpu; c++) {
            uint64_t core, sock;
            if (rd_u(r, 4, &core, "core id") < 0 || rd_u(r, 4, &sock, "socket id") < 0)
                return TD_FAIL;
            int32_t c32 = (int32_t)core, s32 = (int32_t)sock;
            if (push(f, &p->core_id, &c32, 4) < 0 || push(f, &p->socket_id, &s32, 4) < 0)
                return TD_FAIL;
        }
        in->n_cpu_ids = ncpu;
        /* and die siblings and die ids (perf >= 5.4) */
        if (r->size - r->pos >= 4) {
            uint64_t n;
            if (rd_u(r, 4, &n, "CPU_TOPOLOGY die count") < 0)
                return TD_FAIL;
            if (n > MAX_CPUS)
                return seterr(f->err, "corrupt perf.data: CPU_TOPOLOGY lists %" PRIu64
                              " dies", n), TD_FAIL;
            for (uint64_t i = 0; i < n; i++) {
                const char *s;
                if (own_pstr(f, r, &s, "CPU_TOPOLOGY die list") < 0 ||
                    push(f, &p->dies, &s, sizeof(s)) < 0)
                    return TD_FAIL;
            }
            in->n_dies = (int)n;
            if (r->size - r->pos >= (size_t)ncpu * 4) {
                for (int c = 0; c < ncpu; c++) {
                    uint64_t die;
                    if (rd_u(r, 4, &die, "die id") < 0)
                        return TD_FAIL;
                    int32_t d32 = (int32_t)die;
                    if (push(f, &p->die_id, &d32, 4) < 0)
                        return TD_FAIL;
                }
            }
        }
    }
    return 0;
}

static int feature_numa(td_file *f, PerfFile *p, Rd *r)
{
    uint64_t n;
    if (rd_u(r, 4, &n, "NUMA_TOPOLOGY count") < 0)
        return TD_FAIL;
    if (n > MAX_CPUS)
        return seterr(f->err, "corrupt perf.data: NUMA_TOPOLOGY lists %" PRIu64 " nodes",
                      n), TD_FAIL;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t node, total, fr;
        td_perf_numa nm;
        if (rd_u(r, 4, &node, "NUMA node") < 0 || rd_u(r, 8, &total, "NUMA memory") < 0 ||
            rd_u(r, 8, &fr, "NUMA free memory") < 0 ||
            own_pstr(f, r, &nm.cpus, "NUMA cpu list") < 0)
            return TD_FAIL;
        nm.node = (int32_t)node;
        nm.mem_total_kb = total;
        nm.mem_free_kb = fr;
        if (push(f, &p->numa, &nm, sizeof(nm)) < 0)
            return TD_FAIL;
    }
    p->info.n_numa = (int)n;
    return 0;
}

static int feature_cache(td_file *f, PerfFile *p, Rd *r)
{
    uint64_t version, n;
    if (rd_u(r, 4, &version, "CACHE version") < 0 || rd_u(r, 4, &n, "CACHE count") < 0)
        return TD_FAIL;
    if (version != 1)
        return td_warn(f, "the CACHE section has version %" PRIu64 " (known: 1): the file's "
                       "caches are not used", version) < 0 ? seterr(f->err, "out of memory"), -1
                                                            : 0;
    if (n > MAX_CPUS)
        return seterr(f->err, "corrupt perf.data: CACHE lists %" PRIu64 " caches", n), TD_FAIL;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t level, line, sets, ways;
        td_perf_cache c;
        if (rd_u(r, 4, &level, "cache level") < 0 || rd_u(r, 4, &line, "cache line size") < 0 ||
            rd_u(r, 4, &sets, "cache sets") < 0 || rd_u(r, 4, &ways, "cache ways") < 0 ||
            own_pstr(f, r, &c.type, "cache type") < 0 ||
            own_pstr(f, r, &c.size, "cache size") < 0 ||
            own_pstr(f, r, &c.cpus, "cache cpu list") < 0)
            return TD_FAIL;
        c.level = (uint32_t)level;
        c.line_size = (uint32_t)line;
        c.sets = (uint32_t)sets;
        c.ways = (uint32_t)ways;
        if (push(f, &p->cache, &c, sizeof(c)) < 0)
            return TD_FAIL;
    }
    p->info.n_cache = (int)n;
    return 0;
}

static int build_id_entry(td_file *f, PerfFile *p, Rd *r)
{
    uint64_t type, misc, size, pid;
    size_t start = r->pos;
    const uint8_t *id, *name;
    if (rd_u(r, 4, &type, "build id header") < 0 || rd_u(r, 2, &misc, "build id header") < 0 ||
        rd_u(r, 2, &size, "build id header") < 0)
        return TD_FAIL;
    if (size < 8 + 4 + 24 || size > r->size - start)
        return seterr(f->err, "corrupt perf.data: a build id entry at offset %" PRIu64
                      " says %" PRIu64 " bytes", r->base + start, size), TD_FAIL;
    if (rd_u(r, 4, &pid, "build id pid") < 0 || rd_bytes(r, 24, &id, "build id") < 0 ||
        rd_bytes(r, (size_t)size - 36, &name, "build id file name") < 0)
        return TD_FAIL;
    td_perf_build_id b;
    memset(&b, 0, sizeof(b));
    b.pid = (int32_t)pid;
    b.misc = (uint16_t)misc;
    b.size = misc & MISC_BUILD_ID_SIZE ? id[20] : 20;
    if (b.size > 20)
        b.size = 20;
    memcpy(b.id, id, 20);
    const uint8_t *nul = memchr(name, 0, (size_t)size - 36);
    b.filename = own_str(f, (const char *)name, nul ? (size_t)(nul - name) : (size_t)size - 36);
    if (!b.filename)
        return TD_ENOMEM;
    return push(f, &p->build_ids, &b, sizeof(b));
}

/* EVENT_DESC: the names of the attributes (matched by their ids). */
static int feature_event_desc(td_file *f, PerfFile *p, Rd *r)
{
    uint64_t n, asize;
    if (rd_u(r, 4, &n, "EVENT_DESC count") < 0 || rd_u(r, 4, &asize, "EVENT_DESC size") < 0)
        return TD_FAIL;
    if (n > MAX_ATTRS || asize < 8 || asize > MAX_ATTR_BYTES)
        return seterr(f->err, "corrupt perf.data: EVENT_DESC says %" PRIu64 " events of %"
                      PRIu64 " bytes", n, asize), TD_FAIL;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *b;
        uint64_t nids;
        const char *name;
        if (rd_bytes(r, (size_t)asize, &b, "EVENT_DESC attribute") < 0 ||
            rd_u(r, 4, &nids, "EVENT_DESC id count") < 0 ||
            own_pstr(f, r, &name, "EVENT_DESC name") < 0)
            return TD_FAIL;
        if (nids > (r->size - r->pos) / 8)
            return rd_fail(r, "more event ids than bytes");
        const uint8_t *ids;
        if (rd_bytes(r, (size_t)nids * 8, &ids, "EVENT_DESC ids") < 0)
            return TD_FAIL;
        /* the attribute: by its first id, else by position */
        int a = nids ? attr_of_id(p, pld(p, ids, 8)) : UNKNOWN_ATTR;
        if (a < 0 && i < (uint64_t)p->nattrs && (!nids || !p->nids))
            a = (int)i;
        if (a >= 0 && name[0])
            p->attrs[a].pub.name = name;
    }
    return 0;
}

static int feature_compressed(td_file *f, PerfFile *p, Rd *r)
{
    uint64_t version, type, level, ratio, mmap_len;
    if (rd_u(r, 4, &version, "COMPRESSED version") < 0 || rd_u(r, 4, &type, "COMPRESSED type") ||
        rd_u(r, 4, &level, "COMPRESSED level") || rd_u(r, 4, &ratio, "COMPRESSED ratio") ||
        rd_u(r, 4, &mmap_len, "COMPRESSED mmap size"))
        return TD_FAIL;
    if (type != 1)      /* PERF_COMP_ZSTD */
        return seterr(f->err, "unsupported perf.data: records compressed with method %" PRIu64
                      " (known: 1, zstd)", type), TD_FAIL;
    /* the bytes a COMPRESSED record may decompress to (walk_compressed): perf's
       buffer size, (2^n + 1) pages, no more than the kernel's largest buffer */
    if (mmap_len < 2 * 4096 || mmap_len > MAX_COMP_MMAP_LEN)
        return seterr(f->err, "corrupt perf.data: the COMPRESSED feature says perf's buffers "
                      "held %" PRIu64 " bytes (mmap_len; perf's are 8 KiB to 2 GiB and a page)",
                      mmap_len), TD_FAIL;
    p->info.compressed = 1;
    p->info.comp_level = (int)level;
    p->info.comp_ratio = (int)ratio;
    p->info.comp_mmap_len = (uint32_t)mmap_len;
    return 0;
}

/* The tracing data (trace.dat's head): formats, kallsyms (perf writes none),
   printk formats, saved cmdlines (from version 0.6). */
static int read_tracing_data(td_file *f, PerfFile *p, Rd *r)
{
    if (p->tracing_done)
        return 0;
    const char *ver;
    if (read_tracing_header(f, r, &ver) < 0)
        return TD_FAIL;
    if (strcmp(ver, "0.5") && strcmp(ver, "0.6"))
        return seterr(f->err, "unsupported perf.data: tracing data version '%.16s' (known: "
                      "0.5, 0.6)", ver), TD_FAIL;
    p->info.tracing_version = own_str(f, ver, strlen(ver));
    if (!p->info.tracing_version)
        return TD_ENOMEM;
    if (read_header_info(f, r) < 0 || read_ftrace_formats(f, r) < 0 ||
        read_event_formats(f, r) < 0 || read_kallsyms(f, r) < 0)
        return TD_FAIL;
    uint64_t n;
    const uint8_t *text;
    if (rd_u(r, 4, &n, "printk formats size") < 0 ||
        rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "printk formats") < 0)
        return TD_FAIL;
    if (!strcmp(ver, "0.6") && read_cmdlines(f, r) < 0)
        return TD_FAIL;
    p->tracing_done = 1;
    p->info.has_tracing_data = 1;
    return 0;
}

/* One feature section (file mode) or HEADER_FEATURE record body (pipe mode). */
static int read_feature(td_file *f, PerfFile *p, int feat, Rd *r)
{
    td_perf_info *in = &p->info;
    switch (feat) {
    case F_TRACING_DATA:
        return read_tracing_data(f, p, r);
    case F_BUILD_ID:
        while (r->pos < r->size)
            if (build_id_entry(f, p, r) < 0)
                return TD_FAIL;
        in->n_build_ids = (int)(p->build_ids.len / sizeof(td_perf_build_id));
        return 0;
    case F_HOSTNAME:
        return own_pstr(f, r, &in->hostname, "HOSTNAME");
    case F_OSRELEASE:
        return own_pstr(f, r, &in->osrelease, "OSRELEASE");
    case F_VERSION:
        return own_pstr(f, r, &in->perf_version, "VERSION");
    case F_ARCH:
        return own_pstr(f, r, &in->arch, "ARCH");
    case F_CPUDESC:
        return own_pstr(f, r, &in->cpudesc, "CPUDESC");
    case F_CPUID:
        return own_pstr(f, r, &in->cpuid, "CPUID");
    case F_NRCPUS: {
        uint64_t avail, online;
        if (rd_u(r, 4, &avail, "NRCPUS") < 0 || rd_u(r, 4, &online, "NRCPUS") < 0)
            return TD_FAIL;
        if (avail > MAX_CPUS || online > MAX_CPUS)
            return seterr(f->err, "corrupt perf.data: NRCPUS says %" PRIu64 " CPUs (%" PRIu64
                          " online)", avail, online), TD_FAIL;
        in->nr_cpus_avail = (int)avail;
        in->nr_cpus_online = (int)online;
        return 0;
    }
    case F_TOTAL_MEM:
        return rd_u(r, 8, &in->total_mem_kb, "TOTAL_MEM");
    case F_CMDLINE: {
        uint64_t n;
        Buf line = {0};
        if (rd_u(r, 4, &n, "CMDLINE count") < 0)
            return TD_FAIL;
        if (n > r->size)
            return rd_fail(r, "more arguments than bytes");
        for (uint64_t i = 0; i < n; i++) {
            const char *s;
            size_t len;
            if (rd_pstr(r, &s, &len, "CMDLINE argument") < 0 ||
                (i && buf_put(&line, " ", 1) < 0) || buf_put(&line, s, len) < 0) {
                buf_free(&line);
                return f->err[0] ? -1 : (seterr(f->err, "out of memory"), -1);
            }
        }
        in->cmdline = own_str(f, line.data ? line.data : "", line.len);
        buf_free(&line);
        return in->cmdline ? TD_OK : TD_ENOMEM;
    }
    case F_EVENT_DESC:
        return feature_event_desc(f, p, r);
    case F_CPU_TOPOLOGY:
        return feature_cpu_topology(f, p, r);
    case F_NUMA_TOPOLOGY:
        return feature_numa(f, p, r);
    case F_CACHE:
        return feature_cache(f, p, r);
    case F_SAMPLE_TIME:
        if (rd_u(r, 8, &in->sample_time_first, "SAMPLE_TIME") < 0 ||
            rd_u(r, 8, &in->sample_time_last, "SAMPLE_TIME") < 0)
            return TD_FAIL;
        in->has_sample_time = 1;
        return 0;
    case F_CLOCKID:
        if (rd_u(r, 8, &in->clockid, "CLOCKID") < 0)
            return TD_FAIL;
        in->has_clockid = 1;
        return 0;
    case F_CLOCK_DATA: {
        uint64_t version;
        if (rd_u(r, 4, &version, "CLOCK_DATA version") < 0)
            return TD_FAIL;
        if (version != 1)
            return 0;
        if (rd_u(r, 4, &in->clock_data_clockid, "CLOCK_DATA clock") < 0 ||
            rd_u(r, 8, &in->clock_tod_ns, "CLOCK_DATA time of day") < 0 ||
            rd_u(r, 8, &in->clock_clockid_ns, "CLOCK_DATA clock time") < 0)
            return TD_FAIL;
        in->has_clock_data = 1;
        return 0;
    }
    case F_DIR_FORMAT:
        return seterr(f->err, "unsupported perf.data: this is the header of a directory "
                      "(perf record --threads): give the directory, not its data file"), TD_FAIL;
    case F_COMPRESSED:
        return feature_compressed(f, p, r);
    }
    return 0;       /* features we do not need: checked to lie in the file, not read */
}

static int read_file_header(td_file *f, PerfFile *p)
{
    Rd r = {f->data, f->size, 8, 0, "file header", p->swap, f->err, "perf.data"};
    uint64_t hsize, attr_size, a_off, a_size, d_off, d_size, t_off, t_size;
    if (rd_u(&r, 8, &hsize, "header size") < 0)
        return TD_FAIL;
    if (hsize == PIPE_HEADER_SIZE) {
        p->pipe = 1;
        p->data_start = PIPE_HEADER_SIZE;
        p->data_end = f->size;
        return 0;
    }
    if (hsize != PERF_HEADER_SIZE && hsize != PERF_HEADER_OLD)
        return seterr(f->err, "corrupt perf.data: the header says it has %" PRIu64 " bytes "
                      "(%u, %u or %u in the known versions)", hsize, PIPE_HEADER_SIZE,
                      PERF_HEADER_OLD, PERF_HEADER_SIZE), TD_FAIL;
    if (rd_u(&r, 8, &attr_size, "attribute size") || rd_u(&r, 8, &a_off, "attributes") ||
        rd_u(&r, 8, &a_size, "attributes") || rd_u(&r, 8, &d_off, "data section") ||
        rd_u(&r, 8, &d_size, "data section") || rd_u(&r, 8, &t_off, "event types") ||
        rd_u(&r, 8, &t_size, "event types"))
        return TD_FAIL;
    uint64_t bits[4] = {0};
    if (hsize == PERF_HEADER_SIZE)
        for (int i = 0; i < 4; i++)
            if (rd_u(&r, 8, &bits[i], "feature bits") < 0)
                return TD_FAIL;
    if (d_off > f->size || d_size > f->size - d_off)
        return seterr(f->err, "truncated or corrupt perf.data: the data section (%" PRIu64
                      " bytes at offset %" PRIu64 ") runs past the end of the file (%zu bytes)",
                      d_size, d_off, f->size), TD_FAIL;
    if (d_size == 0 && d_off == 0)
        return seterr(f->err, "truncated perf.data: the header has no data section (perf "
                      "record did not finish writing the file)"), TD_FAIL;
    if (a_off > f->size || a_size > f->size - a_off)
        return seterr(f->err, "truncated or corrupt perf.data: the attributes (%" PRIu64
                      " bytes at offset %" PRIu64 ") run past the end of the file", a_size,
                      a_off), TD_FAIL;
    if (attr_size < 16 + 64 || attr_size > MAX_ATTR_BYTES)
        return seterr(f->err, "corrupt perf.data: attributes of %" PRIu64 " bytes",
                      attr_size), TD_FAIL;
    if (a_size % attr_size)
        return seterr(f->err, "corrupt perf.data: the attribute section (%" PRIu64 " bytes) is "
                      "not a whole number of %" PRIu64 "-byte attributes", a_size,
                      attr_size), TD_FAIL;
    p->data_start = d_off;
    p->data_end = d_off + d_size;
    Rd ar = {f->data + a_off, (size_t)a_size, 0, a_off, "attributes", p->swap, f->err,
             "perf.data"};
    for (uint64_t i = 0; i < a_size / attr_size; i++) {
        Attr *a;
        uint64_t ids_off, ids_size;
        if (add_attr(f, p, &a) < 0 || parse_attr(f, p, &ar, (size_t)attr_size - 16, a) < 0 ||
            rd_u(&ar, 8, &ids_off, "attribute ids") < 0 || rd_u(&ar, 8, &ids_size, "attribute ids"))
            return TD_FAIL;
        if (ids_off > f->size || ids_size > f->size - ids_off || ids_size % 8)
            return seterr(f->err, "corrupt perf.data: the ids of attribute %" PRIu64 " (%" PRIu64
                          " bytes at offset %" PRIu64 ") are not inside the file", i, ids_size,
                          ids_off), TD_FAIL;
        if (add_ids(f, p, p->nattrs - 1, f->data + ids_off, ids_size / 8) < 0)
            return TD_FAIL;
    }
    /* the feature sections: a table after the data, one entry per bit set */
    uint64_t at = p->data_end;
    for (int feat = 1; feat < F_LAST; feat++) {
        if (!(bits[feat / 64] >> (feat % 64) & 1))
            continue;
        Rd t = {f->data, f->size, (size_t)at, 0, "feature table", p->swap, f->err, "perf.data"};
        uint64_t off, size;
        if (rd_u(&t, 8, &off, "feature section") < 0 || rd_u(&t, 8, &size, "feature section"))
            return TD_FAIL;
        at += 16;
        if (off > f->size || size > f->size - off || size > MAX_FEATURE_BYTES)
            return seterr(f->err, "truncated or corrupt perf.data: feature %d (%" PRIu64
                          " bytes at offset %" PRIu64 ") is not inside the file (%zu bytes)",
                          feat, size, off, f->size), TD_FAIL;
        Rd fr = {f->data + off, (size_t)size, 0, off, "feature section", p->swap, f->err,
                 "perf.data"};
        if (read_feature(f, p, feat, &fr) < 0)
            return TD_FAIL;
    }
    return 0;
}

/* ---------------------------------------------------------- the walker */

/* Walks the record stream (or a range of it), decompressing COMPRESSED
   records through a bounded window; calls fn for every other record. */
typedef struct Walk Walk;
typedef int (*RecFn)(Walk *wk, uint32_t type, uint16_t misc, const uint8_t *rec, size_t size,
                     uint64_t foff);

struct Walk {
    td_file *f;
    PerfFile *p;
    RecFn fn;
    void *ctx;
    char *err;
    ZSTD_DStream *zs;
    uint8_t *win;               /* ZWINDOW + a record's room */
    size_t carry;               /* bytes of an unfinished record at win[0] */
    int block_open;             /* the zstd stream stopped inside a block */
    uint64_t zrec_off;          /* the COMPRESSED record the window's bytes came from */
    int64_t *bytes_done;        /* progress, atomic */
    volatile int *cancel;
    int headers_only;           /* pipe mode's first walk: compressed records skipped */
    Buf *round_ends;            /* pass 1: file offsets after top-level FINISHED_ROUNDs */
    uint64_t zin_total, zout_total;     /* COMPRESSED records' bytes and their output */
};

/* Pass 1: a round ends; its samples' time span is kept. */
static int end_round(PerfFile *p)
{
    int64_t span[2] = {p->round_lo, p->round_hi};
    p->round_lo = INT64_MAX;
    p->round_hi = INT64_MIN;
    return buf_put(&p->round_spans, span, 16);
}

static int walk_fail(Walk *wk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int walk_fail(Walk *wk, const char *fmt, ...)
{
    if (!wk->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(wk->err, TD_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return REC_DAMAGE;
}

static void walk_free(Walk *wk)
{
    if (wk->zs)
        ZSTD_freeDStream(wk->zs);
    free(wk->win);
    wk->zs = NULL;
    wk->win = NULL;
}

/* Record types perf and the kernel define (the kernel's up to PERF_RECORD_MAX, perf's
   own from PERF_RECORD_USER_TYPE_START): others are skipped and counted, a type no
   perf writes (0, 128 and up) is damage: a size that sent the walk into the middle
   of a record. */
#define KERNEL_TYPES_END 24
#define USER_TYPES_END 84
#define MAX_TYPE 128

static int known_type(uint32_t type)
{
    return (type > 0 && type < KERNEL_TYPES_END) || (type >= PR_HEADER_ATTR && type < USER_TYPES_END);
}

/* The checks of a record header every record passes: a type perf could write, and
   the kernel's own records whole u64s (perf's may not be: COMPRESSED, features). */
static int check_header(Walk *wk, uint32_t type, size_t size, uint64_t foff, int inside)
{
    const char *where = inside ? " in the compressed data of the record at offset" : " at offset";
    if (type == 0 || type >= MAX_TYPE)
        return walk_fail(wk, "corrupt perf.data: a record%s %" PRIu64 " has type %u, which "
                         "no perf writes (a damaged size before it?)", where, foff, type);
    if (type < PR_HEADER_ATTR && size % 8)
        return walk_fail(wk, "corrupt perf.data: a %s record%s %" PRIu64 " has %zu bytes, not "
                         "a whole number of u64s", rec_name(type), where, foff, size);
    return 0;
}

/* Records inside win[0..n): whole ones go to fn, the rest stays as carry. */
static int walk_window(Walk *wk, size_t n)
{
    size_t pos = 0;
    while (n - pos >= 8) {
        const uint8_t *rec = wk->win + pos;
        uint32_t type = (uint32_t)pld(wk->p, rec, 4);
        uint16_t misc = (uint16_t)pld(wk->p, rec + 4, 2);
        size_t size = (size_t)pld(wk->p, rec + 6, 2);
        if (size < 8)
            return walk_fail(wk, "corrupt perf.data: a record of %zu bytes (type %u) in the "
                             "compressed data of the record at offset %" PRIu64, size, type,
                             wk->zrec_off);
        if (size > n - pos)
            break;
        if (check_header(wk, type, size, wk->zrec_off, 1) < 0)
            return REC_DAMAGE;
        if (type == PR_COMPRESSED || type == PR_COMPRESSED2 || type == PR_HEADER_TRACING_DATA)
            return walk_fail(wk, "corrupt perf.data: a %s record inside the compressed data "
                             "of the record at offset %" PRIu64, rec_name(type), wk->zrec_off);
        int rc = wk->fn(wk, type, misc, rec, size, wk->zrec_off);
        if (rc < 0)
            return rc;
        pos += size;
    }
    memmove(wk->win, wk->win + pos, n - pos);
    wk->carry = n - pos;
    return 0;
}

static int walk_compressed(Walk *wk, uint32_t type, const uint8_t *rec, size_t size,
                           uint64_t foff)
{
    const uint8_t *src = rec + 8;
    size_t n = size - 8;
    if (type == PR_COMPRESSED2) {
        if (size < 16)
            return walk_fail(wk, "corrupt perf.data: a COMPRESSED2 record of %zu bytes at "
                             "offset %" PRIu64, size, foff);
        uint64_t dsize = pld(wk->p, rec + 8, 8);
        if (dsize > size - 16)
            return walk_fail(wk, "corrupt perf.data: the COMPRESSED2 record at offset %" PRIu64
                             " says %" PRIu64 " bytes of data in its %zu", foff, dsize, size - 16);
        src = rec + 16;
        n = (size_t)dsize;
    }
    if (!wk->zs) {
        wk->zs = ZSTD_createDStream();
        wk->win = malloc(ZWINDOW + 65536);
        if (!wk->zs || !wk->win || ZSTD_isError(ZSTD_initDStream(wk->zs)))
            return REC_NOMEM;
    }
    wk->zrec_off = foff;
    if (!wk->p->zcap)
        return walk_fail(wk, "corrupt perf.data: a COMPRESSED record at offset %" PRIu64 " in a "
                         "file without the COMPRESSED feature (perf writes it with them: "
                         "without it, how far a record may decompress is unknown)", foff);
    wk->zin_total += size;
    ZSTD_inBuffer in = {src, n, 0};
    uint64_t out_total = 0;
    for (;;) {
        ZSTD_outBuffer out = {wk->win + wk->carry, ZWINDOW, 0};
        size_t zr = ZSTD_decompressStream(wk->zs, &out, &in);
        if (ZSTD_isError(zr))
            return walk_fail(wk, "corrupt perf.data: the COMPRESSED record at offset %" PRIu64
                             " does not decompress (%s)", foff, ZSTD_getErrorName(zr));
        /* perf flushes its one stream after every record (its frame never ends):
           between records zstd waits for a block header (3 bytes) or a new frame
           (0); a larger hint is the rest of a block the data cut short */
        wk->block_open = zr > ZSTD_BLOCK_HEADER;
        out_total += out.pos;
        wk->zout_total += out.pos;
        if (out_total > wk->p->zcap)
            return walk_fail(wk, "corrupt perf.data: the COMPRESSED record at offset %" PRIu64
                             " decompresses to more than the %" PRIu64 " bytes of the buffer "
                             "perf compressed (the COMPRESSED feature's mmap_len): a "
                             "decompression bomb, which perf refuses too", foff, wk->p->zcap);
        if (wk->zout_total > ZOUT_FLOOR + ZRATIO_MAX * wk->zin_total)
            return walk_fail(wk, "corrupt perf.data: the COMPRESSED records up to offset %"
                             PRIu64 " (%" PRIu64 " bytes) decompress to more than %" PRIu64
                             " bytes (%d times their size and %d MiB): a decompression bomb "
                             "(perf's own compress 4 to 20 times)", foff, wk->zin_total,
                             ZOUT_FLOOR + ZRATIO_MAX * wk->zin_total, ZRATIO_MAX,
                             (int)(ZOUT_FLOOR >> 20));
        int rc = walk_window(wk, wk->carry + out.pos);
        if (rc < 0)
            return rc;
        if (in.pos == in.size && out.pos < ZWINDOW)
            break;          /* all input taken and zstd holds nothing back */
    }
    return 0;
}

/* Walk the records from *at to end of the file; 0 at the end, 1 when fn asked
   to pause after a top-level record (*at is then the next one), or < 0. */
static int walk_pausing(Walk *wk, uint64_t *at, uint64_t end)
{
    td_file *f = wk->f;
    PerfFile *p = wk->p;
    uint64_t pos = *at, ticked = pos;
    int paused = 0;
    while (pos < end) {
        if (wk->cancel && *wk->cancel)
            return REC_CANCELLED;
        if (end - pos < 8)
            return walk_fail(wk, "truncated perf.data: %" PRIu64 " bytes at offset %" PRIu64
                             " are less than a record header", end - pos, pos);
        const uint8_t *rec = f->data + pos;
        uint32_t type = (uint32_t)pld(p, rec, 4);
        uint16_t misc = (uint16_t)pld(p, rec + 4, 2);
        size_t size = (size_t)pld(p, rec + 6, 2);
        if (size < 8)
            return walk_fail(wk, "corrupt perf.data: the record at offset %" PRIu64 " (type %u)"
                             " says it has %zu bytes", pos, type, size);
        if (size > end - pos)
            return walk_fail(wk, "truncated perf.data: the %s record at offset %" PRIu64
                             " needs %zu bytes, the data has %" PRIu64 " left", rec_name(type),
                             pos, size, end - pos);
        if (check_header(wk, type, size, pos, 0) < 0)
            return REC_DAMAGE;
        uint64_t next = pos + size;
        if (type == PR_COMPRESSED || type == PR_COMPRESSED2) {
            int rc = wk->headers_only ? 0 : walk_compressed(wk, type, rec, size, pos);
            if (rc < 0)
                return rc;
        } else {
            if (type == PR_HEADER_TRACING_DATA) {
                /* its bytes follow the record */
                if (size < 12)
                    return walk_fail(wk, "corrupt perf.data: a HEADER_TRACING_DATA record of "
                                     "%zu bytes at offset %" PRIu64, size, pos);
                uint64_t tsize = pld(p, rec + 8, 4);
                if (tsize > end - next)
                    return walk_fail(wk, "truncated perf.data: the tracing data after offset %"
                                     PRIu64 " needs %" PRIu64 " bytes, the file has %" PRIu64
                                     " left", pos, tsize, end - next);
                next += tsize;
            }
            int rc = wk->fn(wk, type, misc, rec, size, pos);
            if (rc < 0)
                return rc;
            if (type == PR_FINISHED_ROUND && wk->round_ends &&
                (buf_put(wk->round_ends, &next, 8) || end_round(wk->p)))
                return REC_NOMEM;
            paused = rc > 0;
        }
        pos = next;
        if (wk->bytes_done && pos - ticked >= (1u << 20)) {
            __atomic_fetch_add(wk->bytes_done, (int64_t)(pos - ticked), __ATOMIC_RELAXED);
            ticked = pos;
        }
        if (paused)
            break;
    }
    if (wk->bytes_done)
        __atomic_fetch_add(wk->bytes_done, (int64_t)(pos - ticked), __ATOMIC_RELAXED);
    *at = pos;
    return paused;
}

/* Walk the records in [start, end) of the file. */
static int walk(Walk *wk, uint64_t start, uint64_t end)
{
    int rc;
    while ((rc = walk_pausing(wk, &start, end)) > 0)
        ;
    return rc;
}



/* After the last range: no record may be left half in the decompressed data. */
static int walk_end(Walk *wk)
{
    if (wk->block_open)
        return walk_fail(wk, "truncated perf.data: the compressed data ends inside a zstd "
                         "block (after the record at offset %" PRIu64 ")", wk->zrec_off);
    if (wk->carry)
        return walk_fail(wk, "truncated perf.data: the compressed data ends inside a record "
                         "(%zu bytes of it, after the record at offset %" PRIu64 ")", wk->carry,
                         wk->zrec_off);
    return 0;
}

/* ------------------------------------------------------ pass 1: metadata */

/* A name of tid from time ts on; seq orders names of one time (file order). */
static int add_comm(td_file *f, PerfFile *p, int32_t tid, int64_t ts, int64_t seq,
                    const char *comm)
{
    if (p->ncomms == p->comms_cap) {
        size_t cap = p->comms_cap ? p->comms_cap * 2 : 1024;
        CommAt *n = realloc(p->comms, cap * sizeof(*n));
        if (!n)
            return seterr(f->err, "out of memory"), TD_FAIL;
        p->comms = n;
        p->comms_cap = cap;
    }
    p->comms[p->ncomms++] = (CommAt){tid, ts, seq, comm};
    return 0;
}

/* FINISHED_ROUND: what perf's ordered events would flush now. */
static void round_done(PerfFile *p)
{
    p->info.rounds++;
    p->last_flush = p->next_flush;
    p->next_flush = p->max_ts;
}

static void saw_time(PerfFile *p, int64_t ts)
{
    if (ts == NO_TIME)
        return;
    if (ts < p->last_flush)
        p->info.out_of_order++;
    if (ts > p->max_ts)
        p->max_ts = ts;
}

static int pass1_sideband(Walk *wk, uint32_t type, uint16_t misc, const uint8_t *rec,
                          size_t size, uint64_t foff)
{
    td_file *f = wk->f;
    PerfFile *p = wk->p;
    td_perf_info *in = &p->info;
    int ai = other_attr(p, rec, size);
    if (ai == UNKNOWN_ATTR)
        return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64 " carries "
                         "an event id that no event of the file has", rec_name(type), foff);
    const Attr *a = ai >= 0 ? &p->attrs[ai] : NULL;
    Sample sid;
    size_t body;
    switch (type) {
    case PR_COMM: body = 8 + 8 + 1; break;
    case PR_FORK: case PR_EXIT: body = 8 + 16 + 8; break;
    case PR_LOST: body = 8 + 16; break;
    case PR_LOST_SAMPLES: body = 8 + 8; break;
    case PR_MMAP: body = 8 + 8 + 24 + 1; break;
    case PR_MMAP2: body = 8 + 8 + 24 + 24 + 8 + 1; break;
    default: body = 8; break;
    }
    if (size < body)
        return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64 " has %zu "
                         "bytes, fewer than its fields", rec_name(type), foff, size);
    if (parse_sample_id(p, a, rec, size, body, &sid) < 0)
        return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64 " is too "
                         "short for its sample id (%zu bytes)", rec_name(type), foff, size);
    /* its size is its fields' (a name padded to u64s) and the sample id's, as the
       kernel and perf write it: a damaged size is not read as another layout */
    const Attr *ida = a ? a : &p->attrs[0];
    size_t idsz = ida->pub.sample_id_all ? (size_t)ida->sample_id_size : 0;
    size_t want = body + idsz;
    if (type == PR_COMM || type == PR_MMAP || type == PR_MMAP2) {
        size_t at = body - 1, room = size - at - (idsz < size - at ? idsz : size - at);
        const uint8_t *nul = memchr(rec + at, 0, room);
        want = nul ? at + (((size_t)(nul - rec - at) + 1 + 7) & ~(size_t)7) + idsz : 0;
    } else if (type == PR_THROTTLE) {
        want = 8 + 24 + idsz;
    } else if (body == 8) {
        want = size;        /* records we do not read: not checked */
    }
    if (size != want)
        return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64 " has %zu "
                         "bytes, its fields %zu", rec_name(type), foff, size, want);
    saw_time(p, sid.time);
    switch (type) {
    case PR_COMM: {
        int32_t pid = (int32_t)pld(p, rec + 8, 4), tid = (int32_t)pld(p, rec + 12, 4);
        size_t room = size - 16 - (a && a->pub.sample_id_all ? (size_t)a->sample_id_size : 0);
        const uint8_t *name = rec + 16;
        const uint8_t *nul = memchr(name, 0, room);
        const char *comm = own_str(f, (const char *)name, nul ? (size_t)(nul - name) : room);
        int64_t ts = sid.time;
        uint8_t exec = misc & MISC_COMM_EXEC ? 1 : 0;
        if (!comm || add_comm(f, p, tid, ts, p->seq++, comm) < 0 ||
            push(f, &in->comms.ts, &ts, 8) || push(f, &in->comms.pid, &pid, 4) ||
            push(f, &in->comms.tid, &tid, 4) || push(f, &in->comms.exec, &exec, 1))
            return REC_NOMEM;
        if (strcol_append(&in->comms.comm, comm, strlen(comm)) < 0)
            return REC_NOMEM;
        return 0;
    }
    case PR_FORK:
    case PR_EXIT: {
        int32_t v[4];
        for (int i = 0; i < 4; i++)
            v[i] = (int32_t)pld(p, rec + 8 + 4 * i, 4);
        int64_t ts = (int64_t)(pld(p, rec + 24, 8) & INT64_MAX);
        td_perf_tasks *t = type == PR_FORK ? &in->forks : &in->exits;
        if (push(f, &t->ts, &ts, 8) || push(f, &t->pid, &v[0], 4) || push(f, &t->ppid, &v[1], 4) ||
            push(f, &t->tid, &v[2], 4) || push(f, &t->ptid, &v[3], 4))
            return REC_NOMEM;
        if (type == PR_FORK) {
            /* (ts, file order, ptid:tid packed without signed shifts) */
            int64_t row[3] = {ts, p->seq++,
                              (int64_t)((uint64_t)(uint32_t)v[3] << 32 | (uint32_t)v[2])};
            if (push(f, &p->fork_rows, row, sizeof(row)))
                return REC_NOMEM;
        }
        return 0;
    }
    case PR_LOST:
    case PR_LOST_SAMPLES: {
        uint64_t n = pld(p, rec + (type == PR_LOST ? 16 : 8), 8);
        if (n > MAX_LOST)
            return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64 " says %"
                             PRIu64 " events were lost", rec_name(type), foff, n);
        if (type == PR_LOST_SAMPLES) {
            /* an event's lost-sample counter (perf writes them at the end, one per
               event and CPU, the CPU in ID_INDEX): the same losses LOST records
               place in time, so the larger per CPU counts (set_meta) */
            /* each below 2^48, but a big file has many: saturate, never overflow */
            int64_t *sum = misc & MISC_LOST_SAMPLES_BPF ? &in->filtered_samples
                                                         : &in->lost_samples;
            if (__builtin_add_overflow(*sum, (int64_t)n, sum))
                *sum = INT64_MAX;
            if (misc & MISC_LOST_SAMPLES_BPF)
                return 0;
            int64_t row[3] = {(int64_t)record_id(p, rec, size), sid.cpu, (int64_t)n};
            return push(f, &p->lost_sample_rows, row, sizeof(row)) ? REC_NOMEM : 0;
        }
        int64_t cpu = sid.cpu;
        int64_t row[3] = {sid.time == NO_TIME ? 0 : sid.time, cpu, (int64_t)n};
        if (cpu < 0 || cpu >= MAX_CPUS) {
            p->lost_unknown_cpu += (int64_t)n;
            row[1] = -1;
        } else if (cpu > p->max_cpu) {
            p->max_cpu = (int)cpu;
        }
        return push(f, &p->lost_rows, row, sizeof(row)) ? REC_NOMEM : 0;
    }
    case PR_MMAP:
    case PR_MMAP2: {
        td_perf_mmaps *m = &in->mmaps;
        int32_t pid = (int32_t)pld(p, rec + 8, 4), tid = (int32_t)pld(p, rec + 12, 4);
        uint64_t start = pld(p, rec + 16, 8), len = pld(p, rec + 24, 8), pgoff = pld(p, rec + 32, 8);
        uint32_t prot = 0, flags = 0;
        const uint8_t *name = rec + 40;
        const uint8_t *bid = NULL;
        size_t bid_len = 0;
        if (type == PR_MMAP2) {
            if (misc & (1u << 14)) {    /* PERF_RECORD_MISC_MMAP_BUILD_ID */
                bid_len = rec[40] <= 20 ? rec[40] : 20;
                bid = rec + 44;
            }
            prot = (uint32_t)pld(p, rec + 64, 4);
            flags = (uint32_t)pld(p, rec + 68, 4);
            name = rec + 72;
        }
        size_t room = size - (size_t)(name - rec) -
                      (a && a->pub.sample_id_all ? (size_t)a->sample_id_size : 0);
        if ((size_t)(name - rec) > size - (a && a->pub.sample_id_all ? (size_t)a->sample_id_size
                                                                      : 0))
            return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64 " is too "
                             "short for its file name", rec_name(type), foff);
        const uint8_t *nul = memchr(name, 0, room);
        size_t nlen = nul ? (size_t)(nul - name) : room;
        uint8_t mode = misc & MISC_CPUMODE_MASK;
        int64_t ts = sid.time;
        if (push(f, &m->ts, &ts, 8) || push(f, &m->pid, &pid, 4) || push(f, &m->tid, &tid, 4) ||
            push(f, &m->start, &start, 8) || push(f, &m->len, &len, 8) ||
            push(f, &m->pgoff, &pgoff, 8) || push(f, &m->prot, &prot, 4) ||
            push(f, &m->flags, &flags, 4) || push(f, &m->cpumode, &mode, 1) ||
            (bid_len && push(f, &m->build_id, bid, bid_len)) ||
            put_end(&m->build_id_offsets, m->build_id.len) ||
            strcol_append(&m->filename, (const char *)name, nlen) < 0)
            return REC_NOMEM;
        return 0;
    }
    case PR_THROTTLE:
        in->throttles++;
        return 0;
    }
    return 0;
}

/* A sample's time among the TD_TIME_ENDS earliest and latest (sorted inserts: after
   the first few, a time rarely gets in). */
static void time_ends(td_perf_info *in, int64_t ts, int ai)
{
    in->timed_samples++;
    int n = in->n_time_low;
    if (n < TD_TIME_ENDS || ts < in->time_low[n - 1]) {
        int i = n < TD_TIME_ENDS ? n++ : n - 1;
        for (; i > 0 && in->time_low[i - 1] > ts; i--) {
            in->time_low[i] = in->time_low[i - 1];
            in->time_low_attr[i] = in->time_low_attr[i - 1];
        }
        in->time_low[i] = ts;
        in->time_low_attr[i] = ai;
        in->n_time_low = n;
    }
    n = in->n_time_high;
    if (n < TD_TIME_ENDS || ts > in->time_high[n - 1]) {
        int i = n < TD_TIME_ENDS ? n++ : n - 1;
        for (; i > 0 && in->time_high[i - 1] < ts; i--) {
            in->time_high[i] = in->time_high[i - 1];
            in->time_high_attr[i] = in->time_high_attr[i - 1];
        }
        in->time_high[i] = ts;
        in->time_high_attr[i] = ai;
        in->n_time_high = n;
    }
}

/* The tracepoint id a tracepoint sample's payload says it is (its common_type), or
   NO_PAYLOAD_TYPE when it cannot be checked (no tracing data, no payload, too short for it). */
#define NO_PAYLOAD_TYPE (-1)

static int64_t payload_type(const td_file *f, const PerfFile *p, const Attr *a,
                            const Sample *s)
{
    if (a->pub.type != T_TRACEPOINT || !p->tracing_done || !s->raw || !f->common_type_size ||
        s->raw_size < (uint32_t)(f->common_type_off + f->common_type_size))
        return NO_PAYLOAD_TYPE;
    return (int64_t)ld(s->raw + f->common_type_off, f->common_type_size, p->swap);
}

/* The name of tracepoint id `id` by its format, "?" when the file has none. */
static const char *tracepoint_name(const td_file *f, uint64_t id)
{
    int ev = f->by_id && id <= (uint64_t)f->max_id ? f->by_id[id] : -1;
    return ev >= 0 ? f->events[ev].name : "?";
}

/* A tracepoint sample's payload against its attribute: the kernel writes the
   tracepoint's id (the attribute's config) as the payload's common_type.  One that
   is another attribute's tracepoint: the file's ids contradict its payloads (ids or
   attributes exchanged), REC_DAMAGE.  One that names no event of the file (0xffff):
   that sample's payload is damaged, counted and left out (1).  0: it is its own. */
static int check_payload(Walk *wk, int ai, const Sample *s, uint64_t foff)
{
    td_file *f = wk->f;
    PerfFile *p = wk->p;
    Attr *a = &p->attrs[ai];
    if (!a->has_format)
        return 0;       /* its samples are left out whatever they say */
    int64_t ct = payload_type(f, p, a, s);
    if (ct < 0)
        return 0;
    p->tp_samples++;
    if ((uint64_t)ct == a->pub.config)
        return 0;
    for (int j = 0; j < p->nattrs; j++) {
        const Attr *b = &p->attrs[j];
        if (j != ai && b->pub.type == T_TRACEPOINT && b->pub.config == (uint64_t)ct)
            return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64
                             " is %s (tracepoint id %" PRId64 ") by its payload, but its "
                             "event id %" PRIu64 " says %s (tracepoint id %" PRIu64 "): the "
                             "file's event ids contradict its payloads", foff,
                             tracepoint_name(f, (uint64_t)ct), ct, s->id,
                             tracepoint_name(f, a->pub.config), a->pub.config);
    }
    if (!p->bad_payloads) {
        p->bad_payload_off = foff;
        p->bad_payload_type = (uint32_t)ct;
        p->bad_payload_attr = ai;
    }
    p->bad_payloads++;
    a->bad_payloads++;
    return 1;
}

/* Whether a tracepoint sample's payload is another tracepoint's (left out). */
static int payload_not_its_own(const td_file *f, const PerfFile *p, const Attr *a,
                               const Sample *s)
{
    int64_t ct = a->has_format ? payload_type(f, p, a, s) : NO_PAYLOAD_TYPE;
    return ct >= 0 && (uint64_t)ct != a->pub.config;
}

static int pass1_record(Walk *wk, uint32_t type, uint16_t misc, const uint8_t *rec, size_t size,
                        uint64_t foff)
{
    td_file *f = wk->f;
    PerfFile *p = wk->p;
    if (type < 128)
        p->info.records_by_type[type]++;
    switch (type) {
    case PR_SAMPLE: {
        int ai = sample_attr(p, rec, size);
        if (ai < 0)
            return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64
                             " carries an event id that no event of the file has", foff);
        Attr *a = &p->attrs[ai];
        Sample s;
        if (parse_sample(p, a, rec, size, &s) < 0)
            return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64
                             " (%zu bytes) does not hold the fields of %s", foff, size,
                             a->pub.name ? a->pub.name : "its event");
        a->pub.samples++;
        saw_time(p, s.time);
        {
            int64_t t = s.time == NO_TIME ? 0 : s.time;    /* (decode_record's time) */
            if (t < p->round_lo)
                p->round_lo = t;
            if (t > p->round_hi)
                p->round_hi = t;
        }
        int rc = check_payload(wk, ai, &s, foff);
        if (rc < 0)
            return rc;
        if (rc > 0 || (a->pub.type == T_TRACEPOINT && !a->has_format))
            return 0;   /* left out (said at open): neither its time nor its CPU counts */
        if (s.time != NO_TIME) {
            if (p->first_ts == NO_TIME || s.time < p->first_ts)
                p->first_ts = s.time;
            if (s.time > p->last_ts)
                p->last_ts = s.time;
            time_ends(&p->info, s.time, ai);
        } else {
            p->no_time_attr = 1;
        }
        if (s.cpu < 0 && (a->pub.sample_type & (S_ID | S_IDENTIFIER)))
            s.cpu = cpu_of_id(p, s.id);
        if (s.cpu < 0)
            p->no_cpu_attr = 1;
        else if (s.cpu >= MAX_CPUS)
            return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64
                             " says CPU %" PRId32, foff, s.cpu);
        else if (s.cpu > p->max_cpu)
            p->max_cpu = s.cpu;
        return 0;
    }
    case PR_FINISHED_ROUND:
        round_done(p);
        return 0;
    case PR_ID_INDEX: {
        /* {id, idx, cpu, tid} per event id (then, in newer perf, more per entry) */
        if (size < 16)
            return walk_fail(wk, "corrupt perf.data: an ID_INDEX record of %zu bytes at "
                             "offset %" PRIu64, size, foff);
        uint64_t nr = pld(p, rec + 8, 8);
        if (nr > (size - 16) / 32)
            return walk_fail(wk, "corrupt perf.data: the ID_INDEX record at offset %" PRIu64
                             " lists %" PRIu64 " ids in %zu bytes", foff, nr, size);
        size_t each = nr ? (size - 16) / (size_t)nr : 32;
        if (each < 32)
            each = 32;
        for (uint64_t i = 0; i < nr; i++) {
            const uint8_t *e = rec + 16 + (size_t)i * each;
            int64_t pair[2] = {(int64_t)pld(p, e, 8), (int64_t)pld(p, e + 16, 8)};
            if (push(f, &p->id_cpu, pair, sizeof(pair)))
                return REC_NOMEM;
        }
        return 0;
    }
    case PR_HEADER_ATTR: {
        if (!p->pipe)
            return 0;
        Rd r = {rec + 8, size - 8, 0, foff + 8, "HEADER_ATTR record", p->swap, f->err,
                "perf.data"};
        if (size < 8 + 64)
            return walk_fail(wk, "corrupt perf.data: a HEADER_ATTR record of %zu bytes at "
                             "offset %" PRIu64, size, foff);
        uint32_t asz = (uint32_t)pld(p, rec + 12, 4);
        if (asz == 0)
            asz = 64;
        if (asz > size - 8)
            return walk_fail(wk, "corrupt perf.data: the HEADER_ATTR record at offset %" PRIu64
                             " has an attribute of %u bytes in its %zu", foff, asz, size - 8);
        Attr *a;
        if (add_attr(f, p, &a) < 0 || parse_attr(f, p, &r, asz, a) < 0)
            return REC_DAMAGE;
        size_t nids = (size - 8 - asz) / 8;
        return add_ids(f, p, p->nattrs - 1, rec + 8 + asz, nids) < 0 ? REC_DAMAGE : 0;
    }
    case PR_HEADER_TRACING_DATA: {
        uint64_t tsize = pld(p, rec + 8, 4);
        Rd r = {rec + size, (size_t)tsize, 0, foff + size, "tracing data", p->swap, f->err,
                "perf.data"};
        return read_tracing_data(f, p, &r) < 0 ? REC_DAMAGE : 0;
    }
    case PR_HEADER_FEATURE: {
        if (size < 16)
            return walk_fail(wk, "corrupt perf.data: a HEADER_FEATURE record of %zu bytes at "
                             "offset %" PRIu64, size, foff);
        uint64_t feat = pld(p, rec + 8, 8);
        Rd r = {rec + 16, size - 16, 0, foff + 16, "HEADER_FEATURE record", p->swap, f->err,
                "perf.data"};
        if (feat > 0 && feat < F_LAST && read_feature(f, p, (int)feat, &r) < 0)
            return REC_DAMAGE;
        return 0;
    }
    case PR_HEADER_BUILD_ID: {
        Rd r = {rec, size, 0, foff, "HEADER_BUILD_ID record", p->swap, f->err, "perf.data"};
        if (build_id_entry(f, p, &r) < 0)
            return REC_DAMAGE;
        p->info.n_build_ids = (int)(p->build_ids.len / sizeof(td_perf_build_id));
        return 0;
    }
    case PR_EVENT_UPDATE: {
        if (size < 24)
            return 0;
        uint64_t utype = pld(p, rec + 8, 8), id = pld(p, rec + 16, 8);
        if (utype != 2)         /* PERF_EVENT_UPDATE__NAME */
            return 0;
        if (p->nids)
            qsort(p->ids, p->nids, sizeof(IdMap), idmap_cmp);
        int ai = attr_of_id(p, id);
        if (ai < 0)
            return 0;
        const uint8_t *nul = memchr(rec + 24, 0, size - 24);
        const char *name = own_str(f, (const char *)rec + 24,
                                   nul ? (size_t)(nul - rec - 24) : size - 24);
        if (!name)
            return REC_NOMEM;
        if (name[0])
            p->attrs[ai].pub.name = name;
        return 0;
    }
    case PR_COMM: case PR_FORK: case PR_EXIT: case PR_LOST: case PR_LOST_SAMPLES:
    case PR_MMAP: case PR_MMAP2: case PR_THROTTLE:
        return pass1_sideband(wk, type, misc, rec, size, foff);
    }
    /* other records: their sample_id's time takes part in the ordering check */
    if (type < PR_HEADER_ATTR && type != PR_SAMPLE) {
        int ai = other_attr(p, rec, size);
        Sample sid;
        if (ai == UNKNOWN_ATTR)
            return walk_fail(wk, "corrupt perf.data: the %s record at offset %" PRIu64
                             " carries an event id that no event of the file has",
                             rec_name(type), foff);
        if (ai >= 0 && parse_sample_id(p, &p->attrs[ai], rec, size, 8, &sid) == 0)
            saw_time(p, sid.time);
    }
    return 0;
}

/* --------------------------------------------------- task names in time */

/* An open-addressing map int32 -> pointer (tids to names, tids seen). */
typedef struct {
    int32_t *keys;
    const char **vals;
    uint8_t *used;
    size_t n, cap;
} TidMap;

static const char **tidmap_slot(TidMap *m, int32_t key, int add)
{
    if (add && (m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        TidMap g = {calloc(cap, 4), calloc(cap, sizeof(char *)), calloc(cap, 1), 0, cap};
        if (!g.keys || !g.vals || !g.used) {
            free(g.keys);
            free(g.vals);
            free(g.used);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->used[i]) {
                const char **v = tidmap_slot(&g, m->keys[i], 1);
                *v = m->vals[i];
            }
        free(m->keys);
        free(m->vals);
        free(m->used);
        *m = g;
    }
    if (!m->cap)
        return NULL;
    size_t i = ((uint32_t)key * 2654435761u) & (m->cap - 1);
    while (m->used[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i]) {
        if (!add)
            return NULL;
        m->used[i] = 1;
        m->keys[i] = key;
        m->vals[i] = NULL;
        m->n++;
    }
    return &m->vals[i];
}

static void tidmap_free(TidMap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof(*m));
}

static int comm_time_cmp(const void *a, const void *b)
{
    const CommAt *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int comm_tid_cmp(const void *a, const void *b)
{
    const CommAt *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return comm_time_cmp(a, b);
}

static int fork_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Every tid's names in time: COMM records, a forked thread's parent's name at
   its fork (as perf's thread__fork), and before any of them ":TID" ("swapper"
   for 0), as perf script prints a thread it has no name for.  `seen`: tids of
   the samples. */
static int build_comm_history(td_file *f, PerfFile *p, TidMap *seen)
{
    /* records perf synthesized for the tasks that existed when it started have time
       0 (or none): they count from the start, in the file's order (a thread's FORK,
       then its COMM) */
    for (size_t i = 0; i < p->ncomms; i++)
        if (p->comms[i].ts <= 0)
            p->comms[i].ts = INT64_MIN + 1;
    if (p->ncomms)
        qsort(p->comms, p->ncomms, sizeof(CommAt), comm_time_cmp);
    size_t nforks = p->fork_rows.len / 24;
    int64_t *forks = (int64_t *)p->fork_rows.data;
    for (size_t i = 0; i < nforks; i++)
        if (forks[3 * i] <= 0)
            forks[3 * i] = INT64_MIN + 1;
    if (nforks)
        qsort(forks, nforks, 24, fork_cmp);
    TidMap now = {0};
    size_t ncomm0 = p->ncomms, ci = 0, fi = 0;
    int rc = 0;
    while (!rc && (ci < ncomm0 || fi < nforks)) {
        int take_fork = fi < nforks && (ci == ncomm0 || forks[3 * fi] < p->comms[ci].ts ||
                                         (forks[3 * fi] == p->comms[ci].ts &&
                                          forks[3 * fi + 1] < p->comms[ci].seq));
        if (!take_fork) {
            const char **v = tidmap_slot(&now, p->comms[ci].tid, 1);
            if (!v)
                rc = -1;
            else
                *v = p->comms[ci].comm;
            ci++;
            continue;
        }
        int64_t *fr = &forks[3 * fi++];
        int32_t tid = (int32_t)(uint32_t)fr[2], ptid = (int32_t)(uint32_t)((uint64_t)fr[2] >> 32);
        const char **parent = tidmap_slot(&now, ptid, 0);
        if (parent && *parent) {
            const char *name = *parent;
            const char **v = tidmap_slot(&now, tid, 1);
            if (!v || add_comm(f, p, tid, fr[0], fr[1], name) < 0)
                rc = -1;
            else
                *v = name;
        }
    }
    /* the names before any: every tid of a name or a sample */
    for (size_t i = 0; !rc && i < now.cap; i++)
        if (now.used[i] && !tidmap_slot(seen, now.keys[i], 1))
            rc = -1;
    tidmap_free(&now);
    if (!tidmap_slot(seen, 0, 1))
        rc = -1;
    for (size_t i = 0; !rc && i < seen->cap; i++) {
        if (!seen->used[i])
            continue;
        char name[24];
        int32_t tid = seen->keys[i];
        if (tid == 0)
            snprintf(name, sizeof(name), "swapper");
        else
            snprintf(name, sizeof(name), ":%" PRId32, tid);
        const char *s = own_str(f, name, strlen(name));
        if (!s || add_comm(f, p, tid, INT64_MIN, -1, s) < 0)
            rc = -1;
    }
    if (rc)
        return f->err[0] ? -1 : (seterr(f->err, "out of memory"), -1);
    if (p->ncomms)
        qsort(p->comms, p->ncomms, sizeof(CommAt), comm_tid_cmp);
    return 0;
}

/* The name of tid at time ts, and the times [*from, *to) it holds for. */
static const CommAt *comm_at(const PerfFile *p, int32_t tid, int64_t ts, int64_t *from,
                             int64_t *to)
{
    size_t lo = 0, hi = p->ncomms;
    while (lo < hi) {       /* the first entry after (tid, ts) */
        size_t mid = lo + (hi - lo) / 2;
        const CommAt *c = &p->comms[mid];
        if (c->tid < tid || (c->tid == tid && c->ts <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || p->comms[lo - 1].tid != tid)
        return NULL;
    const CommAt *c = &p->comms[lo - 1];
    *from = c->ts;
    *to = lo < p->ncomms && p->comms[lo].tid == tid ? p->comms[lo].ts : INT64_MAX;
    return c;
}

/* ------------------------------------------------------ events and meta */

static const ExtraCol COL_PID = {"pid", TD_INT, 32, 1};
static const ExtraCol COL_IP = {"ip", TD_INT, 64, 0};
static const ExtraCol COL_ADDR = {"addr", TD_INT, 64, 0};
static const ExtraCol COL_PERIOD = {"period", TD_INT, 64, 0};
static const ExtraCol COL_CPUMODE = {"cpumode", TD_INT, 8, 0};
static const ExtraCol COL_CHAIN = {"callchain", TD_DYNARRAY, 64, 0};
static const ExtraCol COL_CHAIN_CTX = {"callchain_context", TD_DYNARRAY, 8, 0};

/* The extra columns of an event from the sample types of its attributes. */
static int set_extra(td_file *f, int ev, int tracepoint, uint64_t st)
{
    ExtraCol *cols = calloc(8, sizeof(ExtraCol));
    if (own(f, cols) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    int n = 0;
    if (!tracepoint) {
        if (st & S_TID)
            cols[n++] = COL_PID;
        if (st & S_IP)
            cols[n++] = COL_IP;
        if (st & S_ADDR)
            cols[n++] = COL_ADDR;
        cols[n++] = COL_PERIOD;
        cols[n++] = COL_CPUMODE;
    }
    if (st & S_CALLCHAIN) {
        cols[n++] = COL_CHAIN;
        cols[n++] = COL_CHAIN_CTX;
    }
    f->info[ev].extra = cols;
    f->info[ev].nextra = n;
    return 0;
}

/* Where the modifiers (":u", "/k") of an event's name start, or NO_MODIFIERS. */
static int split_modifiers(const char *name)
{
    const char *colon = strrchr(name, ':');
    const char *slash = strrchr(name, '/');
    const char *cut = colon && (!slash || colon > slash) ? colon + 1 : slash ? slash + 1 : NULL;
    if (!cut || !*cut || strspn(cut, "ukhIGHpPSDWeb") != strlen(cut))
        return NO_MODIFIERS;
    return (int)(cut - name);
}

/* Give each attribute its event (table): tracepoints by their format's id, the
   others a table named as perf names the event, without its modifiers. */
static int setup_events(td_file *f, PerfFile *p)
{
    int said_skipped = 0;
    for (int i = 0; i < p->nattrs; i++) {
        Attr *a = &p->attrs[i];
        td_perf_attr *pa = &a->pub;
        if (pa->type == T_TRACEPOINT) {
            p->tracepoints++;
            int ev = p->tracing_done && pa->config <= (uint64_t)f->max_id ? f->by_id[pa->config]
                                                                            : -1;
            pa->event = ev;
            if (ev >= 0 && !pa->name) {
                char name[256];
                snprintf(name, sizeof(name), "%s:%s", f->events[ev].system, f->events[ev].name);
                if (!(pa->name = own_str(f, name, strlen(name))))
                    return TD_ENOMEM;
            }
            if (!pa->name) {
                char name[64];
                snprintf(name, sizeof(name), "tracepoint:%" PRIu64, pa->config);
                if (!(pa->name = own_str(f, name, strlen(name))))
                    return TD_ENOMEM;
            }
            if (ev >= 0 && pa->samples && (pa->freq || pa->sample_period != 1) &&
                td_warn(f, "%s was sampled %s %" PRIu64 " (not every event): its counts are a "
                        "sample of the events", pa->name, pa->freq ? "at a frequency of"
                        : "once every", pa->sample_period) < 0)
                return seterr(f->err, "out of memory"), TD_FAIL;
            /* one warning per event left out, with the formats that do not parse */
            char why[TD_ERRLEN + 64] = "";
            if (f->skipped_formats)
                snprintf(why, sizeof(why), " (%d event format%s: %s)", f->skipped_formats,
                         f->skipped_formats > 1 ? "s do not parse, the first"
                         : " does not parse", skipped_why(f));
            if (ev < 0 && pa->samples &&
                td_warn(f, "%" PRId64 " samples of %s were left out of the tables and the "
                        "duration: the file has no format for tracepoint id %" PRIu64 "%s",
                        pa->samples, pa->name, pa->config, why) < 0)
                return seterr(f->err, "out of memory"), TD_FAIL;
            if (ev < 0 && pa->samples)
                said_skipped = 1;
            continue;
        }
        if (!pa->name && attr_default_name(f, a) < 0)
            return TD_FAIL;
        a->modifiers_at = split_modifiers(pa->name);
        size_t base = a->modifiers_at > 0 ? (size_t)a->modifiers_at - 1 : strlen(pa->name);
        char table[256];
        snprintf(table, sizeof(table), "%.*s", (int)(base < 255 ? base : 255), pa->name);
        /* one table per name; the same name with other modifiers or fields gets
           its full name */
        int ev = -1;
        for (int j = 0; j < i; j++) {
            Attr *b = &p->attrs[j];
            if (b->pub.type == T_TRACEPOINT || b->pub.event < 0)
                continue;
            if (!strcmp(f->events[b->pub.event].name, table)) {
                if (!strcmp(b->pub.name, pa->name) &&
                    b->pub.sample_type == pa->sample_type)
                    ev = b->pub.event;
                else
                    snprintf(table, sizeof(table), "%s", pa->name);
                break;
            }
        }
        if (ev < 0) {
            ev = new_event(f);
            if (ev < 0)
                return TD_FAIL;
            td_event *e = &f->events[ev];
            EvInfo *in = &f->info[ev];
            e->name = own_str(f, table, strlen(table));
            e->system = pa->type == T_HARDWARE ? "hardware" : pa->type == T_SOFTWARE
                        ? "software" : pa->type == T_HW_CACHE ? "hw_cache" : "pmu";
            e->id = -1;
            in->ncommon = NCOMMON_SAMPLE;
            if (!e->name || set_extra(f, ev, 0, pa->sample_type) < 0)
                return TD_FAIL;
            f->nevents++;
        }
        pa->event = ev;
    }
    if (f->skipped_formats && !said_skipped &&
        td_warn(f, "skipped %d event format%s that do not parse (the first: %s)",
                f->skipped_formats, f->skipped_formats > 1 ? "s" : "", skipped_why(f)) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    /* tracepoints: callchain columns when an attribute of theirs records them */
    for (int i = 0; i < p->nattrs; i++) {
        Attr *a = &p->attrs[i];
        if (a->pub.type == T_TRACEPOINT && a->pub.event >= 0 &&
            (a->pub.sample_type & S_CALLCHAIN) && !f->info[a->pub.event].nextra &&
            set_extra(f, a->pub.event, 1, S_CALLCHAIN) < 0)
            return TD_FAIL;
        if (a->pub.type == T_TRACEPOINT && a->pub.event >= 0 && !(a->pub.sample_type & S_RAW) &&
            a->pub.samples &&
            td_warn(f, "the samples of %s carry no raw data: skipped", a->pub.name) < 0)
            return seterr(f->err, "out of memory"), TD_FAIL;
    }
    return 0;
}

static int lost_row_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static const char *clock_name(int64_t id)
{
    switch (id) {
    case 0: return "realtime";
    case 1: return "mono";
    case 4: return "mono_raw";
    case 7: return "boot";
    case 11: return "tai";
    }
    return "clockid";
}

static int set_meta(td_file *f, PerfFile *p)
{
    td_perf_info *in = &p->info;
    if (p->bad_payloads) {
        /* tracepoint samples whose payload names no event of the file: a few are
           damage left out, more are a file whose samples cannot be trusted */
        const Attr *a = &p->attrs[p->bad_payload_attr];
        int refuse = p->bad_payloads > PAYLOAD_BAD_FEW && p->bad_payloads * 100 > p->tp_samples;
        char msg[TD_ERRLEN];
        snprintf(msg, sizeof(msg), "%" PRId64 " of %" PRId64 " tracepoint samples carry the "
                 "payload of a tracepoint the file does not have%s (the first: the SAMPLE "
                 "record at offset %" PRIu64 ", a payload of tracepoint id %u where its event "
                 "id says %s, tracepoint id %" PRIu64 ")", p->bad_payloads, p->tp_samples,
                 refuse ? "" : ", and were left out of the tables and the duration",
                 p->bad_payload_off, p->bad_payload_type, tracepoint_name(f, a->pub.config),
                 a->pub.config);
        if (refuse)
            return seterr(f->err, "corrupt perf.data: %s", msg), TD_FAIL;
        if (td_warn(f, "%s", msg) < 0)
            return seterr(f->err, "out of memory"), TD_FAIL;
    }
    /* NRCPUS' count is the highest present CPU + 1: a record on a CPU beyond it
       contradicts it (believed, one damaged CPU field makes a 4097-CPU machine) */
    if (in->nr_cpus_avail > 0 && p->max_cpu >= in->nr_cpus_avail)
        return seterr(f->err, "corrupt perf.data: a record is on CPU %d, the NRCPUS feature "
                      "says the machine has %d CPUs", p->max_cpu, in->nr_cpus_avail), TD_FAIL;
    int cpus = in->nr_cpus_avail > p->max_cpu + 1 ? in->nr_cpus_avail : p->max_cpu + 1;
    if (cpus < 1)
        cpus = 1;
    f->meta.cpus = cpus;
    f->meta.file_version = 2;       /* PERFILE2 */
    f->meta.compression = in->compressed ? "zstd" : NULL;
    f->meta.buffer = "";
    f->meta.instances = NULL;
    f->meta.ninstances = 0;
    f->meta.uname = in->osrelease;
    f->meta.trace_cmd_version = NULL;
    /* the clock of the samples: perf's own (the kernel's local clock, as ftrace's
       "perf"), or the one asked for with -k */
    f->meta.clock = "perf";
    for (int i = 0; i < p->nattrs; i++)
        if (p->attrs[i].pub.use_clockid)
            f->meta.clock = clock_name(p->attrs[i].pub.clockid);
    f->lost_per_cpu = calloc((size_t)cpus, sizeof(int64_t));
    if (own(f, f->lost_per_cpu) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    size_t nlost = p->lost_rows.len / 24;
    int64_t *rows = (int64_t *)p->lost_rows.data;
    if (nlost)
        qsort(rows, nlost, 24, lost_row_cmp);
    for (size_t i = 0; i < nlost; i++) {
        int64_t ts = rows[3 * i], count = rows[3 * i + 2];
        int32_t cpu = (int32_t)rows[3 * i + 1];
        if (cpu < 0)
            continue;
        if (buf_put(&f->meta.lost_ts, &ts, 8) || buf_put(&f->meta.lost_cpu, &cpu, 4) ||
            buf_put(&f->meta.lost_count, &count, 8))
            return seterr(f->err, "out of memory"), TD_FAIL;
        f->lost_per_cpu[cpu] = count > INT64_MAX - f->lost_per_cpu[cpu] ? INT64_MAX
                               : f->lost_per_cpu[cpu] + count;
    }
    /* LOST_SAMPLES counters, per CPU by their event id's CPU: where they say more
       than the LOST records, they count */
    size_t nls = p->lost_sample_rows.len / 24;
    int64_t *ls = (int64_t *)p->lost_sample_rows.data;
    if (nls) {
        int64_t *by_cpu = calloc((size_t)cpus, sizeof(int64_t));
        if (!by_cpu)
            return seterr(f->err, "out of memory"), TD_FAIL;
        for (size_t i = 0; i < nls; i++) {
            int64_t cpu = cpu_of_id(p, (uint64_t)ls[3 * i]);
            if (cpu < 0)
                cpu = ls[3 * i + 1];
            if (cpu >= 0 && cpu < cpus)
                by_cpu[cpu] += ls[3 * i + 2];
            else
                p->lost_unknown_cpu += ls[3 * i + 2];
        }
        for (int c = 0; c < cpus; c++)
            if (by_cpu[c] > f->lost_per_cpu[c])
                f->lost_per_cpu[c] = by_cpu[c];
        free(by_cpu);
    }
    f->meta.lost_per_cpu = f->lost_per_cpu;
    if (p->lost_unknown_cpu &&
        td_warn(f, "perf lost %" PRId64 " samples on CPUs the file does not name (no CPU in "
                "the sample ids)", p->lost_unknown_cpu) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    int64_t unknown = 0, all = 0;
    for (int t = 0; t < MAX_TYPE; t++) {
        all += in->records_by_type[t];
        if (!known_type((uint32_t)t))
            unknown += in->records_by_type[t];
    }
    if (unknown && unknown * 100 > all)
        return seterr(f->err, "corrupt perf.data: %" PRId64 " of %" PRId64 " records have a "
                      "type perf does not define", unknown, all), TD_FAIL;
    if (unknown && td_warn(f, "skipped %" PRId64 " records of types perf does not define "
                           "(written by a newer perf or kernel?)", unknown) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    if (in->out_of_order &&
        td_warn(f, "%" PRId64 " records are out of order across perf's FINISHED_ROUND rounds "
                "(perf script reports them too): their rows are placed by their timestamps",
                in->out_of_order) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    if (in->throttles &&
        td_warn(f, "the kernel throttled sampling %" PRId64 " times (samples were dropped "
                "while throttled: counts are low)", in->throttles) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    if (p->no_time_attr &&
        td_warn(f, "some samples carry no timestamp (recorded without -T/time): their ts is 0")
        < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    if (p->no_cpu_attr &&
        td_warn(f, "some samples carry no CPU (recorded without the CPU sample field): their "
                "cpu is -1") < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    /* both are in 0..INT64_MAX (masked when read): the difference cannot overflow */
    if (p->first_ts != NO_TIME && p->last_ts - p->first_ts > MAX_TRACE_SPAN)
        return seterr(f->err, "corrupt perf.data: the samples' times run from %" PRId64 " to %"
                      PRId64 " ns, %.0f days: more than the %d years any recording spans, so "
                      "a timestamp is damaged", p->first_ts, p->last_ts,
                      (double)(p->last_ts - p->first_ts) / 86400e9, MAX_TRACE_SPAN_YEARS), TD_FAIL;
    f->meta.first_ts = p->first_ts == NO_TIME ? 0 : p->first_ts;
    f->meta.last_ts = p->first_ts == NO_TIME ? 0 : p->last_ts;
    in->nattrs = p->nattrs;
    in->packages = (const char *const *)p->packages.data;
    in->threads = (const char *const *)p->threads.data;
    in->dies = (const char *const *)p->dies.data;
    in->core_id = (const int32_t *)p->core_id.data;
    in->socket_id = (const int32_t *)p->socket_id.data;
    in->die_id = p->die_id.len / 4 == (size_t)in->n_cpu_ids ? (const int32_t *)p->die_id.data
                                                            : NULL;
    in->numa = (const td_perf_numa *)p->numa.data;
    in->cache = (const td_perf_cache *)p->cache.data;
    in->build_ids = (const td_perf_build_id *)p->build_ids.data;
    in->pipe = p->pipe;
    return 0;
}

/* Split the records from offset `from` to `to` (round boundaries) into ranges at
   FINISHED_ROUND boundaries, about `want` of about equal bytes. */
static int make_ranges(td_file *f, PerfFile *p, const Buf *ends, int want, uint64_t from,
                       uint64_t to)
{
    size_t nends = ends->len / 8;
    const uint64_t *e = (const uint64_t *)ends->data;
    if (want < 1)
        want = 1;
    if (want > MAX_RANGES)
        want = MAX_RANGES;
    p->ranges = calloc((size_t)want, sizeof(Range));
    if (own(f, p->ranges) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    uint64_t total = to - from, start = from;
    int n = 0;
    size_t k = 0;
    for (int r = 1; r < want && k < nends; r++) {
        uint64_t goal = from + total / (uint64_t)want * (uint64_t)r;
        while (k < nends && e[k] < goal)
            k++;
        if (k < nends && e[k] > start && e[k] < to) {
            p->ranges[n++] = (Range){start, e[k]};
            start = e[k];
        }
    }
    p->ranges[n++] = (Range){start, to};
    p->nranges = n;
    return 0;
}

/* The index of a perf.data: one entry (CPU UINT32_MAX: all of them) of its rounds with
   samples, each with its earliest sample's time.  Unlike trace.dat's blocks, rounds
   overlap in time a little (perf flushes a round's samples only up to the previous
   round's end): a time-range read takes every round whose span meets it. */
static int perf_index(td_file *f, int *n)
{
    PerfFile *p = f->perf;
    size_t nrounds = p->round_spans.len / 16;
    const int64_t *span = (const int64_t *)p->round_spans.data;
    td_cpu_blocks *ix = calloc(1, sizeof(*ix));
    int64_t *ts = malloc((nrounds ? nrounds : 1) * sizeof(int64_t));
    if (own(f, ix) < 0 || own(f, ts) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    int64_t k = 0;
    for (size_t i = 0; i < nrounds; i++)
        if (span[2 * i] <= span[2 * i + 1])
            ts[k++] = span[2 * i];
    *ix = (td_cpu_blocks){UINT32_MAX, k, ts};
    f->index = ix;
    *n = 1;
    return TD_OK;
}

/* A time-range read of a perf.data: the records from the first round whose samples'
   span meets [t0, t1) to the last such round (perf's rounds overlap in time a little:
   a round is in when any of its samples may be), decoded in ranges as a whole read's;
   decode_record keeps the samples in the range.  Compressed records are one stream:
   all of it is decoded, the samples filtered.  The side-band (names, forks, exits,
   maps) is pass 1's, the whole file's, as a whole read has it. */
static int perf_set_time_range(td_file *f, int64_t t0, int64_t t1, char *err)
{
    PerfFile *p = f->perf;
    size_t nrounds = p->round_spans.len / 16, nends = p->round_ends.len / 8;
    const int64_t *span = (const int64_t *)p->round_spans.data;
    const uint64_t *e = (const uint64_t *)p->round_ends.data;
    int64_t blocks = 0, first = -1, last = -1;
    for (size_t i = 0; i < nrounds; i++) {
        if (span[2 * i] > span[2 * i + 1])
            continue;           /* no sample */
        blocks++;
        if (span[2 * i + 1] >= t0 && span[2 * i] < t1) {
            if (first < 0)
                first = (int64_t)i;
            last = (int64_t)i;
        }
    }
    f->meta.blocks_total = blocks;
    if (p->compressed || nrounds != nends + 1) {
        f->meta.blocks_decoded = blocks;
        return TD_OK;           /* one range over the whole stream: filtered only */
    }
    for (int64_t i = first; first >= 0 && i <= last; i++)
        f->meta.blocks_decoded += span[2 * i] <= span[2 * i + 1];
    /* round i: from the end of round i - 1 (the data's start) to its own end */
    uint64_t from = first <= 0 ? p->data_start : e[first - 1];
    uint64_t to = first < 0 ? p->data_start : (size_t)last < nends ? e[last] : p->data_end;
    char *keep = f->err;
    f->err = err;
    int rc = make_ranges(f, p, &p->round_ends, 4 * default_jobs(), from, to);
    f->err = keep;
    return rc;
}

static int pass0_headers(Walk *wk, uint32_t type, uint16_t misc, const uint8_t *rec,
                         size_t size, uint64_t foff)
{
    switch (type) {
    case PR_HEADER_ATTR: case PR_HEADER_TRACING_DATA: case PR_HEADER_FEATURE:
    case PR_HEADER_BUILD_ID: case PR_EVENT_UPDATE:
        return pass1_record(wk, type, misc, rec, size, foff);
    }
    return 0;
}

static int pass1_all(Walk *wk, uint32_t type, uint16_t misc, const uint8_t *rec, size_t size,
                     uint64_t foff)
{
    PerfFile *p = wk->p;
    switch (type) {
    case PR_HEADER_ATTR: case PR_HEADER_TRACING_DATA: case PR_HEADER_FEATURE:
    case PR_HEADER_BUILD_ID: case PR_EVENT_UPDATE:
        if (type < 128)
            p->info.records_by_type[type]++;
        return 0;       /* read by pass 0 */
    case PR_SAMPLE: {
        int rc = pass1_record(wk, type, misc, rec, size, foff);
        int ai = rc == 0 ? sample_attr(p, rec, size) : -1;
        if (ai >= 0 && (p->attrs[ai].pub.sample_type & S_TID)) {
            /* the tid: after IDENTIFIER and IP (parse_sample checked it is there) */
            uint64_t st = p->attrs[ai].pub.sample_type;
            size_t at = 8 + 8 * (size_t)(!!(st & S_IDENTIFIER) + !!(st & S_IP));
            int32_t tid = (int32_t)pld(p, rec + at + 4, 4);
            if (!tidmap_slot((TidMap *)wk->ctx, tid, 1))
                return REC_NOMEM;
        }
        return rc;
    }
    }
    return pass1_record(wk, type, misc, rec, size, foff);
}

static void walk_init(Walk *wk, td_file *f, PerfFile *p, RecFn fn, void *ctx, char *err)
{
    memset(wk, 0, sizeof(*wk));
    wk->f = f;
    wk->p = p;
    wk->fn = fn;
    wk->ctx = ctx;
    wk->err = err;
}

static const Source perf_source;

int perf_open(td_file *f)
{
    PerfFile *p = calloc(1, sizeof(*p));
    if (!p)
        return seterr(f->err, "out of memory"), TD_FAIL;
    f->perf = p;
    f->src = &perf_source;
    p->first_ts = NO_TIME;
    p->last_ts = NO_TIME;
    p->max_cpu = -1;
    p->max_ts = p->next_flush = p->last_flush = INT64_MIN;
    if (!memcmp(f->data, "PERFFILE", 8))
        return seterr(f->err, "unsupported perf.data: version 1 ('PERFFILE'), written by a "
                      "perf older than 2.6.33: convert it with a newer perf (perf "
                      "inject)"), TD_FAIL;
    int host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
    p->swap = memcmp(f->data, host_big ? "2ELIFREP" : "PERFILE2", 8) != 0;
    f->swap = p->swap;
    if (read_file_header(f, p) < 0)
        return TD_FAIL;
    Walk wk;
    char err[TD_ERRLEN] = "";
    int rc;
    if (p->pipe) {
        walk_init(&wk, f, p, pass0_headers, NULL, err);
        wk.headers_only = 1;
        rc = walk(&wk, p->data_start, p->data_end);
        walk_free(&wk);
        if (rc < 0)
            return seterr(f->err, "%s", rc == REC_NOMEM ? "out of memory" : err), TD_FAIL;
    }
    if (choose_id_mode(f, p) < 0)
        return TD_FAIL;
    /* the formats before the records: a sample's payload is checked against them */
    if (p->tracing_done && finish_formats(f) < 0)
        return TD_FAIL;
    for (int i = 0; i < p->nattrs; i++) {
        td_perf_attr *pa = &p->attrs[i].pub;
        p->attrs[i].has_format = pa->type == T_TRACEPOINT && p->tracing_done &&
                                 pa->config <= (uint64_t)f->max_id && f->by_id[pa->config] >= 0;
    }
    p->zcap = p->info.comp_mmap_len;     /* perf's own bound (feature_compressed) */
    TidMap seen = {0};
    Buf *ends = &p->round_ends;
    p->round_lo = INT64_MAX;
    p->round_hi = INT64_MIN;
    walk_init(&wk, f, p, pass1_all, &seen, err);
    wk.round_ends = ends;
    rc = walk(&wk, p->data_start, p->data_end);
    if (rc == 0)
        rc = walk_end(&wk);
    if (rc == 0 && end_round(p))       /* the tail after the last round end */
        rc = REC_NOMEM;
    p->compressed = p->info.compressed || wk.zs;
    p->info.compressed = p->compressed;
    walk_free(&wk);
    if (rc < 0) {
        tidmap_free(&seen);
        return seterr(f->err, "%s", rc == REC_NOMEM ? "out of memory" : err), TD_FAIL;
    }
    (void)cpu_of_id(p, 0);      /* sorts ID_INDEX now: the decoding threads only read it */
    rc = build_comm_history(f, p, &seen);
    tidmap_free(&seen);
    if (rc == 0)
        rc = make_ranges(f, p, ends, p->compressed ? 1 : 4 * default_jobs(), p->data_start,
                         p->data_end);
    if (rc < 0)
        return TD_FAIL;
    if (setup_events(f, p) < 0 || set_meta(f, p) < 0)
        return TD_FAIL;
    return 0;
}

td_perf_info *td_get_perf(td_file *f)
{
    return f && f->perf ? &f->perf->info : NULL;
}

const td_perf_attr *td_perf_attr_at(td_file *f, int i)
{
    return f && f->perf && i >= 0 && i < f->perf->nattrs ? &f->perf->attrs[i].pub : NULL;
}

int td_set_kallsyms(td_file *f, const uint8_t *text, size_t size, char *err)
{
    err[0] = 0;
    f->err = err;
    f->funcs = NULL;
    f->nfuncs = 0;
    return parse_kallsyms(f, text, size);
}

static void perf_free(td_file *f)
{
    PerfFile *p = f->perf;
    if (!p)
        return;
    td_perf_info *in = &p->info;
    free(p->attrs);
    free(p->ids);
    free(p->comms);
    Buf *bufs[] = {&p->packages, &p->dies, &p->threads, &p->numa, &p->cache, &p->build_ids,
                   &p->core_id, &p->socket_id, &p->die_id, &p->fork_rows, &p->lost_rows,
                   &p->lost_sample_rows, &p->id_cpu, &p->round_ends, &p->round_spans,
                   &in->comms.ts, &in->comms.pid, &in->comms.tid, &in->comms.exec,
                   &in->forks.ts, &in->forks.pid, &in->forks.ppid, &in->forks.tid,
                   &in->forks.ptid, &in->exits.ts, &in->exits.pid, &in->exits.ppid,
                   &in->exits.tid, &in->exits.ptid, &in->mmaps.ts, &in->mmaps.pid,
                   &in->mmaps.tid, &in->mmaps.start, &in->mmaps.len, &in->mmaps.pgoff,
                   &in->mmaps.prot, &in->mmaps.flags, &in->mmaps.cpumode, &in->mmaps.build_id,
                   &in->mmaps.build_id_offsets};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        buf_free(bufs[i]);
    strcol_free(&in->comms.comm);
    strcol_free(&in->mmaps.filename);
    free(p);
    f->perf = NULL;
}

/* ------------------------------------------------- pass 2: the samples */

#define COMM_CACHE 256

/* One range's decoding: its slots (sorted runs of a CPU's samples). */
typedef struct {
    Decoder *d;
    int range;
    CpuWork *slots;
    int nslots, cap;
    int32_t *head;              /* per CPU + 1 (0: no CPU): its newest run, -1 */
    struct { int32_t tid; int64_t from, to; const char *comm; } cc[COMM_CACHE];
    int64_t records, unknown, first_ts, last_ts;
    char err[TD_ERRLEN];
    Walk wk;
} RangeWork;

struct PerfDecode {
    RangeWork *rw;
    int nrw;
    int slots_total;            /* atomic, against MAX_SLOTS */
    /* streaming: one range over the whole stream, paused at round ends */
    uint64_t pos;
    int64_t max_ts, next_flush, last_flush;
    int64_t batch_rows;
};

static CpuWork *slot_for(RangeWork *rw, int32_t cpu, int64_t ts)
{
    int ci = cpu + 1;
    int best = -1;
    for (int s = rw->head[ci]; s >= 0; s = rw->slots[s].next_run)
        if (rw->slots[s].last_ts <= ts &&
            (best < 0 || rw->slots[s].last_ts > rw->slots[best].last_ts))
            best = s;
    if (best >= 0)
        return &rw->slots[best];
    PerfDecode *pd = rw->d->perf;
    if (__atomic_add_fetch(&pd->slots_total, 1, __ATOMIC_RELAXED) > MAX_SLOTS) {
        snprintf(rw->err, TD_ERRLEN, "corrupt perf.data: the samples of CPU %" PRId32 " go back "
                 "in time too often (more than %d sorted runs): records out of order", cpu,
                 MAX_SLOTS);
        return NULL;
    }
    if (rw->nslots == rw->cap) {
        int cap = rw->cap ? rw->cap * 2 : 8;
        CpuWork *n = realloc(rw->slots, (size_t)cap * sizeof(*n));
        if (!n)
            return NULL;
        rw->slots = n;
        rw->cap = cap;
    }
    CpuWork *w = &rw->slots[rw->nslots];
    memset(w, 0, sizeof(*w));
    w->d = rw->d;
    w->cpu_slot = rw->range;
    w->cpu = (uint32_t)cpu;
    w->run = 0;
    for (int s = rw->head[ci]; s >= 0; s = rw->slots[s].next_run)
        w->run++;
    w->next_run = rw->head[ci];
    w->last_ts = INT64_MIN;
    w->parts = calloc((size_t)rw->d->f->nevents + 1, sizeof(Part));
    if (!w->parts)
        return NULL;
    rw->head[ci] = rw->nslots++;
    return w;
}

static const char *range_comm(RangeWork *rw, const PerfFile *p, int32_t tid, int64_t ts)
{
    size_t k = (uint32_t)tid % COMM_CACHE;
    if (rw->cc[k].comm && rw->cc[k].tid == tid && rw->cc[k].from <= ts && ts < rw->cc[k].to)
        return rw->cc[k].comm;
    int64_t from, to;
    const CommAt *c = comm_at(p, tid, ts, &from, &to);
    if (!c)
        return NULL;
    rw->cc[k].tid = tid;
    rw->cc[k].from = from;
    rw->cc[k].to = to;
    rw->cc[k].comm = c->comm;
    return c->comm;
}

/* ts, cpu, common_pid, common_comm of a sample that is not a tracepoint. */
static int append_sample_common(Decoder *d, CpuWork *w, int ev, int64_t ts, int32_t tid,
                                const char *comm)
{
    Part *pt = &w->parts[ev];
    if (!pt->cols && part_init(d->f, d, ev, pt) < 0)
        return REC_NOMEM;
    td_column *c = pt->cols;
    if (put_num(&c[0].values, (uint64_t)ts, 8) || put_num(&c[1].values, w->cpu, 4) ||
        put_num(&c[2].values, (uint32_t)tid, 4))
        return REC_NOMEM;
    if (append_comm(pt, (uint64_t)(uintptr_t)comm, comm) < 0)
        return REC_NOMEM;
    pt->rows++;
    return 0;
}

/* The perf sample columns after the format's fields of the row just appended. */
static int append_extra(const PerfFile *p, Part *pt, int k, const EvInfo *in, const Sample *s,
                        uint16_t misc)
{
    for (int i = 0; i < in->nextra; i++) {
        td_column *col = &pt->cols[k + i];
        const char *name = in->extra[i].name;
        int rc = 0;
        if (name == COL_PID.name) {
            rc = put_num(&col->values, s->pid, 4);
        } else if (name == COL_IP.name) {
            rc = put_num(&col->values, s->ip, 8);
        } else if (name == COL_ADDR.name) {
            rc = put_num(&col->values, s->addr, 8);
        } else if (name == COL_PERIOD.name) {
            rc = put_num(&col->values, s->period, 8);
        } else if (name == COL_CPUMODE.name) {
            rc = put_num(&col->values, misc & MISC_CPUMODE_MASK, 1);
        } else if (name == COL_CHAIN.name) {
            /* addresses, without the context markers; their contexts beside them */
            td_column *ctx = &pt->cols[k + i + 1];
            uint8_t mode = MODE_UNKNOWN;
            for (uint64_t j = 0; j < s->nchain && !rc; j++) {
                uint64_t v = pld(p, s->chain + 8 * j, 8);
                if (v >= CTX_MAX) {
                    mode = v == CTX_KERNEL ? MODE_KERNEL : v == CTX_USER ? MODE_USER
                         : v == CTX_HV ? MODE_HV : v == CTX_GUEST_KERNEL ? MODE_GUEST_KERNEL
                         : v == CTX_GUEST_USER ? MODE_GUEST_USER : MODE_UNKNOWN;
                    continue;
                }
                rc = put_num(&col->values, v, 8) || put_num(&ctx->values, mode, 1);
            }
            rc = rc || put_offset(col, col->values.len / 8) ||
                 put_offset(ctx, ctx->values.len);
            i++;        /* callchain_context is done */
        }
        if (rc)
            return REC_NOMEM;
    }
    return 0;
}

static int decode_record(Walk *wk, uint32_t type, uint16_t misc, const uint8_t *rec,
                         size_t size, uint64_t foff)
{
    RangeWork *rw = wk->ctx;
    Decoder *d = rw->d;
    td_file *f = d->f;
    PerfFile *p = f->perf;
    if (type == PR_FINISHED_ROUND && d->streaming) {
        /* perf's promise: later records are not older than what this round ends
           (the ordered-events flush) */
        PerfDecode *pd = d->perf;
        pd->last_flush = pd->next_flush;
        pd->next_flush = pd->max_ts;
        int64_t pending = 0;
        for (int s = 0; s < rw->nslots; s++)
            for (int e = 0; e < f->nevents; e++)
                pending += rw->slots[s].parts[e].rows;
        return pending >= pd->batch_rows ? 1 : 0;
    }
    if (type != PR_SAMPLE)
        return 0;
    int ai = sample_attr(p, rec, size);
    rw->records++;
    if (ai < 0) {
        rw->unknown++;
        return 0;
    }
    const Attr *a = &p->attrs[ai];
    int ev = a->pub.event;
    if (ev < 0)
        return 0;       /* a tracepoint without a format: said at open */
    Sample s;
    if (parse_sample(p, a, rec, size, &s) < 0)
        return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64 " is too "
                         "short for its fields", foff);
    if (payload_not_its_own(f, p, a, &s))
        return 0;       /* left out: said at open (check_payload) */
    if (s.cpu < 0 && (a->pub.sample_type & (S_ID | S_IDENTIFIER)))
        s.cpu = cpu_of_id(p, s.id);     /* sorted in pass 1: read-only here */
    /* the time span of the samples that count (a first range's first sample may be
       one left out: rw->records counts those too) */
    int64_t ts = s.time == NO_TIME ? 0 : s.time;
    if (f->meta.ranged && (ts < f->range_t0 || ts >= f->range_t1)) {
        rw->records--;          /* another part's */
        return 0;
    }
    if (ts < rw->first_ts)
        rw->first_ts = ts;
    if (ts > rw->last_ts)
        rw->last_ts = ts;
    if (d->streaming && ts > d->perf->max_ts)
        d->perf->max_ts = ts;
    __atomic_fetch_add(&f->events[ev].count, 1, __ATOMIC_RELAXED);
    if (!f->events[ev].wanted)
        return 0;
    int tp = a->pub.type == T_TRACEPOINT;
    if (tp && !s.raw)
        return 0;       /* said at open */
    if (tp && s.raw_size < (uint32_t)f->common_size)
        return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64 " has %u "
                         "bytes of raw data, fewer than the %d of the common fields", foff,
                         s.raw_size, f->common_size);
    if (tp && s.raw_size > INT32_MAX)
        return walk_fail(wk, "corrupt perf.data: raw data of %u bytes", s.raw_size);
    if (s.cpu >= f->meta.cpus)
        return walk_fail(wk, "corrupt perf.data: the SAMPLE record at offset %" PRIu64 " says "
                         "CPU %" PRId32 " (the file has %d)", foff, s.cpu, f->meta.cpus);
    CpuWork *w = slot_for(rw, s.cpu < 0 ? -1 : s.cpu, ts);
    if (!w)
        return rw->err[0] ? walk_fail(wk, "%s", rw->err) : REC_NOMEM;
    /* the thread: the sample's; a tracepoint's own common_pid where the sample has
       none, or -1 (the kernel's word for a task already unhashed, in its last switch) */
    int32_t tid = a->pub.sample_type & S_TID ? (int32_t)s.tid : -1;
    if (tp && tid == -1)
        tid = (int32_t)ld(s.raw + f->common_pid_off, 4, f->swap);
    const char *comm = range_comm(rw, p, tid, ts);
    if (!comm)
        comm = tid == 0 ? "swapper" : "";
    int rc = tp ? append_record(d, w, ev, s.raw, (int)s.raw_size, ts, comm)
                : append_sample_common(d, w, ev, ts, tid, comm);
    if (rc < 0) {
        if (rc == REC_DAMAGE)
            return walk_fail(wk, "%s", w->err);
        return rc;
    }
    w->last_ts = ts;
    const EvInfo *in = &f->info[ev];
    if (in->nextra) {
        Part *pt = &w->parts[ev];
        rc = append_extra(p, pt, pt->ncols - in->nextra, in, &s, misc);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int range_init(Decoder *d, RangeWork *rw, int i)
{
    rw->d = d;
    rw->range = i;
    rw->first_ts = INT64_MAX;       /* no sample yet */
    rw->last_ts = INT64_MIN;
    rw->head = malloc(((size_t)d->f->meta.cpus + 1) * sizeof(int32_t));
    if (!rw->head)
        return TD_ENOMEM;
    for (int c = 0; c <= d->f->meta.cpus; c++)
        rw->head[c] = -1;
    walk_init(&rw->wk, d->f, d->f->perf, decode_record, rw, rw->err);
    rw->wk.bytes_done = &d->bytes_done;
    rw->wk.cancel = &d->cancel;
    return 0;
}

static Decoder *perf_decoder_new(td_file *f, int jobs, char *err)
{
    Decoder *d = decoder_alloc(f, jobs, err);
    if (!d)
        return NULL;
    PerfFile *p = f->perf;
    PerfDecode *pd = calloc(1, sizeof(*pd));
    d->perf = pd;
    if (!pd)
        goto nomem;
    pd->nrw = p->nranges;
    pd->rw = calloc((size_t)pd->nrw, sizeof(RangeWork));
    if (!pd->rw)
        goto nomem;
    for (int i = 0; i < pd->nrw; i++)
        if (range_init(d, &pd->rw[i], i) < 0)
            goto nomem;
    pd->pos = p->data_start;
    pd->max_ts = pd->next_flush = pd->last_flush = INT64_MIN;
    d->bytes_total = (int64_t)(p->data_end - p->data_start);
    return d;
nomem:
    seterr(err, "out of memory");
    decoder_free(d);
    return NULL;
}

/* Free what the decoder's perf part holds (the slots' parts are d->work's once
   moved there). */
static void perf_decoder_free(Decoder *d)
{
    PerfDecode *pd = d->perf;
    if (!pd)
        return;
    if (d->streaming) {         /* d->work is a copy of the range's slots */
        free(d->work);
        d->work = NULL;
        d->nwork = 0;
    }
    for (int i = 0; pd->rw && i < pd->nrw; i++) {
        RangeWork *rw = &pd->rw[i];
        walk_free(&rw->wk);
        for (int s = 0; s < rw->nslots; s++)
            free_parts(d, &rw->slots[s]);
        free(rw->slots);
        free(rw->head);
    }
    free(pd->rw);
    free(pd);
    d->perf = NULL;
}

static int range_task(Decoder *d, int i)
{
    PerfDecode *pd = d->perf;
    RangeWork *rw = &pd->rw[i];
    const Range *r = &d->f->perf->ranges[i];
    int rc = walk(&rw->wk, r->start, r->end);
    if (rc == 0 && i == pd->nrw - 1)
        rc = walk_end(&rw->wk);
    walk_free(&rw->wk);
    if (rc < 0)
        pool_fail(d, rc, rw->err[0] ? rw->err : "corrupt perf.data");
    return rc;
}

static int slot_cmp(const void *a, const void *b)
{
    const CpuWork *x = a, *y = b;
    int32_t cx = (int32_t)x->cpu, cy = (int32_t)y->cpu;
    if (cx != cy)
        return cx < cy ? -1 : 1;
    if (x->cpu_slot != y->cpu_slot)
        return x->cpu_slot < y->cpu_slot ? -1 : 1;
    return x->run < y->run ? -1 : x->run > y->run;
}

/* The slots of every range as the decoder's work, in (CPU, range, run) order:
   the merge's order for equal timestamps.  The ranges keep no slot. */
static int gather_slots(Decoder *d)
{
    PerfDecode *pd = d->perf;
    int total = 0;
    for (int i = 0; i < pd->nrw; i++)
        total += pd->rw[i].nslots;
    CpuWork *work = calloc((size_t)(total ? total : 1), sizeof(CpuWork));
    if (!work)
        return TD_ENOMEM;
    int n = 0;
    d->more_records = d->more_unknown = 0;
    d->more_first_ts = INT64_MAX;
    d->more_last_ts = INT64_MIN;
    for (int i = 0; i < pd->nrw; i++) {
        RangeWork *rw = &pd->rw[i];
        if (rw->nslots)
            memcpy(work + n, rw->slots, (size_t)rw->nslots * sizeof(CpuWork));
        n += rw->nslots;
        free(rw->slots);
        rw->slots = NULL;
        rw->nslots = rw->cap = 0;
        d->more_records += rw->records;
        d->more_unknown += rw->unknown;
        if (rw->first_ts < d->more_first_ts)    /* (INT64_MAX: no sample that counts) */
            d->more_first_ts = rw->first_ts;
        if (rw->last_ts > d->more_last_ts)
            d->more_last_ts = rw->last_ts;
    }
    if (n)
        qsort(work, (size_t)n, sizeof(CpuWork), slot_cmp);
    free_work(d);
    d->work = work;
    d->nwork = n;
    return 0;
}

static void perf_run(Decoder *d, td_tick tick, void *ctx)
{
    PerfDecode *pd = d->perf;
    run_pool(d, d->jobs, pd->nrw, range_task, tick, ctx);
    if (!d->failed && gather_slots(d) < 0)
        pool_fail(d, REC_NOMEM, NULL);
}

static int perf_stream_step(Decoder *d, int64_t batch_rows, int64_t *horizon, int *all_done,
                            char *err)
{
    PerfDecode *pd = d->perf;
    PerfFile *p = d->f->perf;
    RangeWork *rw = &pd->rw[0];
    pd->batch_rows = batch_rows;
    /* the stream's own slots stay in the range between batches; d->work is a
       sorted copy for emit() (the parts are shared, not copied) */
    free(d->work);
    d->work = NULL;
    d->nwork = 0;
    int rc = 0;
    while (pd->pos < p->data_end) {
        /* walk to the next pause (a round end with enough rows waiting) */
        uint64_t start = pd->pos;
        rc = walk_pausing(&rw->wk, &pd->pos, p->data_end);
        if (rc < 0)
            break;
        if (rc > 0 || pd->pos == start)
            break;
    }
    if (rc >= 0 && pd->pos >= p->data_end)
        rc = walk_end(&rw->wk);
    if (rc < 0)
        return seterr(err, "%s", rc == REC_NOMEM ? "out of memory"
                      : rw->err[0] ? rw->err : "corrupt perf.data"), TD_FAIL;
    *all_done = pd->pos >= p->data_end;
    *horizon = *all_done ? INT64_MAX : pd->last_flush;
    CpuWork *work = calloc((size_t)(rw->nslots ? rw->nslots : 1), sizeof(CpuWork));
    if (!work)
        return seterr(err, "out of memory"), TD_FAIL;
    if (rw->nslots) {
        memcpy(work, rw->slots, (size_t)rw->nslots * sizeof(CpuWork));
        qsort(work, (size_t)rw->nslots, sizeof(CpuWork), slot_cmp);
    }
    d->work = work;
    d->nwork = rw->nslots;
    d->more_records = rw->records;
    d->more_unknown = rw->unknown;
    d->more_first_ts = rw->first_ts;
    d->more_last_ts = rw->last_ts;
    return 0;
}

/* What the merge (_td_merge.c) and td_close() know of perf.data. */
static const Source perf_source = {
    .file_free = perf_free,
    .decoder_new = perf_decoder_new,
    .decoder_free = perf_decoder_free,
    .run = perf_run,
    .stream_step = perf_stream_step,
    .set_time_range = perf_set_time_range,
    .index = perf_index,
};
