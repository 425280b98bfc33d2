/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_race_checker.c: the race checker (cubert/race.h) fed random
 * event streams (op begin + accesses, events, stream and host waits,
 * reclamations, resets), against a plain happens-before model: vector
 * clocks joined exactly as docs/race-checker.md says, and every access kept
 * (the model never drops a record).
 *
 * Input: the number of streams (1..4), flags (REPORT_ALL; "synchronized":
 * the harness inserts a wait before every access or reclamation the model
 * finds unordered), an allocation failure point, then operations: an
 * opcode byte, a selector byte (stream, access count, variant), operands.
 *
 * Invariants: every report names a conflict the model has (no false
 * positive); an access or reclamation the model finds in conflict gives at
 * least one report, and by default, after the checker's repair joins (which
 * the model replays), no conflict is left; in synchronized mode the checker
 * reports nothing at all (no false positive on a correctly synchronized
 * program); statuses are the documented ones (bad stream, closed op, stale
 * token, start > end); an allocation failure changes nothing; the counters
 * and clocks match; destroy frees everything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/race.h"
#include "check/race.h"
#include "fuzz.h"
#include "fuzz_alloc.h"

#define FUZZ_CHECK(cond)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "fuzz_race_checker: %s:%d: check failed: %s\n", __FILE__, __LINE__,   \
              #cond);                                                                        \
      abort();                                                                               \
    }                                                                                        \
  } while (0)

#define MAX_STREAMS 4
#define T (MAX_STREAMS + 1) /* model timelines: streams 0..S-1, then the host at index S */
#define MAX_OPS 160
#define MAX_RECORDS 640
#define MAX_EVENTS 64
#define MAX_REPORTS 16
#define NBUF 4
#define BUF_BYTES 64

typedef struct m_record_t {
  uint64_t buffer, index, start, end;
  uint32_t tl, mode;
} m_record_t;

typedef struct m_event_t {
  cubert_race_event_t token;
  uint64_t clock[T];
  uint32_t tl;
  int live;
} m_event_t;

typedef struct ctx_t {
  fuzz_alloc_t fa;
  cubert_race_checker_t *rc;
  uint32_t S, host; /* host = S (model index) */
  int report_all, synchronized;
  uint64_t vc[T][T];
  int open[T];
  m_record_t rec[MAX_RECORDS];
  uint32_t nrec;
  m_event_t ev[MAX_EVENTS];
  uint32_t nev;
  cubert_race_report_t reports[MAX_REPORTS];
  uint32_t nreports;
  uint64_t total_reports;
  fuzz_reader_t *r;
} ctx_t;

static void sink_report(void *self, const cubert_race_report_t *report) {
  ctx_t *x = (ctx_t *)self;
  FUZZ_CHECK(x->nreports < MAX_REPORTS);
  x->reports[x->nreports++] = *report;
}

static const cubert_race_sink_vtable_t g_sink = {sink_report};

/* Model timeline <-> API stream value. */
static uint32_t api_of(const ctx_t *x, uint32_t tl) { return tl == x->host ? CUBERT_RACE_HOST : tl; }
static uint32_t tl_of(const ctx_t *x, uint32_t stream) {
  return stream == CUBERT_RACE_HOST ? x->host : stream;
}

static void join(uint64_t *dst, const uint64_t *src) {
  uint32_t i;
  for (i = 0; i < T; i++)
    if (src[i] > dst[i]) dst[i] = src[i];
}

static int overlaps(const m_record_t *r, uint64_t start, uint64_t end) {
  return r->start < end && start < r->end;
}

/* Timelines with a record of `buffer` that conflicts with an access
 * (mode; RECLAIM conflicts with everything) and is not ordered before
 * `clock`. Bit i: timeline i. */
static uint32_t conflicts(const ctx_t *x, uint64_t buffer, const uint64_t *clock, uint32_t mode,
                          uint64_t start, uint64_t end) {
  uint32_t i, set = 0;
  for (i = 0; i < x->nrec; i++) {
    const m_record_t *r = &x->rec[i];
    if (r->buffer != buffer || !overlaps(r, start, end)) continue;
    if (mode == CUBERT_RACE_READ && r->mode == CUBERT_RACE_READ) continue;
    if (r->index <= clock[r->tl]) continue;
    set |= 1u << r->tl;
  }
  return set;
}

