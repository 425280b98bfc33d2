/* tests/cts/cts.c: the backend under test for the conformance suite. */
#include "cts.h"

#include "cubert/cpu.h"

void cts_setup(cts_env_t *env, uint32_t device_index) {
  cubert_cpu_options_t options;
  cubert_error_t err;
  char msg[256];
  cubert_status_t status;
  memset(env, 0, sizeof(*env));
  env->allocator = counting_allocator_init(&env->counting);
  cubert_cpu_options_initialize(&options);
  options.device_index = device_index;
  options.max_streams = 8;
  options.workers = 2;
  status = cubert_cpu_client_create(env->allocator, &options, &env->client, &err);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "cts_setup: cannot create the CPU device: %s", msg);
  }
}

void cts_teardown(cts_env_t *env) {
  cubert_client_release(env->client);
  env->client = NULL;
  CHECK_MSG(env->counting.live_blocks == 0, "leaked %lld blocks (%lld bytes)",
            (long long)env->counting.live_blocks, (long long)env->counting.live_bytes);
  CHECK_EQ_U64(env->counting.bad_frees, 0);
  counting_allocator_destroy(&env->counting);
}
