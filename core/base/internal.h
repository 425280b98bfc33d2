/* SPDX-License-Identifier: MIT */
/*
 * core/base/internal.h: helpers shared by the freestanding core. Not installed.
 * core/ includes only <stddef.h> <stdint.h> <stdbool.h> <stdarg.h> and its own
 * headers; memcpy/memset/memmove come from compiler builtins (they may lower
 * to calls, which the freestanding allowlist permits).
 */
#ifndef CUBERT_CORE_INTERNAL_H
#define CUBERT_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "cubert/base.h"
#include "cubert/config.h"
#include "cubert/status.h"
#include "cubert/error.h"
#include "cubert/driver/error.h"
#include "cubert/allocator.h"

#define cubert_memcpy(d, s, n) __builtin_memcpy((d), (s), (n))
#define cubert_memset(d, c, n) __builtin_memset((d), (c), (n))
#define cubert_memmove(d, s, n) __builtin_memmove((d), (s), (n))

/* Without CUBERT_CONFIG_ERROR_REASONS (cubert/config.h) the records the core
 * sets carry their kinds, status and fields but no reason text: the core's
 * reason strings are not compiled in ((cubert_error_set) calls the function;
 * the reason is still evaluated, so a variable passed as one stays used). */
#if !CUBERT_CONFIG_ERROR_REASONS
#define cubert_error_set(error, kind, fields, count, reason) \
  ((void)(reason), (cubert_error_set)((error), (kind), (fields), (count), NULL))
#endif

#define CUBERT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CUBERT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CUBERT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The span that data written by different threads keeps apart (issue 27):
 * two 64-byte cache lines. x86 cores since Sandy Bridge prefetch the other
 * line of an aligned 128-byte pair along with a line they miss on (the L2
 * adjacent-line prefetcher), so a word written per operation by one thread
 * and a word written by another on the neighbouring line still move a line
 * between the two cores; 128 is also the line of Apple's arm64 cores
 * (folly's and crossbeam's padding are 128 on both). The per-stream words
 * of the reserve and launch paths (device-lock shards, handle-table lanes
 * and chunks, server stream slots, memory managers) are aligned and padded
 * to it. A power of two. */
#define CUBERT_FALSE_SHARING_BYTES 128u
/* n rounded up to whole CUBERT_FALSE_SHARING_BYTES spans. */
#define CUBERT_FALSE_SHARING_ROUND(n) \
  (((n) + (CUBERT_FALSE_SHARING_BYTES - 1u)) / CUBERT_FALSE_SHARING_BYTES * CUBERT_FALSE_SHARING_BYTES)

/* Fill out_error (may be NULL) with kind INVALID_ARGUMENT and `reason` (a
 * literal naming the function and the argument); returns INVALID_ARGUMENT. */
static inline cubert_status_t cubert__invalid_argument(cubert_error_t *out_error,
                                                       const char *reason) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
}

/* cubert_error_set with a reason that carries numbers: `text` is copied with
 * the bytes \001..\004 replaced by fields[0..3] in decimal and \005 by `name`
 * (NULL: "(unnamed)"), e.g. "destination \001 bytes, data \002 bytes". Without
 * CUBERT_CONFIG_ERROR_REASONS no reason is written. (core/base/error_format.c) */
cubert_status_t cubert__error_set_text(cubert_error_t *error, cubert_error_kind_t kind,
                                       const uint64_t *fields, size_t count, const char *name,
                                       const char *text);

/* Fill error (may be NULL) for a status that came without a record (a
 * status-only primitive): the kind that status stands for (INVALID_HANDLE,
 * OVERFLOW, OUT_OF_RANGE, HOST_OUT_OF_MEMORY for RESOURCE_EXHAUSTED,
 * DEVICE_LOST for UNAVAILABLE, IO_NOT_FOUND for NOT_FOUND, ...; SERVER_GENERIC
 * for the rest), `reason`, and `status` itself. OK writes nothing. Returns
 * status. (core/base/error.c) */
cubert_status_t cubert__error_from_status(cubert_error_t *error, cubert_status_t status,
                                          const char *reason);

static inline bool cubert__is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Length of a NUL-terminated string (no libc). */
static inline size_t cubert__strlen(const char *s) {
  size_t n = 0;
  /* unreachable: s NULL (every caller passes a string) */
  if (!s) return 0;
  while (s[n]) n++;
  return n;
}

/* Copy at most size-1 bytes and NUL-terminate (size > 0). Returns strlen(src). */
static inline size_t cubert__strlcpy(char *dst, const char *src, size_t size) {
  size_t n = cubert__strlen(src), k;
  /* unreachable: size 0 (every caller passes a buffer's room, at least 1) */
  if (size == 0) return n;
  k = n < size - 1 ? n : size - 1;
  if (k) cubert_memcpy(dst, src, k);
  dst[k] = 0;
  return n;
}

#endif /* CUBERT_CORE_INTERNAL_H */
