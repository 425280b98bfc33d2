/* SPDX-License-Identifier: MIT */
/* Conformance: the execution model of the kernel dialect on every driver:
 * atomics (global and shared, five types), plane operations and the
 * cube-wide reduce / scan (plane of 32: the default of the CPU drivers and a
 * CUDA warp), the barrier rule; cube sizes that are not powers of two, 1-D
 * and 3-D. The CPU-only plane-size sweep and the race checker are in
 * tests/os/test_kernel_dialect.c. */
#include "cts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cube.h"
#include "cts_dialect_kernels.h"

static cubert_launch_arguments_t args_of(const cubert_binding_t *b, uint32_t nb) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = NULL;
  a.scalar_count = 0;
  return a;
}

/* ---- atomics ----------------------------------------------------------------------- */

CUBERT_KERNEL_DESCRIPTOR(k_at_u32_100, cts_atomic_u32, 3, 0, 0, 100, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_at_u32_532, cts_atomic_u32, 3, 0, 0, 5, 3, 2);
CUBERT_KERNEL_DESCRIPTOR(k_at_i32_100, cts_atomic_i32, 3, 0, 0, 100, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_at_u64_37, cts_atomic_u64, 3, 0, 0, 37, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_at_i64_532, cts_atomic_i64, 3, 0, 0, 5, 3, 2);
CUBERT_KERNEL_DESCRIPTOR(k_at_f32_100, cts_atomic_f32, 3, 0, 0, 100, 1, 1);

/* Run an atomics kernel over `cubes` cubes and check every slot. T: the
 * element type; INT: the bit operations were done. */
#define ATOMIC_CASE(T, kernel, cubes, INT, MINSTART, ALLONES)                                         \
  do {                                                                                       \
    cts_env_t env;                                                                           \
    const uint32_t d = (kernel).cube_dim.x * (kernel).cube_dim.y * (kernel).cube_dim.z;      \
    const uint64_t units = (uint64_t)d * (cubes);                                            \
    T acc[CTS_AT_SLOTS], per_cube[16], check[16];                                            \
    cubert_handle_t h[3];                                                                    \
    cubert_launch_arguments_t args;                                                          \
    cubert_cube_count_t count = cubert_cube_count_new_3d((cubes), 1, 1);                     \
    uint64_t i, or_bits = 0, xor_bits = 0;                                                   \
    memset(acc, 0, sizeof acc);                                                              \
    memset(per_cube, 0, sizeof per_cube);                                                    \
    memset(check, 0, sizeof check);                                                          \
    acc[CTS_AT_SUB] = (T)1000;                                                               \
    acc[CTS_AT_MIN] = (MINSTART);                                                            \
    acc[CTS_AT_AND] = (ALLONES);                                                              \
    cts_setup(&env, 0);                                                                      \
    CHECK_OK(cubert_client_create_from_slice(env.client, acc, sizeof acc, &h[0], NULL));     \
    CHECK_OK(cubert_client_create_from_slice(env.client, per_cube, sizeof per_cube, &h[1], NULL)); \
    CHECK_OK(cubert_client_create_from_slice(env.client, check, sizeof check, &h[2], NULL)); \
    args = args_of(h, 3);                                                                    \
    CHECK_OK(cubert_client_launch(env.client, &(kernel), &count, &args, NULL));              \
    CHECK_OK(cubert_client_read_one(env.client, &h[0], acc, sizeof acc, NULL));              \
    CHECK_OK(cubert_client_read_one(env.client, &h[1], per_cube, sizeof per_cube, NULL));    \
    CHECK_OK(cubert_client_read_one(env.client, &h[2], check, sizeof check, NULL));          \
    CHECK(acc[CTS_AT_ADD] == (T)units);                                                      \
    CHECK(acc[CTS_AT_SUB] == (T)((T)1000 - (T)units));                                       \
    CHECK(acc[CTS_AT_MAX] == (T)(units - 1));                                                \
    CHECK(acc[CTS_AT_MIN] == (T)5);                                                          \
    CHECK(acc[CTS_AT_CAS] >= (T)1 && acc[CTS_AT_CAS] <= (T)units);                           \
    CHECK(acc[CTS_AT_WINNERS] == (T)1);                                                      \
    /* the exchanges return every value but the last one stored, plus the initial 0 */       \
    CHECK((double)acc[CTS_AT_XCHG_SUM] + (double)acc[CTS_AT_XCHG] ==                         \
          (double)units * (double)(units + 1) / 2.0);                                        \
    for (i = 0; i < units; i++) {                                                            \
      or_bits |= (uint64_t)1 << (i % 31u);                                                   \
      xor_bits ^= (uint64_t)1 << (i % 31u);                                                  \
    }                                                                                        \
    if (INT) {                                                                               \
      CHECK((uint64_t)acc[CTS_AT_OR] == or_bits);                                            \
      CHECK(((uint64_t)acc[CTS_AT_AND] & 0x7FFFFFFFu) == (~or_bits & 0x7FFFFFFFu));                                           \
      CHECK((uint64_t)acc[CTS_AT_XOR] == xor_bits);                                          \
    }                                                                                        \
    for (i = 0; i < (cubes); i++) {                                                          \
      CHECK_MSG(per_cube[i] == (T)d, "cube %u counted %g", (unsigned)i, (double)per_cube[i]); \
      CHECK(check[i] == (T)d);                                                               \
    }                                                                                        \
    CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));                         \
    CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));                         \
    CHECK_OK(cubert_client_handle_release(env.client, &h[2], NULL));                         \
    cts_teardown(&env);                                                                      \
  } while (0)

