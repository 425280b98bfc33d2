/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_race_fixture.h: what the race checker tests share
 * (test_race.c, test_race_api.c, test_race_differential.c): stream and
 * buffer names, a checker over a counting allocator with a sink that
 * captures reports, and one-line helpers for ops, accesses, events, syncs.
 */
#ifndef CUBERT_TEST_RACE_FIXTURE_H
#define CUBERT_TEST_RACE_FIXTURE_H

#include "test.h"
#include "counting_allocator.h"
#include "cubert/race.h"
#include "check/race.h"

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

static inline void capture_report(void *self, const cubert_race_report_t *report) {
  fixture_t *f = (fixture_t *)self;
  if (f->nreports < MAX_CAPTURED) f->reports[f->nreports] = *report;
  f->nreports++;
}

static const cubert_race_sink_vtable_t k_capture_vtable = {capture_report};

static inline void fx_init_flags(fixture_t *f, uint32_t max_streams, uint32_t flags) {
  cubert_race_options_t o;
  memset(f, 0, sizeof(*f));
  cubert__race_options_initialize(&o);
  o.max_streams = max_streams;
  o.flags = flags;
  o.sink.vtable = &k_capture_vtable;
  o.sink.self = f;
  CHECK_OK(cubert__race_checker_create(counting_allocator_initialize(&f->alloc), &o, &f->c, NULL));
  CHECK(f->c != NULL);
}

static inline void fx_init(fixture_t *f) { fx_init_flags(f, 8, 0); }

static inline void fx_done(fixture_t *f) {
  cubert__race_checker_destroy(f->c);
  f->c = NULL;
  CHECK_EQ_I64(f->alloc.live_blocks, 0);
  CHECK_EQ_U64(f->alloc.bad_frees, 0);
  counting_allocator_destroy(&f->alloc);
}

static inline uint64_t op(fixture_t *f, uint32_t stream, const char *name) {
  uint64_t index = 0;
  CHECK_OK(cubert__race_op_begin(f->c, stream, name, &index));
  CHECK(index >= 1);
  return index;
}

static inline void rd_range(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index,
                     uint64_t start, uint64_t end) {
  CHECK_OK(cubert__race_access(f->c, buffer, stream, index, CUBERT_RACE_READ, start, end));
}

static inline void wr_range(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index,
                     uint64_t start, uint64_t end) {
  CHECK_OK(cubert__race_access(f->c, buffer, stream, index, CUBERT_RACE_WRITE, start, end));
}

static inline void rd(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index) {
  rd_range(f, buffer, stream, index, 0, WHOLE);
}

static inline void wr(fixture_t *f, uint64_t buffer, uint32_t stream, uint64_t index) {
  wr_range(f, buffer, stream, index, 0, WHOLE);
}

static inline cubert_race_event_t rec(fixture_t *f, uint32_t stream) {
  cubert_race_event_t e = {0, 0};
  CHECK_OK(cubert__race_event_record(f->c, stream, &e));
  CHECK(e.index != 0);
  return e;
}

static inline void wait_ev(fixture_t *f, uint32_t stream, cubert_race_event_t e) {
  CHECK_OK(cubert__race_stream_wait_event(f->c, stream, e));
}

static inline void host_wait(fixture_t *f, cubert_race_event_t e) {
  CHECK_OK(cubert__race_host_wait_event(f->c, e));
}

static inline void sync_stream(fixture_t *f, uint32_t stream) {
  CHECK_OK(cubert__race_host_sync_stream(f->c, stream));
}

static inline uint64_t reports_of(const fixture_t *f) {
  cubert_race_counters_t k;
  cubert__race_counters(f->c, &k);
  return k.reports;
}

static inline bool str_eq(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

/* ---- the seeded-bug programs (test_race_programs.c) ------------------------ */

/* A program and the one report it must give with its bug. */
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

/* The programs, NSEEDED of them. */
extern const seeded_t k_seeded[];
extern const size_t k_seeded_count;
#define NSEEDED k_seeded_count
/* The program called `name` (the test fails when there is none). */
const seeded_t *race_seeded(const char *name);

#endif /* CUBERT_TEST_RACE_FIXTURE_H */
