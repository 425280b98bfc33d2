/* SPDX-License-Identifier: MIT */
/*
 * core/launch/cube.c: CubeCount, cube_count_spread, CubeCountSelection, CubeDim and
 * io_optimized_vector_sizes (docs/cubecl-mapping.md, "Cube counts and dims").
 * Pure value arithmetic.
 */
#include "base/internal.h"
#include "cubert/cube.h"
#include "cubert/driver/arith.h"

/* n / d and n % d (d != 0) without a 64-bit division instruction: 32-bit
 * targets (Cortex-M) would otherwise call a libgcc helper, which the
 * freestanding core must not. */
static uint64_t cube_u64_divmod(uint64_t n, uint64_t d, uint64_t *out_rem) {
  uint64_t q = 0, r = 0;
  int bit;
  if ((n >> 32) == 0 && (d >> 32) == 0) {
    *out_rem = (uint32_t)n % (uint32_t)d;
    return (uint32_t)n / (uint32_t)d;
  }
  for (bit = 63; bit >= 0; bit--) {
    uint64_t carry = r >> 63; /* r < d: 2r + 1 may exceed 64 bits when d > 2^63 */
    r = (r << 1) | ((n >> bit) & 1u);
    /* unreachable: carry != 0 (before each shift r <= n >> 1 < 2^63) */
    if (carry != 0 || r >= d) { /* wrapping subtraction gives the true remainder */
      r -= d;
      q |= (uint64_t)1u << bit;
    }
  }
  *out_rem = r;
  return q;
}

/* ---- CubeCount -------------------------------------------------------------- */

static cubert_cube_count_t cube_count_static(uint32_t x, uint32_t y, uint32_t z) {
  cubert_cube_count_t c;
  cubert_memset(&c, 0, sizeof c);
  c.kind = CUBERT_CUBE_COUNT_STATIC;
  c.count.x = x;
  c.count.y = y;
  c.count.z = z;
  return c;
}

cubert_cube_count_t cubert_cube_count_new_single(void) { return cube_count_static(1, 1, 1); }

cubert_cube_count_t cubert_cube_count_new_1d(uint32_t x) { return cube_count_static(x, 1, 1); }

cubert_cube_count_t cubert_cube_count_new_2d(uint32_t x, uint32_t y) {
  return cube_count_static(x, y, 1);
}

cubert_cube_count_t cubert_cube_count_new_3d(uint32_t x, uint32_t y, uint32_t z) {
  return cube_count_static(x, y, z);
}

cubert_cube_count_t cubert_cube_count_new_dynamic(const cubert_binding_t *binding) {
  cubert_cube_count_t c;
  cubert_memset(&c, 0, sizeof c);
  c.kind = CUBERT_CUBE_COUNT_DYNAMIC;
  if (binding) c.binding = *binding;
  return c;
}

bool cubert_cube_count_is_empty(const cubert_cube_count_t *count) {
  if (!count) return true;
  if (count->kind != CUBERT_CUBE_COUNT_STATIC) return false;
  return count->count.x == 0 || count->count.y == 0 || count->count.z == 0;
}

/* Decimal digits of v into tmp (reversed); returns the digit count. */
static size_t cube_u32_digits(uint32_t v, char tmp[10]) {
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10u);
    v /= 10u;
  } while (v != 0);
  return n;
}

static size_t cube_append_u32(char *dst, uint32_t v) {
  char tmp[10];
  size_t n = cube_u32_digits(v, tmp), i;
  for (i = 0; i < n; i++) dst[i] = tmp[n - 1 - i];
  return n;
}

