/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_alloc.h: the injected allocator of the fuzz targets. It counts
 * live blocks and bytes, checks that every block is freed with the size it
 * was allocated with, and fails its Nth allocating call (once, or from then
 * on) so that a target can take the failure point from its input.
 *
 * Not thread-safe: the targets that use it are single-threaded (the CPU
 * server in deterministic mode starts no thread). Hosted code. Not
 * installed. The test suite's equivalent is tests/support/counting_allocator.c.
 */
#ifndef CUBERT_FUZZ_ALLOC_H
#define CUBERT_FUZZ_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/allocator.h"

typedef struct fuzz_alloc_t {
  uint64_t calls;     /* allocating / resizing calls since the last fuzz_alloc_fail_at */
  uint64_t fail_at;   /* 1-based call to fail; 0: never */
  int fail_persist;   /* 1: every call from fail_at on fails */
  uint64_t failures;  /* calls failed so far (never reset) */
  int64_t live_blocks;
  int64_t live_bytes;
  uint64_t bad_frees; /* a free or resize with the wrong size, or of an unknown block */
} fuzz_alloc_t;

/* Header in front of every block; keeps alignments up to 128 (the core
 * pads per-stream state to CUBERT_FALSE_SHARING_BYTES). */
#define FUZZ_ALLOC_PAD 128u
/* Fresh and freed blocks are filled with a pattern up to this many bytes
 * (like ASan's malloc_fill_byte): enough to catch reliance on contents,
 * cheap for the large blocks a device allocates. */
#define FUZZ_ALLOC_FILL 4096u
#define FUZZ_ALLOC_MAGIC 0xF0221A110CA7ED5Full

typedef struct fuzz_alloc_header_t {
  uint64_t size;
  uint64_t magic;
} fuzz_alloc_header_t;

static inline fuzz_alloc_header_t *fuzz_alloc_header_(void *payload) {
  return (fuzz_alloc_header_t *)(void *)((unsigned char *)payload - FUZZ_ALLOC_PAD);
}

static inline int fuzz_alloc_should_fail_(fuzz_alloc_t *a) {
  a->calls++;
  if (a->fail_at == 0) return 0;
  if (a->calls == a->fail_at || (a->fail_persist && a->calls > a->fail_at)) {
    a->failures++;
    return 1;
  }
  return 0;
}

static inline void *fuzz_alloc_new_(size_t size) {
  void *raw = NULL;
  fuzz_alloc_header_t *h;
  if (size > SIZE_MAX - FUZZ_ALLOC_PAD || posix_memalign(&raw, FUZZ_ALLOC_PAD, FUZZ_ALLOC_PAD + size) != 0)
    return NULL;
  h = (fuzz_alloc_header_t *)raw;
  h->size = size;
  h->magic = FUZZ_ALLOC_MAGIC;
  return (unsigned char *)raw + FUZZ_ALLOC_PAD;
}

static inline void *fuzz_alloc_fn_(void *self, void *ptr, size_t old_size, size_t new_size,
                                   size_t align) {
  fuzz_alloc_t *a = (fuzz_alloc_t *)self;
  fuzz_alloc_header_t *h = ptr ? fuzz_alloc_header_(ptr) : NULL;
  void *p;
  if (h && (h->magic != FUZZ_ALLOC_MAGIC || h->size != old_size)) a->bad_frees++;
  if (new_size == 0) {
    if (h) {
      a->live_blocks--;
      a->live_bytes -= (int64_t)h->size;
      memset(ptr, 0x55, (size_t)(h->size < FUZZ_ALLOC_FILL ? h->size : FUZZ_ALLOC_FILL));
      h->magic = 0;
      free(h);
    }
    return NULL;
  }
  if (align > FUZZ_ALLOC_PAD || fuzz_alloc_should_fail_(a)) return NULL;
  p = fuzz_alloc_new_(new_size);
  if (!p) return NULL;
  memset(p, 0xAA, new_size < FUZZ_ALLOC_FILL ? new_size : FUZZ_ALLOC_FILL); /* not zeroed */
  if (h) {
    memcpy(p, ptr, (size_t)(h->size < new_size ? h->size : new_size));
    a->live_bytes -= (int64_t)h->size;
    h->magic = 0;
    free(h);
  } else {
    a->live_blocks++;
  }
  a->live_bytes += (int64_t)new_size;
  return p;
}

static inline cubert_allocator_t fuzz_alloc_init(fuzz_alloc_t *a) {
  cubert_allocator_t al;
  memset(a, 0, sizeof(*a));
  al.self = a;
  al.fn = fuzz_alloc_fn_;
  return al;
}

/* Fail the nth allocating call from now on (n >= 1; 0: stop failing). */
static inline void fuzz_alloc_fail_at(fuzz_alloc_t *a, uint64_t n, int persist) {
  a->calls = 0;
  a->fail_at = n;
  a->fail_persist = persist;
}

/* Nothing live, nothing freed wrongly. */
static inline int fuzz_alloc_balanced(const fuzz_alloc_t *a) {
  return a->live_blocks == 0 && a->live_bytes == 0 && a->bad_frees == 0;
}

#endif /* CUBERT_FUZZ_ALLOC_H */
