/*
 * _td_common.c: what every part of the decoder uses: error messages, memory
 * owned by a file (freed with it), warnings, decompression of zstd/zlib blocks
 * and the small parsers of numbers in format texts.
 */
#include "_td_internal.h"

#include <zlib.h>
#include <zstd.h>

/* ------------------------------------------------------------- errors */

void seterr(char *err, const char *fmt, ...)
{
    if (!err || err[0])
        return;                     /* keep the first, most specific message */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, TD_ERRLEN, fmt, ap);
    va_end(ap);
}

int own(td_file *f, void *p)
{
    if (!p)
        return TD_ENOMEM;
    if (f->nowned == f->owned_cap) {
        size_t cap = f->owned_cap ? f->owned_cap * 2 : 64;
        char **n = realloc(f->owned, cap * sizeof(*n));
        if (!n) {
            free(p);
            return TD_ENOMEM;
        }
        f->owned = n;
        f->owned_cap = cap;
    }
    f->owned[f->nowned++] = p;
    return 0;
}

/* A NUL-terminated, valid UTF-8 copy of s[0..n), owned by f. */
char *own_str(td_file *f, const char *s, size_t n)
{
    char *c;
    if (utf8_valid(s, n)) {
        c = malloc(n + 1);
        if (c) {
            memcpy(c, s, n);
            c[n] = 0;
        }
    } else {
        c = n < SIZE_MAX / 4 ? malloc(3 * n + 1) : NULL;
        if (c)
            c[utf8_replace(s, n, c)] = 0;
    }
    if (own(f, c) < 0) {
        seterr(f->err, "out of memory");
        return NULL;
    }
    return c;
}

int td_warn(td_file *f, const char *fmt, ...)
{
    char line[TD_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    char **w = realloc(f->warnings, (size_t)(f->nwarnings + 1) * sizeof(*w));
    if (!w)
        return TD_ENOMEM;
    f->warnings = w;
    char *s = own_str(f, line, strlen(line));
    if (!s)
        return TD_ENOMEM;
    w[f->nwarnings++] = s;
    return 0;
}

/* ------------------------------------------------------ decompression */

/* Decompress src[0..csize) into exactly usize bytes at dst.  *ctx (NULL: none yet;
   ctx NULL: a context for this call only) keeps zstd's decompression context from
   one chunk to the next, as creating one costs a few pages; free it with
   decompress_end(). */
int decompress_with(void **ctx, int comp, const uint8_t *src, size_t csize, uint8_t *dst,
                    size_t usize)
{
    if (comp == COMP_ZSTD) {
        size_t n;
        if (ctx) {
            if (!*ctx && !(*ctx = ZSTD_createDCtx()))
                return TD_ENOMEM;
            n = ZSTD_decompressDCtx(*ctx, dst, usize, src, csize);
        } else {
            n = ZSTD_decompress(dst, usize, src, csize);
        }
        return !ZSTD_isError(n) && n == usize ? TD_OK : TD_EINVAL;
    }
    if (comp == COMP_ZLIB) {
        uLongf n = (uLongf)usize;
        uLong in = (uLong)csize;
        if ((size_t)n != usize || (size_t)in != csize)
            return TD_EINVAL;
        return uncompress2(dst, &n, src, &in) == Z_OK && n == usize ? TD_OK : TD_EINVAL;
    }
    return TD_EINVAL;
}

int decompress(int comp, const uint8_t *src, size_t csize, uint8_t *dst, size_t usize)
{
    return decompress_with(NULL, comp, src, csize, dst, usize);
}

void decompress_end(void **ctx)
{
    if (ctx && *ctx) {
        ZSTD_freeDCtx(*ctx);
        *ctx = NULL;
    }
}

/* A stream over one compressed block: inflow_read() decompresses only as far as the
   bytes it is asked for (zstd decodes a block of at most 128 KiB at a time, zlib
   what fills the output), so the index reads a chunk's first page without the
   rest.  The zstd stream's window is capped (a hostile frame may ask for more).
   An Inflow starts zeroed; inflow_begin() on one that was used resets its stream
   for the next block (creating a zstd stream costs more than a small chunk's
   decompression); inflow_end() frees it. */
int inflow_begin(Inflow *s, int comp, const uint8_t *src, size_t csize)
{
    if (s->z && s->comp == comp) {      /* the stream of the previous block, reset */
        s->src = src;
        s->csize = csize;
        s->cpos = 0;
        if (comp == COMP_ZSTD)
            return ZSTD_isError(ZSTD_DCtx_reset(s->z, ZSTD_reset_session_only)) ? TD_EINVAL
                                                                                : TD_OK;
        return inflateReset(s->z) == Z_OK ? TD_OK : TD_EINVAL;
    }
    inflow_end(s);
    *s = (Inflow){comp, NULL, src, csize, 0};
    if (comp == COMP_ZSTD) {
        ZSTD_DStream *z = ZSTD_createDStream();
        if (!z)
            return TD_ENOMEM;
        s->z = z;
        if (ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, 28)))
            return TD_EINVAL;
        return TD_OK;
    }
    if (comp == COMP_ZLIB) {
        z_stream *z = calloc(1, sizeof(*z));
        if (!z)
            return TD_ENOMEM;
        if (inflateInit(z) != Z_OK) {
            free(z);
            return TD_ENOMEM;
        }
        s->z = z;
        return TD_OK;
    }
    return TD_EINVAL;
}

