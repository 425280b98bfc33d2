/* SPDX-License-Identifier: MIT */
/* core/base/fmt.c: bounded text building without libc (see fmt.h). */
#include "base/fmt.h"

/* Keep buf[min(len, size - 1)] == 0: the invariant every append restores. */
static void fmt_terminate(cubert_fmt_t *f) {
  if (f->size == 0) return;
  f->buf[f->len < f->size - 1 ? f->len : f->size - 1] = '\0';
}

/* Store one byte at the current length if it fits, then count it. */
static void fmt_put(cubert_fmt_t *f, char c) {
  if (f->size != 0 && f->len < f->size - 1) f->buf[f->len] = c;
  if (f->len != SIZE_MAX) f->len++;
}

void cubert__fmt_initialize(cubert_fmt_t *f, char *buf, size_t size) {
  f->buf = buf;
  f->size = buf ? size : 0;
  f->len = 0;
  fmt_terminate(f);
}

void cubert__fmt_initialize_append(cubert_fmt_t *f, char *buf, size_t size) {
  size_t n = 0;
  f->buf = buf;
  f->size = buf ? size : 0;
  if (f->size != 0) {
    while (n < f->size - 1 && buf[n] != '\0') n++;
  }
  f->len = n;
  fmt_terminate(f);
}

void cubert__fmt_append_char(cubert_fmt_t *f, char c) {
  fmt_put(f, c);
  fmt_terminate(f);
}

void cubert__fmt_append_strn(cubert_fmt_t *f, const char *s, size_t n) {
  size_t i;
  if (!s) return;
  for (i = 0; i < n && s[i] != '\0'; i++) fmt_put(f, s[i]);
  fmt_terminate(f);
}

void cubert__fmt_append_str(cubert_fmt_t *f, const char *s) {
  cubert__fmt_append_strn(f, s, SIZE_MAX);
}

void cubert__fmt_append_u64(cubert_fmt_t *f, uint64_t value) {
  char digits[20]; /* 2^64 - 1 has 20 decimal digits */
  size_t n = 0;
  do {
    digits[n++] = (char)('0' + (int)(value % 10u));
    value /= 10u;
  } while (value != 0);
  while (n > 0) fmt_put(f, digits[--n]);
  fmt_terminate(f);
}

void cubert__fmt_append_i64(cubert_fmt_t *f, int64_t value) {
  uint64_t magnitude;
  if (value < 0) {
    fmt_put(f, '-');
    /* -(value + 1) + 1 avoids negating INT64_MIN. */
    magnitude = (uint64_t)(-(value + 1)) + 1u;
  } else {
    magnitude = (uint64_t)value;
  }
  cubert__fmt_append_u64(f, magnitude);
}

void cubert__fmt_append_hex(cubert_fmt_t *f, uint64_t value, unsigned min_digits) {
  static const char k_hex[16] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                 '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  char digits[16];
  size_t n = 0;
  if (min_digits > 16) min_digits = 16;
  do {
    digits[n++] = k_hex[value & 0xfu];
    value >>= 4;
  } while (value != 0);
  while (n < min_digits) digits[n++] = '0';
  while (n > 0) fmt_put(f, digits[--n]);
  fmt_terminate(f);
}

size_t cubert__fmt_length(const cubert_fmt_t *f) { return f->len; }

bool cubert__fmt_truncated(const cubert_fmt_t *f) {
  if (f->size == 0) return f->len > 0;
  return f->len > f->size - 1;
}
