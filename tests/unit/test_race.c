/* SPDX-License-Identifier: MIT */
/* The predictive cross-stream race checker (core/check/race*.c, cubert/race.h,
 * docs/race-checker.md): CUDA's stream-ordering rules, the happens-before
 * checker (sync edges, a shadow per buffer, lifetime checks), and no buffer
 * reclaimed while a stream may still access it.
 *
 * The seeded-bug suite: >= 20 small programs at the checker API level, each
 * missing exactly one synchronization; each must give exactly one report
 * naming the right buffer and both ops, and the same program with the
 * synchronization present must give none. Then the predictive property and
 * the ordering rules. The API's other paths are in test_race_api.c, the
 * differential test against a naive model in test_race_differential.c. */
#define TEST_REQUIRES CUBERT_FEATURE_RACE_CHECKER
#include "cubert/config.h"
#if CUBERT_CONFIG_RACE_CHECKER /* the checker's own functions: not built without it */
#include "test_race_fixture.h"
#include "check/race.h"

/* ---- the seeded-bug suite (programs: test_race_programs.c) ------------------ */

static void check_op(const seeded_t *s, const cubert_race_op_t *got, uint32_t stream,
                     uint64_t index, uint32_t access, const char *name, uint64_t start,
                     uint64_t end) {
  CHECK_MSG(got->stream == stream, "%s: stream %u, want %u", s->name, (unsigned)got->stream,
            (unsigned)stream);
  CHECK_MSG(got->index == index, "%s: op %llu, want %llu", s->name, (unsigned long long)got->index,
            (unsigned long long)index);
  CHECK_MSG(got->access == access, "%s: access %u, want %u", s->name, (unsigned)got->access,
            (unsigned)access);
  CHECK_MSG(str_eq(got->name, name), "%s: name %s, want %s", s->name,
            got->name ? got->name : "(null)", name ? name : "(null)");
  CHECK_MSG(got->start == start && got->end == end, "%s: range [%llu, %llu)", s->name,
            (unsigned long long)got->start, (unsigned long long)got->end);
}

/* Run one seeded program; returns the number of reports. */
static size_t run_seeded(const seeded_t *s, bool bug, uint32_t flags) {
  fixture_t f;
  size_t n;
  cubert_race_counters_t k;
  fx_init_flags(&f, 8, flags);
  s->run(&f, bug);
  n = f.nreports;
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.reports, n);
  if (bug && n == 1) {
    const cubert_race_report_t *r = &f.reports[0];
    CHECK_MSG(r->buffer == s->buffer, "%s: buffer %llx", s->name, (unsigned long long)r->buffer);
    CHECK_MSG(r->kind == s->kind, "%s: kind %u, want %u", s->name, (unsigned)r->kind,
              (unsigned)s->kind);
    CHECK_EQ_U64(r->sequence, 1);
    CHECK_EQ_U64(r->has_seed, 0);
    check_op(s, &r->current, s->cur_stream, s->cur_index, s->cur_access, s->cur_name,
             s->cur_start, s->cur_end);
    check_op(s, &r->previous, s->prev_stream, s->prev_index, s->prev_access, s->prev_name,
             s->prev_start, s->prev_end);
  }
  fx_done(&f);
  return n;
}

TEST(race_seeded_bugs_each_reported_once) {
  size_t i, reported = 0;
  CHECK(NSEEDED >= 20);
  for (i = 0; i < NSEEDED; i++) {
    size_t n = run_seeded(&k_seeded[i], true, 0);
    CHECK_MSG(n == 1, "seeded bug %s: %zu reports, want 1", k_seeded[i].name, n);
    reported++;
  }
  printf("race seeded bugs: %lu/%lu reported, each exactly once\n", (unsigned long)reported,
         (unsigned long)NSEEDED); /* (newlib's printf has no %zu) */
}

TEST(race_seeded_fixed_programs_report_nothing) {
  size_t i;
  for (i = 0; i < NSEEDED; i++) {
    size_t n = run_seeded(&k_seeded[i], false, 0);
    CHECK_MSG(n == 0, "fixed program %s: %zu reports, want 0", k_seeded[i].name, n);
    n = run_seeded(&k_seeded[i], false, CUBERT_RACE_FLAG_REPORT_ALL);
    CHECK_MSG(n == 0, "fixed program %s (report all): %zu reports, want 0", k_seeded[i].name, n);
  }
  printf("race correctly synchronized programs: %lu, 0 reports\n", (unsigned long)NSEEDED);
}

/* With REPORT_ALL every seeded bug is still reported (at least once). */
TEST(race_seeded_bugs_reported_in_report_all_mode) {
  size_t i;
  for (i = 0; i < NSEEDED; i++) {
    size_t n = run_seeded(&k_seeded[i], true, CUBERT_RACE_FLAG_REPORT_ALL);
    CHECK_MSG(n >= 1, "seeded bug %s: no report in report-all mode", k_seeded[i].name);
  }
}

