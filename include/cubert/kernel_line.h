/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_line.h: vectorized access (CubeCL's Line<T>) and the
 * barrier-free loop over a unit's elements (part of the dialect; included by
 * cubert/kernel.h).
 *
 * Lines. A line is a group of 2, 4, 8 or 16 bytes of one element type, moved
 * as one: cubert_line_<t>x<w>_t, a struct of `w` elements `v[0..w)` aligned to
 * its size (float4-like on CUDA, so a load is one ld.global.v4 instruction;
 * on the CPU a 16-byte move the vectorizer turns into SIMD loads):
 *
 *   bytes  2       4                8                         16
 *          u8x2    u8x4 u16x2       u8x8 u16x4 u32x2 i32x2     u8x16 u16x8 u32x4 i32x4
 *                                   f32x2                      f32x4 u64x2 i64x2 f64x2
 *
 * CUBERT_BUFFER_LINES(line_type, name, slot) declares a view of buffer
 * `slot` as lines (CubeCL's Array<Line<T>>): element i is the line that
 * holds scalar elements [i*w, (i+1)*w); CUBERT_LEN(name) counts whole lines
 * (size_bytes / sizeof(line): a partial line at the end is not part of the
 * view). CUBERT_LOAD(name, i) gives a line, CUBERT_STORE(name, i, line) stores
 * one, and both obey the launch's mode *as a unit*:
 *   CHECKED   a line that is not wholly inside the buffer loads as all
 *             zeros and is not stored (no part of it);
 *   VALIDATE  as CHECKED, reported with the line index and the view's length
 *             in lines;
 *   UNCHECKED raw.
 * The buffer's address must be a multiple of the line's size (device
 * allocations are; a sub-handle whose offset is not is refused): outside
 * UNCHECKED a misaligned line view has length 0, so every access of it is
 * out of bounds (and reported in VALIDATE) instead of a misaligned vector
 * access, which faults on a GPU. Lines work with CUBERT_CUBE_BOUND (bounds
 * in lines).
 *
 * The barrier-free loop. Inside a phase,
 *
 *   CUBERT_UNIT_FOR(i, begin, end) { ... }
 *
 * runs the body for a share of the indices [begin, end) (uint64_t `i`), the
 * shares of the cube's units covering the range exactly once, with no
 * barrier. Which unit gets which index differs, so the body must not depend
 * on it (each index's work is independent; a per-unit partial result, such
 * as a sum later combined across units, is fine):
 *   CUDA  unit u takes begin + u, begin + u + CUBE_DIM, ... (coalesced: the
 *         units of a warp touch consecutive elements);
 *   CPU   unit u takes one contiguous chunk of ceil((end - begin) / CUBE_DIM)
 *         indices (the units run one after the other, so each walks its own
 *         run of memory: a plain counted loop the compiler vectorizes).
 * begin and end are evaluated once per unit; they must be the same for
 * every unit of the cube.
 */
#include "cubert/base.h"

/* Part of the dialect: cubert/kernel.h includes this file at its end (after
 * the types it uses); include cubert/kernel.h. Alone it declares nothing. */
#if defined(CUBERT_KERNEL_H) && !defined(CUBERT_KERNEL_LINE_H)
#define CUBERT_KERNEL_LINE_H

#if defined(__CUDACC__)
#define CUBERT_LINE_ALIGN_(n) __align__(n)
#elif defined(__GNUC__) || defined(__clang__)
#define CUBERT_LINE_ALIGN_(n) __attribute__((aligned(n)))
#else
#define CUBERT_LINE_ALIGN_(n)
#endif

/* A line type: `w` elements of `t`, aligned to w * sizeof(t). */
#define CUBERT_LINE_TYPE_(name, t, w, bytes)                                                 \
  typedef struct CUBERT_LINE_ALIGN_(bytes) cubert_line_##name##_t {                         \
    t v[w];                                                                                  \
  } cubert_line_##name##_t