/* A reported previous access is a model record in conflict under clock. */
static void check_report_record(const ctx_t *x, const cubert_race_report_t *rep,
                                const uint64_t *clock, uint32_t mode, uint64_t start,
                                uint64_t end) {
  uint32_t i, u = tl_of(x, rep->previous.stream);
  int found = 0;
  FUZZ_CHECK(u < T && (u < x->S || u == x->host));
  for (i = 0; i < x->nrec && !found; i++) {
    const m_record_t *r = &x->rec[i];
    found = r->buffer == rep->buffer && r->tl == u && r->index == rep->previous.index &&
            r->mode == rep->previous.access && r->start == rep->previous.start &&
            r->end == rep->previous.end;
  }
  FUZZ_CHECK(found);
  FUZZ_CHECK(rep->previous.index > clock[u]);
  FUZZ_CHECK(rep->previous.start < end && start < rep->previous.end);
  FUZZ_CHECK(!(mode == CUBERT_RACE_READ && rep->previous.access == CUBERT_RACE_READ));
  FUZZ_CHECK(rep->kind == (mode == CUBERT_RACE_RECLAIM ? CUBERT_RACE_KIND_RECLAIM
                           : mode == CUBERT_RACE_READ  ? CUBERT_RACE_KIND_READ_AFTER_WRITE
                           : rep->previous.access == CUBERT_RACE_READ
                           ? CUBERT_RACE_KIND_WRITE_AFTER_READ
                           : CUBERT_RACE_KIND_WRITE_AFTER_WRITE));
}

/* Reports without repair (REPORT_ALL accesses, reclamations): one per
 * timeline at most, each in the model's conflict set; some iff the set is
 * not empty. */
static void check_reports_plain(ctx_t *x, uint64_t buffer, const uint64_t *clock, uint32_t mode,
                                uint64_t start, uint64_t end) {
  uint32_t set = conflicts(x, buffer, clock, mode, start, end), seen = 0, i;
  for (i = 0; i < x->nreports; i++) {
    uint32_t u = tl_of(x, x->reports[i].previous.stream);
    FUZZ_CHECK(x->reports[i].buffer == buffer);
    check_report_record(x, &x->reports[i], clock, mode, start, end);
    FUZZ_CHECK((set & (1u << u)) && !(seen & (1u << u)));
    seen |= 1u << u;
  }
  FUZZ_CHECK((x->nreports > 0) == (set != 0));
}

/* The model index of the live event `token` is, or -1. */
static int find_event(const ctx_t *x, cubert_race_event_t token) {
  uint32_t i;
  for (i = 0; i < x->nev; i++)
    if (x->ev[i].live && x->ev[i].token.index == token.index &&
        x->ev[i].token.generation == token.generation)
      return (int)i;
  return -1;
}

/* A token to use: one the model issued (maybe released), or a forged one.
 * Returns the model index of the live event it is, or -1. */
static int pick_event(ctx_t *x, cubert_race_event_t *out) {
  uint8_t b = fuzz_u8(x->r);
  out->index = 1;
  out->generation = 1;
  if (x->nev) *out = x->ev[b % x->nev].token;
  if (b & 0x80) out->generation += 2u * (1u + (b & 3u)); /* maybe a later token of the slot */
  return find_event(x, *out);
}

/* ---- synchronization (also used to repair programs in synchronized mode) ------------ */

static void do_host_sync(ctx_t *x, uint32_t s) {
  FUZZ_CHECK(cubert__race_host_sync_stream(x->rc, s) == CUBERT_STATUS_OK);
  join(x->vc[x->host], x->vc[s]);
  x->open[x->host] = 0;
}

static void do_wait_stream(ctx_t *x, uint32_t s, uint32_t o) {
  FUZZ_CHECK(cubert__race_stream_wait_stream(x->rc, s, o) == CUBERT_STATUS_OK);
  join(x->vc[s], x->vc[o]);
  x->open[s] = 0;
}

static int do_record(ctx_t *x, uint32_t s, cubert_race_event_t *out) {
  uint64_t failures = x->fa.failures;
  cubert_status_t st;
  if (x->nev == MAX_EVENTS) return 0;
  st = cubert__race_event_record(x->rc, s, out);
  if (st == CUBERT_STATUS_RESOURCE_EXHAUSTED) {
    FUZZ_CHECK(x->fa.failures > failures);
    return 0;
  }
  FUZZ_CHECK(st == CUBERT_STATUS_OK && x->nev < MAX_EVENTS);
  x->ev[x->nev].token = *out;
  memcpy(x->ev[x->nev].clock, x->vc[s], sizeof x->vc[s]);
  x->ev[x->nev].tl = s;
  x->ev[x->nev].live = 1;
  x->nev++;
  return 1;
}

