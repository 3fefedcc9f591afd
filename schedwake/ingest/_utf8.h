/*
 * _utf8.h: make untrusted bytes valid UTF-8, the way Python's
 * bytes.decode("utf-8", "replace") does.
 *
 * Task names are bytes in the kernel (prctl(PR_SET_NAME) takes any bytes), so a
 * comm may not be UTF-8, and Arrow string columns must be.  Every byte sequence
 * that is not UTF-8 becomes U+FFFD, one per "maximal subpart" (Unicode 15, 3.9,
 * the practice CPython follows), so a name reads the same whichever reader made
 * the table.  tests/test_utf8.py checks this against CPython on random bytes.
 */
#ifndef SCHEDWAKE_UTF8_H
#define SCHEDWAKE_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when the byte at s[0] does
   not start one; *sub gets the length of the maximal subpart to replace. */
static inline size_t utf8_seq(const unsigned char *s, size_t n, size_t *sub)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;     /* range of the first continuation byte */
    if (c < 0x80) {
        *sub = 1;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *sub = 1;
        return 0;
    }
    size_t k = 1;
    for (; k <= need; k++) {
        if (k >= n)
            break;
        unsigned char b = s[k];
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            break;
    }
    if (k > need)
        return need + 1;
    *sub = k;
    return 0;
}

/* 1 if s[0..n) is valid UTF-8 (the common case: ASCII, 8 bytes at a time). */
static inline int utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull)
            break;
    }
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t sub, len = utf8_seq(p + i, n - i, &sub);
        if (!len)
            return 0;
        i += len;
    }
    return 1;
}

/* Write s[0..n) to out as valid UTF-8 (out needs 3*n bytes); returns the length. */
static inline size_t utf8_replace(const char *s, size_t n, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t sub, len = utf8_seq(p + i, n - i, &sub);
        if (len) {
            memcpy(out + o, p + i, len);
            o += len;
            i += len;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);    /* U+FFFD */
            o += 3;
            i += sub;
        }
    }
    return o;
}

#endif
