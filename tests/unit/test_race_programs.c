/* SPDX-License-Identifier: MIT */
/* The seeded-bug programs of the race checker tests (test_race_fixture.h):
 * small programs at the checker API level, each missing exactly one
 * synchronization when run with bug = true. */
#define TEST_REQUIRES CUBERT_FEATURE_RACE_CHECKER
#include "cubert/config.h"
#if CUBERT_CONFIG_RACE_CHECKER /* the checker's own functions: not built without it */
#include "test_race_fixture.h"
#include "check/race.h"

/* ---- the seeded-bug programs ------------------------------------------------------
 * Each runs with bug = true (one synchronization missing or misplaced) or
 * false (correctly synchronized). Streams A, B, C, the GC stream G, host H. */

/* 1. RAW across streams: B reads what A wrote, without waiting for A. */
static void prog_raw_cross_stream(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1;
  cubert_race_event_t e;
  wr(f, X, A, a1);
  e = rec(f, A);
  if (!bug) wait_ev(f, B, e);
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

/* 2. WAR across streams: B overwrites what A still reads. */
static void prog_war_cross_stream(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "reader"), b1;
  cubert_race_event_t e;
  rd(f, X, A, a1);
  e = rec(f, A);
  if (!bug) wait_ev(f, B, e);
  b1 = op(f, B, "writer");
  wr(f, X, B, b1);
}

/* 3. WAW across streams. */
static void prog_waw_cross_stream(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "fill_a"), b1;
  cubert_race_event_t e;
  wr(f, X, A, a1);
  e = rec(f, A);
  if (!bug) wait_ev(f, B, e);
  b1 = op(f, B, "fill_b");
  wr(f, X, B, b1);
}

/* 4. The host reads a kernel's output without syncing its stream. */
static void prog_host_read_without_sync(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "kernel"), h1;
  wr(f, X, A, a1);
  if (!bug) sync_stream(f, A);
  h1 = op(f, H, "read_buffer");
  rd(f, X, H, h1);
}

/* 5. The host uploads into memory a stream is still reading. */
static void prog_host_upload_while_stream_reads(fixture_t *f, bool bug) {
  uint64_t h1 = op(f, H, "write_buffer"), a1, h2;
  wr(f, X, H, h1);
  a1 = op(f, A, "kernel"); /* enqueued after the upload: ordered after it */
  rd(f, X, A, a1);
  if (!bug) sync_stream(f, A);
  h2 = op(f, H, "write_buffer");
  wr(f, X, H, h2);
}

/* 6. The GC reclaims after the producer's event instead of the consumer's. */
static void prog_reclaim_before_consumer_event(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1;
  cubert_race_event_t ea, eb, eg;
  wr(f, X, A, a1);
  ea = rec(f, A);
  wait_ev(f, B, ea);
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
  eb = rec(f, B);
  wait_ev(f, G, bug ? ea : eb);
  eg = rec(f, G);
  CHECK_OK(cubert__race_reclaim_at_event(f->c, X, CUBERT_RACE_NO_STREAM, eg));
}

/* 7. The host frees (reclaims) memory a stream may still read. */
static void prog_reclaim_host_without_sync(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "kernel");
  rd(f, X, A, a1);
  if (!bug) sync_stream(f, A);
  CHECK_OK(cubert__race_reclaim(f->c, X, H));
}

/* 8. B waits on an earlier event of A (before A wrote X). */
static void prog_wait_on_earlier_event(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "k1"), a2, b1;
  cubert_race_event_t e1, e2;
  wr(f, Y, A, a1);
  e1 = rec(f, A);
  a2 = op(f, A, "k2");
  wr(f, X, A, a2);
  e2 = rec(f, A);
  wait_ev(f, B, bug ? e1 : e2);
  b1 = op(f, B, "consume");
  rd(f, Y, B, b1); /* covered by either event */
  rd(f, X, B, b1);
}

