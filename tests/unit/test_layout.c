/* SPDX-License-Identifier: MIT */
/* Memory layout policies, optimal_align, stride validation and copy plans
 * (docs/cubecl-mapping.md, "Memory layout"). The layout vectors below (CUDA
 * pitched, CPU and dummy contiguous) were derived from CubeCL's algorithm;
 * they are checked literally. */
#include "test.h"
#include "cubert/layout.h"

#define C CUBERT_LAYOUT_CONTIGUOUS
#define O CUBERT_LAYOUT_OPTIMIZED
#define P2(n) ((uint64_t)1 << (n))

static cubert_layout_policy_t policy_of(cubert_layout_policy_kind_t kind, uint64_t align) {
  cubert_layout_policy_t p;
  p.kind = kind;
  p.mem_alignment = align;
  return p;
}

/* CUDA's policy: pitched, 512. CPU: contiguous, 8. Dummy: 4. */
static cubert_layout_policy_t cuda_policy(void) {
  return policy_of(CUBERT_LAYOUT_POLICY_PITCHED, 512);
}
static cubert_layout_policy_t cpu_policy(void) {
  return policy_of(CUBERT_LAYOUT_POLICY_CONTIGUOUS, 8);
}

/* A descriptor; shape given as a rank and up to four dimensions. */
static cubert_layout_descriptor_t desc4(cubert_layout_strategy_t strategy, uint32_t rank,
                                        uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3,
                                        uint64_t elem_size) {
  cubert_layout_descriptor_t d;
  memset(&d, 0, sizeof d);
  d.strategy = strategy;
  d.rank = rank;
  d.shape[0] = s0;
  d.shape[1] = s1;
  d.shape[2] = s2;
  d.shape[3] = s3;
  d.elem_size = elem_size;
  return d;
}
#define DESC0(st, e) desc4((st), 0, 0, 0, 0, 0, (e))
#define DESC1(st, a, e) desc4((st), 1, (a), 0, 0, 0, (e))
#define DESC2(st, a, b, e) desc4((st), 2, (a), (b), 0, 0, (e))
#define DESC3(st, a, b, c, e) desc4((st), 3, (a), (b), (c), 0, (e))

/* Check one layout: size, rank, strides[0..rank) (and zeros past rank), offsets. */
static void check_layout(const cubert_layout_t *l, uint64_t size, uint32_t rank,
                         const uint64_t *strides, uint64_t start, uint64_t end) {
  uint32_t i;
  CHECK_EQ_U64(l->size, size);
  CHECK_EQ_U64(l->rank, rank);
  for (i = 0; i < rank; i++) CHECK_EQ_U64(l->strides[i], strides[i]);
  for (i = rank; i < CUBERT_MAX_RANK; i++) CHECK_EQ_U64(l->strides[i], 0);
  CHECK_EQ_U64(l->offset_start, start);
  CHECK_EQ_U64(l->offset_end, end);
}

/* Apply `policy` to one descriptor and check one vector. */
static void check_single(cubert_layout_policy_t policy, cubert_layout_descriptor_t d,
                         uint64_t size, const uint64_t *strides, uint64_t start, uint64_t end,
                         uint64_t total) {
  cubert_layout_t l;
  uint64_t t = 12345;
  cubert_error_t err;
  CHECK_OK(cubert_layout_policy_apply(&policy, &d, 1, &l, &t, &err));
  CHECK_EQ_U64(t, total);
  check_layout(&l, size, d.rank, strides, start, end);
}

/* ---- CUDA (pitched, mem_alignment 512) -------------------------------------------- */

TEST(layout_cuda_vector_o_3x5_f32) {
  static const uint64_t s[] = {8, 1};
  check_single(cuda_policy(), DESC2(O, 3, 5, 4), 96, s, 0, 416, 512);
}

TEST(layout_cuda_vector_o_2x3x5_f32) {
  static const uint64_t s[] = {24, 8, 1};
  check_single(cuda_policy(), DESC3(O, 2, 3, 5, 4), 192, s, 0, 320, 512);
}

TEST(layout_cuda_vector_o_7_f32_padded) {
  static const uint64_t s[] = {1};
  check_single(cuda_policy(), DESC1(O, 7, 4), 32, s, 0, 480, 512);
}

TEST(layout_cuda_vector_o_4x1_f32) {
  static const uint64_t s[] = {1, 1};
  check_single(cuda_policy(), DESC2(O, 4, 1, 4), 16, s, 0, 496, 512);
}

TEST(layout_cuda_vector_o_4x8_f16) {
  static const uint64_t s[] = {8, 1};
  check_single(cuda_policy(), DESC2(O, 4, 8, 2), 64, s, 0, 448, 512);
}

TEST(layout_cuda_vector_o_100x300_f32) {
  static const uint64_t s[] = {384, 1};
  check_single(cuda_policy(), DESC2(O, 100, 300, 4), 153600, s, 0, 0, 153600);
}

