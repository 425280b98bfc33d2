/* SPDX-License-Identifier: MIT */
/*
 * core/check/sim.c: the deterministic simulation's choice point (cubert/sim.h, cubert/driver/sim.h):
 * choosers (seed, replay, bytes, PCT, exhaustive), the trace hash, the
 * exhaustive explorer and the log shrinker. Freestanding, no allocation.
 */
#include "base/internal.h"
#include "cubert/sim.h"
#include "cubert/driver/sim.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* Kept when the simulation is compiled out: program generators share it. */
uint64_t cubert_sim_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#if CUBERT_CONFIG_SIMULATION /* else sim_omitted.c (cubert/config.h) */

/* 0..n-1 from a 64-bit draw: multiply-shift on the high 32 bits (exact on
 * every machine). */
static uint32_t draw_below(uint64_t *state, uint32_t n) {
  uint64_t hi = cubert_sim_splitmix64(state) >> 32;
  return (uint32_t)((hi * (uint64_t)n) >> 32);
}

static uint64_t fold_u64(uint64_t h, uint64_t v) {
  unsigned i;
  for (i = 0; i < 8; i++) {
    h ^= (v >> (8 * i)) & 0xFFu;
    h *= FNV_PRIME;
  }
  return h;
}

static void chooser_base(cubert_sim_chooser_t *c, uint32_t source, uint32_t *log, size_t cap) {
  cubert_memset(c, 0, sizeof(*c));
  c->source = source;
  c->log = log;
  c->log_capacity = cap;
  c->trace_hash = FNV_OFFSET;
}

