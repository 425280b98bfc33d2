/* The predictive cross-stream race checker (core/check/race.c, cubert/race.h).
 * Semantics: reliability.md 4.2 (CUDA stream-ordering rules), 4.4 (the
 * happens-before checker: sync-edge table, shadow per buffer, lifetime
 * checks), 2.4 P8 (no buffer reclaimed while a stream may access it).
 *
 * The seeded-bug suite: >= 20 small programs at the checker API level, each
 * missing exactly one synchronization; each must give exactly one report
 * naming the right buffer and both ops, and the same program with the
 * synchronization present must give none. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_event_backend.h"
#include "cubert/race.h"

#define A 0u
#define B 1u
#define C 2u
#define G 3u /* the GC stream of the programs */
#define H CUBERT_RACE_HOST

#define X 0x0000000100000001ull
#define Y 0x0000000200000001ull
#define Z 0x0000000300000001ull

#define WHOLE CUBERT_RACE_WHOLE_END
#define MAX_CAPTURED 64

/* ---- fixture: a checker over a counting allocator, a capturing sink ----------- */

typedef struct fixture_t {
  counting_allocator_t alloc;
  cubert_race_checker_t *c;
  cubert_race_report_t reports[MAX_CAPTURED];
  size_t nreports;
} fixture_t;

static void capture_report(void *self, const cubert_race_report_t *report) {
  fixture_t *f = (fixture_t *)self;
  if (f->nreports < MAX_CAPTURED) f->reports[f->nreports] = *report;
  f->nreports++;
}

static const cubert_race_sink_vtable_t k_capture_vtable = {capture_report};

static void fx_init_flags(fixture_t *f, uint32_t max_streams, uint32_t flags) {
  cubert_race_options_t o;
  memset(f, 0, sizeof(*f));
  cubert_race_options_initialize(&o);
  o.max_streams = max_streams;
  o.flags = flags;
  o.sink.vtable = &k_capture_vtable;
  o.sink.self = f;
  CHECK_OK(cubert_race_checker_create(counting_allocator_init(&f->alloc), &o, &f->c, NULL));
  CHECK(f->c != NULL);
}

static void fx_init(fixture_t *f) { fx_init_flags(f, 8, 0); }

static void fx_done(fixture_t *f) {
  cubert_race_checker_destroy(f->c);
  f->c = NULL;
  CHECK_EQ_I64(f->alloc.live_blocks, 0);
  CHECK_EQ_U64(f->alloc.bad_frees, 0);
  counting_allocator_destroy(&f->alloc);
}

static uint64_t op(fixture_t *f, uint32_t stream, const char *name) {
  uint64_t index = 0;
  CHECK_OK(cubert_race_op_begin(f->c, stream, name, &index));
  CHECK(index >= 1);
  return index;
}

static void rd_range(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index,
                     uint64_t start, uint64_t end) {
  CHECK_OK(cubert_race_access(f->c, buffer, stream, index, CUBERT_RACE_READ, start, end));
}

static void wr_range(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index,
                     uint64_t start, uint64_t end) {
  CHECK_OK(cubert_race_access(f->c, buffer, stream, index, CUBERT_RACE_WRITE, start, end));
}

static void rd(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index) {
  rd_range(f, buffer, stream, index, 0, WHOLE);
}

static void wr(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index) {
  wr_range(f, buffer, stream, index, 0, WHOLE);
}

static cubert_race_event_t rec(fixture_t *f, uint32_t stream) {
  cubert_race_event_t e = {0, 0};
  CHECK_OK(cubert_race_event_record(f->c, stream, &e));
  CHECK(e.index != 0);
  return e;
}

static void wait_ev(fixture_t *f, uint32_t stream, cubert_race_event_t e) {
  CHECK_OK(cubert_race_stream_wait_event(f->c, stream, e));
}

static void host_wait(fixture_t *f, cubert_race_event_t e) {
  CHECK_OK(cubert_race_host_wait_event(f->c, e));
}

static void sync_stream(fixture_t *f, uint32_t stream) {
  CHECK_OK(cubert_race_host_sync_stream(f->c, stream));
}

static uint64_t reports_of(const fixture_t *f) {
  cubert_race_counters_t k;
  cubert_race_counters(f->c, &k);
  return k.reports;
}

static bool str_eq(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

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
  CHECK_OK(cubert_race_reclaim_at_event(f->c, X, CUBERT_RACE_NO_STREAM, eg));
}

/* 7. The host frees (reclaims) memory a stream may still read. */
static void prog_reclaim_host_without_sync(fixture_t *f, bool bug) {
  uint64_t a1 = op(f, A, "kernel");
  rd(f, X, A, a1);
  if (!bug) sync_stream(f, A);
  CHECK_OK(cubert_race_reclaim(f->c, X, H));
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
  CHECK_OK(cubert_race_reclaim(f->c, X, B));
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
  CHECK_OK(cubert_race_reclaim_at_event(f->c, X, CUBERT_RACE_NO_STREAM, eg));
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
    CHECK_OK(cubert_race_host_sync_all(f->c));
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
  if (!bug) CHECK_OK(cubert_race_stream_wait_stream(f->c, B, A));
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
  CHECK_OK(cubert_race_stream_wait_stream(f->c, B, bug ? C : A));
  b1 = op(f, B, "consume");
  rd(f, X, B, b1);
}

