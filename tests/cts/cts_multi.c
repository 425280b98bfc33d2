/* tests/cts/cts_multi.c: several CPU devices in one test process. */
#include "cts_multi.h"

#include <time.h>

#include "cubert/cpu.h"
#include "host/host_comm.h"

void mdev_create(cts_env_t *env, uint32_t index, uint32_t collective_timeout_ms) {
  cubert_cpu_options_t options;
  cubert_error_t err;
  char msg[256];
  memset(env, 0, sizeof(*env));
  env->allocator = counting_allocator_init(&env->counting);
  cubert_cpu_options_initialize(&options);
  options.device_index = index;
  options.max_streams = 8;
  options.workers = 2;
  options.collective_timeout_ms = collective_timeout_ms;
  if (cubert_cpu_client_create(env->allocator, &options, &env->client, &err) != CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "mdev_create: cannot create CPU device %u: %s", index, msg);
  }
}

void mdev_setup(mdev_t *m, uint32_t n, uint32_t first_index, uint32_t collective_timeout_ms) {
  uint32_t i;
  CHECK(n <= MDEV_MAX);
  memset(m, 0, sizeof(*m));
  m->n = n;
  for (i = 0; i < n; i++) {
    mdev_create(&m->env[i], first_index + i, collective_timeout_ms);
    m->ids[i] = cubert_client_device(m->env[i].client);
  }
}

void mdev_teardown(mdev_t *m) {
  uint32_t i;
  for (i = 0; i < m->n; i++)
    if (m->env[i].client) cts_teardown(&m->env[i]);
  CHECK_EQ_U64(mdev_live_communicators(), 0);
}

uint32_t mdev_live_communicators(void) { return host_comm_live(); }

uint64_t mdev_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int mdev_inner_kind(const cubert_error_t *err) { return (int)cubert_error_kind(err); }
