/*
 * _td_format.c: the text parts of the tracing metadata, shared by trace.dat and
 * perf.data (whose tracing data is the same layout): the ring-buffer page header
 * (header_page), the record header (header_event), the event formats
 * (/sys/kernel/tracing/events/<system>/<event>/format) and their print formats,
 * with the small evaluator that turns sched_switch's prev_state into the letters
 * the kernel prints ("R+", "D", "S|W").
 */
#include "_td_internal.h"

/* ------------------------------------------------------- header page */

/* header_page: "field: u64 timestamp; offset:0; size:8; signed:0;" etc.  We need
   the size of `commit` (the kernel's long) and where `data` starts; anything but
   the layouts the kernel has ever written is refused. */
static int parse_header_page(td_file *f, const char *p, size_t n)
{
    const char *end = p + n;
    int64_t ts_off = -1, ts_size = -1, commit_off = -1, commit_size = -1, data_off = -1;
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        const char *semi = memchr(line, ';', (size_t)(le - line));
        if (semi) {
            const char *name = semi;
            while (name > line && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z')))
                name--;
            size_t nl = (size_t)(semi - name);
            int64_t off, size;
            if (keyed_int(semi, le, "offset:", &off) == 0 &&
                keyed_int(semi, le, "size:", &size) == 0) {
                if (nl == 9 && memcmp(name, "timestamp", 9) == 0) {
                    ts_off = off;
                    ts_size = size;
                } else if (nl == 6 && memcmp(name, "commit", 6) == 0) {
                    commit_off = off;
                    commit_size = size;
                } else if (nl == 4 && memcmp(name, "data", 4) == 0) {
                    data_off = off;
                }
            }
        }
        line = le + 1;
    }
    if (ts_off != 0 || ts_size != 8 || commit_off != 8 ||
        (commit_size != 4 && commit_size != 8) || data_off != 8 + commit_size)
        return seterr(f->err, "corrupt %s: the ring-buffer page header (header_page) "
                      "is not one the kernel writes (timestamp at %" PRId64 " size %" PRId64
                      ", commit at %" PRId64 " size %" PRId64 ", data at %" PRId64 ")", f->kind,
                      ts_off, ts_size, commit_off, commit_size, data_off), TD_FAIL;
    f->commit_size = (int)commit_size;
    f->data_offset = (int)data_off;
    return 0;
}

/* header_event: the record header the kernel describes; we decode type_len:5,
   time_delta:27 and types 29/30/31, so a file that says otherwise is refused. */
static int check_header_event(td_file *f, const char *p, size_t n)
{
    static const struct { const char *key; int64_t want; } need[] = {
        {"type_len    :", 5}, {"time_delta  :", 27}, {"padding     : type ==", 29},
        {"time_extend : type ==", 30}, {"time_stamp : type ==", 31},
        {"data max type_len  ==", 28},
    };
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        int64_t v;
        const char *key = need[i].key;
        size_t k = strlen(key);
        const char *hit = NULL;
        for (const char *q = p; q + k <= p + n; q++)
            if (memcmp(q, key, k) == 0) {
                hit = q;
                break;
            }
        if (!hit)
            continue;       /* older kernels list fewer lines */
        if (parse_int(hit + k, p + n, &v, NULL) < 0 || v != need[i].want)
            return seterr(f->err, "corrupt %s: the record header (header_event) "
                          "says '%s %" PRId64 "', the kernel's is %" PRId64, f->kind, key, v,
                          need[i].want), TD_FAIL;
    }
    return 0;
}

int read_header_info(td_file *f, Rd *r)
{
    static const char *labels[2] = {"header_page", "header_event"};
    for (int i = 0; i < 2; i++) {
        const char *label;
        uint64_t n;
        const uint8_t *text;
        if (rd_cstr(r, &label, 32, "header label") < 0)
            return TD_FAIL;
        if (strcmp(label, labels[i]) != 0)
            return seterr(f->err, "corrupt %s: expected '%s' in the %s", f->kind, labels[i],
                          r->what), TD_FAIL;
        if (rd_u(r, 8, &n, "header size") < 0 || rd_bytes(r, (size_t)n > r->size ? r->size + 1
                                                         : (size_t)n, &text, labels[i]) < 0)
            return TD_FAIL;
        if (i == 0 ? parse_header_page(f, (const char *)text, (size_t)n)
                   : check_header_event(f, (const char *)text, (size_t)n))
            return TD_FAIL;
    }
    return 0;
}

/* ------------------------------------------------------- event formats */

/* What parse_decl() and parse_field() return besides 0. */
enum { FIELD_BAD = -1, FIELD_NOMEM = -2, FIELD_RANGE = -3 };

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Parse the declaration part of a field line ("unsigned long args[6]",
   "__data_loc char[] name", "void * ptr") the way libtraceevent does, so the
   flags and element size (and so the column kind) are the same. */
