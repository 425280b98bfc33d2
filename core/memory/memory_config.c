/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_config.c: memory configurations (docs/cubecl-mapping.md,
 * "Memory configuration"): the SubSlices
 * preset ladder, the ExclusivePages buckets, and the resolution of explicit
 * layouts with every validation error.
 */
#include "memory/memory_internal.h"
#include "memory/memory.h"
#include "cubert/driver/arith.h"

#define MIB ((uint64_t)1 << 20)

#if CUBERT_CONFIG_PAGED_POOLS
/* ---- natural log and exp without libm -------------------------------------
 * The ExclusivePages buckets are defined through f64 ln/exp (CubeCL calls the
 * platform's). Both are computed here in double-double arithmetic (about 100
 * bits) and rounded once to the nearest double (dd_round): correctly rounded,
 * except for an argument whose value lies within about 2^-100 of a midpoint
 * between two doubles. Every max_page_size 1..65536 at alignments 1, 8 and 256
 * matches a correctly rounded reference (tests/os/test_memory_buckets.c),
 * also with x87 arithmetic (-mfpmath=387: each step is one operation assigned
 * to a double, and the final rounding compares instead of adding). */

typedef struct dd_t {
  double hi, lo; /* value hi + lo, |lo| <= ulp(hi)/2 */
} dd_t;

/* ln 2 to about 107 bits */
static const double k_ln2_hi = 6.93147180559945286227e-01; /* 0x3FE62E42FEFA39EF */
static const double k_ln2_lo = 2.31904681384629955842e-17; /* 0x3C7ABC9E3B39803F */

/* 1/n for n = 1..51 to about 107 bits (hi + lo, each the nearest double) */
static const dd_t k_inv[51] = {
    {1.0, 0.0}, /* 1/1 */
    {0.5, 0.0}, /* 1/2 */
    {0.3333333333333333, 1.850371707708594e-17}, /* 1/3 */
    {0.25, 0.0}, /* 1/4 */
    {0.2, -1.1102230246251566e-17}, /* 1/5 */
    {0.16666666666666666, 9.25185853854297e-18}, /* 1/6 */
    {0.14285714285714285, 7.93016446160826e-18}, /* 1/7 */
    {0.125, 0.0}, /* 1/8 */
    {0.1111111111111111, 6.1679056923619804e-18}, /* 1/9 */
    {0.1, -5.551115123125783e-18}, /* 1/10 */
    {0.09090909090909091, -2.523234146875356e-18}, /* 1/11 */
    {0.08333333333333333, 4.625929269271485e-18}, /* 1/12 */
    {0.07692307692307693, -4.270088556250602e-18}, /* 1/13 */
    {0.07142857142857142, 3.96508223080413e-18}, /* 1/14 */
    {0.06666666666666667, 9.251858538542971e-19}, /* 1/15 */
    {0.0625, 0.0}, /* 1/16 */
    {0.058823529411764705, 8.163404592832033e-19}, /* 1/17 */
    {0.05555555555555555, 3.0839528461809902e-18}, /* 1/18 */
    {0.05263157894736842, 2.921639538487254e-18}, /* 1/19 */
    {0.05, -2.7755575615628915e-18}, /* 1/20 */
    {0.047619047619047616, 2.64338815386942e-18}, /* 1/21 */
    {0.045454545454545456, -1.261617073437678e-18}, /* 1/22 */
    {0.043478260869565216, 1.206764157201257e-18}, /* 1/23 */
    {0.041666666666666664, 2.3129646346357427e-18}, /* 1/24 */
    {0.04, -8.326672684688674e-19}, /* 1/25 */
    {0.038461538461538464, -2.135044278125301e-18}, /* 1/26 */
    {0.037037037037037035, 2.05596856412066e-18}, /* 1/27 */
    {0.03571428571428571, 1.982541115402065e-18}, /* 1/28 */
    {0.034482758620689655, 4.785444071660157e-19}, /* 1/29 */
    {0.03333333333333333, 4.625929269271486e-19}, /* 1/30 */
    {0.03225806451612903, 8.953411488912552e-19}, /* 1/31 */
    {0.03125, 0.0}, /* 1/32 */
    {0.030303030303030304, -8.410780489584519e-19}, /* 1/33 */
    {0.029411764705882353, 4.0817022964160166e-19}, /* 1/34 */
    {0.02857142857142857, 8.921435019309293e-19}, /* 1/35 */
    {0.027777777777777776, 1.5419764230904951e-18}, /* 1/36 */
    {0.02702702702702703, -1.50030138462859e-18}, /* 1/37 */
    {0.02631578947368421, 1.460819769243627e-18}, /* 1/38 */
    {0.02564102564102564, 8.896017825522087e-19}, /* 1/39 */
    {0.025, -1.3877787807814458e-18}, /* 1/40 */
    {0.024390243902439025, -8.46206573647223e-19}, /* 1/41 */
    {0.023809523809523808, 1.32169407693471e-18}, /* 1/42 */
    {0.023255813953488372, 3.2273925134452225e-19}, /* 1/43 */
    {0.022727272727272728, -6.30808536718839e-19}, /* 1/44 */
    {0.022222222222222223, -8.480870326997723e-19}, /* 1/45 */
    {0.021739130434782608, 6.033820786006285e-19}, /* 1/46 */
    {0.02127659574468085, 5.167261417803255e-19}, /* 1/47 */
    {0.020833333333333332, 1.1564823173178713e-18}, /* 1/48 */
    {0.02040816326530612, 1.6285159162231251e-18}, /* 1/49 */
    {0.02, -4.163336342344337e-19}, /* 1/50 */
    {0.0196078431372549, 2.7211348642773444e-19}, /* 1/51 */
};

