/*
 * _tdcore.h: schedwake's own reader of trace.dat and perf.data, in plain C (no
 * Python, no libtracecmd or libperf): the file layers (trace.dat v6/v7 headers,
 * options, sections, zstd/zlib chunks; perf.data headers, attributes, feature
 * sections, records, zstd-compressed records), the event formats, the
 * ring-buffer pages and the records, decoded into the columns of _columns.h.
 * _tdread.c binds it to Python; fuzz/ drives it directly.  Every length and
 * offset read from the file is checked before use; damage is an error message
 * naming the section and the file offset.  _td_internal.h lists the parts.
 */
#ifndef SCHEDWAKE_TDCORE_H
#define SCHEDWAKE_TDCORE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mremap() */
#endif

#include <stddef.h>
#include <stdint.h>

#include "_columns.h"

#define TD_ERRLEN 512

/* What the interface's functions return. */
enum {
    TD_OK = 0,
    TD_FAIL = -1,       /* err says why: damage, an unsupported file, "out of memory" */
    TD_STOPPED = -2,    /* td_decode(): the tick callback asked to stop */
};

enum td_kind {
    TD_INT,       /* integer of 1/2/4/8 bytes, signed or not */
    TD_STR,       /* char[N] (and common_comm, prev_state_str): dictionary strings */
    TD_DYNSTR,    /* __data_loc / __rel_loc char[] */
    TD_SYM,       /* a pointer printed as %ps/%pS/...: kallsyms name */
    TD_ARRAY,     /* fixed numeric array: list column */
    TD_DYNARRAY,  /* __data_loc numeric array: list column */
    TD_BIN,       /* anything else: raw bytes */
};

/* One output column of one event. */
typedef struct {
    char *name;
    enum td_kind kind;
    int bits, is_signed;        /* TD_INT, and the elements of TD_ARRAY/TD_DYNARRAY */
    Buf values;                 /* TD_INT, TD_ARRAY, TD_DYNARRAY values; TD_BIN bytes */
    Buf offsets;                /* TD_ARRAY/TD_DYNARRAY/TD_BIN: int32, one per row + 1 */
    StrCol str;                 /* TD_STR, TD_DYNSTR, TD_SYM */
} td_column;

/* One event of the file's formats and, once decoded, its table. */
typedef struct {
    const char *name, *system;
    int id;
    int wanted;
    int64_t count;              /* records of this event in the buffer read */
    int ncols;                  /* 0 unless wanted */
    td_column *cols;            /* ts, cpu, common_pid, common_comm, common_flags,
                                   common_preempt_count, then the format's own fields
                                   (sched_switch: prev_state_str after prev_state) */
} td_event;

typedef struct td_file td_file;

/* Parse everything but the ring-buffer data (trace.dat) or the samples
   (perf.data: the file is told by its magic).  0, or -1 with err filled. */
int td_open(td_file **out, const uint8_t *data, size_t size, char *err);

/* Say that td_open()'s data is a read-only mapping of the file (mmap MAP_PRIVATE,
   never written): the decoder then gives the pages it has consumed back to the page
   cache (madvise MADV_DONTNEED), so the file's pages do not add up in the process's
   memory.  Never for other memory: MADV_DONTNEED would zero it. */
void td_data_is_file_mapping(td_file *f);

/* Say that the caller builds tables only of the events that have rows: td_decode()
   then leaves an event without rows without columns (cols NULL), rather than
   with empty ones (a file holds a thousand formats or more, most never fired). */
void td_no_empty_tables(td_file *f);

/* Events: td_nevents() of them, in id order. */
int td_nevents(const td_file *f);
td_event *td_event_at(td_file *f, int i);
/* Ask for the table of every event (wanted = 1) or of none (0) before decoding. */
void td_want_all(td_file *f, int wanted);

/* Called now and then from the thread that called td_decode(), with the fraction
   done; a non-zero return stops the decoding (td_decode() then returns -2). */
typedef int (*td_tick)(void *ctx, double done);

/* Decode the records (trace.dat: the selected buffer's; perf.data: the samples) into
   the wanted events' columns, in `jobs` threads (<= 0: as many as the CPUs this
   process may run on).  Rows of every table are in (timestamp, CPU, file) order,
   whatever `jobs` is.  TD_OK, TD_FAIL with err filled (damage or no memory), or
   TD_STOPPED when tick asked to stop. */
