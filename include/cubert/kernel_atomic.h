/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_atomic.h: atomics of the kernel dialect (included by
 * cubert/kernel.h; docs/kernels.md, "Atomics"). CubeCL's Atomic<T>.
 *
 * On an element of a buffer view or a shared view, inside a phase:
 *   CUBERT_ATOMIC_LOAD(view, i)                 the value            (Atomic::load)
 *   CUBERT_ATOMIC_STORE(view, i, v)             no value             (Atomic::store)
 *   CUBERT_ATOMIC_EXCHANGE(view, i, v)          old; stores v        (Atomic::swap)
 *   CUBERT_ATOMIC_COMPARE_EXCHANGE(view, i, c, v)  old; stores v when old == c
 *                                                                    (Atomic::compare_and_swap)
 *   CUBERT_ATOMIC_ADD / _SUB / _MIN / _MAX (view, i, v)   old        (Atomic::add/sub/min/max)
 *   CUBERT_ATOMIC_AND / _OR / _XOR (view, i, v)           old        (Atomic::and/or/xor)
 * Every read-modify-write returns the value before it, as CubeCL's do.
 * Element types: uint32_t, int32_t, uint64_t, int64_t for every operation;
 * float (and double) for load, store, exchange, compare-exchange, add, sub,
 * min, max. Integer add/sub wrap (two's complement); float min/max keep the
 * element when v is NaN, take v when the element is NaN (`v < old ? v : old`
 * with NaN compared false: the same on both sides). Ordering: relaxed (CUDA's
 * atomic* and CubeCL's), atomic against every other atomic on the element.
 * Bounds: as CUBERT_STORE (CHECKED/VALIDATE: an index past the view is
 * counted, reported, and changes nothing: a load or an update returns 0).
 * RACECHECK: two atomics on one element never race; an atomic and a plain
 * access of two units (or cubes) do.
 *
 * CPU: the GCC/Clang __atomic builtins (a compare-exchange loop for the
 * arithmetic ones), real atomics since cubes run on several threads. CUDA:
 * atomicAdd/Sub/Min/Max/And/Or/Xor/Exch/CAS where the type has them, a CAS
 * loop over the bits otherwise (float min/max, 64-bit sub).
 */
#ifndef CUBERT_KERNEL_ATOMIC_H
#define CUBERT_KERNEL_ATOMIC_H

#include "cubert/base.h"

/* Part of cubert/kernel.h (which includes it at its end): include that.
 * Alone it defines only macros (and, under nvcc, what needs kernel.h). */

#define CUBERT_ATOMIC_OP_ADD_(a, b) ((a) + (b))
#define CUBERT_ATOMIC_OP_SUB_(a, b) ((a) - (b))
#define CUBERT_ATOMIC_OP_MIN_(a, b) ((b) < (a) ? (b) : (a))
#define CUBERT_ATOMIC_OP_MAX_(a, b) ((b) > (a) ? (b) : (a))
#define CUBERT_ATOMIC_OP_AND_(a, b) ((a) & (b))
#define CUBERT_ATOMIC_OP_OR_(a, b) ((a) | (b))
#define CUBERT_ATOMIC_OP_XOR_(a, b) ((a) ^ (b))

#if !defined(__CUDACC__)

/* A read-modify-write by compare-exchange over the element's type (any 1, 2,
 * 4 or 8-byte type: the generic __atomic builtins). */
#define CUBERT_ATOMIC_RMW_(name, i, v, OP)                                                   \
  (__extension__({                                                                           \
    cubert_elem_##name##_ *cubert_atomic_p_ = CUBERT_ADDR_(name, i, CUBERT_KERNEL_ACCESS_ATOMIC); \
    cubert_elem_##name##_ cubert_atomic_v_ = (v), cubert_atomic_old_, cubert_atomic_new_;   \
    __atomic_load(cubert_atomic_p_, &cubert_atomic_old_, __ATOMIC_RELAXED);                  \
    do {                                                                                     \
      cubert_atomic_new_ = (cubert_elem_##name##_)OP(cubert_atomic_old_, cubert_atomic_v_);  \
    } while (!__atomic_compare_exchange(cubert_atomic_p_, &cubert_atomic_old_,               \
                                        &cubert_atomic_new_, 0, __ATOMIC_RELAXED,            \
                                        __ATOMIC_RELAXED));                                  \
    cubert_atomic_old_;                                                                      \
  }))

#define CUBERT_ATOMIC_LOAD(name, i)                                                          \
  (__extension__({                                                                           \
    cubert_elem_##name##_ cubert_atomic_old_;                                                \
    __atomic_load(CUBERT_ADDR_(name, i, CUBERT_KERNEL_ACCESS_ATOMIC), &cubert_atomic_old_,   \
                  __ATOMIC_RELAXED);                                                         \
    cubert_atomic_old_;                                                                      \
  }))
#define CUBERT_ATOMIC_STORE(name, i, value)                                                  \
  ((void)__extension__({                                                                     \
    cubert_elem_##name##_ cubert_atomic_v_ = (value);                                        \
    __atomic_store(CUBERT_ADDR_(name, i, CUBERT_KERNEL_ACCESS_ATOMIC), &cubert_atomic_v_,    \
                   __ATOMIC_RELAXED);                                                        \
    0;                                                                                       \
  }))
#define CUBERT_ATOMIC_EXCHANGE(name, i, value)                                               \
  (__extension__({                                                                           \
    cubert_elem_##name##_ cubert_atomic_v_ = (value), cubert_atomic_old_;                    \
    __atomic_exchange(CUBERT_ADDR_(name, i, CUBERT_KERNEL_ACCESS_ATOMIC), &cubert_atomic_v_, \
                      &cubert_atomic_old_, __ATOMIC_RELAXED);                                \
    cubert_atomic_old_;                                                                      \
  }))
#define CUBERT_ATOMIC_COMPARE_EXCHANGE(name, i, compare, value)                              \
  (__extension__({                                                                           \
    cubert_elem_##name##_ cubert_atomic_old_ = (compare), cubert_atomic_v_ = (value);        \
    (void)__atomic_compare_exchange(CUBERT_ADDR_(name, i, CUBERT_KERNEL_ACCESS_ATOMIC),      \
                                    &cubert_atomic_old_, &cubert_atomic_v_, 0,               \
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);                     \
    cubert_atomic_old_;                                                                      \
  }))

#else /* __CUDACC__ */

template <typename T, int N = sizeof(T)> struct cubert_atomic_bits_;
template <typename T> struct cubert_atomic_bits_<T, 4> { typedef unsigned int type; };
template <typename T> struct cubert_atomic_bits_<T, 8> { typedef unsigned long long type; };

/* The native form of a type for atomic*: int, unsigned, long long,
 * unsigned long long, float, double (uint64_t is unsigned long on LP64). */
template <typename T> struct cubert_atomic_native_ { typedef T type; };
template <> struct cubert_atomic_native_<long> { typedef long long type; };
template <> struct cubert_atomic_native_<unsigned long> { typedef unsigned long long type; };

template <typename T> static __device__ __forceinline__ T cubert_atomic_from_bits_(
    typename cubert_atomic_bits_<T>::type b) {
  union {
    typename cubert_atomic_bits_<T>::type b;
    T v;
  } u;
  u.b = b;
  return u.v;
}
template <typename T> static __device__ __forceinline__ typename cubert_atomic_bits_<T>::type
cubert_atomic_to_bits_(T v) {
  union {
    typename cubert_atomic_bits_<T>::type b;
    T v;
  } u;
  u.v = v;
  return u.b;
}

struct cubert_atomic_add_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_ADD_(a, b); } };
struct cubert_atomic_sub_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_SUB_(a, b); } };
struct cubert_atomic_min_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_MIN_(a, b); } };
struct cubert_atomic_max_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_MAX_(a, b); } };
struct cubert_atomic_and_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_AND_(a, b); } };
struct cubert_atomic_or_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_OR_(a, b); } };
struct cubert_atomic_xor_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_ATOMIC_OP_XOR_(a, b); } };

