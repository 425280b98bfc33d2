/* SPDX-License-Identifier: MIT */
/*
 * core/memory/layout.c: the memory layout policies, stride validation and
 * copy plans (docs/cubecl-mapping.md, "Memory layout"). Pure uint64_t arithmetic; every
 * product and rounding is overflow-checked, every failure leaves the outputs
 * untouched.
 */
#include "base/internal.h"
#include "cubert/layout.h"
#include "cubert/driver/arith.h"

/* ---- helpers ------------------------------------------------------------------ */

static cubert_status_t layout_invalid(cubert_error_t *out_error, const char *reason) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
}

static cubert_status_t layout_overflow(cubert_error_t *out_error, const char *reason) {
  return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, reason);
}

static cubert_status_t layout_bad_rank(cubert_error_t *out_error, uint32_t rank) {
  uint64_t field = rank;
  return cubert_error_set(out_error, CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK, &field, 1,
                          "rank exceeds CUBERT_MAX_RANK");
}

/* product(values[begin..end)) into *out. Exact: a zero factor makes it 0
 * even where a prefix of the other factors would overflow. */
static cubert_status_t layout_product(const uint64_t *values, uint32_t begin, uint32_t end,
                                      uint64_t *out) {
  uint64_t p = 1;
  uint32_t i;
  for (i = begin; i < end; i++) {
    if (values[i] == 0) {
      *out = 0;
      return CUBERT_STATUS_OK;
    }
  }
  for (i = begin; i < end; i++) CUBERT_RETURN_IF_ERROR(cubert_u64_mul(p, values[i], &p));
  *out = p;
  return CUBERT_STATUS_OK;
}

/* Smallest power of two >= x, for 1 <= x <= 2^63 (Rust's next_power_of_two;
 * callers pass x <= a power-of-two bound, so it cannot overflow). */
static uint64_t layout_next_pow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/* ---- optimal_align ------------------------------------------------------------ */

cubert_status_t cubert_layout_optimal_align(uint64_t last_dim, uint64_t elem_size,
                                            uint64_t buffer_align, uint64_t *out_align,
                                            cubert_error_t *out_error) {
  uint64_t bytes, align;
  if (!out_align) return layout_invalid(out_error, "optimal_align: out_align is NULL");
  if (elem_size == 0) return layout_invalid(out_error, "optimal_align: elem_size is 0");
  if (buffer_align < 16 || !cubert__is_pow2(buffer_align))
    return layout_invalid(out_error,
                          "optimal_align: buffer_align must be a power of two >= 16");
  if (last_dim == 1) {
    *out_align = elem_size;
    return CUBERT_STATUS_OK;
  }
  /* A product past 64 bits is past buffer_align: clamped to it. */
  if (cubert_u64_mul(last_dim, elem_size, &bytes) != CUBERT_STATUS_OK || bytes > buffer_align) {
    *out_align = buffer_align;
    return CUBERT_STATUS_OK;
  }
  align = layout_next_pow2(bytes); /* <= buffer_align, a power of two */
  *out_align = align < 16 ? 16 : align;
  return CUBERT_STATUS_OK;
}

/* ---- one descriptor ----------------------------------------------------------- */

/* Size and strides of one descriptor under `policy` (already validated),
 * written to *out (offsets not set) only on success. */