static int parse_decl(td_file *f, Field *fl, const char *p, const char *end)
{
    enum { MAXTOK = 64 };
    const char *tok[MAXTOK];
    size_t tlen[MAXTOK];
    int nt = 0, bracket = -1, close = -1;
    /* drop __attribute__((...)) */
    char buf[512];
    size_t bl = 0;
    for (const char *q = p; q < end && bl < sizeof(buf) - 1;) {
        if (end - q >= 13 && memcmp(q, "__attribute__", 13) == 0) {
            q += 13;
            int depth = 0;
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            for (; q < end; q++) {
                if (*q == '(')
                    depth++;
                else if (*q == ')' && --depth <= 0) {
                    q++;
                    break;
                }
            }
            continue;
        }
        buf[bl++] = *q++;
    }
    buf[bl] = 0;
    for (const char *q = buf; *q && nt < MAXTOK;) {
        if (*q == ' ' || *q == '\t') {
            q++;
            continue;
        }
        const char *s = q;
        if (is_ident(*q))
            while (is_ident(*q))
                q++;
        else
            q++;
        tok[nt] = s;
        tlen[nt] = (size_t)(q - s);
        if (*s == '[' && bracket < 0)
            bracket = nt;
        if (*s == ']' && bracket >= 0 && close < 0)
            close = nt;
        nt++;
    }
    if (nt < 2 && !(nt == 1 && bracket < 0))
        return FIELD_BAD;
    char type[512] = "";
    size_t ty = 0;
#define TAPPEND(s, n) do { size_t _n = (n); if (ty + _n >= sizeof(type)) return FIELD_BAD; \
        memcpy(type + ty, (s), _n); ty += _n; type[ty] = 0; } while (0)
    int name_tok;
    int ntype;                  /* tokens before the name (or the bracket) */
    if (bracket >= 0) {
        if (close < 0 || bracket == 0)
            return FIELD_BAD;
        fl->is_array = 1;
        /* array length: the last token inside the brackets, if a number; a sign
           there ("[-1]") is a length out of range */
        if (bracket + 1 < close && (*tok[bracket + 1] == '-' || *tok[bracket + 1] == '+'))
            return FIELD_RANGE;
        int64_t alen = 0;
        if (close - 1 > bracket && is_ident(*tok[close - 1]))
            if (parse_int(tok[close - 1], tok[close - 1] + tlen[close - 1], &alen, NULL) < 0)
                alen = 0;
        if (alen < 0 || alen > INT32_MAX)
            alen = 0;
        int after = close + 1;
        if (after < nt && is_ident(*tok[after])) {
            /* "type [] name": the token before '[' is part of the type */
            ntype = bracket;
            name_tok = after;
        } else {
            ntype = bracket - 1;
            name_tok = bracket - 1;
        }
        for (int i = 0; i < ntype; i++) {
            if (i)
                TAPPEND(" ", 1);
            TAPPEND(tok[i], tlen[i]);
        }
        if (name_tok == after) {
            if (ntype)
                TAPPEND(" ", 1);
            /* libtraceevent appends the pre-bracket token with a space */
        }
        if (name_tok == after && bracket - 1 >= 0 && ntype == bracket) {
            /* already appended above as part of the type */
        }
        for (int i = bracket; i <= close; i++)
            TAPPEND(tok[i], tlen[i]);
        fl->elem = (int)alen;  /* array length for now */
        /* element size of a "type [] name" dynamic array comes from the type name */
        if (name_tok == after) {
            const char *tn = tok[bracket - 1];
            size_t tnl = tlen[bracket - 1];
            static const struct { const char *t; int s; } ts[] = {
                {"u8", 1}, {"u16", 2}, {"u32", 4}, {"u64", 8}, {"s8", 1}, {"s16", 2},
                {"s32", 4}, {"s64", 8}, {"char", 1}};
            fl->is_long = 0;
            int sd = 0;
            for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
                if (strlen(ts[i].t) == tnl && memcmp(ts[i].t, tn, tnl) == 0)
                    sd = ts[i].s;
            fl->elem = -sd - 1;  /* marks "size from the type": decoded below */
            if (alen)
                fl->elem = (int)alen;
        }
    } else {
        name_tok = nt - 1;
        ntype = nt - 1;
        for (int i = 0; i < ntype; i++) {
            if (i)
                TAPPEND(" ", 1);
            TAPPEND(tok[i], tlen[i]);
        }
    }
#undef TAPPEND
    if (!is_ident(*tok[name_tok]) || ntype < 1)
        return FIELD_BAD;
    for (int i = 0; i < ntype; i++)
        if (*tok[i] == '*')
            fl->is_pointer = 1;
    fl->name = own_str(f, tok[name_tok], tlen[name_tok]);
    fl->type = own_str(f, type, strlen(type));
    if (!fl->name || !fl->type)
        return FIELD_NOMEM;
    return 0;
}

/* One "field:...;" line into fl: 0, or FIELD_BAD when it does not parse. */
static int parse_field(td_file *f, Field *fl, const char *line, const char *le)
{
    const char *p = line;
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    if (le - p < 6 || memcmp(p, "field", 5) != 0)
        return FIELD_BAD;
    p += 5;
    if (le - p >= 8 && memcmp(p, " special", 8) == 0)
        p += 8;
    if (p >= le || *p != ':')
        return FIELD_BAD;
    p++;
    const char *semi = memchr(p, ';', (size_t)(le - p));
    if (!semi)
        return FIELD_BAD;
    memset(fl, 0, sizeof(*fl));
    int rc = parse_decl(f, fl, p, semi);
    if (rc < 0)
        return rc;
    int64_t off, size, sgn = 0;
    if (keyed_int(semi, le, "offset:", &off) < 0 || keyed_int(semi, le, "size:", &size) < 0)
        return FIELD_BAD;
    if (keyed_int(semi, le, "signed:", &sgn) < 0)
        sgn = 0;
    if (off < 0 || size < 0 || off > 65535 || size > 65535)
        return FIELD_RANGE;    /* a record is at most a page */
    fl->offset = (int)off;
    fl->size = (int)size;
    fl->is_signed = sgn != 0;
    const char *t = fl->type;
    int arraylen = fl->is_array && fl->elem > 0 ? fl->elem : 0;
    int size_dynamic = fl->is_array && fl->elem < 0 ? -fl->elem - 1 : 0;
    fl->is_string = fl->is_array && (strstr(t, "char") || strstr(t, "u8") || strstr(t, "s8"));
    fl->is_dynamic = strncmp(t, "__data_loc", 10) == 0;
    if (strncmp(t, "__rel_loc", 9) == 0)
        fl->is_dynamic = fl->is_relative = 1;
    fl->is_long = strstr(t, "long") != NULL;
    if (arraylen && !fl->is_dynamic && fl->size % arraylen)
        return FIELD_RANGE;    /* "int x[3]" in 4 bytes: no whole elements */
    if (fl->is_dynamic && fl->size == 2)
        fl->is_string = fl->is_array = 1;
    if (fl->is_array || fl->is_dynamic) {
        if (arraylen)
            fl->elem = fl->size / arraylen;
        else if (fl->is_dynamic)
            fl->elem = size_dynamic;
        else if (fl->is_string)
            fl->elem = 1;
        else if (fl->is_long)
            fl->elem = f->long_size;
        else
            fl->elem = 0;
    } else {
        fl->elem = fl->size;
    }
    return 0;
}