TEST(cts_atomic_u32_global_and_shared) {
  ATOMIC_CASE(uint32_t, k_at_u32_100, 7, 1, UINT32_MAX, UINT32_MAX);
  ATOMIC_CASE(uint32_t, k_at_u32_532, 3, 1, UINT32_MAX, UINT32_MAX);
}

TEST(cts_atomic_i32_global_and_shared) { ATOMIC_CASE(int32_t, k_at_i32_100, 5, 1, INT32_MAX, -1); }

TEST(cts_atomic_u64_global_and_shared) { ATOMIC_CASE(uint64_t, k_at_u64_37, 9, 1, UINT64_MAX, UINT64_MAX); }

TEST(cts_atomic_i64_global_and_shared) { ATOMIC_CASE(int64_t, k_at_i64_532, 4, 1, INT64_MAX, -1); }

TEST(cts_atomic_f32_global_and_shared) { ATOMIC_CASE(float, k_at_f32_100, 6, 0, 1e30f, 0.0f); }

/* ---- planes ------------------------------------------------------------------------ */

CUBERT_KERNEL_DESCRIPTOR(k_plane_100, cts_plane_u32, 2, 0, 0, 100, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_plane_532, cts_plane_u32, 2, 0, 0, 5, 3, 2);
CUBERT_KERNEL_DESCRIPTOR(k_plane_256, cts_plane_u32, 2, 0, 0, 256, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_plane_37, cts_plane_u32, 2, 0, 0, 37, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_plane_f32_100, cts_plane_f32, 2, 0, 0, 100, 1, 1);

/* The expected outputs of cts_plane_u32 (cts_dialect_kernels.h) for `units`
 * inputs in cubes of d units and planes of p (the reference the CPU
 * plane-size sweep uses too). */
