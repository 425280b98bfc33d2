/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz.h: the libFuzzer entry point and a small input reader for the
 * fuzz targets in fuzz/fuzz_*.c. Hosted code (may use libc). Not installed.
 *
 * A target defines LLVMFuzzerTestOneInput and reports a bug by aborting (or
 * through a sanitizer). It must not leak, keep state between calls that
 * changes its behaviour, or read files/environment. `make fuzz` links it with
 * libFuzzer (clang); `make fuzz-replay` links it with fuzz/standalone_main.c.
 */
#ifndef CUBERT_FUZZ_H
#define CUBERT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Called once per input; returns 0 (libFuzzer reserves other values). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Consumes an input front to back; reads past the end yield zero bytes. */
typedef struct fuzz_reader_t {
  const uint8_t *data;
  size_t size;
  size_t pos;
} fuzz_reader_t;

static inline fuzz_reader_t fuzz_reader_init(const uint8_t *data, size_t size) {
  fuzz_reader_t r;
  r.data = data;
  r.size = size;
  r.pos = 0;
  return r;
}

static inline int fuzz_reader_done(const fuzz_reader_t *r) { return r->pos >= r->size; }

static inline uint8_t fuzz_u8(fuzz_reader_t *r) {
  return r->pos < r->size ? r->data[r->pos++] : 0;
}

/* Copies the next `n` bytes into `dst` (zeros past the end of the input). */
static inline void fuzz_fill(fuzz_reader_t *r, void *dst, size_t n) {
  size_t have = r->pos < r->size ? r->size - r->pos : 0;
  size_t take = have < n ? have : n;
  if (take) memcpy(dst, r->data + r->pos, take);
  if (take < n) memset((unsigned char *)dst + take, 0, n - take);
  r->pos += take;
}

/* Little-endian, `bytes` (1..8) bytes. */
static inline uint64_t fuzz_uint(fuzz_reader_t *r, unsigned bytes) {
  uint64_t v = 0;
  unsigned i;
  for (i = 0; i < bytes && i < 8; i++) v |= (uint64_t)fuzz_u8(r) << (8 * i);
  return v;
}

static inline uint64_t fuzz_u64(fuzz_reader_t *r) { return fuzz_uint(r, 8); }

static inline size_t fuzz_size(fuzz_reader_t *r) {
  return (size_t)fuzz_uint(r, (unsigned)sizeof(size_t));
}

#endif /* CUBERT_FUZZ_H */