int td_decode(td_file *f, int jobs, td_tick tick, void *ctx, char *err);

/* Streaming, in memory that does not grow with the file: after td_open() and the
   choice of events, td_stream_next() fills the wanted events' columns (and the
   lost rows of td_get_meta()) with the next batch of about `batch_rows` rows, in
   (timestamp, CPU) order across batches; it returns 1 for a batch, 0 at the end,
   -1 with err filled.  A batch's columns are freed by the next call; take their
   memory (as the binding does) before.  Metadata counts are cumulative. */
typedef struct td_stream td_stream;
int td_stream_open(td_file *f, td_stream **out, char *err);
int td_stream_next(td_stream *st, int64_t batch_rows, char *err);
void td_stream_close(td_stream *st);
/* Fraction of the buffer's data decoded so far, 0..1 (for a progress display). */
double td_stream_done(const td_stream *st);

/* Metadata of the file (strings are NUL-terminated, valid UTF-8, or NULL). */
typedef struct {
    int file_version;           /* 6 or 7 */
    int big_endian, long_size, page_size;
    const char *compression;    /* NULL when the data is not compressed */
    int cpus;                   /* CPU ids run 0..cpus-1 */
    const char *clock, *uname, *trace_cmd_version, *cpustats;
    const char *buffer;         /* "" = the top buffer, else the instance read */
    int ninstances;
    const char *const *instances;
    const uint16_t *options;    /* ids of the options seen */
    int noptions;
    int64_t records, unknown_records;
    int64_t first_ts, last_ts;  /* of the records decoded; 0 when none */
    /* lost events: rows (ts, cpu, count; -1 = unknown count), and sums per CPU
       (an unknown-size loss counts as 1) */
    Buf lost_ts, lost_cpu, lost_count;
    const int64_t *lost_per_cpu;
    /* damage that was skipped, bounded and said: one line each */
    int nwarnings;
    const char *const *warnings;
    /* a time-range read (td_set_time_range): its [t0, t1), and the blocks of the
       index (pages, or compressed chunks) it decoded of all there are */
    int ranged;
    int64_t range_t0, range_t1;
    int64_t blocks_decoded, blocks_total;
} td_meta;

td_meta *td_get_meta(td_file *f);

/* ------------------------------------------------------ time ranges */

/* The index of a trace.dat's buffer: per CPU with data, its blocks (v6 and
   uncompressed v7: ring-buffer pages; compressed v7: chunks) in file order, each
   with the time (ns, as the records' ts) of its first page that holds anything (an
   empty block gets the next block's time, INT64_MAX at the end).  Block i holds
   records in [first_ts[i], first_ts[i + 1]] (the kernel's pages are in time order).
   Cost: a page header per page, or per chunk its header and the decompression of its
   first non-empty page (zstd decodes a block of up to 128 KiB at once: in practice
   the chunk).  A perf.data: one entry, cpu UINT32_MAX, of its FINISHED_ROUND rounds
   with samples and each one's earliest sample (rounds overlap a little in time). */
typedef struct {
    uint32_t cpu;
    int64_t nblocks;
    int64_t *first_ts;          /* nblocks times */
} td_cpu_blocks;

/* Build (once) and return the whole index of f: *out has *ncpus entries, owned by f.
   TD_OK, or TD_FAIL with err filled (damage). */
int td_index(td_file *f, const td_cpu_blocks **out, int *ncpus, char *err);

/* Before td_decode(): read only the records with t0 <= ts < t1 (t1 INT64_MAX: to the
   end), decoding only the blocks of each CPU that can hold them, found by a binary
   search over the block times (O(log n) blocks' first pages read per CPU, not the
   whole index); the lost-event rows and per-CPU sums are those of the range.  The
   blocks decoded are checked as a whole read checks them (pages in time order), and
   no record may be before its page's time; blocks not decoded are not read, so their
   damage is not seen.  perf.data: the rounds whose samples' span meets the range.
   TD_FAIL with err filled when t0 >= t1 or on damage. */
int td_set_time_range(td_file *f, int64_t t0, int64_t t1, char *err);

void td_close(td_file *f);

/* ----------------------------------------------------------- perf.data */

/* What a perf.data file says besides its samples (strings NUL-terminated UTF-8,
   or NULL where the file does not say). */
