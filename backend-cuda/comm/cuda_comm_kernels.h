/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_kernels.h: the kernels of the CUDA driver's
 * collectives, in the portable dialect of cubert/kernel.h: all_reduce Mean
 * is NCCL's Sum followed by one of these, x[i] = x[i] / n on the result in
 * the type's arithmetic (C division: integers truncate toward zero), as
 * cubert/comm.h defines Mean. One kernel per reducible dtype; buffer 0 is
 * the result, scalar 0 the member count; CUBERT_COMM_MEAN_BLOCK units per
 * cube.
 *
 * backend-cuda/comm/cuda_comm_mean.c embeds their PTX (make comm-mean-ptx
 * regenerates it with nvcc); the C expansion gives the CPU entry points the
 * fake driver of the tests runs.
 */
#ifndef CUBERT_BACKEND_CUDA_COMM_CUDA_COMM_KERNELS_H
#define CUBERT_BACKEND_CUDA_COMM_CUDA_COMM_KERNELS_H

#include "cubert/kernel.h"

#define CUBERT_COMM_MEAN_BLOCK 256

#define CUBERT_COMM_MEAN_KERNEL_(name, type)                   \
  CUBERT_KERNEL(name) {                                        \
    CUBERT_BUFFER(type, x, 0);                                 \
    CUBERT_SCALAR_U64(n, 0);                                   \
    CUBERT_PHASE {                                             \
      uint64_t i = ABSOLUTE_POS;                               \
      if (i >= CUBERT_LEN(x)) CUBERT_UNIT_DONE;                \
      CUBERT_STORE(x, i, (type)(CUBERT_LOAD(x, i) / (type)n)); \
    }                                                          \
  }

CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_f32, float)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_f64, double)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_i32, int32_t)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_i64, int64_t)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_u32, uint32_t)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_u64, uint64_t)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_i8, int8_t)
CUBERT_COMM_MEAN_KERNEL_(cubert_comm_mean_u8, uint8_t)

#endif /* CUBERT_BACKEND_CUDA_COMM_CUDA_COMM_KERNELS_H */