void cts_plane_reference(const uint32_t *in, uint64_t n, uint32_t d, uint32_t p, uint32_t *out);
void cts_plane_reference(const uint32_t *in, uint64_t n, uint32_t d, uint32_t p, uint32_t *out) {
  uint64_t c0, b, u;
  for (c0 = 0; c0 < n; c0 += d) { /* each cube */
    uint32_t cube_sum = 0, cube_max = 0, running = 0;
    for (u = 0; u < d; u++) {
      cube_sum += in[c0 + u];
      if (in[c0 + u] > cube_max) cube_max = in[c0 + u];
    }
    for (b = 0; b < d; b += p) { /* each plane */
      uint32_t e = (uint32_t)(b + p < d ? b + p : d), cnt = e - (uint32_t)b;
      uint32_t sum = 0, prod = 1, mn = UINT32_MAX, mx = 0, all = 1, any = 0, incl = 0;
      for (u = b; u < e; u++) {
        uint32_t v = in[c0 + u];
        sum += v;
        prod *= v;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
        all &= v != 0;
        any |= v != 0;
      }
      for (u = b; u < e; u++) {
        uint64_t i = c0 + u, lane = u - b, x = lane ^ 1u;
        out[CTS_PL_SUM * n + i] = sum;
        out[CTS_PL_PROD * n + i] = prod;
        out[CTS_PL_MIN * n + i] = mn;
        out[CTS_PL_MAX * n + i] = mx;
        out[CTS_PL_ALL * n + i] = all;
        out[CTS_PL_ANY * n + i] = any;
        out[CTS_PL_BROADCAST * n + i] = in[c0 + b];
        out[CTS_PL_SHUFFLE * n + i] = in[c0 + b + (lane + 1) % cnt];
        out[CTS_PL_XOR * n + i] = x < cnt && x < p ? in[c0 + b + x] : in[i];
        out[CTS_PL_EXCL * n + i] = incl;
        incl += in[i];
        out[CTS_PL_INCL * n + i] = incl;
        out[CTS_PL_CUBE_SUM * n + i] = cube_sum;
        out[CTS_PL_CUBE_MAX * n + i] = cube_max;
        out[CTS_PL_CUBE_EXCL * n + i] = running;
        running += in[i];
        out[CTS_PL_CUBE_INCL * n + i] = running;
        out[CTS_PL_DIM * n + i] = p;
        out[CTS_PL_LANE * n + i] = (uint32_t)lane;
      }
    }
  }
}

static const char *const k_plane_names[CTS_PL_OUTPUTS] = {
    "plane_sum", "plane_prod", "plane_min", "plane_max", "plane_all", "plane_any",
    "plane_broadcast", "plane_shuffle", "plane_shuffle_xor", "plane_inclusive_sum",
    "plane_exclusive_sum", "cube_sum", "cube_max", "cube_inclusive_sum", "cube_exclusive_sum",
    "PLANE_DIM", "UNIT_POS_PLANE"};

/* Inputs with zeros in some planes (all/any differ), small values (prod). */
void cts_plane_inputs(uint32_t *in, uint64_t n);
void cts_plane_inputs(uint32_t *in, uint64_t n) {
  uint64_t i;
  for (i = 0; i < n; i++) in[i] = (i % 67u == 5u) ? 0u : (uint32_t)(1u + (i * 2654435761u) % 7u);
}

/* 0 when out matches the reference, else the number of mismatches (the
 * first few printed). */
uint64_t cts_plane_compare(const uint32_t *got, const uint32_t *want, uint64_t n, const char *what);
uint64_t cts_plane_compare(const uint32_t *got, const uint32_t *want, uint64_t n, const char *what) {
  uint64_t k, i, bad = 0;
  for (k = 0; k < CTS_PL_OUTPUTS; k++)
    for (i = 0; i < n; i++)
      if (got[k * n + i] != want[k * n + i] && bad++ < 5)
        printf("  %s: %s unit %llu: got %u want %u\n", what, k_plane_names[k],
               (unsigned long long)i, (unsigned)got[k * n + i], (unsigned)want[k * n + i]);
  return bad;
}

static void plane_case(const cubert_kernel_t *k, uint32_t cubes) {
  cts_env_t env;
  const uint32_t d = k->cube_dim.x * k->cube_dim.y * k->cube_dim.z;
  const uint64_t n = (uint64_t)d * cubes;
  uint32_t *in = (uint32_t *)malloc(n * 4), *out = (uint32_t *)calloc(n * CTS_PL_OUTPUTS, 4),
           *want = (uint32_t *)calloc(n * CTS_PL_OUTPUTS, 4);
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_3d(cubes, 1, 1);
  CHECK(in && out && want);
  cts_plane_inputs(in, n);
  cts_plane_reference(in, n, d, 32, want);
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, in, n * 4, &h[0], NULL));
  CHECK_OK(cubert_client_empty(env.client, n * 4 * CTS_PL_OUTPUTS, &h[1], NULL));
  args = args_of(h, 2);
  CHECK_OK(cubert_client_launch(env.client, k, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h[1], out, n * 4 * CTS_PL_OUTPUTS, NULL));
  CHECK_EQ_U64(cts_plane_compare(out, want, n, k->name), 0);
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  cts_teardown(&env);
  free(in);
  free(out);
  free(want);
}

