/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_plane.h: plane (warp) operations of the kernel dialect and
 * the cube-wide reduce / scan built on them (included by cubert/kernel.h;
 * docs/kernels.md, "Planes").
 *
 * A plane is a fixed group of PLANE_DIM consecutive units of a cube (by
 * UNIT_POS): a warp of 32 on CUDA; on the CPU drivers 32 by default, or the
 * power of two (1..64) the device was created with (cubert_cpu_options_t /
 * cubert_inline_options_t plane_dim, or CUBERT_CPU_PLANE_DIM), so that a
 * kernel that assumes 32 fails its tests on the CPU. The last plane of a
 * cube whose CUBE_DIM is not a multiple of PLANE_DIM is partial: the
 * operations take only the units it has.
 *   PLANE_DIM        units per plane (uint32_t)
 *   UNIT_POS_PLANE   the unit's lane in its plane (inside a phase)
 *
 * A plane operation is a statement of uniform code (between phases, never
 * inside one) over per-unit variables (CUBERT_UNIT_VAR): every unit's `dst`
 * receives the result for its plane, computed from every unit's `src` (dst
 * may be src). On the CPU it loops over the planes; on CUDA every thread
 * runs the warp intrinsic. CubeCL's names:
 *   CUBERT_PLANE_SUM / _PROD / _MIN / _MAX(dst, src)       plane_sum/prod/min/max
 *   CUBERT_PLANE_ALL / _ANY(dst, src)    1 when src != 0 for all / any unit  plane_all/any
 *   CUBERT_PLANE_BROADCAST(dst, src, lane)  src of `lane` (uniform)   plane_broadcast
 *   CUBERT_PLANE_SHUFFLE(dst, src, lanes)   src of lane lanes[unit] (a u32 unit var)
 *                                                                    plane_shuffle
 *   CUBERT_PLANE_SHUFFLE_XOR(dst, src, mask)  src of lane (lane ^ mask)  plane_shuffle_xor
 *   CUBERT_PLANE_INCLUSIVE_SUM / _EXCLUSIVE_SUM(dst, src)   plane_inclusive_sum / _exclusive_sum
 * Order of the arithmetic, the same on both sides so that float results are
 * bit-identical with a plane of 32: a reduction is the tree CUDA's
 * __shfl_down_sync gives (offsets PLANE_DIM/2 .. 1: lane l takes lane l + off
 * when it exists), then lane 0's value; the scans are Hillis-Steele
 * (offsets 1, 2, 4 ..: lane l adds lane l - off, lower lane first); the
 * exclusive scan is the inclusive one moved up a lane (lane 0: 0).
 * Variables of a shuffle are at most CUBERT_KERNEL_PLANE_ELEMENT_BYTES (16).
 * A broadcast / shuffle from a lane the plane lacks (past the end of a partial
 * last plane): the unit keeps its own value, on the CPU and on CUDA alike, and
 * RACECHECK reports it (a kernel that relies on it is likely wrong).
 *
 * Cube-wide (uniform code too; three steps, two of them phases; `scratch` is
 * a shared view of at least ceil(CUBE_DIM / PLANE_DIM) elements of the
 * type): every unit's dst receives the reduction over the whole cube, any
 * CUBE_DIM (powers of two or not):
 *   CUBERT_CUBE_SUM / _PROD / _MIN / _MAX(dst, src, scratch)
 *   CUBERT_CUBE_INCLUSIVE_SUM / _EXCLUSIVE_SUM(dst, src, scratch)  (exclusive: dst != src)
 * (plane results first, then the planes' in plane order.)
 */
#ifndef CUBERT_KERNEL_PLANE_H
#define CUBERT_KERNEL_PLANE_H

#include "cubert/base.h"

/* Part of cubert/kernel.h (which includes it at its end): include that.
 * Alone it defines only macros (and, under nvcc, what needs kernel.h). */

#define CUBERT_PLANE_OP_SUM_(a, b) ((a) + (b))
#define CUBERT_PLANE_OP_PROD_(a, b) ((a) * (b))
#define CUBERT_PLANE_OP_MIN_(a, b) ((b) < (a) ? (b) : (a))
#define CUBERT_PLANE_OP_MAX_(a, b) ((b) > (a) ? (b) : (a))

#if !defined(__CUDACC__)

#define PLANE_DIM (cubert_cube->plane_dim)
#define UNIT_POS_PLANE ((uint32_t)cubert_unit.linear & (cubert_cube->plane_dim - 1u))

/* Checked copy: a plane operation inside a phase is reported (RACECHECK). */
#define cubert_kernel_plane_check_(cube, unchecked, name)                                    \
  ((void)((unchecked) || (cube)->unit == CUBERT_KERNEL_UNIFORM || !(cube)->race_note ||      \
          ((cube)->race_note((cube), 0, 0, (name), (cube)->unit, CUBERT_KERNEL_EVENT_PLANE), 0)))
/* A lane the plane lacks (RACECHECK): reported as unit `unit`'s. */
#define cubert_kernel_plane_lane_(cube, unchecked, name, unit_, lane)                        \
  do {                                                                                       \
    if (!(unchecked) && (cube)->race_note) {                                                 \
      uint32_t cubert_saved_unit_ = (cube)->unit;                                            \
      (cube)->unit = (unit_);                                                                \
      (cube)->race_note((cube), 0, 0, (name), (lane), CUBERT_KERNEL_EVENT_PLANE_LANE);       \
      (cube)->unit = cubert_saved_unit_;                                                     \
    }                                                                                        \
  } while (0)

#define CUBERT_PLANE_LOOP_(b, e)                                                             \
  for (b = 0; b < cubert_cube->units; b += cubert_cube->plane_dim)                           \
    if ((e = b + cubert_cube->plane_dim < cubert_cube->units ? b + cubert_cube->plane_dim    \
                                                              : cubert_cube->units),         \
        0) {                                                                                 \
    } else

#define CUBERT_PLANE_REDUCE_(dst, src, OP, opname)                                           \
  do {                                                                                       \
    uint32_t cubert_pb_, cubert_pe_, cubert_po_, cubert_pl_;                                 \
    cubert_kernel_plane_check_(cubert_cube, cubert_unchecked_, opname);                      \
    if (cubert_cube->scratch_short) break; /* the cube runs again */                      \
    for (cubert_pl_ = 0; cubert_pl_ < cubert_cube->units; cubert_pl_++)                      \
      (dst)[cubert_pl_] = (src)[cubert_pl_];                                                 \
    CUBERT_PLANE_LOOP_(cubert_pb_, cubert_pe_) {                                             \
      for (cubert_po_ = cubert_cube->plane_dim / 2u; cubert_po_ > 0; cubert_po_ /= 2u)       \
        for (cubert_pl_ = cubert_pb_; cubert_pl_ + cubert_po_ < cubert_pe_; cubert_pl_++)    \
          (dst)[cubert_pl_] = OP((dst)[cubert_pl_], (dst)[cubert_pl_ + cubert_po_]);         \
      for (cubert_pl_ = cubert_pb_ + 1u; cubert_pl_ < cubert_pe_; cubert_pl_++)              \
        (dst)[cubert_pl_] = (dst)[cubert_pb_];                                               \
    }                                                                                        \
  } while (0)

#define CUBERT_PLANE_VOTE_(dst, src, ALL, opname)                                            \
  do {                                                                                       \
    uint32_t cubert_pb_, cubert_pe_, cubert_pl_;                                             \
    int cubert_pv_;                                                                          \
    cubert_kernel_plane_check_(cubert_cube, cubert_unchecked_, opname);                      \
    if (cubert_cube->scratch_short) break; /* the cube runs again */                      \
    CUBERT_PLANE_LOOP_(cubert_pb_, cubert_pe_) {                                             \
      cubert_pv_ = (ALL);                                                                    \
      for (cubert_pl_ = cubert_pb_; cubert_pl_ < cubert_pe_; cubert_pl_++)                   \
        if (((src)[cubert_pl_] != 0) != (ALL)) cubert_pv_ = !(ALL);                          \
      for (cubert_pl_ = cubert_pb_; cubert_pl_ < cubert_pe_; cubert_pl_++)                   \
        (dst)[cubert_pl_] = cubert_pv_;                                                      \
    }                                                                                        \
  } while (0)

#define CUBERT_PLANE_SUM(dst, src) CUBERT_PLANE_REDUCE_(dst, src, CUBERT_PLANE_OP_SUM_, "plane_sum")
#define CUBERT_PLANE_PROD(dst, src)                                                          \
  CUBERT_PLANE_REDUCE_(dst, src, CUBERT_PLANE_OP_PROD_, "plane_prod")
#define CUBERT_PLANE_MIN(dst, src) CUBERT_PLANE_REDUCE_(dst, src, CUBERT_PLANE_OP_MIN_, "plane_min")
#define CUBERT_PLANE_MAX(dst, src) CUBERT_PLANE_REDUCE_(dst, src, CUBERT_PLANE_OP_MAX_, "plane_max")
#define CUBERT_PLANE_ALL(dst, src) CUBERT_PLANE_VOTE_(dst, src, 1, "plane_all")
#define CUBERT_PLANE_ANY(dst, src) CUBERT_PLANE_VOTE_(dst, src, 0, "plane_any")

/* Every unit of a plane takes src of its lane `lane` (uniform): the source
 * unit is written last, so dst may be src. */
#define CUBERT_PLANE_BROADCAST(dst, src, lane)                                               \
  do {                                                                                       \
    uint32_t cubert_pb_, cubert_pe_, cubert_pl_, cubert_ps_;                                 \
    const uint32_t cubert_plane_lane_ = (uint32_t)(lane);                                    \
    cubert_kernel_plane_check_(cubert_cube, cubert_unchecked_, "plane_broadcast");           \
    if (cubert_cube->scratch_short) break; /* the cube runs again */                      \
    CUBERT_PLANE_LOOP_(cubert_pb_, cubert_pe_) {                                             \
      cubert_ps_ = cubert_pb_ + cubert_plane_lane_;                                          \
      if (cubert_plane_lane_ >= cubert_cube->plane_dim || cubert_ps_ >= cubert_pe_) {        \
        for (cubert_pl_ = cubert_pb_; cubert_pl_ < cubert_pe_; cubert_pl_++) {               \
          cubert_kernel_plane_lane_(cubert_cube, cubert_unchecked_, "plane_broadcast",       \
                                    cubert_pl_, cubert_plane_lane_);                         \
          (dst)[cubert_pl_] = (src)[cubert_pl_];                                             \
        }                                                                                    \
        continue;                                                                            \
      }                                                                                      \
      for (cubert_pl_ = cubert_pb_; cubert_pl_ < cubert_pe_; cubert_pl_++)                   \
        if (cubert_pl_ != cubert_ps_) (dst)[cubert_pl_] = (src)[cubert_ps_];                 \
      (dst)[cubert_ps_] = (src)[cubert_ps_];                                                 \
    }                                                                                        \
  } while (0)

/* Shuffles read every source before writing (through the cube's plane
 * scratch), so dst may be src. lane_of(l): the source lane of unit l. */
#define CUBERT_PLANE_PERMUTE_(dst, src, LANE_OF, opname)                                     \
  do {                                                                                       \
    uint32_t cubert_pb_, cubert_pe_, cubert_pl_, cubert_ps_;                                 \
    const size_t cubert_pz_ = sizeof(char[sizeof((src)[0]) <= CUBERT_KERNEL_PLANE_ELEMENT_BYTES \
                                              ? sizeof((src)[0])                              \
                                              : (size_t)-1]); /* at most 16 bytes */          \
    unsigned char *cubert_pt_ = cubert_cube->plane_scratch;                                  \
    cubert_kernel_plane_check_(cubert_cube, cubert_unchecked_, opname);                      \
    if (cubert_cube->scratch_short) break; /* the cube runs again */                      \
    __builtin_memcpy(cubert_pt_, &(src)[0], cubert_pz_ * cubert_cube->units);                \
    CUBERT_PLANE_LOOP_(cubert_pb_, cubert_pe_) {                                             \
      for (cubert_pl_ = cubert_pb_; cubert_pl_ < cubert_pe_; cubert_pl_++) {                 \
        cubert_ps_ = (uint32_t)(LANE_OF(cubert_pl_));                                        \
        if (cubert_ps_ >= cubert_cube->plane_dim || cubert_pb_ + cubert_ps_ >= cubert_pe_) { \
          cubert_kernel_plane_lane_(cubert_cube, cubert_unchecked_, opname, cubert_pl_,      \
                                    cubert_ps_);                                             \
          cubert_ps_ = cubert_pl_ - cubert_pb_;                                              \
        }                                                                                    \
        __builtin_memcpy(&(dst)[cubert_pl_], cubert_pt_ + (size_t)(cubert_pb_ + cubert_ps_) * cubert_pz_, \
                         cubert_pz_);                                                        \
      }                                                                                      \
    }                                                                                        \
  } while (0)
#define CUBERT_PLANE_LANES_OF_(l) (cubert_plane_lanes_[l] % cubert_cube->plane_dim)
#define CUBERT_PLANE_SHUFFLE(dst, src, lanes)                                                \
  do {                                                                                       \
    const uint32_t *const cubert_plane_lanes_ = (lanes);                                     \
    CUBERT_PLANE_PERMUTE_(dst, src, CUBERT_PLANE_LANES_OF_, "plane_shuffle");                \
  } while (0)
#define CUBERT_PLANE_XOR_OF_(l) (((l) - cubert_pb_) ^ cubert_plane_mask_)
#define CUBERT_PLANE_SHUFFLE_XOR(dst, src, mask)                                             \
  do {                                                                                       \
    const uint32_t cubert_plane_mask_ = (uint32_t)(mask);                                    \
    CUBERT_PLANE_PERMUTE_(dst, src, CUBERT_PLANE_XOR_OF_, "plane_shuffle_xor");              \
  } while (0)

/* Hillis-Steele, lanes from the top so each step reads the step before. */
#define CUBERT_PLANE_INCLUSIVE_SUM(dst, src)                                                 \
  do {                                                                                       \
    uint32_t cubert_pb_, cubert_pe_, cubert_po_, cubert_pl_;                                 \
    cubert_kernel_plane_check_(cubert_cube, cubert_unchecked_, "plane_inclusive_sum");       \
    if (cubert_cube->scratch_short) break; /* the cube runs again */                      \
    for (cubert_pl_ = 0; cubert_pl_ < cubert_cube->units; cubert_pl_++)                      \
      (dst)[cubert_pl_] = (src)[cubert_pl_];                                                 \
    CUBERT_PLANE_LOOP_(cubert_pb_, cubert_pe_) {                                             \
      for (cubert_po_ = 1; cubert_po_ < cubert_cube->plane_dim; cubert_po_ *= 2u)            \
        for (cubert_pl_ = cubert_pe_; cubert_pl_-- > cubert_pb_ + cubert_po_;)               \
          (dst)[cubert_pl_] = (dst)[cubert_pl_ - cubert_po_] + (dst)[cubert_pl_];            \
    }                                                                                        \
  } while (0)
#define CUBERT_PLANE_EXCLUSIVE_SUM(dst, src)                                                 \
  do {                                                                                       \
    uint32_t cubert_xb_, cubert_xe_, cubert_xl_;                                             \
    CUBERT_PLANE_INCLUSIVE_SUM(dst, src);                                                    \
    if (cubert_cube->scratch_short) break;                                                   \
    CUBERT_PLANE_LOOP_(cubert_xb_, cubert_xe_) {                                             \
      for (cubert_xl_ = cubert_xe_ - 1u; cubert_xl_ > cubert_xb_; cubert_xl_--)              \
        (dst)[cubert_xl_] = (dst)[cubert_xl_ - 1u];                                          \
      (dst)[cubert_xb_] = 0;                                                                 \
    }                                                                                        \
  } while (0)

#else /* __CUDACC__ */

#define PLANE_DIM 32u
#define UNIT_POS_PLANE (UNIT_POS & 31u)

/* The lanes this warp has (the last warp of a cube may be partial). */
static __device__ __forceinline__ uint32_t cubert_plane_count_(void) {
  uint32_t base = UNIT_POS & ~31u, n = CUBE_DIM - base;
  return n < 32u ? n : 32u;
}
static __device__ __forceinline__ uint32_t cubert_plane_mask_of_(uint32_t n) {
  return n >= 32u ? 0xFFFFFFFFu : ((1u << n) - 1u);
}

struct cubert_plane_sum_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_PLANE_OP_SUM_(a, b); } };
struct cubert_plane_prod_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_PLANE_OP_PROD_(a, b); } };
struct cubert_plane_min_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_PLANE_OP_MIN_(a, b); } };
struct cubert_plane_max_op_ { template <typename T> __device__ T operator()(T a, T b) const { return CUBERT_PLANE_OP_MAX_(a, b); } };