typedef struct seeded_t {
  const char *name;
  void (*run)(fixture_t *f, bool bug);
  uint64_t buffer;
  uint32_t kind;
  uint32_t cur_stream;
  uint64_t cur_index;
  uint32_t cur_access;
  const char *cur_name;
  uint64_t cur_start, cur_end;
  uint32_t prev_stream;
  uint64_t prev_index;
  uint32_t prev_access;
  const char *prev_name;
  uint64_t prev_start, prev_end;
} seeded_t;

#define RAW CUBERT_RACE_KIND_READ_AFTER_WRITE
#define WAR CUBERT_RACE_KIND_WRITE_AFTER_READ
#define WAW CUBERT_RACE_KIND_WRITE_AFTER_WRITE
#define RECL CUBERT_RACE_KIND_RECLAIM
#define R CUBERT_RACE_READ
#define W CUBERT_RACE_WRITE
#define RC CUBERT_RACE_RECLAIM

static const seeded_t k_seeded[] = {
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

#define NSEEDED (sizeof(k_seeded) / sizeof(k_seeded[0]))

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
  cubert_race_counters(f.c, &k);
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
  printf("race seeded bugs: %zu/%zu reported, each exactly once\n", reported, NSEEDED);
}

TEST(race_seeded_fixed_programs_report_nothing) {
  size_t i;
  for (i = 0; i < NSEEDED; i++) {
    size_t n = run_seeded(&k_seeded[i], false, 0);
    CHECK_MSG(n == 0, "fixed program %s: %zu reports, want 0", k_seeded[i].name, n);
    n = run_seeded(&k_seeded[i], false, CUBERT_RACE_FLAG_REPORT_ALL);
    CHECK_MSG(n == 0, "fixed program %s (report all): %zu reports, want 0", k_seeded[i].name, n);
  }
  printf("race correctly synchronized programs: %zu, 0 reports\n", NSEEDED);
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
  prog_two_buffers_one_wait(&f, true);
  CHECK_EQ_U64(f.nreports, 2);
  CHECK_EQ_U64(f.reports[0].buffer, X);
  CHECK_EQ_U64(f.reports[1].buffer, Y);
  /* report-all leaves B's clock as the program made it */
  CHECK_EQ_U64(cubert_race_clock(f.c, B, A), 0);
  fx_done(&f);
  fx_init(&f);
  prog_two_buffers_one_wait(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(cubert_race_clock(f.c, B, A), 1); /* the assumed edge */
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
  fake_event_backend_t fb;
  cubert_event_backend_t be = fake_event_backend_init(&fb, 0);
  void *sa = NULL, *sb = NULL;
  uint64_t a1, b1;
  int order;
  for (order = 0; order < 2; order++) {
    fx_init(&f);
    CHECK_OK(be.vtable->create_stream(be.self, A, &sa, NULL));
    CHECK_OK(be.vtable->create_stream(be.self, B, &sb, NULL));
    a1 = op(&f, A, "produce");
    wr(&f, X, A, a1);
    fake_event_backend_enqueue(&fb, sa, 1);
    if (order == 0) {
      /* safe execution: A runs to completion before B's work exists */
      CHECK_EQ_U64(fake_event_backend_run(&fb, A, 1), 1);
    }
    b1 = op(&f, B, "consume");
    rd(&f, X, B, b1);
    fake_event_backend_enqueue(&fb, sb, 2);
    CHECK_EQ_U64(fake_event_backend_run_all(&fb), order == 0 ? 1 : 2);
    /* Same report whichever order the device ran them in. */
    CHECK_EQ_U64(f.nreports, 1);
    CHECK_EQ_U64(f.reports[0].kind, RAW);
    CHECK_EQ_U64(f.reports[0].previous.stream, A);
    be.vtable->destroy_stream(be.self, sa);
    be.vtable->destroy_stream(be.self, sb);
    fx_done(&f);
  }
  fake_event_backend_destroy(&fb);
}

/* ---- ordering rules (reliability.md 4.4 sync-edge table) ------------------------- */

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
  CHECK_OK(cubert_race_reclaim(f.c, X, A));
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
  cubert_race_counters(f.c, &k);
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
  cubert_race_counters(f.c, &c);
  CHECK_EQ_U64(c.buffers, 1);
  CHECK_EQ_U64(c.records, 2); /* the last write and the last read */
  e = rec(&f, A);
  wait_ev(&f, B, e);
  k = op(&f, B, "k");
  wr(&f, X, B, k); /* ordered after both: supersedes both */
  cubert_race_counters(f.c, &c);
  CHECK_EQ_U64(c.records, 1);
  CHECK_EQ_U64(c.accesses, 201);
  CHECK_EQ_U64(f.nreports, 0);
  CHECK_OK(cubert_race_event_release(f.c, e));
  fx_done(&f);
}