/* Order timeline u before the next op of t (t may be the host). */
static void order(ctx_t *x, uint32_t t, uint32_t u, uint8_t how) {
  cubert_race_event_t e;
  if (t == x->host || (how % 3) == 2) {
    if (t == x->host && (how & 1) && x->nev < MAX_EVENTS && do_record(x, u, &e)) {
      FUZZ_CHECK(cubert__race_host_wait_event(x->rc, e) == CUBERT_STATUS_OK);
      join(x->vc[x->host], x->ev[x->nev - 1].clock);
      x->open[x->host] = 0;
    } else {
      do_host_sync(x, u);
    }
  } else if ((how % 3) == 1 && x->nev < MAX_EVENTS && do_record(x, u, &e)) {
    FUZZ_CHECK(cubert__race_stream_wait_event(x->rc, t, e) == CUBERT_STATUS_OK);
    join(x->vc[t], x->ev[x->nev - 1].clock);
    x->open[t] = 0;
  } else {
    do_wait_stream(x, t, u);
  }
}

/* The clock the next op of t will run with. */
static void next_clock(const ctx_t *x, uint32_t t, uint64_t *clock) {
  memcpy(clock, x->vc[t], sizeof x->vc[t]);
  if (t != x->host) join(clock, x->vc[x->host]);
  clock[t]++;
}

/* ---- operations -------------------------------------------------------------------- */

typedef struct access_t {
  uint64_t buffer, start, end;
  uint32_t mode;
} access_t;

static access_t read_access(ctx_t *x) {
  uint8_t a = fuzz_u8(x->r), b = fuzz_u8(x->r);
  access_t acc;
  acc.buffer = 1u + (a % NBUF);
  acc.mode = (a & 0x10) ? CUBERT_RACE_WRITE : CUBERT_RACE_READ;
  if (a & 0x20) { /* the whole buffer */
    acc.start = 0;
    acc.end = CUBERT_RACE_WHOLE_END;
  } else {
    acc.start = b % BUF_BYTES;
    acc.end = acc.start + (a >> 6) * 8u + (b >> 6); /* may be empty */
  }
  return acc;
}

static void one_access(ctx_t *x, uint32_t t, uint64_t op, const access_t *a) {
  uint64_t clock[T], failures = x->fa.failures;
  uint32_t i, before_conflicts;
  cubert_status_t st;
  cubert_race_counters_t c0, c1;
  memcpy(clock, x->vc[t], sizeof clock);
  before_conflicts = a->start < a->end ? conflicts(x, a->buffer, clock, a->mode, a->start, a->end) : 0;
  cubert__race_counters(x->rc, &c0);
  x->nreports = 0;
  st = cubert__race_access(x->rc, a->buffer, api_of(x, t), op, (cubert_race_access_t)a->mode,
                           a->start, a->end);
  cubert__race_counters(x->rc, &c1);
  if (st == CUBERT_STATUS_RESOURCE_EXHAUSTED) { /* nothing checked, recorded, reported */
    FUZZ_CHECK(x->fa.failures > failures && x->nreports == 0);
    FUZZ_CHECK(c1.accesses == c0.accesses && c1.records == c0.records);
    return;
  }
  FUZZ_CHECK(st == CUBERT_STATUS_OK && c1.accesses == c0.accesses + 1);
  FUZZ_CHECK(c1.reports == c0.reports + x->nreports);
  x->total_reports += x->nreports;
  if (a->start == a->end) {
    FUZZ_CHECK(x->nreports == 0);
    return;
  }
  for (i = 0; i < x->nreports; i++) {
    FUZZ_CHECK(x->reports[i].current.stream == api_of(x, t) && x->reports[i].current.index == op &&
               x->reports[i].current.access == a->mode && x->reports[i].current.start == a->start &&
               x->reports[i].current.end == a->end);
  }
  if (x->report_all) {
    check_reports_plain(x, a->buffer, clock, a->mode, a->start, a->end);
  } else {
    /* each report: a real conflict under the clock repaired so far; then
     * the checker joins that timeline's row (the model does the same) */
    for (i = 0; i < x->nreports; i++) {
      uint32_t u = tl_of(x, x->reports[i].previous.stream);
      FUZZ_CHECK(x->reports[i].buffer == a->buffer);
      check_report_record(x, &x->reports[i], clock, a->mode, a->start, a->end);
      join(clock, x->vc[u]);
    }
    FUZZ_CHECK(conflicts(x, a->buffer, clock, a->mode, a->start, a->end) == 0);
    FUZZ_CHECK((x->nreports > 0) == (before_conflicts != 0));
    memcpy(x->vc[t], clock, sizeof clock);
  }
  FUZZ_CHECK(x->nrec < MAX_RECORDS);
  x->rec[x->nrec].buffer = a->buffer;
  x->rec[x->nrec].index = op;
  x->rec[x->nrec].start = a->start;
  x->rec[x->nrec].end = a->end;
  x->rec[x->nrec].tl = t;
  x->rec[x->nrec].mode = a->mode;
  x->nrec++;
}

