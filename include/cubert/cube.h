/* SPDX-License-Identifier: MIT */
/*
 * cubert/cube.h: cube counts and cube dims (CubeCL's CubeCount,
 * CubeCountSelection, cube_count_spread, CubeDim, io_optimized_vector_sizes).
 *
 * docs/cubecl-mapping.md, "Cube counts and dims", has the rules.
 * A cube is a CUDA block / workgroup, a unit is a thread, a plane is a warp.
 * Everything here is plain value arithmetic: pure, thread-safe, non-blocking,
 * no allocation.
 *
 * Where CubeCL's arithmetic is undefined (u32 overflow panics in debug and
 * wraps in release; division by zero) cubert defines the result; each such
 * case is listed on the function and tested.
 *
 * Every function returning a status takes `cubert_error_t *out_error` last
 * (may be NULL): on failure it holds the kind of the code (INVALID_ARGUMENT,
 * OVERFLOW, OUT_OF_RANGE with fields needed, available) and a reason naming
 * the function and the argument.
 */
#ifndef CUBERT_CUBE_H
#define CUBERT_CUBE_H

#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/error.h"
#include "cubert/handle.h"
#include "cubert/properties.h"

CUBERT_EXTERN_C_BEGIN

/* ---- CubeCount ------------------------------------------------------------ */