/* The general case: a compare-and-swap loop over the element's bits. */
template <typename Op, typename T> struct cubert_atomic_rmw_impl_ {
  static __device__ __forceinline__ T run(T *p, T v) {
    typedef typename cubert_atomic_bits_<T>::type B;
    B *q = (B *)p, old = *(volatile B *)q, assumed;
    do {
      assumed = old;
      old = atomicCAS(q, assumed, cubert_atomic_to_bits_<T>(Op()(cubert_atomic_from_bits_<T>(assumed), v)));
    } while (old != assumed);
    return cubert_atomic_from_bits_<T>(old);
  }
};
/* Natives. */
#define CUBERT_ATOMIC_NATIVE_(OPSTRUCT, FN, T)                                                 \
  template <> struct cubert_atomic_rmw_impl_<OPSTRUCT, T> {                                 \
    static __device__ __forceinline__ T run(T *p, T v) {                                     \
      typedef cubert_atomic_native_<T>::type N;                                              \
      return (T)FN((N *)p, (N)v);                                                            \
    }                                                                                        \
  };
#define CUBERT_ATOMIC_NATIVE_INTS_(OPSTRUCT, FN)                                               \
  CUBERT_ATOMIC_NATIVE_(OPSTRUCT, FN, unsigned int)                                          \
  CUBERT_ATOMIC_NATIVE_(OPSTRUCT, FN, int)                                                   \
  CUBERT_ATOMIC_NATIVE_(OPSTRUCT, FN, unsigned long long)                                    \
  CUBERT_ATOMIC_NATIVE_(OPSTRUCT, FN, unsigned long)
