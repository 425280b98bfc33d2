/* SPDX-License-Identifier: MIT */
/* The race checker's API (cubert/race.h): reclamation, event tokens, misuse,
 * allocation failures (OK or RESOURCE_EXHAUSTED, state unchanged, 0 leaks),
 * counters, sink, seed, last report, report text, and the disabled checker. */
#define TEST_REQUIRES CUBERT_FEATURE_RACE_CHECKER
#include "test_race_fixture.h"
#include "check/race.h"

/* ---- reclamation -------------------------------------------------------------------- */

TEST(race_reclaim_drops_the_shadow) {
  fixture_t f;
  uint64_t a1, b1;
  cubert_race_counters_t k;
  fx_init(&f);
  a1 = op(&f, A, "k");
  wr(&f, X, A, a1);
  wr(&f, Y, A, a1);
  sync_stream(&f, A);
  CHECK_OK(cubert__race_reclaim(f.c, X, H));
  CHECK_OK(cubert__race_reclaim(f.c, Z, H)); /* untracked: nothing to check */
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.buffers, 1);
  CHECK_EQ_U64(k.records, 1);
  CHECK_EQ_U64(k.reclaims, 2);
  /* a reused id starts fresh: B's write of X is not checked against A's */
  b1 = op(&f, B, "k");
  wr(&f, X, B, b1);
  CHECK_EQ_U64(f.nreports, 0);
  CHECK_OK(cubert__race_forget(f.c, Y));
  CHECK_OK(cubert__race_forget(f.c, Y));
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.buffers, 1);
  fx_done(&f);
}

/* Reclamation reports every conflicting stream and never moves a clock. */
TEST(race_reclaim_reports_each_stream_and_keeps_clocks) {
  fixture_t f;
  uint64_t a1, b1;
  cubert_race_counters_t k;
  fx_init(&f);
  a1 = op(&f, A, "ka");
  rd(&f, X, A, a1);
  b1 = op(&f, B, "kb");
  rd(&f, X, B, b1);
  CHECK_OK(cubert__race_reclaim(f.c, X, C));
  CHECK_EQ_U64(f.nreports, 2);
  CHECK_EQ_U64(f.reports[0].kind, RECL);
  CHECK_EQ_U64(f.reports[0].previous.stream, A);
  CHECK_EQ_U64(f.reports[1].previous.stream, B);
  CHECK_EQ_U64(cubert__race_clock(f.c, C, A), 0);
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.reclaim_conflicts, 2);
  CHECK_EQ_U64(k.buffers, 0);
  CHECK_EQ_U64(k.records, 0);
  fx_done(&f);
}

