/* SPDX-License-Identifier: MIT */
/*
 * cubert/layout.h: the memory layout policy (docs/cubecl-mapping.md, "Memory
 * layout"; CubeCL's
 * MemoryLayoutPolicy, MemoryLayoutStrategy, MemoryLayoutDescriptor,
 * MemoryLayout, optimal_align, has_contiguous_row_major_strides,
 * has_pitched_row_major_strides) and the copy plan a server derives from a
 * CopyDescriptor's shape and strides.
 *
 * A policy turns a list of tensor descriptors into ONE shared allocation of
 * `total` bytes plus, per descriptor, its strides (in elements), its size in
 * bytes and its place in the allocation as (offset_start, offset_end): the
 * sub-handle of descriptor i is the base handle with offset_start bytes
 * skipped at the front and offset_end bytes trimmed at the end (CubeCL's
 * Handle and offset_handles). This header only computes the numbers; the
 * client creates the base handle and the sub-handles from them.
 *
 * Everything here is pure value arithmetic in uint64_t (independent of the
 * width of size_t), overflow-checked: thread-safe, non-blocking, no
 * allocation, borrows its inputs only for the call.
 *
 * Where CubeCL panics or leaves a case undefined, cubert defines it:
 *  - rank 0 (a scalar) is one element: size = elem_size, no strides, under
 *    both policies (CubeCL's contiguous stride helper underflows on rank 0;
 *    its pitched policy already gives `O, [], 4` -> 4).
 *  - a zero-sized dimension is a valid empty tensor: size 0 (it takes no
 *    bytes of the shared allocation), strides still computed by the same
 *    formulas (so they may contain 0; nothing is divided by a dimension).
 *    CubeCL's pitched policy uses height = max(1, product) and would reserve
 *    one padded row for e.g. [0, 5]; cubert reserves nothing.
 *  - optimal_align with buffer_align < 16 (Rust's clamp panics) and every
 *    other bad input return a status with an error record, never a panic.
 */
#ifndef CUBERT_LAYOUT_H
#define CUBERT_LAYOUT_H

#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

/* MemoryLayoutStrategy: what a caller asks for. The PITCHED policy honours
 * it; the CONTIGUOUS policy lays out every descriptor contiguously. */