TEST(cts_plane_ops_cube_of_100) { plane_case(&k_plane_100, 3); }
TEST(cts_plane_ops_cube_of_5x3x2) { plane_case(&k_plane_532, 4); }
TEST(cts_plane_ops_cube_of_256) { plane_case(&k_plane_256, 2); }
TEST(cts_plane_ops_cube_of_37) { plane_case(&k_plane_37, 5); }

TEST(cts_plane_ops_f32_sums_are_exact) {
  cts_env_t env;
  enum { D = 100, CUBES = 2, N = D * CUBES };
  float in[N], out[3 * N];
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_3d(CUBES, 1, 1);
  uint32_t i, b;
  for (i = 0; i < N; i++) in[i] = (float)((i * 7u) % 13u) - 6.0f;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, in, sizeof in, &h[0], NULL));
  CHECK_OK(cubert_client_empty(env.client, sizeof out, &h[1], NULL));
  args = args_of(h, 2);
  CHECK_OK(cubert_client_launch(env.client, &k_plane_f32_100, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h[1], out, sizeof out, NULL));
  for (i = 0; i < N; i++) {
    uint32_t c0 = i / D * D, pb = c0 + (i - c0) / 32u * 32u, pe = pb + 32u < c0 + D ? pb + 32u : c0 + D;
    float plane = 0, cube = 0, incl = 0;
    for (b = pb; b < pe; b++) plane += in[b];
    for (b = c0; b < c0 + D; b++) cube += in[b];
    for (b = pb; b <= i; b++) incl += in[b];
    CHECK_MSG(out[i] == plane, "plane_sum unit %u: %g vs %g", (unsigned)i, out[i], plane);
    CHECK_MSG(out[N + i] == cube, "cube_sum unit %u: %g vs %g", (unsigned)i, out[N + i], cube);
    CHECK_MSG(out[2 * N + i] == incl, "plane_inclusive_sum unit %u: %g vs %g", (unsigned)i, out[2 * N + i],
              incl);
  }
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  cts_teardown(&env);
}

/* ---- the barrier rule -------------------------------------------------------------- */

CUBERT_KERNEL_DESCRIPTOR(k_barrier_96, cts_barrier_u32, 2, 0, 0, 96, 1, 1);

TEST(cts_barrier_uniform_code_reads_the_phase_before) {
  cts_env_t env;
  enum { D = 96, CUBES = 5 };
  uint32_t in[CUBES] = {1, 2, 3, 4, 5}, out[D * CUBES];
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_3d(CUBES, 1, 1);
  uint32_t c, u;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, in, sizeof in, &h[0], NULL));
  CHECK_OK(cubert_client_empty(env.client, sizeof out, &h[1], NULL));
  args = args_of(h, 2);
  CHECK_OK(cubert_client_launch(env.client, &k_barrier_96, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h[1], out, sizeof out, NULL));
  for (c = 0; c < CUBES; c++)
    for (u = 0; u < D; u++) CHECK_EQ_U64(out[c * D + u], in[c] * 10u + u);
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  cts_teardown(&env);
}

/* ---- portable math ----------------------------------------------------------------- */

CUBERT_KERNEL_DESCRIPTOR(k_math_kernel, cts_math_f32, 2, 1, 0, 128, 1, 1);

/* How a function's error is bounded: in ulp of the correctly rounded
 * result, or as an absolute or relative error. */
enum { MATH_ULP = 0, MATH_ABS = 1, MATH_REL = 2 };

typedef struct math_case_t {
  const char *name;
  int kind;
  double bound;    /* the contract (docs/kernels.md, "Math") */
  double lo, hi;   /* inputs, log-spaced when lo > 0 and hi / lo > 1000 */
} math_case_t;