/* 9. The wait goes the wrong way: A waits on B instead of B on A. */
static void prog_wait_wrong_direction(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1;
  cubert_race_event_t ea, eb;
  wr(f, X, A, a1);
  ea = rec(f, A);
  eb = rec(f, B);
  if (bug) {
    wait_ev(f, A, eb);
  } else {
    wait_ev(f, B, ea);
  }
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

/* 10. The host syncs the wrong stream before reading. */
static void prog_sync_wrong_stream(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "write_x"), b1, h1;
  wr(f, X, A, a1);
  b1 = op(f, B, "write_y");
  wr(f, Y, B, b1);
  sync_stream(f, bug ? B : A);
  h1 = op(f, H, "read_buffer");
  rd(f, X, H, h1);
}

/* 11. The event is recorded before the write instead of after it. */
static void prog_event_before_write(fixture_t *f, bool bug) {
  uint64_t a1, b1;
  cubert_race_event_t e = {0, 0};
  if (bug) e = rec(f, A);
  a1 = op(f, A, "produce");
  wr(f, X, A, a1);
  if (!bug) e = rec(f, A);
  wait_ev(f, B, e);
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

/* 12. Three-stream chain A -> B -> C, first link missing. */
static void prog_chain_missing_first_link(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1, c1;
  cubert_race_event_t ea, eb;
  wr(f, X, A, a1);
  ea = rec(f, A);
  if (!bug) wait_ev(f, B, ea);
  b1 = op(f, B, "middle");
  wr(f, Y, B, b1);
  eb = rec(f, B);
  wait_ev(f, C, eb);
  c1 = op(f, C, "consume");
  rd(f, Y, C, c1);
  rd(f, X, C, c1);
}

/* 13. Three-stream chain A -> B -> C, second link missing. C reads B's
 * output first, then A's: the repair (C assumed to have waited for B) also
 * covers A, so one report. */
static void prog_chain_missing_second_link(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1, c1;
  cubert_race_event_t ea, eb;
  wr(f, X, A, a1);
  ea = rec(f, A);
  wait_ev(f, B, ea);
  b1 = op(f, B, "middle");
  rd(f, X, B, b1);
  wr(f, Y, B, b1);
  eb = rec(f, B);
  if (!bug) wait_ev(f, C, eb);
  c1 = op(f, C, "consume");
  rd(f, Y, C, c1);
  rd(f, X, C, c1);
}

/* 14. Fan-in: C overwrites X after waiting for one of its two readers. */
static void prog_war_fan_in(fixture_t *f, bool bug) {
  uint64_t h1 = op(f, H, "write_buffer"), a1, b1, c1;
  cubert_race_event_t ea, eb;
  wr(f, X, H, h1);
  a1 = op(f, A, "reader_a");
  rd(f, X, A, a1);
  b1 = op(f, B, "reader_b");
  rd(f, X, B, b1);
  ea = rec(f, A);
  eb = rec(f, B);
  wait_ev(f, C, ea);
  if (!bug) wait_ev(f, C, eb);
  c1 = op(f, C, "overwrite");
  wr(f, X, C, c1);
}

/* 15. The host overwrites a kernel's output without syncing (WAW). */
static void prog_host_write_after_kernel_write(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "kernel"), h1;
  wr(f, X, A, a1);
  if (!bug) sync_stream(f, A);
  h1 = op(f, H, "write_buffer");
  wr(f, X, H, h1);
}

/* 16. Overlapping views of one buffer written on two streams. */
static void prog_overlapping_views(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "write_lo"), b1;
  cubert_race_event_t e;
  wr_range(f, X, A, a1, 0, 128);
  e = rec(f, A);
  if (!bug) wait_ev(f, B, e);
  b1 = op(f, B, "write_mid");
  wr_range(f, X, B, b1, 64, 192);
}

