/* SPDX-License-Identifier: MIT */
/* The ExclusivePages buckets against a correctly rounded reference computed
 * here (issue 26): every max_page_size 1..65536 at alignments 1, 8 and 256.
 *
 * CubeCL's formula in f64 (memory_manage.rs, generate_bucket_sizes):
 *   log_min = ln(32768), log_max = ln(max), range = log_max - log_min,
 *   bucket i = next_multiple_of(floor(exp(log_min + range * (i / 23.0))), align),
 *   consecutive duplicates removed,
 * with ln and exp rounded to the nearest double. The reference rounds logl /
 * expl (64-bit significands) to double when the long double value is clearly
 * on one side of a midpoint between two doubles, and otherwise computes that
 * ln or exp again with 113-bit significands (__float128, or long double where
 * it is that wide) by plain series. Host tests only: libm's logl / expl. */
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cubert/config.h"
#include "cubert/memory.h"

#if LDBL_MANT_DIG >= 113
typedef long double wide_t;
#define HAVE_QUAD 1
#elif defined(__SIZEOF_FLOAT128__)
__extension__ typedef __float128 wide_t;
#define HAVE_QUAD 1
#else
#define HAVE_QUAD 0
#endif

static long g_quad_steps;     /* steps long double could not decide */
static long g_undecided;      /* steps not even the quad series decided */

#if HAVE_QUAD
static wide_t quad_abs(wide_t a) { return a < 0 ? -a : a; }

/* 2 atanh(f) = ln((1+f)/(1-f)), |f| <= 1/3 */
static wide_t quad_atanh2(wide_t f) {
  wide_t f2 = f * f, term = f, sum = 0;
  int k;
  for (k = 1; k < 160; k += 2) {
    sum += term / k;
    term *= f2;
  }
  return 2 * sum;
}

static wide_t quad_ln2(void) { return quad_atanh2((wide_t)1 / 3); }

static wide_t quad_ln(double x) {
  int e;
  double m = frexp(x, &e); /* m in [0.5, 1) */
  wide_t qm = m;
  if (m < 0.70710678118654752) {
    qm *= 2;
    e -= 1;
  }
  return e * quad_ln2() + quad_atanh2((qm - 1) / (qm + 1));
}

static wide_t quad_exp(double y) {
  wide_t ln2 = quad_ln2(), r, term = 1, sum = 1;
  long k = lround(y / 0.69314718055994530942);
  int n;
  r = (wide_t)y - k * ln2;
  for (n = 1; n < 60; n++) {
    term = term * r / n;
    sum += term;
  }
  for (; k > 0; k--) sum *= 2;
  for (; k < 0; k++) sum /= 2;
  return sum;
}

/* The nearest double of q; *decided 0 when q is within 2^-100 (relative) of
 * a midpoint between two doubles. */
static double quad_round(wide_t q, int *decided) {
  double d = (double)q;
  wide_t up = (wide_t)nextafter(d, INFINITY), down = (wide_t)nextafter(d, -INFINITY);
  wide_t mid_up = ((wide_t)d + up) / 2, mid_down = ((wide_t)d + down) / 2;
  wide_t margin = quad_abs(q) * ((wide_t)1 / 1024 / 1024 / 1024 / 1024 / 1024 / 1024 / 1024 /
                                 1024 / 1024 / 1024);
  *decided = quad_abs(q - mid_up) > margin && quad_abs(q - mid_down) > margin;
  return d;
}
#endif

/* The nearest double of a long double L, when L is more than 4 of its own ulps
 * from a midpoint between two doubles. */
static int ld_round(long double L, double *out) {
  double d = (double)L;
  long double up = (long double)nextafter(d, INFINITY), down = (long double)nextafter(d, -INFINITY);
  long double margin = fabsl(L) * LDBL_EPSILON * 4;
  if (fabsl(L - ((long double)d + up) / 2) <= margin) return 0;
  if (fabsl(L - ((long double)d + down) / 2) <= margin) return 0;
  *out = d;
  return 1;
}

