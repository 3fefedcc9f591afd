/*
 * _td_symbols.c: the kallsyms text (address -> function name, for %ps fields such
 * as workqueue_execute_start.function) and the saved cmdlines (pid -> comm) of a
 * file's tracing metadata.
 */
#include "_td_internal.h"

/* ---------------------------------------------------- kallsyms, cmdlines */

static int func_cmp(const void *a, const void *b)
{
    const Func *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* /proc/kallsyms text: "ADDR T name [module]".  Like libtraceevent, skip '$' names
   and absolute ('A'/'a') symbols, and stop at the first line that does not parse;
   unlike it, say so (a warning that counts the lines not read): the functions of
   %ps fields past that line would otherwise go missing without a word. */
int read_kallsyms(td_file *f, Rd *r)
{
    uint64_t n;
    const uint8_t *text;
    if (rd_u(r, 4, &n, "kallsyms size") < 0 ||
        rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "kallsyms") < 0)
        return TD_FAIL;
    return parse_kallsyms(f, text, (size_t)n);
}

static int count_lines(const char *p, const char *end)
{
    int n = 0;
    for (; p < end; p = find_line_end(p, end) + 1)
        n++;
    return n;
}

/* The kallsyms text[0..n) into f's symbol table (replacing none: f has none yet). */
/* The value of a hexadecimal digit, -1 for any other byte. */
static const signed char hex_digit[256] = {
    [0 ... 255] = -1,
    ['0'] = 0, ['1'] = 1, ['2'] = 2, ['3'] = 3, ['4'] = 4, ['5'] = 5, ['6'] = 6, ['7'] = 7,
    ['8'] = 8, ['9'] = 9, ['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14,
    ['f'] = 15, ['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15,
};

int parse_kallsyms(td_file *f, const uint8_t *text, size_t n)
{
    const char *p = (const char *)text, *end = p + n;
    const char *nul = memchr(p, 0, n);
    if (nul)
        end = nul;
    size_t cap = 0;
    Func *funcs = NULL;
    int lineno = 0;
    /* one copy of the text that the names point into (NUL put after each), not an
       allocation a symbol: a kernel has 100,000s of them */
    char *names = malloc((size_t)(end - p) + 1);
    if (!names || own(f, names) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    memcpy(names, p, (size_t)(end - p));
    names[end - p] = 0;
    const char *line;
    for (line = p; line < end;) {
        const char *le = find_line_end(line, end);
        lineno++;
        if (le == line) {
            line = le + 1;
            continue;
        }
        const char *q = line;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        uint64_t addr = 0;
        int digits = 0;
        for (; q < le && digits < 16; q++, digits++) {
            int d = hex_digit[(unsigned char)*q];
            if (d < 0)
                break;
            addr = addr << 4 | (uint64_t)d;
        }
        if (!digits)
            break;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (q >= le)
            break;
        char type = *q++;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        const char *name = q;
        {   /* the name ends at a blank (a module's name follows) or the line's end */
            const char *sp = memchr(q, ' ', (size_t)(le - q));
            const char *tab = memchr(q, '\t', (size_t)(sp ? sp - q : le - q));
            q = tab ? tab : sp ? sp : le;
        }
        if (q == name)
            break;
        if (name[0] != '$' && type != 'A' && type != 'a') {
            if (f->nfuncs == cap) {
                cap = cap ? cap * 2 : 4096;
                Func *nf = realloc(funcs, cap * sizeof(*nf));
                if (!nf) {
                    free(funcs);
                    return seterr(f->err, "out of memory"), TD_FAIL;
                }
                funcs = nf;
            }
            size_t len = (size_t)(q - name);
            const char *s = names + (name - p);
            if (utf8_valid(name, len))
                names[q - p] = 0;
            else
                s = own_str(f, name, len);      /* bytes that are not UTF-8 replaced */
            if (!s) {
                free(funcs);
                return TD_ENOMEM;
            }
            funcs[f->nfuncs++] = (Func){addr, s};
        }
        line = le + 1;
    }
    if (line < end && td_warn(f, "skipped the kernel symbols (kallsyms) from line %d on: "
                              "%d lines, the first not 'address type name'", lineno,
                              count_lines(line, end)) < 0) {
        free(funcs);
        return seterr(f->err, "out of memory"), TD_FAIL;
    }
    /* libtraceevent lists symbols newest first and sorts them stably by address,
       so of equal addresses the one later in the file comes first.  A kallsyms
       text is usually in address order already: then only each run of equal
       addresses turns round */
    size_t nf = f->nfuncs;
    int in_order = 1;
    for (size_t i = 1; i < nf && in_order; i++)
        in_order = funcs[i].addr >= funcs[i - 1].addr;
    if (in_order) {
        for (size_t lo = 0; lo < nf;) {
            size_t hi = lo + 1;
            while (hi < nf && funcs[hi].addr == funcs[lo].addr)
                hi++;
            for (size_t i = lo, j = hi - 1; i < j; i++, j--) {
                Func t = funcs[i];
                funcs[i] = funcs[j];
                funcs[j] = t;
            }
            lo = hi;
        }
    } else {
        for (size_t i = 0; i < nf / 2; i++) {
            Func t = funcs[i];
            funcs[i] = funcs[nf - 1 - i];
            funcs[nf - 1 - i] = t;
        }
        /* stable sort: merge sort, from one buffer to the other */
        Func *tmp = malloc(nf * sizeof(*tmp));
        if (!tmp) {
            free(funcs);
            return seterr(f->err, "out of memory"), TD_FAIL;
        }
        Func *from = funcs, *to = tmp;
        for (size_t w = 1; w < nf; w *= 2) {
            for (size_t lo = 0; lo < nf; lo += 2 * w) {
                size_t mid = lo + w < nf ? lo + w : nf;
                size_t hi = lo + 2 * w < nf ? lo + 2 * w : nf;
                size_t a = lo, b = mid, o = lo;
                while (a < mid && b < hi)
                    to[o++] = func_cmp(&from[b], &from[a]) < 0 ? from[b++] : from[a++];
                while (a < mid)
                    to[o++] = from[a++];
                while (b < hi)
                    to[o++] = from[b++];
            }
            Func *t = from;
            from = to;
            to = t;
        }
        if (from != funcs)
            memcpy(funcs, from, nf * sizeof(*funcs));
        free(tmp);
    }
    if (funcs && own(f, funcs) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    f->funcs = funcs;
    return 0;
}

/* The function containing addr, found as libtraceevent's bsearch() finds it. */
const char *find_func(const td_file *f, uint64_t addr)
{
    size_t lo = 0, hi = f->nfuncs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const Func *fb = &f->funcs[mid];
        uint64_t next = mid + 1 < f->nfuncs ? f->funcs[mid + 1].addr : 0;
        if (addr == fb->addr || (addr > fb->addr && addr < next))
            return fb->name;
        if (addr < fb->addr)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

typedef struct { Cmd c; size_t i; } CI;

static int ci_cmp(const void *a, const void *b)
{
    const CI *x = a, *y = b;
    if (x->c.pid != y->c.pid)
        return x->c.pid < y->c.pid ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int cmd_cmp(const void *a, const void *b)
{
    const Cmd *x = a, *y = b;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* saved_cmdlines: "PID COMM" lines (a line that is not one is damage: libtraceevent
   stops there, dropping the names after it without a word); the first name of a
   pid wins. */
int read_cmdlines(td_file *f, Rd *r)
{
    uint64_t n;
    const uint8_t *text;
    if (rd_u(r, 8, &n, "cmdlines size") < 0 ||
        rd_bytes(r, n > r->size ? r->size + 1 : (size_t)n, &text, "cmdlines") < 0)
        return TD_FAIL;
    const char *p = (const char *)text, *end = p + n;
    const char *nul = memchr(p, 0, (size_t)n);
    if (nul)
        end = nul;
    size_t cap = 0;
    Cmd *cmds = NULL;
    int lineno = 0;
    for (const char *line = p; line < end;) {
        const char *le = find_line_end(line, end);
        lineno++;
        if (le == line) {
            line = le + 1;
            continue;
        }
        /* "%d %m[^\n]": a decimal pid, white space, the rest of the line */
        const char *q = line;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        int neg = 0;
        if (q < le && (*q == '-' || *q == '+'))
            neg = *q++ == '-';
        int64_t pid = 0;
        const char *d0 = q;
        while (q < le && *q >= '0' && *q <= '9' && pid <= INT32_MAX)
            pid = pid * 10 + (*q++ - '0');
        if (q == d0 || pid > INT32_MAX || (q < le && *q != ' ' && *q != '\t')) {
            /* the kernel writes "pid comm" lines only: anything else is damage (a
               section read as text that is none, say), and the names after it
               would be lost without a word */
            free(cmds);
            f->ncmds = 0;
            return seterr(f->err, "corrupt %s: the saved task names (cmdlines) have a "
                          "line %d that is not 'pid name': '%.40s'", f->kind, lineno,
                          own_str(f, line, (size_t)(le - line)) ?: ""), TD_FAIL;
        }
        if (neg)
            pid = -pid;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\v' || *q == '\f'))
            q++;
        if (q >= le) {          /* a task without a name: nothing to say of it */
            line = le + 1;
            continue;
        }
        if (f->ncmds == cap) {
            cap = cap ? cap * 2 : 1024;
            Cmd *nc = realloc(cmds, cap * sizeof(*nc));
            if (!nc) {
                free(cmds);
                return seterr(f->err, "out of memory"), TD_FAIL;
            }
            cmds = nc;
        }
        const char *s = own_str(f, q, (size_t)(le - q));
        if (!s) {
            free(cmds);
            return TD_ENOMEM;
        }
        cmds[f->ncmds++] = (Cmd){(int32_t)pid, s};
        line = le + 1;
    }
    if (f->ncmds > 1) {
        /* sorted by (pid, position): the first name of a duplicated pid wins */
        CI *ci = malloc(f->ncmds * sizeof(*ci));
        if (!ci) {
            free(cmds);
            return seterr(f->err, "out of memory"), TD_FAIL;
        }
        for (size_t i = 0; i < f->ncmds; i++)
            ci[i] = (CI){cmds[i], i};
        qsort(ci, f->ncmds, sizeof(*ci), ci_cmp);
        size_t o = 0;
        for (size_t i = 0; i < f->ncmds; i++)
            if (!o || cmds[o - 1].pid != ci[i].c.pid)
                cmds[o++] = ci[i].c;
        f->ncmds = o;
        free(ci);
    }
    if (cmds && own(f, cmds) < 0)
        return seterr(f->err, "out of memory"), TD_FAIL;
    f->cmds = cmds;
    return 0;
}

const char *comm_of(const td_file *f, int32_t pid)
{
    if (pid == 0)
        return "<idle>";
    Cmd key = {pid, NULL};
    const Cmd *c = f->ncmds ? bsearch(&key, f->cmds, f->ncmds, sizeof(Cmd), cmd_cmp) : NULL;
    return c ? c->comm : "<...>";
}