CUBERT_ATOMIC_NATIVE_INTS_(cubert_atomic_and_op_, atomicAnd)
CUBERT_ATOMIC_NATIVE_INTS_(cubert_atomic_or_op_, atomicOr)
CUBERT_ATOMIC_NATIVE_INTS_(cubert_atomic_xor_op_, atomicXor)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_add_op_, atomicAdd, unsigned int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_add_op_, atomicAdd, int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_add_op_, atomicAdd, unsigned long long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_add_op_, atomicAdd, unsigned long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_add_op_, atomicAdd, float)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_sub_op_, atomicSub, unsigned int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_sub_op_, atomicSub, int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_min_op_, atomicMin, unsigned int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_min_op_, atomicMin, int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_min_op_, atomicMin, unsigned long long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_min_op_, atomicMin, unsigned long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_min_op_, atomicMin, long long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_min_op_, atomicMin, long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_max_op_, atomicMax, unsigned int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_max_op_, atomicMax, int)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_max_op_, atomicMax, unsigned long long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_max_op_, atomicMax, unsigned long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_max_op_, atomicMax, long long)
CUBERT_ATOMIC_NATIVE_(cubert_atomic_max_op_, atomicMax, long)
/* 64-bit signed add wraps as unsigned does */
template <> struct cubert_atomic_rmw_impl_<cubert_atomic_add_op_, long long> {
  static __device__ __forceinline__ long long run(long long *p, long long v) {
    return (long long)atomicAdd((unsigned long long *)p, (unsigned long long)v);
  }
};
template <> struct cubert_atomic_rmw_impl_<cubert_atomic_add_op_, long> {
  static __device__ __forceinline__ long run(long *p, long v) {
    return (long)atomicAdd((unsigned long long *)p, (unsigned long long)v);
  }
};
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600
CUBERT_ATOMIC_NATIVE_(cubert_atomic_add_op_, atomicAdd, double)
#endif

/* The element's address, or NULL (out of bounds, counted and reported). */
template <typename T>
static __device__ __forceinline__ T *cubert_kernel_atomic_addr_(cubert_kernel_cube_t *cube,
                                                                const cubert_kernel_view_<T> &v,
                                                                uint64_t i) {
  if (i < v.len || cube->mode == CUBERT_KERNEL_MODE_UNCHECKED) return v.ptr + i;
  cubert_kernel_oob_(cube, v.index, i, v.len, 1);
  return 0;
}

template <typename Op, typename T>
static __device__ __forceinline__ typename cubert_kernel_unconst_<T>::type cubert_kernel_atomic_rmw_(
    cubert_kernel_cube_t *cube, const cubert_kernel_view_<T> &view, uint64_t i,
    typename cubert_kernel_unconst_<T>::type v) {
  T *p = cubert_kernel_atomic_addr_(cube, view, i);
  if (!p) return typename cubert_kernel_unconst_<T>::type();
  return cubert_atomic_rmw_impl_<Op, T>::run(p, v);
}

