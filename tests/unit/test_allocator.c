/* SPDX-License-Identifier: MIT */
/* Allocator injection, checked arithmetic, arena, counting allocator. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/cubert.h"
#include "cubert/driver/arith.h"

TEST(allocator_size_mul_overflow) {
  size_t out = 7;
  CHECK_OK(cubert_size_mul(3, 5, &out));
  CHECK_EQ_U64(out, 15);
  out = 7;
  CHECK_STATUS(cubert_size_mul(SIZE_MAX / 2 + 1, 2, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(out, 7); /* untouched */
  CHECK_OK(cubert_size_mul(0, SIZE_MAX, &out));
  CHECK_EQ_U64(out, 0);
  CHECK_STATUS(cubert_size_mul(1, 1, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(allocator_size_add_and_mul_add) {
  size_t out = 0;
  CHECK_STATUS(cubert_size_add(SIZE_MAX, 1, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_OK(cubert_size_add(SIZE_MAX - 1, 1, &out));
  CHECK_EQ_U64(out, SIZE_MAX);
  CHECK_OK(cubert_size_mul_add(4, 5, 6, &out));
  CHECK_EQ_U64(out, 26);
  CHECK_STATUS(cubert_size_mul_add(SIZE_MAX / 2, 2, 2, &out), CUBERT_STATUS_OVERFLOW);
}

TEST(allocator_align_up) {
  size_t out = 0;
  CHECK_OK(cubert_size_align_up(60, 8, &out));
  CHECK_EQ_U64(out, 64);
  CHECK_OK(cubert_size_align_up(64, 64, &out));
  CHECK_EQ_U64(out, 64);
  CHECK_OK(cubert_size_align_up(0, 512, &out));
  CHECK_EQ_U64(out, 0);
  CHECK_STATUS(cubert_size_align_up(SIZE_MAX - 2, 8, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_size_align_up(10, 12, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_size_align_up(10, 0, &out), CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(allocator_u64_helpers) {
  uint64_t out = 0;
  CHECK_STATUS(cubert_u64_mul(UINT64_MAX, 2, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_u64_add(UINT64_MAX, 1, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_OK(cubert_u64_round_up(60, 24, &out));
  CHECK_EQ_U64(out, 72);
  CHECK_STATUS(cubert_u64_round_up(UINT64_MAX, 24, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_u64_round_up(5, 0, &out), CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(allocator_malloc_zeroes_and_counts) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  unsigned char *p = NULL;
  size_t i;
  CHECK_OK(cubert_allocator_malloc(a, 100, 16, (void **)&p, NULL));
  for (i = 0; i < 100; i++) CHECK_EQ_U64(p[i], 0);
  CHECK_EQ_I64(c.live_blocks, 1);
  CHECK_OK(cubert_allocator_realloc(a, p, 100, 200, 16, (void **)&p, NULL));
  for (i = 100; i < 200; i++) CHECK_EQ_U64(p[i], 0);
  cubert_allocator_free(a, p, 200, 16);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

TEST(allocator_bad_arguments) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  void *p = (void *)&c;
  CHECK_STATUS(cubert_allocator_malloc(a, 0, 16, &p, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_malloc(a, 8, 3, &p, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_malloc(a, 8, 16, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_malloc_array(a, SIZE_MAX, 2, 16, &p, NULL), CUBERT_STATUS_OVERFLOW);
  CHECK(p == (void *)&c);
  CHECK_EQ_U64(c.calls, 0); /* nothing reached the allocator */
  cubert_allocator_free(a, NULL, 0, 16); /* no-op */
  counting_allocator_destroy(&c);
}

TEST(allocator_failure_leaves_block) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  void *p = NULL, *q = NULL;
  CHECK_OK(cubert_allocator_malloc(a, 32, 16, &p, NULL));
  counting_allocator_fail_at(&c, 1, 0);
  q = p;
  CHECK_STATUS(cubert_allocator_realloc(a, p, 32, 64, 16, &q,
                                        NULL), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(q == p);
  CHECK_EQ_I64(c.live_blocks, 1);
  cubert_allocator_free(a, p, 32, 16);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(allocator_null_always_fails) {
  cubert_allocator_t a = cubert_allocator_null();
  void *p = NULL;
  CHECK_STATUS(cubert_allocator_malloc(a, 1, 1, &p, NULL), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(p == NULL);
}

TEST(allocator_arena) {
  static unsigned char buf[256];
  cubert_arena_t arena;
  cubert_allocator_t a;
  void *p = NULL, *q = NULL, *r = NULL;
  CHECK_STATUS(cubert_arena_initialize(NULL, buf, sizeof buf, &a,
                                       NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_arena_initialize(&arena, NULL, 16, &a, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_arena_initialize(&arena, buf, sizeof buf, &a, NULL));
  CHECK_OK(cubert_allocator_malloc(a, 10, 8, &p, NULL));
  CHECK_EQ_U64((uintptr_t)p % 8, 0);
  CHECK_OK(cubert_allocator_malloc(a, 100, 64, &q, NULL));
  CHECK_EQ_U64((uintptr_t)q % 64, 0);
  /* most recent block resizes in place */
  CHECK_OK(cubert_allocator_realloc(a, q, 100, 120, 64, &r, NULL));
  CHECK(r == q);
  CHECK_STATUS(cubert_allocator_malloc(a, 1000, 8, &r, NULL), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  cubert_allocator_free(a, q, 120, 64);
  CHECK_EQ_U64(arena.used, (size_t)((unsigned char *)q - buf)); /* q given back */
  CHECK(arena.high_water > 100);
  cubert_arena_reset(&arena);
  CHECK_EQ_U64(arena.used, 0);
}

TEST(allocator_counting_fails_nth_call) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  void *p[3] = {NULL, NULL, NULL};
  counting_allocator_fail_at(&c, 2, 0);
  CHECK_OK(cubert_allocator_malloc(a, 8, 8, &p[0], NULL));
  CHECK_STATUS(cubert_allocator_malloc(a, 8, 8, &p[1], NULL), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_OK(cubert_allocator_malloc(a, 8, 8, &p[2], NULL));
  CHECK_EQ_U64(c.failures, 1);
  cubert_allocator_free(a, p[0], 8, 8);
  cubert_allocator_free(a, p[2], 8, 8);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(status_names) {
  CHECK_EQ_STR(cubert_status_name(CUBERT_STATUS_OK), "OK");
  CHECK_EQ_STR(cubert_status_name(CUBERT_STATUS_INVALID_HANDLE), "INVALID_HANDLE");
  /* 127: out of the list yet representable by every enum size (-fshort-enums, the
   * arm-none-eabi default, makes this enum one byte). */
  CHECK_EQ_STR(cubert_status_name((cubert_status_t)127), "UNKNOWN");
  CHECK_EQ_STR(cubert_status_description(CUBERT_STATUS_OUT_OF_MEMORY), "device out of memory");
}
