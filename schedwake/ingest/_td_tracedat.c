/*
 * _td_tracedat.c: the trace.dat file layer (trace-cmd.dat.v6(5), v7(5)):
 *   header: magic, version, endianness, long size, page size
 *   v6: header_page, header_event, ftrace and event formats, kallsyms, printk,
 *       cmdlines, CPU count, options, "flyrecord" + per-CPU (offset, size)
 *   v7: compression, the offset of the first options section; sections (id,
 *       flags, description, size), possibly compressed; BUFFER options give each
 *       buffer's per-CPU data, compressed as chunks of whole pages
 * tracedat_open() (for td_open(), through _td_dispatch.c) reads all of it but the
 * ring-buffer data (_td_records.c) and picks the buffer to decode.  The tracing
 * header and the formats' checks it shares with perf.data are _td_tracing.c's.
 *
 * Why our own reader and not libtracecmd: libtracecmd trusts its input (a page
 * size of 0 divides by zero, a damaged page makes it loop, a format can make
 * libtraceevent write out of bounds) and it reads compressed files through a
 * chunk cache that grows without bound.  A reader that must survive any file has
 * to check every number it takes from the file, so it is ours, in C (as the text
 * scanner is): the build needs only a C compiler and the -dev packages of zstd
 * and zlib, and the hot loop appends to column buffers without Python objects.
 * libtracecmd stays as the conformance oracle (schedwake.ingest.libtracecmd).
 *
 * Safety rules followed in every part: every offset and length read from the
 * file goes through a bounds check before use (rd_* cursors, page checks),
 * arithmetic on file values is done in 64 bits against limits checked first,
 * and every failure is an error message naming the section and file offset.
 * Damage is never skipped silently: it is an error, or a warning line when it
 * is bounded and named (td_meta.warnings).
 */
#include "_td_internal.h"

/* The payload of the v7 section at file offset `off` (decompressed when flagged);
   *out points into the file or into memory owned by f. */