/* exp(j/32) for j = -12..12 to about 107 bits */
static const dd_t k_exp32[25] = {
    {0.6872892787909722, -3.7088003061371396e-17}, /* exp(-12/32) */
    {0.7091061824373984, -1.2868055655346304e-17}, /* exp(-11/32) */
    {0.7316156289466418, 8.35576468031604e-18}, /* exp(-10/32) */
    {0.7548396019890073, -9.844076038651084e-18}, /* exp(-9/32) */
    {0.7788007830714049, -1.0231869534531498e-17}, /* exp(-8/32) */
    {0.8035225736890608, -3.661886830920417e-17}, /* exp(-7/32) */
    {0.8290291181804004, -2.7604408719539223e-17}, /* exp(-6/32) */
    {0.8553453273074225, 1.7204900005057594e-17}, /* exp(-5/32) */
    {0.8824969025845955, -5.224526916735663e-17}, /* exp(-4/32) */
    {0.9105103613800342, -3.325048324577564e-17}, /* exp(-3/32) */
    {0.9394130628134758, -2.152447043447057e-17}, /* exp(-2/32) */
    {0.9692332344763441, -4.801151707083219e-17}, /* exp(-1/32) */
    {1.0, 0.0}, /* exp(0/32) */
    {1.0317434074991028, -8.944417741043132e-17}, /* exp(1/32) */
    {1.0644944589178593, 1.0872888143211957e-16}, /* exp(2/32) */
    {1.0982851403078258, 9.070644949793751e-17}, /* exp(3/32) */
    {1.1331484530668263, -5.370737708558031e-18}, /* exp(4/32) */
    {1.1691184461695043, 6.945488167320411e-17}, /* exp(5/32) */
    {1.2062302494209807, 3.9295715071105525e-17}, /* exp(6/32) */
    {1.2445201077660952, -7.440512295261056e-17}, /* exp(7/32) */
    {1.2840254166877414, 8.968972781793724e-17}, /* exp(8/32) */
    {1.3247847587288655, 9.422682377542367e-17}, /* exp(9/32) */
    {1.3668379411737963, 5.1449446596411544e-17}, /* exp(10/32) */
    {1.4102260349257107, -4.1758810273684196e-17}, /* exp(11/32) */
    {1.4549914146182013, 8.517923078996071e-17}, /* exp(12/32) */
};