/* What parse_format() returns besides 0 and -1 (the format is dropped, err set). */
enum { FORMAT_CORRUPT = -2 };

/* A fixed array of no size: the reader takes it to the end of the record (a C
   flexible array member, as ftrace's print buf[]). */
static int is_flexible(const Field *fl)
{
    return fl->is_array && !fl->is_dynamic && fl->size == 0;
}

/* The format's own fields against each other and the common ones: no two with one
   name, none inside the common header or over another, and a zero-size array (a
   flexible member, read to the end of the record) only as the last.  The kernel
   writes a format from the event's C struct, so each of these is damage to the text.
   TD_OK, or TD_FAIL with the reason in f->err. */
static int check_fields(td_file *f, const char *event, const Field *common, int ncommon,
                        const Field *fields, int nf, int common_size)
{
    for (int i = 0; i < nf; i++) {
        const Field *a = &fields[i];
        for (int j = 0; j < ncommon; j++)
            if (!strcmp(a->name, common[j].name))
                return seterr(f->err, "corrupt %s: event format %s: two fields named %s",
                              f->kind, event, a->name), TD_FAIL;
        if (a->offset < common_size)
            return seterr(f->err, "corrupt %s: event format %s: field %s (offset %d) lies "
                          "in the common fields (%d bytes)", f->kind, event, a->name,
                          a->offset, common_size), TD_FAIL;
        for (int j = 0; j < i; j++) {
            const Field *b = &fields[j];
            if (!strcmp(a->name, b->name))
                return seterr(f->err, "corrupt %s: event format %s: two fields named %s",
                              f->kind, event, a->name), TD_FAIL;
            if (a->size && b->size && a->offset < b->offset + b->size &&
                b->offset < a->offset + a->size)
                return seterr(f->err, "corrupt %s: event format %s: fields %s (bytes "
                              "%d..%d) and %s (bytes %d..%d) overlap", f->kind, event, b->name,
                              b->offset, b->offset + b->size, a->name, a->offset,
                              a->offset + a->size), TD_FAIL;
            const Field *flex = is_flexible(a) ? a : is_flexible(b) ? b : NULL;
            const Field *other = flex == a ? b : a;
            if (flex && other->offset + other->size > flex->offset)
                return seterr(f->err, "corrupt %s: event format %s: field %s has size 0 "
                              "(read to the end of the record) but field %s follows it",
                              f->kind, event, flex->name, other->name), TD_FAIL;
        }
    }
    return 0;
}

/* The common fields of one format (the first format fixes them for all: they are
   the same in every format of a file; later formats must agree).  TD_OK or TD_FAIL. */
static int take_common(td_file *f, const char *event, const Field *common, int ncommon,
                       int *common_size)
{
    int t = -1, fl = -1, pr = -1, pid = -1, csize = 0;
    for (int i = 0; i < ncommon; i++) {
        const char *cn = common[i].name;
        for (int j = 0; j < i; j++)
            if (!strcmp(cn, common[j].name))
                return seterr(f->err, "corrupt %s: event format %s: two fields named %s",
                              f->kind, event, cn), TD_FAIL;
        if (!strcmp(cn, "common_type")) t = i;
        else if (!strcmp(cn, "common_flags")) fl = i;
        else if (!strcmp(cn, "common_preempt_count")) pr = i;
        else if (!strcmp(cn, "common_pid")) pid = i;
        if (common[i].offset + common[i].size > csize)
            csize = common[i].offset + common[i].size;
    }
    if (t < 0 || fl < 0 || pr < 0 || pid < 0 ||
        (common[t].size != 1 && common[t].size != 2 && common[t].size != 4) ||
        common[fl].size != 1 || common[pr].size != 1 || common[pid].size != 4)
        return seterr(f->err, "corrupt %s: event format %s lacks the common fields "
                      "(common_type, common_flags, common_preempt_count, common_pid) or has "
                      "them with other sizes", f->kind, event), TD_FAIL;
    *common_size = csize;
    if (f->common_size == 0) {
        f->common_type_off = common[t].offset;
        f->common_type_size = common[t].size;
        f->common_flags_off = common[fl].offset;
        f->common_preempt_off = common[pr].offset;
        f->common_pid_off = common[pid].offset;
        f->common_size = csize;
    } else if (f->common_type_off != common[t].offset || f->common_pid_off != common[pid].offset ||
               f->common_type_size != common[t].size || f->common_flags_off != common[fl].offset ||
               f->common_preempt_off != common[pr].offset) {
        return seterr(f->err, "corrupt %s: event format %s has its common fields "
                      "elsewhere than the others", f->kind, event), TD_FAIL;
    }
    return 0;
}