template <typename T>
static __device__ __forceinline__ T cubert_kernel_atomic_load_(cubert_kernel_cube_t *cube,
                                                               const cubert_kernel_view_<T> &view,
                                                               uint64_t i) {
  T *p = cubert_kernel_atomic_addr_(cube, view, i);
  return p ? *(volatile T *)p : T();
}
template <typename T>
static __device__ __forceinline__ void cubert_kernel_atomic_store_(cubert_kernel_cube_t *cube,
                                                                   const cubert_kernel_view_<T> &view,
                                                                   uint64_t i, typename cubert_kernel_unconst_<T>::type v) {
  T *p = cubert_kernel_atomic_addr_(cube, view, i);
  if (p) *(volatile T *)p = v;
}
template <typename T>
static __device__ __forceinline__ T cubert_kernel_atomic_exchange_(
    cubert_kernel_cube_t *cube, const cubert_kernel_view_<T> &view, uint64_t i,
    typename cubert_kernel_unconst_<T>::type v) {
  typedef typename cubert_atomic_bits_<T>::type B;
  T *p = cubert_kernel_atomic_addr_(cube, view, i);
  if (!p) return T();
  return cubert_atomic_from_bits_<T>(atomicExch((B *)p, cubert_atomic_to_bits_<T>(v)));
}
template <typename T>
static __device__ __forceinline__ T cubert_kernel_atomic_cas_(cubert_kernel_cube_t *cube,
                                                              const cubert_kernel_view_<T> &view,
                                                              uint64_t i, typename cubert_kernel_unconst_<T>::type compare,
                                                              typename cubert_kernel_unconst_<T>::type v) {
  typedef typename cubert_atomic_bits_<T>::type B;
  T *p = cubert_kernel_atomic_addr_(cube, view, i);
  if (!p) return T();
  return cubert_atomic_from_bits_<T>(
      atomicCAS((B *)p, cubert_atomic_to_bits_<T>(compare), cubert_atomic_to_bits_<T>(v)));
}

#define CUBERT_ATOMIC_RMW_(name, i, v, OPSTRUCT)                                             \
  cubert_kernel_atomic_rmw_<OPSTRUCT>(cubert_cube, (name), (uint64_t)(i), (v))
#define CUBERT_ATOMIC_LOAD(name, i) cubert_kernel_atomic_load_(cubert_cube, (name), (uint64_t)(i))
#define CUBERT_ATOMIC_STORE(name, i, value)                                                  \
  cubert_kernel_atomic_store_(cubert_cube, (name), (uint64_t)(i), (value))
#define CUBERT_ATOMIC_EXCHANGE(name, i, value)                                               \
  cubert_kernel_atomic_exchange_(cubert_cube, (name), (uint64_t)(i), (value))
#define CUBERT_ATOMIC_COMPARE_EXCHANGE(name, i, compare, value)                              \
  cubert_kernel_atomic_cas_(cubert_cube, (name), (uint64_t)(i), (compare), (value))
#endif /* __CUDACC__ */

#if !defined(__CUDACC__)
#define CUBERT_ATOMIC_ADD(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_ADD_)
#define CUBERT_ATOMIC_SUB(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_SUB_)
#define CUBERT_ATOMIC_MIN(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_MIN_)
#define CUBERT_ATOMIC_MAX(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_MAX_)
#define CUBERT_ATOMIC_AND(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_AND_)
#define CUBERT_ATOMIC_OR(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_OR_)
#define CUBERT_ATOMIC_XOR(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, CUBERT_ATOMIC_OP_XOR_)
#else
#define CUBERT_ATOMIC_ADD(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_add_op_)
#define CUBERT_ATOMIC_SUB(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_sub_op_)
#define CUBERT_ATOMIC_MIN(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_min_op_)
#define CUBERT_ATOMIC_MAX(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_max_op_)
#define CUBERT_ATOMIC_AND(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_and_op_)
#define CUBERT_ATOMIC_OR(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_or_op_)
#define CUBERT_ATOMIC_XOR(name, i, v) CUBERT_ATOMIC_RMW_(name, i, v, cubert_atomic_xor_op_)
#endif

#endif /* CUBERT_KERNEL_ATOMIC_H */
