/* SPDX-License-Identifier: MIT */
/*
 * tests/support/test.h: cubert's small test framework (no dependency).
 *
 *   TEST(suite_name_case) { CHECK(x == 1); CHECK_EQ_U64(a, b); }
 *
 * Tests register themselves (constructor attribute, gcc/clang); the runner
 * (runner.c) runs each in its own process with a timeout, prints a line per
 * test and ends with "N passed, N failed". Test names are global: prefix them
 * with the file's subject (layout_, cube_, handle_, ...).
 *
 * A failed CHECK prints file:line and both values, then ends the test process
 * with status 1. TEST_SKIP("why") ends it as skipped, printing the reason.
 *
 * Tests of a feature that a build may leave out (cubert/config.h) skip with
 * "skipped: compiled out (...)": one test with TEST_REQUIRE_FEATURE(bit) at
 * the start of its body, every test of a file with
 *   #define TEST_REQUIRES CUBERT_FEATURE_RACE_CHECKER
 * before the file's first #include.
 */
#ifndef CUBERT_TEST_H
#define CUBERT_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn_t)(void);

void test_register(const char *name, test_fn_t fn, unsigned timeout_s);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void test_skip(const char *file, int line, const char *reason) __attribute__((noreturn));
/* Skip (not return) unless the library holds every CUBERT_FEATURE_* bit;
 * returns 0 otherwise. */
int test_require_features(const char *file, int line, unsigned bits);
/* The name of the test whose body runs in this process (set by TEST before
 * the body; tests/support/test_features.c); NULL outside a test. */
extern const char *test_current_name;

#ifndef TEST_REQUIRES
#define TEST_REQUIRES 0u
#endif

#define TEST_EX(name, timeout_s)                                                \
  static void test_body_##name(void);                                           \
  static void test_run_##name(void) {                                           \
    test_current_name = #name;                                                  \
    (void)test_require_features(__FILE__, __LINE__, (TEST_REQUIRES));           \
    test_body_##name();                                                         \
  }                                                                             \
  __attribute__((constructor)) static void test_reg_##name(void) {              \
    test_register(#name, test_run_##name, (timeout_s));                         \
  }                                                                             \
  static void test_body_##name(void)

/* Default timeout: 60 s (scaled by CUBERT_TEST_TIMEOUT_SCALE). */
#define TEST(name) TEST_EX(name, 0)

#define TEST_SKIP(reason) test_skip(__FILE__, __LINE__, (reason))
/* A declaration, so it may open a test body before the other declarations. */
#define TEST_REQUIRE_FEATURE(bits) \
  int test_required_ __attribute__((unused)) = test_require_features(__FILE__, __LINE__, (bits))

/* Skips on the embedded harness (tests/embedded: one process, one thread, a 16 MiB heap,
 * built with CUBERT_TEST_EMBEDDED=1), for a test that needs what it lacks; a no-op elsewhere. */
#if defined(CUBERT_TEST_EMBEDDED) && CUBERT_TEST_EMBEDDED
#define TEST_SKIP_IF_EMBEDDED(reason) TEST_SKIP(reason)
#else
#define TEST_SKIP_IF_EMBEDDED(reason) ((void)0)
#endif

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);      \
  } while (0)

#define CHECK_MSG(cond, ...)                                                    \
  do {                                                                          \
    if (!(cond)) test_fail(__FILE__, __LINE__, __VA_ARGS__);                    \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                      \
  do {                                                                          \
    unsigned long long check_a_ = (unsigned long long)(a);                      \
    unsigned long long check_b_ = (unsigned long long)(b);                      \
    if (check_a_ != check_b_)                                                   \
      test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %llu != %llu", #a, #b,   \
                check_a_, check_b_);                                            \
  } while (0)

#define CHECK_EQ_I64(a, b)                                                      \
  do {                                                                          \
    long long check_a_ = (long long)(a);                                        \
    long long check_b_ = (long long)(b);                                        \
    if (check_a_ != check_b_)                                                   \
      test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %lld != %lld", #a, #b,   \
                check_a_, check_b_);                                            \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                      \
  do {                                                                          \
    const char *check_a_ = (a);                                                 \
    const char *check_b_ = (b);                                                 \
    if (check_a_ == NULL || check_b_ == NULL || strcmp(check_a_, check_b_) != 0) \
      test_fail(__FILE__, __LINE__, "CHECK_EQ_STR(%s, %s): \"%s\" != \"%s\"",   \
                #a, #b, check_a_ ? check_a_ : "(null)",                         \
                check_b_ ? check_b_ : "(null)");                                \
  } while (0)

/* Compare a cubert_status_t result with the expected code, printing names. */
#define CHECK_STATUS(expr, expected)                                            \
  do {                                                                          \
    int check_got_ = (int)(expr);                                               \
    int check_want_ = (int)(expected);                                          \
    if (check_got_ != check_want_)                                              \
      test_fail(__FILE__, __LINE__, "CHECK_STATUS(%s): got %s, want %s", #expr, \
                test_status_name(check_got_), test_status_name(check_want_));   \
  } while (0)

#define CHECK_OK(expr) CHECK_STATUS((expr), 0)

/* CHECK_OK for a call given `&error` (a cubert_error_t): a failure prints the
 * record, formatted. */
#define CHECK_OK_E(expr, error)                                                 \
  do {                                                                          \
    int check_got_;                                                             \
    memset(&(error), 0, sizeof(error));                                         \
    check_got_ = (int)(expr);                                                   \
    if (check_got_ != 0) {                                                      \
      char check_msg_[512];                                                     \
      cubert_error_format(&(error), check_msg_, sizeof check_msg_);             \
      test_fail(__FILE__, __LINE__, "CHECK_OK_E(%s): got %s, want OK: %s", #expr, \
                test_status_name(check_got_), check_msg_);                      \
    }                                                                           \
  } while (0)

/* An error record holds `kind` (innermost) and a reason containing `text`. */
#define CHECK_RECORD(error, kind, text)                                         \
  do {                                                                          \
    const cubert_error_t *check_e_ = &(error);                                  \
    CHECK_MSG(cubert_error_kind(check_e_) == (kind), "record kind %s, want %s",  \
              cubert_error_kind_name(cubert_error_kind(check_e_)),              \
              cubert_error_kind_name(kind));                                    \
    CHECK_MSG(strstr(check_e_->reason, (text)) != NULL,                         \
              "record reason \"%s\" lacks \"%s\"", check_e_->reason, (text));  \
  } while (0)

const char *test_status_name(int status);

#endif /* CUBERT_TEST_H */