/* The checks every chooser initializer makes, with their records. */
static cubert_status_t check_chooser(const cubert_sim_chooser_t *c, const uint32_t *log,
                                     size_t cap, cubert_error_t *out_error) {
  if (!c) return cubert__invalid_argument(out_error, "sim chooser: chooser is NULL");
  if (!log && cap)
    return cubert__invalid_argument(out_error, "sim chooser: log is NULL, log_capacity is not 0");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_sim_chooser_initialize_seed(cubert_sim_chooser_t *c, uint64_t seed,
                                                   uint32_t *log, size_t cap,
                                                   cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(check_chooser(c, log, cap, out_error));
  chooser_base(c, CUBERT_SIM_SOURCE_SEED, log, cap);
  c->seed = seed;
  c->rng = seed;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_sim_chooser_initialize_replay(cubert_sim_chooser_t *c,
                                                     const uint32_t *choices, size_t count,
                                                     uint32_t *log, size_t cap,
                                                     cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(check_chooser(c, log, cap, out_error));
  if (!choices && count)
    return cubert__invalid_argument(out_error, "sim chooser: choices is NULL, count is not 0");
  chooser_base(c, CUBERT_SIM_SOURCE_REPLAY, log, cap);
  c->replay = choices;
  c->replay_len = count;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_sim_chooser_initialize_bytes(cubert_sim_chooser_t *c,
                                                    const uint8_t *bytes, size_t count,
                                                    uint32_t *log, size_t cap,
                                                    cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(check_chooser(c, log, cap, out_error));
  if (!bytes && count)
    return cubert__invalid_argument(out_error, "sim chooser: bytes is NULL, count is not 0");
  chooser_base(c, CUBERT_SIM_SOURCE_BYTES, log, cap);
  c->bytes = bytes;
  c->bytes_len = count;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_sim_chooser_initialize_pct(cubert_sim_chooser_t *c, uint64_t seed,
                                                  uint32_t depth, uint64_t steps_hint,
                                                  uint32_t *log, size_t cap,
                                                  cubert_error_t *out_error) {
  uint32_t i;
  CUBERT_RETURN_IF_ERROR(check_chooser(c, log, cap, out_error));
  if (depth == 0 || depth > CUBERT_SIM_PCT_MAX_DEPTH)
    return cubert__invalid_argument(out_error,
                                    "sim chooser: PCT depth is 0 or above CUBERT_SIM_PCT_MAX_DEPTH");
  if (steps_hint == 0) return cubert__invalid_argument(out_error, "sim chooser: steps_hint is 0");
  chooser_base(c, CUBERT_SIM_SOURCE_PCT, log, cap);
  c->seed = seed;
  c->rng = seed;
  c->pct_depth = depth;
  for (i = 0; i + 1 < depth; i++) {
    uint64_t hi = cubert_sim_splitmix64(&c->rng);
    c->pct_change[i] = 1 + hi % steps_hint;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_sim_chooser_initialize_explore(cubert_sim_chooser_t *c,
                                                      cubert_sim_explorer_t *explorer,
                                                      uint32_t *log, size_t cap,
                                                      cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(check_chooser(c, log, cap, out_error));
  if (!explorer) return cubert__invalid_argument(out_error, "sim chooser: explorer is NULL");
  chooser_base(c, CUBERT_SIM_SOURCE_EXPLORE, log, cap);
  c->explorer = explorer;
  explorer->cursor = 0;
  return CUBERT_STATUS_OK;
}

static uint32_t pct_choose(cubert_sim_chooser_t *c, uint32_t n, const uint32_t *ids) {
  uint32_t i, best = 0, best_priority = 0, j;
  for (i = 0; i < n; i++) {
    uint32_t id = (ids ? ids[i] : i) % CUBERT_SIM_PCT_IDS;
    if (c->pct_priority[id] == 0) /* first sight: a random priority above every change point */
      c->pct_priority[id] = c->pct_depth + 1 + draw_below(&c->rng, 1u << 20);
    if (c->pct_priority[id] > best_priority) {
      best_priority = c->pct_priority[id];
      best = i;
    }
  }
  /* change point k (1-based step numbers): the step that ran drops to priority k */
  for (j = 0; j + 1 < c->pct_depth; j++)
    if (c->pct_change[j] == c->choices + 1)
      c->pct_priority[(ids ? ids[best] : best) % CUBERT_SIM_PCT_IDS] = j + 1;
  return best;
}

static uint32_t explore_choose(cubert_sim_chooser_t *c, uint32_t n) {
  cubert_sim_explorer_t *e = c->explorer;
  uint32_t k = e->cursor++;
  if (k < e->depth) {
    if (e->arity[k] != n) {
      e->mismatch = true;
      return e->choice[k] < n ? e->choice[k] : 0;
    }
    return e->choice[k];
  }
  if (k >= e->capacity) {
    e->overflow = true;
    return 0;
  }
  e->choice[k] = 0;
  e->arity[k] = n;
  e->depth = k + 1;
  return 0;
}

uint32_t cubert_sim_choose(cubert_sim_chooser_t *c, uint32_t n, const uint32_t *ids) {
  uint32_t r = 0;
  if (!c || n < 2) return 0;
  switch (c->source) {
    case CUBERT_SIM_SOURCE_SEED:
      r = draw_below(&c->rng, n);
      break;
    case CUBERT_SIM_SOURCE_REPLAY:
      if (c->position < c->replay_len) {
        r = c->replay[c->position++];
        if (r >= n) {
          c->diverged = true;
          r %= n;
        }
      }
      break;
    case CUBERT_SIM_SOURCE_BYTES:
      if (c->position < c->bytes_len) r = (uint32_t)c->bytes[c->position++] % n;
      break;
    case CUBERT_SIM_SOURCE_PCT:
      r = pct_choose(c, n, ids);
      break;
    case CUBERT_SIM_SOURCE_EXPLORE:
      r = explore_choose(c, n);
      break;
    default:
      r = 0;
      break;
  }
  c->choices++;
  if (c->log_len < c->log_capacity)
    c->log[c->log_len++] = r;
  else
    c->log_truncated = true;
  c->trace_hash = fold_u64(fold_u64(c->trace_hash, 0xC0DEull << 32 | n), r);
  return r;
}

void cubert_sim_trace(cubert_sim_chooser_t *c, uint32_t kind, uint32_t id, uint64_t seq) {
  if (!c) return;
  c->steps++;
  c->trace_hash = fold_u64(fold_u64(c->trace_hash, (uint64_t)kind << 32 | id), seq);
}

cubert_status_t cubert_sim_explorer_initialize(cubert_sim_explorer_t *e, uint32_t *choice,
                                               uint32_t *arity, uint32_t capacity,
                                               cubert_error_t *out_error) {
  if (!e) return cubert__invalid_argument(out_error, "cubert_sim_explorer_initialize: explorer is NULL");
  if (!choice || !arity)
    return cubert__invalid_argument(out_error,
                                    "cubert_sim_explorer_initialize: choice or arity is NULL");
  if (capacity == 0)
    return cubert__invalid_argument(out_error, "cubert_sim_explorer_initialize: capacity is 0");
  cubert_memset(e, 0, sizeof(*e));
  e->choice = choice;
  e->arity = arity;
  e->capacity = capacity;
  return CUBERT_STATUS_OK;
}

bool cubert_sim_explorer_next(cubert_sim_explorer_t *e) {
  if (!e) return false;
  e->runs++;
  if (e->overflow || e->mismatch) return false;
  /* a run that stopped early leaves deeper entries of an older path: drop them */
  if (e->cursor < e->depth) e->depth = e->cursor;
  while (e->depth > 0 && e->choice[e->depth - 1] + 1 >= e->arity[e->depth - 1]) e->depth--;
  if (e->depth == 0) return false;
  e->choice[e->depth - 1]++;
  e->cursor = 0;
  return true;
}

/* Copy src[0..n) without [from, from + len) into dst; returns the new length. */
static size_t without_chunk(uint32_t *dst, const uint32_t *src, size_t n, size_t from, size_t len) {
  size_t i, w = 0;
  for (i = 0; i < n; i++)
    if (i < from || i >= from + len) dst[w++] = src[i];
  return w;
}

size_t cubert_sim_shrink(uint32_t *choices, size_t count, uint32_t *scratch,
                         cubert_sim_fails_fn_t fails, void *user) {
  size_t chunk, i;
  if (!choices || !scratch || !fails || count == 0) return count;
  if (!fails(user, choices, count)) return count;
  for (chunk = count / 2; chunk >= 1; chunk /= 2) {
    i = 0;
    while (i < count) {
      size_t len = chunk < count - i ? chunk : count - i;
      size_t n = without_chunk(scratch, choices, count, i, len);
      if (fails(user, scratch, n)) {
        cubert_memcpy(choices, scratch, n * sizeof(uint32_t));
        count = n; /* retry the same position */
      } else {
        i += len;
      }
    }
    if (chunk == 1) break;
  }
  for (i = 0; i < count; i++) {
    uint32_t old = choices[i];
    if (old == 0) continue;
    choices[i] = 0;
    if (!fails(user, choices, count)) choices[i] = old;
  }
  /* trailing zeros are implied (a replay takes 0 after the end) */
  while (count > 0 && choices[count - 1] == 0 && fails(user, choices, count - 1)) count--;
  return count;
}

#endif /* CUBERT_CONFIG_SIMULATION */
