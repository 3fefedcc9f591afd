/*
 * _columns.h: growable column buffers and dictionary-encoded string columns, in
 * plain C (no Python), shared by the trace.dat readers.
 *
 * A Buf is the memory of one Arrow buffer; a StrCol is an Arrow dictionary array
 * in the making (int32 indices + a dictionary of distinct values).  Every size is
 * checked before it is used: a column that would pass Arrow's 32-bit offsets or
 * SIZE_MAX fails like an allocation (-1), never wraps.
 *
 * Buffers of BUF_MAP_MIN bytes or more live in their own anonymous mappings
 * (buf_grow: a reservation of address space opened as they grow, no copy, and
 * capacity not yet written is not resident) and go back to the system when freed.  From malloc() they would
 * often sit in glibc's arenas (its mmap threshold rises to 32 MiB), be copied
 * on every growth and stay resident after free(): that was a third of the
 * reader's peak memory.
 */
#ifndef SCHEDWAKE_COLUMNS_H
#define SCHEDWAKE_COLUMNS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mremap() */
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "_utf8.h"

typedef struct {
    char *data;
    size_t len, cap;
    size_t res;             /* mapped buffers: bytes of address space reserved at data
                               (cap of them usable, the rest PROT_NONE); 0: cap */
    size_t huge;            /* mapped buffers: bytes from data on in huge pages */
    size_t want_huge;       /* bytes the owner knows will be written (buf_advise_huge) */
} Buf;

#define BUF_MAP_MIN ((size_t)256 << 10)
#define BUF_HUGE ((size_t)2 << 20)                  /* a transparent huge page */

static inline size_t buf_round_huge(size_t n)
{
    return n > SIZE_MAX - BUF_HUGE ? 0 : (n + BUF_HUGE - 1) & ~(BUF_HUGE - 1);
}

/* `res` bytes of address space (a multiple of BUF_HUGE) at a huge-page boundary, its
   first `opened` bytes readable and writable, the rest not accessible (PROT_NONE: neither
   memory nor commit charge until buf_grow opens it), or NULL. */