static cubert_status_t layout_compute_one(const cubert_layout_policy_t *policy,
                                          const cubert_layout_descriptor_t *desc,
                                          cubert_layout_t *out, cubert_error_t *out_error) {
  cubert_layout_t l;
  uint32_t r = desc->rank, i;
  uint64_t e = desc->elem_size;

  if (desc->strategy != CUBERT_LAYOUT_CONTIGUOUS && desc->strategy != CUBERT_LAYOUT_OPTIMIZED)
    return layout_invalid(out_error, "layout: unknown descriptor strategy");
  if (r > CUBERT_MAX_RANK) return layout_bad_rank(out_error, r);
  if (e == 0) return layout_invalid(out_error, "layout: descriptor elem_size is 0");

  cubert_memset(&l, 0, sizeof l);
  l.rank = r;

  if (policy->kind == CUBERT_LAYOUT_POLICY_CONTIGUOUS) {
    uint64_t elems;
    if (layout_product(desc->shape, 0, r, &elems) != CUBERT_STATUS_OK ||
        cubert_u64_mul(elems, e, &l.size) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: product(shape) * elem_size overflows");
    if (r > 0) {
      l.strides[r - 1] = 1;
      for (i = r - 1; i > 0; i--) {
        if (cubert_u64_mul(l.strides[i], desc->shape[i], &l.strides[i - 1]) != CUBERT_STATUS_OK)
          return layout_overflow(out_error, "layout: stride overflows");
      }
    }
  } else {
    uint64_t width = r > 0 ? desc->shape[r - 1] : 1;
    uint64_t height = 1, width_bytes, pitch, pitch_align = 1;
    if (desc->strategy == CUBERT_LAYOUT_OPTIMIZED)
      /* unreachable: an error (policy_apply checked mem_alignment as optimal_align needs it) */
      CUBERT_RETURN_IF_ERROR(cubert_layout_optimal_align(width, e, policy->mem_alignment,
                                                         &pitch_align, out_error));
    /* a zero width makes the tensor empty whatever its height: size 0 (as
     * the contiguous policy), not an overflow of the height product */
    if (r > 1 && width != 0 && layout_product(desc->shape, 0, r - 1, &height) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: pitched height overflows");
    if (cubert_u64_mul(width, e, &width_bytes) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: width * elem_size overflows");
    if (cubert_u64_round_up(width_bytes, pitch_align, &pitch) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: pitch rounding overflows");
    if (cubert_u64_mul(height, pitch, &l.size) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: height * pitch overflows");
    for (i = 0; i < r; i++) l.strides[i] = 1;
    if (r > 1) {
      l.strides[r - 2] = pitch / e;
      for (i = r - 2; i > 0; i--) {
        if (cubert_u64_mul(l.strides[i], desc->shape[i], &l.strides[i - 1]) != CUBERT_STATUS_OK)
          return layout_overflow(out_error, "layout: stride overflows");
      }
    }
  }
  *out = l;
  return CUBERT_STATUS_OK;
}

/* ---- apply -------------------------------------------------------------------- */

cubert_status_t cubert_layout_policy_apply(const cubert_layout_policy_t *policy,
                                           const cubert_layout_descriptor_t *descriptors,
                                           size_t count, cubert_layout_t *out_layouts,
                                           uint64_t *out_total, cubert_error_t *out_error) {
  uint64_t total = 0, offset = 0, slot;
  size_t i;
  cubert_layout_t l;

  if (!policy || !descriptors || !out_layouts || !out_total)
    return layout_invalid(out_error, "layout: NULL argument");
  if (count == 0) return layout_invalid(out_error, "layout: no descriptors");
  if (policy->kind != CUBERT_LAYOUT_POLICY_CONTIGUOUS &&
      policy->kind != CUBERT_LAYOUT_POLICY_PITCHED)
    return layout_invalid(out_error, "layout: unknown policy kind");
  if (!cubert__is_pow2(policy->mem_alignment))
    return layout_invalid(out_error, "layout: mem_alignment must be a non-zero power of two");
  if (policy->kind == CUBERT_LAYOUT_POLICY_PITCHED && policy->mem_alignment < 16)
    return layout_invalid(out_error, "layout: a pitched policy needs mem_alignment >= 16");

  /* One descriptor (a single allocation: the common case): one pass. */
  if (count == 1) {
    CUBERT_RETURN_IF_ERROR(layout_compute_one(policy, &descriptors[0], &l, out_error));
    if (cubert_u64_round_up(l.size, policy->mem_alignment, &slot) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: size rounding to mem_alignment overflows");
    l.offset_start = 0;
    l.offset_end = slot - l.size;
    out_layouts[0] = l;
    *out_total = slot;
    return CUBERT_STATUS_OK;
  }

  /* Pass 1: validate everything and compute the total; nothing is written. */
  for (i = 0; i < count; i++) {
    CUBERT_RETURN_IF_ERROR(layout_compute_one(policy, &descriptors[i], &l, out_error));
    if (cubert_u64_round_up(l.size, policy->mem_alignment, &slot) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: size rounding to mem_alignment overflows");
    if (cubert_u64_add(total, slot, &total) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "layout: total allocation size overflows");
  }

  /* Pass 2: the same computations, which succeeded above, now written out
   * with the offsets of offset_handles. */
  for (i = 0; i < count; i++) {
    /* unreachable: an error (pass 1 computed the same without one) */
    CUBERT_RETURN_IF_ERROR(layout_compute_one(policy, &descriptors[i], &l, out_error));
    (void)cubert_u64_round_up(l.size, policy->mem_alignment, &slot);
    l.offset_start = offset;
    l.offset_end = total - offset - l.size;
    out_layouts[i] = l;
    offset += slot;
  }
  *out_total = total;
  return CUBERT_STATUS_OK;
}

/* ---- stride validation -------------------------------------------------------- */

/* stride[i] == shape[i+1] * stride[i+1] for every i < last (overflow: no). */
static bool strides_chain_matches(const uint64_t *shape, const uint64_t *strides,
                                  uint32_t last) {
  uint32_t i;
  uint64_t expect;
  for (i = 0; i < last; i++) {
    if (cubert_u64_mul(shape[i + 1], strides[i + 1], &expect) != CUBERT_STATUS_OK) return false;
    if (strides[i] != expect) return false;
  }
  return true;
}

bool cubert_strides_is_contiguous_row_major(uint32_t rank, const uint64_t *shape,
                                            const uint64_t *strides) {
  if (rank == 0 || rank > CUBERT_MAX_RANK || !shape || !strides) return false;
  if (strides[rank - 1] != 1) return false;
  return strides_chain_matches(shape, strides, rank - 1);
}

bool cubert_strides_is_pitched_row_major(uint32_t rank, const uint64_t *shape,
                                         const uint64_t *strides) {
  uint32_t i;
  if (rank == 0 || rank > CUBERT_MAX_RANK || !shape || !strides) return false;
  if (strides[rank - 1] != 1) return false;
  for (i = 0; i < rank; i++)
    if (strides[i] == 0) return false;
  if (rank > 1) {
    if (strides[rank - 2] < shape[rank - 1]) return false;
    if (!strides_chain_matches(shape, strides, rank - 2)) return false;
  }
  return true;
}

/* ---- copy plan ---------------------------------------------------------------- */

cubert_status_t cubert_copy_plan(uint32_t rank, const uint64_t *shape, const uint64_t *strides,
                                 uint64_t elem_size, cubert_copy_plan_t *out_plan,
                                 cubert_error_t *out_error) {
  cubert_copy_plan_t p;
  uint32_t i;

  if (!out_plan) return layout_invalid(out_error, "copy plan: out_plan is NULL");
  if (elem_size == 0) return layout_invalid(out_error, "copy plan: elem_size is 0");
  if (rank > CUBERT_MAX_RANK) return layout_bad_rank(out_error, rank);
  if (rank > 0 && (!shape || !strides))
    return layout_invalid(out_error, "copy plan: shape or strides is NULL");

  cubert_memset(&p, 0, sizeof p);
  if (rank == 0) {
    p.width_bytes = p.src_pitch_bytes = p.total_bytes = p.span_bytes = elem_size;
    p.height = 1;
    *out_plan = p;
    return CUBERT_STATUS_OK;
  }
  for (i = 0; i < rank; i++) {
    if (shape[i] == 0) { /* empty transfer: nothing addressed, nothing to copy */
      *out_plan = p;
      return CUBERT_STATUS_OK;
    }
  }
  if (!cubert_strides_is_pitched_row_major(rank, shape, strides))
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, NULL, 0,
                            "strides are neither contiguous nor pitched row-major");

  if (rank > 1 && strides[rank - 2] != shape[rank - 1]) {
    uint64_t span;
    p.pitched = true;
    /* unreachable: two edges gcc lists for this chain at -O0 (each of its six overflows is tested) */
    if (cubert_u64_mul(shape[rank - 1], elem_size, &p.width_bytes) != CUBERT_STATUS_OK ||
        layout_product(shape, 0, rank - 1, &p.height) != CUBERT_STATUS_OK ||
        cubert_u64_mul(strides[rank - 2], elem_size, &p.src_pitch_bytes) != CUBERT_STATUS_OK ||
        cubert_u64_mul(p.width_bytes, p.height, &p.total_bytes) != CUBERT_STATUS_OK ||
        cubert_u64_mul(p.height - 1, p.src_pitch_bytes, &span) != CUBERT_STATUS_OK ||
        cubert_u64_add(span, p.width_bytes, &p.span_bytes) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "copy plan: byte count overflows");
  } else {
    uint64_t elems;
    if (layout_product(shape, 0, rank, &elems) != CUBERT_STATUS_OK ||
        cubert_u64_mul(elems, elem_size, &p.total_bytes) != CUBERT_STATUS_OK)
      return layout_overflow(out_error, "copy plan: byte count overflows");
    p.width_bytes = p.src_pitch_bytes = p.span_bytes = p.total_bytes;
    p.height = 1;
  }
  *out_plan = p;
  return CUBERT_STATUS_OK;
}
