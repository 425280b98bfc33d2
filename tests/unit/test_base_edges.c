/* SPDX-License-Identifier: MIT */
/* tests/unit/test_base_edges.c: core/base paths the main tests leave out: every status
 * code's name and text, the checked-arithmetic and allocator argument checks, the arena
 * allocator called directly (its interface is the allocator function), corrupt or
 * hand-built error records (depth beyond the chain, unterminated reason, kind NONE
 * inside a chain), and the text builder's saturating length. */
#include <string.h>

#include "cubert/cubert.h"
#include "cubert/driver/arith.h"
#include "base/fmt.h"
#include "counting_allocator.h"
#include "test.h"
#include "cubert/driver/error.h"

/* ---- status codes ------------------------------------------------------------------ */

typedef struct status_row_t {
  cubert_status_t status;
  const char *name;
  const char *text;
} status_row_t;

static const status_row_t k_status_rows[] = {
#define STATUS_ROW_(name, value, text) {CUBERT_STATUS_##name, #name, text},
    CUBERT_STATUS_LIST(STATUS_ROW_)
#undef STATUS_ROW_
};

TEST(status_every_code_has_its_name_and_text) {
  size_t i, j;
  for (i = 0; i < sizeof k_status_rows / sizeof k_status_rows[0]; i++) {
    const status_row_t *r = &k_status_rows[i];
    CHECK_EQ_STR(cubert_status_name(r->status), r->name);
    CHECK_EQ_STR(cubert_status_description(r->status), r->text);
    CHECK(strlen(r->text) > 0);
    for (j = 0; j < i; j++) CHECK(k_status_rows[j].status != r->status); /* values distinct */
  }
  CHECK_EQ_STR(cubert_status_name((cubert_status_t)-1), "UNKNOWN");
  CHECK_EQ_STR(cubert_status_description((cubert_status_t)-1), "unknown status");
  CHECK_EQ_STR(cubert_status_description((cubert_status_t)100000), "unknown status");
}

/* ---- checked arithmetic: every NULL out and both outcomes ------------------------ */