template <typename Op, typename T>
static __device__ __forceinline__ T cubert_plane_reduce_(T v) {
  const uint32_t n = cubert_plane_count_(), mask = cubert_plane_mask_of_(n), lane = UNIT_POS & 31u;
  uint32_t off;
  for (off = 16u; off > 0u; off >>= 1) {
    T t = __shfl_down_sync(mask, v, off);
    if (lane + off < n) v = Op()(v, t);
  }
  return __shfl_sync(mask, v, 0);
}
template <typename T> static __device__ __forceinline__ T cubert_plane_inclusive_(T v) {
  const uint32_t mask = cubert_plane_mask_of_(cubert_plane_count_()), lane = UNIT_POS & 31u;
  uint32_t off;
  for (off = 1u; off < 32u; off <<= 1) {
    T t = __shfl_up_sync(mask, v, off);
    if (lane >= off) v = t + v;
  }
  return v;
}
template <typename T> static __device__ __forceinline__ T cubert_plane_exclusive_(T v) {
  const uint32_t mask = cubert_plane_mask_of_(cubert_plane_count_());
  T t = __shfl_up_sync(mask, cubert_plane_inclusive_(v), 1u);
  return (UNIT_POS & 31u) == 0u ? T() : t;
}
/* A source lane the plane lacks (a partial last plane): the unit keeps its own value, as
 * on the CPU (the intrinsic's result for an inactive lane is undefined: it is not used). */