/* One event format into events[idx]/info[idx]: TD_OK; TD_FAIL (err set) when it does not
   parse (it is dropped: its records count as records of an unknown event); or
   FORMAT_CORRUPT (err set) when it parses into fields no kernel writes: a field out
   of any record's range, or fields that contradict each other (check_fields()).
   The kernel writes a format from the event's C struct, so that is damage to the
   file, not a format to skip. */
static int parse_format(td_file *f, const char *system, const char *p, size_t n, int idx)
{
    const char *end = p + n;
    td_event *ev = &f->events[idx];
    EvInfo *in = &f->info[idx];
    in->prev_state_field = -1;
    const char *name = NULL;
    size_t name_len = 0;
    int64_t id = -1;
    int in_fields = 0, common_done = 0;
    Field fields[MAX_FIELDS];
    int nf = 0, ncommon = 0;
    Field common[8];
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        const char *q = line;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (le - q >= 5 && memcmp(q, "name:", 5) == 0) {
            q += 5;
            while (q < le && *q == ' ')
                q++;
            name = q;
            name_len = (size_t)(le - q);
            while (name_len && (name[name_len - 1] == ' ' || name[name_len - 1] == '\r'))
                name_len--;
        } else if (le - q >= 3 && memcmp(q, "ID:", 3) == 0) {
            if (parse_int(q + 3, le, &id, NULL) < 0)
                id = -1;
        } else if (le - q >= 7 && memcmp(q, "format:", 7) == 0) {
            in_fields = 1;
        } else if (in_fields && q == le) {
            if (ncommon || nf)
                common_done = 1;
        } else if (in_fields && le - q >= 5 && memcmp(q, "field", 5) == 0) {
            Field fl;
            int rc = parse_field(f, &fl, line, le);
            if (rc == FIELD_NOMEM)
                return TD_ENOMEM;
            if (rc < 0) {
                seterr(f->err, "corrupt %s: event format %.*s: a field line %s: '%.*s'",
                       f->kind, (int)(name ? name_len : 1), name ? name : "?",
                       rc == FIELD_RANGE ? "is out of range" : "does not parse",
                       (int)(le - q > 120 ? 120 : le - q), q);
                return rc == FIELD_RANGE ? FORMAT_CORRUPT : -1;
            }
            if (!common_done) {
                if (ncommon < 8)
                    common[ncommon++] = fl;
            } else {
                if (nf >= MAX_FIELDS)
                    return seterr(f->err, "corrupt %s: event format with more than "
                                  "%d fields", f->kind, MAX_FIELDS), TD_FAIL;
                fields[nf++] = fl;
            }
        } else if (le - q >= 10 && memcmp(q, "print fmt:", 10) == 0) {
            q += 10;
            while (q < le && *q == ' ')
                q++;
            /* the print fmt runs to the end of the text (it may hold newlines
               inside strings in old kernels): take the rest */
            const char *pe = end;
            while (pe > q && (pe[-1] == '\n' || pe[-1] == '\0' || pe[-1] == ' '))
                pe--;
            in->print_fmt = own_str(f, q, (size_t)(pe - q));
            if (!in->print_fmt)
                return TD_ENOMEM;
            break;
        }
        line = le + 1;
    }
    if (!name || !name_len || id < 0 || id > MAX_EVENT_ID || !in_fields)
        return seterr(f->err, "corrupt %s: an event format of system '%s' lacks a "
                      "name, a valid ID (0..%d) or its fields", f->kind, system,
                      MAX_EVENT_ID), TD_FAIL;
    ev->name = own_str(f, name, name_len);
    ev->system = own_str(f, system, strlen(system));
    if (!ev->name || !ev->system)
        return TD_ENOMEM;
    ev->id = (int)id;
    if (take_common(f, ev->name, common, ncommon, &in->common_size) < 0)
        return TD_FAIL;
    in->fields_end = in->common_size;
    if (check_fields(f, ev->name, common, ncommon, fields, nf, in->common_size) < 0)
        return FORMAT_CORRUPT;
    for (int i = 0; i < nf; i++)
        if (fields[i].offset + fields[i].size > in->fields_end)
            in->fields_end = fields[i].offset + fields[i].size;
    in->nfields = nf;
    in->fields = nf ? malloc((size_t)nf * sizeof(Field)) : NULL;
    if (nf && own(f, in->fields) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    if (nf)
        memcpy(in->fields, fields, (size_t)nf * sizeof(Field));
    return 0;
}

/* A format that does not parse is skipped, not fatal: its records then count as
   records of an unknown event (a few are skipped with a warning, many refused). */
static int skip_format(td_file *f)
{
    if (!strcmp(f->err, "out of memory"))
        return TD_FAIL;
    if (!f->skipped_formats++)
        snprintf(f->first_skipped, sizeof(f->first_skipped), "%s", f->err);
    f->err[0] = 0;
    return 0;
}