TEST(layout_cuda_vector_o_2x64_f32) {
  static const uint64_t s[] = {64, 1};
  check_single(cuda_policy(), DESC2(O, 2, 64, 4), 512, s, 0, 0, 512);
}

TEST(layout_cuda_vector_o_5x3_u8) {
  static const uint64_t s[] = {16, 1};
  check_single(cuda_policy(), DESC2(O, 5, 3, 1), 80, s, 0, 432, 512);
}

TEST(layout_cuda_vector_c_3x5_f32) {
  static const uint64_t s[] = {5, 1};
  check_single(cuda_policy(), DESC2(C, 3, 5, 4), 60, s, 0, 452, 512);
}

TEST(layout_cuda_vector_o_rank0_f32) {
  check_single(cuda_policy(), DESC0(O, 4), 4, NULL, 0, 508, 512);
}

TEST(layout_cuda_vector_multi) {
  static const uint64_t s0[] = {8, 1}, s1[] = {1}, s2[] = {2, 1};
  cubert_layout_policy_t p = cuda_policy();
  cubert_layout_descriptor_t d[3];
  cubert_layout_t l[3];
  uint64_t total = 0;
  d[0] = DESC2(O, 3, 5, 4);
  d[1] = DESC1(O, 10, 2);
  d[2] = DESC2(C, 2, 2, 8);
  CHECK_OK(cubert_layout_policy_apply(&p, d, 3, l, &total, NULL));
  CHECK_EQ_U64(total, 1536);
  check_layout(&l[0], 96, 2, s0, 0, 1440);
  check_layout(&l[1], 32, 1, s1, 512, 992);
  check_layout(&l[2], 32, 2, s2, 1024, 480);
}

/* ---- CPU (contiguous, 8) and dummy (contiguous, 4) ---------------------------------- */

TEST(layout_cpu_vector_multi) {
  static const uint64_t s0[] = {5, 1}, s1[] = {1}, s2[] = {1};
  cubert_layout_policy_t p = cpu_policy();
  cubert_layout_descriptor_t d[3];
  cubert_layout_t l[3];
  uint64_t total = 0;
  d[0] = DESC2(C, 3, 5, 4);
  d[1] = DESC1(C, 10, 2);
  d[2] = DESC1(C, 3, 1);
  CHECK_OK(cubert_layout_policy_apply(&p, d, 3, l, &total, NULL));
  CHECK_EQ_U64(total, 96);
  check_layout(&l[0], 60, 2, s0, 0, 36);
  check_layout(&l[1], 20, 1, s1, 64, 12);
  check_layout(&l[2], 3, 1, s2, 88, 5);
}

TEST(layout_dummy_vector_3_bytes_align4) {
  static const uint64_t s[] = {1};
  check_single(policy_of(CUBERT_LAYOUT_POLICY_CONTIGUOUS, 4), DESC1(C, 3, 1), 3, s, 0, 1, 4);
}

TEST(layout_contiguous_policy_ignores_optimized_strategy) {
  static const uint64_t s[] = {15, 5, 1};
  check_single(cpu_policy(), DESC3(O, 2, 3, 5, 4), 120, s, 0, 0, 120);
}

TEST(layout_pitched_hip_alignment_32) {
  /* HIP-like pitched policy, mem_alignment 32: [3,10] f32 -> 40 bytes,
   * next pow2 64 clamped to 32 -> pitch 64, strides [16, 1], size 192. */
  static const uint64_t s[] = {16, 1};
  check_single(policy_of(CUBERT_LAYOUT_POLICY_PITCHED, 32), DESC2(O, 3, 10, 4), 192, s, 0, 0,
               192);
}

TEST(layout_pitched_rank4_strides_chain) {
  /* [2,3,4,5] f32 optimized: pitch 32 -> strides [96, 32, 8, 1], size 24*32. */
  static const uint64_t s[] = {96, 32, 8, 1};
  check_single(cuda_policy(), desc4(O, 4, 2, 3, 4, 5, 4), 768, s, 0, 256, 1024);
}

/* ---- rank 0 and empty tensors (cubert-defined) --------------------------------------- */

TEST(layout_rank0_contiguous_is_one_element) {
  check_single(cpu_policy(), DESC0(C, 4), 4, NULL, 0, 4, 8);
  check_single(cpu_policy(), DESC0(O, 2), 2, NULL, 0, 6, 8);
}

TEST(layout_rank0_pitched_contiguous_strategy) {
  check_single(cuda_policy(), DESC0(C, 8), 8, NULL, 0, 504, 512);
}