cubert_status_t cubert_cube_count_format(const cubert_cube_count_t *count, char *buffer,
                                         size_t buffer_size, size_t *out_length,
                                         cubert_error_t *out_error) {
  char text[CUBERT_CUBE_COUNT_FORMAT_MAX];
  size_t len = 0;
  if (!count) return cubert__invalid_argument(out_error, "cubert_cube_count_format: count is NULL");
  if (!buffer)
    return cubert__invalid_argument(out_error, "cubert_cube_count_format: buffer is NULL");
  if (count->kind == CUBERT_CUBE_COUNT_STATIC) {
    text[len++] = '(';
    len += cube_append_u32(text + len, count->count.x);
    text[len++] = ',';
    text[len++] = ' ';
    len += cube_append_u32(text + len, count->count.y);
    text[len++] = ',';
    text[len++] = ' ';
    len += cube_append_u32(text + len, count->count.z);
    text[len++] = ')';
  } else if (count->kind == CUBERT_CUBE_COUNT_DYNAMIC) {
    len = cubert__strlcpy(text, "binding", sizeof text);
  } else {
    return cubert__invalid_argument(out_error, "cubert_cube_count_format: unknown count kind");
  }
  if (buffer_size < len + 1) {
    uint64_t fields[2];
    fields[0] = (uint64_t)(len + 1);
    fields[1] = (uint64_t)buffer_size;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, fields, 2,
                            "cubert_cube_count_format: buffer too small for the text");
  }
  cubert_memcpy(buffer, text, len);
  buffer[len] = 0;
  if (out_length) *out_length = len;
  return CUBERT_STATUS_OK;
}

/* ---- cube_count_spread -------------------------------------------------------- */

cubert_status_t cubert_cube_count_spread(cubert_dim3_t max_cube_count, uint32_t num_cubes,
                                         cubert_dim3_t *out_counts, cubert_error_t *out_error) {
  uint32_t max[2];
  uint32_t c[3];
  int axis;
  if (!out_counts)
    return cubert__invalid_argument(out_error, "cubert_cube_count_spread: out_counts is NULL");
  max[0] = max_cube_count.x;
  max[1] = max_cube_count.y;
  c[0] = num_cubes;
  c[1] = 1;
  c[2] = 1;
  for (axis = 0; axis < 2; axis++) {
    /* An axis that fits ends the whole procedure (later axes unexamined). */
    if (c[axis] <= max[axis]) break;
    /* Halving never reaches 0 from >= 1: a zero max can never be met. */
    if (max[axis] == 0)
      return cubert__invalid_argument(out_error, axis == 0
                                                    ? "cubert_cube_count_spread: max x is 0"
                                                    : "cubert_cube_count_spread: max y is 0");
    while (c[axis] > max[axis]) {
      if (c[axis + 1] > UINT32_MAX / 2u)
        return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                                "cubert_cube_count_spread: the y count exceeds UINT32_MAX");
      c[axis] = c[axis] / 2u + (c[axis] % 2u); /* ceil(c / 2) */
      c[axis + 1] *= 2u;
    }
  }
  out_counts->x = c[0];
  out_counts->y = c[1];
  out_counts->z = c[2];
  return CUBERT_STATUS_OK;
}

/* ---- CubeCountSelection ------------------------------------------------------- */

cubert_status_t cubert_cube_count_selection_new(cubert_dim3_t max_cube_count, uint32_t num_cubes,
                                                cubert_cube_count_selection_t *out_selection,
                                                cubert_error_t *out_error) {
  cubert_dim3_t c;
  uint64_t actual;
  if (!out_selection)
    return cubert__invalid_argument(out_error,
                                    "cubert_cube_count_selection_new: out_selection is NULL");
  CUBERT_RETURN_IF_ERROR(cubert_cube_count_spread(max_cube_count, num_cubes, &c, out_error));
  /* < 2^33 by construction of the spread (see cube.h), so no overflow. */
  actual = (uint64_t)c.x * (uint64_t)c.y * (uint64_t)c.z;
  out_selection->exact = actual == (uint64_t)num_cubes;
  out_selection->count = cube_count_static(c.x, c.y, c.z);
  out_selection->actual = actual;
  return CUBERT_STATUS_OK;
}