/* Room for one more event (and its EvInfo), zeroed: its index, or TD_FAIL (err set). */
int new_event(td_file *f)
{
    if (f->nevents >= MAX_EVENTS)
        return seterr(f->err, "corrupt %s: more than %d event formats", f->kind,
                      MAX_EVENTS), TD_FAIL;
    if (f->nevents % 256 == 0) {
        size_t cap = (size_t)f->nevents + 256;
        td_event *e = realloc(f->events, cap * sizeof(*e));
        if (!e)
            return seterr(f->err, "out of memory"), TD_FAIL;
        f->events = e;
        EvInfo *in = realloc(f->info, cap * sizeof(*in));
        if (!in)
            return seterr(f->err, "out of memory"), TD_FAIL;
        f->info = in;
    }
    memset(&f->events[f->nevents], 0, sizeof(td_event));
    memset(&f->info[f->nevents], 0, sizeof(EvInfo));
    f->info[f->nevents].prev_state_field = -1;
    return f->nevents;
}

static int add_format(td_file *f, const char *system, const uint8_t *text, size_t n)
{
    int idx = new_event(f);
    if (idx < 0)
        return TD_FAIL;
    f->info[idx].ncommon = NCOMMON;
    int rc = parse_format(f, system, (const char *)text, n, idx);
    if (rc == FORMAT_CORRUPT)
        return TD_FAIL;
    if (rc < 0)
        return skip_format(f);
    f->nevents++;
    return 0;
}

/* An event's name and system, with its index: sorted to find names given twice. */
typedef struct {
    const char *name, *system;
    int idx;
} NameKey;

static int by_name(const void *a, const void *b)
{
    const NameKey *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (!c)
        c = strcmp(x->system, y->system);
    return c ? c : x->idx - y->idx;
}

/* Event names, once every format of the file is in (events from `first` on are
   new): two formats of one name in one system cannot both be the kernel's
   (tracefs has one directory per system and name), so the file is corrupt; one
   name in two systems is legal, but tables are named by event, so the name's
   table can hold only one system's records: a warning says which name.  TD_OK or TD_FAIL. */
static int check_event_names(td_file *f, int first)
{
    if (f->nevents < 2 || first >= f->nevents)
        return 0;
    NameKey *key = malloc((size_t)f->nevents * sizeof(NameKey));
    if (!key)
        return seterr(f->err, "out of memory"), TD_FAIL;
    for (int i = 0; i < f->nevents; i++)
        key[i] = (NameKey){f->events[i].name, f->events[i].system, i};
    qsort(key, (size_t)f->nevents, sizeof(NameKey), by_name);
    int rc = 0, shared = 0, shown = 0;     /* names in two systems; the first's pair */
    for (int k = 1; k < f->nevents && rc == 0; k++) {
        const NameKey *a = &key[k - 1], *b = &key[k];
        if (strcmp(a->name, b->name) || (a->idx < first && b->idx < first))
            continue;
        if (!strcmp(a->system, b->system))
            rc = (seterr(f->err, "corrupt %s: system %s has two event formats named %s "
                         "(ids %d and %d)", f->kind, a->system, a->name,
                         f->events[a->idx].id, f->events[b->idx].id), -1);
        else if ((k < 2 || strcmp(key[k - 2].name, a->name)) && !shared++)
            shown = k;
    }
    if (rc == 0 && shared &&
        td_warn(f, "%d event name%s in two systems (the first: %s, in %s and %s): tables are "
                "named by event, so only one system's records of each are read", shared,
                shared > 1 ? "s are" : " is", key[shown].name, key[shown - 1].system,
                key[shown].system) < 0)
        rc = (seterr(f->err, "out of memory"), -1);
    free(key);
    return rc;
}

int read_ftrace_formats(td_file *f, Rd *r)
{
    uint64_t count, n;
    const uint8_t *text;
    int first = f->nevents;
    if (rd_u(r, 4, &count, "ftrace format count") < 0)
        return TD_FAIL;
    for (uint64_t i = 0; i < count; i++) {
        if (rd_u(r, 8, &n, "ftrace format size") < 0 ||
            rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "ftrace format") < 0 ||
            add_format(f, "ftrace", text, (size_t)n) < 0)
            return TD_FAIL;
    }
    return check_event_names(f, first);
}

int read_event_formats(td_file *f, Rd *r)
{
    uint64_t nsys, count, n;
    const uint8_t *text;
    const char *sys;
    int first = f->nevents;     /* formats read before are checked against these */
    if (rd_u(r, 4, &nsys, "event system count") < 0)
        return TD_FAIL;
    for (uint64_t s = 0; s < nsys; s++) {
        if (rd_cstr(r, &sys, 1024, "event system name") < 0 ||
            rd_u(r, 4, &count, "event format count") < 0)
            return TD_FAIL;
        for (uint64_t i = 0; i < count; i++) {
            if (rd_u(r, 8, &n, "event format size") < 0 ||
                rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "event format") < 0 ||
                add_format(f, sys, text, (size_t)n) < 0)
                return TD_FAIL;
        }
    }
    return check_event_names(f, first);
}