static dd_t dd_two_sum(double a, double b) {
  dd_t r;
  double bb, t1, t2;
  r.hi = a + b;
  bb = r.hi - a;
  t1 = r.hi - bb;
  t1 = a - t1;
  t2 = b - bb;
  r.lo = t1 + t2;
  return r;
}

/* |a| >= |b| (or a == 0) */
static dd_t dd_quick_two_sum(double a, double b) {
  dd_t r;
  double t;
  r.hi = a + b;
  t = r.hi - a;
  r.lo = b - t;
  return r;
}

static void dd_split(double a, double *hi, double *lo) {
  double t = 134217729.0 * a; /* 2^27 + 1 */
  double u = t - a;
  *hi = t - u;
  *lo = a - *hi;
}

static dd_t dd_two_prod(double a, double b) {
  dd_t r;
  double ah, al, bh, bl, t;
  r.hi = a * b;
  dd_split(a, &ah, &al);
  dd_split(b, &bh, &bl);
  t = ah * bh;
  t = t - r.hi;
  t = t + ah * bl;
  t = t + al * bh;
  r.lo = t + al * bl;
  return r;
}

static dd_t dd_add(dd_t a, dd_t b) {
  dd_t s = dd_two_sum(a.hi, b.hi), t = dd_two_sum(a.lo, b.lo);
  s.lo = s.lo + t.hi;
  s = dd_quick_two_sum(s.hi, s.lo);
  s.lo = s.lo + t.lo;
  return dd_quick_two_sum(s.hi, s.lo);
}

static dd_t dd_mul(dd_t a, dd_t b) {
  dd_t p = dd_two_prod(a.hi, b.hi);
  double c = a.hi * b.lo;
  c = c + a.lo * b.hi;
  p.lo = p.lo + c;
  return dd_quick_two_sum(p.hi, p.lo);
}

static dd_t dd_neg(dd_t a) {
  a.hi = -a.hi;
  a.lo = -a.lo;
  return a;
}

static dd_t dd_of(double a) {
  dd_t r;
  r.hi = a;
  r.lo = 0.0;
  return r;
}

/* a / b: three quotient digits */
static dd_t dd_div(dd_t a, dd_t b) {
  double q1, q2, q3;
  dd_t r, q;
  q1 = a.hi / b.hi;
  r = dd_add(a, dd_neg(dd_mul(dd_of(q1), b)));
  q2 = r.hi / b.hi;
  r = dd_add(r, dd_neg(dd_mul(dd_of(q2), b)));
  q3 = r.hi / b.hi;
  q = dd_quick_two_sum(q1, q2);
  return dd_add(q, dd_of(q3));
}

/* hi + lo rounded to the nearest double (ties to even), for |lo| below
 * ulp(hi): by comparisons of lo with half an ulp of hi, never by an
 * addition (an x87 build would round such an addition twice, which is wrong
 * exactly for the near-midpoint values at stake). */
static double dd_round(dd_t a) {
  uint64_t bits, mant;
  double hi = a.hi, lo = a.lo, half_up, half_down;
  int neg = hi < 0, exp_field;
  if (hi == 0.0 || lo == 0.0) return hi;
  if (neg) {
    hi = -hi;
    lo = -lo;
  }
  cubert_memcpy(&bits, &hi, sizeof bits);
  exp_field = (int)((bits >> 52) & 0x7FF);
  mant = bits & 0x000FFFFFFFFFFFFFull;
  /* unreachable: subnormal or huge hi (ln and exp of sizes stay in [2^-30, 2^64]) */
  if (exp_field <= 54 || exp_field >= 0x7FE) return neg ? -(hi + lo) : hi + lo;
  {
    uint64_t hb = (uint64_t)(exp_field - 53) << 52; /* ulp(hi) / 2 */
    cubert_memcpy(&half_up, &hb, sizeof half_up);
  }
  half_down = mant == 0 ? half_up * 0.5 : half_up; /* below a power of two the ulp halves */
  if (lo > half_up || (lo == half_up && (bits & 1))) bits++;
  else if (lo < -half_down || (lo == -half_down && (bits & 1))) bits--;
  cubert_memcpy(&hi, &bits, sizeof hi);
  return neg ? -hi : hi;
}