int inflow_read(Inflow *s, uint8_t *dst, size_t n)
{
    if (!s->z)
        return TD_EINVAL;
    if (s->comp == COMP_ZSTD) {
        ZSTD_outBuffer out = {dst, n, 0};
        while (out.pos < n) {
            ZSTD_inBuffer in = {s->src, s->csize, s->cpos};
            size_t rc = ZSTD_decompressStream(s->z, &out, &in);
            int moved = in.pos != s->cpos;
            s->cpos = in.pos;
            if (ZSTD_isError(rc))
                return TD_EINVAL;
            if (out.pos < n && (rc == 0 || (!moved && in.pos == in.size)))
                return TD_EINVAL;       /* the frame or the input ends first */
        }
        return TD_OK;
    }
    z_stream *z = s->z;
    size_t got = 0;
    while (got < n) {
        size_t in_left = s->csize - s->cpos, out_left = n - got;
        z->next_in = (Bytef *)(uintptr_t)(s->src + s->cpos);
        z->avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
        z->next_out = dst + got;
        z->avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
        int rc = inflate(z, Z_NO_FLUSH);
        size_t used = (size_t)(z->next_in - (s->src + s->cpos));
        size_t made = (size_t)(z->next_out - (dst + got));
        s->cpos += used;
        got += made;
        if (got < n && (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR) ||
                        (!used && !made)))
            return TD_EINVAL;
    }
    return TD_OK;
}

void inflow_end(Inflow *s)
{
    if (!s->z)
        return;
    if (s->comp == COMP_ZSTD) {
        ZSTD_freeDStream(s->z);
    } else {
        inflateEnd(s->z);
        free(s->z);
    }
    s->z = NULL;
}

/* --------------------------------------------------------- text helpers */

/* strtoll-like parse of a decimal/hex/octal integer inside [p, end); 0 on success,
   TD_EINVAL when there is no number or it does not fit an int64_t (as strtoll's ERANGE: a
   file's "-9223372036854775809" or "0xffffffffffffffff" is no value, not a wrapped
   one, and the minus of "-9223372036854775808" must not negate INT64_MIN). */
int parse_int(const char *p, const char *end, int64_t *v, const char **after)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    int base = 10;
    if (end - p > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p < end && *p == '0') {
        base = 8;
    }
    uint64_t acc = 0;
    const char *start = p;
    for (; p < end; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return TD_EINVAL;
        acc = acc * (uint64_t)base + (uint64_t)d;
    }
    if (p == start && base != 8)
        return TD_EINVAL;
    /* integer suffixes of C literals: 1UL, 0x10ULL */
    while (p < end && (*p == 'u' || *p == 'U' || *p == 'l' || *p == 'L'))
        p++;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (acc > limit)
        return TD_EINVAL;
    /* acc - 1 fits: negating it cannot overflow, INT64_MIN included */
    *v = !neg ? (int64_t)acc : acc ? -(int64_t)(acc - 1) - 1 : 0;
    if (after)
        *after = p;
    return 0;
}

/* Find `key` (e.g. "offset:") in [p, end) and parse the integer after it. */
int keyed_int(const char *p, const char *end, const char *key, int64_t *v)
{
    size_t k = strlen(key);
    /* the key's first byte found by memchr, the rest compared only there */
    for (const char *q = p; k && (size_t)(end - q) >= k;) {
        q = memchr(q, key[0], (size_t)(end - q) - k + 1);
        if (!q)
            break;
        if (memcmp(q + 1, key + 1, k - 1) == 0)
            return parse_int(q + k, end, v, NULL);
        q++;
    }
    return TD_EINVAL;
}

const char *find_line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl ? nl : end;
}