int split_print_fmt(const char *s, PrintFmt *pf, char *fmtbuf, size_t fmtcap)
{
    memset(pf, 0, sizeof(*pf));
    const char *p = s;
    while (*p == ' ')
        p++;
    if (*p != '"')
        return TD_EINVAL;
    p++;
    size_t o = 0;
    for (; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\' && p[1]) {
            p++;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
        }
        if (o + 1 >= fmtcap)
            return TD_EINVAL;
        fmtbuf[o++] = c;
    }
    if (*p != '"')
        return TD_EINVAL;
    fmtbuf[o] = 0;
    pf->fmt = fmtbuf;
    p++;
    /* arguments: split at commas outside (), {}, [] and strings */
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *a = p;
        int depth = 0, instr = 0;
        for (; *p; p++) {
            if (instr) {
                if (*p == '\\' && p[1])
                    p++;
                else if (*p == '"')
                    instr = 0;
                continue;
            }
            if (*p == '"')
                instr = 1;
            else if (*p == '(' || *p == '{' || *p == '[')
                depth++;
            else if (*p == ')' || *p == '}' || *p == ']')
                depth--;
            else if (*p == ',' && depth <= 0)
                break;
        }
        if (pf->nargs == 128)
            return TD_EINVAL;
        const char *e = p;
        while (e > a && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t'))
            e--;
        pf->arg[pf->nargs] = a;
        pf->arglen[pf->nargs++] = (size_t)(e - a);
    }
    return 0;
}

/* Is argument a (after casts "(type)") exactly REC->name? */
static int arg_is_field(const char *a, size_t n, const char *name)
{
    const char *e = a + n;
    for (;;) {
        while (a < e && *a == ' ')
            a++;
        if (a < e && *a == '(') {
            /* a cast: "(" type ")" with no operators but '*' inside */
            const char *q = a + 1;
            int ok = 1;
            for (; q < e && *q != ')'; q++)
                if (!(is_ident(*q) || *q == ' ' || *q == '*'))
                    ok = 0;
            if (q < e && ok && q + 1 < e) {
                a = q + 1;
                continue;
            }
        }
        break;
    }
    if (e - a < 5 || memcmp(a, "REC->", 5) != 0)
        return 0;
    a += 5;
    size_t k = strlen(name);
    return (size_t)(e - a) == k && memcmp(a, name, k) == 0;
}

/* Fields printed with %ps/%pS/%pf/%pF/%pB: their values are kernel addresses. */
int field_is_symbol(const PrintFmt *pf, const char *name)
{
    int arg = 0;
    for (const char *p = pf->fmt; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '%')
            continue;
        while (*p && strchr("-+ #0", *p))
            p++;
        for (; *p && ((*p >= '0' && *p <= '9') || *p == '.' || *p == '*'); p++)
            if (*p == '*')
                arg++;
        while (*p && strchr("hlLqjzt", *p))
            p++;
        if (!*p)
            break;
        int sym = *p == 'p' && p[1] && strchr("sSfFB", p[1]);
        if (arg < pf->nargs && sym && arg_is_field(pf->arg[arg], pf->arglen[arg], name))
            return 1;
        arg++;
    }
    return 0;
}

/* --- a small evaluator for the prev_state arguments of sched_switch's print fmt:
   integers, REC->field, C operators, ?:, __print_flags, __print_symbolic, strings.
   Values are numbers or strings; any error (division by zero included) fails. */

typedef struct {
    const char *p, *end;
    const uint8_t *rec;
    int recsize;
    const td_file *f;
    const EvInfo *in;
    int depth;
    int err;
} Ev;

typedef struct {
    int is_str;
    uint64_t num;
    char str[64];
} Val;

static void ev_ws(Ev *e)
{
    while (e->p < e->end && (*e->p == ' ' || *e->p == '\t' || *e->p == '\n'))
        e->p++;
}

static int ev_peek(Ev *e, const char *tok)
{
    ev_ws(e);
    size_t k = strlen(tok);
    return (size_t)(e->end - e->p) >= k && memcmp(e->p, tok, k) == 0;
}

static int ev_eat(Ev *e, const char *tok)
{
    if (!ev_peek(e, tok))
        return 0;
    e->p += strlen(tok);
    return 1;
}

static Val ev_expr(Ev *e);

static Val ev_err(Ev *e)
{
    e->err = 1;
    Val v = {0};
    return v;
}

static Val ev_string(Ev *e)
{
    Val v = {1, 0, ""};
    size_t o = 0;
    e->p++;   /* opening quote */
    for (; e->p < e->end && *e->p != '"'; e->p++) {
        char c = *e->p;
        if (c == '\\' && e->p + 1 < e->end)
            c = *++e->p;
        if (o < sizeof(v.str) - 1)
            v.str[o++] = c;
    }
    if (e->p >= e->end)
        return ev_err(e);
    e->p++;
    v.str[o] = 0;
    return v;
}

static uint64_t ev_field(Ev *e, const char *name, size_t n)
{
    for (int i = 0; i < e->in->nfields; i++) {
        const Field *fl = &e->in->fields[i];
        if (strlen(fl->name) == n && memcmp(fl->name, name, n) == 0 && !fl->is_array &&
            !fl->is_dynamic && (fl->size == 1 || fl->size == 2 || fl->size == 4 ||
                                fl->size == 8)) {
            if (fl->offset + fl->size > e->recsize)
                return 0;
            uint64_t v = ld(e->rec + fl->offset, fl->size, e->f->swap);
            if (fl->is_signed && fl->size < 8) {
                int sh = 64 - 8 * fl->size;
                v = (uint64_t)((int64_t)(v << sh) >> sh);
            }
            return v;
        }
    }
    e->err = 1;
    return 0;
}