static double ref_ln(double x) {
  double d = 0;
  if (ld_round(logl((long double)x), &d)) return d;
  g_quad_steps++;
#if HAVE_QUAD
  {
    int decided;
    d = quad_round(quad_ln(x), &decided);
    if (!decided) g_undecided++;
  }
#else
  g_undecided++;
  d = (double)logl((long double)x);
#endif
  return d;
}

static double ref_exp(double y) {
  double d = 0;
  if (ld_round(expl((long double)y), &d)) return d;
  g_quad_steps++;
#if HAVE_QUAD
  {
    int decided;
    d = quad_round(quad_exp(y), &decided);
    if (!decided) g_undecided++;
  }
#else
  g_undecided++;
  d = (double)expl((long double)y);
#endif
  return d;
}

/* long double wider than double, also at run time (valgrind computes x87
 * long doubles with 64-bit doubles) */
static int long_double_is_wider(void) {
  volatile long double one = 1, tiny = LDBL_EPSILON;
  volatile long double sum = one + tiny;
  return LDBL_MANT_DIG > 53 && sum != one && (double)(sum - one) != 0.0 &&
         (sum - one) < (long double)DBL_EPSILON;
}

TEST(memory_exclusive_buckets_sweep_matches_correctly_rounded_reference) {
  static const uint64_t aligns[3] = {1, 8, 256};
  double log_min;
  uint64_t m;
  long mismatches = 0, configs = 0;
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  if (!long_double_is_wider())
    TEST_SKIP("long double has no more precision than double here (ARM, or x87 under valgrind): "
              "no reference");
  if (FLT_EVAL_METHOD != 0)
    TEST_SKIP("double expressions are evaluated in a wider type here (x87): the library's f64 "
              "steps round twice");
  g_quad_steps = g_undecided = 0;
  log_min = ref_ln(32768.0);
  for (m = 1; m <= 65536; m++) {
    double log_max = ref_ln((double)m), range = log_max - log_min;
    uint64_t floors[24];
    int i, a;
    for (i = 0; i < 24; i++) {
      double p = (double)i / 23.0;
      double v = ref_exp(log_min + range * p);
      floors[i] = (uint64_t)v;
    }
    for (a = 0; a < 3; a++) {
      cubert_memory_configuration_t c = cubert_memory_configuration_default(true);
      cubert_memory_device_properties_t props;
      cubert_memory_pool_options_t pools[32];
      uint64_t want[24], prev = 0;
      uint32_t n = 0, k = 0, j;
      int same;
      props.max_page_size = m;
      props.alignment = aligns[a];
      CHECK_OK(cubert_memory_configuration_pools(&c, props, pools, 32, &n, NULL));
      for (i = 0; i < 24; i++) {
        uint64_t al = (floors[i] + aligns[a] - 1) / aligns[a] * aligns[a];
        if (i > 0 && al == prev) continue;
        prev = al;
        want[k++] = al;
      }
      same = n == k;
      for (j = 0; same && j < n; j++)
        same = pools[j].type == CUBERT_MEMORY_POOL_EXCLUSIVE && pools[j].max_alloc_size == want[j];
      if (!same) {
        if (mismatches < 5)
          CHECK_MSG(0, "max_page %llu alignment %llu: %u buckets, last %llu; reference %u, last %llu",
                    (unsigned long long)m, (unsigned long long)aligns[a], (unsigned)n,
                    (unsigned long long)(n ? pools[n - 1].max_alloc_size : 0), (unsigned)k,
                    (unsigned long long)want[k - 1]);
        mismatches++;
      }
      configs++;
    }
  }
  printf("  %ld configurations, %ld mismatches; %ld ln/exp steps decided by the 113-bit series, "
         "%ld undecided\n",
         configs, mismatches, g_quad_steps, g_undecided);
  CHECK_EQ_I64(configs, 3 * 65536);
  CHECK_EQ_I64(mismatches, 0);
  CHECK_EQ_I64(g_undecided, 0); /* every reference step certain */
}