/* A stream reclaiming sees what the host observed (its next op inherits it). */
TEST(race_reclaim_by_stream_includes_host_knowledge) {
  fixture_t f;
  uint64_t a1;
  fx_init(&f);
  a1 = op(&f, A, "k");
  wr(&f, X, A, a1);
  sync_stream(&f, A);
  CHECK_OK(cubert__race_reclaim(f.c, X, B));
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

/* A pinned cross-stream binding (docs/streams.md): A allocates
 * and writes X, B reads it, the GC stream waits for B and its event frees
 * the pin. Reuse on A is safe only because the runtime reuses after the GC
 * event: stream order alone does not cover B's read. */
TEST(race_reclaim_at_gc_event_covers_pinned_consumer) {
  fixture_t f;
  uint64_t a1, b1;
  cubert_race_event_t ea, eg;
  int variant;
  for (variant = 0; variant < 4; variant++) {
    fx_init(&f);
    a1 = op(&f, A, "produce");
    wr(&f, X, A, a1);
    ea = rec(&f, A);
    wait_ev(&f, B, ea);
    b1 = op(&f, B, "consume");
    rd(&f, X, B, b1);
    CHECK_OK(cubert__race_stream_wait_stream(f.c, G, B)); /* resolve_end: GC waits on B */
    eg = rec(&f, G);
    (void)op(&f, A, "produce_more"); /* A went on; its reuse of X comes later */
    if (variant == 0) {
      CHECK_OK(cubert__race_reclaim_at_event(f.c, X, A, eg));
      CHECK_EQ_U64(f.nreports, 0);
    } else if (variant == 1) {
      /* without the GC fence: B's read is not ordered before A's reuse */
      CHECK_OK(cubert__race_reclaim(f.c, X, A));
      CHECK_EQ_U64(f.nreports, 1);
      CHECK_EQ_U64(f.reports[0].current.stream, A);
      CHECK_EQ_U64(f.reports[0].current.index, 2);
      CHECK_EQ_U64(f.reports[0].previous.stream, B);
    } else if (variant == 2) {
      /* the fence alone: enough for any reuser, since it covers A's write too */
      CHECK_OK(cubert__race_reclaim_at_event(f.c, X, CUBERT_RACE_NO_STREAM, eg));
      CHECK_EQ_U64(f.nreports, 0);
    } else {
      /* the wrong fence (A's event): B's read uncovered; reported for reuser C */
      CHECK_OK(cubert__race_reclaim_at_event(f.c, X, C, ea));
      CHECK_EQ_U64(f.nreports, 1);
      CHECK_EQ_U64(f.reports[0].current.stream, C);
      CHECK_EQ_U64(f.reports[0].current.index, 0);
      CHECK_EQ_U64(f.reports[0].kind, RECL);
    }
    CHECK_OK(cubert__race_event_release(f.c, ea));
    CHECK_OK(cubert__race_event_release(f.c, eg));
    fx_done(&f);
  }
}

/* ---- events ---------------------------------------------------------------------------- */

TEST(race_event_tokens_are_checked) {
  fixture_t f;
  cubert_race_event_t e, e2, forged, null_token = {0, 0};
  cubert_race_counters_t k;
  fx_init(&f);
  e = rec(&f, A);
  CHECK_OK(cubert__race_event_release(f.c, e));
  CHECK_STATUS(cubert__race_event_release(f.c, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__race_stream_wait_event(f.c, B, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__race_host_wait_event(f.c, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__race_reclaim_at_event(f.c, X, A, e), CUBERT_STATUS_INVALID_HANDLE);
  e2 = rec(&f, B); /* reuses the slot with a new generation */
  CHECK_EQ_U64(e2.index, e.index);
  CHECK(e2.generation != e.generation);
  CHECK_STATUS(cubert__race_stream_wait_event(f.c, A, e), CUBERT_STATUS_INVALID_HANDLE);
  forged = e2;
  forged.index = 7;
  CHECK_STATUS(cubert__race_event_release(f.c, forged), CUBERT_STATUS_INVALID_HANDLE);
  forged.index = 0xFFFFFFFFu;
  CHECK_STATUS(cubert__race_host_wait_event(f.c, forged), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__race_event_release(f.c, null_token), CUBERT_STATUS_INVALID_HANDLE);
  forged = e2;
  forged.generation++;
  CHECK_STATUS(cubert__race_event_release(f.c, forged), CUBERT_STATUS_INVALID_HANDLE);
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.events, 2);
  CHECK_EQ_U64(k.events_live, 1);
  CHECK_OK(cubert__race_event_release(f.c, e2));
  fx_done(&f);
}

/* Many live events: the pool grows, tokens stay valid and keep their clocks. */
TEST(race_event_pool_grows) {
  fixture_t f;
  cubert_race_event_t ev[100];
  uint64_t k1, i;
  cubert_race_counters_t k;
  fx_init(&f);
  for (i = 0; i < 100; i++) {
    k1 = op(&f, A, "k");
    wr(&f, X + i, A, k1);
    ev[i] = rec(&f, A);
  }
  /* B waits on event 49: ordered after A's first 50 ops only. */
  wait_ev(&f, B, ev[49]);
  k1 = op(&f, B, "consume");
  rd(&f, X + 49, B, k1);
  CHECK_EQ_U64(f.nreports, 0);
  rd(&f, X + 50, B, k1);
  CHECK_EQ_U64(f.nreports, 1);
  for (i = 0; i < 100; i++) CHECK_OK(cubert__race_event_release(f.c, ev[i]));
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.events_live, 0);
  fx_done(&f);
}

/* ---- misuse ----------------------------------------------------------------------------- */

TEST(race_access_requires_the_open_op) {
  fixture_t f;
  uint64_t a1, a2;
  cubert_race_event_t e;
  fx_init(&f);
  /* no op begun yet */
  CHECK_STATUS(cubert__race_access(f.c, X, A, 0, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert__race_access(f.c, X, A, 1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, A, "k1");
  a2 = op(&f, A, "k2");
  CHECK_STATUS(cubert__race_access(f.c, X, A, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION); /* superseded */
  CHECK_STATUS(cubert__race_access(f.c, X, A, a2 + 1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION); /* future */
  rd(&f, X, A, a2);
  e = rec(&f, B);
  wait_ev(&f, A, e); /* a join closes A's open op */
  CHECK_STATUS(cubert__race_access(f.c, X, A, a2, CUBERT_RACE_WRITE, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, H, "h");
  sync_stream(&f, A); /* a host sync closes the host's op */
  CHECK_STATUS(cubert__race_access(f.c, X, H, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, H, "h");
  CHECK_OK(cubert__race_host_sync_all(f.c));
  CHECK_STATUS(cubert__race_access(f.c, X, H, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, H, "h");
  host_wait(&f, e);
  CHECK_STATUS(cubert__race_access(f.c, X, H, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, B, "b");
  CHECK_OK(cubert__race_stream_wait_stream(f.c, B, A));
  CHECK_STATUS(cubert__race_access(f.c, X, B, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  /* an event record does not close the op */
  a1 = op(&f, C, "c");
  (void)cubert__race_event_release(f.c, e);
  e = rec(&f, C);
  rd(&f, X, C, a1);
  CHECK_OK(cubert__race_event_release(f.c, e));
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

TEST(race_bad_arguments) {
  fixture_t f;
  uint64_t idx = 77, a1;
  cubert_race_event_t e = {5, 5}, good;
  cubert_race_counters_t k, k0;
  cubert_race_report_t r;
  fx_init(&f); /* 8 streams */
  /* NULL checker */
  CHECK_STATUS(cubert__race_op_begin(NULL, A, "k", &idx), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_access(NULL, X, A, 1, CUBERT_RACE_READ, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_event_record(NULL, A, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_event_release(NULL, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_stream_wait_event(NULL, A, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_stream_wait_stream(NULL, A, B), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_host_wait_event(NULL, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_host_sync_stream(NULL, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_host_sync_all(NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_reclaim(NULL, X, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_reclaim_at_event(NULL, X, A, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_forget(NULL, X), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_set_sink(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert__race_set_seed(NULL, 1);
  cubert__race_clear_seed(NULL);
  cubert__race_checker_reset(NULL);
  cubert__race_checker_destroy(NULL);
  CHECK_EQ_U64(cubert__race_checker_max_streams(NULL), 0);
  CHECK(!cubert__race_last_report(NULL, &r));
  memset(&k, 0xAB, sizeof(k));
  cubert__race_counters(NULL, &k);
  CHECK_EQ_U64(k.reports, 0);
  cubert__race_counters(f.c, NULL);
  CHECK(!cubert__race_last_report(f.c, NULL));
  CHECK(!cubert__race_last_report(f.c, &r)); /* none yet */
  CHECK_EQ_U64(cubert__race_checker_max_streams(f.c), 8);
  cubert__race_counters(f.c, &k0);
  /* bad streams, buffers, modes, ranges, outs */
  CHECK_STATUS(cubert__race_op_begin(f.c, 8, "k", &idx), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_op_begin(f.c, 0xFFFFFFFEu, "k", &idx), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_op_begin(f.c, A, "k", NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(idx, 77);
  a1 = op(&f, A, "k");
  CHECK_STATUS(cubert__race_access(f.c, 0, A, a1, CUBERT_RACE_READ, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_access(f.c, X, 8, a1, CUBERT_RACE_READ, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_access(f.c, X, A, a1, CUBERT_RACE_RECLAIM, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_access(f.c, X, A, a1, (cubert_race_access_t)0, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_access(f.c, X, A, a1, CUBERT_RACE_READ, 2, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_event_record(f.c, A, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_event_record(f.c, H, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_event_record(f.c, 8, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(e.index, 5);
  good = rec(&f, A);
  CHECK_STATUS(cubert__race_stream_wait_event(f.c, H, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_stream_wait_event(f.c, 8, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_stream_wait_stream(f.c, H, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_stream_wait_stream(f.c, A, H), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_stream_wait_stream(f.c, A, 8), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_host_sync_stream(f.c, H), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_host_sync_stream(f.c, 8), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_reclaim(f.c, 0, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_reclaim(f.c, X, 8), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_reclaim_at_event(f.c, 0, A, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_reclaim_at_event(f.c, X, 8, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_forget(f.c, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  /* nothing of the above changed the state (but the op and the event) */
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.accesses, k0.accesses);
  CHECK_EQ_U64(k.joins, k0.joins);
  CHECK_EQ_U64(k.reclaims, k0.reclaims);
  CHECK_EQ_U64(k.ops, k0.ops + 1);
  CHECK_EQ_U64(k.events, k0.events + 1);
  CHECK_EQ_U64(cubert__race_clock(f.c, A, A), 1);
  rd(&f, X, A, a1); /* the op is still open */
  CHECK_OK(cubert__race_event_release(f.c, good));
  fx_done(&f);
}

TEST(race_create_rejects_bad_options) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cubert_allocator_t no_fn = {NULL, NULL};
  cubert_race_options_t o;
  cubert_race_checker_t *c = (cubert_race_checker_t *)&ca; /* sentinel */
  cubert_error_t err;
  static const cubert_race_sink_vtable_t no_report = {NULL};
  cubert__race_options_initialize(NULL);
  cubert__race_options_initialize(&o);
  CHECK_EQ_U64(o.max_streams, CUBERT_RACE_DEFAULT_MAX_STREAMS);
  CHECK_EQ_U64(o.flags, 0);
  CHECK(o.sink.vtable == NULL);
  CHECK_STATUS(cubert__race_checker_create(a, &o, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__race_checker_create(no_fn, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 0;
  CHECK_STATUS(cubert__race_checker_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.status, CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = CUBERT_RACE_MAX_STREAMS_LIMIT + 1u;
  CHECK_STATUS(cubert__race_checker_create(a, &o, &c, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 4;
  o.flags = 0x2;
  CHECK_STATUS(cubert__race_checker_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.flags = 0;
  o.sink.vtable = &no_report;
  CHECK_STATUS(cubert__race_checker_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(c == (cubert_race_checker_t *)&ca);
  CHECK_EQ_I64(ca.live_blocks, 0);
  /* defaults; the largest checker */
  CHECK_OK(cubert__race_checker_create(a, NULL, &c, NULL));
  CHECK_EQ_U64(cubert__race_checker_max_streams(c), CUBERT_RACE_DEFAULT_MAX_STREAMS);
  cubert__race_checker_destroy(c);
  o.sink.vtable = NULL;
  o.max_streams = CUBERT_RACE_MAX_STREAMS_LIMIT;
  CHECK_OK(cubert__race_checker_create(a, &o, &c, NULL));
  {
    uint64_t k1 = 0;
    CHECK_OK(cubert__race_op_begin(c, CUBERT_RACE_MAX_STREAMS_LIMIT - 1u, "last", &k1));
    CHECK_OK(cubert__race_access(c, X, CUBERT_RACE_MAX_STREAMS_LIMIT - 1u, k1, CUBERT_RACE_WRITE,
                                 0, WHOLE));
    CHECK_OK(cubert__race_op_begin(c, H, "host", &k1));
    CHECK_OK(cubert__race_access(c, X, H, k1, CUBERT_RACE_READ, 0, WHOLE));
    {
      cubert_race_report_t r;
      CHECK(cubert__race_last_report(c, &r)); /* no sink: kept */
      CHECK_EQ_U64(r.previous.stream, CUBERT_RACE_MAX_STREAMS_LIMIT - 1u);
      CHECK_EQ_U64(r.current.stream, H);
    }
  }
  cubert__race_checker_destroy(c);
  CHECK_EQ_I64(ca.live_blocks, 0);
  CHECK_EQ_U64(ca.bad_frees, 0);
  counting_allocator_destroy(&ca);
}

/* ---- allocation failures: OK or RESOURCE_EXHAUSTED, state unchanged, 0 leaks ---- */

TEST(race_create_allocation_failure_loop) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cubert_race_checker_t *c;
  cubert_race_options_t o;
  cubert_error_t err;
  cubert_status_t st;
  uint64_t n;
  cubert__race_options_initialize(&o);
  o.max_streams = 16;
  for (n = 1;; n++) {
    c = (cubert_race_checker_t *)&ca;
    counting_allocator_fail_at(&ca, n, 1);
    st = cubert__race_checker_create(a, &o, &c, &err);
    if (st == CUBERT_STATUS_OK) break;
    CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(c == (cubert_race_checker_t *)&ca);
    CHECK_EQ_I64(ca.live_blocks, 0);
    CHECK(n < 10);
  }
  CHECK_EQ_U64(n, 3); /* two allocations */
  counting_allocator_fail_at(&ca, 0, 0);
  cubert__race_checker_destroy(c);
  CHECK_EQ_I64(ca.live_blocks, 0);
  CHECK_EQ_U64(ca.bad_frees, 0);
  counting_allocator_destroy(&ca);
}

/* Every access of a program that grows the shadow table (many buffers) and
 * its records (many ranges) fails once at each allocation point, is retried
 * and then succeeds; a failed access changes nothing. */
TEST(race_shadow_growth_allocation_failure_loop) {
  fixture_t f;
  uint64_t i, k1 = 0, n, failures = 0;
  cubert_race_counters_t before, after;
  cubert_status_t st;
  fx_init(&f);
  for (i = 0; i < 300; i++) {
    uint32_t stream = (uint32_t)(i % 3u);
    uint64_t buffer = 0x1000u + (i % 150u);
    uint64_t start = (i / 150u) * 16u;
    k1 = op(&f, stream, "k");
    for (n = 1;; n++) {
      cubert__race_counters(f.c, &before);
      counting_allocator_fail_at(&f.alloc, n, 1);
      st = cubert__race_access(f.c, buffer, stream, k1, CUBERT_RACE_WRITE, start, start + 16u);
      counting_allocator_fail_at(&f.alloc, 0, 0);
      cubert__race_counters(f.c, &after);
      if (st == CUBERT_STATUS_OK) break;
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(memcmp(&before, &after, sizeof(before)) == 0);
      failures++;
      CHECK(n < 4);
    }
  }
  CHECK(failures >= 10); /* the table and the records grew several times */
  cubert__race_counters(f.c, &after);
  CHECK_EQ_U64(after.buffers, 150);
  CHECK_EQ_U64(after.records, 300);
  CHECK_EQ_U64(after.accesses, 300);
  /* buffers 0x1000 + j were written by stream j % 3 with no sync: the second
   * round (ranges [16, 32)) does not overlap the first, so nothing races */
  CHECK_EQ_U64(f.nreports, 0);
  /* the table still finds every buffer after growth: reclaim them all */
  for (i = 0; i < 150; i++) CHECK_OK(cubert__race_reclaim(f.c, 0x1000u + i, (uint32_t)(i % 3u)));
  cubert__race_counters(f.c, &after);
  CHECK_EQ_U64(after.buffers, 0);
  CHECK_EQ_U64(after.records, 0);
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

TEST(race_event_pool_allocation_failure_loop) {
  fixture_t f;
  cubert_race_event_t ev[40];
  cubert_race_counters_t before, after;
  uint64_t i, n, failures = 0;
  cubert_status_t st;
  fx_init(&f);
  for (i = 0; i < 40; i++) {
    (void)op(&f, A, "k");
    for (n = 1;; n++) {
      cubert_race_event_t e = {123, 456};
      cubert__race_counters(f.c, &before);
      counting_allocator_fail_at(&f.alloc, n, 1);
      st = cubert__race_event_record(f.c, A, &e);
      counting_allocator_fail_at(&f.alloc, 0, 0);
      cubert__race_counters(f.c, &after);
      if (st == CUBERT_STATUS_OK) {
        ev[i] = e;
        break;
      }
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK_EQ_U64(e.index, 123);
      CHECK(memcmp(&before, &after, sizeof(before)) == 0);
      failures++;
      CHECK(n < 4);
    }
  }
  CHECK(failures >= 4); /* 0 -> 8 -> 16 -> 32 -> 64, two blocks each */
  /* every token still carries its own clock */
  for (i = 0; i < 40; i++) {
    wait_ev(&f, B, ev[i]);
    CHECK_EQ_U64(cubert__race_clock(f.c, B, A), i + 1);
  }
  for (i = 0; i < 40; i++) CHECK_OK(cubert__race_event_release(f.c, ev[i]));
  /* steady state: releasing and recording again allocates nothing */
  counting_allocator_fail_at(&f.alloc, 1, 1);
  for (i = 0; i < 40; i++) ev[i] = rec(&f, C);
  for (i = 0; i < 40; i++) CHECK_OK(cubert__race_event_release(f.c, ev[i]));
  counting_allocator_fail_at(&f.alloc, 0, 0);
  fx_done(&f);
}

/* Steady state: no new buffers, no new events: nothing allocates. */
TEST(race_steady_state_does_not_allocate) {
  fixture_t f;
  uint64_t round, k1;
  cubert_race_event_t e;
  fx_init(&f);
  for (round = 0; round < 3; round++) {
    if (round == 1) counting_allocator_fail_at(&f.alloc, 1, 1); /* every allocation fails */
    k1 = op(&f, A, "produce");
    wr(&f, X, A, k1);
    e = rec(&f, A);
    wait_ev(&f, B, e);
    CHECK_OK(cubert__race_event_release(f.c, e));
    k1 = op(&f, B, "consume");
    rd(&f, X, B, k1);
    wr(&f, Y, B, k1);
    sync_stream(&f, B);
    k1 = op(&f, H, "read");
    rd(&f, Y, H, k1);
  }
  counting_allocator_fail_at(&f.alloc, 0, 0);
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

/* ---- reports: counters, sink, seed, last report, formatter -------------------------- */

TEST(race_counters_count) {
  fixture_t f;
  cubert_race_counters_t k;
  fx_init(&f);
  race_seeded("war_fan_in")->run(&f, true);
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.ops, 4);
  CHECK_EQ_U64(k.events, 2);
  CHECK_EQ_U64(k.events_live, 2);
  CHECK_EQ_U64(k.joins, 1);
  CHECK_EQ_U64(k.accesses, 4);
  CHECK_EQ_U64(k.reports, 1);
  CHECK_EQ_U64(k.write_after_read, 1);
  CHECK_EQ_U64(k.read_after_write + k.write_after_write + k.reclaim_conflicts, 0);
  CHECK_EQ_U64(k.buffers, 1);
  CHECK_EQ_U64(k.records, 1); /* C's write; B's read is superseded once repaired */
  CHECK_EQ_U64(k.reclaims, 0);
  CHECK_OK(cubert__race_host_sync_all(f.c));
  CHECK_OK(cubert__race_reclaim(f.c, X, H));
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.joins, 2);
  CHECK_EQ_U64(k.reclaims, 1);
  CHECK_EQ_U64(k.reports, 1);
  CHECK_EQ_U64(k.buffers, 0);
  CHECK_EQ_U64(k.records, 0);
  fx_done(&f);
}

TEST(race_counters_by_kind) {
  fixture_t f;
  cubert_race_counters_t k;
  size_t i;
  fx_init(&f);
  for (i = 0; i < NSEEDED; i++) {
    cubert__race_checker_reset(f.c);
    f.nreports = 0;
    k_seeded[i].run(&f, true);
    cubert__race_counters(f.c, &k);
    CHECK_EQ_U64(k.reports, 1);
    CHECK_EQ_U64(k.read_after_write, k_seeded[i].kind == RAW);
    CHECK_EQ_U64(k.write_after_read, k_seeded[i].kind == WAR);
    CHECK_EQ_U64(k.write_after_write, k_seeded[i].kind == WAW);
    CHECK_EQ_U64(k.reclaim_conflicts, k_seeded[i].kind == RECL);
  }
  fx_done(&f);
}

TEST(race_sink_seed_and_last_report) {
  fixture_t f;
  cubert_race_report_t last;
  cubert_race_sink_t none = {NULL, NULL}, bad;
  static const cubert_race_sink_vtable_t no_report = {NULL};
  cubert_race_sink_t sink;
  fx_init(&f);
  cubert__race_set_seed(f.c, 42);
  race_seeded("raw_cross_stream")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(f.reports[0].has_seed, 1);
  CHECK_EQ_U64(f.reports[0].seed, 42);
  CHECK(cubert__race_last_report(f.c, &last));
  CHECK(memcmp(&last, &f.reports[0], sizeof(last)) == 0);
  /* a device sync orders everything so far: each program below starts clean */
  CHECK_OK(cubert__race_host_sync_all(f.c));
  /* no sink: still counted and kept */
  CHECK_OK(cubert__race_set_sink(f.c, &none));
  cubert__race_clear_seed(f.c);
  race_seeded("waw_cross_stream")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(reports_of(&f), 2);
  CHECK(cubert__race_last_report(f.c, &last));
  CHECK_EQ_U64(last.has_seed, 0);
  CHECK_EQ_U64(last.sequence, 2);
  bad.vtable = &no_report;
  bad.self = NULL;
  CHECK_STATUS(cubert__race_set_sink(f.c, &bad), CUBERT_STATUS_INVALID_ARGUMENT);
  sink.vtable = &k_capture_vtable;
  sink.self = &f;
  CHECK_OK(cubert__race_set_sink(f.c, &sink));
  CHECK_OK(cubert__race_set_sink(f.c, NULL)); /* none */
  CHECK_OK(cubert__race_host_sync_all(f.c));
  race_seeded("war_cross_stream")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(reports_of(&f), 3);
  CHECK_OK(cubert__race_set_sink(f.c, &sink));
  CHECK_OK(cubert__race_host_sync_all(f.c));
  race_seeded("war_cross_stream")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 2);
  /* reset: clocks, shadow, counters, last report; the seed and sink stay */
  cubert__race_set_seed(f.c, 7);
  cubert__race_checker_reset(f.c);
  CHECK(!cubert__race_last_report(f.c, &last));
  CHECK_EQ_U64(reports_of(&f), 0);
  race_seeded("host_read_without_sync")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 3);
  CHECK_EQ_U64(f.reports[2].seed, 7);
  CHECK_EQ_U64(f.reports[2].sequence, 1);
  CHECK_EQ_U64(f.reports[2].current.index, 1); /* the host's clock restarted */
  fx_done(&f);
}

TEST(race_reset_invalidates_events_and_shadow) {
  fixture_t f;
  cubert_race_event_t e1, e2, e3;
  cubert_race_counters_t k;
  uint64_t k1;
  fx_init(&f);
  k1 = op(&f, A, "k");
  wr(&f, X, A, k1);
  e1 = rec(&f, A);
  e2 = rec(&f, A);
  CHECK_OK(cubert__race_event_release(f.c, e1));
  cubert__race_checker_reset(f.c);
  CHECK_STATUS(cubert__race_event_release(f.c, e2), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__race_stream_wait_event(f.c, B, e1), CUBERT_STATUS_INVALID_HANDLE);
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.buffers, 0);
  CHECK_EQ_U64(k.records, 0);
  CHECK_EQ_U64(k.events_live, 0);
  CHECK_EQ_U64(cubert__race_clock(f.c, A, A), 0);
  /* X is untracked after the reset; slots are reused */
  k1 = op(&f, B, "k");
  CHECK_EQ_U64(k1, 1);
  wr(&f, X, B, k1);
  e3 = rec(&f, B);
  CHECK(e3.index == e1.index || e3.index == e2.index);
  CHECK_OK(cubert__race_event_release(f.c, e3));
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

TEST(race_format_report) {
  cubert_race_report_t r;
  char buf[256], small[16];
  size_t n;
  memset(&r, 0, sizeof(r));
  r.buffer = X;
  r.kind = RAW;
  r.current.stream = 1;
  r.current.index = 2;
  r.current.access = R;
  r.current.end = WHOLE;
  r.current.name = "consume";
  r.previous.stream = 0;
  r.previous.index = 1;
  r.previous.access = W;
  r.previous.end = WHOLE;
  r.previous.name = "produce";
  r.has_seed = 1;
  r.seed = 42;
  n = cubert_race_report_format(&r, buf, sizeof(buf));
  CHECK_EQ_STR(buf, "race: read-after-write on buffer 0x0000000100000001: stream 1 op 2 "
                    "'consume' read is not ordered after stream 0 op 1 'produce' write "
                    "(seed 42)");
  CHECK_EQ_U64(n, strlen(buf));
  CHECK_EQ_U64(cubert_race_report_format(&r, NULL, 0), n); /* measure */
  CHECK_EQ_U64(cubert_race_report_format(&r, small, sizeof(small)), n);
  CHECK_EQ_STR(small, "race: read-afte");
  /* ranges, host, no name, no seed */
  r.kind = WAW;
  r.has_seed = 0;
  r.current.stream = H;
  r.current.access = W;
  r.current.name = NULL;
  r.current.start = 64;
  r.current.end = 192;
  r.previous.start = 0;
  r.previous.end = 128;
  (void)cubert_race_report_format(&r, buf, sizeof(buf));
  CHECK_EQ_STR(buf, "race: write-after-write on buffer 0x0000000100000001: host op 2 write "
                    "bytes [64, 192) is not ordered after stream 0 op 1 'produce' write "
                    "bytes [0, 128)");
  /* reclamation */
  r.kind = RECL;
  r.current.stream = 3;
  r.current.access = RC;
  r.current.index = 5;
  r.previous.access = R;
  r.previous.end = WHOLE;
  (void)cubert_race_report_format(&r, buf, sizeof(buf));
  CHECK_EQ_STR(buf, "race: reclaim-while-in-use on buffer 0x0000000100000001: reclaim by "
                    "stream 3 at op 5 is not ordered after stream 0 op 1 'produce' read");
  r.current.stream = H;
  r.kind = 99;
  r.previous.access = 77;
  (void)cubert_race_report_format(&r, buf, sizeof(buf));
  CHECK_EQ_STR(buf, "race: ? on buffer 0x0000000100000001: reclaim by host at op 5 is not "
                    "ordered after stream 0 op 1 'produce' ?");
  CHECK_EQ_U64(cubert_race_report_format(NULL, buf, sizeof(buf)), 0);
  CHECK_EQ_STR(buf, "");
  CHECK_EQ_STR(cubert_race_access_name(CUBERT_RACE_RECLAIM), "reclaim");
  CHECK_EQ_STR(cubert_race_kind_name(CUBERT_RACE_KIND_WRITE_AFTER_READ), "write-after-read");
  CHECK_EQ_STR(cubert_race_kind_name(0), "?");
}

/* A real report through the formatter. */
TEST(race_format_seeded_report) {
  fixture_t f;
  char buf[256];
  fx_init(&f);
  cubert__race_set_seed(f.c, 0xDEADBEEFull);
  race_seeded("reclaim_before_consumer_event")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  (void)cubert_race_report_format(&f.reports[0], buf, sizeof(buf));
  CHECK_EQ_STR(buf, "race: reclaim-while-in-use on buffer 0x0000000100000001: reclaim by "
                    "stream 3 at op 0 is not ordered after stream 1 op 1 'consume' read "
                    "(seed 3735928559)");
  fx_done(&f);
}

/* ---- the disabled checker: one branch, nothing touched ------------------------------ */

TEST(race_hooks_with_null_checker_do_nothing) {
  uint64_t idx = 55;
  cubert_race_event_t e = {9, 9};
  CHECK_OK(cubert__race_hook_op_begin(NULL, A, "k", &idx));
  CHECK_EQ_U64(idx, 55);
  CHECK_OK(cubert__race_hook_access(NULL, X, A, idx, CUBERT_RACE_WRITE, 0, WHOLE));
  CHECK_OK(cubert__race_hook_event_record(NULL, A, &e));
  CHECK_EQ_U64(e.index, 9);
  CHECK_OK(cubert__race_hook_event_release(NULL, e));
  CHECK_OK(cubert__race_hook_stream_wait_event(NULL, B, e));
  CHECK_OK(cubert__race_hook_stream_wait_stream(NULL, B, A));
  CHECK_OK(cubert__race_hook_host_wait_event(NULL, e));
  CHECK_OK(cubert__race_hook_host_sync_stream(NULL, A));
  CHECK_OK(cubert__race_hook_host_sync_all(NULL));
  CHECK_OK(cubert__race_hook_reclaim(NULL, X, H));
  CHECK_OK(cubert__race_hook_reclaim_at_event(NULL, X, A, e));
  CHECK_OK(cubert__race_hook_forget(NULL, X));
}

/* The hooks forward to the checker when it is on: program 1 through hooks. */
TEST(race_hooks_forward_when_enabled) {
  fixture_t f;
  uint64_t a1 = 0, b1 = 0;
  cubert_race_event_t e = {0, 0};
  cubert_memory_id_t id = {3, 1};
  uint64_t buf = cubert__race_buffer_id(id);
  fx_init(&f);
  CHECK_EQ_U64(buf, 0x0000000300000001ull);
  CHECK_OK(cubert__race_hook_op_begin(f.c, A, "produce", &a1));
  CHECK_OK(cubert__race_hook_access(f.c, buf, A, a1, CUBERT_RACE_WRITE, 0, WHOLE));
  CHECK_OK(cubert__race_hook_event_record(f.c, A, &e));
  CHECK_OK(cubert__race_hook_op_begin(f.c, B, "consume", &b1));
  CHECK_OK(cubert__race_hook_access(f.c, buf, B, b1, CUBERT_RACE_READ, 0, WHOLE));
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(f.reports[0].buffer, buf);
  CHECK_OK(cubert__race_hook_stream_wait_event(f.c, C, e));
  CHECK_OK(cubert__race_hook_stream_wait_stream(f.c, C, B));
  CHECK_OK(cubert__race_hook_host_wait_event(f.c, e));
  CHECK_OK(cubert__race_hook_host_sync_stream(f.c, B));
  CHECK_OK(cubert__race_hook_host_sync_all(f.c));
  CHECK_OK(cubert__race_hook_reclaim(f.c, buf, H)); /* after the device sync: fine */
  CHECK_OK(cubert__race_hook_reclaim_at_event(f.c, buf, H, e));
  CHECK_OK(cubert__race_hook_forget(f.c, buf));
  CHECK_STATUS(cubert__race_hook_access(f.c, 0, B, b1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__race_hook_event_release(f.c, e));
  CHECK_STATUS(cubert__race_hook_event_release(f.c, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(f.nreports, 1);
  fx_done(&f);
}