/* 17. B waits on its own event instead of A's. */
static void prog_wait_on_own_event(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1;
  cubert_race_event_t e;
  wr(f, X, A, a1);
  e = rec(f, bug ? B : A);
  wait_ev(f, B, e);
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

/* 18. The host syncs A before the write it then reads. */
static void prog_sync_too_early(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "k1"), a2, h1;
  wr(f, Y, A, a1);
  if (bug) sync_stream(f, A);
  a2 = op(f, A, "k2");
  wr(f, X, A, a2);
  if (!bug) sync_stream(f, A);
  h1 = op(f, H, "read_buffer");
  rd(f, Y, H, h1);
  rd(f, X, H, h1);
}

/* 19. Stream-ordered reuse on another stream without waiting for the user. */
static void prog_reclaim_on_other_stream(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "kernel");
  cubert_race_event_t e;
  rd(f, X, A, a1);
  e = rec(f, A);
  if (!bug) wait_ev(f, B, e);
  CHECK_OK(cubert__race_reclaim(f->c, X, B));
}

/* 20. The host's observation orders later enqueues: B's read is safe only
 * because the host waited for A's event before enqueueing it. */
static void prog_host_wait_orders_enqueue(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1;
  cubert_race_event_t e;
  wr(f, X, A, a1);
  e = rec(f, A);
  if (!bug) host_wait(f, e);
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

/* 21. The GC stream records its event before waiting on the consumer. */
static void prog_gc_event_before_wait(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "consume");
  cubert_race_event_t ea, eg = {0, 0};
  rd(f, X, A, a1);
  ea = rec(f, A);
  if (bug) eg = rec(f, G);
  wait_ev(f, G, ea);
  if (!bug) eg = rec(f, G);
  CHECK_OK(cubert__race_reclaim_at_event(f->c, X, CUBERT_RACE_NO_STREAM, eg));
}

/* 22. Device sync replaced by a sync of one stream. */
static void prog_sync_one_instead_of_all(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "write_x"), b1, h1;
  wr(f, X, A, a1);
  b1 = op(f, B, "write_y");
  wr(f, Y, B, b1);
  if (bug) {
    sync_stream(f, A);
  } else {
    CHECK_OK(cubert__race_host_sync_all(f->c));
  }
  h1 = op(f, H, "read_buffer");
  rd(f, X, H, h1);
  rd(f, Y, H, h1);
}

/* 23. One missing wait, two buffers read: one report (the repair). */
static void prog_two_buffers_one_wait(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), b1;
  wr(f, X, A, a1);
  wr(f, Y, A, a1);
  if (!bug) CHECK_OK(cubert__race_stream_wait_stream(f->c, B, A));
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
  rd(f, Y, B, b1);
}

/* 24. The multi-stream's flush + wait on the wrong origin stream. */
static void prog_wait_stream_wrong_origin(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "produce"), c1, b1;
  wr(f, X, A, a1);
  c1 = op(f, C, "other");
  wr(f, Z, C, c1);
  CHECK_OK(cubert__race_stream_wait_stream(f->c, B, bug ? C : A));
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