/* e * ln 2 */
static dd_t dd_mul_ln2(double e) {
  dd_t p = dd_two_prod(e, k_ln2_hi);
  double c = e * k_ln2_lo;
  p.lo = p.lo + c;
  return dd_quick_two_sum(p.hi, p.lo);
}

static double memory_ln(double x) {
  uint64_t bits;
  int e, k;
  double m, num;
  dd_t f, f2, acc;
  /* unreachable: x <= 0 (callers pass 32768 and max_page_size >= 1) */
  if (!(x > 0.0)) return -1.0e308; /* callers pass positive values only */
  cubert_memcpy(&bits, &x, sizeof bits);
  e = (int)((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull; /* m in [1, 2) */
  cubert_memcpy(&m, &bits, sizeof m);
  if (m > 1.41421356237309504880) {
    m *= 0.5; /* exact */
    e += 1;
  }
  /* ln m = 2 atanh(f), f = (m-1)/(m+1), |f| < 0.172: sum of f^(2k+1)/(2k+1),
   * k = 0..24 (f^50/51 < 2^-130), by Horner in f^2 */
  num = m - 1.0; /* exact (Sterbenz) */
  f = dd_div(dd_of(num), dd_two_sum(m, 1.0));
  f2 = dd_mul(f, f);
  acc = k_inv[48]; /* 1/49 */
  for (k = 23; k >= 0; k--) acc = dd_add(dd_mul(acc, f2), k_inv[2 * k]);
  acc = dd_mul(acc, f);
  acc.hi = 2.0 * acc.hi; /* exact */
  acc.lo = 2.0 * acc.lo;
  acc = dd_add(dd_mul_ln2((double)e), acc);
  return dd_round(acc);
}

static double memory_exp(double x) {
  double kd, scale, result;
  int k, n, j;
  uint64_t bits;
  dd_t r, acc;
  /* unreachable(5): NaN, x > 709, x < -708 (callers pass ln of sizes in [1, 2^64)) */
  if (x != x) return x;
  if (x > 709.0) return 1.0e308;
  if (x < -708.0) return 0.0;
  kd = x / k_ln2_hi;
  k = (int)(kd < 0 ? kd - 0.5 : kd + 0.5);
  /* r = x - k ln 2 in double-double, |r| <= ln2/2 + tiny */
  r = dd_add(dd_of(x), dd_neg(dd_mul_ln2((double)k)));
  /* exp r = exp(j/32) exp(t), t = r - j/32, |t| <= 1/64 + tiny; exp t = 1 + t (1 +
   * t/2 (1 + t/3 (...))), 14 terms ((1/64)^15/15! < 2^-130) */
  j = (int)(r.hi * 32.0 + (r.hi < 0 ? -0.5 : 0.5));
  r = dd_add(r, dd_of(-(double)j / 32.0)); /* j/32 exact */
  acc = dd_of(1.0);
  for (n = 14; n >= 1; n--) acc = dd_add(dd_of(1.0), dd_mul(dd_mul(acc, r), k_inv[n - 1]));
  acc = dd_mul(acc, k_exp32[j + 12]);
  /* 2^k in two steps so that k near the exponent limits stays finite (exact) */
  result = dd_round(acc); /* in [0.7, 1.5): no subnormal; the scaling is exact */
  bits = (uint64_t)(1023 + k / 2) << 52;
  cubert_memcpy(&scale, &bits, sizeof scale);
  result = result * scale;
  bits = (uint64_t)(1023 + (k - k / 2)) << 52;
  cubert_memcpy(&scale, &bits, sizeof scale);
  return result * scale;
}

#endif /* CUBERT_CONFIG_PAGED_POOLS */

/* ---- constructors ----------------------------------------------------------- */

static cubert_memory_pool_options_t pool_options_empty(cubert_memory_pool_type_t type) {
  cubert_memory_pool_options_t o;
  o.type = type;
  o.page_size = 0;
  o.max_slice_size = CUBERT_MEMORY_NONE;
  o.max_pool_size = CUBERT_MEMORY_NONE;
  o.max_alloc_size = 0;
  o.reclaim_at = CUBERT_MEMORY_NONE;
  o.dealloc_period = CUBERT_MEMORY_NONE;
  return o;
}

cubert_memory_pool_options_t cubert_memory_pool_sliced(uint64_t page_size, uint64_t max_slice_size,
                                                       uint64_t max_pool_size) {
  cubert_memory_pool_options_t o = pool_options_empty(CUBERT_MEMORY_POOL_SLICED);
  o.page_size = page_size;
  o.max_slice_size = max_slice_size;
  o.max_pool_size = max_pool_size;
  return o;
}

cubert_memory_pool_options_t cubert_memory_pool_exclusive(uint64_t max_alloc_size,
                                                          uint64_t dealloc_period) {
  cubert_memory_pool_options_t o = pool_options_empty(CUBERT_MEMORY_POOL_EXCLUSIVE);
  o.max_alloc_size = max_alloc_size;
  o.dealloc_period = dealloc_period;
  return o;
}

cubert_memory_pool_options_t cubert_memory_pool_direct(uint64_t reclaim_at) {
  cubert_memory_pool_options_t o = pool_options_empty(CUBERT_MEMORY_POOL_DIRECT);
  o.reclaim_at = reclaim_at;
  return o;
}

cubert_memory_configuration_t cubert_memory_configuration_default(bool exclusive_memory_only) {
  cubert_memory_configuration_t c;
  c.kind = exclusive_memory_only ? CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES
                                 : CUBERT_MEMORY_CONFIGURATION_SUB_SLICES;
  c.pools = NULL;
  c.pool_count = 0;
  return c;
}

uint64_t cubert__memory_dealloc_period(uint64_t size) {
  /* CubeCL: (5000.0 * (1.0 + size as f64 / 2^30).round()) as u64. The only
   * inexact step is `size as f64` (sizes >= 2^53 round to 53 significant
   * bits, to nearest, ties to even); the division by 2^30, the 1.0 + (its
   * ulp is at most 2^-19) and the product (< 2^48) are exact. So: round the
   * size as f64 does, in integers, then
   * round_half_away(1 + v/2^30) = 1 + floor((v + 2^29) / 2^30). */
  uint64_t v29, units;
  if (size >> 53) {
    unsigned shift = 0;
    uint64_t r, rem, half;
    while ((size >> shift) >> 53) shift++; /* 1..11 */
    r = size >> shift;
    rem = size & ((((uint64_t)1) << shift) - 1);
    half = ((uint64_t)1) << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    /* v = r << shift (2^64 when r reached 2^53 at shift 11); v >> 29 */
    v29 = (r >> 53) ? ((uint64_t)1 << (53 + shift - 29)) : (r << shift) >> 29;
  } else {
    v29 = size >> 29;
  }
  units = 1 + ((v29 + 1) >> 1);
  /* unreachable: saturation (units <= 2^34 + 1 for any u64 size) */
  return units > UINT64_MAX / 5000 ? UINT64_MAX - 1 : 5000 * units;
}

/* ---- presets ---------------------------------------------------------------- */

static uint64_t props_alignment(cubert_memory_device_properties_t props) {
  return props.alignment == 0 ? 1 : props.alignment;
}

/* Emit one pool into out[*n] when there is room; always count it. */
static void emit(cubert_memory_pool_options_t *out, uint32_t capacity, uint32_t *n,
                 cubert_memory_pool_options_t pool) {
  if (out && *n < capacity) out[*n] = pool;
  (*n)++;
}

#if CUBERT_CONFIG_PAGED_POOLS
static cubert_status_t preset_sub_slices(cubert_memory_device_properties_t props,
                                         cubert_memory_pool_options_t *out, uint32_t capacity,
                                         uint32_t *out_count, cubert_error_t *out_error) {
  uint64_t align = props_alignment(props);
  uint64_t pages[64], slices[64], current = props.max_page_size, tail;
  uint32_t recorded = 0, n = 0, base = 1, i;
  /* The levels stop where rounding current / 4 up to the alignment no longer
   * makes a smaller page (an alignment of 2^63 stops after one level); each
   * level at least quarters current until then, so 64 levels are never reached.
   * unreachable(4): 64 levels, or rounding current / 4 <= 2^62 up past 2^64 (sizes fit u64) */
  while (current >= 32 * MIB && recorded < 64) {
    uint64_t next;
    if (cubert_u64_round_up(current / 4, align, &next) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "page size");
    if (recorded > 0 && next >= pages[recorded - 1]) break;
    current = next;
    pages[recorded] = current;
    slices[recorded] = base < 64 ? current >> base : 0;
    recorded++;
    base++;
  }
  emit(out, capacity, &n, cubert_memory_pool_exclusive(0, CUBERT_MEMORY_NONE));
  for (i = recorded; i > 0; i--)
    emit(out, capacity, &n,
         cubert_memory_pool_sliced(pages[i - 1], slices[i - 1], CUBERT_MEMORY_NONE));
  tail = props.max_page_size / align * align;
  emit(out, capacity, &n, cubert_memory_pool_exclusive(tail, cubert__memory_dealloc_period(tail)));
  *out_count = n;
  return CUBERT_STATUS_OK;
}

static cubert_status_t preset_exclusive_pages(cubert_memory_device_properties_t props,
                                              cubert_memory_pool_options_t *out,
                                              uint32_t capacity, uint32_t *out_count,
                                              cubert_error_t *out_error) {
  uint64_t align = props_alignment(props), prev = 0, size, aligned;
  double log_min, log_max, log_range, value;
  uint32_t i, n = 0;
  if (props.max_page_size == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "max_page_size");
  log_min = memory_ln(32768.0);
  log_max = memory_ln((double)props.max_page_size);
  log_range = log_max - log_min;
  for (i = 0; i < 24; i++) {
    /* one f64 operation per assignment, as CubeCL's f64 expression rounds
     * each (an x87 build keeps unassigned intermediates wider) */
    double p = (double)i / 23.0, step = log_range * p, arg = log_min + step;
    value = memory_exp(arg);
    /* Rust's `as u64` saturates */
    /* unreachable(2): value <= 0 or >= 2^64 (exp(ln x) stays within a few ulps of x) */
    if (!(value > 0.0)) size = 0;
    else if (value >= 18446744073709551616.0) size = UINT64_MAX;
    else size = (uint64_t)value;
    if (cubert_u64_round_up(size, align, &aligned) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "bucket size");
    if (i > 0 && aligned == prev) continue; /* consecutive duplicates removed */
    prev = aligned;
    emit(out, capacity, &n,
         cubert_memory_pool_exclusive(aligned, cubert__memory_dealloc_period(aligned)));
  }
  *out_count = n;
  return CUBERT_STATUS_OK;
}

#else /* !CUBERT_CONFIG_PAGED_POOLS: a direct pool is the only kind */

/* Both presets: one direct pool that gives free allocations back before the next one. */
static cubert_status_t preset_direct(cubert_memory_pool_options_t *out, uint32_t capacity,
                                     uint32_t *out_count) {
  uint32_t n = 0;
  emit(out, capacity, &n, cubert_memory_pool_direct(0));
  *out_count = n;
  return CUBERT_STATUS_OK;
}

#define PAGED_OMITTED "sliced and exclusive pools (CUBERT_CONFIG_PAGED_POOLS=0)"

#endif /* CUBERT_CONFIG_PAGED_POOLS */

/* ---- explicit entries --------------------------------------------------------- */

static cubert_status_t round_field(uint64_t value, uint64_t align, uint64_t *out,
                                   cubert_error_t *out_error) {
  if (cubert_u64_round_up(value, align, out) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "pool size rounded up to the alignment overflows");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_pool_entry_resolve(const cubert_memory_pool_options_t *entry,
                                                  uint64_t alignment, bool exclusive_memory_only,
                                                  cubert_memory_pool_options_t *out,
                                                  cubert_error_t *out_error) {
  cubert_memory_pool_options_t r;
  uint64_t fields[2];
  if (alignment == 0) alignment = 1;
  switch (entry->type) {
#if !CUBERT_CONFIG_PAGED_POOLS
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
    case CUBERT_MEMORY_POOL_SLICED:
      (void)fields;
      (void)exclusive_memory_only;
      return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PAGED_OMITTED);
#else
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      r = pool_options_empty(CUBERT_MEMORY_POOL_EXCLUSIVE);
      CUBERT_RETURN_IF_ERROR(round_field(entry->max_alloc_size, alignment, &r.max_alloc_size,
                                         out_error));
      r.dealloc_period = entry->dealloc_period;
      break;
    case CUBERT_MEMORY_POOL_SLICED:
      if (exclusive_memory_only)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_SLICED_POOLS_UNAVAILABLE, NULL, 0,
                                NULL);
      r = pool_options_empty(CUBERT_MEMORY_POOL_SLICED);
      if (entry->page_size == 0)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "page_size");
      CUBERT_RETURN_IF_ERROR(round_field(entry->page_size, alignment, &r.page_size, out_error));
      if (entry->max_slice_size == CUBERT_MEMORY_NONE) {
        r.max_slice_size = r.page_size;
      } else if (entry->max_slice_size == 0) {
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0,
                                "max_slice_size");
      } else {
        CUBERT_RETURN_IF_ERROR(
            round_field(entry->max_slice_size, alignment, &r.max_slice_size, out_error));
      }
      if (r.max_slice_size > r.page_size) {
        fields[0] = r.page_size;
        fields[1] = r.max_slice_size;
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE, fields, 2,
                                NULL);
      }
      if (entry->max_pool_size != CUBERT_MEMORY_NONE) {
        if (entry->max_pool_size == 0)
          return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0,
                                  "max_pool_size");
        if (entry->max_pool_size < r.page_size) {
          fields[0] = r.page_size;
          fields[1] = entry->max_pool_size;
          return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_CAP_SMALLER_THAN_PAGE, fields,
                                  2, NULL);
        }
        if (entry->max_pool_size / r.page_size > CUBERT_MEMORY_MAX_PAGES) {
          fields[0] = entry->max_pool_size / r.page_size;
          return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_TOO_MANY_PAGES, fields, 1,
                                  NULL);
        }
        r.max_pool_size = entry->max_pool_size;
      }
      r.dealloc_period = entry->dealloc_period;
      break;