typedef enum cubert_layout_strategy_e {
  CUBERT_LAYOUT_CONTIGUOUS = 0, /* standard row-major, no padding */
  CUBERT_LAYOUT_OPTIMIZED = 1,  /* the runtime's choice (pitched rows on CUDA/HIP) */
  CUBERT_LAYOUT_STRATEGY_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_layout_strategy_t;

/* Which MemoryLayoutPolicy a driver uses. */
typedef enum cubert_layout_policy_kind_e {
  CUBERT_LAYOUT_POLICY_CONTIGUOUS = 0, /* CPU (8), wgpu/Metal (device alignment), dummy (4) */
  CUBERT_LAYOUT_POLICY_PITCHED = 1,    /* CUDA (512), HIP (max(32, texture, surface)) */
  CUBERT_LAYOUT_POLICY_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_layout_policy_kind_t;

/* A policy: its kind and the alignment of every tensor's start inside the
 * shared allocation (a power of two; >= 16 for PITCHED). */
typedef struct cubert_layout_policy_t {
  cubert_layout_policy_kind_t kind;
  uint64_t mem_alignment;
} cubert_layout_policy_t;

/* MemoryLayoutDescriptor: one tensor to allocate. shape[0..rank) are the
 * dimensions (outermost first), elem_size the element size in bytes. */
typedef struct cubert_layout_descriptor_t {
  cubert_layout_strategy_t strategy;
  uint32_t rank;
  uint64_t shape[CUBERT_MAX_RANK];
  uint64_t elem_size;
} cubert_layout_descriptor_t;

/* MemoryLayout of one descriptor, without the handle: `size` bytes starting
 * at byte offset_start of the shared allocation; offset_end = total -
 * offset_start - size. strides[0..rank) are in elements (entries past rank
 * are 0). For a pitched tensor, size covers the padded rows (height * pitch),
 * not product(shape) * elem_size. */
typedef struct cubert_layout_t {
  uint64_t size;
  uint32_t rank;
  uint64_t strides[CUBERT_MAX_RANK];
  uint64_t offset_start;
  uint64_t offset_end;
} cubert_layout_t;

/* optimal_align: the row alignment, in bytes, of an optimized
 * pitched tensor whose last dimension is last_dim elements of elem_size
 * bytes:
 *   last_dim == 1 -> elem_size (not clamped);
 *   otherwise     -> next_power_of_two(last_dim * elem_size) clamped to
 *                    [16, buffer_align] (next_power_of_two(0) is 1, so
 *                    last_dim 0 gives 16). A product that does not fit in
 *                    64 bits is above buffer_align, so it gives buffer_align
 *                    (exact; no OVERFLOW).
 * Returns OK; INVALID_ARGUMENT (record kind INVALID_ARGUMENT) when out_align
 * is NULL, elem_size is 0, or buffer_align is below 16 or not a power of two
 * (CubeCL's clamp panics below 16). *out_align is untouched on failure.
 * out_error may be NULL. Pure, thread-safe, non-blocking. */
CUBERT_API cubert_status_t cubert_layout_optimal_align(uint64_t last_dim, uint64_t elem_size,
                                                       uint64_t buffer_align,
                                                       uint64_t *out_align,
                                                       cubert_error_t *out_error);

/* MemoryLayoutPolicy::apply: lay out descriptors[0..count)
 * in one shared allocation. For each descriptor (shape s, rank r, element
 * size e; for rank 0 the last dimension is 1):
 *   CONTIGUOUS policy (either strategy):
 *     size = product(s) * e; strides row-major (stride[r-1] = 1,
 *     stride[i] = stride[i+1] * s[i+1]).
 *   PITCHED policy:
 *     pitch_align = 1 for CONTIGUOUS, cubert_layout_optimal_align(s[r-1], e,
 *     mem_alignment) for OPTIMIZED; width = s[r-1] (1 for rank 0);
 *     height = product(s[0..r-1)) (1 for rank <= 1);
 *     pitch = round_up(width * e, pitch_align); size = height * pitch;
 *     strides all 1, then stride[r-2] = pitch / e (integer division, as
 *     CubeCL; exact whenever e is a power of two) and
 *     stride[i] = stride[i+1] * s[i+1] for i < r-2.
 * Then, with a running offset from 0: offset_start_i = offset,
 * offset += round_up(size_i, mem_alignment); *out_total = the final offset,
 * and offset_end_i = total - offset_start_i - size_i. Empty tensors take 0
 * bytes (see the top of this file); if every tensor is empty the total is 0.
 *
 * out_layouts[0..count) receives one layout per descriptor (it must not
 * overlap `descriptors`). Borrows everything for the call.
 *
 * Returns OK, or (with out_layouts, *out_total untouched, and the record
 * filled when out_error is not NULL):
 *   INVALID_ARGUMENT  kind INVALID_ARGUMENT: policy, descriptors, out_layouts
 *                     or out_total NULL; count 0; unknown policy kind or
 *                     strategy; mem_alignment 0 or not a power of two; a
 *                     PITCHED policy with mem_alignment < 16 (what
 *                     optimal_align requires); a descriptor with elem_size 0.
 *   INVALID_ARGUMENT  kind STRIDE_UNSUPPORTED_RANK (field[0] = rank): a
 *                     descriptor with rank > CUBERT_MAX_RANK.
 *   OVERFLOW          kind OVERFLOW: a size (product(shape) * e, width * e,
 *                     height * pitch), a rounding up (pitch, size to
 *                     mem_alignment), a stride, or the total does not fit in
 *                     64 bits (also a stride of an empty tensor, e.g.
 *                     [0, 2^40, 2^40]).
 * The first failing descriptor in order decides the error.
 * Pure, thread-safe, non-blocking. */
CUBERT_API cubert_status_t cubert_layout_policy_apply(const cubert_layout_policy_t *policy,
                                                      const cubert_layout_descriptor_t *descriptors,
                                                      size_t count,
                                                      cubert_layout_t *out_layouts,
                                                      uint64_t *out_total,
                                                      cubert_error_t *out_error);

/* ---- stride validation ---------------------------------------------------- */

/* has_contiguous_row_major_strides: strides[r-1] == 1 and
 * strides[i] == shape[i+1] * strides[i+1] for every i < r-1 (a product that
 * overflows 64 bits never matches). Shape and strides share one rank, so
 * CubeCL's mismatched-ranks panic cannot arise. Defined where CubeCL panics:
 * rank 0 -> false (a scalar has no strides to validate; cubert_copy_plan
 * handles rank 0 itself), rank > CUBERT_MAX_RANK -> false, NULL shape or
 * strides -> false. Pure, thread-safe, non-blocking. */
CUBERT_API bool cubert_strides_is_contiguous_row_major(uint32_t rank, const uint64_t *shape,
                                                       const uint64_t *strides);

/* has_pitched_row_major_strides: strides[r-1] == 1, no stride is 0,
 * strides[r-2] >= shape[r-1] (if r > 1), and
 * strides[i] == shape[i+1] * strides[i+1] for every i < r-2. Contiguous
 * strides of a shape without zero dimensions are pitched too. Same defined
 * false cases as cubert_strides_is_contiguous_row_major. Pure, thread-safe,
 * non-blocking. */
CUBERT_API bool cubert_strides_is_pitched_row_major(uint32_t rank, const uint64_t *shape,
                                                    const uint64_t *strides);

/* How a server moves a tensor between its (possibly pitched) buffer and a
 * packed host buffer: `height` rows of `width_bytes` bytes; on the strided
 * (device) side consecutive rows are src_pitch_bytes apart (the source pitch
 * of a read, the destination pitch of a write); on the packed (host) side
 * they are width_bytes apart.
 *   pitched      true: a 2-D copy (cuMemcpy2DAsync) is needed
 *                (src_pitch_bytes > width_bytes); false: one linear copy of
 *                total_bytes (then height = 1, width_bytes = src_pitch_bytes
 *                = total_bytes).
 *   total_bytes  bytes of the packed side: product(shape) * elem_size
 *                (elem_size for rank 0). 0 means an empty transfer: skip it.
 *   span_bytes   bytes the strided side covers from its start:
 *                (height - 1) * src_pitch_bytes + width_bytes (total_bytes
 *                when not pitched); a server checks it against the
 *                binding's size. */
typedef struct cubert_copy_plan_t {
  bool pitched;
  uint64_t width_bytes;
  uint64_t height;
  uint64_t src_pitch_bytes;
  uint64_t total_bytes;
  uint64_t span_bytes;
} cubert_copy_plan_t;

/* The copy plan of a CopyDescriptor's shape/strides (CUDA's read
 * and write): strides must be pitched row-major
 * (cubert_strides_is_pitched_row_major); the transfer is pitched iff
 * rank > 1 and strides[r-2] != shape[r-1]: width_bytes = shape[r-1] * e,
 * height = product(shape[0..r-1)), src_pitch_bytes = strides[r-2] * e.
 * Otherwise it is linear. Defined cases: rank 0 is a linear copy of
 * elem_size bytes (strides unused, may be NULL); a shape with a zero
 * dimension is an empty transfer (all numbers 0, pitched false) whatever
 * its strides (no element is addressed; the policies' own layouts of such
 * shapes may hold zero strides). A driver that only supports contiguous
 * data (CPU write) additionally rejects plans with pitched == true.
 *
 * Returns OK, or (with *out_plan untouched, record filled when out_error is
 * not NULL):
 *   INVALID_ARGUMENT  kind INVALID_ARGUMENT: out_plan NULL, elem_size 0, or
 *                     shape/strides NULL with rank > 0.
 *   INVALID_ARGUMENT  kind STRIDE_UNSUPPORTED_RANK (field[0] = rank):
 *                     rank > CUBERT_MAX_RANK.
 *   UNSUPPORTED       kind IO_UNSUPPORTED_STRIDES: non-empty tensor whose
 *                     strides are neither contiguous nor pitched row-major.
 *   OVERFLOW          kind OVERFLOW: a byte count (total, width, pitch,
 *                     span) does not fit in 64 bits.
 * Pure, thread-safe, non-blocking. */
CUBERT_API cubert_status_t cubert_copy_plan(uint32_t rank, const uint64_t *shape,
                                            const uint64_t *strides, uint64_t elem_size,
                                            cubert_copy_plan_t *out_plan,
                                            cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_LAYOUT_H */