TEST(race_stream_inherits_host_clock) {
  fixture_t f;
  uint64_t a1, h1;
  fx_init(&f);
  a1 = op(&f, A, "k");
  CHECK_EQ_U64(a1, 1);
  sync_stream(&f, A);
  CHECK_EQ_U64(cubert_race_clock(f.c, H, A), 1);
  CHECK_EQ_U64(cubert_race_clock(f.c, B, A), 0); /* not yet: at B's next op */
  h1 = op(&f, H, "host");
  CHECK_EQ_U64(h1, 1);
  (void)op(&f, B, "k");
  CHECK_EQ_U64(cubert_race_clock(f.c, B, A), 1);
  CHECK_EQ_U64(cubert_race_clock(f.c, B, H), 1);
  CHECK_EQ_U64(cubert_race_clock(f.c, B, B), 1);
  /* the host never learns of B without a sync */
  CHECK_EQ_U64(cubert_race_clock(f.c, H, B), 0);
  CHECK_EQ_U64(cubert_race_clock(f.c, 99, A), 0);
  CHECK_EQ_U64(cubert_race_clock(NULL, A, A), 0);
  fx_done(&f);
}

/* cudaStreamWaitEvent uses the state captured at record time, not later work
 * (reliability.md 4.2 rule 3). */
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
  CHECK_OK(cubert_race_stream_wait_stream(f.c, B, A));
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
  CHECK_OK(cubert_race_reclaim(f.c, X, H));
  CHECK_OK(cubert_race_reclaim(f.c, Z, H)); /* untracked: nothing to check */
  cubert_race_counters(f.c, &k);
  CHECK_EQ_U64(k.buffers, 1);
  CHECK_EQ_U64(k.records, 1);
  CHECK_EQ_U64(k.reclaims, 2);
  /* a reused id starts fresh: B's write of X is not checked against A's */
  b1 = op(&f, B, "k");
  wr(&f, X, B, b1);
  CHECK_EQ_U64(f.nreports, 0);
  CHECK_OK(cubert_race_forget(f.c, Y));
  CHECK_OK(cubert_race_forget(f.c, Y));
  cubert_race_counters(f.c, &k);
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
  CHECK_OK(cubert_race_reclaim(f.c, X, C));
  CHECK_EQ_U64(f.nreports, 2);
  CHECK_EQ_U64(f.reports[0].kind, RECL);
  CHECK_EQ_U64(f.reports[0].previous.stream, A);
  CHECK_EQ_U64(f.reports[1].previous.stream, B);
  CHECK_EQ_U64(cubert_race_clock(f.c, C, A), 0);
  cubert_race_counters(f.c, &k);
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
  CHECK_OK(cubert_race_reclaim(f.c, X, B));
  CHECK_EQ_U64(f.nreports, 0);
  fx_done(&f);
}