/* op_begin on a stream or the host, then 0..3 accesses of it. */
static void op_kernel(ctx_t *x, uint8_t sel) {
  uint32_t t = sel % (x->S + 1u), n = (sel >> 4) & 3u, i, k, set;
  access_t acc[3];
  uint64_t op, clock[T];
  uint8_t how = fuzz_u8(x->r);
  if (t == x->S) t = x->host;
  for (i = 0; i < n; i++) acc[i] = read_access(x);
  if (x->synchronized) { /* order every conflicting timeline first */
    for (k = 0; k < 2 * T; k++) {
      next_clock(x, t, clock);
      for (set = 0, i = 0; i < n; i++)
        if (acc[i].start < acc[i].end)
          set |= conflicts(x, acc[i].buffer, clock, acc[i].mode, acc[i].start, acc[i].end);
      if (!set) break;
      for (i = 0; !(set & (1u << i)); i++) {
      }
      order(x, t, i, how);
      how = (uint8_t)(how * 7u + 1u);
    }
  }
  FUZZ_CHECK(cubert__race_op_begin(x->rc, api_of(x, t), "op", &op) == CUBERT_STATUS_OK);
  if (t != x->host) join(x->vc[t], x->vc[x->host]);
  x->vc[t][t]++;
  x->open[t] = 1;
  FUZZ_CHECK(op == x->vc[t][t]);
  for (i = 0; i < n; i++) one_access(x, t, op, &acc[i]);
}

static void op_reclaim(ctx_t *x, uint8_t sel) {
  uint64_t buffer = 1u + (fuzz_u8(x->r) % NBUF), point[T];
  uint32_t t = sel % (x->S + 1u), i, k, set;
  int at_event = (sel >> 4) & 1, e_idx = -1;
  int no_stream = at_event && ((sel >> 5) & 1) && !x->synchronized; /* nothing to order then */
  cubert_race_event_t e = {0, 0};
  uint8_t how = fuzz_u8(x->r);
  cubert_status_t st;
  if (t == x->S) t = x->host;
  if (at_event) e_idx = pick_event(x, &e);
  for (k = 0; k < 2 * T; k++) {
    if (at_event) e_idx = find_event(x, e); /* ordering may have recorded it since */
    memset(point, 0, sizeof point);
    if (e_idx >= 0) join(point, x->ev[e_idx].clock);
    if (!no_stream) {
      join(point, x->vc[t]);
      join(point, x->vc[x->host]);
    }
    set = conflicts(x, buffer, point, CUBERT_RACE_RECLAIM, 0, CUBERT_RACE_WHOLE_END);
    if (!x->synchronized || !set || no_stream) break;
    for (i = 0; !(set & (1u << i)); i++) {
    }
    if (t == x->host || i == x->host) do_host_sync(x, i == x->host ? t : i);
    else order(x, t, i, how);
    how = (uint8_t)(how * 5u + 3u);
  }
  x->nreports = 0;
  if (at_event)
    st = cubert__race_reclaim_at_event(x->rc, buffer, no_stream ? CUBERT_RACE_NO_STREAM : api_of(x, t), e);
  else
    st = cubert__race_reclaim(x->rc, buffer, api_of(x, t));
  if (at_event && e_idx < 0) {
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_HANDLE && x->nreports == 0);
    return;
  }
  FUZZ_CHECK(st == CUBERT_STATUS_OK);
  x->total_reports += x->nreports;
  for (i = 0; i < x->nreports; i++) {
    FUZZ_CHECK(x->reports[i].current.access == CUBERT_RACE_RECLAIM);
    if (!no_stream) FUZZ_CHECK(x->reports[i].current.stream == api_of(x, t));
  }
  check_reports_plain(x, buffer, point, CUBERT_RACE_RECLAIM, 0, CUBERT_RACE_WHOLE_END);
  for (i = 0, k = 0; i < x->nrec; i++) /* the shadow is dropped */
    if (x->rec[i].buffer != buffer) x->rec[k++] = x->rec[i];
  x->nrec = k;
}

