/* SPDX-License-Identifier: MIT */
/*
 * core/check/sim_off.c: the simulation's public entry points when it is compiled
 * out (CUBERT_CONFIG_SIMULATION 0, cubert/config.h). No chooser or explorer
 * can be initialized (UNSUPPORTED, the object untouched), cubert_sim_choose
 * always picks step 0, traces are not kept, and shrinking returns the log
 * unchanged. cubert_sim_splitmix64 stays (sim.c).
 */
#include "base/internal.h"
#include "cubert/sim.h"
#include "cubert/driver/sim.h"

#if !CUBERT_CONFIG_SIMULATION

static cubert_status_t sim_off(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "simulation (CUBERT_CONFIG_SIMULATION=0)");
}

cubert_status_t cubert_sim_chooser_initialize_seed(cubert_sim_chooser_t *c, uint64_t seed,
                                                   uint32_t *log, size_t cap,
                                                   cubert_error_t *out_error) {
  (void)c;
  (void)seed;
  (void)log;
  (void)cap;
  return sim_off(out_error);
}

cubert_status_t cubert_sim_chooser_initialize_replay(cubert_sim_chooser_t *c,
                                                     const uint32_t *choices, size_t count,
                                                     uint32_t *log, size_t cap,
                                                     cubert_error_t *out_error) {
  (void)c;
  (void)choices;
  (void)count;
  (void)log;
  (void)cap;
  return sim_off(out_error);
}

cubert_status_t cubert_sim_chooser_initialize_bytes(cubert_sim_chooser_t *c, const uint8_t *bytes,
                                                    size_t count, uint32_t *log, size_t cap,
                                                    cubert_error_t *out_error) {
  (void)c;
  (void)bytes;
  (void)count;
  (void)log;
  (void)cap;
  return sim_off(out_error);
}

cubert_status_t cubert_sim_chooser_initialize_pct(cubert_sim_chooser_t *c, uint64_t seed,
                                                  uint32_t depth, uint64_t steps_hint,
                                                  uint32_t *log, size_t cap,
                                                  cubert_error_t *out_error) {
  (void)c;
  (void)seed;
  (void)depth;
  (void)steps_hint;
  (void)log;
  (void)cap;
  return sim_off(out_error);
}

cubert_status_t cubert_sim_chooser_initialize_explore(cubert_sim_chooser_t *c,
                                                      cubert_sim_explorer_t *explorer,
                                                      uint32_t *log, size_t cap,
                                                      cubert_error_t *out_error) {
  (void)c;
  (void)explorer;
  (void)log;
  (void)cap;
  return sim_off(out_error);
}

uint32_t cubert_sim_choose(cubert_sim_chooser_t *c, uint32_t n, const uint32_t *ids) {
  (void)c;
  (void)n;
  (void)ids;
  return 0;
}

void cubert_sim_trace(cubert_sim_chooser_t *c, uint32_t kind, uint32_t id, uint64_t seq) {
  (void)c;
  (void)kind;
  (void)id;
  (void)seq;
}

cubert_status_t cubert_sim_explorer_initialize(cubert_sim_explorer_t *e, uint32_t *choice,
                                               uint32_t *arity, uint32_t capacity,
                                               cubert_error_t *out_error) {
  (void)e;
  (void)choice;
  (void)arity;
  (void)capacity;
  return sim_off(out_error);
}

bool cubert_sim_explorer_next(cubert_sim_explorer_t *e) {
  (void)e;
  return false;
}

size_t cubert_sim_shrink(uint32_t *choices, size_t count, uint32_t *scratch,
                         cubert_sim_fails_fn_t fails, void *user) {
  (void)choices;
  (void)scratch;
  (void)fails;
  (void)user;
  return count;
}

#endif /* !CUBERT_CONFIG_SIMULATION */
