/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_comm_costs.c: what one in-process all_reduce round
 * costs in driver calls (issue 24/30: the 4 KiB latency over raw NCCL is
 * the host's time per round, about one microsecond per driver call on an
 * H200, and raw NCCL's loop makes only the group call). bench_nccl's loop
 * over the fakes: every device's all_reduce of round k from one thread,
 * device 0 first, no sync between rounds; the fakes' counters per round are
 * printed (the breakdown of docs/collectives.md) and bounded, so a change
 * that adds calls to the round fails here. Then the slow paths of a lazy
 * post (more work on its stream before the round: its gate closes) and
 * what they keep: the order of the member's rounds, the errors.
 */
#include "cuda_comm_test.h"

#include <stdio.h>
#include <time.h>

#define COST_ROUNDS 20u
#define TIMED_ROUNDS 2000u

static double now_us(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

typedef struct cost_t {
  double records, event_waits, value_waits, value_writes, event_queries, stream_queries,
      ctx_sets, events_created, group_ends, all_reduces;
} cost_t;

static cost_t cost_of(const fake_cuda_stats_t *a, const fake_cuda_stats_t *b,
                      const fake_nccl_stats_t *na, const fake_nccl_stats_t *nb) {
  cost_t c;
  double r = COST_ROUNDS;
  c.records = (double)(b->event_records - a->event_records) / r;
  c.event_waits = (double)(b->stream_wait_events - a->stream_wait_events) / r;
  c.value_waits = (double)(b->stream_waits - a->stream_waits) / r;
  c.value_writes = (double)(b->stream_writes - a->stream_writes) / r;
  c.event_queries = (double)(b->event_queries - a->event_queries) / r;
  c.stream_queries = (double)(b->stream_queries - a->stream_queries) / r;
  c.ctx_sets = (double)(b->ctx_set_current_calls - a->ctx_set_current_calls) / r;
  c.events_created = (double)(b->events_created - a->events_created) / r;
  c.group_ends = (double)(nb->group_ends - na->group_ends) / r;
  c.all_reduces = (double)(nb->all_reduces - na->all_reduces) / r;
  return c;
}

static void round_costs_body(uint32_t n) {
  comm_env_t e;
  cubert_handle_t src[COMM_MAX], dst[COMM_MAX];
  fake_cuda_stats_t a, b;
  fake_nccl_stats_t na, nb;
  float v[8], out[8];
  uint32_t i, k, round;
  double t0;
  cost_t c;
  comm_use(0, n);
  comm_open(&e, n, 0);
  for (i = 0; i < n; i++) {
    for (k = 0; k < 8; k++) v[k] = (float)(i + 1);
    src[i] = comm_f32(e.c[i], v, 8);
    CHECK_OK(cubert_client_empty(e.c[i], sizeof v, &dst[i], NULL));
  }
  for (round = 0; round < 2u + COST_ROUNDS; round++) {
    if (round == 2) { /* after the set-up and the first rounds */
      a = comm_cuda_stats();
      na = comm_nccl_stats();
    }
    for (i = 0; i < n; i++)
      CHECK_OK(cubert_client_all_reduce(e.c[i], &src[i], &dst[i], CUBERT_COMM_DTYPE_F32, e.ids,
                                        n, CUBERT_REDUCE_OPERATION_SUM, NULL));
  }
  b = comm_cuda_stats();
  nb = comm_nccl_stats();
  c = cost_of(&a, &b, &na, &nb);
  printf("    [%u members] per round: cuEventRecord %.1f, cuStreamWaitEvent %.1f, "
         "cuStreamWaitValue32 %.1f, cuStreamWriteValue32 %.1f, cuEventQuery %.1f, "
         "cuStreamQuery %.1f, cuCtxSetCurrent %.1f, cuEventCreate %.1f, ncclGroupEnd %.1f, "
         "ncclAllReduce %.1f\n",
         (unsigned)n, c.records, c.event_waits, c.value_waits, c.value_writes, c.event_queries,
         c.stream_queries, c.ctx_sets, c.events_created, c.group_ends, c.all_reduces);
  CHECK(c.group_ends == 1.0 && c.all_reduces == (double)n); /* one group call per round */
  /* every member's part on its own stream: the first n - 1 posts were lazy
   * (nothing came to their streams before the last post issued the round),
   * the last one direct: no gate, no F, no wait for it */
  CHECK(c.value_waits == 0.0 && c.value_writes == 0.0);
  CHECK(c.event_waits == 0.0);
  /* the server's fence on an idle compute stream: the stream's last event
   * again (no record) and no wait; the pins: one event per member every
   * SERVER_COMM_HELD (16) collectives, with the context switch it needs
   * (20 rounds measured: one each). Before the lazy posts: 2n + n - 1
   * records, n - 1 event waits, n - 1 gate waits and writes, 4 (n = 2) and
   * 13 (n = 4) context switches */
  CHECK(c.records <= 2.0 * n / 20.0);
  CHECK(c.ctx_sets <= 2.0 * n / 20.0);
  CHECK(c.events_created == 0.0 && c.event_queries == 0.0 && c.stream_queries == 0.0);
  /* the goal: all of the client's driver calls of a round, beside NCCL's */
  CHECK(c.records + c.event_waits + c.value_waits + c.value_writes + c.ctx_sets +
            c.events_created + c.event_queries + c.stream_queries <=
        0.25 * n);
  /* the host's time per round here (printed only): the client's and the
   * server's bookkeeping, and the fakes' own calls (a group call copies 32
   * bytes per rank) */
  t0 = now_us();
  for (round = 0; round < TIMED_ROUNDS; round++)
    for (i = 0; i < n; i++)
      CHECK_OK(cubert_client_all_reduce(e.c[i], &src[i], &dst[i], CUBERT_COMM_DTYPE_F32, e.ids,
                                        n, CUBERT_REDUCE_OPERATION_SUM, NULL));
  printf("    [%u members] host time per round over the fakes: %.2f us\n", (unsigned)n,
         (now_us() - t0) / TIMED_ROUNDS);
  for (i = 0; i < n; i++) {
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    comm_read_f32(e.c[i], &dst[i], out, 8);
    for (k = 0; k < 8; k++) CHECK(out[k] == (float)(n * (n + 1) / 2));
    CHECK_OK(cubert_client_handle_release(e.c[i], &src[i], NULL));
    CHECK_OK(cubert_client_handle_release(e.c[i], &dst[i], NULL));
  }
  comm_close(&e);
}

TEST(cuda_comm_round_costs_two_members) { round_costs_body(2); }
TEST(cuda_comm_round_costs_four_members) { round_costs_body(4); }
