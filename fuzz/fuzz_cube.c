/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_cube.c: cube counts, their selection and spreading, cube dims
 * and io-optimized vector sizes (cubert/cube.h) against plain references
 * written from the header: the spread computed the obvious way (halve an
 * axis rounding up, double the next, in 64 bits), products and quotients in
 * 64 bits with explicit overflow checks, the vector ladder by a loop.
 *
 * Input: a sequence of cases; each picks a function and its operands from
 * edge values (0, 1, powers of two, 2^31, 2^32 - 1, ...) or raw bytes.
 *
 * Invariants: statuses and results equal the reference; outputs are
 * untouched on failure; a successful spread fits max.x and max.y and its
 * product is at least the request; the selection is exact iff the product
 * equals the request; the count's text round-trips its numbers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cube.h"
#include "fuzz.h"

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "fuzz_cube: %s:%d: check failed: %s\n", __FILE__, __LINE__,    \
              #cond);                                                                 \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

#define MAX_CASES 64

static uint32_t read_u32(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  switch (b >> 5) {
    case 0: return b & 7;
    case 1: return (b & 31) + 1;
    case 2: return (uint32_t)1 << (b & 31);
    case 3: return UINT32_MAX - (b & 3);
    case 4: return ((uint32_t)1 << (b & 31)) + 1;
    case 5: return 65535u + (b & 3) - 1;
    default: return (uint32_t)fuzz_uint(r, 4);
  }
}

static cubert_dim3_t read_dim3(fuzz_reader_t *r) {
  cubert_dim3_t d;
  d.x = read_u32(r);
  d.y = read_u32(r);
  d.z = read_u32(r);
  return d;
}