bool cubert_cube_count_selection_has_idle(const cubert_cube_count_selection_t *selection) {
  return selection != NULL && !selection->exact;
}

cubert_cube_count_t cubert_cube_count_selection_cube_count(
    const cubert_cube_count_selection_t *selection) {
  if (!selection) return cube_count_static(0, 0, 0);
  return selection->count;
}

cubert_status_t cubert_calculate_cube_count_elemwise(cubert_dim3_t max_cube_count,
                                                     uint64_t num_elems, cubert_dim3_t cube_dim,
                                                     cubert_cube_count_t *out_count,
                                                     cubert_error_t *out_error) {
  uint64_t units = 0, num_cubes, rem;
  cubert_cube_count_selection_t selection;
  if (!out_count)
    return cubert__invalid_argument(out_error,
                                    "cubert_calculate_cube_count_elemwise: out_count is NULL");
  CUBERT_RETURN_IF_ERROR(cubert_cube_dim_num_elems(cube_dim, &units, out_error));
  if (units == 0)
    return cubert__invalid_argument(out_error,
                                    "cubert_calculate_cube_count_elemwise: cube_dim has 0 units");
  if (num_elems == 0) {
    *out_count = cube_count_static(0, 0, 0);
    return CUBERT_STATUS_OK;
  }
  num_cubes = cube_u64_divmod(num_elems, units, &rem);
  if (rem != 0) num_cubes++; /* ceil; cannot wrap: units >= 1 and rem != 0 imply units >= 2 */
  if (num_cubes > UINT32_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, &num_cubes, 1,
                            "cubert_calculate_cube_count_elemwise: more than UINT32_MAX cubes");
  CUBERT_RETURN_IF_ERROR(cubert_cube_count_selection_new(max_cube_count, (uint32_t)num_cubes,
                                                         &selection, out_error));
  *out_count = selection.count;
  return CUBERT_STATUS_OK;
}

/* ---- CubeDim -------------------------------------------------------------------- */