template <typename T> static __device__ __forceinline__ T cubert_plane_shfl_(T v, uint32_t lane) {
  const uint32_t n = cubert_plane_count_();
  T t = __shfl_sync(cubert_plane_mask_of_(n), v, (int)(lane & 31u));
  return lane < n ? t : v;
}
template <typename T> static __device__ __forceinline__ T cubert_plane_shfl_xor_(T v, uint32_t m) {
  const uint32_t n = cubert_plane_count_();
  T t = __shfl_xor_sync(cubert_plane_mask_of_(n), v, (int)(m & 31u));
  return (((UNIT_POS & 31u) ^ (m & 31u)) < n) ? t : v;
}

#define CUBERT_PLANE_SUM(dst, src) ((dst) = cubert_plane_reduce_<cubert_plane_sum_op_>(src))
#define CUBERT_PLANE_PROD(dst, src) ((dst) = cubert_plane_reduce_<cubert_plane_prod_op_>(src))
#define CUBERT_PLANE_MIN(dst, src) ((dst) = cubert_plane_reduce_<cubert_plane_min_op_>(src))
#define CUBERT_PLANE_MAX(dst, src) ((dst) = cubert_plane_reduce_<cubert_plane_max_op_>(src))
#define CUBERT_PLANE_ALL(dst, src)                                                           \
  ((dst) = __all_sync(cubert_plane_mask_of_(cubert_plane_count_()), (src) != 0) ? 1 : 0)