TEST(layout_empty_contiguous_zero_dims) {
  static const uint64_t s_a[] = {0, 1}, s_b[] = {5, 1}, s_c[] = {1};
  cubert_layout_policy_t p = cpu_policy();
  cubert_layout_descriptor_t d[4];
  cubert_layout_t l[4];
  uint64_t total = 99;
  d[0] = DESC2(C, 3, 0, 4); /* strides [0, 1] */
  d[1] = DESC2(C, 0, 5, 4); /* strides [5, 1] */
  d[2] = DESC1(C, 2, 4);
  d[3] = DESC1(C, 0, 4);
  CHECK_OK(cubert_layout_policy_apply(&p, d, 4, l, &total, NULL));
  CHECK_EQ_U64(total, 8);
  check_layout(&l[0], 0, 2, s_a, 0, 8);
  check_layout(&l[1], 0, 2, s_b, 0, 8);
  check_layout(&l[2], 8, 1, s_c, 0, 0);
  check_layout(&l[3], 0, 1, s_c, 8, 0);
}

TEST(layout_empty_pitched_zero_dims) {
  static const uint64_t s_h0[] = {8, 1}, s_w0[] = {0, 1}, s_1[] = {1}, s_3[] = {0, 4, 1};
  cubert_layout_policy_t p = cuda_policy();
  cubert_layout_descriptor_t d[4];
  cubert_layout_t l[4];
  uint64_t total = 99;
  d[0] = DESC2(O, 0, 5, 4); /* height 0, pitch 32: strides still [8, 1] */
  d[1] = DESC2(O, 5, 0, 4); /* width 0: pitch 0 -> strides [0, 1] */
  d[2] = DESC1(O, 0, 4);
  d[3] = DESC3(C, 2, 0, 4, 1); /* pitch 4: [0*4, 4, 1] */
  CHECK_OK(cubert_layout_policy_apply(&p, d, 4, l, &total, NULL));
  CHECK_EQ_U64(total, 0);
  check_layout(&l[0], 0, 2, s_h0, 0, 0);
  check_layout(&l[1], 0, 2, s_w0, 0, 0);
  check_layout(&l[2], 0, 1, s_1, 0, 0);
  check_layout(&l[3], 0, 3, s_3, 0, 0);
}

TEST(layout_empty_between_tensors_takes_no_bytes) {
  static const uint64_t s0[] = {8, 1}, s1[] = {8, 1}, s2[] = {1};
  cubert_layout_policy_t p = cuda_policy();
  cubert_layout_descriptor_t d[3];
  cubert_layout_t l[3];
  uint64_t total = 0;
  d[0] = DESC2(O, 3, 5, 4);
  d[1] = DESC2(O, 0, 5, 4);
  d[2] = DESC1(O, 7, 4);
  CHECK_OK(cubert_layout_policy_apply(&p, d, 3, l, &total, NULL));
  CHECK_EQ_U64(total, 1024);
  check_layout(&l[0], 96, 2, s0, 0, 928);
  check_layout(&l[1], 0, 2, s1, 512, 512);
  check_layout(&l[2], 32, 1, s2, 512, 480);
}

TEST(layout_large_dims_exact) {
  /* A zero dimension makes the product 0 even when the others would
   * overflow; strides that fit are still computed. */
  static const uint64_t s[] = {P2(40), 1};
  check_single(cpu_policy(), DESC2(C, 0, P2(40), 4), 0, s, 0, 0, 0);
  {
    static const uint64_t s2[] = {P2(20), 1};
    check_single(cpu_policy(), DESC2(C, P2(40), P2(20), 1), P2(60), s2, 0, 0, P2(60));
  }
}

/* ---- optimal_align ------------------------------------------------------------------ */

static uint64_t align_of(uint64_t last_dim, uint64_t e, uint64_t buffer_align) {
  uint64_t a = 777;
  CHECK_OK(cubert_layout_optimal_align(last_dim, e, buffer_align, &a, NULL));
  return a;
}

TEST(layout_optimal_align_cases) {
  CHECK_EQ_U64(align_of(1, 4, 512), 4);       /* last_dim 1: elem_size */
  CHECK_EQ_U64(align_of(1, 1024, 512), 1024); /* ... not clamped */
  CHECK_EQ_U64(align_of(1, 1, 16), 1);
  CHECK_EQ_U64(align_of(3, 4, 512), 16);      /* 12 -> 16 */
  CHECK_EQ_U64(align_of(3, 1, 512), 16);      /* 3 -> 4, clamped up to 16 */
  CHECK_EQ_U64(align_of(5, 4, 512), 32);      /* 20 -> 32 */
  CHECK_EQ_U64(align_of(8, 2, 512), 16);      /* 16 exactly */
  CHECK_EQ_U64(align_of(64, 4, 512), 256);
  CHECK_EQ_U64(align_of(128, 4, 512), 512);   /* 512 exactly */
  CHECK_EQ_U64(align_of(129, 4, 512), 512);   /* 516 -> 1024, clamped */
  CHECK_EQ_U64(align_of(300, 4, 512), 512);
  CHECK_EQ_U64(align_of(10, 4, 32), 32);      /* HIP-like bound */
  CHECK_EQ_U64(align_of(0, 4, 512), 16);      /* next_power_of_two(0) = 1 */
  CHECK_EQ_U64(align_of(5, 3, 16), 16);
  CHECK_EQ_U64(align_of(UINT64_MAX, 2, 512), 512); /* product past 64 bits */
  CHECK_EQ_U64(align_of(P2(62), 4, P2(63)), P2(63));
  CHECK_EQ_U64(align_of(P2(61), 4, P2(63)), P2(63));
}