#endif
    case CUBERT_MEMORY_POOL_DIRECT:
      r = pool_options_empty(CUBERT_MEMORY_POOL_DIRECT);
      r.reclaim_at = entry->reclaim_at; /* dealloc period dropped */
      break;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown memory pool type");
  }
  *out = r;
  return CUBERT_STATUS_OK;
}

/* A CUSTOM configuration's entries are taken as given (CubeCL builds its
 * pools from MemoryPoolOptions without the explicit-layout checks: a cap
 * smaller than the page shrinks the page); only what would make
 * a pool meaningless is rejected. */
static cubert_status_t custom_entry_check(const cubert_memory_pool_options_t *entry,
                                          cubert_error_t *out_error) {
  switch (entry->type) {
#if !CUBERT_CONFIG_PAGED_POOLS
    case CUBERT_MEMORY_POOL_SLICED:
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PAGED_OMITTED);
#else
    case CUBERT_MEMORY_POOL_SLICED:
      if (entry->page_size == 0)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "page_size");
      return CUBERT_STATUS_OK;
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
#endif
    case CUBERT_MEMORY_POOL_DIRECT:
      return CUBERT_STATUS_OK;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown memory pool type");
  }
}

static cubert_status_t too_many_pools(uint64_t count, cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_TOO_MANY_POOLS, &count, 1, NULL);
}