#define CUBERT_PLANE_ANY(dst, src)                                                           \
  ((dst) = __any_sync(cubert_plane_mask_of_(cubert_plane_count_()), (src) != 0) ? 1 : 0)
#define CUBERT_PLANE_BROADCAST(dst, src, lane) ((dst) = cubert_plane_shfl_((src), (uint32_t)(lane)))
#define CUBERT_PLANE_SHUFFLE(dst, src, lanes) ((dst) = cubert_plane_shfl_((src), (uint32_t)(lanes)))
#define CUBERT_PLANE_SHUFFLE_XOR(dst, src, mask)                                             \
  ((dst) = cubert_plane_shfl_xor_((src), (uint32_t)(mask)))
#define CUBERT_PLANE_INCLUSIVE_SUM(dst, src) ((dst) = cubert_plane_inclusive_(src))
#define CUBERT_PLANE_EXCLUSIVE_SUM(dst, src) ((dst) = cubert_plane_exclusive_(src))

#endif /* __CUDACC__ */

/* ---- cube-wide, built on the plane operations (both sides) ---- */

#define CUBERT_CUBE_REDUCE_(dst, src, scratch, PLANE_OP, OP)                                 \
  do {                                                                                       \
    PLANE_OP(dst, src);                                                                      \
    CUBERT_PHASE {                                                                           \
      if (UNIT_POS_PLANE == 0u) CUBERT_STORE(scratch, UNIT_POS / PLANE_DIM, CUBERT_UNIT(dst)); \
    }                                                                                        \
    CUBERT_PHASE {                                                                           \
      uint32_t cubert_cq_, cubert_cn_ = (uint32_t)((CUBE_DIM + PLANE_DIM - 1u) / PLANE_DIM); \
      CUBERT_UNIT(dst) = CUBERT_LOAD(scratch, 0);                                            \
      for (cubert_cq_ = 1; cubert_cq_ < cubert_cn_; cubert_cq_++)                            \
        CUBERT_UNIT(dst) = OP(CUBERT_UNIT(dst), CUBERT_LOAD(scratch, cubert_cq_));           \
    }                                                                                        \
  } while (0)