static void op_sync(ctx_t *x, uint8_t sel) {
  uint32_t s = fuzz_u8(x->r) % x->S, o = fuzz_u8(x->r) % x->S;
  cubert_race_event_t e;
  int idx;
  switch (sel % 7) {
    case 0: (void)do_record(x, s, &e); break;
    case 1: /* release a token (twice, or a stale one, is INVALID_HANDLE) */
      idx = pick_event(x, &e);
      FUZZ_CHECK(cubert__race_event_release(x->rc, e) ==
                 (idx >= 0 ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      if (idx >= 0) x->ev[idx].live = 0;
      break;
    case 2:
      idx = pick_event(x, &e);
      FUZZ_CHECK(cubert__race_stream_wait_event(x->rc, s, e) ==
                 (idx >= 0 ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      if (idx >= 0) {
        join(x->vc[s], x->ev[idx].clock);
        x->open[s] = 0;
      }
      break;
    case 3:
      idx = pick_event(x, &e);
      FUZZ_CHECK(cubert__race_host_wait_event(x->rc, e) ==
                 (idx >= 0 ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      if (idx >= 0) {
        join(x->vc[x->host], x->ev[idx].clock);
        x->open[x->host] = 0;
      }
      break;
    case 4: do_wait_stream(x, s, o); break;
    case 5: do_host_sync(x, s); break;
    default:
      FUZZ_CHECK(cubert__race_host_sync_all(x->rc) == CUBERT_STATUS_OK);
      for (o = 0; o < x->S; o++) join(x->vc[x->host], x->vc[o]);
      x->open[x->host] = 0;
      break;
  }
}

/* Refused calls change nothing. */
static void op_invalid(ctx_t *x, uint8_t sel) {
  uint32_t bad = x->S + (fuzz_u8(x->r) % 3u), t = fuzz_u8(x->r) % (x->S + 1u);
  uint64_t op = 0;
  cubert_race_event_t e;
  if (t == x->S) t = x->host;
  switch (sel % 6) {
    case 0: FUZZ_CHECK(cubert__race_op_begin(x->rc, bad, "bad", &op) == CUBERT_STATUS_INVALID_ARGUMENT); break;
    case 1: FUZZ_CHECK(cubert__race_access(x->rc, 1, bad, 1, CUBERT_RACE_READ, 0, 1) == CUBERT_STATUS_INVALID_ARGUMENT); break;
    case 2: /* an op that is not the open one of t */
      op = x->vc[t][t] + (x->open[t] ? 1u : 0u);
      FUZZ_CHECK(cubert__race_access(x->rc, 1, api_of(x, t), op, CUBERT_RACE_WRITE, 0, 8) ==
                 CUBERT_STATUS_FAILED_PRECONDITION);
      break;
    case 3:
      FUZZ_CHECK(cubert__race_access(x->rc, 0, api_of(x, t), x->vc[t][t], CUBERT_RACE_READ, 0, 1) == CUBERT_STATUS_INVALID_ARGUMENT);
      FUZZ_CHECK(cubert__race_access(x->rc, 1, api_of(x, t), x->vc[t][t], CUBERT_RACE_READ, 9, 8) == CUBERT_STATUS_INVALID_ARGUMENT);
      FUZZ_CHECK(cubert__race_access(x->rc, 1, api_of(x, t), x->vc[t][t], (cubert_race_access_t)3, 0, 8) == CUBERT_STATUS_INVALID_ARGUMENT);
      break;
    case 4:
      FUZZ_CHECK(cubert__race_stream_wait_stream(x->rc, 0, bad) == CUBERT_STATUS_INVALID_ARGUMENT);
      FUZZ_CHECK(cubert__race_host_sync_stream(x->rc, CUBERT_RACE_HOST) == CUBERT_STATUS_INVALID_ARGUMENT);
      FUZZ_CHECK(cubert__race_event_record(x->rc, CUBERT_RACE_HOST, &e) == CUBERT_STATUS_INVALID_ARGUMENT);
      break;
    default:
      FUZZ_CHECK(cubert__race_reclaim(x->rc, 1, bad) == CUBERT_STATUS_INVALID_ARGUMENT);
      FUZZ_CHECK(cubert__race_forget(x->rc, 0) == CUBERT_STATUS_INVALID_ARGUMENT);
      break;
  }
}

/* The checker's clocks are the model's (the lazy host inheritance only
 * skips joins that would change nothing). */
static void check_clocks(const ctx_t *x) {
  uint32_t a, b;
  for (a = 0; a < T; a++)
    for (b = 0; b < T; b++)
      if ((a < x->S || a == x->host) && (b < x->S || b == x->host))
        FUZZ_CHECK(cubert__race_clock(x->rc, api_of(x, a), api_of(x, b)) == x->vc[a][b]);
}

static ctx_t g_ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ctx_t *x = &g_ctx;
  fuzz_reader_t r = fuzz_reader_init(data, size);
  cubert_race_options_t o;
  cubert_allocator_t al;
  cubert_race_counters_t c;
  cubert_error_t err;
  uint8_t mode = 0, fail;
  uint32_t n;
  cubert_status_t st;
  memset(x, 0, sizeof(*x));
  x->r = &r;
  mode = fuzz_u8(&r);
  fail = fuzz_u8(&r);
  x->S = 1u + (mode & 3u);
  x->host = x->S;
  x->report_all = (mode >> 2) & 1;
  x->synchronized = (mode >> 3) & 1;
  al = fuzz_alloc_init(&x->fa);
  cubert__race_options_initialize(&o);
  o.max_streams = x->S;
  o.flags = x->report_all ? CUBERT_RACE_FLAG_REPORT_ALL : 0;
  o.sink.vtable = &g_sink;
  o.sink.self = x;
  fuzz_alloc_fail_at(&x->fa, fail & 0x1Fu, (int)(fail >> 7));
  st = cubert__race_checker_create(al, &o, &x->rc, &err);
  if (st != CUBERT_STATUS_OK) { /* nothing leaked; the next create succeeds */
    FUZZ_CHECK(st == CUBERT_STATUS_RESOURCE_EXHAUSTED && err.status == st && x->rc == NULL);
    FUZZ_CHECK(fuzz_alloc_balanced(&x->fa));
    fuzz_alloc_fail_at(&x->fa, 0, 0);
    FUZZ_CHECK(cubert__race_checker_create(al, &o, &x->rc, &err) == CUBERT_STATUS_OK);
  }
  for (n = 0; n < MAX_OPS && !fuzz_reader_done(&r); n++) {
    uint8_t op = fuzz_u8(&r);
    switch (op % 10u) {
      case 0: case 1: case 2: case 3: op_kernel(x, fuzz_u8(&r)); break;
      case 4: case 5: op_sync(x, fuzz_u8(&r)); break;
      case 6: op_reclaim(x, fuzz_u8(&r)); break;
      case 7: op_invalid(x, fuzz_u8(&r)); break;
      case 8: { /* forget */
        uint64_t b = 1u + (fuzz_u8(&r) % NBUF);
        uint32_t i, k;
        FUZZ_CHECK(cubert__race_forget(x->rc, b) == CUBERT_STATUS_OK);
        for (i = 0, k = 0; i < x->nrec; i++)
          if (x->rec[i].buffer != b) x->rec[k++] = x->rec[i];
        x->nrec = k;
        break;
      }
      default:
        if (op == 0xF9) { /* reset: a fresh checker, tokens dead */
          uint32_t i;
          cubert__race_checker_reset(x->rc);
          memset(x->vc, 0, sizeof x->vc);
          memset(x->open, 0, sizeof x->open);
          x->nrec = 0;
          for (i = 0; i < x->nev; i++) x->ev[i].live = 0;
          x->total_reports = 0;
        } else {
          check_clocks(x);
        }
        break;
    }
  }
  cubert__race_counters(x->rc, &c);
  FUZZ_CHECK(c.reports == x->total_reports);
  if (x->synchronized) FUZZ_CHECK(c.reports == 0);
  cubert__race_checker_destroy(x->rc);
  FUZZ_CHECK(fuzz_alloc_balanced(&x->fa));
  return 0;
}
