/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_shape.c: launch-time shapes on the CUDA device layer
 * (cubert__cuda_launch_shaped, over the fake driver): the cube dim and the
 * dynamic shared bytes reach cuLaunchKernel, a dynamic size above 48 KiB
 * raises the function's MAX_DYNAMIC_SHARED_SIZE_BYTES first (the fake
 * refuses the launch otherwise, as a GPU does), and shapes beyond the
 * device's limits are refused with the requested and the maximum value.
 */
#include "cuda_test.h"

#include "cubert_kernels.h"

static const char k_ptx[] = "// fake\n.version 9.0\n.target sm_75\n"
                            ".visible .entry ck_add_scalar_u32(\n)\n{\n}\n";

TEST(cuda_launch_shaped_dim_and_shared_bytes) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("ck_add_scalar_u32", k_ptx, 64, 1, 1);
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  CUdeviceptr buf = 0;
  uint32_t host[100], i;
  cubert_dim3_t grid = {4, 1, 1}, dim = {25, 1, 1}, big = {1025, 1, 1}, deep = {1, 1, 65};
  const cubert_hardware_properties_t *hw;
  fake_cuda_stats_t s;
  fake_env_open(&env);
  hw = &env.device->info.properties.hardware;
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  for (i = 0; i < 100; i++) host[i] = i;
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof host, &buf, &err));
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, buf, host, sizeof host, &err));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, (void *)(uintptr_t)buf, sizeof host);
  cubert_kernel_args_set_u32(&args, 0, 3);
  /* 4 cubes of 25 units (not the descriptor's 64), 60000 bytes of dynamic
   * shared memory: above 48 KiB, so the attribute is raised first */
  CHECK_OK(cubert__cuda_launch_shaped(&env.stream, f, grid, dim, 60000, &args,
                                      CUBERT_KERNEL_MODE_CHECKED, 0, &err));
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, host, buf, sizeof host, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  for (i = 0; i < 100; i++) CHECK_EQ_U64(host[i], i + 3);
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.launches, 1);
  CHECK_EQ_U64(s.block[0], 25);
  CHECK_EQ_U64(s.shared_bytes, 60000);
  CHECK_EQ_U64(f->dynamic_limit, 60000);
  /* a smaller size later needs no new attribute; the default shape still works */
  CHECK_OK(cubert__cuda_launch_shaped(&env.stream, f, grid, dim, 50000, &args,
                                      CUBERT_KERNEL_MODE_CHECKED, 0, &err));
  CHECK_EQ_U64(f->dynamic_limit, 60000);
  CHECK_OK(cubert__cuda_launch(&env.stream, f, grid, &args, CUBERT_KERNEL_MODE_CHECKED, 0, &err));
  CHECK_EQ_U64(fake_stats(&env.cu).block[0], 64);
  CHECK_EQ_U64(fake_stats(&env.cu).shared_bytes, 0);
  /* beyond the device's limits: refused, nothing launched */
  CHECK_STATUS(cubert__cuda_launch_shaped(&env.stream, f, grid, big, 0, &args, 0, 0, &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_CUBE_DIM));
  CHECK_EQ_U64(err.field[0], 1025);
  CHECK_STATUS(cubert__cuda_launch_shaped(&env.stream, f, grid, deep, 0, &args, 0, 0, &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_CUBE_DIM));
  CHECK_STATUS(cubert__cuda_launch_shaped(&env.stream, f, grid, dim,
                                          (uint32_t)hw->max_shared_memory_size + 1u, &args, 0, 0,
                                          &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_RESOURCE_SHARED_MEMORY));
  CHECK_STATUS(cubert__cuda_launch_shaped(&env.stream, NULL, grid, dim, 0, &args, 0, 0, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(fake_stats(&env.cu).launches, 3);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, buf, &err));
  fake_env_close(&env);
}
