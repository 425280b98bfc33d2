/* SPDX-License-Identifier: MIT */
/*
 * cubert/sim.h: the choice point of deterministic simulation
 * (docs/simulation.md).
 *
 * A deterministic server makes every scheduling decision through one
 * chooser: cubert_sim_choose(chooser, n, ids) (cubert/driver/sim.h, the
 * server's side) returns which of n runnable steps runs next. A user makes
 * choosers here and attaches them to a deterministic device
 * (cubert_cpu_sim_attach, cubert/cpu.h). Where the answer comes from is the
 * chooser's source:
 *   SEED     a seeded PRNG (splitmix64, fully specified: the same seed gives
 *            the same choices on any machine);
 *   REPLAY   a recorded choice log (after its end: choice 0);
 *   BYTES    raw bytes, one per choice (byte mod n; after the end: 0), for
 *            fuzzers;
 *   PCT      probabilistic concurrency testing (Burckhardt et al.): random
 *            priorities per step identity, depth-1 priority change points;
 *   EXPLORE  exhaustive depth-first enumeration driven by an explorer
 *            (cubert_sim_explorer_t): run the scenario, call
 *            cubert_sim_explorer_next, repeat until it returns false.
 * Every choice with n >= 2 is appended to the caller's log buffer (the
 * replay log of the run) and every choice and step is folded into a 64-bit
 * trace hash (FNV-1a over little-endian bytes): the same choices and steps
 * give the same hash on any machine. A choice with n < 2 is no choice: it
 * returns 0 and records nothing.
 *
 * Freestanding, no allocation: logs and explorer stacks are caller storage.
 * Not thread-safe: one chooser is driven by one thread at a time (the
 * server's simulation lock). Nothing blocks.
 *
 * Compiled out (CUBERT_CONFIG_SIMULATION 0, cubert/config.h): the
 * initializers return UNSUPPORTED with a COMPILED_OUT record (the object
 * untouched), cubert_sim_choose
 * returns 0, cubert_sim_trace does nothing, cubert_sim_explorer_next returns
 * false and cubert_sim_shrink returns count; cubert_sim_splitmix64 stays.
 */
#ifndef CUBERT_SIM_H
#define CUBERT_SIM_H

#include "cubert/config.h"
#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