typedef struct {
    const char *name;           /* as perf names it: "sched:sched_switch", "cpu-clock:ppp" */
    int event;                  /* index of its table's event (td_event_at), -1: none */
    uint32_t type;
    uint64_t config, sample_type, sample_period, read_format;
    int freq, precise_ip, sample_id_all, exclude_user, exclude_kernel, use_clockid, clockid;
    int64_t nids, samples;
} td_perf_attr;

typedef struct {
    int32_t node;
    uint64_t mem_total_kb, mem_free_kb;
    const char *cpus;           /* cpulist */
} td_perf_numa;

typedef struct {
    uint32_t level, line_size, sets, ways;
    const char *type, *size, *cpus;     /* "Unified", "32768K", "0-1" */
} td_perf_cache;

typedef struct {
    int32_t pid;
    uint16_t misc;              /* cpumode in the low 3 bits: 1 kernel, 2 user */
    int size;                   /* bytes of id */
    uint8_t id[20];
    const char *filename;
} td_perf_build_id;

/* Side-band records as rows (Bufs of int64/int32/uint64 values, strings as
   dictionary columns): task names, forks, exits, memory maps, losses. */
typedef struct {
    Buf ts, pid, tid;
    StrCol comm;
    Buf exec;                   /* uint8: the name came with exec() */
} td_perf_comms;

typedef struct {
    Buf ts, pid, ppid, tid, ptid;
} td_perf_tasks;

typedef struct {
    Buf ts, pid, tid, start, len, pgoff, prot, flags, cpumode;
    StrCol filename;
    Buf build_id, build_id_offsets;     /* binary: bytes of the build id, if any */
} td_perf_mmaps;

#define TD_TIME_ENDS 16

typedef struct {
    int pipe;                   /* written to a pipe (perf record -o -) */
    int compressed;             /* zstd-compressed records (perf record -z) */
    int comp_level, comp_ratio;
    uint32_t comp_mmap_len;
    const char *hostname, *osrelease, *perf_version, *arch, *cpudesc, *cpuid, *cmdline;
    int nr_cpus_avail, nr_cpus_online;
    uint64_t total_mem_kb;
    int n_packages, n_dies, n_threads;          /* CPU_TOPOLOGY sibling lists */
    const char *const *packages, *const *dies, *const *threads;
    int n_cpu_ids;                              /* per CPU: core, socket, die id (-1) */
    const int32_t *core_id, *socket_id, *die_id;
    int n_numa;
    const td_perf_numa *numa;
    int n_cache;
    const td_perf_cache *cache;
    int has_clockid, has_clock_data;
    uint64_t clockid, clock_data_clockid, clock_tod_ns, clock_clockid_ns;
    int has_sample_time;
    uint64_t sample_time_first, sample_time_last;
    int n_build_ids;
    const td_perf_build_id *build_ids;
    int nattrs;                 /* td_perf_attr_at(f, 0 .. nattrs-1) */
    int has_tracing_data;
    const char *tracing_version;
    int64_t rounds, out_of_order, throttles, lost_samples, filtered_samples;
    int64_t records_by_type[128];       /* counted in the pass over the records */
    /* the earliest and the latest sample times (ascending, descending) of the samples
       that count (events with a format, payloads that are theirs) and their
       attributes: the reader's outlier rule over every event, loaded or not */
    int64_t timed_samples;
    int n_time_low, n_time_high;
    int64_t time_low[TD_TIME_ENDS], time_high[TD_TIME_ENDS];
    int32_t time_low_attr[TD_TIME_ENDS], time_high_attr[TD_TIME_ENDS];
    td_perf_comms comms;
    td_perf_tasks forks, exits;
    td_perf_mmaps mmaps;
} td_perf_info;

/* The perf.data facts of f, NULL for a trace.dat.  Valid until td_close(). */
td_perf_info *td_get_perf(td_file *f);
const td_perf_attr *td_perf_attr_at(td_file *f, int i);

/* Kernel symbols for a perf.data file, whose tracing data carries none (perf
   writes an empty kallsyms): /proc/kallsyms text, used for %ps fields such as
   workqueue_execute_start.function.  Before td_decode().  0, or -1 (err set). */
int td_set_kallsyms(td_file *f, const uint8_t *text, size_t size, char *err);
/* Whether a wanted event has a field that names a kernel function (%ps): 1, 0, -1. */
int td_needs_kallsyms(td_file *f);

/* Open, decode every event and close: the whole reader, for fuzzing.  0 or -1. */
int td_fuzz_read(const uint8_t *data, size_t size, int jobs, char *err);

#endif
