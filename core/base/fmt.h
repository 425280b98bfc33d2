/* SPDX-License-Identifier: MIT */
/*
 * core/base/fmt.h: bounded text building for the freestanding core (no libc).
 * Internal header, not installed.
 *
 * A cubert_fmt_t writes into a caller buffer of `size` bytes and counts the
 * length the full text would have (snprintf-like). After every call:
 *   - when size > 0, buf holds the first min(len, size - 1) bytes of the text
 *     followed by a NUL (never a byte at or past buf[size]);
 *   - len is the full length, saturating at SIZE_MAX (never wraps).
 * buf may be NULL only with size 0 (then only len is counted). Nothing
 * allocates. Thread-safe on distinct builders; a builder is not shared.
 *
 *   char text[64];
 *   cubert_fmt_t f;
 *   cubert__fmt_initialize(&f, text, sizeof(text));
 *   cubert__fmt_append_str(&f, "size: ");
 *   cubert__fmt_append_u64(&f, 1024);
 *   n = cubert__fmt_length(&f);          // 10, text = "size: 1024"
 */
#ifndef CUBERT_CORE_FMT_H
#define CUBERT_CORE_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct cubert_fmt_t {
  char *buf;   /* destination, NULL when size == 0 */
  size_t size; /* capacity of buf in bytes, terminator included */
  size_t len;  /* full length of the text so far (may exceed size - 1) */
} cubert_fmt_t;

/* Start an empty text in buf[0..size) (writes the terminator when size > 0).
 * A NULL buf is treated as size 0. */
void cubert__fmt_initialize(cubert_fmt_t *f, char *buf, size_t size);

/* Continue the NUL-terminated text already in buf[0..size): len starts at its
 * length (bounded by size - 1; an unterminated buffer is terminated at
 * size - 1). */
void cubert__fmt_initialize_append(cubert_fmt_t *f, char *buf, size_t size);

void cubert__fmt_append_char(cubert_fmt_t *f, char c);

/* Append a NUL-terminated string; NULL appends nothing. */
void cubert__fmt_append_str(cubert_fmt_t *f, const char *s);

/* Append at most n bytes of s, stopping early at a NUL (s need not be
 * terminated within n bytes). NULL appends nothing. */
void cubert__fmt_append_strn(cubert_fmt_t *f, const char *s, size_t n);

/* Decimal, no padding: 0, 18446744073709551615, -9223372036854775808. */
void cubert__fmt_append_u64(cubert_fmt_t *f, uint64_t value);
void cubert__fmt_append_i64(cubert_fmt_t *f, int64_t value);

/* Lowercase hexadecimal without a prefix, zero-padded to at least
 * min_digits digits (at most 16; 0 behaves like 1): (255, 4) -> "00ff". */
void cubert__fmt_append_hex(cubert_fmt_t *f, uint64_t value, unsigned min_digits);

/* The full length of the text (what snprintf would return). */
size_t cubert__fmt_length(const cubert_fmt_t *f);

/* True when some of the text did not fit (len > size - 1, or size == 0 and
 * len > 0). */
bool cubert__fmt_truncated(const cubert_fmt_t *f);

#endif /* CUBERT_CORE_FMT_H */
