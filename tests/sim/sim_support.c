/* SPDX-License-Identifier: MIT */
/* tests/sim/sim_support.c: see sim_support.h. */
#include "sim_support.h"
#include "cubert_kernels.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

CUBERT_KERNEL_DESCRIPTOR(sim_add_kernel, ck_add_scalar_u32, 1, 1, 0, SIM_N, 1, 1);
CUBERT_KERNEL_DESCRIPTOR_RO(sim_copy_kernel, ck_copy_u32, 2, 0, 0, SIM_N, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(sim_mix_kernel, ck_mix_u32, 2, 0, 0, SIM_N, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(sim_sum_kernel, ck_sum_u32, 3, 0, 0, SIM_N, 1, 1, 0x3u);

void sim_env_open(sim_env_t *env, const sim_config_t *config) {
  cubert_cpu_options_t o;
  cubert_server_faults_t faults;
  cubert_error_t err;
  char msg[256];
  int i;
  memset(env, 0, sizeof(*env));
#if defined(__GLIBC__)
  /* thousands of short-lived devices per test: keep freed memory in the heap
   * instead of trimming it back to the kernel after every run */
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
#endif
  env->allocator = counting_allocator_initialize(&env->counting);
  cubert_cpu_options_initialize(&o);
  o.device.max_streams = 8;
  o.workers = 2;
  o.device.max_handles = 1u << 12;
  o.device.memory_size = 1u << 16; /* small pages: each run zero-fills less */
  o.mode = config->mode;
  o.seed = config->seed;
  o.device.race_check = config->race;
  faults.drop_wait = config->drop_wait;
  faults.drop_gc_wait = config->drop_gc_wait;
  faults.fail_launch = 0; /* no run-time faults here */
  faults.fail_copy = 0;
  faults.fail_kernel = NULL;
  o.replay = config->replay;
  o.replay_count = config->replay_count;
  o.log_capacity = 4096;
  o.device.race_sink = config->sink;
  o.device.faults = &faults;
  env->mode = config->mode;
  env->seed = config->seed;
  if (cubert_cpu_client_create(env->allocator, &o, &env->client, &err) !=
      CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "sim_env_open: %s", msg);
  }
  for (i = 0; i < SIM_STREAMS; i++) {
    CHECK_OK(cubert_client_clone(env->client, &env->s[i], NULL));
    cubert_client_set_stream(env->s[i], (uint64_t)i + 1);
  }
}

void sim_env_close(sim_env_t *env) {
  int i;
  for (i = 0; i < SIM_STREAMS; i++) cubert_client_release(env->s[i]);
  cubert_client_release(env->client);
  CHECK_MSG(env->counting.live_blocks == 0, "leaked %lld blocks", (long long)env->counting.live_blocks);
  CHECK_EQ_U64(env->counting.bad_frees, 0);
  counting_allocator_destroy(&env->counting);
}

uint64_t sim_env_reports(sim_env_t *env) {
  cubert_race_counters_t c;
  CHECK_OK(cubert_cpu_race_counters(env->client, &c, NULL));
  return c.reports;
}

cubert_cpu_sim_info_t sim_env_info(sim_env_t *env) {
  cubert_cpu_sim_info_t info;
  CHECK_OK(cubert_cpu_sim_info(env->client, &info, NULL));
  return info;
}

void sim_print_run(sim_env_t *env, const char *what) {
  cubert_cpu_sim_info_t info = sim_env_info(env);
  size_t i;
  fprintf(stderr, "%s: mode %s seed %llu trace 0x%016llx steps %llu choices %llu log [", what,
          info.deterministic ? "deterministic" : "threaded", (unsigned long long)env->seed,
          (unsigned long long)info.trace_hash, (unsigned long long)info.steps,
          (unsigned long long)info.choices);
  for (i = 0; i < info.log_len; i++) fprintf(stderr, "%s%u", i ? "," : "", info.log[i]);
  fprintf(stderr, "]%s\n", info.log_truncated ? " (truncated)" : "");
}

cubert_handle_t sim_create(cubert_client_t *c, uint32_t base) {
  uint32_t data[SIM_N], i;
  cubert_handle_t h;
  for (i = 0; i < SIM_N; i++) data[i] = base + i;
  CHECK_OK(cubert_client_create_from_slice(c, data, sizeof data, &h, NULL));
  return h;
}

cubert_handle_t sim_empty(cubert_client_t *c) {
  cubert_handle_t h;
  CHECK_OK(cubert_client_empty(c, SIM_N * 4, &h, NULL));
  return h;
}

static void launch(cubert_client_t *c, const cubert_kernel_t *k, const cubert_binding_t *b,
                   uint32_t nb, const uint64_t *scalars, uint32_t ns) {
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = scalars;
  a.scalar_count = ns;
  CHECK_OK(cubert_client_launch(c, k, &count, &a, NULL));
}

void sim_add(cubert_client_t *c, const cubert_handle_t *h, uint32_t delta) {
  uint64_t d = delta;
  launch(c, &sim_add_kernel, h, 1, &d, 1);
}

void sim_copy(cubert_client_t *c, const cubert_handle_t *src, const cubert_handle_t *dst) {
  cubert_binding_t b[2];
  b[0] = *src;
  b[1] = *dst;
  launch(c, &sim_copy_kernel, b, 2, NULL, 0);
}

void sim_mix(cubert_client_t *c, const cubert_handle_t *src, const cubert_handle_t *dst) {
  cubert_binding_t b[2];
  b[0] = *src;
  b[1] = *dst;
  launch(c, &sim_mix_kernel, b, 2, NULL, 0);
}

void sim_sum(cubert_client_t *c, const cubert_handle_t *a, const cubert_handle_t *b2,
             const cubert_handle_t *dst) {
  cubert_binding_t b[3];
  b[0] = *a;
  b[1] = *b2;
  b[2] = *dst;
  launch(c, &sim_sum_kernel, b, 3, NULL, 0);
}

void sim_sync(cubert_client_t *c) { CHECK_OK(cubert_client_sync(c, NULL)); }

void sim_read(cubert_client_t *c, const cubert_handle_t *h, uint32_t *out) {
  CHECK_OK(cubert_client_read_one(c, h, out, SIM_N * 4, NULL));
}

void sim_write(cubert_client_t *c, const cubert_handle_t *h, uint32_t base) {
  uint32_t data[SIM_N], i;
  for (i = 0; i < SIM_N; i++) data[i] = base + i;
  CHECK_OK(cubert_client_write(c, h, data, sizeof data, NULL));
}

void sim_release(cubert_client_t *c, const cubert_handle_t *h) {
  CHECK_OK(cubert_client_handle_release(c, h, NULL));
}

const cubert_kernel_t *sim_add_kernel_ptr(void) { return &sim_add_kernel; }

const cubert_kernel_t *sim_copy_kernel_ptr(void) { return &sim_copy_kernel; }