TEST(allocator_arithmetic_null_out_and_untouched_on_error) {
  size_t s = 99;
  uint64_t u = 99;
  CHECK_STATUS(cubert_size_add(1, 2, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_size_mul_add(1, 2, 3, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_size_align_up(1, 8, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_u64_mul(1, 2, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_u64_add(1, 2, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_u64_round_up(1, 2, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  /* the multiplication of mul_add overflows: out untouched */
  CHECK_STATUS(cubert_size_mul_add(SIZE_MAX, 2, 0, &s), CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(s, 99);
  CHECK_STATUS(cubert_u64_mul(UINT64_MAX / 3 + 1, 3, &u), CUBERT_STATUS_OVERFLOW);
  CHECK_EQ_U64(u, 99);
  CHECK_OK(cubert_u64_mul(0, UINT64_MAX, &u));
  CHECK_EQ_U64(u, 0);
  CHECK_OK(cubert_u64_mul(UINT64_MAX / 3, 3, &u));
  CHECK_EQ_U64(u, UINT64_MAX / 3 * 3);
  CHECK_OK(cubert_u64_add(UINT64_MAX - 5, 5, &u));
  CHECK_EQ_U64(u, UINT64_MAX);
  CHECK_OK(cubert_u64_round_up(48, 24, &u)); /* already a multiple */
  CHECK_EQ_U64(u, 48);
  CHECK_OK(cubert_size_align_up(SIZE_MAX - 7, 8, &s)); /* the last aligned value */
  CHECK_EQ_U64(s, SIZE_MAX - 7);
}

/* ---- allocator wrappers ----------------------------------------------------------- */

TEST(allocator_wrappers_refuse_bad_arguments_before_the_allocator) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c), no_fn;
  void *p = (void *)&c, *q;
  no_fn.self = NULL;
  no_fn.fn = NULL;
  CHECK_STATUS(cubert_allocator_malloc(no_fn, 8, 8, &p, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_malloc_array(a, 2, 4, 8, NULL,
                                             NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_realloc(a, NULL, 0, 8, 8, NULL,
                                        NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_realloc(a, NULL, 0, 0, 8, &p,
                                        NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_realloc(no_fn, NULL, 0, 8, 8, &p,
                                        NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_allocator_realloc(a, NULL, 0, 8, 24, &p,
                                        NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(p == (void *)&c);   /* untouched */
  CHECK_EQ_U64(c.calls, 0); /* nothing reached the allocator */
  cubert_allocator_free(no_fn, &c, 8, 8); /* no function: a no-op */
  /* realloc of NULL allocates (zeroed); shrinking keeps the prefix */
  p = NULL;
  CHECK_OK(cubert_allocator_realloc(a, NULL, 0, 16, 0, &p, NULL));
  CHECK(p != NULL);
  CHECK_EQ_U64(((unsigned char *)p)[15], 0);
  memset(p, 7, 16);
  q = NULL;
  CHECK_OK(cubert_allocator_realloc(a, p, 16, 4, 0, &q, NULL));
  CHECK_EQ_U64(((unsigned char *)q)[3], 7);
  CHECK_EQ_I64(c.live_blocks, 1);
  cubert_allocator_free(a, q, 4, 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

/* ---- the arena, through its allocator function ------------------------------------ */

TEST(allocator_arena_function_edges) {
  /* 128-byte aligned, so that the alignments asked below land where the checks say */
  static unsigned char buf[64] __attribute__((aligned(128)));
  cubert_arena_t arena;
  cubert_allocator_t a;
  unsigned char *p, *q, *r;
  CHECK_STATUS(cubert_arena_initialize(&arena, buf, sizeof buf, NULL,
                                       NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_arena_initialize(&arena, NULL, 0, &a, NULL)); /* an empty arena is valid */
  CHECK(a.fn(a.self, NULL, 0, 1, 1) == NULL);              /* and has no room */
  CHECK_OK(cubert_arena_initialize(&arena, buf, sizeof buf, &a, NULL));
  /* a non-power-of-two alignment is refused by the function itself */
  CHECK(a.fn(a.self, NULL, 0, 8, 3) == NULL);
  CHECK_EQ_U64(arena.used, 0);
  p = (unsigned char *)a.fn(a.self, NULL, 0, 8, 8);
  CHECK(p == buf);
  q = (unsigned char *)a.fn(a.self, NULL, 0, 8, 8);
  CHECK(q == buf + 8);
  /* freeing a block that is not the last one gives nothing back */
  CHECK(a.fn(a.self, p, 8, 0, 8) == NULL);
  CHECK_EQ_U64(arena.used, 16);
  CHECK(a.fn(a.self, NULL, 0, 0, 8) == NULL); /* freeing NULL: nothing */
  CHECK_EQ_U64(arena.used, 16);
  /* the last block shrinks in place (high water unchanged), then cannot grow past the end */
  CHECK(a.fn(a.self, q, 8, 4, 8) == q);
  CHECK_EQ_U64(arena.used, 12);
  CHECK_EQ_U64(arena.high_water, 16);
  CHECK(a.fn(a.self, q, 4, sizeof buf, 8) == NULL);
  CHECK_EQ_U64(arena.used, 12); /* unchanged by the refusal */
  /* growing an older block moves it to a new one and copies the old bytes */
  memset(p, 0x3c, 8);
  r = (unsigned char *)a.fn(a.self, p, 8, 16, 8);
  CHECK(r == buf + 16);
  CHECK_EQ_U64(r[0], 0x3c);
  CHECK_EQ_U64(r[7], 0x3c);
  CHECK_EQ_U64(arena.used, 32);
  /* the aligned start itself past the end */
  CHECK(a.fn(a.self, NULL, 0, 1, 128) == NULL);
  /* the start fits but not the size */
  CHECK(a.fn(a.self, NULL, 0, 40, 8) == NULL);
  CHECK_EQ_U64(arena.used, 32);
  cubert_arena_reset(NULL); /* a no-op */
  cubert_arena_reset(&arena);
  CHECK_EQ_U64(arena.used, 0);
  CHECK_EQ_U64(arena.high_water, 32); /* the peak survives a reset */
  /* after a reset, a smaller block does not raise the peak */
  CHECK(a.fn(a.self, NULL, 0, 8, 8) == buf);
  CHECK_EQ_U64(arena.high_water, 32);
}

TEST(allocator_arena_at_the_top_of_the_address_space) {
  /* No byte is ever touched: every request fails before writing. */
  cubert_arena_t arena;
  cubert_allocator_t a;
  CHECK_OK(cubert_arena_initialize(&arena, (void *)(UINTPTR_MAX - 15), 8, &a, NULL));
  CHECK(a.fn(a.self, NULL, 0, 4, 64) == NULL); /* aligning the start would wrap */
  CHECK_EQ_U64(arena.used, 0);
  CHECK(arena.last == NULL);
}

/* ---- the text builder -------------------------------------------------------------- */

TEST(fmt_length_saturates_and_null_buffer_counts) {
  cubert_fmt_t f;
  char buf[4];
  cubert__fmt_initialize_append(&f, NULL, 16); /* no buffer: counts only */
  CHECK_EQ_U64(f.size, 0);
  cubert__fmt_append_str(&f, "abc");
  CHECK_EQ_U64(cubert__fmt_length(&f), 3);
  CHECK(cubert__fmt_truncated(&f));
  cubert__fmt_initialize(&f, buf, sizeof buf);
  f.len = SIZE_MAX - 1; /* a length about to saturate */
  cubert__fmt_append_str(&f, "xyz");
  CHECK_EQ_U64(cubert__fmt_length(&f), SIZE_MAX);
  CHECK_EQ_U64(buf[0], 0); /* nothing written past the full buffer */
}

/* ---- error records built by hand ----------------------------------------------------- */

static const char *format_big(const cubert_error_t *e) {
  static char text[2048];
  size_t n = cubert_error_format(e, text, sizeof text);
  CHECK(n < sizeof text);
  CHECK_EQ_U64(n, strlen(text));
  return text;
}

static void check_has(const char *text, const char *needle) {
  CHECK_MSG(strstr(text, needle) != NULL, "\"%s\" not found in \"%s\"", needle, text);
}

TEST(error_kind_of_empty_and_null_records) {
  cubert_error_t e;
  cubert_error_clear(&e);
  CHECK(cubert_error_kind(NULL) == CUBERT_ERROR_NONE);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_NONE);
  CHECK(!cubert_error_has_kind(NULL, CUBERT_ERROR_IO_NOT_FOUND));
  cubert_error_set_not_found(&e, "x");
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_IO_NOT_FOUND);
}

TEST(error_wrap_clamps_a_depth_beyond_the_chain) {
  cubert_error_t e;
  cubert_error_set_not_found(&e, "deep");
  e.depth = CUBERT_ERROR_MAX_DEPTH + 5; /* corrupt: more entries than the chain holds */
  e.chain[CUBERT_ERROR_MAX_DEPTH - 1] = (uint16_t)CUBERT_ERROR_IO_NOT_FOUND;
  CHECK_STATUS(cubert_error_wrap(&e, CUBERT_ERROR_SERVER_GENERIC), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_U64(e.depth, CUBERT_ERROR_MAX_DEPTH);
  CHECK(e.chain[0] == (uint16_t)CUBERT_ERROR_SERVER_GENERIC);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_IO_NOT_FOUND); /* the innermost entry stays */
}

TEST(error_format_unterminated_reason_and_kind_none_leaf) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  const char *text;
  cubert_error_set_not_found(&e, NULL);
  memset(e.reason, 'r', sizeof e.reason); /* no NUL anywhere */
  text = format_big(&e);
  CHECK(strlen(text) >= sizeof e.reason); /* the whole reason, bounded by its size */
  CHECK(strstr(text, "rrrr") != NULL);
  /* kind NONE as a chain entry reads "No error" */
  cubert_error_clear(&e);
  e.depth = 1;
  e.chain[0] = (uint16_t)CUBERT_ERROR_NONE;
  CHECK_EQ_STR(format_big(&e), "No error");
}

TEST(error_set_with_an_empty_reason_has_none) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  cubert_error_set(&e, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "");
  CHECK_EQ_STR(e.reason, "");
  CHECK_EQ_STR(format_big(&e), "Out of range"); /* no ": " */
}

TEST(error_format_optional_fields) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  static const uint64_t index_only[2] = {5, 0}, bound_only[2] = {0, 9};
  cubert_error_t e;
  cubert_error_set(&e, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, NULL);
  CHECK_EQ_STR(format_big(&e), "Out of range");
  cubert_error_set(&e, CUBERT_ERROR_OUT_OF_RANGE, index_only, 2, NULL);
  CHECK_EQ_STR(format_big(&e), "Out of range (value 5, limit 0)");
  cubert_error_set(&e, CUBERT_ERROR_OUT_OF_RANGE, bound_only, 2, NULL);
  CHECK_EQ_STR(format_big(&e), "Out of range (value 0, limit 9)");
  cubert_error_set(&e, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "arena");
  CHECK_EQ_STR(format_big(&e), "Host memory exhausted: arena");
}

TEST(error_aggregate_hand_built_and_corrupt_inputs) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t agg, next, first;
  /* an aggregate whose count field is 0 counts as one error */
  cubert_error_set_not_found(&agg, "a");
  cubert_error_wrap(&agg, CUBERT_ERROR_SERVER_UNHEALTHY);
  agg.field[0] = 0;
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 1);
  /* ... and adding it to an empty record keeps it, made consistent */
  cubert_error_clear(&first);
  agg.depth = CUBERT_ERROR_MAX_DEPTH + 2; /* corrupt depth: clamped */
  CHECK_STATUS(cubert_error_aggregate(&first, &agg), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(first.depth, CUBERT_ERROR_MAX_DEPTH);
  CHECK_EQ_U64(cubert_error_aggregate_count(&first), 1);
  CHECK(first.status == CUBERT_STATUS_SERVER_UNHEALTHY);
  /* a plain error with a corrupt depth starts an aggregate with the depth clamped */
  cubert_error_clear(&agg);
  cubert_error_set_not_found(&next, "n");
  next.depth = CUBERT_ERROR_MAX_DEPTH + 1;
  CHECK_STATUS(cubert_error_aggregate(&agg, &next), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(agg.depth <= CUBERT_ERROR_MAX_DEPTH);
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 1);
  /* an aggregate with an empty text takes the next message without a leading newline */
  agg.reason[0] = '\0';
  cubert_error_set_not_found(&next, "second");
  CHECK_STATUS(cubert_error_aggregate(&agg, &next), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 2);
  CHECK(agg.reason[0] != '\n');
  check_has(agg.reason, "second");
  /* an empty record, and a wrapped plain error, are no aggregates: no first error */
  cubert_error_clear(&next);
  CHECK_STATUS(cubert_error_unhealthy_first(&next, &first), CUBERT_STATUS_NOT_FOUND);
  cubert_error_set_not_found(&next, "x");
  cubert_error_wrap(&next, CUBERT_ERROR_SERVER_GENERIC);
  CHECK_STATUS(cubert_error_unhealthy_first(&next, &first), CUBERT_STATUS_NOT_FOUND);
}
