/*
 * _td_tracing.c: the tracing data both formats carry: trace.dat's file header is
 * it, and perf.data's HEADER_TRACING_DATA (feature or pipe record) holds the head
 * of a trace.dat v6.  Its header (magic, version, endianness, long size, page
 * size) is read here, and once the formats are read (_td_format.c), checked and
 * indexed by id.
 */
#include "_td_internal.h"

/* The start of the tracing metadata (trace.dat's file header, and the head of
   perf.data's tracing data): magic, version text, endianness, long size, page
   size.  *ver gets the version text. */
int read_tracing_header(td_file *f, Rd *r, const char **ver)
{
    const uint8_t *magic;
    uint64_t endian, lsize, psize;
    if (rd_bytes(r, MAGIC_LEN, &magic, "magic bytes") < 0)
        return TD_FAIL;
    if (memcmp(magic, MAGIC, MAGIC_LEN) != 0)
        return seterr(f->err, "corrupt %s: the %s does not start with the tracing magic "
                      "bytes", f->kind, r->what), TD_FAIL;
    if (rd_cstr(r, ver, 16, "version") < 0 || rd_u(r, 1, &endian, "endianness") ||
        rd_u(r, 1, &lsize, "long size"))
        return TD_FAIL;
    if (endian > 1)
        return seterr(f->err, "corrupt %s: endianness byte is %" PRIu64 " (0 or 1)", f->kind,
                      endian), TD_FAIL;
    int host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
    f->swap = r->swap = (int)endian != host_big;
    if (rd_u(r, 4, &psize, "page size") < 0)
        return TD_FAIL;
    if (lsize != 4 && lsize != 8)
        return seterr(f->err, "corrupt %s: long size %" PRIu64 " (4 or 8)", f->kind,
                      lsize), TD_FAIL;
    if (psize < MIN_PAGE_SIZE || psize > MAX_PAGE_SIZE || (psize & (psize - 1)))
        return seterr(f->err, "corrupt %s: page size %" PRIu64 " in the %s (a power of two "
                      "from %u to %u expected)", f->kind, psize, r->what, MIN_PAGE_SIZE,
                      MAX_PAGE_SIZE), TD_FAIL;
    f->long_size = (int)lsize;
    f->page_size = (uint32_t)psize;
    f->meta.big_endian = (int)endian;
    f->meta.long_size = f->long_size;
    return 0;
}

/* Why the first skipped event format was skipped, without its "corrupt <kind>: ". */
const char *skipped_why(const td_file *f)
{
    const char *why = f->first_skipped;
    size_t kl = strlen(f->kind);
    if (!strncmp(why, "corrupt ", 8) && !strncmp(why + 8, f->kind, kl) &&
        !strncmp(why + 8 + kl, ": ", 2))
        why += 10 + kl;
    return why;
}

/* After the formats are read: they are there, their ids are unique (then an
   index by id), and sched_switch's print format can be evaluated. */
int finish_formats(td_file *f)
{
    if (!f->commit_size)
        return seterr(f->err, "corrupt %s: the file has no ring-buffer page header "
                      "(header_page)", f->kind), TD_FAIL;
    if (!f->nevents)
        return seterr(f->err, "corrupt %s: the file has no event formats%s%s", f->kind,
                      f->skipped_formats ? " that parse; the first: " : "",
                      f->skipped_formats ? f->first_skipped : ""), TD_FAIL;
    /* (perf.data: said with the samples it leaves out, setup_events) */
    if (f->skipped_formats && !f->perf &&
        td_warn(f, "skipped %d event format%s that do not parse (the first: %s)",
                f->skipped_formats, f->skipped_formats > 1 ? "s" : "", skipped_why(f)) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    int max_id = 0;
    for (int i = 0; i < f->nevents; i++)
        if (f->events[i].id > max_id)
            max_id = f->events[i].id;
    f->max_id = max_id;
    f->by_id = malloc(((size_t)max_id + 1) * sizeof(int32_t));
    if (!f->by_id)
        return seterr(f->err, "out of memory"), TD_FAIL;
    for (int i = 0; i <= max_id; i++)
        f->by_id[i] = -1;
    for (int i = 0; i < f->nevents; i++) {
        int id = f->events[i].id;
        if (f->by_id[id] >= 0)
            return seterr(f->err, "corrupt %s: event id %d is given to both %s and %s", f->kind,
                          id, f->events[f->by_id[id]].name, f->events[i].name), TD_FAIL;
        f->by_id[id] = i;
    }
    /* the common_type field must be able to hold the largest id */
    if (f->common_type_size == 1 && max_id > 255)
        return seterr(f->err, "corrupt %s: event id %d does not fit common_type", f->kind,
                      max_id), TD_FAIL;
    return check_prev_state_format(f);
}
