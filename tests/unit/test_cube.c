/* SPDX-License-Identifier: MIT */
/* CubeCount, cube_count_spread, CubeCountSelection, CubeDim and
 * io_optimized_vector_sizes. */
#include "test.h"
#include "cubert/cube.h"

static cubert_dim3_t dim3(uint32_t x, uint32_t y, uint32_t z) {
  cubert_dim3_t d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

#define CHECK_DIM3(d, ex, ey, ez)                                               \
  do {                                                                          \
    CHECK_EQ_U64((d).x, (ex));                                                  \
    CHECK_EQ_U64((d).y, (ey));                                                  \
    CHECK_EQ_U64((d).z, (ez));                                                  \
  } while (0)

/* ---- CubeCount ---------------------------------------------------------------- */

TEST(cube_count_constructors) {
  cubert_cube_count_t c = cubert_cube_count_new_single();
  CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_STATIC);
  CHECK_DIM3(c.count, 1, 1, 1);
  c = cubert_cube_count_new_1d(7);
  CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_STATIC);
  CHECK_DIM3(c.count, 7, 1, 1);
  c = cubert_cube_count_new_2d(7, 9);
  CHECK_DIM3(c.count, 7, 9, 1);
  c = cubert_cube_count_new_3d(7, 9, 11);
  CHECK_DIM3(c.count, 7, 9, 11);
}

TEST(cube_count_dynamic_copies_binding_without_retaining) {
  cubert_binding_t b;
  cubert_cube_count_t c;
  memset(&b, 0, sizeof b);
  b.memory.index = 3;
  b.memory.generation = 5;
  b.stream = 9;
  b.size = 12;
  c = cubert_cube_count_new_dynamic(&b);
  CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_DYNAMIC);
  CHECK(memcmp(&c.binding, &b, sizeof b) == 0);
  CHECK_DIM3(c.count, 0, 0, 0);
  /* NULL binding: a dynamic count with a zeroed binding. */
  c = cubert_cube_count_new_dynamic(NULL);
  CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_DYNAMIC);
  CHECK_EQ_U64(c.binding.size, 0);
  CHECK_EQ_U64(c.binding.stream, 0);
}

TEST(cube_count_is_empty) {
  cubert_cube_count_t c = cubert_cube_count_new_3d(1, 1, 1);
  CHECK(!cubert_cube_count_is_empty(&c));
  c = cubert_cube_count_new_3d(0, 1, 1);
  CHECK(cubert_cube_count_is_empty(&c));
  c = cubert_cube_count_new_3d(1, 0, 1);
  CHECK(cubert_cube_count_is_empty(&c));
  c = cubert_cube_count_new_3d(1, 1, 0);
  CHECK(cubert_cube_count_is_empty(&c));
  /* Dynamic is never "empty" (read at launch). */
  c = cubert_cube_count_new_dynamic(NULL);
  CHECK(!cubert_cube_count_is_empty(&c));
  CHECK(cubert_cube_count_is_empty(NULL));
}

TEST(cube_count_format) {
  char buf[CUBERT_CUBE_COUNT_FORMAT_MAX];
  size_t len = 0;
  cubert_cube_count_t c = cubert_cube_count_new_3d(1, 22, 333);
  CHECK_OK(cubert_cube_count_format(&c, buf, sizeof buf, &len, NULL));
  CHECK_EQ_STR(buf, "(1, 22, 333)");
  CHECK_EQ_U64(len, strlen("(1, 22, 333)"));
  c = cubert_cube_count_new_3d(0, 0, 0);
  CHECK_OK(cubert_cube_count_format(&c, buf, sizeof buf, NULL, NULL));
  CHECK_EQ_STR(buf, "(0, 0, 0)");
  c = cubert_cube_count_new_3d(UINT32_MAX, UINT32_MAX, UINT32_MAX);
  CHECK_OK(cubert_cube_count_format(&c, buf, sizeof buf, &len, NULL));
  CHECK_EQ_STR(buf, "(4294967295, 4294967295, 4294967295)");
  CHECK_EQ_U64(len, CUBERT_CUBE_COUNT_FORMAT_MAX - 1);
  c = cubert_cube_count_new_dynamic(NULL);
  CHECK_OK(cubert_cube_count_format(&c, buf, sizeof buf, &len, NULL));
  CHECK_EQ_STR(buf, "binding");
  CHECK_EQ_U64(len, 7);
}

