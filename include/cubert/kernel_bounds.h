/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_bounds.h: declared cube bounds, and the CHECKED launch's
 * fast path (part of the dialect; included by cubert/kernel.h).
 *
 * CHECKED (the default launch) tests every CUBERT_LOAD / CUBERT_STORE
 * against its view's length. That test is what keeps the CPU's unit loops
 * from vectorizing. A kernel can instead say, per cube and per view, how far
 * its accesses reach, and then a cube where every declared reach fits its
 * view runs the UNCHECKED copy of the body: no test at all, the same code as
 * an UNCHECKED launch.
 *
 *   CUBERT_KERNEL(ck_add_f32) {
 *     CUBERT_BUFFER(const float, a, 0);
 *     CUBERT_BUFFER(const float, b, 1);
 *     CUBERT_BUFFER(float, out, 2);
 *     CUBERT_CUBE_BOUND(a, CUBERT_LEN(out));   // every index used on a is < len(out)
 *     CUBERT_CUBE_BOUND(b, CUBERT_LEN(out));
 *     CUBERT_CUBE_BOUND(out, CUBERT_LEN(out));
 *     CUBERT_CUBE_BOUNDS_DONE;                 // a full cube continues unchecked
 *     CUBERT_PHASE { ... i < CUBERT_LEN(out) ... }
 *   }
 *
 * CUBERT_CUBE_BOUND(view, end)   uniform, after the view's CUBERT_BUFFER: a
 *     claim that every access of `view` this cube makes uses an index < end
 *     (end: uint64_t, the same for every unit; it may depend on CUBE_POS, the
 *     scalars and view lengths, never on memory).
 * CUBERT_CUBE_BOUNDS_DONE   uniform, before the first CUBERT_PHASE (the code
 *     above it writes no memory): the decision. The cube is *full* when
 *       - every view declared so far has a bound, and
 *       - every bound is <= its view's length (CUBERT_LEN).
 *     In a CHECKED launch a full cube leaves the checked copy of the body
 *     here and runs the body again, from the top, in the UNCHECKED copy
 *     (uniform code above wrote nothing, so running it twice is harmless).
 *     Any other cube continues checked.
 *
 * Why a full cube cannot skip a check that could fire: in a full cube every
 * access of a declared view is < its bound <= its length, so none is out of
 * bounds, provided the claims hold. The claims are verified by VALIDATE, the
 * mode tests run in:
 *   - VALIDATE treats a declared bound as the view's length for the
 *     accessors (CUBERT_LEN still gives the real length): an access at or
 *     beyond the bound is reported as an out-of-bounds access (buffer slot,
 *     index, buffer_length = the bound), the launch fails;
 *   - a view declared after CUBERT_CUBE_BOUNDS_DONE has length 0 for the
 *     accessors in VALIDATE, so any access of it is reported (it would have
 *     escaped the decision);
 *   - a view without a bound makes the cube not full: it stays checked.
 * VALIDATE and UNCHECKED never take the fast path (UNCHECKED has no test to
 * skip); a kernel without CUBERT_CUBE_BOUNDS_DONE runs every cube checked, as
 * before. On CUDA the bounds narrow VALIDATE the same way and
 * CUBERT_CUBE_BOUNDS_DONE does nothing (a GPU's bounds test is a predicated
 * instruction, not a lost vector loop).
 */
#include "cubert/base.h"

/* Part of the dialect: cubert/kernel.h includes this file at its end (after
 * the types it uses); include cubert/kernel.h. Alone it declares nothing. */
#if defined(CUBERT_KERNEL_H) && !defined(CUBERT_KERNEL_BOUNDS_H)
#define CUBERT_KERNEL_BOUNDS_H

#if !defined(__CUDACC__)

/* What the entry point and the checked copy of a body share about one cube
 * (CPU; the dialect's macros use it, kernels need not). */
typedef struct cubert_kernel_fast_t {
  uint32_t views;   /* views declared (CUBERT_BUFFER) */
  uint32_t bounded; /* of them, with a CUBERT_CUBE_BOUND */
  uint32_t fits;    /* 1 while every bound is <= its view's length */
  uint32_t decided; /* CUBERT_CUBE_BOUNDS_DONE was passed */
  uint32_t full;    /* the cube is full: the entry runs the unchecked copy */
} cubert_kernel_fast_t;

#define CUBERT_KERNEL_FAST_INIT_ {0u, 0u, 1u, 0u, 0u}

/* A view's checked length at its declaration: counts the view; 0 for one
 * declared after the decision in VALIDATE (see above). */
CUBERT_KERNEL_FN_ uint64_t cubert_kernel_view_len_(const cubert_kernel_cube_t *cube,
                                                   cubert_kernel_fast_t *fast, uint64_t len) {
  fast->views++;
  if (fast->decided && (cube->mode == CUBERT_KERNEL_MODE_VALIDATE ||
                        cube->mode == CUBERT_KERNEL_MODE_RACECHECK))
    return 0;
  return len;
}

CUBERT_KERNEL_FN_ void cubert_kernel_bound_(const cubert_kernel_cube_t *cube,
                                            cubert_kernel_fast_t *fast, uint64_t *len,
                                            uint64_t length, uint32_t *bounded, uint64_t end) {
  if (!*bounded) {
    *bounded = 1;
    fast->bounded++;
  }
  if (end > length) fast->fits = 0;
  if ((cube->mode == CUBERT_KERNEL_MODE_VALIDATE || cube->mode == CUBERT_KERNEL_MODE_RACECHECK) &&
      end < *len)
    *len = end;
}

#define CUBERT_CUBE_BOUND(name, end)                                                         \
  cubert_kernel_bound_(cubert_cube, cubert_fast_, &(name).len, (name).length, &(name).bounded, \
                       (uint64_t)(end))

#define CUBERT_CUBE_BOUNDS_DONE                                                              \
  do {                                                                                       \
    cubert_fast_->decided = 1;                                                               \
    if (!cubert_unchecked_ && cubert_cube->mode == CUBERT_KERNEL_MODE_CHECKED &&            \
        cubert_fast_->views == cubert_fast_->bounded && cubert_fast_->fits) {                \
      cubert_fast_->full = 1;                                                                \
      return;                                                                                \
    }                                                                                        \
  } while (0)

#else /* __CUDACC__ */

template <typename T>
static __device__ __forceinline__ void cubert_kernel_bound_(const cubert_kernel_cube_t *cube,
                                                            cubert_kernel_view_<T> &v,
                                                            uint64_t end) {
  if (cube->mode == CUBERT_KERNEL_MODE_VALIDATE && end < v.len) v.len = end;
}

#define CUBERT_CUBE_BOUND(name, end) cubert_kernel_bound_(cubert_cube, (name), (uint64_t)(end))
#define CUBERT_CUBE_BOUNDS_DONE ((void)0)

#endif /* __CUDACC__ */

#endif /* CUBERT_KERNEL_BOUNDS_H */