/* The repair: without it, the one missing wait of program 23 gives a report
 * per buffer; with it, one. */
TEST(race_repair_one_report_per_missing_sync) {
  fixture_t f;
  fx_init_flags(&f, 8, CUBERT_RACE_FLAG_REPORT_ALL);
  race_seeded("two_buffers_one_wait")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 2);
  CHECK_EQ_U64(f.reports[0].buffer, X);
  CHECK_EQ_U64(f.reports[1].buffer, Y);
  /* report-all leaves B's clock as the program made it */
  CHECK_EQ_U64(cubert__race_clock(f.c, B, A), 0);
  fx_done(&f);
  fx_init(&f);
  race_seeded("two_buffers_one_wait")->run(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(cubert__race_clock(f.c, B, A), 1); /* the assumed edge */
  fx_done(&f);
}

/* Two timelines in conflict that the repair does not link: two reports. */
TEST(race_conflicts_with_two_timelines_reported_separately) {
  fixture_t f;
  uint64_t a1, b1, c1;
  fx_init(&f);
  a1 = op(&f, A, "reader_a");
  rd(&f, X, A, a1);
  b1 = op(&f, B, "reader_b");
  rd(&f, X, B, b1);
  c1 = op(&f, C, "overwrite");
  wr(&f, X, C, c1);
  CHECK_EQ_U64(f.nreports, 2);
  CHECK_EQ_U64(f.reports[0].previous.stream, A); /* lowest timeline first */
  CHECK_EQ_U64(f.reports[1].previous.stream, B);
  CHECK_EQ_U64(f.reports[0].kind, WAR);
  CHECK_EQ_U64(f.reports[1].sequence, 2);
  fx_done(&f);
}

/* ---- the predictive property ------------------------------------------------------ */

/* The run is safe (A's kernel completed before B's was even enqueued, on
 * the fake device), but nothing in the program orders them: reported. The
 * checker is fed only what the program expresses, at enqueue time. */
TEST(race_predictive_reports_safe_run_without_sync) {
  fixture_t f;
  uint64_t a1, b1;
  int order;
  for (order = 0; order < 2; order++) {
    /* the device: ops enqueued on A and B, completed only when the test says */
    uint32_t queued_a = 0, queued_b = 0, done_a = 0, done_b = 0;
    fx_init(&f);
    a1 = op(&f, A, "produce");
    wr(&f, X, A, a1);
    queued_a++;
    if (order == 0) done_a = queued_a; /* safe execution: A completes before B's work exists */
    b1 = op(&f, B, "consume");
    rd(&f, X, B, b1);
    queued_b++;
    CHECK_EQ_U64((queued_a - done_a) + queued_b, order == 0 ? 1 : 2); /* what is still to run */
    done_a = queued_a;
    done_b = queued_b;
    CHECK_EQ_U64(done_a + done_b, 2);
    /* Same report whichever order the device ran them in. */
    CHECK_EQ_U64(f.nreports, 1);
    CHECK_EQ_U64(f.reports[0].kind, RAW);
    CHECK_EQ_U64(f.reports[0].previous.stream, A);
    fx_done(&f);
  }
}

/* ---- ordering rules (the sync edges of docs/race-checker.md) --------------------- */

