/*
 * tests/cts/cts.h: the conformance suite's view of "the backend under test".
 * Every CTS test gets its client from cts_client_create, so the same tests
 * run on the CPU server (default) and on the CUDA server (CUBERT_CTS_BACKEND=cuda
 * in a CUDA=1 build).
 */
#ifndef CUBERT_CTS_H
#define CUBERT_CTS_H

#include "test.h"
#include "counting_allocator.h"
#include "cubert/cubert.h"
#include "cubert/client.h"

typedef struct cts_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_client_t *client;
  uint32_t race_check; /* the race checker runs; teardown checks 0 reports */
  int deterministic;   /* the CPU server runs in deterministic mode (CUBERT_CTS_MODE) */
} cts_env_t;

/* Create a fresh device (index `device_index`) with a counting allocator;
 * skips the test (with the reason printed) when the backend is unavailable. */
void cts_setup(cts_env_t *env, uint32_t device_index);
/* Release the client and check that every block was given back. */
void cts_teardown(cts_env_t *env);

#endif