/* A pinned cross-stream binding (spec 6.2, docs/streams.md): A allocates
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
    CHECK_OK(cubert_race_stream_wait_stream(f.c, G, B)); /* resolve_end: GC waits on B */
    eg = rec(&f, G);
    (void)op(&f, A, "produce_more"); /* A went on; its reuse of X comes later */
    if (variant == 0) {
      CHECK_OK(cubert_race_reclaim_at_event(f.c, X, A, eg));
      CHECK_EQ_U64(f.nreports, 0);
    } else if (variant == 1) {
      /* without the GC fence: B's read is not ordered before A's reuse */
      CHECK_OK(cubert_race_reclaim(f.c, X, A));
      CHECK_EQ_U64(f.nreports, 1);
      CHECK_EQ_U64(f.reports[0].current.stream, A);
      CHECK_EQ_U64(f.reports[0].current.index, 2);
      CHECK_EQ_U64(f.reports[0].previous.stream, B);
    } else if (variant == 2) {
      /* the fence alone: enough for any reuser, since it covers A's write too */
      CHECK_OK(cubert_race_reclaim_at_event(f.c, X, CUBERT_RACE_NO_STREAM, eg));
      CHECK_EQ_U64(f.nreports, 0);
    } else {
      /* the wrong fence (A's event): B's read uncovered; reported for reuser C */
      CHECK_OK(cubert_race_reclaim_at_event(f.c, X, C, ea));
      CHECK_EQ_U64(f.nreports, 1);
      CHECK_EQ_U64(f.reports[0].current.stream, C);
      CHECK_EQ_U64(f.reports[0].current.index, 0);
      CHECK_EQ_U64(f.reports[0].kind, RECL);
    }
    CHECK_OK(cubert_race_event_release(f.c, ea));
    CHECK_OK(cubert_race_event_release(f.c, eg));
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
  CHECK_OK(cubert_race_event_release(f.c, e));
  CHECK_STATUS(cubert_race_event_release(f.c, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_race_stream_wait_event(f.c, B, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_race_host_wait_event(f.c, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_race_reclaim_at_event(f.c, X, A, e), CUBERT_STATUS_INVALID_HANDLE);
  e2 = rec(&f, B); /* reuses the slot with a new generation */
  CHECK_EQ_U64(e2.index, e.index);
  CHECK(e2.generation != e.generation);
  CHECK_STATUS(cubert_race_stream_wait_event(f.c, A, e), CUBERT_STATUS_INVALID_HANDLE);
  forged = e2;
  forged.index = 7;
  CHECK_STATUS(cubert_race_event_release(f.c, forged), CUBERT_STATUS_INVALID_HANDLE);
  forged.index = 0xFFFFFFFFu;
  CHECK_STATUS(cubert_race_host_wait_event(f.c, forged), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_race_event_release(f.c, null_token), CUBERT_STATUS_INVALID_HANDLE);
  forged = e2;
  forged.generation++;
  CHECK_STATUS(cubert_race_event_release(f.c, forged), CUBERT_STATUS_INVALID_HANDLE);
  cubert_race_counters(f.c, &k);
  CHECK_EQ_U64(k.events, 2);
  CHECK_EQ_U64(k.events_live, 1);
  CHECK_OK(cubert_race_event_release(f.c, e2));
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
  for (i = 0; i < 100; i++) CHECK_OK(cubert_race_event_release(f.c, ev[i]));
  cubert_race_counters(f.c, &k);
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
  CHECK_STATUS(cubert_race_access(f.c, X, A, 0, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_race_access(f.c, X, A, 1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, A, "k1");
  a2 = op(&f, A, "k2");
  CHECK_STATUS(cubert_race_access(f.c, X, A, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION); /* superseded */
  CHECK_STATUS(cubert_race_access(f.c, X, A, a2 + 1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION); /* future */
  rd(&f, X, A, a2);
  e = rec(&f, B);
  wait_ev(&f, A, e); /* a join closes A's open op */
  CHECK_STATUS(cubert_race_access(f.c, X, A, a2, CUBERT_RACE_WRITE, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, H, "h");
  sync_stream(&f, A); /* a host sync closes the host's op */
  CHECK_STATUS(cubert_race_access(f.c, X, H, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, H, "h");
  CHECK_OK(cubert_race_host_sync_all(f.c));
  CHECK_STATUS(cubert_race_access(f.c, X, H, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, H, "h");
  host_wait(&f, e);
  CHECK_STATUS(cubert_race_access(f.c, X, H, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  a1 = op(&f, B, "b");
  CHECK_OK(cubert_race_stream_wait_stream(f.c, B, A));
  CHECK_STATUS(cubert_race_access(f.c, X, B, a1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  /* an event record does not close the op */
  a1 = op(&f, C, "c");
  (void)cubert_race_event_release(f.c, e);
  e = rec(&f, C);
  rd(&f, X, C, a1);
  CHECK_OK(cubert_race_event_release(f.c, e));
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
  CHECK_STATUS(cubert_race_op_begin(NULL, A, "k", &idx), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_access(NULL, X, A, 1, CUBERT_RACE_READ, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_event_record(NULL, A, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_event_release(NULL, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_stream_wait_event(NULL, A, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_stream_wait_stream(NULL, A, B), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_host_wait_event(NULL, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_host_sync_stream(NULL, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_host_sync_all(NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_reclaim(NULL, X, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_reclaim_at_event(NULL, X, A, e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_forget(NULL, X), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_set_sink(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_race_set_seed(NULL, 1);
  cubert_race_clear_seed(NULL);
  cubert_race_checker_reset(NULL);
  cubert_race_checker_destroy(NULL);
  CHECK_EQ_U64(cubert_race_checker_max_streams(NULL), 0);
  CHECK(!cubert_race_last_report(NULL, &r));
  memset(&k, 0xAB, sizeof(k));
  cubert_race_counters(NULL, &k);
  CHECK_EQ_U64(k.reports, 0);
  cubert_race_counters(f.c, NULL);
  CHECK(!cubert_race_last_report(f.c, NULL));
  CHECK(!cubert_race_last_report(f.c, &r)); /* none yet */
  CHECK_EQ_U64(cubert_race_checker_max_streams(f.c), 8);
  cubert_race_counters(f.c, &k0);
  /* bad streams, buffers, modes, ranges, outs */
  CHECK_STATUS(cubert_race_op_begin(f.c, 8, "k", &idx), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_op_begin(f.c, 0xFFFFFFFEu, "k", &idx), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_op_begin(f.c, A, "k", NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(idx, 77);
  a1 = op(&f, A, "k");
  CHECK_STATUS(cubert_race_access(f.c, 0, A, a1, CUBERT_RACE_READ, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_access(f.c, X, 8, a1, CUBERT_RACE_READ, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_access(f.c, X, A, a1, CUBERT_RACE_RECLAIM, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_access(f.c, X, A, a1, (cubert_race_access_t)0, 0, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_access(f.c, X, A, a1, CUBERT_RACE_READ, 2, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_event_record(f.c, A, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_event_record(f.c, H, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_event_record(f.c, 8, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(e.index, 5);
  good = rec(&f, A);
  CHECK_STATUS(cubert_race_stream_wait_event(f.c, H, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_stream_wait_event(f.c, 8, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_stream_wait_stream(f.c, H, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_stream_wait_stream(f.c, A, H), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_stream_wait_stream(f.c, A, 8), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_host_sync_stream(f.c, H), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_host_sync_stream(f.c, 8), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_reclaim(f.c, 0, A), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_reclaim(f.c, X, 8), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_reclaim_at_event(f.c, 0, A, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_reclaim_at_event(f.c, X, 8, good), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_forget(f.c, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  /* nothing of the above changed the state (but the op and the event) */
  cubert_race_counters(f.c, &k);
  CHECK_EQ_U64(k.accesses, k0.accesses);
  CHECK_EQ_U64(k.joins, k0.joins);
  CHECK_EQ_U64(k.reclaims, k0.reclaims);
  CHECK_EQ_U64(k.ops, k0.ops + 1);
  CHECK_EQ_U64(k.events, k0.events + 1);
  CHECK_EQ_U64(cubert_race_clock(f.c, A, A), 1);
  rd(&f, X, A, a1); /* the op is still open */
  CHECK_OK(cubert_race_event_release(f.c, good));
  fx_done(&f);
}

TEST(race_create_rejects_bad_options) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_init(&ca);
  cubert_allocator_t no_fn = {NULL, NULL};
  cubert_race_options_t o;
  cubert_race_checker_t *c = (cubert_race_checker_t *)&ca; /* sentinel */
  cubert_error_t err;
  static const cubert_race_sink_vtable_t no_report = {NULL};
  cubert_race_options_initialize(NULL);
  cubert_race_options_initialize(&o);
  CHECK_EQ_U64(o.max_streams, CUBERT_RACE_DEFAULT_MAX_STREAMS);
  CHECK_EQ_U64(o.flags, 0);
  CHECK(o.sink.vtable == NULL);
  CHECK_STATUS(cubert_race_checker_create(a, &o, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_race_checker_create(no_fn, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 0;
  CHECK_STATUS(cubert_race_checker_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.status, CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = CUBERT_RACE_MAX_STREAMS_LIMIT + 1u;
  CHECK_STATUS(cubert_race_checker_create(a, &o, &c, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  o.max_streams = 4;
  o.flags = 0x2;
  CHECK_STATUS(cubert_race_checker_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.flags = 0;
  o.sink.vtable = &no_report;
  CHECK_STATUS(cubert_race_checker_create(a, &o, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(c == (cubert_race_checker_t *)&ca);
  CHECK_EQ_I64(ca.live_blocks, 0);
  /* defaults; the largest checker */
  CHECK_OK(cubert_race_checker_create(a, NULL, &c, NULL));
  CHECK_EQ_U64(cubert_race_checker_max_streams(c), CUBERT_RACE_DEFAULT_MAX_STREAMS);
  cubert_race_checker_destroy(c);
  o.sink.vtable = NULL;
  o.max_streams = CUBERT_RACE_MAX_STREAMS_LIMIT;
  CHECK_OK(cubert_race_checker_create(a, &o, &c, NULL));
  {
    uint64_t k1 = 0;
    CHECK_OK(cubert_race_op_begin(c, CUBERT_RACE_MAX_STREAMS_LIMIT - 1u, "last", &k1));
    CHECK_OK(cubert_race_access(c, X, CUBERT_RACE_MAX_STREAMS_LIMIT - 1u, k1, CUBERT_RACE_WRITE,
                                0, WHOLE));
    CHECK_OK(cubert_race_op_begin(c, H, "host", &k1));
    CHECK_OK(cubert_race_access(c, X, H, k1, CUBERT_RACE_READ, 0, WHOLE));
    {
      cubert_race_report_t r;
      CHECK(cubert_race_last_report(c, &r)); /* no sink: kept */
      CHECK_EQ_U64(r.previous.stream, CUBERT_RACE_MAX_STREAMS_LIMIT - 1u);
      CHECK_EQ_U64(r.current.stream, H);
    }
  }
  cubert_race_checker_destroy(c);
  CHECK_EQ_I64(ca.live_blocks, 0);
  CHECK_EQ_U64(ca.bad_frees, 0);
  counting_allocator_destroy(&ca);
}

/* ---- allocation failures: OK or RESOURCE_EXHAUSTED, state unchanged, 0 leaks ---- */

TEST(race_create_allocation_failure_loop) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_init(&ca);
  cubert_race_checker_t *c;
  cubert_race_options_t o;
  cubert_error_t err;
  cubert_status_t st;
  uint64_t n;
  cubert_race_options_initialize(&o);
  o.max_streams = 16;
  for (n = 1;; n++) {
    c = (cubert_race_checker_t *)&ca;
    counting_allocator_fail_at(&ca, n, 1);
    st = cubert_race_checker_create(a, &o, &c, &err);
    if (st == CUBERT_STATUS_OK) break;
    CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(c == (cubert_race_checker_t *)&ca);
    CHECK_EQ_I64(ca.live_blocks, 0);
    CHECK(n < 10);
  }
  CHECK_EQ_U64(n, 3); /* two allocations */
  counting_allocator_fail_at(&ca, 0, 0);
  cubert_race_checker_destroy(c);
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
      cubert_race_counters(f.c, &before);
      counting_allocator_fail_at(&f.alloc, n, 1);
      st = cubert_race_access(f.c, buffer, stream, k1, CUBERT_RACE_WRITE, start, start + 16u);
      counting_allocator_fail_at(&f.alloc, 0, 0);
      cubert_race_counters(f.c, &after);
      if (st == CUBERT_STATUS_OK) break;
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(memcmp(&before, &after, sizeof(before)) == 0);
      failures++;
      CHECK(n < 4);
    }
  }
  CHECK(failures >= 10); /* the table and the records grew several times */
  cubert_race_counters(f.c, &after);
  CHECK_EQ_U64(after.buffers, 150);
  CHECK_EQ_U64(after.records, 300);
  CHECK_EQ_U64(after.accesses, 300);
  /* buffers 0x1000 + j were written by stream j % 3 with no sync: the second
   * round (ranges [16, 32)) does not overlap the first, so nothing races */
  CHECK_EQ_U64(f.nreports, 0);
  /* the table still finds every buffer after growth: reclaim them all */
  for (i = 0; i < 150; i++) CHECK_OK(cubert_race_reclaim(f.c, 0x1000u + i, (uint32_t)(i % 3u)));
  cubert_race_counters(f.c, &after);
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
      cubert_race_counters(f.c, &before);
      counting_allocator_fail_at(&f.alloc, n, 1);
      st = cubert_race_event_record(f.c, A, &e);
      counting_allocator_fail_at(&f.alloc, 0, 0);
      cubert_race_counters(f.c, &after);
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
    CHECK_EQ_U64(cubert_race_clock(f.c, B, A), i + 1);
  }
  for (i = 0; i < 40; i++) CHECK_OK(cubert_race_event_release(f.c, ev[i]));
  /* steady state: releasing and recording again allocates nothing */
  counting_allocator_fail_at(&f.alloc, 1, 1);
  for (i = 0; i < 40; i++) ev[i] = rec(&f, C);
  for (i = 0; i < 40; i++) CHECK_OK(cubert_race_event_release(f.c, ev[i]));
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
    CHECK_OK(cubert_race_event_release(f.c, e));
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
  prog_war_fan_in(&f, true);
  cubert_race_counters(f.c, &k);
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
  CHECK_OK(cubert_race_host_sync_all(f.c));
  CHECK_OK(cubert_race_reclaim(f.c, X, H));
  cubert_race_counters(f.c, &k);
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
    cubert_race_checker_reset(f.c);
    f.nreports = 0;
    k_seeded[i].run(&f, true);
    cubert_race_counters(f.c, &k);
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
  cubert_race_set_seed(f.c, 42);
  prog_raw_cross_stream(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(f.reports[0].has_seed, 1);
  CHECK_EQ_U64(f.reports[0].seed, 42);
  CHECK(cubert_race_last_report(f.c, &last));
  CHECK(memcmp(&last, &f.reports[0], sizeof(last)) == 0);
  /* a device sync orders everything so far: each program below starts clean */
  CHECK_OK(cubert_race_host_sync_all(f.c));
  /* no sink: still counted and kept */
  CHECK_OK(cubert_race_set_sink(f.c, &none));
  cubert_race_clear_seed(f.c);
  prog_waw_cross_stream(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(reports_of(&f), 2);
  CHECK(cubert_race_last_report(f.c, &last));
  CHECK_EQ_U64(last.has_seed, 0);
  CHECK_EQ_U64(last.sequence, 2);
  bad.vtable = &no_report;
  bad.self = NULL;
  CHECK_STATUS(cubert_race_set_sink(f.c, &bad), CUBERT_STATUS_INVALID_ARGUMENT);
  sink.vtable = &k_capture_vtable;
  sink.self = &f;
  CHECK_OK(cubert_race_set_sink(f.c, &sink));
  CHECK_OK(cubert_race_set_sink(f.c, NULL)); /* none */
  CHECK_OK(cubert_race_host_sync_all(f.c));
  prog_war_cross_stream(&f, true);
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(reports_of(&f), 3);
  CHECK_OK(cubert_race_set_sink(f.c, &sink));
  CHECK_OK(cubert_race_host_sync_all(f.c));
  prog_war_cross_stream(&f, true);
  CHECK_EQ_U64(f.nreports, 2);
  /* reset: clocks, shadow, counters, last report; the seed and sink stay */
  cubert_race_set_seed(f.c, 7);
  cubert_race_checker_reset(f.c);
  CHECK(!cubert_race_last_report(f.c, &last));
  CHECK_EQ_U64(reports_of(&f), 0);
  prog_host_read_without_sync(&f, true);
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
  CHECK_OK(cubert_race_event_release(f.c, e1));
  cubert_race_checker_reset(f.c);
  CHECK_STATUS(cubert_race_event_release(f.c, e2), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_race_stream_wait_event(f.c, B, e1), CUBERT_STATUS_INVALID_HANDLE);
  cubert_race_counters(f.c, &k);
  CHECK_EQ_U64(k.buffers, 0);
  CHECK_EQ_U64(k.records, 0);
  CHECK_EQ_U64(k.events_live, 0);
  CHECK_EQ_U64(cubert_race_clock(f.c, A, A), 0);
  /* X is untracked after the reset; slots are reused */
  k1 = op(&f, B, "k");
  CHECK_EQ_U64(k1, 1);
  wr(&f, X, B, k1);
  e3 = rec(&f, B);
  CHECK(e3.index == e1.index || e3.index == e2.index);
  CHECK_OK(cubert_race_event_release(f.c, e3));
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
  cubert_race_set_seed(f.c, 0xDEADBEEFull);
  prog_reclaim_before_consumer_event(&f, true);
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
  CHECK_OK(cubert_race_hook_op_begin(NULL, A, "k", &idx));
  CHECK_EQ_U64(idx, 55);
  CHECK_OK(cubert_race_hook_access(NULL, X, A, idx, CUBERT_RACE_WRITE, 0, WHOLE));
  CHECK_OK(cubert_race_hook_event_record(NULL, A, &e));
  CHECK_EQ_U64(e.index, 9);
  CHECK_OK(cubert_race_hook_event_release(NULL, e));
  CHECK_OK(cubert_race_hook_stream_wait_event(NULL, B, e));
  CHECK_OK(cubert_race_hook_stream_wait_stream(NULL, B, A));
  CHECK_OK(cubert_race_hook_host_wait_event(NULL, e));
  CHECK_OK(cubert_race_hook_host_sync_stream(NULL, A));
  CHECK_OK(cubert_race_hook_host_sync_all(NULL));
  CHECK_OK(cubert_race_hook_reclaim(NULL, X, H));
  CHECK_OK(cubert_race_hook_reclaim_at_event(NULL, X, A, e));
  CHECK_OK(cubert_race_hook_forget(NULL, X));
}

/* The hooks forward to the checker when it is on: program 1 through hooks. */
TEST(race_hooks_forward_when_enabled) {
  fixture_t f;
  uint64_t a1 = 0, b1 = 0;
  cubert_race_event_t e = {0, 0};
  cubert_memory_id_t id = {3, 1};
  uint64_t buf = cubert_race_buffer_id(id);
  fx_init(&f);
  CHECK_EQ_U64(buf, 0x0000000300000001ull);
  CHECK_OK(cubert_race_hook_op_begin(f.c, A, "produce", &a1));
  CHECK_OK(cubert_race_hook_access(f.c, buf, A, a1, CUBERT_RACE_WRITE, 0, WHOLE));
  CHECK_OK(cubert_race_hook_event_record(f.c, A, &e));
  CHECK_OK(cubert_race_hook_op_begin(f.c, B, "consume", &b1));
  CHECK_OK(cubert_race_hook_access(f.c, buf, B, b1, CUBERT_RACE_READ, 0, WHOLE));
  CHECK_EQ_U64(f.nreports, 1);
  CHECK_EQ_U64(f.reports[0].buffer, buf);
  CHECK_OK(cubert_race_hook_stream_wait_event(f.c, C, e));
  CHECK_OK(cubert_race_hook_stream_wait_stream(f.c, C, B));
  CHECK_OK(cubert_race_hook_host_wait_event(f.c, e));
  CHECK_OK(cubert_race_hook_host_sync_stream(f.c, B));
  CHECK_OK(cubert_race_hook_host_sync_all(f.c));
  CHECK_OK(cubert_race_hook_reclaim(f.c, buf, H)); /* after the device sync: fine */
  CHECK_OK(cubert_race_hook_reclaim_at_event(f.c, buf, H, e));
  CHECK_OK(cubert_race_hook_forget(f.c, buf));
  CHECK_STATUS(cubert_race_hook_access(f.c, 0, B, b1, CUBERT_RACE_READ, 0, WHOLE),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_race_hook_event_release(f.c, e));
  CHECK_STATUS(cubert_race_hook_event_release(f.c, e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(f.nreports, 1);
  fx_done(&f);
}

/* ---- differential: the shadow against a naive model that keeps every access ------
 * Random programs over 4 streams + host, 6 buffers, ranges from a small set,
 * with REPORT_ALL (no repair, so both see the same clocks). For every access
 * and reclamation, "reported" must agree with the naive model's "some
 * earlier conflicting access is not ordered before it". */

#define DIFF_STREAMS 4u
#define DIFF_W (DIFF_STREAMS + 1u)
#define DIFF_MAX_ACC 4096

typedef struct naive_access_t {
  uint64_t buffer, start, end, index;
  uint32_t timeline, mode;
} naive_access_t;

typedef struct naive_t {
  uint64_t clock[DIFF_W][DIFF_W];
  uint64_t events[64][DIFF_W];
  int event_live[64];
  cubert_race_event_t tokens[64];
  naive_access_t acc[DIFF_MAX_ACC];
  size_t nacc;
  int open[DIFF_W];
} naive_t;

static uint64_t diff_rng(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void naive_join(uint64_t *dst, const uint64_t *src) {
  uint32_t i;
  for (i = 0; i < DIFF_W; i++)
    if (src[i] > dst[i]) dst[i] = src[i];
}

static uint32_t tl_of(uint32_t stream) { return stream == H ? 0u : stream + 1u; }

/* Does the naive model see a conflict of (timeline t, mode, range, clock)? */
static bool naive_conflict(const naive_t *m, uint64_t buffer, uint32_t mode, uint64_t start,
                           uint64_t end, const uint64_t *clock) {
  size_t i;
  for (i = 0; i < m->nacc; i++) {
    const naive_access_t *a = &m->acc[i];
    if (a->buffer != buffer || !(a->start < end && start < a->end)) continue;
    if (mode == CUBERT_RACE_READ && a->mode == CUBERT_RACE_READ) continue;
    if (a->index > clock[a->timeline]) return true;
  }
  return false;
}

static void naive_drop(naive_t *m, uint64_t buffer) {
  size_t i, j = 0;
  for (i = 0; i < m->nacc; i++)
    if (m->acc[i].buffer != buffer) m->acc[j++] = m->acc[i];
  m->nacc = j;
}

TEST(race_differential_against_naive_model) {
  static naive_t m;
  fixture_t f;
  uint64_t seed, s, step, checked = 0, conflicts = 0;
  static const uint64_t k_ranges[][2] = {{0, WHOLE}, {0, 64}, {32, 96}, {64, 128}, {0, 32}};
  for (seed = 1; seed <= 60; seed++) {
    memset(&m, 0, sizeof(m));
    fx_init_flags(&f, DIFF_STREAMS, CUBERT_RACE_FLAG_REPORT_ALL);
    s = seed;
    for (step = 0; step < 400 && m.nacc < DIFF_MAX_ACC - 1; step++) {
      uint64_t r = diff_rng(&s);
      uint32_t which = (uint32_t)(r % 100u);
      uint32_t stream = (uint32_t)((r >> 8) % (DIFF_STREAMS + 1u));
      uint32_t t;
      if (stream == DIFF_STREAMS) stream = H;
      t = tl_of(stream);
      if (which < 25) { /* begin an op */
        uint64_t idx;
        if (t != 0) naive_join(m.clock[t], m.clock[0]);
        m.clock[t][t]++;
        idx = op(&f, stream, "k");
        CHECK_EQ_U64(idx, m.clock[t][t]);
        m.open[t] = 1;
      } else if (which < 65) { /* access by an open op */
        uint64_t buffer = 1 + ((r >> 16) % 6u);
        uint32_t mode = ((r >> 24) & 1u) ? CUBERT_RACE_WRITE : CUBERT_RACE_READ;
        const uint64_t *rg = k_ranges[(r >> 32) % 5u];
        size_t before = f.nreports;
        bool expect;
        if (!m.open[t]) continue;
        expect = naive_conflict(&m, buffer, mode, rg[0], rg[1], m.clock[t]);
        CHECK_OK(cubert_race_access(f.c, buffer, stream, m.clock[t][t],
                                    (cubert_race_access_t)mode, rg[0], rg[1]));
        CHECK_MSG((f.nreports > before) == expect, "seed %llu step %llu: reported %d, naive %d",
                  (unsigned long long)seed, (unsigned long long)step, f.nreports > before,
                  expect);
        m.acc[m.nacc].buffer = buffer;
        m.acc[m.nacc].start = rg[0];
        m.acc[m.nacc].end = rg[1];
        m.acc[m.nacc].index = m.clock[t][t];
        m.acc[m.nacc].timeline = t;
        m.acc[m.nacc].mode = mode;
        m.nacc++;
        checked++;
        conflicts += expect;
      } else if (which < 75) { /* record an event on a stream */
        uint32_t slot = (uint32_t)((r >> 40) % 64u);
        if (t == 0) continue;
        if (m.event_live[slot]) CHECK_OK(cubert_race_event_release(f.c, m.tokens[slot]));
        m.tokens[slot] = rec(&f, stream);
        memcpy(m.events[slot], m.clock[t], sizeof(m.events[slot]));
        m.event_live[slot] = 1;
      } else if (which < 85) { /* someone waits on an event */
        uint32_t slot = (uint32_t)((r >> 40) % 64u);
        if (!m.event_live[slot]) continue;
        if (t == 0) {
          host_wait(&f, m.tokens[slot]);
        } else {
          wait_ev(&f, stream, m.tokens[slot]);
        }
        naive_join(m.clock[t], m.events[slot]);
        m.open[t] = 0;
      } else if (which < 90) { /* host syncs a stream, or all */
        uint32_t o = (uint32_t)((r >> 40) % (DIFF_STREAMS + 1u)), i;
        if (o == DIFF_STREAMS) {
          CHECK_OK(cubert_race_host_sync_all(f.c));
          for (i = 1; i < DIFF_W; i++) naive_join(m.clock[0], m.clock[i]);
        } else {
          sync_stream(&f, o);
          naive_join(m.clock[0], m.clock[o + 1u]);
        }
        m.open[0] = 0;
      } else if (which < 95) { /* stream waits on stream */
        uint32_t o = (uint32_t)((r >> 40) % DIFF_STREAMS);
        if (t == 0) continue;
        CHECK_OK(cubert_race_stream_wait_stream(f.c, stream, o));
        naive_join(m.clock[t], m.clock[o + 1u]);
        m.open[t] = 0;
      } else { /* reclaim a buffer at the current point of a timeline */
        uint64_t buffer = 1 + ((r >> 16) % 6u), clock[DIFF_W];
        size_t before = f.nreports;
        bool expect;
        memcpy(clock, m.clock[t], sizeof(clock));
        if (t != 0) naive_join(clock, m.clock[0]);
        expect = naive_conflict(&m, buffer, CUBERT_RACE_WRITE, 0, WHOLE, clock);
        CHECK_OK(cubert_race_reclaim(f.c, buffer, stream));
        CHECK_MSG((f.nreports > before) == expect, "seed %llu step %llu: reclaim %d, naive %d",
                  (unsigned long long)seed, (unsigned long long)step, f.nreports > before,
                  expect);
        naive_drop(&m, buffer);
        checked++;
        conflicts += expect;
      }
    }
    {
      uint32_t slot;
      for (slot = 0; slot < 64; slot++)
        if (m.event_live[slot]) CHECK_OK(cubert_race_event_release(f.c, m.tokens[slot]));
    }
    fx_done(&f);
  }
  /* the programs exercised both outcomes */
  CHECK(checked > 1000);
  CHECK(conflicts > 100);
  CHECK(checked - conflicts > 100);
}