TEST(race_same_stream_is_ordered) {
  fixture_t f;
  uint64_t i, k;
  fx_init(&f);
  for (i = 0; i < 10; i++) {
    k = op(&f, A, "k");
    CHECK_EQ_U64(k, i + 1);
    rd(&f, X, A, k);
    wr(&f, X, A, k);
    wr(&f, Y, A, k);
  }
  CHECK_OK(cubert__race_reclaim(f.c, X, A));
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

TEST(race_reads_do_not_conflict_with_reads) {
  fixture_t f;
  uint64_t h1, a1, b1, c1;
  cubert_race_counters_t k;
  fx_init(&f);
  h1 = op(&f, H, "upload");
  wr(&f, X, H, h1);
  a1 = op(&f, A, "r");
  rd(&f, X, A, a1);
  b1 = op(&f, B, "r");
  rd(&f, X, B, b1);
  c1 = op(&f, C, "r");
  rd(&f, X, C, c1);
  CHECK_EQ_U64(f.nreports, 0);
  cubert__race_counters(f.c, &k);
  CHECK_EQ_U64(k.records, 4); /* reads never supersede the upload's write */
  fx_done(&f);
}

TEST(race_disjoint_ranges_do_not_conflict) {
  fixture_t f;
  uint64_t a1, b1, c1;
  fx_init(&f);
  a1 = op(&f, A, "lo");
  wr_range(&f, X, A, a1, 0, 64);
  b1 = op(&f, B, "hi");
  wr_range(&f, X, B, b1, 64, 128);
  c1 = op(&f, C, "empty");
  wr_range(&f, X, C, c1, 10, 10); /* empty: counted, checks nothing */
  CHECK_EQ_U64(f.nreports, 0);
  rd_range(&f, X, C, c1, 63, 65); /* touches both */
  CHECK_EQ_U64(f.nreports, 2);
  CHECK_EQ_U64(f.reports[0].current.start, 63);
  CHECK_EQ_U64(f.reports[0].previous.end, 64);
  CHECK_EQ_U64(f.reports[1].previous.start, 64);
  fx_done(&f);
}

/* A partial overwrite does not supersede the rest of an older write. */
TEST(race_partial_overwrite_keeps_older_write) {
  fixture_t f;
  uint64_t a1, b1, c1;
  cubert_race_event_t e;
  fx_init(&f);
  a1 = op(&f, A, "whole");
  wr_range(&f, X, A, a1, 0, 100);
  e = rec(&f, A);
  wait_ev(&f, B, e);
  b1 = op(&f, B, "part");
  wr_range(&f, X, B, b1, 0, 50);
  e = rec(&f, B);
  wait_ev(&f, C, e); /* C is ordered after B, hence after A */
  c1 = op(&f, C, "read_tail");
  rd_range(&f, X, C, c1, 50, 100);
  rd_range(&f, X, C, c1, 0, 50);
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

TEST(race_superseded_records_are_dropped) {
  fixture_t f;
  uint64_t i, k;
  cubert_race_counters_t c;
  cubert_race_event_t e;
  fx_init(&f);
  for (i = 0; i < 100; i++) {
    k = op(&f, A, "k");
    wr(&f, X, A, k);
    rd(&f, X, A, k);
  }
  cubert__race_counters(f.c, &c);
  CHECK_EQ_U64(c.buffers, 1);
  CHECK_EQ_U64(c.records, 2); /* the last write and the last read */
  e = rec(&f, A);
  wait_ev(&f, B, e);
  k = op(&f, B, "k");
  wr(&f, X, B, k); /* ordered after both: supersedes both */
  cubert__race_counters(f.c, &c);
  CHECK_EQ_U64(c.records, 1);
  CHECK_EQ_U64(c.accesses, 201);
  CHECK_EQ_U64(f.nreports, 0);
  CHECK_OK(cubert__race_event_release(f.c, e));
  fx_done(&f);
}

TEST(race_stream_inherits_host_clock) {
  fixture_t f;
  uint64_t a1, h1;
  fx_init(&f);
  a1 = op(&f, A, "k");
  CHECK_EQ_U64(a1, 1);
  sync_stream(&f, A);
  CHECK_EQ_U64(cubert__race_clock(f.c, H, A), 1);
  CHECK_EQ_U64(cubert__race_clock(f.c, B, A), 0); /* not yet: at B's next op */
  h1 = op(&f, H, "host");
  CHECK_EQ_U64(h1, 1);
  (void)op(&f, B, "k");
  CHECK_EQ_U64(cubert__race_clock(f.c, B, A), 1);
  CHECK_EQ_U64(cubert__race_clock(f.c, B, H), 1);
  CHECK_EQ_U64(cubert__race_clock(f.c, B, B), 1);
  /* the host never learns of B without a sync */
  CHECK_EQ_U64(cubert__race_clock(f.c, H, B), 0);
  CHECK_EQ_U64(cubert__race_clock(f.c, 99, A), 0);
  CHECK_EQ_U64(cubert__race_clock(NULL, A, A), 0);
  fx_done(&f);
}

/* cudaStreamWaitEvent uses the state captured at record time, not later work
 * (CUDA's stream-ordering rules). */
TEST(race_event_captures_record_time_state) {
  fixture_t f;
  uint64_t a1, a2, b1;
  cubert_race_event_t e;
  fx_init(&f);
  a1 = op(&f, A, "k1");
  wr(&f, X, A, a1);
  e = rec(&f, A);
  a2 = op(&f, A, "k2");
  wr(&f, Y, A, a2);
  wait_ev(&f, B, e);
  b1 = op(&f, B, "consume");
  rd(&f, X, B, b1);
  CHECK_EQ_U64(f.nreports, 0);
  rd(&f, Y, B, b1);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(f.reports[0].previous.index, 2);
  fx_done(&f);
}

/* A stream's event carries what that stream had waited for (transitivity). */
TEST(race_transitive_through_events_and_host) {
  fixture_t f;
  uint64_t a1, b1, c1, h1;
  cubert_race_event_t e;
  fx_init(&f);
  a1 = op(&f, A, "produce");
  wr(&f, X, A, a1);
  CHECK_OK(cubert__race_stream_wait_stream(f.c, B, A));
  b1 = op(&f, B, "mid");
  rd(&f, X, B, b1);
  e = rec(&f, B);
  host_wait(&f, e); /* the host learns B, hence A */
  h1 = op(&f, H, "read_buffer");
  rd(&f, X, H, h1);
  c1 = op(&f, C, "overwrite"); /* enqueued after the host's wait */
  wr(&f, X, C, c1);
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

#else
#include "test.h"
/* One line in the run says the checker's unit tests were left out. */
TEST(race_checker_unit_tests) {}
#endif /* CUBERT_CONFIG_RACE_CHECKER */