/* __print_flags(val, "delim", {v, "s"}, ...) / __print_symbolic(val, {v, "s"}, ...) */
static Val ev_print_table(Ev *e, int flags)
{
    Val out = {1, 0, ""};
    if (!ev_eat(e, "("))
        return ev_err(e);
    Val val = ev_expr(e);
    if (e->err || val.is_str)
        return ev_err(e);
    char delim[64] = "";
    if (!ev_eat(e, ","))
        return ev_err(e);
    if (flags) {
        ev_ws(e);
        if (e->p < e->end && *e->p == '"') {
            Val d = ev_string(e);
            if (e->err)
                return d;
            snprintf(delim, sizeof(delim), "%s", d.str);
        }
        if (!ev_eat(e, ","))
            return ev_err(e);
    }
    uint64_t v = val.num;
    int printed = 0, done = 0;
    size_t o = 0;
#define OUT(s) do { size_t _n = strlen(s); if (o + _n >= sizeof(out.str)) return ev_err(e); \
        memcpy(out.str + o, s, _n); o += _n; out.str[o] = 0; } while (0)
    for (;;) {
        if (ev_eat(e, ")"))
            break;
        if (!ev_eat(e, "{"))
            return ev_err(e);
        Val key = ev_expr(e);
        if (e->err || key.is_str || !ev_eat(e, ","))
            return ev_err(e);
        ev_ws(e);
        if (e->p >= e->end || *e->p != '"')
            return ev_err(e);
        Val s = ev_string(e);
        if (e->err || !ev_eat(e, "}"))
            return ev_err(e);
        ev_eat(e, ",");
        if (done)
            continue;
        if (flags) {
            if (!v && key.num == 0) {
                OUT(s.str);
                done = 1;
            } else if (key.num && (v & key.num) == key.num) {
                if (printed && delim[0])
                    OUT(delim);
                OUT(s.str);
                printed = 1;
                v &= ~key.num;
            }
        } else if (key.num == v) {
            OUT(s.str);
            done = 1;
        }
    }
    if (flags && v && !done) {
        char hex[24];
        if (printed && delim[0])
            OUT(delim);
        snprintf(hex, sizeof(hex), "0x%" PRIx64, v);
        OUT(hex);
    } else if (!flags && !done) {
        char hex[24];
        snprintf(hex, sizeof(hex), "0x%" PRIx64, v);
        OUT(hex);
    }
#undef OUT
    return out;
}

static Val ev_primary(Ev *e)
{
    if (++e->depth > 64)
        return ev_err(e);
    Val v = {0};
    ev_ws(e);
    if (e->p >= e->end)
        return ev_err(e);
    char c = *e->p;
    if (c == '(') {
        /* a cast "(unsigned long)" or a parenthesised expression */
        const char *q = e->p + 1;
        int cast = 1;
        while (q < e->end && *q != ')') {
            if (!(is_ident(*q) || *q == ' ' || *q == '*'))
                cast = 0;
            q++;
        }
        if (cast && q < e->end && q > e->p + 1 && !(*(e->p + 1) >= '0' && *(e->p + 1) <= '9')) {
            const char *save = e->p;
            e->p = q + 1;
            ev_ws(e);
            /* "(x)" followed by an operand is a cast; else it was an expression */
            if (e->p < e->end && (is_ident(*e->p) || *e->p == '(')) {
                v = ev_primary(e);
                e->depth--;
                return v;
            }
            e->p = save;
        }
        e->p++;
        v = ev_expr(e);
        if (!ev_eat(e, ")"))
            return ev_err(e);
    } else if (c == '"') {
        v = ev_string(e);
    } else if (c == '-' || c == '!' || c == '~') {
        e->p++;
        v = ev_primary(e);
        if (v.is_str)
            return ev_err(e);
        v.num = c == '-' ? 0 - v.num : c == '!' ? !v.num : ~v.num;
    } else if (c >= '0' && c <= '9') {
        int64_t n;
        const char *after;
        if (parse_int(e->p, e->end, &n, &after) < 0)
            return ev_err(e);
        e->p = after;
        v.num = (uint64_t)n;
    } else if (ev_eat(e, "REC->")) {
        const char *name = e->p;
        while (e->p < e->end && is_ident(*e->p))
            e->p++;
        v.num = ev_field(e, name, (size_t)(e->p - name));
    } else if (ev_eat(e, "__print_flags")) {
        v = ev_print_table(e, 1);
    } else if (ev_eat(e, "__print_symbolic")) {
        v = ev_print_table(e, 0);
    } else {
        return ev_err(e);
    }
    e->depth--;
    return v;
}

