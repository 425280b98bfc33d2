/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/fake_libnccl.h: the fake NCCL the CUDA tests load in place of
 * libnccl.so.2 (built by `make CUDA=1` as $(BUILD)/cuda-fake-nccl/libnccl.so.2;
 * variants: cuda-fake-nccl-old/ (reports 2.6.4, no ncclCommInitRankConfig)
 * and cuda-fake-nccl-nosend/ (no ncclSend)). It works on the fake CUDA
 * driver's memory (host memory: a device pointer is a host address) and
 * exports the entry points backend-cuda/comm/cuda_nccl_loader.h resolves.
 *
 *   communicators  ncclCommInitAll: the ranks of one process (one per device;
 *                  a device twice: ncclInvalidUsage, as NCCL's "Duplicate
 *                  GPU detected"); ncclCommInitRank(Config) with an id of
 *                  ncclGetUniqueId: ranks in several processes, meeting in a
 *                  shared-memory segment named by the id (fake_libnccl_shm.c;
 *                  non-blocking init: ncclInProgress until every rank joined)
 *   in-process     ranks of one clique run their collectives in one
 *                  ncclGroupStart / End (the CUDA driver always does): at
 *                  ncclGroupEnd every rank's all_reduce is added up (in rank
 *                  order, integers wrapping) and send / recv pairs copied;
 *                  a clique of one rank runs each call at once; a rank of a
 *                  clique of several outside a group: ncclInvalidUsage
 *   across         a collective of a multi-process communicator is enqueued:
 *   processes      the stream stands behind it (a gate of the fake libcuda)
 *                  until the communicator's helper thread ran it with the
 *                  other processes (all_reduce of any size of ranks,
 *                  send / recv between two ranks; 16 MiB at most per call);
 *                  a peer that does not come within
 *                  CUBERT_FAKE_NCCL_TIMEOUT_MS (default 20000) makes it
 *                  fail: ncclRemoteError from ncclCommGetAsyncError, the
 *                  stream released
 *   streams        before running, a collective waits for the gates of its
 *                  stream (cubert_fake_cuda_stream_settle of the fake libcuda)
 *
 * Knobs (environment, read at each call):
 *   CUBERT_FAKE_NCCL_VERSION      ncclGetVersion (default 22809, 2.28.9)
 *   CUBERT_FAKE_NCCL_VERSION_RESULT  ncclGetVersion returns this ncclResult_t
 *   CUBERT_FAKE_NCCL_RESULT       ncclAllReduce / ncclSend / ncclRecv return
 *                                 this ncclResult_t and do nothing
 *   CUBERT_FAKE_NCCL_INIT_RESULT  ncclCommInitAll / InitRank(Config) return it
 *   CUBERT_FAKE_NCCL_STUCK        1: collectives of a multi-process
 *                                 communicator never complete (their stream
 *                                 stays behind them) until it is aborted
 */
#ifndef CUBERT_TESTS_FAKE_LIBNCCL_H
#define CUBERT_TESTS_FAKE_LIBNCCL_H

#include <stdint.h>

typedef struct fake_nccl_stats_t {
  int64_t comms_live;       /* made - destroyed - aborted */
  uint64_t init_all, init_rank, destroys, aborts;
  uint64_t all_reduces, sends, recvs; /* calls that ran (or were enqueued) */
  uint64_t group_ends, async_polls;
  uint64_t settles;         /* streams settled before a collective ran */
} fake_nccl_stats_t;

/* Exported (dlsym): a consistent copy of the counters. */
typedef void (*fake_nccl_stats_fn)(fake_nccl_stats_t *out);
void cubert_fake_nccl_stats(fake_nccl_stats_t *out);

/* Exported: from now on ncclCommGetAsyncError reports `result` for every
 * communicator alive (0: healthy again). */
typedef void (*fake_nccl_set_async_error_fn)(int result);
void cubert_fake_nccl_set_async_error(int result);

#endif /* CUBERT_TESTS_FAKE_LIBNCCL_H */
