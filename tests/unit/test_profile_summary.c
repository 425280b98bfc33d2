/* SPDX-License-Identifier: MIT */
/* Profiling's text (docs/cubecl-mapping.md, "Profiling"): the duration, type
 * name and launch-line helpers and the per-kernel summary table. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/config.h"
#include "cubert/profile.h"

/* ---- text helpers ---------------------------------------------------------------------- */

static void check_duration_text(uint64_t ns, const char *expected) {
  char text[64];
  size_t n = cubert_profile_format_duration(ns, text, sizeof text);
  CHECK_EQ_STR(text, expected);
  CHECK_EQ_U64(n, strlen(expected));
}

/* Rust's Debug of Duration::from_nanos(ns). */
TEST(profile_format_duration_matches_rust_debug) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  check_duration_text(0, "0ns");
  check_duration_text(1, "1ns");
  check_duration_text(999, "999ns");
  check_duration_text(1000, "1\xC2\xB5s");
  check_duration_text(1500, "1.5\xC2\xB5s");
  check_duration_text(1001, "1.001\xC2\xB5s");
  check_duration_text(999999, "999.999\xC2\xB5s");
  check_duration_text(1000000, "1ms");
  check_duration_text(1234567, "1.234567ms");
  check_duration_text(10000001, "10.000001ms");
  check_duration_text(999999999, "999.999999ms");
  check_duration_text(1000000000, "1s");
  check_duration_text(1500000000, "1.5s");
  check_duration_text(2000000001, "2.000000001s");
  check_duration_text(60000000000ull, "60s");
  check_duration_text(UINT64_MAX, "18446744073.709551615s");
}

static void check_type_name(const char *in, const char *expected) {
  char text[512];
  size_t n = cubert_profile_format_type_name(in, text, sizeof text);
  CHECK_EQ_STR(text, expected);
  CHECK_EQ_U64(n, strlen(expected));
}

/* CubeCL's test_format_name, ported literally. */
TEST(profile_format_type_name_cubecl_vector) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  check_type_name("burn_cubecl::kernel::unary_numeric::unary_numeric::UnaryNumeric<f32, "
                  "burn_cubecl::tensor::base::CubeTensor<_>::copy::Copy, "
                  "cubecl_cuda::runtime::CudaRuntime>",
                  "UnaryNumeric | f32 | CubeTensor | Copy | CudaRuntime");
}

/* More cases, each worked out by hand from CubeCL's Balanced algorithm. */
TEST(profile_format_type_name_cases) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  char deep[4 * 4096 + 16];
  char *text;
  size_t i, n;
  check_type_name("", "");
  check_type_name("Plain", "Plain");
  check_type_name("a::b::Plain", "Plain");
  check_type_name("a::b::", "");
  check_type_name(":::b", ":b"); /* "::" matches are found left to right */
  check_type_name("  a::  Spaced  <T>", "Spaced | T");
  check_type_name("Foo<", "Foo | ");
  check_type_name("Foo<>", "Foo | ");
  check_type_name("A<B<C<D>>>", "A | B | C | D");
  check_type_name("x::Foo<a::T, U<V>, W>", "Foo | T | U | V | W");
  check_type_name("Foo<a,b>", "Foo | a,b");      /* split only on ", " */
  check_type_name("Foo<a, , b>", "Foo | a |  | b");
  check_type_name("k::Kernel<\xC2\xB5::T>", "Kernel | T"); /* UTF-8 bytes are kept as is */
  check_type_name("k::\xC3\xA9t\xC3\xA9<x>", "\xC3\xA9t\xC3\xA9 | x");
  CHECK_EQ_U64(cubert_profile_format_type_name(NULL, NULL, 0), 0);
  /* deep nesting: no recursion, "A<A<...>>" gives "A | A | ..." */
  for (i = 0; i < 4096; i++) {
    deep[2 * i] = 'A';
    deep[2 * i + 1] = '<';
  }
  deep[2 * 4096] = 'A';
  deep[2 * 4096 + 1] = '\0';
  n = cubert_profile_format_type_name(deep, NULL, 0);
  CHECK_EQ_U64(n, 4097 + 3 * 4096);
  text = (char *)malloc(n + 1);
  CHECK(text != NULL);
  CHECK_EQ_U64(cubert_profile_format_type_name(deep, text, n + 1), n);
  CHECK_EQ_U64(strlen(text), n);
  CHECK(strncmp(text, "A | A | A", 9) == 0);
  CHECK(strcmp(text + n - 5, "A | A") == 0);
  free(text);
}