const seeded_t k_seeded[] = {
    {"raw_cross_stream", prog_raw_cross_stream, X, RAW, B, 1, R, "consume", 0, WHOLE, A, 1, W,
     "produce", 0, WHOLE},
    {"war_cross_stream", prog_war_cross_stream, X, WAR, B, 1, W, "writer", 0, WHOLE, A, 1, R,
     "reader", 0, WHOLE},
    {"waw_cross_stream", prog_waw_cross_stream, X, WAW, B, 1, W, "fill_b", 0, WHOLE, A, 1, W,
     "fill_a", 0, WHOLE},
    {"host_read_without_sync", prog_host_read_without_sync, X, RAW, H, 1, R, "read_buffer", 0,
     WHOLE, A, 1, W, "kernel", 0, WHOLE},
    {"host_upload_while_stream_reads", prog_host_upload_while_stream_reads, X, WAR, H, 2, W,
     "write_buffer", 0, WHOLE, A, 1, R, "kernel", 0, WHOLE},
    {"reclaim_before_consumer_event", prog_reclaim_before_consumer_event, X, RECL, G, 0, RC, NULL,
     0, WHOLE, B, 1, R, "consume", 0, WHOLE},
    {"reclaim_host_without_sync", prog_reclaim_host_without_sync, X, RECL, H, 0, RC, NULL, 0, WHOLE,
     A, 1, R, "kernel", 0, WHOLE},
    {"wait_on_earlier_event", prog_wait_on_earlier_event, X, RAW, B, 1, R, "consume", 0, WHOLE, A,
     2, W, "k2", 0, WHOLE},
    {"wait_wrong_direction", prog_wait_wrong_direction, X, RAW, B, 1, R, "consume", 0, WHOLE, A, 1,
     W, "produce", 0, WHOLE},
    {"sync_wrong_stream", prog_sync_wrong_stream, X, RAW, H, 1, R, "read_buffer", 0, WHOLE, A, 1, W,
     "write_x", 0, WHOLE},
    {"event_before_write", prog_event_before_write, X, RAW, B, 1, R, "consume", 0, WHOLE, A, 1, W,
     "produce", 0, WHOLE},
    {"chain_missing_first_link", prog_chain_missing_first_link, X, RAW, C, 1, R, "consume", 0,
     WHOLE, A, 1, W, "produce", 0, WHOLE},
    {"chain_missing_second_link", prog_chain_missing_second_link, Y, RAW, C, 1, R, "consume", 0,
     WHOLE, B, 1, W, "middle", 0, WHOLE},
    {"war_fan_in", prog_war_fan_in, X, WAR, C, 1, W, "overwrite", 0, WHOLE, B, 1, R, "reader_b", 0,
     WHOLE},
    {"host_write_after_kernel_write", prog_host_write_after_kernel_write, X, WAW, H, 1, W,
     "write_buffer", 0, WHOLE, A, 1, W, "kernel", 0, WHOLE},
    {"overlapping_views", prog_overlapping_views, X, WAW, B, 1, W, "write_mid", 64, 192, A, 1, W,
     "write_lo", 0, 128},
    {"wait_on_own_event", prog_wait_on_own_event, X, RAW, B, 1, R, "consume", 0, WHOLE, A, 1, W,
     "produce", 0, WHOLE},
    {"sync_too_early", prog_sync_too_early, X, RAW, H, 1, R, "read_buffer", 0, WHOLE, A, 2, W, "k2",
     0, WHOLE},
    {"reclaim_on_other_stream", prog_reclaim_on_other_stream, X, RECL, B, 0, RC, NULL, 0, WHOLE, A,
     1, R, "kernel", 0, WHOLE},
    {"host_wait_orders_enqueue", prog_host_wait_orders_enqueue, X, RAW, B, 1, R, "consume", 0,
     WHOLE, A, 1, W, "produce", 0, WHOLE},
    {"gc_event_before_wait", prog_gc_event_before_wait, X, RECL, G, 0, RC, NULL, 0, WHOLE, A, 1, R,
     "consume", 0, WHOLE},
    {"sync_one_instead_of_all", prog_sync_one_instead_of_all, Y, RAW, H, 1, R, "read_buffer", 0,
     WHOLE, B, 1, W, "write_y", 0, WHOLE},
    {"two_buffers_one_wait", prog_two_buffers_one_wait, X, RAW, B, 1, R, "consume", 0, WHOLE, A, 1,
     W, "produce", 0, WHOLE},
    {"wait_stream_wrong_origin", prog_wait_stream_wrong_origin, X, RAW, B, 1, R, "consume", 0,
     WHOLE, A, 1, W, "produce", 0, WHOLE},
};

const size_t k_seeded_count = sizeof(k_seeded) / sizeof(k_seeded[0]);

const seeded_t *race_seeded(const char *name) {
  size_t i;
  for (i = 0; i < k_seeded_count; i++)
    if (strcmp(k_seeded[i].name, name) == 0) return &k_seeded[i];
  test_fail(__FILE__, __LINE__, "no seeded race program '%s'", name);
}

#else
typedef int race_programs_compiled_out_; /* ISO C: a translation unit is not empty */
#endif /* CUBERT_CONFIG_RACE_CHECKER */
