/*
 * _td_container.c: the trace.dat file layer (trace-cmd.dat.v6(5), v7(5)):
 *   header: magic, version, endianness, long size, page size
 *   v6: header_page, header_event, ftrace and event formats, kallsyms, printk,
 *       cmdlines, CPU count, options, "flyrecord" + per-CPU (offset, size)
 *   v7: compression, the offset of the first options section; sections (id,
 *       flags, description, size), possibly compressed; BUFFER options give each
 *       buffer's per-CPU data, compressed as chunks of whole pages
 * td_open() reads all of it but the ring-buffer data (_td_records.c) and picks
 * the buffer to decode.
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
                      " is past the end of the file (%zu bytes)", f->kind, off, what, f->size), -1;
    r.pos = (size_t)off;
    if (rd_u(&r, 2, &id, "section id") || rd_u(&r, 2, &flags, "section flags") ||
        rd_u(&r, 4, &desc, "section description") || rd_u(&r, 8, &size, "section size"))
        return -1;
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
                      " is flagged compressed in a file without compression", f->kind, what, off), -1;
    Rd c = *out;
    uint64_t csize, usize;
    if (rd_u(&c, 4, &csize, "compressed size") || rd_u(&c, 4, &usize, "uncompressed size"))
        return -1;
    if (csize > c.size - c.pos)
        return rd_fail(&c, "the compressed data runs past the section");
    if (usize > MAX_SECTION_BYTES)
        return rd_fail(&c, "implausible uncompressed size");
    uint8_t *mem = malloc(usize ? usize : 1);
    if (own(f, mem) < 0)
        return seterr(f->err, "out of memory"), -1;
    if (decompress(f->comp, c.data + c.pos, (size_t)csize, mem, (size_t)usize) < 0)
        return seterr(f->err, "corrupt %s: the %s section at offset %" PRIu64
                      " does not decompress to its declared %" PRIu64 " bytes", f->kind, what, off, usize),
               -1;
    *out = (Rd){mem, (size_t)usize, 0, 0, what, f->swap, f->err};
    out->what = what;
    return 0;
}

/* ------------------------------------------------------------- options */

