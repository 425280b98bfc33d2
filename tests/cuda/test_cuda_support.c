/* SPDX-License-Identifier: MIT */
/* tests/cuda/test_cuda_support.c: helpers of cuda_test.h (no tests here). */
#include "cuda_test.h"

void fake_knob(const char *name, const char *value) {
  CHECK(setenv(name, value, 1) == 0);
}

fake_cuda_stats_t fake_stats(const cubert_cuda_loader_t *cu) {
  fake_cuda_stats_t s;
  void *sym = cubert__cuda_loader_symbol(cu, "cubert_fake_cuda_stats");
  fake_cuda_stats_fn fn;
  CHECK_MSG(sym != NULL, "the loaded library is not the fake driver");
  memcpy(&fn, &sym, sizeof sym);
  fn(&s);
  return s;
}

void fake_env_open(fake_env_t *env) {
  cubert_error_t err;
  memset(env, 0, sizeof *env);
  env->allocator = counting_allocator_initialize(&env->counting);
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &env->cu, &err));
  CHECK_OK(cubert__cuda_device_open(&env->cu, 0, env->allocator, &env->device, &err));
  CHECK_OK(cubert__cuda_stream_initialize(env->device, &env->stream, &err));
}

void fake_env_close(fake_env_t *env) {
  fake_cuda_stats_t s;
  cubert__cuda_stream_deinitialize(&env->stream);
  cubert__cuda_device_close(env->device);
  env->device = NULL;
  s = fake_stats(&env->cu);
  CHECK_EQ_I64(s.device_allocs_live, 0);
  CHECK_EQ_I64(s.host_bytes_live, 0);
  CHECK_EQ_U64(s.events_created, s.events_destroyed);
  CHECK_EQ_U64(s.streams_created, s.streams_destroyed);
  CHECK_EQ_U64(s.module_loads, s.module_unloads);
  CHECK_EQ_I64(s.contexts_retained, 0);
  cubert__cuda_loader_close(&env->cu);
  CHECK(env->cu.library == NULL);
  CHECK_EQ_I64(env->counting.live_blocks, 0);
  CHECK_EQ_U64(env->counting.bad_frees, 0);
  counting_allocator_destroy(&env->counting);
}

cubert_kernel_t fake_kernel(const char *entry, const char *image, uint32_t dim_x,
                            uint32_t buffers, uint32_t scalars) {
  cubert_kernel_t k;
  memset(&k, 0, sizeof k);
  k.name = entry;
  k.cuda_entry_name = entry;
  k.cuda_image = image;
  k.cuda_image_size = image ? strlen(image) + 1 : 0;
  k.cube_dim.x = dim_x;
  k.cube_dim.y = 1;
  k.cube_dim.z = 1;
  k.buffer_count = buffers;
  k.scalar_count = scalars;
  return k;
}
