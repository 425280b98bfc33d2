/* SPDX-License-Identifier: MIT */
/*
 * tests/support/host_storage.h: a storage vtable (cubert/memory.h) over libc
 * memory for tests and benches: CubeCL's BytesStorage (zero-filled, size 0
 * gives no memory) plus counters, an optional capacity (allocations beyond
 * it fail with OUT_OF_MEMORY like a full device), fail-the-Nth-alloc
 * injection, deferred deallocation until flush, and a virtual mode that
 * hands out ids without memory (for benches with large sizes). Built with
 * CUBERT_TEST_EMBEDDED (tests/embedded: a 16 MiB heap), allocations above
 * HOST_STORAGE_EMBEDDED_BACKED_MAX are ids only: the memory tests check the
 * manager's bookkeeping, and a test that reads such bytes fails on ptr NULL.
 * Single-threaded, like the manager that uses it.
 */
#ifndef CUBERT_TESTS_HOST_STORAGE_H
#define CUBERT_TESTS_HOST_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "cubert/memory.h"
#include "memory/memory.h"

typedef struct host_storage_record_t {
  unsigned char *ptr;
  uint64_t size;
  uint8_t state; /* 0 never/freed, 1 live, 2 dealloc pending */
} host_storage_record_t;

typedef struct host_storage_t {
  cubert_storage_t storage; /* pass this to the manager */
  uint64_t alignment;
  bool virtual_memory; /* ids only, no memory */
  bool deferred;       /* dealloc waits for flush (like CUDA's GpuStorage) */
  uint64_t backed_max; /* 0 = back every allocation; else larger ones are ids only (ptr NULL) */
  uint64_t capacity;   /* 0 = unlimited; else live bytes may not exceed it */
  host_storage_record_t *records; /* by id - 1 */
  uint64_t record_count, record_cap;
  /* counters */
  uint64_t alloc_calls, dealloc_calls, flush_calls, get_calls;
  uint64_t live_allocs, live_bytes, peak_bytes;
  uint64_t bad_deallocs; /* unknown or double dealloc */
  /* injection: fail the fail_at-th alloc call (1-based, counted from the
   * call to host_storage_fail_at), once or from then on */
  uint64_t fail_calls, fail_at;
  int fail_persist;
  uint64_t failures;
  cubert_status_t fail_status; /* default OUT_OF_MEMORY */
} host_storage_t;

#define HOST_STORAGE_EMBEDDED_BACKED_MAX ((uint64_t)1 << 20)

void host_storage_initialize(host_storage_t *s, uint64_t alignment);
/* Frees everything still allocated; returns how many allocations were
 * still live (a leak when the manager was destroyed first). */
uint64_t host_storage_destroy(host_storage_t *s);
void host_storage_fail_at(host_storage_t *s, uint64_t n, int persist);

#endif
