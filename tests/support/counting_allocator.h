/* SPDX-License-Identifier: MIT */
/*
 * tests/support/counting_allocator.h: an injected allocator for tests that
 * counts live blocks and bytes (and the peak), checks the sizes a caller
 * frees with, and can fail its Nth call (SQLite's countdown), once or from
 * then on. Thread-safe (a mutex), so threaded tests can use it too.
 */
#ifndef CUBERT_TESTS_COUNTING_ALLOCATOR_H
#define CUBERT_TESTS_COUNTING_ALLOCATOR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cubert/allocator.h"

typedef struct counting_allocator_t {
  pthread_mutex_t mutex;
  uint64_t calls;          /* allocation + resize calls so far */
  uint64_t fail_at;        /* 1-based call index to fail; 0 = never */
  int fail_persist;        /* 1: every call from fail_at on fails */
  uint64_t failures;       /* calls failed so far */
  int64_t live_blocks;
  int64_t live_bytes;
  int64_t peak_bytes;
  uint64_t bad_frees;      /* frees with a size that does not match */
} counting_allocator_t;

/* Initialize and return the cubert allocator that draws from it (libc underneath). */
cubert_allocator_t counting_allocator_initialize(counting_allocator_t *counting);
/* Fail the nth allocating call from now on (n >= 1), once or persistently. */
void counting_allocator_fail_at(counting_allocator_t *counting, uint64_t n, int persist);
void counting_allocator_destroy(counting_allocator_t *counting);
/* The largest peak_bytes among the counting allocators destroyed since the last call
 * (then reset): what a test's cubert objects took at most at once (the embedded runner
 * reports it per test). */
int64_t counting_allocator_take_largest_peak(void);

#endif