static cubert_cube_dim_t cube_dim_make(uint32_t x, uint32_t y, uint32_t z) {
  cubert_cube_dim_t d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

cubert_cube_dim_t cubert_cube_dim_new_single(void) { return cube_dim_make(1, 1, 1); }

cubert_cube_dim_t cubert_cube_dim_new_1d(uint32_t x) { return cube_dim_make(x, 1, 1); }

cubert_cube_dim_t cubert_cube_dim_new_2d(uint32_t x, uint32_t y) { return cube_dim_make(x, y, 1); }

cubert_cube_dim_t cubert_cube_dim_new_3d(uint32_t x, uint32_t y, uint32_t z) {
  return cube_dim_make(x, y, z);
}

cubert_status_t cubert_cube_dim_num_elems(cubert_cube_dim_t dim, uint64_t *out_num_elems,
                                          cubert_error_t *out_error) {
  uint64_t xy, xyz;
  if (!out_num_elems)
    return cubert__invalid_argument(out_error, "cubert_cube_dim_num_elems: out_num_elems is NULL");
  xy = (uint64_t)dim.x * (uint64_t)dim.y; /* two u32 factors always fit */
  if (cubert_u64_mul(xy, (uint64_t)dim.z, &xyz) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "cubert_cube_dim_num_elems: x * y * z overflows 64 bits");
  *out_num_elems = xyz;
  return CUBERT_STATUS_OK;
}

bool cubert_cube_dim_can_contain(cubert_cube_dim_t dim, cubert_cube_dim_t other) {
  return dim.x >= other.x && dim.y >= other.y && dim.z >= other.z;
}

/* floor(log2(v)) for v >= 1. */
static uint32_t cube_ilog2(uint32_t v) {
  uint32_t r = 0;
  while (v > 1u) {
    v >>= 1;
    r++;
  }
  return r;
}

cubert_status_t cubert_cube_dim_new(const cubert_hardware_properties_t *hardware,
                                    uint64_t working_units, cubert_cube_dim_t *out_dim,
                                    cubert_error_t *out_error) {
  uint32_t p, units, plane_count, limit, planes;
  if (!hardware) return cubert__invalid_argument(out_error, "cubert_cube_dim_new: hardware is NULL");
  if (!out_dim) return cubert__invalid_argument(out_error, "cubert_cube_dim_new: out_dim is NULL");
  p = hardware->plane_size_max;
  if (p == 0)
    return cubert__invalid_argument(out_error, "cubert_cube_dim_new: plane_size_max is 0");
  units = working_units > UINT32_MAX ? UINT32_MAX : (uint32_t)working_units;
  if (hardware->num_cpu_cores != 0) {
    plane_count = CUBERT_MIN(hardware->num_cpu_cores, units);
  } else {
    uint32_t plane_count_max = CUBERT_MAX(1u, units / p);
    uint32_t log2 = CUBERT_MIN(3u, cube_ilog2(plane_count_max)); /* at most 8 planes */
    plane_count = (uint32_t)1u << log2;
  }
  limit = hardware->max_units_per_cube / p;
  planes = CUBERT_MAX(1u, CUBERT_MIN(limit, plane_count));
  *out_dim = cube_dim_make(p, planes, 1);
  return CUBERT_STATUS_OK;
}

/* ---- io_optimized_vector_sizes ------------------------------------------------- */

cubert_status_t cubert_io_optimized_vector_sizes_from_limits(uint64_t max_vector_size,
                                                             uint32_t load_width_bits,
                                                             size_t elem_size, uint32_t *out_sizes,
                                                             size_t capacity, size_t *out_count,
                                                             cubert_error_t *out_error) {
  uint64_t max;
  uint32_t by_width;
  size_t n = 1, i;
  if (!out_count)
    return cubert__invalid_argument(out_error, "io_optimized_vector_sizes: out_count is NULL");
  if (elem_size == 0)
    return cubert__invalid_argument(out_error, "io_optimized_vector_sizes: elem_size is 0");
  if (!out_sizes && capacity > 0)
    return cubert__invalid_argument(out_error,
                                    "io_optimized_vector_sizes: out_sizes is NULL, capacity is not 0");
  /* floor(L / (8 e)) == floor(floor(L / 8) / e): no overflow of e * 8, and
   * a 32-bit division (elem_size <= L / 8 fits u32 when it matters). */
  by_width = elem_size > load_width_bits / 8u ? 0u : (load_width_bits / 8u) / (uint32_t)elem_size;
  max = CUBERT_MIN(max_vector_size, by_width);
  if (max == 0) max = 1; /* elements wider than a load: just scalars */
  while ((max & 1u) == 0) { /* n = trailing_zeros(max) + 1 */
    max >>= 1;
    n++;
  }
  if (out_sizes) {
    if (capacity < n) {
      uint64_t fields[2];
      fields[0] = (uint64_t)n;
      fields[1] = (uint64_t)capacity;
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, fields, 2,
                              "io_optimized_vector_sizes: capacity is below the count");
    }
    for (i = 0; i < n; i++) out_sizes[i] = (uint32_t)1u << (n - 1 - i);
  }
  *out_count = n;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_io_optimized_vector_sizes(const cubert_hardware_properties_t *hardware,
                                                 size_t elem_size, uint32_t *out_sizes,
                                                 size_t capacity, size_t *out_count,
                                                 cubert_error_t *out_error) {
  if (!hardware)
    return cubert__invalid_argument(out_error, "io_optimized_vector_sizes: hardware is NULL");
  return cubert_io_optimized_vector_sizes_from_limits(hardware->max_vector_size,
                                                      hardware->load_width, elem_size, out_sizes,
                                                      capacity, out_count, out_error);
}