TEST(cube_count_format_errors_write_nothing) {
  char buf[CUBERT_CUBE_COUNT_FORMAT_MAX];
  size_t len = 99;
  cubert_cube_count_t c = cubert_cube_count_new_3d(UINT32_MAX, UINT32_MAX, UINT32_MAX);
  memset(buf, 'x', sizeof buf);
  /* One byte short of text + NUL. */
  CHECK_STATUS(cubert_cube_count_format(&c, buf, CUBERT_CUBE_COUNT_FORMAT_MAX - 1, &len, NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(len, 99);
  CHECK(buf[0] == 'x');
  c = cubert_cube_count_new_dynamic(NULL);
  CHECK_STATUS(cubert_cube_count_format(&c, buf, 7, &len, NULL), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_cube_count_format(&c, buf, 0, &len, NULL), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK(buf[0] == 'x');
  CHECK_OK(cubert_cube_count_format(&c, buf, 8, &len, NULL)); /* exactly fits */
  CHECK_EQ_STR(buf, "binding");
  CHECK_STATUS(cubert_cube_count_format(NULL, buf, sizeof buf, &len, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cube_count_format(&c, NULL, sizeof buf, &len, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  c.kind = (cubert_cube_count_kind_t)7;
  memset(buf, 'x', sizeof buf);
  CHECK_STATUS(cubert_cube_count_format(&c, buf, sizeof buf, &len, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(buf[0] == 'x');
  CHECK_EQ_U64(len, 7);
}

/* ---- cube_count_spread and CubeCountSelection ----------------------------------- */

typedef struct spread_vector_t {
  uint32_t mx, my, mz, n;
  uint32_t x, y, z;
  int exact;
  uint64_t actual;
} spread_vector_t;

/* Vectors derived from CubeCL's algorithm (the safe_num_cubes_* rows are CubeCL's tests). */
static const spread_vector_t k_spread_vectors[] = {
    {32, 32, 32, 2048, 32, 32, 2, 1, 2048},                          /* safe_num_cubes_even */
    {48, 32, 16, 3177, 25, 32, 4, 0, 3200},                          /* safe_num_cubes_odd */
    {65535, 65535, 65535, 100, 100, 1, 1, 1, 100},                   /* derived */
    {65535, 65535, 65535, 65536, 32768, 2, 1, 1, 65536},             /* derived */
    {65535, 65535, 65535, 70000, 35000, 2, 1, 1, 70000},             /* derived */
    {2147483647u, 65535, 65535, 3000000000u, 1500000000u, 2, 1, 1, 3000000000u}, /* derived */
    {4, 4, 4, 100, 4, 4, 8, 0, 128},                                 /* derived: z > max */
    {4, 4, 4, 1000, 4, 4, 64, 0, 1024},                              /* derived */
    {32, 32, 32, 0, 0, 1, 1, 1, 0},                                  /* derived */
    {32, 32, 32, 33, 17, 2, 1, 0, 34},                               /* derived */
};

/* CubeCL repo test server/base.rs safe_num_cubes_even. */
TEST(cube_spread_safe_num_cubes_even) {
  cubert_dim3_t out;
  CHECK_OK(cubert_cube_count_spread(dim3(32, 32, 32), 2048, &out, NULL));
  CHECK_DIM3(out, 32, 32, 2);
}

/* CubeCL repo test server/base.rs safe_num_cubes_odd. */
TEST(cube_spread_safe_num_cubes_odd) {
  cubert_dim3_t out;
  CHECK_OK(cubert_cube_count_spread(dim3(48, 32, 16), 3177, &out, NULL));
  CHECK_DIM3(out, 25, 32, 4);
}

TEST(cube_spread_table_vectors) {
  size_t i;
  for (i = 0; i < sizeof k_spread_vectors / sizeof k_spread_vectors[0]; i++) {
    const spread_vector_t *v = &k_spread_vectors[i];
    cubert_dim3_t out;
    CHECK_OK(cubert_cube_count_spread(dim3(v->mx, v->my, v->mz), v->n, &out, NULL));
    CHECK_MSG(out.x == v->x && out.y == v->y && out.z == v->z,
              "row %zu: [%u,%u,%u] != [%u,%u,%u]", i, (unsigned)out.x, (unsigned)out.y,
              (unsigned)out.z, (unsigned)v->x, (unsigned)v->y, (unsigned)v->z);
  }
}

TEST(cube_selection_table_vectors) {
  size_t i;
  for (i = 0; i < sizeof k_spread_vectors / sizeof k_spread_vectors[0]; i++) {
    const spread_vector_t *v = &k_spread_vectors[i];
    cubert_cube_count_selection_t s;
    cubert_cube_count_t c;
    CHECK_OK(cubert_cube_count_selection_new(dim3(v->mx, v->my, v->mz), v->n, &s, NULL));
    CHECK_MSG(s.exact == (v->exact != 0), "row %zu: exact %d", i, (int)s.exact);
    CHECK_EQ_U64(s.actual, v->actual);
    CHECK(cubert_cube_count_selection_has_idle(&s) == !v->exact);
    c = cubert_cube_count_selection_cube_count(&s);
    CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_STATIC);
    CHECK_DIM3(c.count, v->x, v->y, v->z);
  }
}

TEST(cube_selection_null_accessors) {
  cubert_cube_count_t c = cubert_cube_count_selection_cube_count(NULL);
  CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_STATIC);
  CHECK_DIM3(c.count, 0, 0, 0);
  CHECK(!cubert_cube_count_selection_has_idle(NULL));
  CHECK_STATUS(cubert_cube_count_selection_new(dim3(1, 1, 1), 1, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cube_count_spread(dim3(1, 1, 1), 1, NULL,
                                        NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

/* Derived (cubert): the product exceeds u32 here; CubeCL's u32 product
 * x*y*z would overflow (panic in debug), cubert reports Approx(2^32). */
TEST(cube_selection_actual_beyond_u32) {
  cubert_cube_count_selection_t s;
  CHECK_OK(cubert_cube_count_selection_new(dim3(65535, 65535, 65535), UINT32_MAX, &s, NULL));
  CHECK_DIM3(s.count.count, 32768, 32768, 4);
  CHECK(!s.exact);
  CHECK_EQ_U64(s.actual, 4294967296ull);
}

/* Defined (cubert): z may exceed its max; the selection looks only at the
 * product, so this is Exact although z = 65536 > 65535. */
TEST(cube_spread_z_exceeds_max_exact) {
  cubert_cube_count_selection_t s;
  CHECK_OK(cubert_cube_count_selection_new(dim3(1, 65535, 65535), 0x80000000u, &s, NULL));
  CHECK_DIM3(s.count.count, 1, 32768, 65536);
  CHECK(s.exact);
  CHECK_EQ_U64(s.actual, 0x80000000u);
}

/* Defined (cubert): y doubling past UINT32_MAX -> OVERFLOW, out untouched.
 * (1, 65535, 65535), 2^31 + 1: x needs 32 halvings, y would reach 2^32. */
TEST(cube_spread_overflow_leaves_out_untouched) {
  cubert_dim3_t out = dim3(7, 8, 9);
  cubert_cube_count_selection_t s;
  CHECK_STATUS(cubert_cube_count_spread(dim3(1, 65535, 65535), 0x80000001u, &out, NULL),
               CUBERT_STATUS_OVERFLOW);
  CHECK_DIM3(out, 7, 8, 9);
  CHECK_STATUS(cubert_cube_count_spread(dim3(1, UINT32_MAX, UINT32_MAX), UINT32_MAX, &out, NULL),
               CUBERT_STATUS_OVERFLOW);
  CHECK_DIM3(out, 7, 8, 9);
  memset(&s, 0xab, sizeof s);
  CHECK_STATUS(cubert_cube_count_selection_new(dim3(1, 65535, 65535), 0x80000001u, &s, NULL),
               CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(s.actual, 0xababababababababull);
}

/* Defined (cubert): a zero max on an axis that must be reduced can never be
 * met (CubeCL loops until u32 overflow) -> INVALID_ARGUMENT. */
TEST(cube_spread_zero_max) {
  cubert_dim3_t out = dim3(7, 8, 9);
  CHECK_STATUS(cubert_cube_count_spread(dim3(0, 4, 4), 5, &out,
                                        NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_DIM3(out, 7, 8, 9);
  CHECK_STATUS(cubert_cube_count_spread(dim3(4, 0, 4), 100, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_DIM3(out, 7, 8, 9);
  /* Zero cubes fit a zero max; an unexamined y max does not matter. */
  CHECK_OK(cubert_cube_count_spread(dim3(0, 0, 0), 0, &out, NULL));
  CHECK_DIM3(out, 0, 1, 1);
  CHECK_OK(cubert_cube_count_spread(dim3(200, 0, 4), 100, &out, NULL));
  CHECK_DIM3(out, 100, 1, 1);
}

/* ---- calculate_cube_count_elemwise ---------------------------------------------- */

TEST(cube_elemwise_zero_elems_is_zero_count) {
  cubert_cube_count_t c = cubert_cube_count_new_single();
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(65535, 65535, 65535), 0, dim3(256, 1, 1), &c,
                                                NULL));
  CHECK_EQ_U64(c.kind, CUBERT_CUBE_COUNT_STATIC);
  CHECK_DIM3(c.count, 0, 0, 0);
  CHECK(cubert_cube_count_is_empty(&c));
}

TEST(cube_elemwise_counts) {
  cubert_cube_count_t c;
  /* ceil(1000 / 256) = 4 */
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(65535, 65535, 65535), 1000, dim3(32, 8, 1), &c,
                                                NULL));
  CHECK_DIM3(c.count, 4, 1, 1);
  /* ceil(1024 / 256) = 4 exactly */
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(65535, 65535, 65535), 1024, dim3(32, 8, 1), &c,
                                                NULL));
  CHECK_DIM3(c.count, 4, 1, 1);
  /* 2048 * 256 elements over (32,32,32): the safe_num_cubes_even spread */
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(32, 32, 32), 2048u * 256u, dim3(16, 16, 1), &c,
                                                NULL));
  CHECK_DIM3(c.count, 32, 32, 2);
  /* More than 2^32 elements: (2^32 - 1) * 256 -> 2^32 - 1 cubes. */
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(65535, 65535, 65535), 0xFFFFFFFFull * 256u,
                                                dim3(256, 1, 1), &c, NULL));
  CHECK_DIM3(c.count, 32768, 32768, 4);
  /* A cube dim of more than 2^63 units (64-bit division path). */
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(65535, 65535, 65535), UINT64_MAX,
                                                dim3(UINT32_MAX, UINT32_MAX, 1), &c, NULL));
  CHECK_DIM3(c.count, 2, 1, 1);
  CHECK_OK(cubert_calculate_cube_count_elemwise(dim3(65535, 65535, 65535),
                                                (uint64_t)UINT32_MAX * UINT32_MAX,
                                                dim3(UINT32_MAX, UINT32_MAX, 1), &c, NULL));
  CHECK_DIM3(c.count, 1, 1, 1);
}

TEST(cube_elemwise_errors_leave_out_untouched) {
  cubert_cube_count_t c = cubert_cube_count_new_3d(5, 6, 7);
  cubert_dim3_t max = dim3(65535, 65535, 65535);
  /* Zero-unit cube dim (CubeCL divides by zero). */
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 10, dim3(0, 1, 1), &c, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 0, dim3(1, 1, 0), &c, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* More than UINT32_MAX cubes (CubeCL truncates `as u32`). */
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 0xFFFFFFFFull * 256u + 1u,
                                                    dim3(256, 1, 1), &c, NULL),
               CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 1ull << 32, dim3(1, 1, 1), &c, NULL),
               CUBERT_STATUS_OVERFLOW);
  /* Cube dim whose unit count overflows u64. */
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 10,
                                                    dim3(UINT32_MAX, UINT32_MAX, UINT32_MAX), &c,
                                                    NULL),
               CUBERT_STATUS_OVERFLOW);
  /* Spread failure propagates. */
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(dim3(0, 1, 1), 10, dim3(1, 1, 1), &c, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_DIM3(c.count, 5, 6, 7);
  CHECK_STATUS(cubert_calculate_cube_count_elemwise(max, 10, dim3(1, 1, 1), NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
}

/* ---- CubeDim ------------------------------------------------------------------------ */

TEST(cube_dim_constructors_and_contain) {
  cubert_cube_dim_t d = cubert_cube_dim_new_single();
  CHECK_DIM3(d, 1, 1, 1);
  d = cubert_cube_dim_new_1d(32);
  CHECK_DIM3(d, 32, 1, 1);
  d = cubert_cube_dim_new_2d(32, 4);
  CHECK_DIM3(d, 32, 4, 1);
  d = cubert_cube_dim_new_3d(8, 8, 4);
  CHECK_DIM3(d, 8, 8, 4);
  CHECK(cubert_cube_dim_can_contain(dim3(8, 8, 4), dim3(8, 8, 4)));
  CHECK(cubert_cube_dim_can_contain(dim3(8, 8, 4), dim3(1, 2, 3)));
  CHECK(!cubert_cube_dim_can_contain(dim3(8, 8, 4), dim3(9, 1, 1)));
  CHECK(!cubert_cube_dim_can_contain(dim3(8, 8, 4), dim3(1, 9, 1)));
  CHECK(!cubert_cube_dim_can_contain(dim3(8, 8, 4), dim3(1, 1, 5)));
}

TEST(cube_dim_num_elems) {
  uint64_t n = 0;
  CHECK_OK(cubert_cube_dim_num_elems(dim3(2, 3, 4), &n, NULL));
  CHECK_EQ_U64(n, 24);
  CHECK_OK(cubert_cube_dim_num_elems(dim3(0, 3, 4), &n, NULL));
  CHECK_EQ_U64(n, 0);
  /* Beyond u32 (CubeCL's u32 product would overflow). */
  CHECK_OK(cubert_cube_dim_num_elems(dim3(65536, 65536, 2), &n, NULL));
  CHECK_EQ_U64(n, 1ull << 33);
  CHECK_OK(cubert_cube_dim_num_elems(dim3(UINT32_MAX, UINT32_MAX, 1), &n, NULL));
  CHECK_EQ_U64(n, (uint64_t)UINT32_MAX * UINT32_MAX);
  n = 5;
  CHECK_STATUS(cubert_cube_dim_num_elems(dim3(UINT32_MAX, UINT32_MAX, 2), &n, NULL),
               CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(n, 5);
  CHECK_STATUS(cubert_cube_dim_num_elems(dim3(1, 1, 1), NULL,
                                         NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

static cubert_hardware_properties_t hw_gpu(uint32_t plane, uint32_t max_units) {
  cubert_hardware_properties_t hw;
  memset(&hw, 0, sizeof hw);
  hw.load_width = 128;
  hw.plane_size_min = plane;
  hw.plane_size_max = plane;
  hw.max_units_per_cube = max_units;
  hw.max_cube_count = dim3(65535, 65535, 65535);
  hw.max_cube_dim = dim3(1024, 1024, 64);
  hw.num_cpu_cores = 0; /* None */
  hw.max_vector_size = UINT64_MAX;
  return hw;
}

static cubert_hardware_properties_t hw_cpu(uint32_t cores, uint32_t max_units) {
  cubert_hardware_properties_t hw = hw_gpu(1, max_units);
  hw.load_width = 512;
  hw.num_cpu_cores = cores;
  return hw;
}

static cubert_cube_dim_t cube_dim_of(const cubert_hardware_properties_t *hw, uint64_t units) {
  cubert_cube_dim_t d = dim3(0, 0, 0);
  CHECK_OK(cubert_cube_dim_new(hw, units, &d, NULL));
  return d;
}

/* Vectors derived from CubeCL's CubeDim::new, GPU (p = 32, max units 1024, no cpu cores). */
TEST(cube_dim_new_gpu_vectors) {
  cubert_hardware_properties_t hw = hw_gpu(32, 1024);
  CHECK_DIM3(cube_dim_of(&hw, 0), 32, 1, 1);
  CHECK_DIM3(cube_dim_of(&hw, 31), 32, 1, 1);
  CHECK_DIM3(cube_dim_of(&hw, 64), 32, 2, 1);
  CHECK_DIM3(cube_dim_of(&hw, 100), 32, 2, 1);
  CHECK_DIM3(cube_dim_of(&hw, 256), 32, 8, 1);
  CHECK_DIM3(cube_dim_of(&hw, 1000000), 32, 8, 1);
  hw = hw_gpu(32, 128); /* max units 128 */
  CHECK_DIM3(cube_dim_of(&hw, 1000000), 32, 4, 1);
  hw = hw_gpu(64, 1024);
  CHECK_DIM3(cube_dim_of(&hw, 4096), 64, 8, 1);
}

/* Vectors derived from CubeCL's CubeDim::new, CPU (p = 1, 16 cores, max units 16). */
TEST(cube_dim_new_cpu_vectors) {
  cubert_hardware_properties_t hw = hw_cpu(16, 16);
  CHECK_DIM3(cube_dim_of(&hw, 10), 1, 10, 1);
  CHECK_DIM3(cube_dim_of(&hw, 100), 1, 16, 1);
  CHECK_DIM3(cube_dim_of(&hw, 0), 1, 1, 1);
}

/* Defined (cubert): working_units beyond u32 saturate (CubeCL wraps:
 * 2^32 + 10 would give (1, 10, 1) there). */
TEST(cube_dim_new_working_units_saturate) {
  cubert_hardware_properties_t hw = hw_cpu(16, 16);
  CHECK_DIM3(cube_dim_of(&hw, (1ull << 32) + 10u), 1, 16, 1);
  hw = hw_gpu(32, 1024);
  CHECK_DIM3(cube_dim_of(&hw, UINT64_MAX), 32, 8, 1);
}

/* max_units_per_cube below one plane: limit 0, still at least one plane. */
TEST(cube_dim_new_limit_below_one_plane) {
  cubert_hardware_properties_t hw = hw_gpu(32, 16);
  CHECK_DIM3(cube_dim_of(&hw, 1000000), 32, 1, 1);
}

TEST(cube_dim_new_errors) {
  cubert_hardware_properties_t hw = hw_gpu(0, 1024); /* plane_size_max 0 */
  cubert_cube_dim_t d = dim3(3, 4, 5);
  CHECK_STATUS(cubert_cube_dim_new(&hw, 100, &d, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_DIM3(d, 3, 4, 5);
  hw = hw_gpu(32, 1024);
  CHECK_STATUS(cubert_cube_dim_new(NULL, 100, &d, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cube_dim_new(&hw, 100, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_DIM3(d, 3, 4, 5);
}

/* ---- io_optimized_vector_sizes ----------------------------------------------------- */

static void check_sizes(uint64_t max_vec, uint32_t width, size_t elem, uint32_t largest) {
  uint32_t sizes[CUBERT_IO_VECTOR_SIZES_MAX];
  size_t count = 0, i, expected_count = 0;
  uint32_t v;
  for (v = largest; v != 0; v >>= 1) expected_count++;
  CHECK_OK(cubert_io_optimized_vector_sizes_from_limits(max_vec, width, elem, sizes,
                                                        CUBERT_IO_VECTOR_SIZES_MAX, &count, NULL));
  CHECK_MSG(count == expected_count, "width %u elem %zu: count %zu != %zu", (unsigned)width, elem, count,
            expected_count);
  for (i = 0; i < count; i++) CHECK_EQ_U64(sizes[i], largest >> i);
  CHECK_EQ_U64(sizes[count - 1], 1);
}

/* Vectors derived from io_optimized_vector_sizes, load width 128 (CUDA, dummy). */
TEST(cube_io_vector_sizes_width_128) {
  check_sizes(UINT64_MAX, 128, 1, 16); /* [16,8,4,2,1] */
  check_sizes(UINT64_MAX, 128, 2, 8);  /* [8,4,2,1] */
  check_sizes(UINT64_MAX, 128, 4, 4);  /* [4,2,1] */
  check_sizes(UINT64_MAX, 128, 8, 2);  /* [2,1] */
  check_sizes(UINT64_MAX, 128, 3, 1);  /* [1] */
  check_sizes(UINT64_MAX, 128, 6, 2);  /* [2,1] */
  check_sizes(UINT64_MAX, 128, 12, 1); /* [1] */
}

/* Vectors derived from io_optimized_vector_sizes, load width 512 (CPU). */
TEST(cube_io_vector_sizes_width_512) {
  check_sizes(UINT64_MAX, 512, 1, 64); /* [64,...,1] */
  check_sizes(UINT64_MAX, 512, 2, 32);
  check_sizes(UINT64_MAX, 512, 4, 16); /* [16,8,4,2,1] */
  check_sizes(UINT64_MAX, 512, 8, 8);  /* [8,4,2,1] */
}

TEST(cube_io_vector_sizes_max_vector_size_limits) {
  check_sizes(4, 128, 1, 4);   /* min(4, 16) */
  check_sizes(12, 128, 1, 4);  /* min(12, 16) = 12: up to its lowest set bit */
  check_sizes(16, 128, 1, 16);
}

/* Defined (cubert): elements wider than the load clamp max to 1 -> [1]. */
TEST(cube_io_vector_sizes_wide_elements_clamp) {
  check_sizes(UINT64_MAX, 128, 32, 1);
  check_sizes(UINT64_MAX, 128, 17, 1);
  check_sizes(UINT64_MAX, 128, (size_t)-1, 1);
  check_sizes(UINT64_MAX, 0, 1, 1); /* no load width */
  check_sizes(0, 128, 1, 1);        /* max_vector_size 0 */
}

TEST(cube_io_vector_sizes_query_and_errors) {
  uint32_t sizes[4] = {99, 99, 99, 99};
  size_t count = 77;
  cubert_hardware_properties_t hw = hw_gpu(32, 1024);
  /* Query form. */
  CHECK_OK(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 1, NULL, 0, &count, NULL));
  CHECK_EQ_U64(count, 5);
  /* Too small: nothing written. */
  count = 77;
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 1, sizes, 4, &count,
                                                            NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(count, 77);
  CHECK_EQ_U64(sizes[0], 99);
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 8, sizes, 1, &count,
                                                            NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  /* Exactly enough. */
  CHECK_OK(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 4, sizes, 3, &count,
                                                        NULL));
  CHECK_EQ_U64(count, 3);
  CHECK_EQ_U64(sizes[0], 4);
  CHECK_EQ_U64(sizes[2], 1);
  CHECK_EQ_U64(sizes[3], 99);
  /* elem_size 0 (CubeCL divides by zero). */
  count = 77;
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 0, sizes, 4, &count,
                                                            NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(count, 77);
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 1, sizes, 4, NULL,
                                                            NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_io_optimized_vector_sizes_from_limits(UINT64_MAX, 128, 1, NULL, 4, &count,
                                                            NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* Hardware-properties form. */
  CHECK_OK(cubert_io_optimized_vector_sizes(&hw, 8, sizes, 4, &count, NULL));
  CHECK_EQ_U64(count, 2);
  CHECK_EQ_U64(sizes[0], 2);
  CHECK_EQ_U64(sizes[1], 1);
  hw.load_width = 512;
  hw.max_vector_size = 4;
  CHECK_OK(cubert_io_optimized_vector_sizes(&hw, 1, sizes, 4, &count, NULL));
  CHECK_EQ_U64(count, 3);
  CHECK_EQ_U64(sizes[0], 4);
  CHECK_STATUS(cubert_io_optimized_vector_sizes(NULL, 1, sizes, 4, &count, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
}
