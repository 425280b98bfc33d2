/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_layout.c: the layout policy, optimal_align, the stride
 * predicates and the copy plan (cubert/layout.h) against plain reference
 * implementations written from the header's formulas, with every overflow
 * checked through __builtin_*_overflow.
 *
 * Input: a sequence of cases; each picks the function, the policy, and
 * descriptors whose dimensions and element sizes are drawn from edge
 * values (0, 1, powers of two, values near 2^32 and 2^64) or small numbers.
 *
 * Invariants: status, layouts, total, strides and plans equal the
 * reference; on failure the outputs are untouched and the error record
 * carries the status; and across functions: every non-empty tensor a policy
 * lays out has strides the copy plan accepts, a plan whose span fits the
 * layout's size, and (CONTIGUOUS policy) a linear plan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/layout.h"
#include "fuzz.h"

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "fuzz_layout: %s:%d: check failed: %s\n", __FILE__, __LINE__,    \
              #cond);                                                                   \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

#define MAX_CASES 64
#define MAX_DESC 4
#define R CUBERT_MAX_RANK

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* 0 on overflow */
static int mul(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static int add(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }
static int round_up(uint64_t v, uint64_t m, uint64_t *out) {
  uint64_t r = v % m;
  if (!r) {
    *out = v;
    return 1;
  }
  return add(v, m - r, out);
}

/* The exact product of v[0..n) times `init` (0 when a factor is 0, even if
 * a partial product of the others would overflow); 0 on overflow. */
static int product(const uint64_t *v, uint32_t n, uint64_t init, uint64_t *out) {
  uint32_t i;
  *out = init;
  for (i = 0; i < n; i++)
    if (v[i] == 0 || init == 0) {
      *out = 0;
      return 1;
    }
  for (i = 0; i < n; i++)
    if (!mul(*out, v[i], out)) return 0;
  return 1;
}

/* A value from an edge set or a small number. */
static uint64_t read_dim(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  switch (b >> 5) {
    case 0: return b & 7;
    case 1: return (b & 31) + 1;
    case 2: return (uint64_t)1 << (b & 31);
    case 3: return ((uint64_t)1 << (32 + (b & 31))) - (b & 1);
    case 4: return UINT64_MAX - (b & 15);
    case 5: return 0xFFFFFFFFull + (b & 3) - 1;
    default: return fuzz_uint(r, 2);
  }
}

static uint64_t read_elem(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  static const uint64_t v[8] = {1, 2, 4, 8, 3, 0, 16, 6};
  return (b & 0x80) ? read_dim(r) : v[b & 7];
}

/* ---- references --------------------------------------------------------------------- */

static cubert_status_t ref_optimal_align(uint64_t last, uint64_t e, uint64_t buf, uint64_t *out) {
  uint64_t p, n = 1;
  if (e == 0 || buf < 16 || !is_pow2(buf)) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (last == 1) {
    *out = e;
    return CUBERT_STATUS_OK;
  }
  if (!mul(last, e, &p) || p > buf) {
    *out = buf;
    return CUBERT_STATUS_OK;
  }
  while (n < p) n <<= 1; /* p <= buf <= 2^63 here */
  *out = n < 16 ? 16 : n > buf ? buf : n;
  return CUBERT_STATUS_OK;
}

/* One descriptor's size and strides (before placement). */
static cubert_status_t ref_one(const cubert_layout_policy_t *pol, const cubert_layout_descriptor_t *d,
                               cubert_layout_t *out) {
  uint32_t i, r = d->rank;
  uint64_t e = d->elem_size;
  memset(out, 0, sizeof(*out));
  if (e == 0 || (d->strategy != CUBERT_LAYOUT_CONTIGUOUS && d->strategy != CUBERT_LAYOUT_OPTIMIZED))
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (r > R) return CUBERT_STATUS_INVALID_ARGUMENT;
  out->rank = r;
  if (pol->kind == CUBERT_LAYOUT_POLICY_CONTIGUOUS) {
    if (!product(d->shape, r, e, &out->size)) return CUBERT_STATUS_OVERFLOW;
    if (r) out->strides[r - 1] = 1;
    for (i = r; i-- > 1;)
      if (!mul(out->strides[i], d->shape[i], &out->strides[i - 1])) return CUBERT_STATUS_OVERFLOW;
  } else {
    uint64_t align = 1, width = r ? d->shape[r - 1] : 1, height = 1, wb, pitch;
    if (d->strategy == CUBERT_LAYOUT_OPTIMIZED &&
        ref_optimal_align(width, e, pol->mem_alignment, &align) != CUBERT_STATUS_OK)
      return CUBERT_STATUS_INVALID_ARGUMENT;
    /* a zero width: an empty tensor, size 0, whatever its height */
    if (r > 1 && width != 0 && !product(d->shape, r - 1, 1, &height)) return CUBERT_STATUS_OVERFLOW;
    if (!mul(width, e, &wb) || !round_up(wb, align, &pitch) || !mul(height, pitch, &out->size))
      return CUBERT_STATUS_OVERFLOW;
    for (i = 0; i < r; i++) out->strides[i] = 1;
    if (r >= 2) out->strides[r - 2] = pitch / e;
    for (i = r >= 2 ? r - 2 : 0; i-- > 0;)
      if (!mul(out->strides[i + 1], d->shape[i + 1], &out->strides[i])) return CUBERT_STATUS_OVERFLOW;
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t ref_apply(const cubert_layout_policy_t *pol, const cubert_layout_descriptor_t *d,
                                 size_t n, cubert_layout_t *out, uint64_t *total) {
  uint64_t off = 0, step;
  size_t i;
  if (n == 0 || (pol->kind != CUBERT_LAYOUT_POLICY_CONTIGUOUS && pol->kind != CUBERT_LAYOUT_POLICY_PITCHED) ||
      !is_pow2(pol->mem_alignment) ||
      (pol->kind == CUBERT_LAYOUT_POLICY_PITCHED && pol->mem_alignment < 16))
    return CUBERT_STATUS_INVALID_ARGUMENT;
  for (i = 0; i < n; i++) {
    cubert_status_t st = ref_one(pol, &d[i], &out[i]);
    if (st != CUBERT_STATUS_OK) return st;
    out[i].offset_start = off;
    if (!round_up(out[i].size, pol->mem_alignment, &step) || !add(off, step, &off))
      return CUBERT_STATUS_OVERFLOW;
  }
  for (i = 0; i < n; i++) out[i].offset_end = off - out[i].offset_start - out[i].size;
  *total = off;
  return CUBERT_STATUS_OK;
}

static int ref_contiguous(uint32_t r, const uint64_t *shape, const uint64_t *strides) {
  uint32_t i;
  uint64_t p;
  if (r == 0 || r > R || strides[r - 1] != 1) return 0;
  for (i = 0; i + 1 < r; i++)
    if (!mul(shape[i + 1], strides[i + 1], &p) || strides[i] != p) return 0;
  return 1;
}

static int ref_pitched(uint32_t r, const uint64_t *shape, const uint64_t *strides) {
  uint32_t i;
  uint64_t p;
  if (r == 0 || r > R || strides[r - 1] != 1) return 0;
  for (i = 0; i < r; i++)
    if (strides[i] == 0) return 0;
  if (r > 1 && strides[r - 2] < shape[r - 1]) return 0;
  for (i = 0; i + 2 < r; i++)
    if (!mul(shape[i + 1], strides[i + 1], &p) || strides[i] != p) return 0;
  return 1;
}

/* Status, and the plan when OK; *either (when not NULL) gets a second
 * acceptable status where the header leaves the order open. */
static cubert_status_t ref_plan(uint32_t r, const uint64_t *shape, const uint64_t *strides, uint64_t e,
                                cubert_copy_plan_t *p, cubert_status_t *either) {
  uint32_t i;
  uint64_t total = e, height = 1;
  *either = CUBERT_STATUS_OK;
  memset(p, 0, sizeof(*p));
  if (e == 0 || r > R) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (r == 0) {
    p->width_bytes = p->src_pitch_bytes = p->total_bytes = p->span_bytes = e;
    p->height = 1;
    return CUBERT_STATUS_OK;
  }
  for (i = 0; i < r; i++)
    if (shape[i] == 0) return CUBERT_STATUS_OK; /* empty transfer: all 0 */
  {
    int overflow = 0, ok = ref_pitched(r, shape, strides);
    for (i = 0; i < r; i++) overflow |= !mul(total, shape[i], &total);
    if (!ok && overflow) {
      *either = CUBERT_STATUS_OVERFLOW;
      return CUBERT_STATUS_UNSUPPORTED;
    }
    if (!ok) return CUBERT_STATUS_UNSUPPORTED;
    if (overflow) return CUBERT_STATUS_OVERFLOW;
  }
  p->total_bytes = total;
  if (r > 1 && strides[r - 2] != shape[r - 1]) {
    uint64_t hm1;
    for (i = 0; i + 1 < r; i++) (void)mul(height, shape[i], &height); /* <= total */
    p->pitched = true;
    p->height = height;
    p->width_bytes = shape[r - 1] * e;
    if (!mul(strides[r - 2], e, &p->src_pitch_bytes) || !mul(height - 1, p->src_pitch_bytes, &hm1) ||
        !add(hm1, p->width_bytes, &p->span_bytes)) {
      memset(p, 0, sizeof(*p));
      return CUBERT_STATUS_OVERFLOW;
    }
  } else {
    p->height = 1;
    p->width_bytes = p->src_pitch_bytes = p->span_bytes = total;
  }
  return CUBERT_STATUS_OK;
}

/* ---- cases --------------------------------------------------------------------------------- */

static void read_descriptor(fuzz_reader_t *r, cubert_layout_descriptor_t *d) {
  uint8_t b = fuzz_u8(r);
  uint32_t i;
  memset(d, 0, sizeof(*d));
  d->strategy = (b & 0x40) ? ((b & 0x80) ? (cubert_layout_strategy_t)7 : CUBERT_LAYOUT_CONTIGUOUS)
                           : CUBERT_LAYOUT_OPTIMIZED;
  d->rank = (b & 15) > R + 1 ? (b & 7) : (b & 15);
  for (i = 0; i < R && i < d->rank; i++) d->shape[i] = read_dim(r);
  d->elem_size = read_elem(r);
}

static void case_apply(fuzz_reader_t *r) {
  cubert_layout_policy_t pol;
  cubert_layout_descriptor_t d[MAX_DESC];
  cubert_layout_t got[MAX_DESC], want[MAX_DESC];
  uint64_t total = 0x5A5A, want_total = 0;
  uint8_t b = fuzz_u8(r);
  size_t n = (size_t)((b >> 2) & 3) + ((b & 0x40) ? 0 : 1), i;
  cubert_error_t err;
  cubert_status_t st, ws;
  pol.kind = (b & 0x80) ? CUBERT_LAYOUT_POLICY_PITCHED : CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  pol.mem_alignment = (b & 0x20) ? read_dim(r) : (uint64_t)1 << (b & 3 ? 3 + (b & 3) * 2 : 0);
  if ((b & 0x10) && (b & 0x40)) pol.kind = (cubert_layout_policy_kind_t)2;
  for (i = 0; i < n; i++) read_descriptor(r, &d[i]);
  memset(got, 0x5A, sizeof got);
  ws = ref_apply(&pol, d, n, want, &want_total);
  st = cubert_layout_policy_apply(&pol, d, n, got, &total, &err);
  if (st != ws) {
    fprintf(stderr, "fuzz_layout: apply: got %s, want %s\n", cubert_status_name(st),
            cubert_status_name(ws));
    abort();
  }
  if (st != CUBERT_STATUS_OK) {
    FUZZ_CHECK(err.status == st && total == 0x5A5A && got[0].size == 0x5A5A5A5A5A5A5A5Aull);
    return;
  }
  FUZZ_CHECK(total == want_total);
  for (i = 0; i < n; i++) {
    cubert_copy_plan_t plan;
    uint64_t bytes = d[i].elem_size;
    uint32_t k;
    int empty = 0;
    FUZZ_CHECK(got[i].size == want[i].size && got[i].rank == want[i].rank &&
               got[i].offset_start == want[i].offset_start && got[i].offset_end == want[i].offset_end);
    for (k = 0; k < R; k++) FUZZ_CHECK(got[i].strides[k] == (k < d[i].rank ? want[i].strides[k] : 0));
    /* the copy plan of what the policy laid out */
    for (k = 0; k < d[i].rank; k++) {
      empty |= d[i].shape[k] == 0;
      bytes *= d[i].shape[k]; /* no overflow: the layout's size holds at least this */
    }
    if (empty) continue;
    FUZZ_CHECK(cubert_copy_plan(d[i].rank, d[i].shape, got[i].strides, d[i].elem_size, &plan, NULL) ==
               CUBERT_STATUS_OK);
    FUZZ_CHECK(plan.total_bytes == bytes && plan.span_bytes <= got[i].size);
    if (pol.kind == CUBERT_LAYOUT_POLICY_CONTIGUOUS) FUZZ_CHECK(!plan.pitched && got[i].size == bytes);
  }
}

static void case_plan(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  uint32_t rank = b & 15, i;
  uint64_t shape[R], strides[R], e;
  cubert_copy_plan_t got, want;
  cubert_error_t err;
  cubert_status_t st, ws, either;
  if (rank > R + 1) rank &= 7;
  memset(shape, 0, sizeof shape);
  memset(strides, 0, sizeof strides);
  for (i = 0; i < R && i < rank; i++) shape[i] = read_dim(r);
  if (b & 0x10) { /* strides from a policy-like formula, maybe perturbed */
    uint64_t s = 1;
    for (i = rank > R ? R : rank; i-- > 0;) {
      strides[i] = s;
      if (i + 1 == rank - 1 && (b & 0x20)) strides[i] = s + fuzz_u8(r); /* pitched rows */
      s = strides[i] * shape[i];
    }
    if (b & 0x40 && rank && rank <= R) strides[fuzz_u8(r) % rank] += 1;
  } else {
    for (i = 0; i < R && i < rank; i++) strides[i] = read_dim(r);
  }
  e = read_elem(r);
  if (rank <= R) {
    FUZZ_CHECK(cubert_strides_is_contiguous_row_major(rank, shape, strides) ==
               (bool)ref_contiguous(rank, shape, strides));
    FUZZ_CHECK(cubert_strides_is_pitched_row_major(rank, shape, strides) ==
               (bool)ref_pitched(rank, shape, strides));
  } else {
    FUZZ_CHECK(!cubert_strides_is_contiguous_row_major(rank, shape, strides) &&
               !cubert_strides_is_pitched_row_major(rank, shape, strides));
  }
  memset(&got, 0x5A, sizeof got);
  ws = ref_plan(rank, shape, strides, e, &want, &either);
  st = cubert_copy_plan(rank, shape, rank == 0 && (b & 0x80) ? NULL : strides, e, &got, &err);
  if (st != ws && st != either) {
    fprintf(stderr, "fuzz_layout: copy_plan: got %s, want %s\n", cubert_status_name(st),
            cubert_status_name(ws));
    abort();
  }
  if (st != CUBERT_STATUS_OK) {
    FUZZ_CHECK(err.status == st && got.total_bytes == 0x5A5A5A5A5A5A5A5Aull);
    return;
  }
  FUZZ_CHECK(got.pitched == want.pitched && got.width_bytes == want.width_bytes &&
             got.height == want.height && got.src_pitch_bytes == want.src_pitch_bytes &&
             got.total_bytes == want.total_bytes && got.span_bytes == want.span_bytes);
}

static void case_align(fuzz_reader_t *r) {
  uint64_t last = read_dim(r), e = read_elem(r), buf = read_dim(r), got = 0x5A, want = 0;
  cubert_error_t err;
  cubert_status_t ws = ref_optimal_align(last, e, buf, &want);
  cubert_status_t st = cubert_layout_optimal_align(last, e, buf, &got, &err);
  FUZZ_CHECK(st == ws);
  if (st == CUBERT_STATUS_OK) FUZZ_CHECK(got == want);
  else FUZZ_CHECK(got == 0x5A && err.status == st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = fuzz_reader_init(data, size);
  uint32_t n;
  cubert_layout_t l;
  uint64_t total;
  cubert_layout_descriptor_t d;
  cubert_layout_policy_t pol;
  memset(&d, 0, sizeof d);
  d.elem_size = 4;
  pol.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  pol.mem_alignment = 8;
  /* NULL arguments */
  FUZZ_CHECK(cubert_layout_policy_apply(NULL, &d, 1, &l, &total, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert_layout_policy_apply(&pol, &d, 1, &l, NULL, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert_copy_plan(1, NULL, NULL, 4, NULL, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
  for (n = 0; n < MAX_CASES && !fuzz_reader_done(&r); n++) {
    switch (fuzz_u8(&r) % 3u) {
      case 0: case_apply(&r); break;
      case 1: case_plan(&r); break;
      default: case_align(&r); break;
    }
  }
  return 0;
}
