/* SPDX-License-Identifier: MIT */
/* The race checker's shadow table against a naive model that keeps every
 * access (cubert/race.h, docs/race-checker.md). */
#define TEST_REQUIRES CUBERT_FEATURE_RACE_CHECKER
#include "test_race_fixture.h"
#include "check/race.h"

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
        CHECK_OK(cubert__race_access(f.c, buffer, stream, m.clock[t][t],
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
        if (m.event_live[slot]) CHECK_OK(cubert__race_event_release(f.c, m.tokens[slot]));
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
          CHECK_OK(cubert__race_host_sync_all(f.c));
          for (i = 1; i < DIFF_W; i++) naive_join(m.clock[0], m.clock[i]);
        } else {
          sync_stream(&f, o);
          naive_join(m.clock[0], m.clock[o + 1u]);
        }
        m.open[0] = 0;
      } else if (which < 95) { /* stream waits on stream */
        uint32_t o = (uint32_t)((r >> 40) % DIFF_STREAMS);
        if (t == 0) continue;
        CHECK_OK(cubert__race_stream_wait_stream(f.c, stream, o));
        naive_join(m.clock[t], m.clock[o + 1u]);
        m.open[t] = 0;
      } else { /* reclaim a buffer at the current point of a timeline */
        uint64_t buffer = 1 + ((r >> 16) % 6u), clock[DIFF_W];
        size_t before = f.nreports;
        bool expect;
        memcpy(clock, m.clock[t], sizeof(clock));
        if (t != 0) naive_join(clock, m.clock[0]);
        expect = naive_conflict(&m, buffer, CUBERT_RACE_WRITE, 0, WHOLE, clock);
        CHECK_OK(cubert__race_reclaim(f.c, buffer, stream));
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
        if (m.event_live[slot]) CHECK_OK(cubert__race_event_release(f.c, m.tokens[slot]));
    }
    fx_done(&f);
  }
  /* the programs exercised both outcomes */
  CHECK(checked > 1000);
  CHECK(conflicts > 100);
  CHECK(checked - conflicts > 100);
}
