/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_error_format.c: cubert_error_format and the ServerUnhealthy
 * aggregate on arbitrary records, and core/base/fmt.h against snprintf.
 *
 * Input: a mode byte, then the record's content (a raw byte image of the
 * record, or a chain/fields/reason built through the API), then the buffer
 * sizes to format into. Checked for every size: the return value is the full
 * length (the same for every size, and equal to strlen of an unbounded
 * format), the buffer is NUL-terminated at min(len, size - 1), it holds a
 * prefix of the full text, and nothing is written past `size` (each buffer is
 * allocated with exactly `size` bytes, so ASan sees an overflow). Aggregating
 * the record keeps an exact count and a terminated reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/error.h"
#include "base/fmt.h"
#include "fuzz.h"
#include "cubert/driver/error.h"

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "fuzz_error_format: %s:%d: check failed: %s\n", __FILE__,     \
              __LINE__, #cond);                                                     \
      abort();                                                                      \
    }                                                                               \
  } while (0)

#define BIG 16384
#define MAX_SIZES 8

static char g_full[BIG];
static char g_again[BIG];

/* Format `e` into a heap buffer of exactly `size` bytes and check it against
 * the full text (g_full, length n). */
static void check_size(const cubert_error_t *e, size_t size, size_t n) {
  char *buf = (char *)malloc(size ? size : 1);
  size_t got, kept;
  FUZZ_CHECK(buf != NULL);
  memset(buf, 0x5a, size ? size : 1);
  got = cubert_error_format(e, size ? buf : NULL, size);
  FUZZ_CHECK(got == n);
  if (size > 0) {
    kept = n < size - 1 ? n : size - 1;
    FUZZ_CHECK(buf[kept] == '\0');
    FUZZ_CHECK(strlen(buf) == kept);
    FUZZ_CHECK(memcmp(buf, g_full, kept) == 0);
  } else {
    FUZZ_CHECK((unsigned char)buf[0] == 0x5a); /* nothing written with size 0 */
  }
  free(buf);
}

/* Full-length checks, then every requested size. */
static size_t check_record(const cubert_error_t *e, fuzz_reader_t *r) {
  size_t n, n2, i, nsizes;
  n = cubert_error_format(e, NULL, 0);
  FUZZ_CHECK(n > 0);
  FUZZ_CHECK(n < BIG); /* bounded: depth <= 6, reason <= 192 bytes */
  n2 = cubert_error_format(e, g_full, sizeof(g_full));
  FUZZ_CHECK(n2 == n);
  FUZZ_CHECK(strlen(g_full) == n); /* no NUL inside the text */
  FUZZ_CHECK(cubert_error_format(e, g_again, sizeof(g_again)) == n);
  FUZZ_CHECK(memcmp(g_full, g_again, n + 1) == 0); /* deterministic */
  check_size(e, 0, n);
  check_size(e, 1, n);
  check_size(e, n, n);
  check_size(e, n + 1, n);
  nsizes = fuzz_u8(r) % (MAX_SIZES + 1);
  for (i = 0; i < nsizes; i++) check_size(e, (size_t)fuzz_uint(r, 2) % (n + 8), n);
  return n;
}

static void build_raw(cubert_error_t *e, fuzz_reader_t *r) {
  unsigned char *bytes = (unsigned char *)e;
  size_t i;
  for (i = 0; i < sizeof(*e); i++) bytes[i] = fuzz_u8(r);
}

static void build_api(cubert_error_t *e, fuzz_reader_t *r) {
  uint64_t fields[4];
  char reason[CUBERT_ERROR_REASON_SIZE + 64];
  size_t i, nfields, len, wraps;
  unsigned kind;
  for (i = 0; i < 4; i++) fields[i] = fuzz_u64(r);
  nfields = fuzz_u8(r) % 6;
  len = fuzz_u8(r) % sizeof(reason);
  /* One copy, not a byte loop: gcc 12's vectorizer warns (-Wstringop-overflow)
   * about its own tail stores in the loop at -O3. */
  fuzz_fill(r, reason, len);
  reason[len] = '\0';
  kind = fuzz_u8(r) % (CUBERT_ERROR_KIND_COUNT_ + 2u); /* a few out of range */
  /* a kind outside the list records INVALID_ARGUMENT instead (cubert/error.h) */
  FUZZ_CHECK(cubert_error_set(e, (cubert_error_kind_t)kind, fields, nfields,
                              (fuzz_u8(r) & 1) ? reason : NULL) ==
             (kind < (unsigned)CUBERT_ERROR_KIND_COUNT_
                  ? cubert_error_kind_status((cubert_error_kind_t)kind)
                  : CUBERT_STATUS_INVALID_ARGUMENT));
  FUZZ_CHECK(strlen(e->reason) < CUBERT_ERROR_REASON_SIZE);
  if (fuzz_u8(r) & 1) {
    for (i = 0; i < 3; i++) e->field2[i] = fuzz_u64(r);
  }
  if (fuzz_u8(r) & 1) e->driver_code = (int64_t)fuzz_u64(r);
  wraps = fuzz_u8(r) % 10;
  for (i = 0; i < wraps; i++) {
    cubert_error_kind_t inner = cubert_error_kind(e);
    cubert_status_t before = e->status;
    unsigned outer = fuzz_u8(r) % (CUBERT_ERROR_KIND_COUNT_ + 2u);
    if (outer == CUBERT_ERROR_IO_STORAGE_MAPPING_FAILED)
      FUZZ_CHECK(cubert_error_wrap_storage_mapping_failed(e, fuzz_u64(r)) == before);
    else
      FUZZ_CHECK(cubert_error_wrap(e, (cubert_error_kind_t)outer) == before);
    FUZZ_CHECK(e->depth <= CUBERT_ERROR_MAX_DEPTH);
    FUZZ_CHECK(cubert_error_kind(e) == inner); /* the innermost is kept */
  }
}