typedef enum cubert_sim_source_e {
  CUBERT_SIM_SOURCE_SEED = 1,
  CUBERT_SIM_SOURCE_REPLAY = 2,
  CUBERT_SIM_SOURCE_BYTES = 3,
  CUBERT_SIM_SOURCE_PCT = 4,
  CUBERT_SIM_SOURCE_EXPLORE = 5,
  CUBERT_SIM_SOURCE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_sim_source_t;

/* PCT: most change points (depth - 1), priority table size (ids are taken
 * mod this). */
#define CUBERT_SIM_PCT_MAX_DEPTH 8u
#define CUBERT_SIM_PCT_IDS 64u

/* Exhaustive DFS state over a choice stack in caller storage. */
typedef struct cubert_sim_explorer_t {
  uint32_t *choice;  /* choice[i]: the choice taken at depth i */
  uint32_t *arity;   /* arity[i]: how many steps were runnable there */
  uint32_t capacity; /* entries of both arrays */
  uint32_t depth;    /* choice points of the current path */
  uint32_t cursor;   /* choice points consumed in the current run */
  bool overflow;     /* a run had more choice points than capacity */
  bool mismatch;     /* a replayed prefix met a different arity */
  uint64_t runs;     /* completed runs (cubert_sim_explorer_next calls) */
} cubert_sim_explorer_t;

/* All fields are read-only for the user; initialize with an init function. */
typedef struct cubert_sim_chooser_t {
  uint32_t source; /* cubert_sim_source_t */
  uint64_t seed;
  uint64_t rng; /* splitmix64 state */
  const uint32_t *replay;
  size_t replay_len;
  const uint8_t *bytes;
  size_t bytes_len;
  size_t position;    /* replay / bytes entries consumed */
  uint32_t *log;      /* caller storage, may be NULL */
  size_t log_capacity;
  size_t log_len;     /* choices recorded (never above log_capacity) */
  bool log_truncated; /* a choice did not fit the log */
  bool diverged;      /* a replayed choice was >= n (it was taken mod n) */
  uint64_t choices;   /* choice points with n >= 2 */
  uint64_t steps;     /* cubert_sim_trace calls */
  uint64_t trace_hash;
  /* PCT */
  uint32_t pct_depth;
  uint64_t pct_change[CUBERT_SIM_PCT_MAX_DEPTH];
  uint32_t pct_priority[CUBERT_SIM_PCT_IDS]; /* 0: not assigned yet */
  /* EXPLORE */
  cubert_sim_explorer_t *explorer;
} cubert_sim_chooser_t;

/* Initializers. `log` (may be NULL when log_capacity is 0) receives every
 * choice; it must stay valid while the chooser is used. INVALID_ARGUMENT
 * (NULL chooser; NULL log with capacity > 0; NULL replay / bytes with a
 * non-zero length; PCT depth 0 or above CUBERT_SIM_PCT_MAX_DEPTH or
 * steps_hint 0; NULL explorer), with kind INVALID_ARGUMENT and a reason in
 * *out_error (may be NULL). On failure the chooser is untouched. */
CUBERT_API cubert_status_t cubert_sim_chooser_initialize_seed(cubert_sim_chooser_t *chooser,
                                                              uint64_t seed, uint32_t *log,
                                                              size_t log_capacity,
                                                              cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_sim_chooser_initialize_replay(cubert_sim_chooser_t *chooser,
                                                                const uint32_t *choices,
                                                                size_t count, uint32_t *log,
                                                                size_t log_capacity,
                                                                cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_sim_chooser_initialize_bytes(cubert_sim_chooser_t *chooser,
                                                               const uint8_t *bytes, size_t count,
                                                               uint32_t *log, size_t log_capacity,
                                                               cubert_error_t *out_error);
/* PCT of depth d: d - 1 priority change points drawn in [1, steps_hint]
 * (the expected number of choice points). */
CUBERT_API cubert_status_t cubert_sim_chooser_initialize_pct(cubert_sim_chooser_t *chooser,
                                                             uint64_t seed, uint32_t depth,
                                                             uint64_t steps_hint, uint32_t *log,
                                                             size_t log_capacity,
                                                             cubert_error_t *out_error);
/* One run of an exhaustive exploration: follows the explorer's current path,
 * then takes choice 0 at every new choice point (pushing it). */
CUBERT_API cubert_status_t cubert_sim_chooser_initialize_explore(cubert_sim_chooser_t *chooser,
                                                                 cubert_sim_explorer_t *explorer,
                                                                 uint32_t *log,
                                                                 size_t log_capacity,
                                                                 cubert_error_t *out_error);

/* The splitmix64 generator (next value, state advanced): exposed so that
 * program generators share one machine-independent definition. */
CUBERT_API uint64_t cubert_sim_splitmix64(uint64_t *state);

/* ---- exhaustive exploration ------------------------------------------------ */

/* Start an exploration over caller storage of `capacity` entries per array.
 * INVALID_ARGUMENT (NULL explorer or arrays, capacity 0; kind
 * INVALID_ARGUMENT with a reason in *out_error, may be NULL). */
CUBERT_API cubert_status_t cubert_sim_explorer_initialize(cubert_sim_explorer_t *explorer,
                                                          uint32_t *choice, uint32_t *arity,
                                                          uint32_t capacity,
                                                          cubert_error_t *out_error);

/* After a run: count it, move to the next unexplored path. False when every
 * path was run (or on overflow / mismatch, which the caller must check). */
CUBERT_API bool cubert_sim_explorer_next(cubert_sim_explorer_t *explorer);

/* ---- shrinking ----------------------------------------------------------------- */

/* Predicate: true when the run driven by the replay log choices[0..count)
 * still fails. */
typedef bool (*cubert_sim_fails_fn_t)(void *user, const uint32_t *choices, size_t count);

/* Reduce a failing log in place: removes chunks (halves, quarters, ... single
 * choices) and then lowers choices to 0 while `fails` stays true. Returns the
 * new length (the log still fails when the input did; a log for which fails
 * is false is returned unchanged). scratch must hold `count` entries.
 * Returns count unchanged for NULL arguments. Calls fails O(count log count)
 * times and more. */
CUBERT_API size_t cubert_sim_shrink(uint32_t *choices, size_t count, uint32_t *scratch,
                                    cubert_sim_fails_fn_t fails, void *user);

CUBERT_EXTERN_C_END

#endif /* CUBERT_SIM_H */
