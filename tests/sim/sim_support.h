/* SPDX-License-Identifier: MIT */
/* tests/sim/sim_support.h: shared pieces of the simulation tests: a CPU
 * device in either mode with stream-pinned clones, small kernels, and the
 * failure printer (seed + choice log). */
#ifndef CUBERT_TESTS_SIM_SUPPORT_H
#define CUBERT_TESTS_SIM_SUPPORT_H

#include "test.h"
#include "counting_allocator.h"
#include "server/server_faults.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"

/* Elements per buffer (one cube). */
#define SIM_N 64u
#define SIM_STREAMS 4

/* Sanitizer builds (make asan / tsan) run fewer seeds; the tests print what ran. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SIM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SIM_SANITIZED 1
#endif
#endif
#ifndef SIM_SANITIZED
#define SIM_SANITIZED 0
#endif
#if defined(__SANITIZE_THREAD__)
#define SIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIM_TSAN 1
#endif
#endif
#ifndef SIM_TSAN
#define SIM_TSAN 0
#endif

typedef struct sim_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_client_t *client;
  cubert_client_t *s[SIM_STREAMS]; /* clones on stream ids 1..SIM_STREAMS */
  uint32_t mode;
  uint64_t seed;
} sim_env_t;

typedef struct sim_config_t {
  uint32_t mode;       /* cubert_cpu_mode_t */
  uint64_t seed;
  uint32_t race;       /* race checker on */
  uint32_t drop_wait;    /* cubert_server_faults_t.drop_wait (core/server/server_faults.h) */
  uint32_t drop_gc_wait; /* cubert_server_faults_t.drop_gc_wait */
  const uint32_t *replay;
  size_t replay_count;
  cubert_race_sink_t sink; /* NULL vtable: none */
} sim_config_t;

void sim_env_open(sim_env_t *env, const sim_config_t *config);
/* Release clones and client; checks 0 leaked blocks. */
void sim_env_close(sim_env_t *env);
uint64_t sim_env_reports(sim_env_t *env);
cubert_cpu_sim_info_t sim_env_info(sim_env_t *env);
/* Print the seed, trace hash and choice log of a deterministic run (stderr). */
void sim_print_run(sim_env_t *env, const char *what);

/* Program steps (fail the test on an unexpected error). */
cubert_handle_t sim_create(cubert_client_t *c, uint32_t base);
cubert_handle_t sim_empty(cubert_client_t *c);
void sim_add(cubert_client_t *c, const cubert_handle_t *h, uint32_t delta);
void sim_copy(cubert_client_t *c, const cubert_handle_t *src, const cubert_handle_t *dst);
void sim_mix(cubert_client_t *c, const cubert_handle_t *src, const cubert_handle_t *dst);
void sim_sum(cubert_client_t *c, const cubert_handle_t *a, const cubert_handle_t *b,
             const cubert_handle_t *dst);
void sim_sync(cubert_client_t *c);
void sim_read(cubert_client_t *c, const cubert_handle_t *h, uint32_t *out);
void sim_write(cubert_client_t *c, const cubert_handle_t *h, uint32_t base);
void sim_release(cubert_client_t *c, const cubert_handle_t *h);
/* The sim_add kernel (buffer 0 += scalar 0), for custom launches. */
const cubert_kernel_t *sim_add_kernel_ptr(void);
/* The sim_copy kernel (buffer 1 = buffer 0). */
const cubert_kernel_t *sim_copy_kernel_ptr(void);

#endif