cubert_status_t cubert_memory_configuration_pools(const cubert_memory_configuration_t *config,
                                                  cubert_memory_device_properties_t props,
                                                  cubert_memory_pool_options_t *out_pools,
                                                  uint32_t capacity, uint32_t *out_count,
                                                  cubert_error_t *out_error) {
  uint32_t n = 0, i;
  cubert_status_t status;
  if (!config || !out_count || (capacity > 0 && !out_pools))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  switch (config->kind) {
#if CUBERT_CONFIG_PAGED_POOLS
    case CUBERT_MEMORY_CONFIGURATION_SUB_SLICES:
      status = preset_sub_slices(props, out_pools, capacity, &n, out_error);
      break;
    case CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES:
      status = preset_exclusive_pages(props, out_pools, capacity, &n, out_error);
      break;
#else
    case CUBERT_MEMORY_CONFIGURATION_SUB_SLICES:
    case CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES:
      status = preset_direct(out_pools, capacity, &n);
      break;
#endif
    case CUBERT_MEMORY_CONFIGURATION_CUSTOM:
      if (config->pool_count > 0 && !config->pools)
        return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                                "a CUSTOM memory configuration has pool_count pools and NULL pools");
      if (config->pool_count > CUBERT_MEMORY_MAX_DYNAMIC_POOLS)
        return too_many_pools(config->pool_count, out_error);
      for (i = 0; i < config->pool_count; i++)
        CUBERT_RETURN_IF_ERROR(custom_entry_check(&config->pools[i], out_error));
      for (i = 0; i < config->pool_count; i++) {
        cubert_memory_pool_options_t p = config->pools[i];
        if (p.type == CUBERT_MEMORY_POOL_EXCLUSIVE &&
            round_field(p.max_alloc_size, props_alignment(props), &p.max_alloc_size, out_error) !=
            CUBERT_STATUS_OK)
          return CUBERT_STATUS_OVERFLOW;
        emit(out_pools, capacity, &n, p);
      }
      status = CUBERT_STATUS_OK;
      break;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown memory configuration");
  }
  if (status != CUBERT_STATUS_OK) return status;
  *out_count = n;
  if (n > capacity)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                            "pool buffer too small");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_memory_configuration_resolve(
    const cubert_memory_configuration_t *runtime_choice, const cubert_memory_pools_config_t *pools,
    cubert_memory_device_properties_t props, bool exclusive_memory_only,
    cubert_memory_pool_options_t *pool_buffer, uint32_t pool_buffer_capacity,
    cubert_memory_configuration_t *out_config, cubert_error_t *out_error) {
  uint32_t i;
  uint64_t align = props_alignment(props);
  if (!runtime_choice || !out_config)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  if (!pools) {
    *out_config = *runtime_choice;
    return CUBERT_STATUS_OK;
  }
  switch (pools->kind) {
    case CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES:
      if (exclusive_memory_only)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_PRESET_UNAVAILABLE, NULL, 0,
                                "SubSlices");
      *out_config = cubert_memory_configuration_default(false);
      return CUBERT_STATUS_OK;
    case CUBERT_MEMORY_POOLS_PRESET_EXCLUSIVE_PAGES:
      *out_config = cubert_memory_configuration_default(true);
      return CUBERT_STATUS_OK;
    case CUBERT_MEMORY_POOLS_EXPLICIT:
      break;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown pools config");
  }
  if (pools->count == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST, NULL, 0, NULL);
  if (pools->count > CUBERT_MEMORY_MAX_DYNAMIC_POOLS) return too_many_pools(pools->count, out_error);
  if (!pools->entries || !pool_buffer || pool_buffer_capacity < pools->count)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "pool buffer too small");
  /* Validate everything before writing the caller's buffer. */
  for (i = 0; i < pools->count; i++) {
    cubert_memory_pool_options_t tmp;
    CUBERT_RETURN_IF_ERROR(cubert__memory_pool_entry_resolve(&pools->entries[i], align,
                                                             exclusive_memory_only, &tmp,
                                                             out_error));
  }
  for (i = 0; i < pools->count; i++)
    (void)cubert__memory_pool_entry_resolve(&pools->entries[i], align, exclusive_memory_only,
                                            &pool_buffer[i], NULL);
  out_config->kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  out_config->pools = pool_buffer;
  out_config->pool_count = pools->count;
  return CUBERT_STATUS_OK;
}