static int read_section(td_file *f, uint64_t off, int want_id, const char *what,
                        Rd *out)
{
    Rd r = {f->data, f->size, 0, 0, what, f->swap, f->err};
    uint64_t id, flags, desc, size;
    if (off > f->size)
        return seterr(f->err, "corrupt %s: the offset %" PRIu64 " of the %s"
                      " is past the end of the file (%zu bytes)", f->kind, off, what,
                      f->size), TD_FAIL;
    r.pos = (size_t)off;
    if (rd_u(&r, 2, &id, "section id") || rd_u(&r, 2, &flags, "section flags") ||
        rd_u(&r, 4, &desc, "section description") || rd_u(&r, 8, &size, "section size"))
        return TD_FAIL;
    if (want_id >= 0 && (int)id != want_id)
        return seterr(f->err, "corrupt %s: the section at offset %" PRIu64
                      " should be the %s (id %d) but has id %" PRIu64, f->kind, off, what, want_id, id),
               -1;
    if (size > r.size - r.pos)
        return rd_fail(&r, "the section runs past the end of the file");
    size_t start = r.pos;
    *out = (Rd){f->data + start, (size_t)size, 0, start, what, f->swap, f->err};
    if (!(flags & 1))
        return 0;
    if (f->comp == COMP_NONE)
        return seterr(f->err, "corrupt %s: the %s section at offset %" PRIu64
                      " is flagged compressed in a file without compression", f->kind, what,
                      off), TD_FAIL;
    Rd c = *out;
    uint64_t csize, usize;
    if (rd_u(&c, 4, &csize, "compressed size") || rd_u(&c, 4, &usize, "uncompressed size"))
        return TD_FAIL;
    if (csize > c.size - c.pos)
        return rd_fail(&c, "the compressed data runs past the section");
    if (usize > MAX_SECTION_BYTES)
        return rd_fail(&c, "implausible uncompressed size");
    uint8_t *mem = malloc(usize ? usize : 1);
    if (own(f, mem) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    if (decompress(f->comp, c.data + c.pos, (size_t)csize, mem, (size_t)usize) < 0)
        return seterr(f->err, "corrupt %s: the %s section at offset %" PRIu64
                      " does not decompress to its declared %" PRIu64 " bytes", f->kind, what, off, usize),
               -1;
    *out = (Rd){mem, (size_t)usize, 0, 0, what, f->swap, f->err};
    out->what = what;
    return 0;
}

/* --------------------------------------------- text the result does not use */

/*
 * The printk formats, and the lines of header_page beside the three the reader
 * needs (timestamp, commit, data: _td_format.c checks them), are not used for the
 * result.  Damage in them is still damage: a warning names the section, the count
 * of lines that are not what the kernel writes and the first of them.
 */
typedef int (*LineOk)(const char *p, const char *end);

/* printk_formats: "0xffffffff8281942f : \"thaw_processes\"" */
static int printk_line_ok(const char *p, const char *end)
{
    if (end - p < 3 || p[0] != '0' || p[1] != 'x')
        return 0;
    const char *q = p + 2;
    while (q < end && ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')))
        q++;
    return q > p + 2 && end - q >= 4 && !memcmp(q, " : \"", 4);
}

/* header_page: "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;" */
static int header_page_line_ok(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    int64_t v;
    return end - p > 6 && !memcmp(p, "field:", 6) && keyed_int(p, end, "offset:", &v) == 0 &&
           keyed_int(p, end, "size:", &v) == 0 && keyed_int(p, end, "signed:", &v) == 0;
}

static int warn_bad_lines(td_file *f, const char *what, const uint8_t *text, size_t n,
                          LineOk ok, const char *shape)
{
    const char *p = (const char *)text, *end = p + n;
    int lines = 0, bad = 0, first = 0;
    while (p < end) {
        const char *le = find_line_end(p, end);
        lines++;
        if (le > p && !ok(p, le) && !bad++)
            first = lines;
        p = le + 1;
    }
    if (!bad)
        return 0;
    if (td_warn(f, "%s: %d of %d lines are not %s (the first: line %d); not used, "
                "ignored", what, bad, lines, shape, first) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    return 0;
}

/* The header info (header_page, header_event) at r: read, and header_page's unused
   lines checked. */
static int read_header_info_checked(td_file *f, Rd *r)
{
    Rd again = *r;
    const char *label;
    uint64_t n;
    const uint8_t *text;
    if (read_header_info(f, r) < 0)
        return TD_FAIL;
    /* it read the same framing without fault */
    if (rd_cstr(&again, &label, 32, "header label") < 0 || rd_u(&again, 8, &n, "header size") ||
        rd_bytes(&again, (size_t)n, &text, "header_page") < 0)
        return TD_FAIL;
    return warn_bad_lines(f, "ring-buffer page header (header_page)", text, (size_t)n,
                          header_page_line_ok, "'field: type name; offset:N; size:N; signed:N;'");
}

static int check_printk(td_file *f, const uint8_t *text, size_t n)
{
    return warn_bad_lines(f, "printk formats", text, n, printk_line_ok,
                          "'0xaddress : \"format\"'");
}

/* ------------------------------------------------------------- options */

/* A file with more buffers than this is damaged (trace-cmd makes one per instance). */
#define MAX_BUFFERS 4096

static int add_buffer(td_file *f, Buffer **out)
{
    if (f->nbuffers == MAX_BUFFERS)
        return seterr(f->err, "corrupt %s: more than %d BUFFER options", f->kind,
                      MAX_BUFFERS), TD_FAIL;
    Buffer *b = realloc(f->buffers, (size_t)(f->nbuffers + 1) * sizeof(*b));
    if (!b)
        return seterr(f->err, "out of memory"), TD_FAIL;
    f->buffers = b;
    *out = &b[f->nbuffers++];
    memset(*out, 0, sizeof(**out));
    return 0;
}

static int set_text(td_file *f, char **dst, const uint8_t *p, size_t n)
{
    const uint8_t *nul = memchr(p, 0, n);
    size_t len = nul ? (size_t)(nul - p) : n;
    *dst = own_str(f, (const char *)p, len);
    return *dst ? TD_OK : TD_ENOMEM;
}

/* A v7 BUFFER option: flyrecord section offset, name, clock, page size, CPUs. */
static int buffer_option_v7(td_file *f, Rd *o)
{
    Buffer *b;
    uint64_t sec, page_size, ncpu;
    const char *name, *clock;
    if (rd_u(o, 8, &sec, "buffer section offset") || rd_cstr(o, &name, 4096, "buffer name") ||
        rd_cstr(o, &clock, 4096, "buffer clock") || rd_u(o, 4, &page_size, "buffer page size") ||
        rd_u(o, 4, &ncpu, "buffer CPU count"))
        return TD_FAIL;
    if (ncpu > MAX_CPUS)
        return rd_fail(o, "implausible CPU count in a buffer option");
    if (page_size < MIN_PAGE_SIZE || page_size > MAX_PAGE_SIZE ||
        (page_size & (page_size - 1)))
        return seterr(f->err, "corrupt %s: buffer '%s' has page size %" PRIu64
                      " (a power of two from %u to %u expected)", f->kind, name, page_size,
                      MIN_PAGE_SIZE, MAX_PAGE_SIZE), TD_FAIL;
    if (add_buffer(f, &b) < 0)
        return TD_FAIL;
    b->name = own_str(f, name, strlen(name));
    b->clock = own_str(f, clock, strlen(clock));
    if (!b->name || !b->clock)
        return TD_ENOMEM;
    b->page_size = (uint32_t)page_size;
    b->cpu = calloc(ncpu ? ncpu : 1, sizeof(CpuData));
    if (own(f, b->cpu) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    for (uint64_t i = 0; i < ncpu; i++) {
        uint64_t cpu, off, size;
        if (rd_u(o, 4, &cpu, "CPU id") || rd_u(o, 8, &off, "CPU data offset") ||
            rd_u(o, 8, &size, "CPU data size"))
            return TD_FAIL;
        if (cpu >= MAX_CPUS)
            return rd_fail(o, "implausible CPU id in a buffer option");
        b->cpu[i] = (CpuData){(uint32_t)cpu, off, size};
    }
    b->ncpu = (int)ncpu;
    if (o->pos != o->size)
        return seterr(f->err, "corrupt %s: the BUFFER option of buffer '%s' has %zu bytes "
                      "after its table of %" PRIu64 " CPUs (a CPU count that says too few)",
                      f->kind, b->name, o->size - o->pos, ncpu), TD_FAIL;
    /* the flyrecord section itself: its flags say whether the data is compressed,
       its size where the CPU data must be */
    Rd r = {f->data, f->size, 0, 0, "buffer flyrecord section", f->swap, f->err};
    uint64_t id, flags, desc, size;
    if (sec > f->size)
        return seterr(f->err, "corrupt %s: buffer '%s' section offset %" PRIu64
                      " is past the end of the file", f->kind, b->name, sec), TD_FAIL;
    r.pos = (size_t)sec;
    if (rd_u(&r, 2, &id, "section id") || rd_u(&r, 2, &flags, "section flags") ||
        rd_u(&r, 4, &desc, "section description") || rd_u(&r, 8, &size, "section size"))
        return TD_FAIL;
    if (id != OPT_BUFFER)
        return seterr(f->err, "corrupt %s: the data section of buffer '%s' at offset "
                      "%" PRIu64 " has section id %" PRIu64 ", not %d", f->kind, b->name, sec, id,
                      OPT_BUFFER), TD_FAIL;
    if (size > r.size - r.pos)
        return rd_fail(&r, "the buffer's data section runs past the end of the file");
    b->data_start = r.pos;
    b->data_end = r.pos + size;
    b->compressed = flags & 1;
    if (b->compressed && f->comp == COMP_NONE)
        return seterr(f->err, "corrupt %s: buffer '%s' data is flagged compressed in a "
                      "file without compression", f->kind, b->name), TD_FAIL;
    return 0;
}

static int do_option(td_file *f, uint16_t id, Rd *o, uint64_t file_off);

/* One options list: {u16 id, u32 size, data} until DONE.  v7: *next gets DONE's
   offset of the next options section. */
static int read_options(td_file *f, Rd *r, uint64_t *next)
{
    *next = 0;
    for (;;) {
        uint64_t id, size;
        if (rd_u(r, 2, &id, "option id") < 0)
            return TD_FAIL;
        if (id == OPT_DONE && f->version < 7)
            return 0;
        if (rd_u(r, 4, &size, "option size") < 0)
            return TD_FAIL;
        if (size > r->size - r->pos)
            return rd_fail(r, "an option runs past its section");
        Rd o = {r->data + r->pos, (size_t)size, 0, r->base + r->pos, "option", f->swap, f->err};
        uint64_t file_off = r->base + r->pos;
        r->pos += (size_t)size;
        uint16_t id16 = (uint16_t)id;
        if (buf_put(&f->options, &id16, 2) < 0)
            return seterr(f->err, "out of memory"), TD_FAIL;
        if (id == OPT_DONE) {
            if (size >= 8)
                *next = ld(o.data, 8, f->swap);
            return 0;
        }
        if (do_option(f, id16, &o, file_off) < 0)
            return TD_FAIL;
    }
}

/* An option whose size is not the size of what it holds is damage (its neighbours'
   framing is then in doubt too), not something to read a prefix of. */
static int option_size_is(td_file *f, const char *what, const Rd *o, size_t want)
{
    if (o->size == want)
        return 0;
    return seterr(f->err, "corrupt %s: the %s option at offset %" PRIu64 " has %zu bytes, "
                  "not %zu", f->kind, what, o->base, o->size, want), TD_FAIL;
}

static const char *section_option_name(uint16_t id)
{
    switch (id) {
    case OPT_HEADER_INFO: return "HEADER_INFO";
    case OPT_FTRACE_EVENTS: return "FTRACE_EVENTS";
    case OPT_EVENT_FORMATS: return "EVENT_FORMATS";
    case OPT_KALLSYMS: return "KALLSYMS";
    case OPT_PRINTK: return "PRINTK";
    case OPT_CMDLINES: return "CMDLINES";
    default: return "STRINGS";
    }
}

static int read_section_option(td_file *f, uint16_t id, Rd *o)
{
    uint64_t off;
    Rd s;
    const char *name = section_option_name(id);
    if (option_size_is(f, name, o, 8) < 0 || rd_u(o, 8, &off, "section offset") < 0)
        return TD_FAIL;
    /* trace-cmd writes each once: a second would read the formats (or names,
       symbols) twice, or replace the first ones, which is no smaller damage */
    if (f->section_options & (1ull << id))
        return seterr(f->err, "corrupt %s: a second %s option (at offset %" PRIu64 ")",
                      f->kind, name, o->base), TD_FAIL;
    f->section_options |= 1ull << id;
    /* each case is true on failure: -1 (a bare `a || b` would be 1, which callers
       that test `< 0` took for success, so that a v7 section that does not
       decompress or parse was skipped without a word) */
    switch (id) {
    case OPT_HEADER_INFO:
        return read_section(f, off, id, "header info", &s) || read_header_info_checked(f, &s)
               ? -1 : 0;
    case OPT_FTRACE_EVENTS:
        return read_section(f, off, id, "ftrace event formats", &s) ||
               read_ftrace_formats(f, &s) ? -1 : 0;
    case OPT_EVENT_FORMATS:
        return read_section(f, off, id, "event formats", &s) || read_event_formats(f, &s)
               ? -1 : 0;
    case OPT_KALLSYMS:
        return read_section(f, off, id, "kallsyms", &s) || read_kallsyms(f, &s) ? -1 : 0;
    case OPT_PRINTK: {
        /* a u32 size and the text: checked, not needed */
        uint64_t n;
        const uint8_t *text;
        return read_section(f, off, id, "printk formats", &s) ||
               rd_u(&s, 4, &n, "printk formats size") ||
               rd_bytes(&s, n > s.size ? s.size + 1 : (size_t)n, &text, "printk formats") ||
               check_printk(f, text, (size_t)n) ? -1 : 0;
    }
    case OPT_STRINGS:
        return read_section(f, off, id, "strings", &s);     /* checked, not needed */
    case OPT_CMDLINES:
        return read_section(f, off, id, "cmdlines", &s) || read_cmdlines(f, &s) ? -1 : 0;
    }
    return 0;
}

/* DATE (microseconds between the trace clock and the time of day) and OFFSET
   (nanoseconds) options: trace-cmd report adds each to every timestamp.  Their sum
   is checked here; what it does to the records' times, in check_cpu_times(). */
static int time_offset_option(td_file *f, uint16_t id, const Rd *o, uint64_t file_off)
{
    const char *what = id == OPT_DATE ? "DATE" : "OFFSET";
    char tmp[64];
    size_t n = o->size < sizeof(tmp) - 1 ? o->size : sizeof(tmp) - 1;
    memcpy(tmp, o->data, n);
    tmp[n] = 0;
    int64_t v, ns = 0;
    const char *end = tmp + strnlen(tmp, n), *after;
    int bad = parse_int(tmp, end, &v, &after) < 0;
    while (!bad && after < end && (*after == ' ' || *after == '\t' || *after == '\n'))
        after++;
    if (bad || after != end)
        return seterr(f->err, "corrupt %s: the %s option at offset %" PRIu64 " is not a "
                      "number (of %s) that fits 64 bits", f->kind, what, file_off,
                      id == OPT_DATE ? "microseconds" : "nanoseconds"), TD_FAIL;
    if (id == OPT_OFFSET)
        ns = v;
    else if (__builtin_mul_overflow(v, 1000, &ns))
        return seterr(f->err, "corrupt %s: the DATE option at offset %" PRIu64 " says %"
                      PRId64 " microseconds, beyond 64 bits of nanoseconds", f->kind, file_off,
                      v), TD_FAIL;
    if (__builtin_add_overflow(f->ts_offset, ns, &f->ts_offset))
        return seterr(f->err, "corrupt %s: the %s option at offset %" PRIu64 " (%" PRId64
                      " ns) and the time offsets before it add up beyond 64 bits", f->kind,
                      what, file_off, ns), TD_FAIL;
    return 0;
}

static int do_option(td_file *f, uint16_t id, Rd *o, uint64_t file_off)
{
    switch (id) {
    case OPT_DATE:
    case OPT_OFFSET:
        return time_offset_option(f, id, o, file_off);
    case OPT_CPUSTAT: {
        const uint8_t *nul = memchr(o->data, 0, o->size);
        size_t n = nul ? (size_t)(nul - o->data) : o->size;
        char nl = '\n';
        if (buf_put(&f->cpustats, o->data, n) < 0 || buf_put(&f->cpustats, &nl, 1) < 0)
            return seterr(f->err, "out of memory"), TD_FAIL;
        return 0;
    }
    case OPT_BUFFER:
        if (f->version >= 7)
            return buffer_option_v7(f, o);
        {
            /* v6: {u64 offset, name}: the instance's "flyrecord" block */
            Buffer *b;
            uint64_t off;
            const char *name;
            if (rd_u(o, 8, &off, "buffer offset") || rd_cstr(o, &name, 4096, "buffer name") ||
                add_buffer(f, &b) < 0)
                return TD_FAIL;
            b->name = own_str(f, name, strlen(name));
            if (!b->name)
                return TD_ENOMEM;
            b->page_size = f->page_size;
            b->ncpu = -1;           /* read when selected: see v6_buffer_cpus */
            b->cpu = NULL;
            /* keep the offset in the first CpuData slot */
            b->cpu = calloc(1, sizeof(CpuData));
            if (own(f, b->cpu) < 0)
                return seterr(f->err, "out of memory"), TD_FAIL;
            b->cpu[0].offset = off;
            return 0;
        }
    case OPT_TRACECLOCK:
        return set_text(f, &f->clock_list, o->data, o->size);
    case OPT_UNAME:
        return set_text(f, (char **)&f->meta.uname, o->data, o->size);
    case OPT_VERSION:
        return set_text(f, (char **)&f->meta.trace_cmd_version, o->data, o->size);
    case OPT_CPUCOUNT: {
        uint64_t n;
        if (option_size_is(f, "CPUCOUNT", o, 4) < 0 || rd_u(o, 4, &n, "CPU count") < 0)
            return TD_FAIL;
        if (n == 0 || n > MAX_CPUS)
            return seterr(f->err, "corrupt %s: the CPUCOUNT option says %" PRIu64
                          " CPUs", f->kind, n), TD_FAIL;
        /* trace-cmd writes it more than once, always the same */
        if (f->cpucount_option && (int)n != f->cpucount_option)
            return seterr(f->err, "corrupt %s: the CPUCOUNT options disagree: %d CPUs at "
                          "offset %" PRIu64 ", %" PRIu64 " at offset %" PRIu64, f->kind,
                          f->cpucount_option, f->cpucount_offset, n, file_off), TD_FAIL;
        f->cpucount_option = (int)n;
        f->cpucount_offset = file_off;
        return 0;
    }
    case OPT_TSC2NSEC: {
        uint64_t mult, shift, off;
        if (option_size_is(f, "TSC2NSEC", o, 16) < 0 ||
            rd_u(o, 4, &mult, "TSC2NSEC multiplier") || rd_u(o, 4, &shift, "TSC2NSEC shift") ||
            rd_u(o, 8, &off, "TSC2NSEC offset"))
            return TD_FAIL;
        if (shift > 32)
            return seterr(f->err, "corrupt %s: the TSC2NSEC option has shift %" PRIu64
                          " (at most 32)", f->kind, shift), TD_FAIL;
        f->tsc_mult = (uint32_t)mult;
        f->tsc_shift = (uint32_t)shift;
        f->has_tsc2nsec = mult != 0;
        return 0;
    }
    case OPT_TIME_SHIFT:
        if (o->size >= 16)
            return seterr(f->err, "unsupported %s: a guest trace with host time "
                          "synchronisation (TIME_SHIFT option); read it with --reader "
                          "libtracecmd", f->kind), TD_FAIL;
        return 0;
    case OPT_BUFFER_TEXT:
        return seterr(f->err, "unsupported %s: latency-tracer text data (BUFFER_TEXT); "
                      "read it with --reader libtracecmd", f->kind), TD_FAIL;
    case OPT_HEADER_INFO: case OPT_FTRACE_EVENTS: case OPT_EVENT_FORMATS:
    case OPT_KALLSYMS: case OPT_PRINTK: case OPT_CMDLINES: case OPT_STRINGS:
        if (f->version >= 7)
            return read_section_option(f, id, o);
        return 0;
    }
    return 0;
}

/* ------------------------------------------------------------ the header */

static int read_v6(td_file *f, Rd *r)
{
    Rd hdr = *r;
    hdr.what = "file headers";
    if (read_header_info_checked(f, &hdr) < 0 || read_ftrace_formats(f, &hdr) < 0 ||
        read_event_formats(f, &hdr) < 0 || read_kallsyms(f, &hdr) < 0)
        return TD_FAIL;
    uint64_t n, ncpu;
    const uint8_t *text;
    if (rd_u(&hdr, 4, &n, "printk formats size") < 0 ||
        rd_bytes(&hdr, n > hdr.size ? hdr.size + 1 : (size_t)n, &text, "printk formats") < 0 ||
        check_printk(f, text, (size_t)n) < 0 || read_cmdlines(f, &hdr) < 0 ||
        rd_u(&hdr, 4, &ncpu, "CPU count") < 0)
        return TD_FAIL;
    if (ncpu == 0 || ncpu > MAX_CPUS)
        return seterr(f->err, "corrupt %s: the header says %" PRIu64 " CPUs", f->kind,
                      ncpu), TD_FAIL;
    f->ncpus_header = (int)ncpu;
    for (;;) {
        const uint8_t *tag;
        if (rd_bytes(&hdr, 10, &tag, "data section tag") < 0)
            return TD_FAIL;
        if (memcmp(tag, "options  ", 10) == 0) {
            uint64_t next;
            if (read_options(f, &hdr, &next) < 0)
                return TD_FAIL;
            continue;
        }
        if (memcmp(tag, "latency  ", 10) == 0)
            return seterr(f->err, "unsupported %s: latency-tracer text data; read it "
                          "with --reader libtracecmd", f->kind), TD_FAIL;
        if (memcmp(tag, "flyrecord", 10) != 0)
            return seterr(f->err, "corrupt %s: unknown data section tag at offset %zu", f->kind,
                          hdr.pos - 10), TD_FAIL;
        break;
    }
    Buffer *b;
    if (add_buffer(f, &b) < 0)
        return TD_FAIL;
    /* the top buffer goes first: move it there */
    Buffer top = {0};
    top.name = "";
    top.page_size = f->page_size;
    top.ncpu = (int)ncpu;
    top.cpu = calloc(ncpu, sizeof(CpuData));
    if (own(f, top.cpu) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    for (uint64_t c = 0; c < ncpu; c++) {
        uint64_t off, size;
        if (rd_u(&hdr, 8, &off, "CPU data offset") || rd_u(&hdr, 8, &size, "CPU data size"))
            return TD_FAIL;
        top.cpu[c] = (CpuData){(uint32_t)c, off, size};
    }
    /* after the table, the trace_clock text (u64 size, text), then the CPUs' pages to
       the end of the file: what check_buffer holds the table to (with no instance
       buffer, whose data would lie there too) */
    uint64_t left = hdr.size - hdr.pos;
    uint64_t clock_size = left >= 8 ? ld(hdr.data + hdr.pos, 8, f->swap) : UINT64_MAX;
    if (f->nbuffers == 1 && left >= 8 && clock_size <= left - 8) {
        top.data_start = hdr.pos + 8 + clock_size;
        top.data_end = f->size;
    }
    memmove(&f->buffers[1], &f->buffers[0], (size_t)(f->nbuffers - 1) * sizeof(Buffer));
    f->buffers[0] = top;
    return 0;
}

/* v6 instance buffers: at the option's offset, "flyrecord\0" and per-CPU tables. */
static int v6_buffer_cpus(td_file *f, Buffer *b)
{
    uint64_t off = b->cpu[0].offset;
    int ncpu = f->ncpus_header;
    if (off > f->size)
        return seterr(f->err, "corrupt %s: buffer '%s' offset is past the end of the "
                      "file", f->kind, b->name), TD_FAIL;
    Rd r = {f->data, f->size, (size_t)off, 0, "instance buffer", f->swap, f->err};
    const uint8_t *tag;
    if (rd_bytes(&r, 10, &tag, "instance data tag") < 0)
        return TD_FAIL;
    if (memcmp(tag, "flyrecord", 10) != 0)
        return seterr(f->err, "corrupt %s: buffer '%s' data has no flyrecord tag at "
                      "offset %" PRIu64, f->kind, b->name, off), TD_FAIL;
    CpuData *cpu = calloc((size_t)ncpu, sizeof(CpuData));
    if (own(f, cpu) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    for (int c = 0; c < ncpu; c++) {
        uint64_t o, s;
        if (rd_u(&r, 8, &o, "CPU data offset") || rd_u(&r, 8, &s, "CPU data size"))
            return TD_FAIL;
        cpu[c] = (CpuData){(uint32_t)c, o, s};
    }
    b->cpu = cpu;
    b->ncpu = ncpu;
    return 0;
}

static int walk_sections(td_file *f, size_t start);

static int read_v7(td_file *f, Rd *r)
{
    const char *name, *ver;
    uint64_t off;
    if (rd_cstr(r, &name, 64, "compression name") < 0 ||
        rd_cstr(r, &ver, 64, "compression version") < 0 || rd_u(r, 8, &off, "options offset"))
        return TD_FAIL;
    if (!strcmp(name, "none") || !name[0]) {
        f->comp = COMP_NONE;
    } else if (!strcmp(name, "zstd")) {
        f->comp = COMP_ZSTD;
    } else if (!strcmp(name, "zlib")) {
        f->comp = COMP_ZLIB;
    } else {
        return seterr(f->err, "unsupported %s: compression '%.64s' (known: zstd, zlib)", f->kind,
                      name), TD_FAIL;
    }
    f->meta.compression = f->comp == COMP_NONE ? NULL : own_str(f, name, strlen(name));
    if (f->comp != COMP_NONE && !f->meta.compression)
        return TD_ENOMEM;
    if (walk_sections(f, r->pos) < 0)
        return TD_FAIL;
    uint64_t seen[MAX_OPTION_SECTIONS];
    int nseen = 0;
    while (off) {
        for (int i = 0; i < nseen; i++)
            if (seen[i] == off)
                return seterr(f->err, "corrupt %s: the options sections form a loop "
                              "(offset %" PRIu64 " again)", f->kind, off), TD_FAIL;
        if (nseen == MAX_OPTION_SECTIONS)
            return seterr(f->err, "corrupt %s: more than %d options sections", f->kind,
                          MAX_OPTION_SECTIONS), TD_FAIL;
        seen[nseen++] = off;
        Rd s;
        if (read_section(f, off, 0, "options section", &s) < 0 || read_options(f, &s, &off) < 0)
            return TD_FAIL;
    }
    return 0;
}

static int select_buffer(td_file *f);

/* v7 sections follow one another from the end of the header to the end of the file
   (libtracecmd finds the STRINGS section so): a file that is cut short, or that has
   bytes after its last section, fails here, whatever the options point to. */
static int walk_sections(td_file *f, size_t start)
{
    size_t pos = start;
    while (pos < f->size) {
        Rd r = {f->data, f->size, pos, 0, "file", f->swap, f->err};
        uint64_t id, flags, desc, size;
        if (rd_u(&r, 2, &id, "section header") || rd_u(&r, 2, &flags, "section header") ||
            rd_u(&r, 4, &desc, "section header") || rd_u(&r, 8, &size, "section header"))
            return TD_FAIL;
        if (size > f->size - r.pos)
            return seterr(f->err, "truncated or corrupt %s: the section at offset %zu "
                          "(id %" PRIu64 ") needs %" PRIu64 " bytes, the file has %zu left", f->kind,
                          pos, id, size, f->size - r.pos), TD_FAIL;
        if (id == OPT_STRINGS) {
            Rd sec;
            if (read_section(f, pos, OPT_STRINGS, "strings", &sec) < 0)
                return TD_FAIL;
        }
        pos = r.pos + (size_t)size;
    }
    return 0;
}

/* A trace.dat (_td_dispatch.c's default format): its header, metadata and buffers. */
int tracedat_open(td_file *f)
{
    const uint8_t *data = f->data;
    size_t size = f->size;
    char *err = f->err;
    if (size < MAGIC_LEN || memcmp(data, MAGIC, MAGIC_LEN) != 0)
        return seterr(err, size < MAGIC_LEN && memcmp(data, MAGIC, size) == 0
                      ? "truncated trace.dat: the file ends inside its magic bytes"
                      : "not a trace.dat file (bad magic bytes)"), TD_FAIL;
    Rd r = {data, size, 0, 0, "file header", 0, err, NULL};
    const char *ver;
    if (read_tracing_header(f, &r, &ver) < 0)
        return TD_FAIL;
    if (!strcmp(ver, "6"))
        f->version = 6;
    else if (!strcmp(ver, "7"))
        f->version = 7;
    else
        return seterr(err, "unsupported trace.dat version '%.16s' (known: 6, 7)", ver), TD_FAIL;
    f->meta.file_version = f->version;
    if ((f->version == 6 ? read_v6(f, &r) : read_v7(f, &r)) < 0)
        return TD_FAIL;
    if (finish_formats(f) < 0 || select_buffer(f) < 0)
        return TD_FAIL;
    return 0;
}

/* ------------------------------------------------------- buffers & CPUs */

/* CPU table entries in file order (with data only), to find overlaps and holes. */
static int by_offset(const void *a, const void *b)
{
    const CpuData *x = *(const CpuData *const *)a, *y = *(const CpuData *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_cpu(const void *a, const void *b)
{
    const CpuData *x = *(const CpuData *const *)a, *y = *(const CpuData *const *)b;
    return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* The CPU data of b, sorted by file offset (`extra`: the chunk count before
   compressed data): they do not overlap, and they fill b's data region but for the
   padding to a page before each.  A page or more that no CPU's data holds is data
   the table lost: a CPU count of 0, or a CPU's size of 0, while the data is there
   (reading on would drop those events without a word). */
static int check_data_layout(td_file *f, Buffer *b, CpuData **sorted, int n, uint64_t extra)
{
    qsort(sorted, (size_t)n, sizeof(*sorted), by_offset);
    uint64_t pos = b->data_start;   /* the end of what the table accounts for so far */
    for (int i = 0; i <= n; i++) {
        const CpuData *c = i < n ? sorted[i] : NULL;
        uint64_t next = c ? c->offset : b->data_end;
        if (b->data_end && next > pos && next - pos >= b->page_size)
            return seterr(f->err, "corrupt %s: buffer '%s' has %" PRIu64 " bytes of data at "
                          "offset %" PRIu64 " that no CPU's data holds (its CPU table lists "
                          "%d CPUs with data)", f->kind, b->name, next - pos, pos, n), TD_FAIL;
        if (!c)
            break;
        if (i && c->offset < pos)
            return seterr(f->err, "corrupt %s: the data of CPUs %u and %u of buffer "
                          "'%s' overlap (offsets %" PRIu64 " and %" PRIu64 ")", f->kind,
                          sorted[i - 1]->cpu, c->cpu, b->name, sorted[i - 1]->offset,
                          c->offset), TD_FAIL;
        if (b->data_end && f->version >= 7 &&
            (c->offset < b->data_start || c->offset + c->size + extra > b->data_end))
            return seterr(f->err, "corrupt %s: CPU %u data of buffer '%s' (offset %" PRIu64
                          ", %" PRIu64 " bytes) lies outside the buffer's data section (offsets "
                          "%" PRIu64 "..%" PRIu64 ")", f->kind, c->cpu, b->name, c->offset,
                          c->size + extra, b->data_start, b->data_end), TD_FAIL;
        pos = c->offset + c->size + extra;
    }
    return 0;
}

/* Check a buffer's CPU table against the file: inside it, not overlapping, each
   CPU once, whole pages (uncompressed), filling the data region.  Sets has_data. */
static int check_buffer(td_file *f, Buffer *b)
{
    if (b->ncpu < 0 && v6_buffer_cpus(f, b) < 0)
        return TD_FAIL;
    b->has_data = 0;
    /* compressed data: a u32 chunk count, then chunks whose bytes the size counts */
    uint64_t extra = b->compressed ? 4 : 0;
    CpuData **sorted = malloc((size_t)(b->ncpu ? b->ncpu : 1) * sizeof(*sorted));
    if (!sorted)
        return seterr(f->err, "out of memory"), TD_FAIL;
    int n = 0, rc = 0;
    for (int i = 0; i < b->ncpu && !rc; i++) {
        CpuData *c = &b->cpu[i];
        sorted[i] = c;
        if (c->size && (c->offset > f->size || c->size > f->size - c->offset ||
                        extra > f->size - c->offset - c->size))
            rc = (seterr(f->err, "truncated or corrupt %s: CPU %u data of buffer '%s' "
                         "needs bytes %" PRIu64 "..%" PRIu64 " (the file has %zu bytes)",
                         f->kind, c->cpu, b->name, c->offset, c->offset + c->size + extra,
                         f->size), -1);
        else if (!b->compressed && c->size % b->page_size)
            rc = (seterr(f->err, "corrupt %s: CPU %u data of buffer '%s' (%" PRIu64
                         " bytes at offset %" PRIu64 ") ends inside a page of %u bytes",
                         f->kind, c->cpu, b->name, c->size, c->offset, b->page_size), -1);
    }
    if (!rc) {
        qsort(sorted, (size_t)b->ncpu, sizeof(*sorted), by_cpu);
        for (int i = 1; i < b->ncpu && !rc; i++)
            if (sorted[i]->cpu == sorted[i - 1]->cpu)
                rc = (seterr(f->err, "corrupt %s: buffer '%s' lists CPU %u twice", f->kind,
                             b->name, sorted[i]->cpu), -1);
    }
    if (!rc) {
        for (int i = 0; i < b->ncpu; i++)
            if (b->cpu[i].size)
                sorted[n++] = &b->cpu[i];
        b->has_data = n > 0;
        rc = check_data_layout(f, b, sorted, n, extra);
    }
    free(sorted);
    return rc;
}

/* What a buffer's CPU table says against the file's CPU count (the v6 header's,
   the CPUCOUNT option's, which must agree): a v6 table has an entry per CPU, a v7
   BUFFER option one per CPU with data (trace-cmd 3 leaves the others out), and no
   CPU id is beyond the count.  A contradiction is damage in one of them, and which
   cannot be told: a CPU id of 4096 would make a 4097-CPU trace, a count of 3 an idle
   CPU that never was. */
static int check_cpu_count(td_file *f, const Buffer *b)
{
    int count = f->version < 7 ? f->ncpus_header : f->cpucount_option;
    if (f->version < 7 && f->cpucount_option && f->cpucount_option != f->ncpus_header)
        return seterr(f->err, "corrupt %s: the header says %d CPUs, the CPUCOUNT option "
                      "(at offset %" PRIu64 ") %d", f->kind, f->ncpus_header,
                      f->cpucount_offset, f->cpucount_option), TD_FAIL;
    if (!count)
        return 0;       /* a v7 file without CPUCOUNT: the tables are all there is */
    if (b->ncpu > count)
        return seterr(f->err, "corrupt %s: the CPUCOUNT option says %d CPUs, the BUFFER "
                      "option of buffer '%s' lists %d", f->kind, count, b->name, b->ncpu), TD_FAIL;
    for (int i = 0; i < b->ncpu; i++)
        if (b->cpu[i].cpu >= (uint32_t)count)
            return seterr(f->err, "corrupt %s: buffer '%s' has data for CPU %u, the file "
                          "has %d CPUs", f->kind, b->name, b->cpu[i].cpu, count), TD_FAIL;
    return 0;
}

/* The CPUSTAT options: the ring buffer's statistics per CPU at extract time
   ("CPU: 0", "overrun: 12", "dropped events: 0", ...), which the lost-event counts
   take from.  A CPU beyond the file's, or a count beyond 64-bit signed, is damage
   that would become a lost-event count nobody can have. */
static int check_cpustats(td_file *f, int ncpus)
{
    static const char *counts[] = {"entries:", "overrun:", "commit overrun:", "bytes:",
                                   "dropped events:", "read events:"};
    if (!f->cpustats.len)
        return 0;
    const char *p = f->cpustats.data, *end = p + f->cpustats.len;
    int64_t cpu = -1;
    while (p < end) {
        const char *le = find_line_end(p, end), *after;
        int64_t v;
        if (le - p > 4 && !memcmp(p, "CPU:", 4)) {
            if (parse_int(p + 4, le, &cpu, &after) < 0 || cpu < 0 || cpu >= ncpus)
                return seterr(f->err, "corrupt %s: a CPUSTAT option has statistics for "
                              "'%.*s', the file has %d CPUs", f->kind, (int)(le - p > 40 ? 40 :
                              le - p), p, ncpus), TD_FAIL;
        }
        for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++) {
            size_t kl = strlen(counts[k]);
            if ((size_t)(le - p) > kl && !memcmp(p, counts[k], kl) &&
                (parse_int(p + kl, le, &v, &after) < 0 || v < 0))
                return seterr(f->err, "corrupt %s: the CPUSTAT option of CPU %" PRId64
                              " says '%.*s' (a count from 0 to 2^63 expected)", f->kind, cpu,
                              (int)(le - p > 60 ? 60 : le - p), p), TD_FAIL;
        }
        p = le + 1;
    }
    return 0;
}

/* The buffer to read: the top one, or (`trace-cmd extract -B NAME` leaves the top
   buffer empty) the first instance with data. */
static int select_buffer(td_file *f)
{
    if (!f->nbuffers)
        return seterr(f->err, "corrupt %s: the file has no trace data section", f->kind), TD_FAIL;
    int top = -1;
    for (int i = 0; i < f->nbuffers; i++) {
        if (check_buffer(f, &f->buffers[i]) < 0 || check_cpu_count(f, &f->buffers[i]) < 0)
            return TD_FAIL;
        for (int j = 0; j < i; j++)
            if (!strcmp(f->buffers[j].name, f->buffers[i].name))
                return seterr(f->err, "corrupt %s: two BUFFER options for buffer '%s'",
                              f->kind, f->buffers[i].name), TD_FAIL;
        if (!f->buffers[i].name[0] && top < 0)
            top = i;
    }
    f->sel = top >= 0 ? top : 0;
    if (top < 0 || !f->buffers[top].has_data)
        for (int i = 0; i < f->nbuffers; i++)
            if (f->buffers[i].name[0] && f->buffers[i].has_data) {
                f->sel = i;
                break;
            }
    Buffer *b = &f->buffers[f->sel];
    int ncpus = f->cpucount_option ? f->cpucount_option : f->ncpus_header;
    for (int i = 0; i < b->ncpu; i++)
        if ((int)b->cpu[i].cpu + 1 > ncpus)
            ncpus = (int)b->cpu[i].cpu + 1;
    if (ncpus <= 0)
        ncpus = 1;
    if (check_cpustats(f, ncpus) < 0)
        return TD_FAIL;
    f->meta.cpus = ncpus;
    f->meta.page_size = (int)b->page_size;
    f->meta.buffer = b->name;
    /* CPUSTAT options describe the top buffer: an instance read has none */
    f->cpustats_top_only = f->sel != top;
    /* the clock: the buffer's own (v7), else the one marked [..] in TRACECLOCK */
    f->meta.clock = b->clock && b->clock[0] ? b->clock : NULL;
    if (!f->meta.clock && f->clock_list) {
        const char *lb = strchr(f->clock_list, '['), *rb = lb ? strchr(lb, ']') : NULL;
        if (lb && rb)
            f->meta.clock = own_str(f, lb + 1, (size_t)(rb - lb - 1));
    }
    int ninst = 0;
    for (int i = 0; i < f->nbuffers; i++)
        if (f->buffers[i].name[0])
            ninst++;
    f->instances = calloc((size_t)ninst + 1, sizeof(char *));
    if (own(f, f->instances) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    ninst = 0;
    for (int i = 0; i < f->nbuffers; i++)
        if (f->buffers[i].name[0])
            f->instances[ninst++] = f->buffers[i].name;
    f->meta.instances = f->instances;
    f->meta.ninstances = ninst;
    f->lost_per_cpu = calloc((size_t)ncpus, sizeof(int64_t));
    if (own(f, f->lost_per_cpu) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    return 0;
}