static const math_case_t k_math[CTS_MATH_FUNCS] = {
    {"expf", MATH_ULP, 2, -87, 88},
    {"exp2f", MATH_ULP, 2, -125, 127},
    {"logf", MATH_ULP, 1, 1e-30, 1e30},
    {"log2f", MATH_ULP, 1, 1e-30, 1e30},
    {"sqrtf", MATH_ULP, 0, 1e-30, 1e30},
    {"rsqrtf", MATH_ULP, 2, 1e-30, 1e30},
    {"tanhf", MATH_ULP, 2, -10, 10},
    {"erff", MATH_ULP, 2, -5, 5},
    {"sinf", MATH_ULP, 2, -1000, 1000},
    {"cosf", MATH_ULP, 2, -1000, 1000},
    {"powf", MATH_ULP, 4, 0.01, 100}, /* y: the next input, so pow(0.01..100, 0.01..100) */
    {"fmaf", MATH_ULP, 0, -10, 10},
    {"fminf", MATH_ULP, 0, -100, 100},
    {"fmaxf", MATH_ULP, 0, -100, 100},
    {"fabsf", MATH_ULP, 0, -100, 100},
    {"floorf", MATH_ULP, 0, -100, 100},
    {"ceilf", MATH_ULP, 0, -100, 100},
    {"roundf", MATH_ULP, 0, -100, 100},
    {"fast_expf", MATH_ULP, 14, -10, 10}, /* CUDA: 2 + floor(|1.173 x|) */
    {"fast_logf", MATH_ULP, 3, 2, 1e30},  /* CUDA: 3 outside [0.5, 2] */
    {"fast_log2f", MATH_ULP, 2, 2, 1e30}, /* CUDA: 2 outside [0.5, 2] */
    /* CUDA documents 2^-21.41 on [-pi, pi]; an H200 gave 3.92e-7 for __cosf: 2^-21 */
    {"fast_sinf", MATH_ABS, 4.77e-7, -3.14159, 3.14159},
    {"fast_cosf", MATH_ABS, 4.77e-7, -3.14159, 3.14159},
    {"fast_powf", MATH_REL, 1.0 / 65536, 0.5, 2}, /* exp2(y log2 x), y in [0.5, 2] too */
};

static long double math_reference(int k, float x, float y, float z) {
  switch (k) {
    case 0: case 18: return expl(x);
    case 1: return exp2l(x);
    case 2: case 19: return logl(x);
    case 3: case 20: return log2l(x);
    case 4: return sqrtl(x);
    case 5: return 1.0L / sqrtl(x);
    case 6: return tanhl(x);
    case 7: return erfl(x);
    case 8: case 21: return sinl(x);
    case 9: case 22: return cosl(x);
    case 10: case 23: return powl(x, y);
    case 11: return (long double)x * y + z;
    case 12: return fminf(x, y);
    case 13: return fmaxf(x, y);
    case 14: return fabsf(x);
    case 15: return floorf(x);
    case 16: return ceilf(x);
    default: return roundf(x);
  }
}

/* The error of `got` against `ref` in the case's unit. */
static double math_error(const math_case_t *c, float got, long double ref) {
  double r = (double)ref;
  int e;
  if ((isnan(got) && isnan(r)) || (double)got == r) return 0;
  if (c->kind == MATH_ULP && (float)r == got) return 0.5; /* correctly rounded */
  if (c->kind == MATH_ABS) return fabs((double)got - r);
  if (c->kind == MATH_REL) return fabs(((double)got - r) / r);
  if (isinf(got) || isnan(got) || isinf(r) || isnan(r)) return 1e9;
  frexp((double)(float)r, &e); /* |r| in [2^(e-1), 2^e): float ulp 2^(e-24), subnormals 2^-149 */
  return fabs((double)got - r) / ldexp(1.0, e - 24 < -149 ? -149 : e - 24);
}