#define CUBERT_CUBE_SUM(dst, src, scratch)                                                   \
  CUBERT_CUBE_REDUCE_(dst, src, scratch, CUBERT_PLANE_SUM, CUBERT_PLANE_OP_SUM_)
#define CUBERT_CUBE_PROD(dst, src, scratch)                                                  \
  CUBERT_CUBE_REDUCE_(dst, src, scratch, CUBERT_PLANE_PROD, CUBERT_PLANE_OP_PROD_)
#define CUBERT_CUBE_MIN(dst, src, scratch)                                                   \
  CUBERT_CUBE_REDUCE_(dst, src, scratch, CUBERT_PLANE_MIN, CUBERT_PLANE_OP_MIN_)
#define CUBERT_CUBE_MAX(dst, src, scratch)                                                   \
  CUBERT_CUBE_REDUCE_(dst, src, scratch, CUBERT_PLANE_MAX, CUBERT_PLANE_OP_MAX_)

/* Scans: the plane's scan, each plane's total in scratch (its last unit),
 * then every unit adds the totals of the planes before its own. */
#define CUBERT_CUBE_SCAN_(dst, src, scratch, PLANE_SCAN, TOTAL)                              \
  do {                                                                                       \
    PLANE_SCAN(dst, src);                                                                    \
    CUBERT_PHASE {                                                                           \
      if (UNIT_POS_PLANE == PLANE_DIM - 1u || UNIT_POS + 1u == CUBE_DIM)                     \
        CUBERT_STORE(scratch, UNIT_POS / PLANE_DIM, TOTAL);                                  \
    }                                                                                        \
    CUBERT_PHASE {                                                                           \
      uint32_t cubert_cq_, cubert_cn_ = (uint32_t)(UNIT_POS / PLANE_DIM);                    \
      for (cubert_cq_ = 0; cubert_cq_ < cubert_cn_; cubert_cq_++)                            \
        CUBERT_UNIT(dst) = CUBERT_LOAD(scratch, cubert_cq_) + CUBERT_UNIT(dst);              \
    }                                                                                        \
  } while (0)
#define CUBERT_CUBE_INCLUSIVE_SUM(dst, src, scratch)                                         \
  CUBERT_CUBE_SCAN_(dst, src, scratch, CUBERT_PLANE_INCLUSIVE_SUM, CUBERT_UNIT(dst))
#define CUBERT_CUBE_EXCLUSIVE_SUM(dst, src, scratch)                                         \
  CUBERT_CUBE_SCAN_(dst, src, scratch, CUBERT_PLANE_EXCLUSIVE_SUM,                           \
                    CUBERT_UNIT(dst) + CUBERT_UNIT(src))

#endif /* CUBERT_KERNEL_PLANE_H */