static int ev_binop(Ev *e, int level, char *op)
{
    static const char *ops[][6] = {
        {"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"},
        {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
    };
    ev_ws(e);
    for (int i = 0; i < 6 && ops[level][i]; i++) {
        const char *o = ops[level][i];
        size_t k = strlen(o);
        if ((size_t)(e->end - e->p) < k || memcmp(e->p, o, k) != 0)
            continue;
        /* "|" is not "||", "&" is not "&&", "<" is not "<<" */
        if (k == 1 && e->p + 1 < e->end && e->p[1] == o[0] && strchr("|&<>", o[0]))
            continue;
        if (k == 1 && (o[0] == '<' || o[0] == '>') && e->p + 1 < e->end && e->p[1] == '=')
            continue;
        e->p += k;
        strcpy(op, o);
        return 1;
    }
    return 0;
}

static Val ev_level(Ev *e, int level)
{
    if (level == 10)
        return ev_primary(e);
    Val l = ev_level(e, level + 1);
    char op[4];
    while (!e->err && ev_binop(e, level, op)) {
        Val r = ev_level(e, level + 1);
        if (e->err || l.is_str || r.is_str)
            return ev_err(e);
        uint64_t a = l.num, b = r.num;
        if (!strcmp(op, "||")) a = a || b;
        else if (!strcmp(op, "&&")) a = a && b;
        else if (!strcmp(op, "|")) a |= b;
        else if (!strcmp(op, "^")) a ^= b;
        else if (!strcmp(op, "&")) a &= b;
        else if (!strcmp(op, "==")) a = a == b;
        else if (!strcmp(op, "!=")) a = a != b;
        else if (!strcmp(op, "<=")) a = a <= b;
        else if (!strcmp(op, ">=")) a = a >= b;
        else if (!strcmp(op, "<")) a = a < b;
        else if (!strcmp(op, ">")) a = a > b;
        else if (!strcmp(op, "<<")) a = b < 64 ? a << b : 0;
        else if (!strcmp(op, ">>")) a = b < 64 ? a >> b : 0;
        else if (!strcmp(op, "+")) a += b;
        else if (!strcmp(op, "-")) a -= b;
        else if (!strcmp(op, "*")) a *= b;
        else if (!b) return ev_err(e);       /* / or % by zero */
        else if (!strcmp(op, "/")) a /= b;
        else a %= b;
        l.num = a;
    }
    return l;
}

static Val ev_expr(Ev *e)
{
    if (++e->depth > 64)
        return ev_err(e);
    Val c = ev_level(e, 0);
    if (!e->err && ev_eat(e, "?")) {
        if (c.is_str)
            return ev_err(e);
        Val a = ev_expr(e);
        if (e->err || !ev_eat(e, ":"))
            return ev_err(e);
        Val b = ev_expr(e);
        c = c.num ? a : b;
    }
    e->depth--;
    return c;
}

/* The text sched_switch's print fmt shows after "prev_state=" for this record. */
int prev_state_text(const td_file *f, const EvInfo *in, const PrintFmt *pf,
                           const uint8_t *rec, int recsize, char *out, size_t cap)
{
    const char *at = strstr(pf->fmt, "prev_state=");
    if (!at)
        return TD_EINVAL;
    int arg = 0;
    for (const char *p = pf->fmt; p < at; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '%')
            continue;
        while (*p && !strchr("diouxXcspfeEgG", *p)) {
            if (*p == '*')
                arg++;
            p++;
        }
        arg++;
    }
    size_t o = 0;
    out[0] = 0;
    for (const char *p = at + strlen("prev_state="); *p && *p != ' '; p++) {
        if (*p != '%') {
            if (o + 1 < cap)
                out[o++] = *p;
            continue;
        }
        p++;
        if (*p == '%') {
            if (o + 1 < cap)
                out[o++] = '%';
            continue;
        }
        /* flags, width and length modifiers do not change these short texts */
        while (*p && !strchr("diouxXcsp", *p))
            p++;
        if (!*p || arg >= pf->nargs)
            return TD_EINVAL;
        char kind = *p;
        Ev e = {pf->arg[arg], pf->arg[arg] + pf->arglen[arg], rec, recsize, f, in, 0, 0};
        Val v = ev_expr(&e);
        ev_ws(&e);
        if (e.err || e.p != e.end)
            return TD_EINVAL;
        arg++;
        char piece[80];
        if (kind == 's') {
            if (!v.is_str)
                return TD_EINVAL;
            snprintf(piece, sizeof(piece), "%s", v.str);
        } else if (v.is_str) {
            return TD_EINVAL;
        } else if (kind == 'x' || kind == 'X') {
            snprintf(piece, sizeof(piece), kind == 'x' ? "%" PRIx64 : "%" PRIX64, v.num);
        } else if (kind == 'u' || kind == 'o') {
            snprintf(piece, sizeof(piece), "%" PRIu64, v.num);
        } else {
            snprintf(piece, sizeof(piece), "%" PRId64, (int64_t)v.num);
        }
        size_t n = strlen(piece);
        if (o + n >= cap)
            return TD_EINVAL;
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = 0;
    return 0;
}

/* sched_switch's print format is the only statement of what prev_state's bits
   mean: one that does not evaluate (a syntax we do not know, a division by zero)
   makes the file unusable for every command, not only those that read the table. */
int check_prev_state_format(td_file *f)
{
    for (int e = 0; e < f->nevents; e++) {
        if (strcmp(f->events[e].name, "sched_switch"))
            continue;
        const EvInfo *in = &f->info[e];
        int end = in->common_size;
        const Field *ps = NULL;
        for (int i = 0; i < in->nfields; i++) {
            const Field *fl = &in->fields[i];
            if (fl->offset + fl->size > end)
                end = fl->offset + fl->size;
            if (!strcmp(fl->name, "prev_state") && !fl->is_array && !fl->is_dynamic &&
                (fl->size == 1 || fl->size == 2 || fl->size == 4 || fl->size == 8))
                ps = fl;
        }
        if (!ps)
            continue;
        PrintFmt *pf = malloc(sizeof(*pf));
        char *fmtbuf = malloc(4096);
        uint8_t *rec = calloc((size_t)end + 8, 1);
        char text[96];
        int ok = pf && fmtbuf && rec && in->print_fmt &&
                 split_print_fmt(in->print_fmt, pf, fmtbuf, 4096) == 0 &&
                 prev_state_text(f, in, pf, rec, end, text, sizeof(text)) == 0;
        int nomem = !pf || !fmtbuf || !rec;
        free(pf);
        free(fmtbuf);
        free(rec);
        if (nomem)
            return seterr(f->err, "out of memory"), TD_FAIL;
        if (!ok)
            return seterr(f->err, "corrupt %s: the print format of sched_switch does "
                          "not evaluate prev_state (it says what prev_state's bits mean)",
                          f->kind), TD_FAIL;
    }
    return 0;
}