static inline char *buf_reserve_space(size_t res, size_t opened)
{
    if (res > SIZE_MAX - BUF_HUGE)
        return NULL;
    char *p = mmap(NULL, res + BUF_HUGE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *a = (char *)(((uintptr_t)p + BUF_HUGE - 1) & ~(uintptr_t)(BUF_HUGE - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    if (a + res < p + res + BUF_HUGE)
        munmap(a + res, (size_t)(p + res + BUF_HUGE - (a + res)));
#ifdef MADV_NOHUGEPAGE
    /* no huge pages but where buf_advise_huge() asks (THP "always" would put the
       last, partly written 2 MiB of every buffer in one) */
    madvise(a, res, MADV_NOHUGEPAGE);
#endif
    if (mprotect(a, opened, PROT_READ | PROT_WRITE) < 0) {
        munmap(a, res);
        return NULL;
    }
    return a;
}

/*
 * Huge pages (2 MiB, where the system lends them on request: THP "madvise" or
 * "always") for the first `upto` bytes of a mapped buffer, rounded down to whole
 * huge pages: the caller knows that many bytes will be written.  A column of
 * millions of rows is written once, front to back: with 4 KiB pages each costs a
 * fault and the kernel's allocation and zeroing of it one by one, 4x the time of
 * the same memory in huge pages.  Only bytes sure to be written, so that a buffer's
 * last huge page is not a mostly unwritten 2 MiB (a partial one cannot be given
 * back).  The space is aligned to them and opened in whole huge pages, and does not
 * move while it fits (a move to an address that is not aligned splits them).
 */
static inline void buf_apply_huge(Buf *b)
{
#ifdef MADV_HUGEPAGE
    size_t upto = b->want_huge & ~(BUF_HUGE - 1);
    if (upto > b->cap)
        upto = b->cap & ~(BUF_HUGE - 1);
    if (upto > b->huge && madvise(b->data + b->huge, upto - b->huge, MADV_HUGEPAGE) == 0)
        b->huge = upto;
#endif
}

static inline void buf_advise_huge(Buf *b, size_t upto)
{
    if (upto > b->want_huge)
        b->want_huge = upto;
    if (b->cap >= BUF_MAP_MIN)
        buf_apply_huge(b);
}

/* The address space to reserve for a buffer opened to `cap` bytes: that much when
   it holds all its owner said it would write (buf_advise_huge); else twice that, or
   what the owner expects and a sixteenth, if more.  Not more: address space counts
   against RLIMIT_AS (tests/sandbox.py sets one). */
static inline size_t buf_reservation(const Buf *b, size_t cap)
{
    if (b->want_huge && cap >= b->want_huge)
        return cap;
    size_t res = cap > SIZE_MAX / 2 ? cap : 2 * cap;
    size_t want = b->want_huge < SIZE_MAX / 2 ? b->want_huge + b->want_huge / 16 : 0;
    if (want > res)
        res = want;
    res = buf_round_huge(res);
    return res ? res : cap;
}

/*
 * Buffers of BUF_MAP_MIN bytes and more live in a reservation of address space of
 * their own (buf_reserve_space, buf_reservation), opened for writing in whole huge
 * pages as they grow (mprotect: no copy, no move); one that outgrows its reservation
 * moves to a new one (mremap moves the pages' table entries, huge pages whole, not
 * the bytes).
 */
static inline int buf_grow(Buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 3 * 2)
            return -1;
        cap += cap / 2;
    }
    /* all the owner said it would write: no more (a merged column, its exact size) */
    if (b->want_huge && need >= b->want_huge && need >= BUF_MAP_MIN)
        cap = need;
    if (cap < BUF_MAP_MIN) {
        char *p = realloc(b->data, cap);
        if (!p)
            return -1;
        b->data = p;
        b->cap = cap;
        return 0;
    }
    cap = buf_round_huge(cap);
    if (!cap)
        return -1;
    if (b->cap >= BUF_MAP_MIN) {
        size_t res = b->res ? b->res : b->cap;
        if (cap <= res) {
            if (mprotect(b->data + b->cap, cap - b->cap, PROT_READ | PROT_WRITE) < 0)
                return -1;
            b->cap = cap;
            buf_apply_huge(b);
            return 0;
        }
        size_t nres = buf_reservation(b, cap);
        char *a = buf_reserve_space(nres, cap);
        if (!a)
            return -1;
        /* the written pages move over (the rest of [a, a + cap) stays as opened) */
        void *p = mremap(b->data, b->cap, b->cap, MREMAP_MAYMOVE | MREMAP_FIXED, a);
        if (p == MAP_FAILED) {
            munmap(a, nres);
            return -1;
        }
        if (res > b->cap)
            munmap(b->data + b->cap, res - b->cap);
        b->data = a;
        b->cap = cap;
        b->res = nres;
        buf_apply_huge(b);
        return 0;
    }
    size_t res = buf_reservation(b, cap);
    char *a = buf_reserve_space(res, cap);
    if (!a)
        return -1;
    char *old = b->data;
    b->data = a;
    b->cap = cap;
    b->res = res;
    b->huge = 0;
    buf_apply_huge(b);          /* before the first byte is written */
    if (b->len)
        memcpy(a, old, b->len);
    free(old);
    return 0;
}

/* Give back the capacity beyond len (mapped buffers: whole pages, and the address
   space reserved beyond them). */
static inline void buf_shrink(Buf *b)
{
    if (!b->data || b->cap < BUF_MAP_MIN)
        return;
    size_t keep = (b->len + 4095) & ~(size_t)4095;
    if (keep < BUF_MAP_MIN)
        keep = BUF_MAP_MIN;
    size_t res = b->res ? b->res : b->cap;
    if (keep > b->cap)
        keep = b->cap;
    if (keep >= res || munmap(b->data + keep, res - keep) < 0)
        return;
    b->cap = keep;
    b->res = 0;
    if (b->huge > keep)
        b->huge = keep;
}

static inline int buf_put(Buf *b, const void *src, size_t n)
{
    if (n > b->cap - b->len) {
        if (n > SIZE_MAX - b->len || buf_grow(b, b->len + n) < 0)
            return -1;
    }
    if (n)
        memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* Room for n more bytes; the caller writes them and adds n to len. */
static inline int buf_reserve(Buf *b, size_t n)
{
    if (n > b->cap - b->len && (n > SIZE_MAX - b->len || buf_grow(b, b->len + n) < 0))
        return -1;
    return 0;
}

static inline void buf_free(Buf *b)
{
    if (b->cap >= BUF_MAP_MIN)
        munmap(b->data, b->res ? b->res : b->cap);
    else
        free(b->data);
    b->data = NULL;
    b->len = b->cap = b->res = b->huge = b->want_huge = 0;
}

/* ------------------------------------------- dictionary-encoded strings */

typedef struct {
    Buf indices;            /* int32 per row */
    Buf offsets;            /* int32, one per dictionary value + 1 */
    Buf chars;              /* dictionary characters (valid UTF-8) */
    uint32_t *slots;        /* open addressing: dictionary index + 1, 0 = empty */
    uint32_t *hashes;       /* hash of each dictionary value */
    size_t nslots, count, hcap;
} StrCol;

static inline uint32_t str_hash(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;  /* 8 bytes a step: names are short */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n > i)                  /* s may be NULL for an empty string */
        memcpy(&w, s + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h ^ (h >> 29));
}

static inline int strcol_rehash(StrCol *c)
{
    if (c->nslots > (1u << 30))
        return -1;
    size_t n = c->nslots ? c->nslots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < c->count; i++) {
        size_t j = c->hashes[i] & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = (uint32_t)i + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
    return 0;
}

/* Index of the valid-UTF-8 string s[0..n) in the dictionary, adding it if new. */
static inline int32_t strcol_intern_valid(StrCol *c, const char *s, size_t n)
{
    if ((c->count + 1) * 2 > c->nslots && strcol_rehash(c) < 0)
        return -1;
    uint32_t h = str_hash(s, n);
    const int32_t *offs = (const int32_t *)c->offsets.data;
    size_t j = h & (c->nslots - 1);
    for (; c->slots[j]; j = (j + 1) & (c->nslots - 1)) {
        uint32_t i = c->slots[j] - 1;
        if (c->hashes[i] == h && (size_t)(offs[i + 1] - offs[i]) == n &&
            (n == 0 || memcmp(c->chars.data + offs[i], s, n) == 0))
            return (int32_t)i;
    }
    if (n > (size_t)INT32_MAX - c->chars.len)   /* Arrow string offsets are int32 */
        return -1;
    if (c->count == 0) {
        int32_t zero = 0;
        if (buf_put(&c->offsets, &zero, 4) < 0)
            return -1;
    }
    if (buf_put(&c->chars, s, n) < 0)
        return -1;
    int32_t end = (int32_t)c->chars.len;
    if (buf_put(&c->offsets, &end, 4) < 0)
        return -1;
    if (c->count == c->hcap) {
        size_t cap = c->hcap ? c->hcap * 2 : 64;
        uint32_t *hs = realloc(c->hashes, cap * sizeof(*hs));
        if (!hs)
            return -1;
        c->hashes = hs;
        c->hcap = cap;
    }
    c->hashes[c->count] = h;
    c->slots[j] = (uint32_t)++c->count;
    return (int32_t)(c->count - 1);
}

/* Index of s[0..n) in the dictionary; bytes that are not UTF-8 become U+FFFD. */
static inline int32_t strcol_intern(StrCol *c, const char *s, size_t n)
{
    if (utf8_valid(s, n))
        return strcol_intern_valid(c, s, n);
    char small[256];
    char *out = n <= sizeof(small) / 3 ? small : (n < SIZE_MAX / 3 ? malloc(3 * n) : NULL);
    if (!out)
        return -1;
    int32_t idx = strcol_intern_valid(c, out, utf8_replace(s, n, out));
    if (out != small)
        free(out);
    return idx;
}

static inline int strcol_append(StrCol *c, const char *s, size_t n)
{
    int32_t i = strcol_intern(c, s, n);
    if (i < 0)
        return -1;
    return buf_put(&c->indices, &i, 4);
}

static inline void strcol_free(StrCol *c)
{
    buf_free(&c->indices);
    buf_free(&c->offsets);
    buf_free(&c->chars);
    free(c->slots);
    free(c->hashes);
    memset(c, 0, sizeof(*c));
}

#endif