CUBERT_LINE_TYPE_(u8x2, uint8_t, 2, 2);
CUBERT_LINE_TYPE_(u8x4, uint8_t, 4, 4);
CUBERT_LINE_TYPE_(u8x8, uint8_t, 8, 8);
CUBERT_LINE_TYPE_(u8x16, uint8_t, 16, 16);
CUBERT_LINE_TYPE_(u16x2, uint16_t, 2, 4);
CUBERT_LINE_TYPE_(u16x4, uint16_t, 4, 8);
CUBERT_LINE_TYPE_(u16x8, uint16_t, 8, 16);
CUBERT_LINE_TYPE_(u32x2, uint32_t, 2, 8);
CUBERT_LINE_TYPE_(u32x4, uint32_t, 4, 16);
CUBERT_LINE_TYPE_(i32x2, int32_t, 2, 8);
CUBERT_LINE_TYPE_(i32x4, int32_t, 4, 16);
CUBERT_LINE_TYPE_(f32x2, float, 2, 8);
CUBERT_LINE_TYPE_(f32x4, float, 4, 16);
CUBERT_LINE_TYPE_(u64x2, uint64_t, 2, 16);
CUBERT_LINE_TYPE_(i64x2, int64_t, 2, 16);
CUBERT_LINE_TYPE_(f64x2, double, 2, 16);

/* Elements per line of a line type or value: sizeof(v) / sizeof(v[0]). */
#define CUBERT_LINE_WIDTH(line) (sizeof((line).v) / sizeof((line).v[0]))

/* A view of buffer `slot` as lines of `line_type` (see above). */
#define CUBERT_BUFFER_LINES(line_type, name, slot)                                           \
  CUBERT_BUFFER_ALIGNED_(line_type, name, slot, (uint32_t)sizeof(line_type))

/* A one-pass loop around CUBERT_UNIT_FOR that declares a variable named like
 * CUBERT_UNIT_DONE's case-label constant (cubert/kernel.h): inside the loop
 * the label is no constant, so CUBERT_UNIT_DONE there (where `continue`
 * would continue this loop, not end the unit) does not compile. -Wshadow is
 * off for that one declaration only. `break` in the body leaves both loops. */
#define CUBERT_UNIT_FOR_MARK_                                                                \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"")              \
  for (int CUBERT_UNIT_DONE_cannot_leave_a_CUBERT_UNIT_FOR_loop = 0;                         \
       CUBERT_UNIT_DONE_cannot_leave_a_CUBERT_UNIT_FOR_loop == 0;                            \
       CUBERT_UNIT_DONE_cannot_leave_a_CUBERT_UNIT_FOR_loop = 1)                             \
  _Pragma("GCC diagnostic pop")

#if !defined(__CUDACC__)

/* The first index and the end of the current unit's contiguous chunk. */
CUBERT_KERNEL_FN_ uint64_t cubert_kernel_chunk_first_(uint64_t begin, uint64_t end,
                                                      uint64_t unit, uint32_t units) {
  uint64_t n = end > begin ? end - begin : 0, chunk = (n + units - 1u) / units;
  uint64_t first = begin + unit * chunk;
  return first < end ? first : end;
}

CUBERT_KERNEL_FN_ uint64_t cubert_kernel_chunk_end_(uint64_t begin, uint64_t end,
                                                    uint64_t unit, uint32_t units) {
  uint64_t n = end > begin ? end - begin : 0, chunk = (n + units - 1u) / units;
  uint64_t stop = begin + (unit + 1u) * chunk;
  return stop < end ? stop : end;
}

#define CUBERT_UNIT_FOR(i, begin, end)                                                       \
  CUBERT_UNIT_FOR_MARK_                                                                      \
  for (uint64_t i = cubert_kernel_chunk_first_((uint64_t)(begin), (uint64_t)(end), UNIT_POS,  \
                                               CUBE_DIM),                                    \
                cubert_stop_##i = cubert_kernel_chunk_end_((uint64_t)(begin), (uint64_t)(end), \
                                                           UNIT_POS, CUBE_DIM);              \
       i < cubert_stop_##i; i++)

#else /* __CUDACC__ */

#define CUBERT_UNIT_FOR(i, begin, end)                                                       \
  CUBERT_UNIT_FOR_MARK_                                                                      \
  for (uint64_t i = (uint64_t)(begin) + UNIT_POS, cubert_stop_##i = (uint64_t)(end);         \
       i < cubert_stop_##i; i += CUBE_DIM)

#endif /* __CUDACC__ */

#endif /* CUBERT_KERNEL_LINE_H */