TEST(layout_optimal_align_bad_inputs) {
  uint64_t a = 777;
  cubert_error_t err;
  CHECK_STATUS(cubert_layout_optimal_align(3, 4, 8, &a, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_optimal_align(1, 4, 8, &a, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_optimal_align(3, 4, 0, &a, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_optimal_align(3, 4, 48, &a, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_optimal_align(3, 0, 512, &a, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(a, 777);
  CHECK_STATUS(cubert_layout_optimal_align(3, 4, 512, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
}

/* ---- bad inputs of apply: status, record, outputs untouched ------------------------- */

#define SENTINEL_TOTAL 0xA5A5A5A5A5A5A5A5ull

typedef struct apply_probe_t {
  cubert_layout_t layouts[4];
  cubert_layout_t before[4];
  uint64_t total;
  cubert_error_t err;
} apply_probe_t;

/* Apply and check the failure: status, innermost kind, outputs untouched. */
static void check_apply_fails(cubert_layout_policy_t policy, const cubert_layout_descriptor_t *d,
                              size_t count, cubert_status_t status, cubert_error_kind_t kind) {
  apply_probe_t p;
  memset(p.layouts, 0xAB, sizeof p.layouts);
  memcpy(p.before, p.layouts, sizeof p.before);
  p.total = SENTINEL_TOTAL;
  cubert_error_clear(&p.err);
  CHECK_STATUS(cubert_layout_policy_apply(&policy, d, count, p.layouts, &p.total, &p.err),
               status);
  CHECK_EQ_U64(p.err.status, status);
  CHECK_EQ_U64(cubert_error_kind(&p.err), kind);
  CHECK(memcmp(p.layouts, p.before, sizeof p.layouts) == 0);
  CHECK_EQ_U64(p.total, SENTINEL_TOTAL);
  /* The same failure without an error record. */
  CHECK_STATUS(cubert_layout_policy_apply(&policy, d, count, p.layouts, &p.total, NULL), status);
  CHECK(memcmp(p.layouts, p.before, sizeof p.layouts) == 0);
  CHECK_EQ_U64(p.total, SENTINEL_TOTAL);
}

TEST(layout_apply_rank_too_large) {
  cubert_layout_descriptor_t d = DESC2(C, 3, 5, 4);
  cubert_error_t err;
  cubert_layout_t l;
  uint64_t t = 0;
  cubert_layout_policy_t p = cpu_policy();
  d.rank = CUBERT_MAX_RANK + 1;
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK);
  CHECK_STATUS(cubert_layout_policy_apply(&p, &d, 1, &l, &t, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], CUBERT_MAX_RANK + 1);
  d.rank = UINT32_MAX;
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK);
}

TEST(layout_apply_max_rank_ok) {
  static const uint64_t s[] = {128, 64, 32, 16, 8, 4, 2, 1};
  cubert_layout_descriptor_t d;
  uint32_t i;
  memset(&d, 0, sizeof d);
  d.strategy = C;
  d.rank = CUBERT_MAX_RANK;
  for (i = 0; i < CUBERT_MAX_RANK; i++) d.shape[i] = 2;
  d.elem_size = 1;
  check_single(cpu_policy(), d, 256, s, 0, 0, 256);
}

TEST(layout_apply_elem_size_zero) {
  cubert_layout_descriptor_t d = DESC2(C, 3, 5, 0);
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_INVALID_ARGUMENT);
  d.strategy = O;
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_INVALID_ARGUMENT);
  d = DESC0(C, 0);
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_INVALID_ARGUMENT);
}

TEST(layout_apply_unknown_strategy_or_kind) {
  cubert_layout_descriptor_t d = DESC2(C, 3, 5, 4);
  cubert_layout_policy_t p = cpu_policy();
  d.strategy = (cubert_layout_strategy_t)7;
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_INVALID_ARGUMENT);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_INVALID_ARGUMENT);
  d.strategy = C;
  p.kind = (cubert_layout_policy_kind_t)9;
  check_apply_fails(p, &d, 1, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
}

TEST(layout_apply_bad_mem_alignment) {
  cubert_layout_descriptor_t d = DESC2(O, 3, 5, 4);
  check_apply_fails(policy_of(CUBERT_LAYOUT_POLICY_CONTIGUOUS, 0), &d, 1,
                    CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_apply_fails(policy_of(CUBERT_LAYOUT_POLICY_CONTIGUOUS, 3), &d, 1,
                    CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_apply_fails(policy_of(CUBERT_LAYOUT_POLICY_CONTIGUOUS, 24), &d, 1,
                    CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_apply_fails(policy_of(CUBERT_LAYOUT_POLICY_PITCHED, 0), &d, 1,
                    CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_apply_fails(policy_of(CUBERT_LAYOUT_POLICY_PITCHED, 768), &d, 1,
                    CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  /* Pitched needs >= 16 (optimal_align's clamp); contiguous accepts 1. */
  check_apply_fails(policy_of(CUBERT_LAYOUT_POLICY_PITCHED, 8), &d, 1,
                    CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  {
    static const uint64_t s[] = {5, 1};
    check_single(policy_of(CUBERT_LAYOUT_POLICY_CONTIGUOUS, 1), DESC2(C, 3, 5, 4), 60, s, 0, 0,
                 60);
  }
}

TEST(layout_apply_null_and_empty_arguments) {
  cubert_layout_policy_t p = cpu_policy();
  cubert_layout_descriptor_t d = DESC2(C, 3, 5, 4);
  cubert_layout_t l, before;
  uint64_t t = SENTINEL_TOTAL;
  cubert_error_t err;
  memset(&l, 0xCD, sizeof l);
  memcpy(&before, &l, sizeof before);
  CHECK_STATUS(cubert_layout_policy_apply(NULL, &d, 1, &l, &t, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_policy_apply(&p, NULL, 1, &l, &t, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_policy_apply(&p, &d, 1, NULL, &t, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_policy_apply(&p, &d, 1, &l, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  cubert_error_clear(&err);
  CHECK_STATUS(cubert_layout_policy_apply(&p, &d, 0, &l, &t, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_layout_policy_apply(&p, &d, 0, &l, &t, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(memcmp(&l, &before, sizeof l) == 0);
  CHECK_EQ_U64(t, SENTINEL_TOTAL);
}

TEST(layout_apply_overflow_size_contiguous) {
  cubert_layout_descriptor_t d = DESC2(C, P2(62), 4, 1); /* product 2^64 */
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  d = DESC1(C, P2(61), 8); /* product fits, * elem_size does not */
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  d = DESC3(C, P2(32), P2(32), 2, 1); /* intermediate product overflows */
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
}

TEST(layout_apply_overflow_size_pitched) {
  /* width * elem_size */
  cubert_layout_descriptor_t d = DESC1(C, P2(62), 8);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  d = DESC1(O, P2(62), 8);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  /* height * pitch: 2^40 rows of pitch 2^32 */
  d = DESC2(O, P2(40), P2(30), 4);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  /* the height product itself */
  d = DESC3(O, P2(40), P2(40), 2, 4);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
}

TEST(layout_apply_overflow_align_up) {
  /* size UINT64_MAX rounded up to 8 */
  cubert_layout_descriptor_t d = DESC1(C, UINT64_MAX, 1);
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  /* pitch: width_bytes UINT64_MAX - 1 rounded up to 512 */
  d = DESC2(O, 1, UINT64_MAX - 1, 1);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  /* size 2^64 - 4 (contiguous strategy: pitch_align 1) rounded up to 512 */
  d = DESC1(C, UINT64_MAX / 4, 4);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
}

TEST(layout_apply_overflow_total) {
  cubert_layout_descriptor_t d[2];
  d[0] = DESC1(C, P2(63), 1);
  d[1] = DESC1(C, P2(63), 1);
  check_apply_fails(cpu_policy(), d, 2, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  /* one alone fits */
  {
    static const uint64_t s[] = {1};
    check_single(cpu_policy(), d[0], P2(63), s, 0, 0, P2(63));
  }
}

TEST(layout_apply_overflow_stride_of_empty_tensor) {
  cubert_layout_descriptor_t d = DESC3(C, 0, P2(40), P2(40), 4);
  check_apply_fails(cpu_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  d = desc4(O, 4, 0, P2(40), P2(40), 2, 4);
  check_apply_fails(cuda_policy(), &d, 1, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
}

TEST(layout_apply_late_failure_leaves_earlier_outputs_untouched) {
  cubert_layout_descriptor_t d[3];
  d[0] = DESC2(O, 3, 5, 4);
  d[1] = DESC1(O, 10, 2);
  d[2] = DESC2(C, 2, 2, 0); /* the third is bad */
  check_apply_fails(cuda_policy(), d, 3, CUBERT_STATUS_INVALID_ARGUMENT,
                    CUBERT_ERROR_INVALID_ARGUMENT);
  d[2] = DESC1(C, UINT64_MAX, 1);
  check_apply_fails(cuda_policy(), d, 3, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
}

/* ---- stride validation -------------------------------------------------------------- */

TEST(layout_strides_valid_contiguous_and_pitched) {
  static const uint64_t sh2[] = {3, 5}, st_c[] = {5, 1}, st_p[] = {8, 1};
  static const uint64_t sh3[] = {2, 3, 5}, st3_c[] = {15, 5, 1}, st3_p[] = {24, 8, 1};
  static const uint64_t sh1[] = {7}, st1[] = {1};
  CHECK(cubert_strides_is_contiguous_row_major(2, sh2, st_c));
  CHECK(cubert_strides_is_pitched_row_major(2, sh2, st_c));
  CHECK(!cubert_strides_is_contiguous_row_major(2, sh2, st_p));
  CHECK(cubert_strides_is_pitched_row_major(2, sh2, st_p));
  CHECK(cubert_strides_is_contiguous_row_major(3, sh3, st3_c));
  CHECK(cubert_strides_is_pitched_row_major(3, sh3, st3_c));
  CHECK(!cubert_strides_is_contiguous_row_major(3, sh3, st3_p));
  CHECK(cubert_strides_is_pitched_row_major(3, sh3, st3_p));
  CHECK(cubert_strides_is_contiguous_row_major(1, sh1, st1));
  CHECK(cubert_strides_is_pitched_row_major(1, sh1, st1));
}

TEST(layout_strides_invalid) {
  static const uint64_t sh2[] = {3, 5};
  static const uint64_t last2[] = {10, 2};   /* last stride not 1 */
  static const uint64_t narrow[] = {4, 1};   /* pitch below the row width */
  static const uint64_t transposed[] = {1, 3};
  static const uint64_t sh3[] = {2, 3, 5}, broken[] = {25, 8, 1}; /* 25 != 3 * 8 */
  static const uint64_t sh1[] = {7}, st1[] = {2};
  CHECK(!cubert_strides_is_contiguous_row_major(2, sh2, last2));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh2, last2));
  CHECK(!cubert_strides_is_contiguous_row_major(2, sh2, narrow));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh2, narrow));
  CHECK(!cubert_strides_is_contiguous_row_major(2, sh2, transposed));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh2, transposed));
  CHECK(!cubert_strides_is_contiguous_row_major(3, sh3, broken));
  CHECK(!cubert_strides_is_pitched_row_major(3, sh3, broken));
  CHECK(!cubert_strides_is_contiguous_row_major(1, sh1, st1));
  CHECK(!cubert_strides_is_pitched_row_major(1, sh1, st1));
}

TEST(layout_strides_zero_stride) {
  static const uint64_t sh[] = {3, 5}, st[] = {0, 1};
  static const uint64_t sh_empty[] = {3, 0}; /* contiguous strides of [3, 0] are [0, 1] */
  static const uint64_t sh_one[] = {1, 5};
  CHECK(!cubert_strides_is_contiguous_row_major(2, sh, st));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh, st));
  CHECK(cubert_strides_is_contiguous_row_major(2, sh_empty, st));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh_empty, st)); /* no zero stride */
  CHECK(!cubert_strides_is_contiguous_row_major(2, sh_one, st));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh_one, st));
}

TEST(layout_strides_rank0_and_bad_rank_are_false) {
  static const uint64_t sh[CUBERT_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint64_t st[CUBERT_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(!cubert_strides_is_contiguous_row_major(0, sh, st));
  CHECK(!cubert_strides_is_pitched_row_major(0, sh, st));
  CHECK(!cubert_strides_is_contiguous_row_major(0, NULL, NULL));
  CHECK(!cubert_strides_is_pitched_row_major(0, NULL, NULL));
  CHECK(cubert_strides_is_contiguous_row_major(CUBERT_MAX_RANK, sh, st));
  CHECK(cubert_strides_is_pitched_row_major(CUBERT_MAX_RANK, sh, st));
  CHECK(!cubert_strides_is_contiguous_row_major(CUBERT_MAX_RANK + 1, sh, st));
  CHECK(!cubert_strides_is_pitched_row_major(CUBERT_MAX_RANK + 1, sh, st));
  CHECK(!cubert_strides_is_contiguous_row_major(2, NULL, st));
  CHECK(!cubert_strides_is_pitched_row_major(2, sh, NULL));
}

TEST(layout_strides_overflowing_product_never_matches) {
  /* (2^40 + 1) * 2^40 wraps to 2^40 in 64 bits: an unchecked product would
   * accept strides[0] = 2^40. */
  static const uint64_t sh[] = {2, P2(40) + 1, P2(40)}, st[] = {P2(40), P2(40), 1};
  CHECK(!cubert_strides_is_contiguous_row_major(3, sh, st));
  CHECK(!cubert_strides_is_pitched_row_major(3, sh, st));
}

TEST(layout_strides_policy_output_is_readable) {
  /* Every CUDA layout above is pitched row-major (what CUDA's
   * can_read_tensor checks); the contiguous one is also contiguous. */
  cubert_layout_policy_t p = cuda_policy();
  cubert_layout_descriptor_t d[5];
  cubert_layout_t l[5];
  uint64_t total;
  size_t i;
  d[0] = DESC2(O, 3, 5, 4);
  d[1] = DESC3(O, 2, 3, 5, 4);
  d[2] = DESC2(O, 100, 300, 4);
  d[3] = DESC2(O, 5, 3, 1);
  d[4] = DESC2(C, 3, 5, 4);
  CHECK_OK(cubert_layout_policy_apply(&p, d, 5, l, &total, NULL));
  for (i = 0; i < 5; i++)
    CHECK(cubert_strides_is_pitched_row_major(d[i].rank, d[i].shape, l[i].strides));
  CHECK(!cubert_strides_is_contiguous_row_major(2, d[0].shape, l[0].strides));
  CHECK(cubert_strides_is_contiguous_row_major(2, d[4].shape, l[4].strides));
}

/* ---- copy plans --------------------------------------------------------------------- */

static void check_plan(const cubert_copy_plan_t *p, bool pitched, uint64_t width, uint64_t height,
                       uint64_t pitch, uint64_t total, uint64_t span) {
  CHECK_EQ_U64(p->pitched, pitched);
  CHECK_EQ_U64(p->width_bytes, width);
  CHECK_EQ_U64(p->height, height);
  CHECK_EQ_U64(p->src_pitch_bytes, pitch);
  CHECK_EQ_U64(p->total_bytes, total);
  CHECK_EQ_U64(p->span_bytes, span);
}

TEST(layout_copy_plan_linear) {
  static const uint64_t sh[] = {3, 5}, st[] = {5, 1}, sh1[] = {7}, st1[] = {1};
  cubert_copy_plan_t p;
  CHECK_OK(cubert_copy_plan(2, sh, st, 4, &p, NULL));
  check_plan(&p, false, 60, 1, 60, 60, 60);
  CHECK_OK(cubert_copy_plan(1, sh1, st1, 4, &p, NULL));
  check_plan(&p, false, 28, 1, 28, 28, 28);
}

TEST(layout_copy_plan_pitched) {
  static const uint64_t sh[] = {3, 5}, st[] = {8, 1};
  static const uint64_t sh3[] = {2, 3, 5}, st3[] = {24, 8, 1};
  static const uint64_t sh_big[] = {100, 300}, st_big[] = {384, 1};
  cubert_copy_plan_t p;
  CHECK_OK(cubert_copy_plan(2, sh, st, 4, &p, NULL));
  check_plan(&p, true, 20, 3, 32, 60, 2 * 32 + 20);
  CHECK_OK(cubert_copy_plan(3, sh3, st3, 4, &p, NULL));
  check_plan(&p, true, 20, 6, 32, 120, 5 * 32 + 20);
  CHECK_OK(cubert_copy_plan(2, sh_big, st_big, 4, &p, NULL));
  check_plan(&p, true, 1200, 100, 1536, 120000, 99 * 1536 + 1200);
}

TEST(layout_copy_plan_rank0_and_empty) {
  static const uint64_t sh_w0[] = {3, 0}, st_w0[] = {0, 1};
  static const uint64_t sh_h0[] = {0, 5}, st_bad[] = {1, 7}; /* strides ignored when empty */
  cubert_copy_plan_t p;
  CHECK_OK(cubert_copy_plan(0, NULL, NULL, 4, &p, NULL));
  check_plan(&p, false, 4, 1, 4, 4, 4);
  CHECK_OK(cubert_copy_plan(2, sh_w0, st_w0, 4, &p, NULL));
  check_plan(&p, false, 0, 0, 0, 0, 0);
  CHECK_OK(cubert_copy_plan(2, sh_h0, st_bad, 4, &p, NULL));
  check_plan(&p, false, 0, 0, 0, 0, 0);
}

TEST(layout_copy_plan_matches_policy_layouts) {
  /* Plans of the CUDA policy's own layouts: the strided side never reaches
   * past the layout's size. */
  cubert_layout_policy_t pol = cuda_policy();
  cubert_layout_descriptor_t d[6];
  cubert_layout_t l[6];
  cubert_copy_plan_t p;
  uint64_t total;
  size_t i;
  d[0] = DESC2(O, 3, 5, 4);
  d[1] = DESC3(O, 2, 3, 5, 4);
  d[2] = DESC1(O, 7, 4);
  d[3] = DESC2(O, 100, 300, 4);
  d[4] = DESC2(O, 0, 5, 4);
  d[5] = DESC0(O, 4);
  CHECK_OK(cubert_layout_policy_apply(&pol, d, 6, l, &total, NULL));
  for (i = 0; i < 6; i++) {
    CHECK_OK(cubert_copy_plan(d[i].rank, d[i].shape, l[i].strides, d[i].elem_size, &p, NULL));
    CHECK(p.span_bytes <= l[i].size);
  }
  CHECK_OK(cubert_copy_plan(2, d[0].shape, l[0].strides, 4, &p, NULL));
  CHECK(p.pitched);
  CHECK_OK(cubert_copy_plan(1, d[2].shape, l[2].strides, 4, &p, NULL));
  check_plan(&p, false, 28, 1, 28, 28, 28); /* 28 of the 32 padded bytes */
}

static void check_plan_fails(uint32_t rank, const uint64_t *sh, const uint64_t *st, uint64_t e,
                             cubert_status_t status, cubert_error_kind_t kind) {
  cubert_copy_plan_t p, before;
  cubert_error_t err;
  memset(&p, 0xEE, sizeof p);
  memcpy(&before, &p, sizeof before);
  cubert_error_clear(&err);
  CHECK_STATUS(cubert_copy_plan(rank, sh, st, e, &p, &err), status);
  CHECK_EQ_U64(cubert_error_kind(&err), kind);
  CHECK(memcmp(&p, &before, sizeof p) == 0);
  CHECK_STATUS(cubert_copy_plan(rank, sh, st, e, &p, NULL), status);
  CHECK(memcmp(&p, &before, sizeof p) == 0);
}

TEST(layout_copy_plan_unsupported_strides) {
  static const uint64_t sh[] = {3, 5}, transposed[] = {1, 3}, narrow[] = {4, 1};
  static const uint64_t zero[] = {0, 1}, sh3[] = {2, 3, 5}, broken[] = {25, 8, 1};
  check_plan_fails(2, sh, transposed, 4, CUBERT_STATUS_UNSUPPORTED,
                   CUBERT_ERROR_IO_UNSUPPORTED_STRIDES);
  check_plan_fails(2, sh, narrow, 4, CUBERT_STATUS_UNSUPPORTED,
                   CUBERT_ERROR_IO_UNSUPPORTED_STRIDES);
  check_plan_fails(2, sh, zero, 4, CUBERT_STATUS_UNSUPPORTED,
                   CUBERT_ERROR_IO_UNSUPPORTED_STRIDES);
  check_plan_fails(3, sh3, broken, 4, CUBERT_STATUS_UNSUPPORTED,
                   CUBERT_ERROR_IO_UNSUPPORTED_STRIDES);
}

TEST(layout_copy_plan_bad_arguments) {
  static const uint64_t sh[] = {3, 5}, st[] = {5, 1};
  cubert_error_t err;
  check_plan_fails(2, sh, st, 0, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_plan_fails(0, NULL, NULL, 0, CUBERT_STATUS_INVALID_ARGUMENT,
                   CUBERT_ERROR_INVALID_ARGUMENT);
  check_plan_fails(2, NULL, st, 4, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_plan_fails(2, sh, NULL, 4, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT);
  check_plan_fails(CUBERT_MAX_RANK + 1, sh, st, 4, CUBERT_STATUS_INVALID_ARGUMENT,
                   CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK);
  CHECK_STATUS(cubert_copy_plan(CUBERT_MAX_RANK + 1, sh, st, 4, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_copy_plan(2, sh, st, 4, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
  {
    cubert_copy_plan_t p;
    CHECK_STATUS(cubert_copy_plan(CUBERT_MAX_RANK + 1, sh, st, 4, &p, &err),
                 CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK_EQ_U64(err.field[0], CUBERT_MAX_RANK + 1);
  }
}

TEST(layout_copy_plan_overflow) {
  /* linear: 2^63 elements of 8 bytes */
  static const uint64_t sh_lin[] = {2, P2(62)}, st_lin[] = {P2(62), 1};
  /* pitched: pitch 2^62 elements of 8 bytes */
  static const uint64_t sh_pitch[] = {2, 4}, st_pitch[] = {P2(62), 1};
  /* pitched: pitch 2^63 bytes fits, the span of 3 rows does not */
  static const uint64_t sh_span[] = {3, 1}, st_span[] = {P2(62), 1};
  check_plan_fails(2, sh_lin, st_lin, 8, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  check_plan_fails(2, sh_pitch, st_pitch, 8, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  check_plan_fails(2, sh_span, st_span, 2, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW);
  {
    /* two rows at 2^62 apart: the span fits */
    static const uint64_t sh_ok[] = {2, 1};
    cubert_copy_plan_t p;
    CHECK_OK(cubert_copy_plan(2, sh_ok, st_span, 2, &p, NULL));
    check_plan(&p, true, 2, 2, P2(63), 4, P2(63) + 2);
  }
}
