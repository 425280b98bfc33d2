/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/runner.c: the test runner for targets with no processes (Cortex-M under
 * QEMU). It replaces tests/support/runner.c there: the same TEST(...) registrations, the
 * same per-test lines and the same closing "N passed, N failed[, N skipped]" line, but
 * every test runs in this one process, in name order: a failed CHECK or a TEST_SKIP
 * returns here through longjmp instead of ending a child process. The stack is painted
 * before each test; the runner prints each test's deepest stack (a test that wrote every
 * painted word fails: overflow), then the deepest of the run and the harness heap's peak
 * before the closing line. A fault inside a test fails that test and the run goes on
 * (cortex-m/startup.c resumes here). No per-test timeout: the Makefile bounds the run.
 *
 * usage (the semihosting command line): cubert-cortex-m-test [PREFIX ...]
 * Exit status: 0 when nothing failed, 1 otherwise (QEMU exits with it).
 */
#include "test.h"

#include <setjmp.h>
#include <stdarg.h>

#include "cubert/status.h"
#include "embedded_target.h"

#define MAX_TESTS 2048

typedef struct test_entry_t {
  const char *name;
  test_fn_t fn;
} test_entry_t;

enum { RESULT_PASS = 0, RESULT_FAIL = 1, RESULT_SKIP = 2 };

static test_entry_t g_tests[MAX_TESTS];
static size_t g_count;
static size_t g_dropped;
static jmp_buf g_jump;
static const char *volatile g_current;

void test_register(const char *name, test_fn_t fn, unsigned timeout_s) {
  (void)timeout_s;
  if (g_count == MAX_TESTS) {
    g_dropped++;
    return;
  }
  g_tests[g_count].name = name;
  g_tests[g_count].fn = fn;
  g_count++;
}

const char *test_status_name(int status) {
  return cubert_status_name((cubert_status_t)status);
}

void test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  printf("  %s:%d: ", file, line);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
  longjmp(g_jump, RESULT_FAIL);
}

void test_skip(const char *file, int line, const char *reason) {
  printf("skip %s: skipped: %s (%s:%d)\n", g_current ? g_current : "?", reason, file, line);
  fflush(stdout);
  longjmp(g_jump, RESULT_SKIP);
}

static void resume_after_fault(void) { longjmp(g_jump, RESULT_FAIL); }

embedded_resume_fn_t embedded_fault_hook(void) { return g_current ? resume_after_fault : NULL; }

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const test_entry_t *)a)->name, ((const test_entry_t *)b)->name);
}

static int selected(const char *name, int npat, char **patterns) {
  int i;
  if (npat == 0) return 1;
  for (i = 0; i < npat; i++)
    if (strncmp(name, patterns[i], strlen(patterns[i])) == 0) return 1;
  return 0;
}

/* Runs one test; nothing local changes between setjmp and longjmp. */
static int run_one(const test_entry_t *t) {
  int rc;
  g_current = t->name;
  embedded_stack_paint();
  rc = setjmp(g_jump);
  if (rc == 0) {
    t->fn();
    rc = RESULT_PASS;
  }
  g_current = NULL;
  return rc;
}

int main(int argc, char **argv) {
  size_t k, passed = 0, failed = 0, skipped = 0, deepest = 0;
  const char *deepest_name = "-";
  int npat = argc > 1 ? argc - 1 : 0;
  char **patterns = argv + 1;
  if (g_dropped) {
    printf("runner: %lu tests registered past MAX_TESTS (%d)\n", (unsigned long)g_dropped, MAX_TESTS);
    return 2;
  }
  qsort(g_tests, g_count, sizeof g_tests[0], cmp_entry);
  for (k = 0; k < g_count; k++) {
    const test_entry_t *t = &g_tests[k];
    int rc;
    size_t used;
    if (!selected(t->name, npat, patterns)) continue;
    rc = run_one(t);
    used = embedded_stack_used();
    if (used >= embedded_stack_size()) {
      printf("  stack overflow: every painted word of the %lu-byte stack was written\n",
             (unsigned long)embedded_stack_size());
      rc = RESULT_FAIL;
    }
    if (rc == RESULT_PASS && used > deepest) {
      deepest = used;
      deepest_name = t->name;
    }
    if (rc == RESULT_PASS) {
      printf("ok   %s (stack %lu B)\n", t->name, (unsigned long)used);
      passed++;
    } else if (rc == RESULT_SKIP) {
      skipped++;
    } else {
      printf("FAIL %s\n", t->name);
      failed++;
    }
  }
  printf("deepest stack of a passing test: %lu bytes of %lu (%s), painted before each test\n",
         (unsigned long)deepest, (unsigned long)embedded_stack_size(), deepest_name);
  printf("harness heap peak: %lu bytes of %lu (newlib malloc: test fixtures and the core's "
         "allocations, never freed back)\n",
         (unsigned long)embedded_heap_peak(), (unsigned long)embedded_heap_size());
  if (skipped)
    printf("%lu passed, %lu failed, %lu skipped\n", (unsigned long)passed, (unsigned long)failed,
           (unsigned long)skipped);
  else
    printf("%lu passed, %lu failed\n", (unsigned long)passed, (unsigned long)failed);
  fflush(stdout);
  return failed ? 1 : 0;
}
