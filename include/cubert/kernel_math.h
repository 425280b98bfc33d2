/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_math.h: the portable math of the kernel dialect (included by
 * cubert/kernel.h; docs/kernels.md, "Math", has the table of ulp bounds).
 *
 * f32 functions a kernel may call on the CPU and on CUDA with a documented
 * accuracy: the same name compiles to the C library's function on the CPU
 * (through the compiler's builtins: no header needed) and to CUDA's device
 * function (or intrinsic, for the fast variants) under nvcc. The bound of
 * each, in ulp of the correctly rounded result, is the largest of CUDA's
 * documented one and what the CPU's C library gives over the test sweep
 * (tests/cts/test_cts_dialect.c checks every function against a double
 * reference, on every driver):
 *   cubert_expf  exp2f  logf  log2f  sqrtf  rsqrtf  tanhf  erff  sinf  cosf
 *   powf  fmaf  fminf  fmaxf  fabsf  floorf  ceilf  roundf
 * Fast variants, where CUDA has an intrinsic (__expf, __logf, __sinf,
 * __cosf, __powf, __log2f: less accurate, faster): cubert_fast_expf,
 * cubert_fast_logf, cubert_fast_sinf, cubert_fast_cosf, cubert_fast_powf,
 * cubert_fast_log2f; on the CPU they are the accurate functions.
 * CubeCL's names: Exp, Log, Sqrt, InverseSqrt, Tanh, Erf, Sin, Cos, Powf,
 * Fma, Min, Max, Abs, Floor, Ceil, Round (F::exp(x) ...).
 */
#ifndef CUBERT_KERNEL_MATH_H
#define CUBERT_KERNEL_MATH_H

#include "cubert/base.h"

/* Part of cubert/kernel.h (which includes it at its end): include that.
 * Alone it defines only macros (and, under nvcc, what needs kernel.h). */

#if defined(__CUDACC__)
#define CUBERT_MATH_FN_ static __device__ __forceinline__
#define CUBERT_MATH_1_(name, cpu, cuda) \
  CUBERT_MATH_FN_ float name(float x) { return cuda(x); }
#define CUBERT_MATH_2_(name, cpu, cuda) \
  CUBERT_MATH_FN_ float name(float x, float y) { return cuda(x, y); }
#define CUBERT_MATH_RSQRT_(x) rsqrtf(x)
#else
#define CUBERT_MATH_FN_ static inline
#define CUBERT_MATH_1_(name, cpu, cuda)                                                      \
  CUBERT_MATH_FN_ float name(float x) { return cpu(x); }
#define CUBERT_MATH_2_(name, cpu, cuda)                                                      \
  CUBERT_MATH_FN_ float name(float x, float y) { return cpu(x, y); }
#define CUBERT_MATH_RSQRT_(x) (1.0f / __builtin_sqrtf(x))
#endif

CUBERT_MATH_1_(cubert_expf, __builtin_expf, expf)
CUBERT_MATH_1_(cubert_exp2f, __builtin_exp2f, exp2f)
CUBERT_MATH_1_(cubert_logf, __builtin_logf, logf)
CUBERT_MATH_1_(cubert_log2f, __builtin_log2f, log2f)
CUBERT_MATH_1_(cubert_sqrtf, __builtin_sqrtf, sqrtf)
CUBERT_MATH_1_(cubert_tanhf, __builtin_tanhf, tanhf)
CUBERT_MATH_1_(cubert_erff, __builtin_erff, erff)
CUBERT_MATH_1_(cubert_sinf, __builtin_sinf, sinf)
CUBERT_MATH_1_(cubert_cosf, __builtin_cosf, cosf)
CUBERT_MATH_1_(cubert_fabsf, __builtin_fabsf, fabsf)
CUBERT_MATH_1_(cubert_floorf, __builtin_floorf, floorf)
CUBERT_MATH_1_(cubert_ceilf, __builtin_ceilf, ceilf)
CUBERT_MATH_1_(cubert_roundf, __builtin_roundf, roundf)
CUBERT_MATH_2_(cubert_powf, __builtin_powf, powf)
CUBERT_MATH_2_(cubert_fminf, __builtin_fminf, fminf)
CUBERT_MATH_2_(cubert_fmaxf, __builtin_fmaxf, fmaxf)
CUBERT_MATH_1_(cubert_fast_expf, __builtin_expf, __expf)
CUBERT_MATH_1_(cubert_fast_logf, __builtin_logf, __logf)
CUBERT_MATH_1_(cubert_fast_log2f, __builtin_log2f, __log2f)
CUBERT_MATH_1_(cubert_fast_sinf, __builtin_sinf, __sinf)
CUBERT_MATH_1_(cubert_fast_cosf, __builtin_cosf, __cosf)
CUBERT_MATH_2_(cubert_fast_powf, __builtin_powf, __powf)

CUBERT_MATH_FN_ float cubert_rsqrtf(float x) { return CUBERT_MATH_RSQRT_(x); }
#if defined(__CUDACC__)
CUBERT_MATH_FN_ float cubert_fmaf(float x, float y, float z) { return fmaf(x, y, z); }
#else
CUBERT_MATH_FN_ float cubert_fmaf(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
#endif

#endif /* CUBERT_KERNEL_MATH_H */
