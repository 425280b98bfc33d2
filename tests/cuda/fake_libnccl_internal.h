/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/fake_libnccl_internal.h: what the two files of the fake NCCL
 * share (fake_libnccl.c: the API, cliques of one process, groups;
 * fake_libnccl_shm.c: communicators across processes). Not installed.
 */
#ifndef CUBERT_TESTS_FAKE_LIBNCCL_INTERNAL_H
#define CUBERT_TESTS_FAKE_LIBNCCL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/cuda_nccl_abi.h"
#include "fake_libnccl.h"

#define FAKE_NCCL_MAX_RANKS 64
/* Bytes one rank puts through the shared segment per collective. */
#define FAKE_NCCL_SLOT_BYTES (16u << 20)
/* Collectives a multi-process communicator holds before they ran. */
#define FAKE_NCCL_QUEUE 256

typedef struct fake_shm_t fake_shm_t;

/* One enqueued collective of a multi-process communicator. */
typedef struct fake_nccl_op_t {
  int kind; /* 1 all_reduce, 2 send, 3 recv */
  const void *send;
  void *recv;
  size_t count;
  int type;
  int peer;
  uint32_t seq; /* its number on the communicator: done once *counter >= seq */
} fake_nccl_op_t;

struct cubert_nccl_comm_opaque_t {
  int nranks, rank, device;
  int clique; /* in-process clique number (multi-process: -1) */
  int aborted;
  int async_error;
  int connected; /* in-process: its first collective ran (the set-up drained) */
  fake_shm_t *shm; /* multi-process */
  /* multi-process: the helper thread and its queue (mutex / cond) */
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  pthread_t helper;
  int helper_running, stop;
  fake_nccl_op_t queue[FAKE_NCCL_QUEUE];
  uint32_t head, count;
  uint32_t enqueued;      /* ops enqueued so far (seq of the last) */
  uint32_t round;         /* rounds of the shared segment this rank ran */
  uint32_t *counter;      /* ops done (a gate address: never freed) */
};

/* Counters (fake_libnccl.c), under fake_nccl_mutex. */
extern pthread_mutex_t fake_nccl_mutex;
extern fake_nccl_stats_t fake_nccl_stats_;

long long fake_nccl_knob(const char *name, long long fallback);
size_t fake_nccl_type_size(int type);
/* out[i] = sum over `n` inputs (rank order; integers wrap). 0 or -1 (type). */
int fake_nccl_sum(void *out, const void *const *in, int n, size_t count, int type);
/* The fake libcuda's stream hooks (NULL when it is not loaded). */
typedef int (*fake_nccl_settle_fn)(struct CUstream_st *s);
typedef int (*fake_nccl_gate_fn)(struct CUstream_st *s, const uint32_t *addr, uint32_t value);
fake_nccl_settle_fn fake_nccl_settle(void);
fake_nccl_gate_fn fake_nccl_gate(void);
/* *addr = value, through the fake libcuda (so a stream waiting on it sees
 * what was written before: cubert_fake_cuda_gate_store). */
void fake_nccl_store(uint32_t *addr, uint32_t value);
/* A word a gate may wait on for the rest of the process. */
uint32_t *fake_nccl_counter_new(void);

/* ---- fake_libnccl_shm.c ---- */

/* Join segment `name` as `rank` of `nranks` (created by the first). 0, or
 * an ncclResult_t. */
int fake_shm_join(const char *name, int nranks, int rank, fake_shm_t **out);
/* 1 once every rank joined (the segment's name is then removed), 0 before,
 * -1 when a rank gave up. */
int fake_shm_ready(fake_shm_t *sh);
/* Leave (unmap). */
void fake_shm_leave(fake_shm_t *sh);
/* Run one collective as round `round`: all_reduce of `count` elements of
 * `type`, or a send / recv with `peer`. Blocks until every rank took part
 * (at most CUBERT_FAKE_NCCL_TIMEOUT_MS; *abort set: give up). 0, or
 * ncclRemoteError (a peer did not come; every rank then fails). */
int fake_shm_run(fake_shm_t *sh, int rank, uint32_t round, const fake_nccl_op_t *op,
                 const int *abort);
/* Make a unique segment name into id (ncclGetUniqueId). */
void fake_shm_unique_id(cubert_nccl_unique_id_t *id);
/* The segment name in an id made by fake_shm_unique_id, or NULL. */
const char *fake_shm_id_name(const cubert_nccl_unique_id_t *id);

#endif /* CUBERT_TESTS_FAKE_LIBNCCL_INTERNAL_H */