static int add_buffer(td_file *f, Buffer **out)
{
    Buffer *b = realloc(f->buffers, (size_t)(f->nbuffers + 1) * sizeof(*b));
    if (!b)
        return seterr(f->err, "out of memory"), -1;
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
    return *dst ? 0 : -1;
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
        return -1;
    if (ncpu > MAX_CPUS)
        return rd_fail(o, "implausible CPU count in a buffer option");
    if (page_size < MIN_PAGE_SIZE || page_size > MAX_PAGE_SIZE ||
        (page_size & (page_size - 1)))
        return seterr(f->err, "corrupt %s: buffer '%s' has page size %" PRIu64
                      " (a power of two from %u to %u expected)", f->kind, name, page_size,
                      MIN_PAGE_SIZE, MAX_PAGE_SIZE), -1;
    if (add_buffer(f, &b) < 0)
        return -1;
    b->name = own_str(f, name, strlen(name));
    b->clock = own_str(f, clock, strlen(clock));
    if (!b->name || !b->clock)
        return -1;
    b->page_size = (uint32_t)page_size;
    b->cpu = calloc(ncpu ? ncpu : 1, sizeof(CpuData));
    if (own(f, b->cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    for (uint64_t i = 0; i < ncpu; i++) {
        uint64_t cpu, off, size;
        if (rd_u(o, 4, &cpu, "CPU id") || rd_u(o, 8, &off, "CPU data offset") ||
            rd_u(o, 8, &size, "CPU data size"))
            return -1;
        if (cpu >= MAX_CPUS)
            return rd_fail(o, "implausible CPU id in a buffer option");
        b->cpu[i] = (CpuData){(uint32_t)cpu, off, size};
    }
    b->ncpu = (int)ncpu;
    /* the flyrecord section itself: its flags say whether the data is compressed */
    Rd r = {f->data, f->size, 0, 0, "buffer flyrecord section", f->swap, f->err};
    uint64_t id, flags;
    if (sec > f->size)
        return seterr(f->err, "corrupt %s: buffer '%s' section offset %" PRIu64
                      " is past the end of the file", f->kind, b->name, sec), -1;
    r.pos = (size_t)sec;
    if (rd_u(&r, 2, &id, "section id") || rd_u(&r, 2, &flags, "section flags"))
        return -1;
    if (id != OPT_BUFFER)
        return seterr(f->err, "corrupt %s: the data section of buffer '%s' at offset "
                      "%" PRIu64 " has section id %" PRIu64 ", not %d", f->kind, b->name, sec, id,
                      OPT_BUFFER), -1;
    b->compressed = flags & 1;
    if (b->compressed && f->comp == COMP_NONE)
        return seterr(f->err, "corrupt %s: buffer '%s' data is flagged compressed in a "
                      "file without compression", f->kind, b->name), -1;
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
            return -1;
        if (id == OPT_DONE && f->version < 7)
            return 0;
        if (rd_u(r, 4, &size, "option size") < 0)
            return -1;
        if (size > r->size - r->pos)
            return rd_fail(r, "an option runs past its section");
        Rd o = {r->data + r->pos, (size_t)size, 0, r->base + r->pos, "option", f->swap, f->err};
        uint64_t file_off = r->base + r->pos;
        r->pos += (size_t)size;
        uint16_t id16 = (uint16_t)id;
        if (buf_put(&f->options, &id16, 2) < 0)
            return seterr(f->err, "out of memory"), -1;
        if (id == OPT_DONE) {
            if (size >= 8)
                *next = ld(o.data, 8, f->swap);
            return 0;
        }
        if (do_option(f, id16, &o, file_off) < 0)
            return -1;
    }
}

static int read_section_option(td_file *f, uint16_t id, Rd *o)
{
    uint64_t off;
    Rd s;
    if (rd_u(o, 8, &off, "section offset") < 0)
        return -1;
    switch (id) {
    case OPT_HEADER_INFO:
        return read_section(f, off, id, "header info", &s) || read_header_info(f, &s);
    case OPT_FTRACE_EVENTS:
        return read_section(f, off, id, "ftrace event formats", &s) ||
               read_ftrace_formats(f, &s);
    case OPT_EVENT_FORMATS:
        return read_section(f, off, id, "event formats", &s) || read_event_formats(f, &s);
    case OPT_KALLSYMS:
        return read_section(f, off, id, "kallsyms", &s) || read_kallsyms(f, &s);
    case OPT_PRINTK:
        return read_section(f, off, id, "printk formats", &s);  /* checked, not needed */
    case OPT_STRINGS:
        return read_section(f, off, id, "strings", &s);         /* checked, not needed */
    case OPT_CMDLINES:
        return read_section(f, off, id, "cmdlines", &s) || read_cmdlines(f, &s);
    }
    return 0;
}

static int do_option(td_file *f, uint16_t id, Rd *o, uint64_t file_off)
{
    switch (id) {
    case OPT_DATE: {
        /* usecs between the trace clock and the time of day: trace-cmd report adds it */
        char tmp[64];
        size_t n = o->size < sizeof(tmp) - 1 ? o->size : sizeof(tmp) - 1;
        memcpy(tmp, o->data, n);
        tmp[n] = 0;
        int64_t v;
        if (parse_int(tmp, tmp + strnlen(tmp, n), &v, NULL) < 0 || v > INT64_MAX / 1000 ||
            v < INT64_MIN / 1000)
            return seterr(f->err, "corrupt %s: the DATE option at offset %" PRIu64
                          " is not a number of microseconds", f->kind, file_off), -1;
        f->ts_offset += v * 1000;
        return 0;
    }
    case OPT_OFFSET: {
        char tmp[64];
        size_t n = o->size < sizeof(tmp) - 1 ? o->size : sizeof(tmp) - 1;
        memcpy(tmp, o->data, n);
        tmp[n] = 0;
        int64_t v;
        if (parse_int(tmp, tmp + strnlen(tmp, n), &v, NULL) < 0)
            return seterr(f->err, "corrupt %s: the OFFSET option at offset %" PRIu64
                          " is not a number", f->kind, file_off), -1;
        f->ts_offset += v;
        return 0;
    }
    case OPT_CPUSTAT: {
        const uint8_t *nul = memchr(o->data, 0, o->size);
        size_t n = nul ? (size_t)(nul - o->data) : o->size;
        char nl = '\n';
        if (buf_put(&f->cpustats, o->data, n) < 0 || buf_put(&f->cpustats, &nl, 1) < 0)
            return seterr(f->err, "out of memory"), -1;
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
                return -1;
            b->name = own_str(f, name, strlen(name));
            if (!b->name)
                return -1;
            b->page_size = f->page_size;
            b->ncpu = -1;           /* read when selected: see v6_buffer_cpus */
            b->cpu = NULL;
            /* keep the offset in the first CpuData slot */
            b->cpu = calloc(1, sizeof(CpuData));
            if (own(f, b->cpu) < 0)
                return seterr(f->err, "out of memory"), -1;
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
        if (rd_u(o, 4, &n, "CPU count") < 0)
            return -1;
        if (n == 0 || n > MAX_CPUS)
            return seterr(f->err, "corrupt %s: the CPUCOUNT option says %" PRIu64
                          " CPUs", f->kind, n), -1;
        f->cpucount_option = (int)n;
        return 0;
    }
    case OPT_TSC2NSEC: {
        uint64_t mult, shift, off;
        if (rd_u(o, 4, &mult, "TSC2NSEC multiplier") || rd_u(o, 4, &shift, "TSC2NSEC shift") ||
            rd_u(o, 8, &off, "TSC2NSEC offset"))
            return -1;
        if (shift > 32)
            return seterr(f->err, "corrupt %s: the TSC2NSEC option has shift %" PRIu64
                          " (at most 32)", f->kind, shift), -1;
        f->tsc_mult = (uint32_t)mult;
        f->tsc_shift = (uint32_t)shift;
        f->has_tsc2nsec = mult != 0;
        return 0;
    }
    case OPT_TIME_SHIFT:
        if (o->size >= 16)
            return seterr(f->err, "unsupported %s: a guest trace with host time "
                          "synchronisation (TIME_SHIFT option); read it with --reader "
                          "libtracecmd", f->kind), -1;
        return 0;
    case OPT_BUFFER_TEXT:
        return seterr(f->err, "unsupported %s: latency-tracer text data (BUFFER_TEXT); "
                      "read it with --reader libtracecmd", f->kind), -1;
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
    if (read_header_info(f, &hdr) < 0 || read_ftrace_formats(f, &hdr) < 0 ||
        read_event_formats(f, &hdr) < 0 || read_kallsyms(f, &hdr) < 0)
        return -1;
    uint64_t n, ncpu;
    const uint8_t *text;
    if (rd_u(&hdr, 4, &n, "printk formats size") < 0 ||
        rd_bytes(&hdr, n > hdr.size ? hdr.size + 1 : (size_t)n, &text, "printk formats") < 0 ||
        read_cmdlines(f, &hdr) < 0 || rd_u(&hdr, 4, &ncpu, "CPU count") < 0)
        return -1;
    if (ncpu == 0 || ncpu > MAX_CPUS)
        return seterr(f->err, "corrupt %s: the header says %" PRIu64 " CPUs", f->kind, ncpu), -1;
    f->ncpus_header = (int)ncpu;
    for (;;) {
        const uint8_t *tag;
        if (rd_bytes(&hdr, 10, &tag, "data section tag") < 0)
            return -1;
        if (memcmp(tag, "options  ", 10) == 0) {
            uint64_t next;
            if (read_options(f, &hdr, &next) < 0)
                return -1;
            continue;
        }
        if (memcmp(tag, "latency  ", 10) == 0)
            return seterr(f->err, "unsupported %s: latency-tracer text data; read it "
                          "with --reader libtracecmd", f->kind), -1;
        if (memcmp(tag, "flyrecord", 10) != 0)
            return seterr(f->err, "corrupt %s: unknown data section tag at offset %zu", f->kind,
                          hdr.pos - 10), -1;
        break;
    }
    Buffer *b;
    if (add_buffer(f, &b) < 0)
        return -1;
    /* the top buffer goes first: move it there */
    Buffer top = {0};
    top.name = "";
    top.page_size = f->page_size;
    top.ncpu = (int)ncpu;
    top.cpu = calloc(ncpu, sizeof(CpuData));
    if (own(f, top.cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    for (uint64_t c = 0; c < ncpu; c++) {
        uint64_t off, size;
        if (rd_u(&hdr, 8, &off, "CPU data offset") || rd_u(&hdr, 8, &size, "CPU data size"))
            return -1;
        top.cpu[c] = (CpuData){(uint32_t)c, off, size};
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
                      "file", f->kind, b->name), -1;
    Rd r = {f->data, f->size, (size_t)off, 0, "instance buffer", f->swap, f->err};
    const uint8_t *tag;
    if (rd_bytes(&r, 10, &tag, "instance data tag") < 0)
        return -1;
    if (memcmp(tag, "flyrecord", 10) != 0)
        return seterr(f->err, "corrupt %s: buffer '%s' data has no flyrecord tag at "
                      "offset %" PRIu64, f->kind, b->name, off), -1;
    CpuData *cpu = calloc((size_t)ncpu, sizeof(CpuData));
    if (own(f, cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    for (int c = 0; c < ncpu; c++) {
        uint64_t o, s;
        if (rd_u(&r, 8, &o, "CPU data offset") || rd_u(&r, 8, &s, "CPU data size"))
            return -1;
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
        return -1;
    if (!strcmp(name, "none") || !name[0]) {
        f->comp = COMP_NONE;
    } else if (!strcmp(name, "zstd")) {
        f->comp = COMP_ZSTD;
    } else if (!strcmp(name, "zlib")) {
        f->comp = COMP_ZLIB;
    } else {
        return seterr(f->err, "unsupported %s: compression '%.64s' (known: zstd, zlib)", f->kind,
                      name), -1;
    }
    f->meta.compression = f->comp == COMP_NONE ? NULL : own_str(f, name, strlen(name));
    if (f->comp != COMP_NONE && !f->meta.compression)
        return -1;
    if (walk_sections(f, r->pos) < 0)
        return -1;
    uint64_t seen[MAX_OPTION_SECTIONS];
    int nseen = 0;
    while (off) {
        for (int i = 0; i < nseen; i++)
            if (seen[i] == off)
                return seterr(f->err, "corrupt %s: the options sections form a loop "
                              "(offset %" PRIu64 " again)", f->kind, off), -1;
        if (nseen == MAX_OPTION_SECTIONS)
            return seterr(f->err, "corrupt %s: more than %d options sections", f->kind,
                          MAX_OPTION_SECTIONS), -1;
        seen[nseen++] = off;
        Rd s;
        if (read_section(f, off, 0, "options section", &s) < 0 || read_options(f, &s, &off) < 0)
            return -1;
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
            return -1;
        if (size > f->size - r.pos)
            return seterr(f->err, "truncated or corrupt %s: the section at offset %zu "
                          "(id %" PRIu64 ") needs %" PRIu64 " bytes, the file has %zu left", f->kind,
                          pos, id, size, f->size - r.pos), -1;
        if (id == OPT_STRINGS) {
            Rd sec;
            if (read_section(f, pos, OPT_STRINGS, "strings", &sec) < 0)
                return -1;
        }
        pos = r.pos + (size_t)size;
    }
    return 0;
}

/* The start of the tracing metadata (trace.dat's file header, and the head of
   perf.data's tracing data): magic, version text, endianness, long size, page
   size.  *ver gets the version text. */
int read_tracing_header(td_file *f, Rd *r, const char **ver)
{
    const uint8_t *magic;
    uint64_t endian, lsize, psize;
    if (rd_bytes(r, MAGIC_LEN, &magic, "magic bytes") < 0)
        return -1;
    if (memcmp(magic, MAGIC, MAGIC_LEN) != 0)
        return seterr(f->err, "corrupt %s: the %s does not start with the tracing magic "
                      "bytes", f->kind, r->what), -1;
    if (rd_cstr(r, ver, 16, "version") < 0 || rd_u(r, 1, &endian, "endianness") ||
        rd_u(r, 1, &lsize, "long size"))
        return -1;
    if (endian > 1)
        return seterr(f->err, "corrupt %s: endianness byte is %" PRIu64 " (0 or 1)", f->kind,
                      endian), -1;
    int host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
    f->swap = r->swap = (int)endian != host_big;
    if (rd_u(r, 4, &psize, "page size") < 0)
        return -1;
    if (lsize != 4 && lsize != 8)
        return seterr(f->err, "corrupt %s: long size %" PRIu64 " (4 or 8)", f->kind, lsize), -1;
    if (psize < MIN_PAGE_SIZE || psize > MAX_PAGE_SIZE || (psize & (psize - 1)))
        return seterr(f->err, "corrupt %s: page size %" PRIu64 " in the %s (a power of two "
                      "from %u to %u expected)", f->kind, psize, r->what, MIN_PAGE_SIZE,
                      MAX_PAGE_SIZE), -1;
    f->long_size = (int)lsize;
    f->page_size = (uint32_t)psize;
    f->meta.big_endian = (int)endian;
    f->meta.long_size = f->long_size;
    return 0;
}

/* After the formats are read: they are there, their ids are unique (then an
   index by id), and sched_switch's print format can be evaluated. */
int finish_formats(td_file *f)
{
    if (!f->commit_size)
        return seterr(f->err, "corrupt %s: the file has no ring-buffer page header "
                      "(header_page)", f->kind), -1;
    if (!f->nevents)
        return seterr(f->err, "corrupt %s: the file has no event formats%s%s", f->kind,
                      f->skipped_formats ? " that parse; the first: " : "",
                      f->skipped_formats ? f->first_skipped : ""), -1;
    if (f->skipped_formats) {
        /* the first failure's message, without its "corrupt <kind>: " */
        const char *why = f->first_skipped;
        size_t kl = strlen(f->kind);
        if (!strncmp(why, "corrupt ", 8) && !strncmp(why + 8, f->kind, kl) &&
            !strncmp(why + 8 + kl, ": ", 2))
            why += 10 + kl;
        if (td_warn(f, "skipped %d event format%s that do not parse (the first: %s)",
                    f->skipped_formats, f->skipped_formats > 1 ? "s" : "", why) < 0)
            return seterr(f->err, "out of memory"), -1;
    }
    int max_id = 0;
    for (int i = 0; i < f->nevents; i++)
        if (f->events[i].id > max_id)
            max_id = f->events[i].id;
    f->max_id = max_id;
    f->by_id = malloc(((size_t)max_id + 1) * sizeof(int32_t));
    if (!f->by_id)
        return seterr(f->err, "out of memory"), -1;
    for (int i = 0; i <= max_id; i++)
        f->by_id[i] = -1;
    for (int i = 0; i < f->nevents; i++) {
        int id = f->events[i].id;
        if (f->by_id[id] >= 0)
            return seterr(f->err, "corrupt %s: event id %d is given to both %s and %s", f->kind,
                          id, f->events[f->by_id[id]].name, f->events[i].name), -1;
        f->by_id[id] = i;
    }
    /* the common_type field must be able to hold the largest id */
    if (f->common_type_size == 1 && max_id > 255)
        return seterr(f->err, "corrupt %s: event id %d does not fit common_type", f->kind,
                      max_id), -1;
    return check_prev_state_format(f);
}

int td_open(td_file **out, const uint8_t *data, size_t size, char *err)
{
    *out = NULL;
    err[0] = 0;
    td_file *f = calloc(1, sizeof(*f));
    if (!f)
        return seterr(err, "out of memory"), -1;
    f->data = data;
    f->size = size;
    f->err = err;
    f->kind = "trace.dat";
    *out = f;
    if (size == 0)
        return seterr(err, "empty file"), -1;
    if (perf_sniff(data, size)) {
        f->kind = "perf.data";
        return perf_open(f);
    }
    if (size < MAGIC_LEN || memcmp(data, MAGIC, MAGIC_LEN) != 0)
        return seterr(err, size < MAGIC_LEN && memcmp(data, MAGIC, size) == 0
                      ? "truncated trace.dat: the file ends inside its magic bytes"
                      : "not a trace.dat file (bad magic bytes)"), -1;
    Rd r = {data, size, 0, 0, "file header", 0, err, NULL};
    const char *ver;
    if (read_tracing_header(f, &r, &ver) < 0)
        return -1;
    if (!strcmp(ver, "6"))
        f->version = 6;
    else if (!strcmp(ver, "7"))
        f->version = 7;
    else
        return seterr(err, "unsupported trace.dat version '%.16s' (known: 6, 7)", ver), -1;
    f->meta.file_version = f->version;
    if ((f->version == 6 ? read_v6(f, &r) : read_v7(f, &r)) < 0)
        return -1;
    if (finish_formats(f) < 0 || select_buffer(f) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------- buffers & CPUs */

/* Check a buffer's CPU table against the file: inside it, not overlapping, whole
   pages (uncompressed).  Sets has_data. */
static int check_buffer(td_file *f, Buffer *b)
{
    if (b->ncpu < 0 && v6_buffer_cpus(f, b) < 0)
        return -1;
    b->has_data = 0;
    /* compressed data: a u32 chunk count, then chunks whose bytes the size counts */
    uint64_t extra = b->compressed ? 4 : 0;
    for (int i = 0; i < b->ncpu; i++) {
        CpuData *c = &b->cpu[i];
        if (c->size && (c->offset > f->size || c->size > f->size - c->offset ||
                        extra > f->size - c->offset - c->size))
            return seterr(f->err, "truncated or corrupt %s: CPU %u data of buffer '%s' "
                          "needs bytes %" PRIu64 "..%" PRIu64 " (the file has %zu bytes)", f->kind,
                          c->cpu, b->name, c->offset, c->offset + c->size + extra, f->size), -1;
        if (!b->compressed && c->size % b->page_size)
            return seterr(f->err, "corrupt %s: CPU %u data of buffer '%s' (%" PRIu64
                          " bytes at offset %" PRIu64 ") ends inside a page of %u bytes", f->kind,
                          c->cpu, b->name, c->size, c->offset, b->page_size), -1;
        for (int j = 0; j < i; j++) {
            if (b->cpu[j].cpu == c->cpu && c->size && b->cpu[j].size)
                return seterr(f->err, "corrupt %s: buffer '%s' lists CPU %u twice", f->kind,
                              b->name, c->cpu), -1;
            CpuData *d = &b->cpu[j];
            if (c->size && d->size && c->offset < d->offset + d->size + extra &&
                d->offset < c->offset + c->size + extra)
                return seterr(f->err, "corrupt %s: the data of CPUs %u and %u of buffer "
                              "'%s' overlap (offsets %" PRIu64 " and %" PRIu64 ")", f->kind, d->cpu,
                              c->cpu, b->name, d->offset, c->offset), -1;
        }
        if (c->size)
            b->has_data = 1;
    }
    return 0;
}

/* The buffer to read: the top one, or (`trace-cmd extract -B NAME` leaves the top
   buffer empty) the first instance with data. */
static int select_buffer(td_file *f)
{
    if (!f->nbuffers)
        return seterr(f->err, "corrupt %s: the file has no trace data section", f->kind), -1;
    int top = -1;
    for (int i = 0; i < f->nbuffers; i++) {
        if (check_buffer(f, &f->buffers[i]) < 0)
            return -1;
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
        return seterr(f->err, "out of memory"), -1;
    ninst = 0;
    for (int i = 0; i < f->nbuffers; i++)
        if (f->buffers[i].name[0])
            f->instances[ninst++] = f->buffers[i].name;
    f->meta.instances = f->instances;
    f->meta.ninstances = ninst;
    f->lost_per_cpu = calloc((size_t)ncpus, sizeof(int64_t));
    if (own(f, f->lost_per_cpu) < 0)
        return seterr(f->err, "out of memory"), -1;
    return 0;
}

void td_data_is_file_mapping(td_file *f)
{
    f->file_mapping = 1;
}