/* Aggregate `e` `times` times (plus once with itself) and check the count. */
static void check_aggregate(const cubert_error_t *e, fuzz_reader_t *r) {
  cubert_error_t agg, first;
  size_t times = fuzz_u8(r) % 20, i;
  uint64_t per = 0, expect = 0;
  cubert_error_clear(&agg);
  if (e->depth == 0) {
    FUZZ_CHECK(cubert_error_aggregate(&agg, e) == CUBERT_STATUS_OK);
    FUZZ_CHECK(agg.depth == 0);
    return;
  }
  for (i = 0; i < times; i++) {
    FUZZ_CHECK(cubert_error_aggregate(&agg, e) == CUBERT_STATUS_SERVER_UNHEALTHY);
    if (i == 0) per = cubert_error_aggregate_count(&agg);
    FUZZ_CHECK(per >= 1);
    expect = expect > UINT64_MAX - per ? UINT64_MAX : expect + per;
    FUZZ_CHECK(cubert_error_aggregate_count(&agg) == expect);
    FUZZ_CHECK(agg.status == CUBERT_STATUS_SERVER_UNHEALTHY);
    FUZZ_CHECK(memchr(agg.reason, '\0', sizeof(agg.reason)) != NULL);
    FUZZ_CHECK(agg.depth >= 1 && agg.depth <= CUBERT_ERROR_MAX_DEPTH);
  }
  if (times > 0) {
    cubert_status_t s = cubert_error_unhealthy_first(&agg, &first);
    FUZZ_CHECK(s == CUBERT_STATUS_OK || s == CUBERT_STATUS_NOT_FOUND);
    if (s == CUBERT_STATUS_OK) {
      FUZZ_CHECK(first.depth + 1 == agg.depth);
      (void)check_record(&first, r);
    }
    FUZZ_CHECK(cubert_error_aggregate(&agg, &agg) == CUBERT_STATUS_SERVER_UNHEALTHY);
    expect = expect > UINT64_MAX - expect ? UINT64_MAX : expect * 2;
    FUZZ_CHECK(cubert_error_aggregate_count(&agg) == expect);
    (void)check_record(&agg, r);
  }
}

/* core/base/fmt.h numbers against snprintf. */
static void check_fmt_numbers(fuzz_reader_t *r) {
  char ours[64], ref[64];
  cubert_fmt_t f;
  uint64_t u = fuzz_u64(r);
  int64_t s = (int64_t)fuzz_u64(r);
  unsigned digits = fuzz_u8(r) % 20;
  size_t size = fuzz_u8(r) % 24;
  int n;
  cubert__fmt_initialize(&f, ours, sizeof(ours));
  cubert__fmt_append_u64(&f, u);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_i64(&f, s);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_hex(&f, u, digits);
  n = snprintf(ref, sizeof(ref), "%llu %lld %0*llx", (unsigned long long)u, (long long)s,
               (int)(digits > 16 ? 16 : (digits == 0 ? 1 : digits)), (unsigned long long)u);
  FUZZ_CHECK(n > 0 && (size_t)n == cubert__fmt_length(&f));
  FUZZ_CHECK(strcmp(ours, ref) == 0);
  /* the same text into a small exact-size heap buffer */
  {
    char *buf = (char *)malloc(size ? size : 1);
    FUZZ_CHECK(buf != NULL);
    cubert__fmt_initialize(&f, size ? buf : NULL, size);
    cubert__fmt_append_u64(&f, u);
    cubert__fmt_append_char(&f, ' ');
    cubert__fmt_append_i64(&f, s);
    cubert__fmt_append_char(&f, ' ');
    cubert__fmt_append_hex(&f, u, digits);
    FUZZ_CHECK(cubert__fmt_length(&f) == (size_t)n);
    if (size > 0) {
      size_t kept = (size_t)n < size - 1 ? (size_t)n : size - 1;
      FUZZ_CHECK(strlen(buf) == kept);
      FUZZ_CHECK(memcmp(buf, ref, kept) == 0);
    }
    free(buf);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = fuzz_reader_init(data, size);
  cubert_error_t e;
  uint8_t mode = fuzz_u8(&r);
  cubert_error_clear(&e);
  switch (mode % 4) {
    case 0:
      build_raw(&e, &r); /* anything at all, garbage included */
      break;
    case 1:
      break; /* empty record */
    default:
      build_api(&e, &r);
      break;
  }
  (void)check_record(&e, &r);
  if (mode & 0x80) FUZZ_CHECK(cubert_error_format(NULL, NULL, 0) == 8); /* "No error" */
  check_aggregate(&e, &r);
  check_fmt_numbers(&r);
  return 0;
}