TEST(cts_math_within_documented_ulp) {
  cts_env_t env;
  enum { N = 4096 };
  float *in = (float *)malloc((size_t)CTS_MATH_FUNCS * N * 4),
        *out = (float *)malloc((size_t)CTS_MATH_FUNCS * N * 4);
  uint64_t n = N;
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_3d((N + 127) / 128, 1, 1);
  int k, i;
  CHECK(in && out);
  for (k = 0; k < CTS_MATH_FUNCS; k++) {
    const math_case_t *c = &k_math[k];
    for (i = 0; i < N; i++) {
      double t = (double)i / (N - 1), v;
      if (c->lo > 0 && c->hi / c->lo > 1000) v = c->lo * pow(c->hi / c->lo, t);
      else v = c->lo + (c->hi - c->lo) * t;
      if (k >= 12 && k <= 17 && i % 7 == 0) v = floor(v) + 0.5; /* halves: round, floor, ceil */
      in[k * N + i] = (float)v;
    }
  }
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, in, (size_t)CTS_MATH_FUNCS * N * 4, &h[0],
                                           NULL));
  CHECK_OK(cubert_client_empty(env.client, (size_t)CTS_MATH_FUNCS * N * 4, &h[1], NULL));
  args = args_of(h, 2);
  args.scalars = &n;
  args.scalar_count = 1;
  CHECK_OK(cubert_client_launch(env.client, &k_math_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h[1], out, (size_t)CTS_MATH_FUNCS * N * 4, NULL));
  for (k = 0; k < CTS_MATH_FUNCS; k++) {
    const math_case_t *c = &k_math[k];
    double worst = 0;
    int at = 0;
    for (i = 0; i < N; i++) {
      float x = in[k * N + i], y = in[k * N + (i + 1) % N], z = in[k * N + (i + 2) % N];
      double err = math_error(c, out[k * N + i], math_reference(k, x, y, z));
      if (err > worst) {
        worst = err;
        at = i;
      }
    }
    /* the measured figure, for docs/kernels.md's table */
    printf("  math %-11s max %s %.3g (bound %.3g) at x=%.9g on %s\n", c->name,
           c->kind == MATH_ULP ? "ulp" : c->kind == MATH_ABS ? "abs" : "rel", worst, c->bound,
           (double)in[k * N + at], cts_server_name());
    CHECK_MSG(worst <= (c->kind == MATH_ULP ? c->bound + 0.5 : c->bound),
              "%s: error %.3g above its bound %.3g at x=%.9g (got %.9g)", c->name, worst, c->bound,
              (double)in[k * N + at], (double)out[k * N + at]);
  }
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  cts_teardown(&env);
  free(in);
  free(out);
}

/* ---- CUBERT_UNIT_DONE inside a loop nested in a phase ------------------------------------ */

/* CUBERT_UNIT_DONE continues the inner loop here (it cannot end the unit from
 * inside a plain loop; inside CUBERT_UNIT_FOR it does not compile, see
 * tests/build/check_unit_done.sh), and units 5.. go on to the store. */
CUBERT_KERNEL(cts_unit_done_in_loop) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_PHASE {
    uint32_t i;
    for (i = 0; i < 2; i++)
      if (UNIT_POS >= 5) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, ABSOLUTE_POS, 1u);
  }
}
CUBERT_KERNEL_DESCRIPTOR(k_unit_done_in_loop, cts_unit_done_in_loop, 1, 0, 0, 8, 1, 1);

static void unit_done_in_loop_case(cubert_bounds_check_mode_t mode) {
  uint32_t data[8] = {0};
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  cts_options_t o;
  cubert_client_t *client = NULL;
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  memset(&o, 0, sizeof o);
  o.bounds_check = mode;
  o.workers = 1;
  CHECK_OK(cts_client_create(a, &o, &client, NULL));
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1);
  CHECK_OK(cubert_client_launch_unchecked(client, &k_unit_done_in_loop, &count, &args, NULL));
  CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
  CHECK_MSG(strstr(err.reason, "cts_unit_done_in_loop") != NULL &&
                strstr(err.reason, "unit 5 of cube 0 went on after CUBERT_UNIT_DONE") != NULL,
            "reason: %s", err.reason);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* VALIDATE (the mode tests run in) and RACECHECK fail the launch, naming the
 * kernel, the unit and the access; the GPU cannot see it (CUDA runs the
 * body as written: units 5.. store too, as on the CPU). */
TEST(cts_unit_done_in_a_nested_loop_fails_validate_and_racecheck) {
  if (cts_driver_is("cuda"))
    TEST_SKIP("the CUDA driver runs the kernel as written: a unit going on after CUBERT_UNIT_DONE "
              "is checked by the CPU drivers only");
  unit_done_in_loop_case(CUBERT_BOUNDS_CHECK_VALIDATE);
  unit_done_in_loop_case(CUBERT_BOUNDS_CHECK_RACECHECK);
}