/* Every output size gives a NUL-terminated prefix and the full length,
 * writing nothing at or past buf[size]. */
static void check_truncation(const char *full, size_t (*produce)(void *ctx, char *buf, size_t size),
                             void *ctx) {
  size_t len = strlen(full), size;
  char *buf = (char *)malloc(len + 16);
  CHECK(buf != NULL);
  CHECK_EQ_U64(produce(ctx, NULL, 0), len);
  for (size = 0; size <= len + 2; size++) {
    size_t k, cut = size ? (len < size - 1 ? len : size - 1) : 0;
    memset(buf, 0x7f, len + 16);
    CHECK_EQ_U64(produce(ctx, buf, size), len);
    if (size > 0) {
      CHECK(memcmp(buf, full, cut) == 0);
      CHECK_EQ_U64((unsigned char)buf[cut], 0);
    }
    for (k = size; k < len + 16; k++) CHECK_EQ_U64((unsigned char)buf[k], 0x7f);
  }
  free(buf);
}

static size_t produce_type_name(void *ctx, char *buf, size_t size) {
  return cubert_profile_format_type_name((const char *)ctx, buf, size);
}

static size_t produce_duration(void *ctx, char *buf, size_t size) {
  return cubert_profile_format_duration(*(const uint64_t *)ctx, buf, size);
}

TEST(profile_format_helpers_truncate_safely) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  uint64_t ns = 1234567;
  check_truncation("UnaryNumeric | f32 | CubeTensor | Copy | CudaRuntime", produce_type_name,
                   (void *)"burn_cubecl::kernel::unary_numeric::unary_numeric::UnaryNumeric<f32, "
                           "burn_cubecl::tensor::base::CubeTensor<_>::copy::Copy, "
                           "cubecl_cuda::runtime::CudaRuntime>");
  check_truncation("1.234567ms", produce_duration, &ns);
  ns = 1500;
  check_truncation("1.5\xC2\xB5s", produce_duration, &ns);
}

TEST(profile_format_launch_lines) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  char text[128];
  size_t n;
  /* CubeCL: `| {duration:<10?} | {name}`; the padding counts characters */
  n = cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_MEDIUM, "matmul | f32", 1500000, text,
                                   sizeof text);
  CHECK_EQ_STR(text, "| 1.5ms      | matmul | f32");
  CHECK_EQ_U64(n, strlen(text));
  cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_FULL, "k: id CubeCount (1, 2, 3)", 1500,
                               text, sizeof text);
  CHECK_EQ_STR(text, "| 1.5\xC2\xB5s      | k: id CubeCount (1, 2, 3)");
  cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_MEDIUM, "long", 2000000000123ull, text,
                               sizeof text);
  CHECK_EQ_STR(text, "| 2000.000000123s | long"); /* wider than 10: no padding */
  cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, "add", 5, text, sizeof text);
  CHECK_EQ_STR(text, "Executing add");
  CHECK_EQ_U64(cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_BASIC, "add", 5, text,
                                            sizeof text), 0);
  CHECK_EQ_STR(text, "");
  CHECK_EQ_U64(cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_OFF, "add", 5, text,
                                            sizeof text), 0);
  CHECK_EQ_U64(cubert_profile_format_launch((cubert_profile_level_t)42, "add", 5, text,
                                            sizeof text), 0);
  cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, NULL, 5, text, sizeof text);
  CHECK_EQ_STR(text, "Executing ");
  /* truncation */
  n = cubert_profile_format_launch(CUBERT_PROFILE_LEVEL_MEDIUM, "matmul", 1, text, 8);
  CHECK_EQ_U64(n, strlen("| 1ns        | matmul"));
  CHECK_EQ_STR(text, "| 1ns  ");
}