static int dim_eq(cubert_dim3_t a, cubert_dim3_t b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

/* ---- references ---------------------------------------------------------------------- */

static cubert_status_t ref_spread(cubert_dim3_t max, uint32_t n, cubert_dim3_t *out) {
  uint64_t c[3], m[3];
  int a;
  c[0] = n;
  c[1] = 1;
  c[2] = 1;
  m[0] = max.x;
  m[1] = max.y;
  m[2] = max.z;
  for (a = 0; a < 2; a++) {
    if (c[a] <= m[a]) break;
    if (m[a] == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
    while (c[a] > m[a]) {
      c[a] = (c[a] + 1) / 2;
      c[a + 1] *= 2;
      if (c[a + 1] > UINT32_MAX) return CUBERT_STATUS_OVERFLOW;
    }
  }
  out->x = (uint32_t)c[0];
  out->y = (uint32_t)c[1];
  out->z = (uint32_t)c[2];
  return CUBERT_STATUS_OK;
}

/* Units per cube in 64 bits; 0 on overflow. */
static int ref_units(cubert_dim3_t d, uint64_t *out) {
  uint64_t xy = (uint64_t)d.x * d.y;
  return !__builtin_mul_overflow(xy, (uint64_t)d.z, out);
}

static cubert_status_t ref_vector_sizes(uint64_t max_vec, uint32_t load_bits, size_t e,
                                        uint32_t *out, size_t *count) {
  uint64_t bits, max;
  size_t n = 0;
  if (e == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  bits = (uint64_t)e > UINT64_MAX / 8 ? 0 : (uint64_t)e * 8;
  max = bits == 0 ? 0 : load_bits / bits;
  if (max_vec < max) max = max_vec;
  if (max == 0) max = 1;
  while (!(max & 1)) {
    max >>= 1;
    n++;
  }
  *count = n + 1;
  {
    size_t i;
    for (i = 0; i <= n; i++) out[i] = (uint32_t)1 << (n - i);
  }
  return CUBERT_STATUS_OK;
}

/* ---- cases ------------------------------------------------------------------------------- */

static void case_spread(fuzz_reader_t *r) {
  cubert_dim3_t max = read_dim3(r), got = {7, 7, 7}, want = {0, 0, 0};
  uint32_t n = read_u32(r);
  cubert_cube_count_selection_t sel;
  cubert_status_t ws = ref_spread(max, n, &want), st = cubert_cube_count_spread(max, n, &got, NULL);
  FUZZ_CHECK(st == ws);
  memset(&sel, 0x5A, sizeof sel);
  FUZZ_CHECK(cubert_cube_count_selection_new(max, n, &sel, NULL) == ws);
  if (st != CUBERT_STATUS_OK) {
    FUZZ_CHECK(got.x == 7 && got.y == 7 && got.z == 7 && sel.actual == 0x5A5A5A5A5A5A5A5Aull);
    return;
  }
  FUZZ_CHECK(dim_eq(got, want) && got.x <= max.x && (got.y <= max.y || got.y == 1));
  {
    uint64_t actual = (uint64_t)got.x * got.y * got.z;
    FUZZ_CHECK(actual >= n && sel.actual == actual && sel.exact == (actual == n));
    FUZZ_CHECK(sel.count.kind == CUBERT_CUBE_COUNT_STATIC && dim_eq(sel.count.count, got));
    FUZZ_CHECK(cubert_cube_count_selection_has_idle(&sel) == !sel.exact);
    FUZZ_CHECK(dim_eq(cubert_cube_count_selection_cube_count(&sel).count, got));
  }
}

static void case_elemwise(fuzz_reader_t *r) {
  cubert_dim3_t max = read_dim3(r), dim = read_dim3(r), want = {0, 0, 0};
  uint64_t elems = (fuzz_u8(r) & 1) ? fuzz_uint(r, 8) : read_u32(r), units = 0, cubes;
  cubert_cube_count_t got;
  cubert_status_t st, ws, either = CUBERT_STATUS_OK;
  memset(&got, 0x5A, sizeof got);
  st = cubert_calculate_cube_count_elemwise(max, elems, dim, &got, NULL);
  if (!ref_units(dim, &units)) ws = CUBERT_STATUS_OVERFLOW;
  else if (units == 0) ws = CUBERT_STATUS_INVALID_ARGUMENT;
  else if (elems == 0) ws = CUBERT_STATUS_OK;
  else if ((cubes = elems / units + (elems % units != 0)) > UINT32_MAX) ws = CUBERT_STATUS_OVERFLOW;
  else ws = ref_spread(max, (uint32_t)cubes, &want);
  if (elems == 0) either = CUBERT_STATUS_OK; /* the order of the two checks is open */
  FUZZ_CHECK(st == ws || (elems == 0 && st == either));
  if (st != CUBERT_STATUS_OK) {
    FUZZ_CHECK(got.count.x == 0x5A5A5A5Au);
    return;
  }
  FUZZ_CHECK(got.kind == CUBERT_CUBE_COUNT_STATIC && dim_eq(got.count, want));
}

static void case_dims(fuzz_reader_t *r) {
  cubert_dim3_t a = read_dim3(r), b = read_dim3(r);
  cubert_hardware_properties_t hw;
  uint64_t units = 0x5A, want = 0;
  uint64_t wu = (fuzz_u8(r) & 1) ? fuzz_uint(r, 8) : read_u32(r);
  cubert_cube_dim_t got = {9, 9, 9};
  cubert_status_t st;
  int ok = ref_units(a, &want);
  FUZZ_CHECK(cubert_cube_dim_num_elems(a, &units, NULL) ==
             (ok ? CUBERT_STATUS_OK : CUBERT_STATUS_OVERFLOW));
  FUZZ_CHECK(ok ? units == want : units == 0x5A);
  FUZZ_CHECK(cubert_cube_dim_can_contain(a, b) == (a.x >= b.x && a.y >= b.y && a.z >= b.z));
  memset(&hw, 0, sizeof hw);
  hw.plane_size_max = (uint32_t)(fuzz_u8(r) & 0x7F);
  hw.max_units_per_cube = read_u32(r);
  hw.num_cpu_cores = (fuzz_u8(r) & 1) ? read_u32(r) : 0;
  st = cubert_cube_dim_new(&hw, wu, &got, NULL);
  if (hw.plane_size_max == 0) {
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_ARGUMENT && got.x == 9);
  } else {
    uint64_t p = hw.plane_size_max, w = wu > UINT32_MAX ? UINT32_MAX : wu, planes, limit, q, y;
    if (hw.num_cpu_cores) {
      planes = hw.num_cpu_cores < w ? hw.num_cpu_cores : w;
    } else {
      uint32_t lg = 0;
      q = w / p;
      if (q < 1) q = 1;
      while (lg < 3 && (q >> (lg + 1)) != 0) lg++;
      planes = (uint64_t)1 << lg;
    }
    limit = hw.max_units_per_cube / p;
    y = limit < planes ? limit : planes;
    if (y < 1) y = 1;
    FUZZ_CHECK(st == CUBERT_STATUS_OK && got.x == p && got.y == y && got.z == 1);
  }
  /* constructors */
  FUZZ_CHECK(dim_eq(cubert_cube_dim_new_3d(a.x, a.y, a.z), a));
  FUZZ_CHECK(dim_eq(cubert_cube_dim_new_2d(a.x, a.y), cubert_cube_dim_new_3d(a.x, a.y, 1)));
  FUZZ_CHECK(dim_eq(cubert_cube_dim_new_1d(a.x), cubert_cube_dim_new_3d(a.x, 1, 1)));
  FUZZ_CHECK(dim_eq(cubert_cube_dim_new_single(), cubert_cube_dim_new_3d(1, 1, 1)));
}

static void case_vectors(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  uint64_t max_vec = (b & 1) ? UINT64_MAX : read_u32(r);
  uint32_t load = read_u32(r), got[CUBERT_IO_VECTOR_SIZES_MAX], want[64];
  size_t e = (b & 2) ? (size_t)fuzz_uint(r, sizeof(size_t)) : (size_t)(b >> 4), n = 99, wn = 0, cap;
  cubert_status_t ws = ref_vector_sizes(max_vec, load, e, want, &wn), st;
  cubert_hardware_properties_t hw;
  st = cubert_io_optimized_vector_sizes_from_limits(max_vec, load, e, got, CUBERT_IO_VECTOR_SIZES_MAX, &n, NULL);
  FUZZ_CHECK(st == ws);
  if (st != CUBERT_STATUS_OK) {
    FUZZ_CHECK(n == 99);
    return;
  }
  FUZZ_CHECK(n == wn && n <= CUBERT_IO_VECTOR_SIZES_MAX && memcmp(got, want, n * sizeof got[0]) == 0);
  /* query form, a short buffer, the hardware form */
  n = 0;
  FUZZ_CHECK(cubert_io_optimized_vector_sizes_from_limits(max_vec, load, e, NULL, 0, &n,
                                                          NULL) == CUBERT_STATUS_OK && n == wn);
  cap = wn - 1;
  memset(got, 0, sizeof got);
  FUZZ_CHECK(cubert_io_optimized_vector_sizes_from_limits(max_vec, load, e, got, cap, &n, NULL) ==
             (cap < wn ? CUBERT_STATUS_OUT_OF_RANGE : CUBERT_STATUS_OK));
  FUZZ_CHECK(got[0] == 0); /* nothing written on failure */
  FUZZ_CHECK(cubert_io_optimized_vector_sizes_from_limits(max_vec, load, e, NULL, 1, &n, NULL) ==
             CUBERT_STATUS_INVALID_ARGUMENT);
  memset(&hw, 0, sizeof hw);
  hw.max_vector_size = max_vec;
  hw.load_width = load;
  FUZZ_CHECK(cubert_io_optimized_vector_sizes(&hw, e, got, CUBERT_IO_VECTOR_SIZES_MAX, &n,
                                              NULL) == CUBERT_STATUS_OK &&
             n == wn && memcmp(got, want, n * sizeof got[0]) == 0);
}

static void case_count(fuzz_reader_t *r) {
  cubert_dim3_t d = read_dim3(r);
  uint8_t b = fuzz_u8(r);
  cubert_cube_count_t c = cubert_cube_count_new_3d(d.x, d.y, d.z), dyn;
  cubert_binding_t bind;
  char buf[CUBERT_CUBE_COUNT_FORMAT_MAX], want[64];
  size_t len = 0, size = (size_t)(b % (CUBERT_CUBE_COUNT_FORMAT_MAX + 1));
  int wl = snprintf(want, sizeof want, "(%" PRIu32 ", %" PRIu32 ", %" PRIu32 ")", d.x, d.y, d.z);
  FUZZ_CHECK(c.kind == CUBERT_CUBE_COUNT_STATIC && dim_eq(c.count, d));
  FUZZ_CHECK(cubert_cube_count_is_empty(&c) == (d.x == 0 || d.y == 0 || d.z == 0));
  FUZZ_CHECK(dim_eq(cubert_cube_count_new_2d(d.x, d.y).count, cubert_cube_count_new_3d(d.x, d.y, 1).count));
  FUZZ_CHECK(dim_eq(cubert_cube_count_new_1d(d.x).count, cubert_cube_count_new_3d(d.x, 1, 1).count));
  FUZZ_CHECK(dim_eq(cubert_cube_count_new_single().count, cubert_cube_count_new_3d(1, 1, 1).count));
  memset(buf, '#', sizeof buf);
  if ((size_t)wl + 1 <= size) {
    FUZZ_CHECK(cubert_cube_count_format(&c, buf, size, &len, NULL) == CUBERT_STATUS_OK);
    FUZZ_CHECK(len == (size_t)wl && strcmp(buf, want) == 0);
  } else {
    cubert_status_t st = cubert_cube_count_format(&c, buf, size, &len, NULL);
    FUZZ_CHECK(st == CUBERT_STATUS_OUT_OF_RANGE || (size == 0 && st == CUBERT_STATUS_INVALID_ARGUMENT));
    FUZZ_CHECK(buf[0] == '#'); /* nothing written */
  }
  memset(&bind, 0, sizeof bind);
  bind.memory.index = d.x;
  bind.memory.generation = d.y;
  dyn = cubert_cube_count_new_dynamic(&bind);
  FUZZ_CHECK(dyn.kind == CUBERT_CUBE_COUNT_DYNAMIC && !cubert_cube_count_is_empty(&dyn) &&
             dyn.binding.memory.index == d.x);
  FUZZ_CHECK(cubert_cube_count_format(&dyn, buf, sizeof buf, &len, NULL) == CUBERT_STATUS_OK &&
             len == 7 && strcmp(buf, "binding") == 0);
  dyn.kind = (cubert_cube_count_kind_t)(2 + (b & 1));
  FUZZ_CHECK(cubert_cube_count_format(&dyn, buf, sizeof buf, &len,
                                      NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = fuzz_reader_init(data, size);
  uint32_t n;
  cubert_dim3_t one = {1, 1, 1};
  FUZZ_CHECK(cubert_cube_count_spread(one, 1, NULL, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert_cube_count_is_empty(NULL));
  FUZZ_CHECK(!cubert_cube_count_selection_has_idle(NULL));
  for (n = 0; n < MAX_CASES && !fuzz_reader_done(&r); n++) {
    switch (fuzz_u8(&r) % 5u) {
      case 0: case_spread(&r); break;
      case 1: case_elemwise(&r); break;
      case 2: case_dims(&r); break;
      case 3: case_vectors(&r); break;
      default: case_count(&r); break;
    }
  }
  return 0;
}