typedef enum cubert_cube_count_kind_e {
  CUBERT_CUBE_COUNT_STATIC = 0, /* a known (x, y, z) grid */
  CUBERT_CUBE_COUNT_DYNAMIC = 1, /* read at launch from a buffer of three u32 [x, y, z] */
  CUBERT_CUBE_COUNT_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_cube_count_kind_t;

/* The number of cubes a launch dispatches. `count` is meaningful for STATIC,
 * `binding` for DYNAMIC (the other field is zero).
 *
 * Ownership: the value does not own the binding. A DYNAMIC count made with
 * cubert_cube_count_new_dynamic copies the binding struct without retaining
 * it; the caller keeps that binding reference alive until the launch that
 * uses the count has been submitted, and releases it itself. Copying a
 * cubert_cube_count_t by assignment is therefore always safe. */
typedef struct cubert_cube_count_t {
  cubert_cube_count_kind_t kind;
  cubert_dim3_t count;
  cubert_binding_t binding;
} cubert_cube_count_t;

/* Static constructors: new_single = (1,1,1), new_1d(x) = (x,1,1),
 * new_2d(x,y) = (x,y,1), new_3d(x,y,z). Pure, thread-safe. */
CUBERT_API cubert_cube_count_t cubert_cube_count_new_single(void);
CUBERT_API cubert_cube_count_t cubert_cube_count_new_1d(uint32_t x);
CUBERT_API cubert_cube_count_t cubert_cube_count_new_2d(uint32_t x, uint32_t y);
CUBERT_API cubert_cube_count_t cubert_cube_count_new_3d(uint32_t x, uint32_t y, uint32_t z);

/* A dynamic count read from `binding` at launch. Copies the struct, does not
 * retain (see cubert_cube_count_t). NULL binding: a DYNAMIC count with a
 * zeroed binding (memory id 0, which no table hands out, so a launch with it
 * fails with INVALID_HANDLE). Pure, thread-safe. */
CUBERT_API cubert_cube_count_t cubert_cube_count_new_dynamic(const cubert_binding_t *binding);

/* "Definitely dispatches nothing": a STATIC count with any zero component.
 * A DYNAMIC count is never empty (its buffer is read at launch). NULL: true
 * (nothing to dispatch). Pure, thread-safe. */
CUBERT_API bool cubert_cube_count_is_empty(const cubert_cube_count_t *count);

/* Buffer size that always fits the debug text plus its NUL:
 * "(4294967295, 4294967295, 4294967295)" is 36 characters. */
#define CUBERT_CUBE_COUNT_FORMAT_MAX 37

/* Debug text of a count: "(x, y, z)" for STATIC (decimal, as CubeCL's Debug)
 * and "binding" for DYNAMIC, NUL-terminated into the caller's buffer.
 * out_length (may be NULL) receives the length without the NUL.
 * Returns INVALID_ARGUMENT for a NULL count or buffer, or an unknown kind;
 * OUT_OF_RANGE when buffer_size < length + 1 (CUBERT_CUBE_COUNT_FORMAT_MAX
 * always suffices). On failure nothing is written. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_cube_count_format(const cubert_cube_count_t *count,
                                                    char *buffer, size_t buffer_size,
                                                    size_t *out_length, cubert_error_t *out_error);

/* ---- cube_count_spread ---------------------------------------------------- */

/* Spread `num_cubes` over the axes so x and y fit `max`:
 * start with [num_cubes, 1, 1]; for axis x then axis y: if the axis count is
 * <= its max, stop (later axes are not examined); otherwise repeatedly halve
 * it rounding up and double the next axis until it fits, then go on to the
 * next axis. The z axis is never checked or reduced: it may exceed max.z, as
 * in CubeCL ((4,4,4), 100 -> [4,4,8]). Nothing here flags that: the
 * selection below is Exact or Approx by the product alone, and a launch with
 * such a count is refused later against the device limit.
 * Every halving of an axis doubles the next one, so y * z stays a power of
 * two <= 2^31 and x * y * z <= num_cubes + 2^31 < 2^33.
 *
 * Defined where CubeCL is not (u32 arithmetic that overflows panics in debug
 * builds and wraps in release, and a zero max never terminates):
 *  - a doubled axis that exceeds UINT32_MAX: CUBERT_STATUS_OVERFLOW (only y
 *    can: max.x == 1 and num_cubes > 2^31);
 *  - max.x == 0 while num_cubes > 0, or max.y == 0 when y must be reduced:
 *    CUBERT_STATUS_INVALID_ARGUMENT (no count can fit that axis).
 * NULL out_counts: INVALID_ARGUMENT. On failure *out_counts is untouched.
 * Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_cube_count_spread(cubert_dim3_t max_cube_count, uint32_t num_cubes,
                                                    cubert_dim3_t *out_counts,
                                                    cubert_error_t *out_error);

/* ---- CubeCountSelection --------------------------------------------------- */

/* CubeCL's Exact(count) / Approx(count, actual). `count` is always STATIC.
 * actual = x * y * z of the spread (u64: CubeCL's u32 product may overflow,
 * cubert's cannot, the spread keeps it below 2^33). exact <=> actual ==
 * num_cubes; when not exact some cubes are idle and kernels must
 * bounds-check. */
typedef struct cubert_cube_count_selection_t {
  bool exact;
  cubert_cube_count_t count;
  uint64_t actual;
} cubert_cube_count_selection_t;

/* Select a count for `num_cubes` within `max_cube_count` (the device's
 * hardware.max_cube_count) using cubert_cube_count_spread. Returns its codes
 * (INVALID_ARGUMENT, OVERFLOW); NULL out: INVALID_ARGUMENT. On failure
 * *out_selection is untouched. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_cube_count_selection_new(
    cubert_dim3_t max_cube_count, uint32_t num_cubes, cubert_cube_count_selection_t *out_selection,
    cubert_error_t *out_error);

/* Some cubes will be idle (Approx). NULL: false. Pure. */
CUBERT_API bool cubert_cube_count_selection_has_idle(const cubert_cube_count_selection_t *selection);

/* The selected count (CubeCL's cube_count() / From). NULL: (0,0,0) static. */
CUBERT_API cubert_cube_count_t cubert_cube_count_selection_cube_count(
    const cubert_cube_count_selection_t *selection);

/* cubecl-core's calculate_cube_count_elemwise: one unit per element.
 * num_elems == 0 -> STATIC (0,0,0); else the selection for
 * ceil(num_elems / cube_dim units). Returns INVALID_ARGUMENT for a NULL out or
 * a cube_dim with zero units (CubeCL divides by zero), OVERFLOW when the cube
 * dim's unit count overflows u64 or the number of cubes exceeds UINT32_MAX
 * (CubeCL truncates it to u32), and the codes of cubert_cube_count_spread.
 * On failure *out_count is untouched. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_calculate_cube_count_elemwise(cubert_dim3_t max_cube_count,
                                                                uint64_t num_elems,
                                                                cubert_dim3_t cube_dim,
                                                                cubert_cube_count_t *out_count,
                                                                cubert_error_t *out_error);

/* ---- CubeDim -------------------------------------------------------------- */

/* Units of one cube along x, y, z. */
typedef cubert_dim3_t cubert_cube_dim_t;

/* new_single = (1,1,1), new_1d(x) = (x,1,1), new_2d(x,y) = (x,y,1), new_3d. */
CUBERT_API cubert_cube_dim_t cubert_cube_dim_new_single(void);
CUBERT_API cubert_cube_dim_t cubert_cube_dim_new_1d(uint32_t x);
CUBERT_API cubert_cube_dim_t cubert_cube_dim_new_2d(uint32_t x, uint32_t y);
CUBERT_API cubert_cube_dim_t cubert_cube_dim_new_3d(uint32_t x, uint32_t y, uint32_t z);

/* Units per cube, x * y * z, in u64 (CubeCL's u32 product may overflow).
 * OVERFLOW when even u64 does not hold it (possible only with all three
 * components near 2^32); INVALID_ARGUMENT for a NULL out. Out untouched on
 * failure. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_cube_dim_num_elems(cubert_cube_dim_t dim, uint64_t *out_num_elems,
                                                     cubert_error_t *out_error);

/* `dim` fully contains `other`: componentwise >=. Pure. */
CUBERT_API bool cubert_cube_dim_can_contain(cubert_cube_dim_t dim, cubert_cube_dim_t other);

/* CubeCL's CubeDim::new(client, working_units), a default cube dim for
 * element-wise work: with p = hardware->plane_size_max,
 *   plane_count = min(num_cpu_cores, working_units) when num_cpu_cores != 0
 *                 (CubeCL's Some), else 2^min(3, floor(log2(max(1, working_units / p)))),
 *   limit = max_units_per_cube / p,
 *   result = (p, max(1, min(limit, plane_count)), 1).
 * working_units above UINT32_MAX saturate to UINT32_MAX (CubeCL truncates
 * `as u32`, which wraps; saturating keeps the answer monotonic).
 * Returns INVALID_ARGUMENT for NULL pointers or plane_size_max == 0 (CubeCL
 * divides by zero). Out untouched on failure. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_cube_dim_new(const cubert_hardware_properties_t *hardware,
                                               uint64_t working_units, cubert_cube_dim_t *out_dim,
                                               cubert_error_t *out_error);

/* ---- io_optimized_vector_sizes -------------------------------------------- */

/* Array size that always holds the result (max <= 2^29, so at most 30 sizes). */
#define CUBERT_IO_VECTOR_SIZES_MAX 32

/* The vector sizes (elements per vectorized load) worth trying for elements
 * of `elem_size` bytes, largest first:
 *   max = min(max_vector_size, load_width_bits / (elem_size * 8)),
 *   n = trailing_zeros(max) + 1, sizes = 2^(n-1), ..., 2, 1.
 * A non-power-of-two max yields only up to its lowest set bit (3-byte
 * elements at 128 bits: [1]).
 * Defined where CubeCL is not: elem_size == 0 -> INVALID_ARGUMENT (CubeCL
 * divides by zero); elements wider than the load (max == 0, including
 * load_width_bits or max_vector_size == 0) clamp max to 1 -> [1] (CubeCL
 * overflows computing 2^(word bits)).
 * Writes the sizes to out_sizes[0..count) and the count to *out_count.
 * Query form: out_sizes == NULL with capacity 0 writes only *out_count.
 * Returns INVALID_ARGUMENT for NULL out_count, elem_size 0, or out_sizes ==
 * NULL with capacity > 0; OUT_OF_RANGE when capacity < count
 * (CUBERT_IO_VECTOR_SIZES_MAX always suffices). On failure nothing is
 * written. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_io_optimized_vector_sizes_from_limits(
    uint64_t max_vector_size, uint32_t load_width_bits, size_t elem_size, uint32_t *out_sizes,
    size_t capacity, size_t *out_count, cubert_error_t *out_error);

/* The same with the limits of `hardware` (max_vector_size, load_width).
 * NULL hardware: INVALID_ARGUMENT. */
CUBERT_API cubert_status_t cubert_io_optimized_vector_sizes(const cubert_hardware_properties_t *hardware,
                                                            size_t elem_size, uint32_t *out_sizes,
                                                            size_t capacity, size_t *out_count,
                                                            cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CUBE_H */