/* ---- per-kernel summary --------------------------------------------------------------------- */

static cubert_profile_summary_t *summary_new(cubert_allocator_t a, cubert_profile_level_t level,
                                             uint32_t max_names, size_t name_bytes) {
  cubert_profile_summary_t *s = NULL;
  CHECK_OK(cubert_profile_summary_create(a, level, max_names, name_bytes, &s, NULL));
  CHECK(s != NULL);
  return s;
}

/* A rule line: '|', `n` copies of a 3-byte glyph, "| \n". */
static void append_rule(char *out, const char *glyph, size_t n) {
  size_t i;
  strcat(out, "|");
  for (i = 0; i < n; i++) strcat(out, glyph);
  strcat(out, "| \n");
}

#define TOP "\xE2\x8E\xBA"
#define MID "\xE2\x8E\xBC"
#define BOT "\xE2\x8E\xAF"

static char *summary_text(const cubert_profile_summary_t *s) {
  size_t n = cubert_profile_summary_format(s, NULL, 0);
  char *text = (char *)malloc(n + 1);
  CHECK(text != NULL);
  CHECK_EQ_U64(cubert_profile_summary_format(s, text, n + 1), n);
  CHECK_EQ_U64(strlen(text), n);
  return text;
}

TEST(profile_summary_create_invalid_arguments) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_allocator_t no_alloc = a;
  cubert_profile_summary_t *s = (cubert_profile_summary_t *)&c;
  cubert_error_t e;
  no_alloc.fn = NULL;
  CHECK_STATUS(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_create(no_alloc, CUBERT_PROFILE_LEVEL_BASIC, 4, 64, &s, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_create(a, (cubert_profile_level_t)5, 4, 64, &s, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 0, 64, &s, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC,
                                             CUBERT_PROFILE_SUMMARY_MAX_NAMES + 1, 64, &s, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 0, &s, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 4,
                                             CUBERT_PROFILE_SUMMARY_MAX_NAME_BYTES + 1, &s, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(s == (cubert_profile_summary_t *)&c);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.calls, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_summary_create_allocation_failure_loop) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  uint64_t k;
  for (k = 1;; k++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_profile_summary_t *s = NULL;
    cubert_error_t e;
    cubert_status_t st;
    counting_allocator_fail_at(&c, k, 0);
    st = cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 16, 256, &s, &e);
    if (st == CUBERT_STATUS_OK) {
      uint64_t calls = c.calls;
      CHECK(k > 1);
      CHECK_OK(cubert_profile_summary_record(s, "k", 10, NULL));
      CHECK_EQ_U64(c.calls, calls); /* recording never allocates */
      cubert_profile_summary_destroy(s);
      CHECK_EQ_I64(c.live_blocks, 0);
      CHECK_EQ_U64(c.bad_frees, 0);
      counting_allocator_destroy(&c);
      break;
    }
    CHECK_EQ_I64(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK_EQ_I64(cubert_error_kind(&e), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK(s == NULL);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
    CHECK(k < 16);
  }
}

TEST(profile_summary_records_durations_and_counts) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_MEDIUM, 8, 256);
  uint64_t dur = 1, count = 1;
  char name[16];
  CHECK(cubert_profile_summary_is_empty(s));
  CHECK_EQ_I64(cubert_profile_summary_level(s), CUBERT_PROFILE_LEVEL_MEDIUM);
  CHECK_OK(cubert_profile_summary_record(s, "a", 1500, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "b", 3000, NULL));
  /* names are compared by content and copied: a stack buffer is fine */
  strcpy(name, "a");
  CHECK_OK(cubert_profile_summary_record(s, name, 2500, NULL));
  strcpy(name, "zzz");
  CHECK_OK(cubert_profile_summary_lookup(s, "a", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 4000);
  CHECK_EQ_U64(count, 2);
  CHECK_OK(cubert_profile_summary_lookup(s, "b", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 3000);
  CHECK_EQ_U64(count, 1);
  CHECK_OK(cubert_profile_summary_lookup(s, "b", NULL, NULL, NULL));
  dur = 7;
  count = 8;
  CHECK_STATUS(cubert_profile_summary_lookup(s, "c", &dur, &count, NULL), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_profile_summary_lookup(s, "", &dur, &count, NULL), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_profile_summary_lookup(s, "ab", &dur, &count, NULL), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_U64(dur, 7);
  CHECK_EQ_U64(count, 8);
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 2);
  CHECK(!cubert_profile_summary_is_empty(s));
  /* saturation */
  CHECK_OK(cubert_profile_summary_record(s, "b", UINT64_MAX, NULL));
  CHECK_OK(cubert_profile_summary_lookup(s, "b", &dur, &count, NULL));
  CHECK_EQ_U64(dur, UINT64_MAX);
  CHECK_EQ_U64(count, 2);
  /* argument errors change nothing */
  CHECK_STATUS(cubert_profile_summary_record(NULL, "a", 1, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_record(s, NULL, 1, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_lookup(NULL, "a", &dur, &count, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_profile_summary_lookup(s, NULL, &dur, &count, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 2);
  CHECK_EQ_U64(cubert_profile_summary_name_count(NULL), 0);
  CHECK(cubert_profile_summary_is_empty(NULL));
  CHECK_EQ_I64(cubert_profile_summary_level(NULL), CUBERT_PROFILE_LEVEL_OFF);
  cubert_profile_summary_destroy(s);
  cubert_profile_summary_destroy(NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

/* As in CubeCL, durations are accumulated per name, "first line of the name". */
TEST(profile_summary_first_line_rule) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_FULL, 8, 256);
  uint64_t dur, count;
  CHECK_OK(cubert_profile_summary_record(s, "kernel: id 1\nsource line A", 100, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "kernel: id 1\nsource line B\nmore", 200, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "kernel: id 1", 300, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "\nonly a second line", 5, NULL));
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 2);
  CHECK_OK(cubert_profile_summary_lookup(s, "kernel: id 1", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 600);
  CHECK_EQ_U64(count, 3);
  CHECK_OK(cubert_profile_summary_lookup(s, "kernel: id 1\nanything", &dur, &count, NULL));
  CHECK_EQ_U64(count, 3);
  CHECK_OK(cubert_profile_summary_lookup(s, "", &dur, &count, NULL)); /* empty first line */
  CHECK_EQ_U64(dur, 5);
  CHECK_EQ_U64(count, 1);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* The table for a small known profile, character for character. */
TEST(profile_summary_format_exact_durations) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, 8, 256);
  char expected[2048] = "";
  char *text;
  CHECK_EQ_U64(cubert_profile_summary_format(s, NULL, 0), 0); /* empty: nothing */
  CHECK_OK(cubert_profile_summary_record(s, "add", 1500000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "matmul", 3000000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "reduce\nextra details", 500000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "matmul", 3000000, NULL));
  /* total 8 ms over 4 launches; ratios 6000/8000, 1500/8000, 500/8000 in µs,
   * rounded down: 75, 18, 6. Widths: name 6, duration 8, count 12, ratio 5:
   * rules of 6 + 8 + 12 + 5 + 11 = 42 characters. */
  append_rule(expected, TOP, 42);
  strcat(expected, "| Name   | Duration | Num Computed | Ratio |\n");
  append_rule(expected, MID, 42);
  strcat(expected, "| matmul | 6ms      | 2            | 75 %  |\n");
  strcat(expected, "| add    | 1.5ms    | 1            | 18 %  |\n");
  strcat(expected, "| reduce | 500\xC2\xB5s    | 1            | 6 %   |\n");
  append_rule(expected, MID, 42);
  strcat(expected, "| Total  | 8ms      | 4            | 100 % |\n");
  append_rule(expected, BOT, 42);
  text = summary_text(s);
  CHECK_EQ_STR(text, expected);
  free(text);
  /* formatting does not reset */
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 3);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Long names and long durations widen their columns; ties keep registration order. */
TEST(profile_summary_format_widths_and_ties) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_MEDIUM, 8, 256);
  char expected[4096] = "";
  char *text;
  CHECK_OK(cubert_profile_summary_record(s, "second", 1000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "UnaryNumeric | f32 | Copy", 2000000000123ull, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "first", 1000, NULL));
  /* total 2000000002123 ns = 2000000002 µs; ratios 0, 99 (rounded down), 0.
   * name width 25 ("UnaryNumeric | f32 | Copy"), duration 15 ("2000.000000123s",
   * "2000.000002123s"), count 12, ratio 5: rule 25 + 15 + 12 + 5 + 11 = 68. */
  append_rule(expected, TOP, 68);
  strcat(expected, "| Name                      | Duration        | Num Computed | Ratio |\n");
  append_rule(expected, MID, 68);
  strcat(expected, "| UnaryNumeric | f32 | Copy | 2000.000000123s | 1            | 99 %  |\n");
  strcat(expected, "| second                    | 1\xC2\xB5s             | 1            | 0 %   |\n");
  strcat(expected, "| first                     | 1\xC2\xB5s             | 1            | 0 %   |\n");
  append_rule(expected, MID, 68);
  strcat(expected, "| Total                     | 2000.000002123s | 3            | 100 % |\n");
  append_rule(expected, BOT, 68);
  text = summary_text(s);
  CHECK_EQ_STR(text, expected);
  free(text);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_summary_format_exact_execution_only) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, 8, 256);
  char expected[2048] = "";
  char *text;
  uint64_t dur = 9, count = 0;
  CHECK_OK(cubert_profile_summary_record(s, "b", 123, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "a", 456, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "a", 0, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "a", 0, NULL));
  CHECK_OK(cubert_profile_summary_lookup(s, "a", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 0); /* no durations at this level */
  CHECK_EQ_U64(count, 3);
  /* sorted by count; ratio of launches; widths name 5 ("Total"), count 12,
   * ratio 5: rule 5 + 12 + 5 + 8 = 30 */
  append_rule(expected, TOP, 30);
  strcat(expected, "| Name  | Num Computed | Ratio |\n");
  append_rule(expected, MID, 30);
  strcat(expected, "| a     | 3            | 75 %  |\n");
  strcat(expected, "| b     | 1            | 25 %  |\n");
  append_rule(expected, MID, 30);
  strcat(expected, "| Total | 4            | 100 % |\n");
  append_rule(expected, BOT, 30);
  text = summary_text(s);
  CHECK_EQ_STR(text, expected);
  free(text);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Table full: launches of names that do not fit go to the "(other)" row. */
TEST(profile_summary_table_full_other_row) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, 2, 256);
  char expected[2048] = "";
  char *text;
  uint64_t dur, count;
  CHECK_OK(cubert_profile_summary_record(s, "a", 1000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "b", 3000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "c", 2000, NULL)); /* full: other */
  CHECK_OK(cubert_profile_summary_record(s, "d", 4000, NULL)); /* full: other */
  CHECK_OK(cubert_profile_summary_record(s, "a", 0, NULL));    /* known names still count */
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 2);
  CHECK_STATUS(cubert_profile_summary_lookup(s, "c", &dur, &count, NULL), CUBERT_STATUS_NOT_FOUND);
  cubert_profile_summary_other(s, &dur, &count);
  CHECK_EQ_U64(dur, 6000);
  CHECK_EQ_U64(count, 2);
  CHECK_OK(cubert_profile_summary_lookup(s, "a", &dur, &count, NULL));
  CHECK_EQ_U64(count, 2);
  /* total 10 µs: b 30 %, a 10 %, other 60 % (printed last); name width 7 */
  append_rule(expected, TOP, 7 + 8 + 12 + 5 + 11);
  strcat(expected, "| Name    | Duration | Num Computed | Ratio |\n");
  append_rule(expected, MID, 43);
  strcat(expected, "| b       | 3\xC2\xB5s      | 1            | 30 %  |\n");
  strcat(expected, "| a       | 1\xC2\xB5s      | 2            | 10 %  |\n");
  strcat(expected, "| (other) | 6\xC2\xB5s      | 2            | 60 %  |\n");
  append_rule(expected, MID, 43);
  strcat(expected, "| Total   | 10\xC2\xB5s     | 5            | 100 % |\n");
  append_rule(expected, BOT, 43);
  text = summary_text(s);
  CHECK_EQ_STR(text, expected);
  free(text);
  /* after a flush the table has room again */
  CHECK(cubert_profile_summary_flush(s, NULL, 0) > 0);
  CHECK(cubert_profile_summary_is_empty(s));
  cubert_profile_summary_other(s, &dur, &count);
  CHECK_EQ_U64(dur, 0);
  CHECK_EQ_U64(count, 0);
  CHECK_OK(cubert_profile_summary_record(s, "c", 2000, NULL));
  CHECK_OK(cubert_profile_summary_lookup(s, "c", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 2000);
  cubert_profile_summary_other(NULL, &dur, &count);
  CHECK_EQ_U64(dur, 0);
  CHECK_EQ_U64(count, 0);
  cubert_profile_summary_other(s, NULL, NULL);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Name storage full: a name that does not fit in name_bytes goes to other. */
TEST(profile_summary_name_bytes_full) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, 8, 5);
  uint64_t dur, count;
  CHECK_OK(cubert_profile_summary_record(s, "abc", 1, NULL));  /* 3 of 5 bytes */
  CHECK_OK(cubert_profile_summary_record(s, "defg", 2, NULL)); /* 4 > 2 left: other */
  CHECK_OK(cubert_profile_summary_record(s, "de\nfg", 4, NULL)); /* first line "de": fits */
  CHECK_OK(cubert_profile_summary_record(s, "x", 8, NULL));    /* no byte left: other */
  CHECK_OK(cubert_profile_summary_record(s, "", 16, NULL));    /* empty name needs no byte */
  CHECK_OK(cubert_profile_summary_record(s, "abc", 32, NULL)); /* known name */
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 3);
  CHECK_OK(cubert_profile_summary_lookup(s, "abc", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 33);
  CHECK_EQ_U64(count, 2);
  CHECK_OK(cubert_profile_summary_lookup(s, "de", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 4);
  CHECK_OK(cubert_profile_summary_lookup(s, "", &dur, &count, NULL));
  CHECK_EQ_U64(dur, 16);
  cubert_profile_summary_other(s, &dur, &count);
  CHECK_EQ_U64(dur, 10);
  CHECK_EQ_U64(count, 2);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* The most names a summary takes; the table still prints sorted. */
TEST(profile_summary_max_names_sorted) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  uint32_t n = CUBERT_PROFILE_SUMMARY_MAX_NAMES, i;
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, n, (size_t)n * 8);
  char name[16], *text, *line;
  uint64_t prev = UINT64_MAX, rows = 0;
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "k%u", (unsigned)i);
    /* a scrambled duration per name, in whole µs */
    CHECK_OK(cubert_profile_summary_record(s, name, (uint64_t)((i * 2654435761u) % 100000u) * 1000,
                                           NULL));
  }
  CHECK_OK(cubert_profile_summary_record(s, "overflow", 1, NULL));
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), n);
  text = summary_text(s);
  /* rows of names appear with non-increasing durations */
  for (line = strstr(text, "\n| k"); line; line = strstr(line + 1, "\n| k")) {
    char *cell = strchr(line + 3, '|') + 2;
    double value = strtod(cell, NULL);
    uint64_t us = (uint64_t)value;
    if (strncmp(cell + strspn(cell, "0123456789."), "ms", 2) == 0) us = (uint64_t)(value * 1000 + 0.5);
    CHECK(us <= prev);
    prev = us;
    rows++;
  }
  CHECK_EQ_U64(rows, n);
  CHECK(strstr(text, "| (other) ") != NULL);
  free(text);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_summary_ratio_under_one_microsecond) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64);
  char *text;
  CHECK_OK(cubert_profile_summary_record(s, "tiny", 400, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "zero", 0, NULL));
  text = summary_text(s);
  /* total 400 ns is 0 whole µs: every ratio is 0 (CubeCL would divide by zero) */
  CHECK(strstr(text, "| tiny  | 400ns    | 1            | 0 %   |\n") != NULL);
  CHECK(strstr(text, "| zero  | 0ns      | 1            | 0 %   |\n") != NULL);
  CHECK(strstr(text, "| Total | 400ns    | 2            | 100 % |\n") != NULL);
  free(text);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(profile_summary_off_level_records_nothing) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_OFF, 4, 64);
  char text[16] = "junk";
  CHECK_OK(cubert_profile_summary_record(s, "a", 100, NULL));
  CHECK(cubert_profile_summary_is_empty(s));
  CHECK_STATUS(cubert_profile_summary_lookup(s, "a", NULL, NULL, NULL), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_U64(cubert_profile_summary_format(s, text, sizeof text), 0);
  CHECK_EQ_STR(text, "");
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* CubeCL prints the summary at each sync and starts over. */
TEST(profile_summary_flush_prints_then_resets) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64);
  char *before, *after;
  char small[8];
  size_t n;
  CHECK_OK(cubert_profile_summary_record(s, "k", 2000, NULL));
  before = summary_text(s);
  n = strlen(before);
  after = (char *)malloc(n + 1);
  CHECK(after != NULL);
  CHECK_EQ_U64(cubert_profile_summary_flush(s, after, n + 1), n);
  CHECK_EQ_STR(after, before);
  CHECK(cubert_profile_summary_is_empty(s));
  CHECK_EQ_U64(cubert_profile_summary_name_count(s), 0);
  CHECK_EQ_U64(cubert_profile_summary_flush(s, after, n + 1), 0); /* empty: nothing */
  CHECK_EQ_STR(after, "");
  /* a truncated flush still resets */
  CHECK_OK(cubert_profile_summary_record(s, "k", 2000, NULL));
  CHECK_EQ_U64(cubert_profile_summary_flush(s, small, sizeof small), n);
  CHECK(cubert_profile_summary_is_empty(s));
  CHECK_EQ_U64(cubert_profile_summary_flush(NULL, small, sizeof small), 0);
  CHECK_EQ_STR(small, "");
  cubert_profile_summary_reset(NULL);
  /* level is kept across resets */
  CHECK_EQ_I64(cubert_profile_summary_level(s), CUBERT_PROFILE_LEVEL_BASIC);
  free(before);
  free(after);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

static size_t produce_summary(void *ctx, char *buf, size_t size) {
  return cubert_profile_summary_format((const cubert_profile_summary_t *)ctx, buf, size);
}

TEST(profile_summary_format_truncates_safely) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = summary_new(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64);
  char *full;
  CHECK_OK(cubert_profile_summary_record(s, "matmul", 3000000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "reduce", 500000, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "x", 1, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "y", 2, NULL));
  CHECK_OK(cubert_profile_summary_record(s, "z", 3, NULL)); /* other row */
  full = summary_text(s);
  check_truncation(full, produce_summary, s);
  free(full);
  cubert_profile_summary_destroy(s);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}
