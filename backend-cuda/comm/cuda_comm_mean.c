/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_mean.c: all_reduce Mean on CUDA is NCCL's Sum
 * followed by x[i] / n (cubert/comm.h's Mean: the Sum divided by the member
 * count in the type's arithmetic; integers truncate toward zero). NCCL's
 * own ncclAvg is not used: for floats it multiplies every contribution by
 * 1/n before adding (a different rounding), and it needs NCCL 2.10.
 *
 * The kernels are cuda_comm_kernels.h in the portable dialect; their PTX is
 * embedded (cuda_comm_mean_ptx.h, `make comm-mean-ptx`), so the library
 * needs no kernel image of its own at run time. Their CPU entry points are
 * what the fake driver of the tests runs.
 */
#include <string.h>

#include "comm/cuda_comm.h"
#include "comm/cuda_comm_kernels.h"
#include "comm/cuda_comm_mean_ptx.h"

#define MEAN_DESCRIPTOR_(var, fn)                                                         \
  static const cubert_kernel_t var = {#fn, fn, #fn, cuda_comm_mean_ptx, sizeof cuda_comm_mean_ptx, \
                                      0, {CUBERT_COMM_MEAN_BLOCK, 1, 1}, 1, 1, 0, {0}}

MEAN_DESCRIPTOR_(k_mean_f32, cubert_comm_mean_f32);
MEAN_DESCRIPTOR_(k_mean_f64, cubert_comm_mean_f64);
MEAN_DESCRIPTOR_(k_mean_i32, cubert_comm_mean_i32);
MEAN_DESCRIPTOR_(k_mean_i64, cubert_comm_mean_i64);
MEAN_DESCRIPTOR_(k_mean_u32, cubert_comm_mean_u32);
MEAN_DESCRIPTOR_(k_mean_u64, cubert_comm_mean_u64);
MEAN_DESCRIPTOR_(k_mean_i8, cubert_comm_mean_i8);
MEAN_DESCRIPTOR_(k_mean_u8, cubert_comm_mean_u8);

const cubert_kernel_t *cuda_comm_mean_kernel(uint32_t dtype) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32: return &k_mean_f32;
    case CUBERT_COMM_DTYPE_F64: return &k_mean_f64;
    case CUBERT_COMM_DTYPE_I32: return &k_mean_i32;
    case CUBERT_COMM_DTYPE_I64: return &k_mean_i64;
    case CUBERT_COMM_DTYPE_U32: return &k_mean_u32;
    case CUBERT_COMM_DTYPE_U64: return &k_mean_u64;
    case CUBERT_COMM_DTYPE_I8: return &k_mean_i8;
    case CUBERT_COMM_DTYPE_U8: return &k_mean_u8;
    default: return NULL;
  }
}

int cuda_comm_nccl_type(uint32_t dtype) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32: return CUBERT_NCCL_FLOAT32;
    case CUBERT_COMM_DTYPE_F64: return CUBERT_NCCL_FLOAT64;
    case CUBERT_COMM_DTYPE_I32: return CUBERT_NCCL_INT32;
    case CUBERT_COMM_DTYPE_I64: return CUBERT_NCCL_INT64;
    case CUBERT_COMM_DTYPE_U32: return CUBERT_NCCL_UINT32;
    case CUBERT_COMM_DTYPE_U64: return CUBERT_NCCL_UINT64;
    case CUBERT_COMM_DTYPE_I8: return CUBERT_NCCL_INT8;
    case CUBERT_COMM_DTYPE_U8: return CUBERT_NCCL_UINT8;
    default: return -1;
  }
}

cubert_status_t cuda_comm_mean_launch(cubert_cuda_stream_t *stream,
                                      const cubert_cuda_function_t *f, uint32_t dtype,
                                      CUdeviceptr x, uint64_t bytes, uint32_t n,
                                      cubert_error_t *out_error) {
  cubert_kernel_args_t args;
  cubert_dim3_t count;
  uint64_t elems, cubes;
  uint32_t width = cubert_comm_dtype_size(dtype);
  if (!f || width == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                            "all_reduce Mean: no kernel for this dtype");
  elems = bytes / width;
  if (elems == 0 || n <= 1) return CUBERT_STATUS_OK;
  cubes = (elems + CUBERT_COMM_MEAN_BLOCK - 1) / CUBERT_COMM_MEAN_BLOCK;
  if (cubes > 0x7FFFFFFFull)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &bytes, 1,
                            "all_reduce Mean: buffer too large for one launch");
  memset(&args, 0, sizeof args);
  args.buffers[0].ptr = (void *)(uintptr_t)x;
  args.buffers[0].size_bytes = bytes;
  args.scalars[0] = n;
  args.buffer_count = 1;
  args.scalar_count = 1;
  count.x = (uint32_t)cubes;
  count.y = 1;
  count.z = 1;
  return cubert__cuda_launch(stream, f, count, &args, CUBERT_KERNEL_MODE_UNCHECKED, 0, out_error);
}
