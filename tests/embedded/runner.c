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

#include "counting_allocator.h"
#include "cubert/config.h"
#include "cubert/device.h"
#include "cubert/status.h"
#include "cubert/driver/device.h"
#include "device/device_registry.h"
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
  /* some reasons already start with "skipped: " (the feature skips below) */
  if (strncmp(reason, "skipped: ", 9) == 0) reason += 9;
  printf("skip %s: skipped: %s (%s:%d)\n", g_current ? g_current : "?", reason, file, line);
  fflush(stdout);
  longjmp(g_jump, RESULT_SKIP);
}

/* test_require_features: tests/support/test_features.c (shared with the hosted runner). */

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

/* Devices a test left registered (a failed test jumps past its teardown): removed, so
 * that the next tests can register theirs (their memory stays lost: the heap is the
 * harness's). Returns how many there were. */
static size_t unregister_leftovers(void) {
  cubert_device_id_t ids[16];
  size_t n = cubert__device_registry_enumerate(UINT16_MAX, ids, 16), i;
  for (i = 0; i < n && i < 16; i++) {
    void *client = NULL;
    if (cubert__device_registry_lookup(ids[i], &client) == CUBERT_STATUS_OK)
      (void)cubert__device_registry_remove(ids[i], client);
  }
  return n;
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

/* Figures of the passing tests of one kind (unit tests, conformance tests): the deepest
 * stack, the median stack and the largest allocator peak, each with its test. */
typedef struct figures_t {
  size_t count, deepest, peak;
  const char *deepest_name, *peak_name;
  size_t stacks[MAX_TESTS];
} figures_t;

static figures_t g_unit, g_cts;

static void figures_add(figures_t *f, const char *name, size_t stack, size_t peak) {
  f->stacks[f->count++] = stack;
  if (stack > f->deepest || !f->deepest_name) {
    f->deepest = stack;
    f->deepest_name = name;
  }
  if (peak > f->peak || !f->peak_name) {
    f->peak = peak;
    f->peak_name = name;
  }
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static void figures_print(figures_t *f, const char *what) {
  if (!f->count) return;
  qsort(f->stacks, f->count, sizeof f->stacks[0], cmp_size);
  printf("%s (%lu passing): stack deepest %lu B (%s), median %lu B; largest allocator peak %lu B "
         "(%s)\n",
         what, (unsigned long)f->count, (unsigned long)f->deepest, f->deepest_name,
         (unsigned long)f->stacks[f->count / 2], (unsigned long)f->peak, f->peak_name);
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
    (void)counting_allocator_take_largest_peak();
    rc = run_one(t);
    used = embedded_stack_used();
    {
      size_t left = unregister_leftovers();
      if (left && rc == RESULT_PASS) {
        printf("  %lu device(s) still registered after the test\n", (unsigned long)left);
        rc = RESULT_FAIL;
      }
    }
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
      size_t peak = (size_t)counting_allocator_take_largest_peak();
      printf("ok   %s (stack %lu B, allocator peak %lu B)\n", t->name, (unsigned long)used,
             (unsigned long)peak);
      figures_add(strncmp(t->name, "cts_", 4) == 0 ? &g_cts : &g_unit, t->name, used, peak);
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
  figures_print(&g_unit, "unit tests");
  figures_print(&g_cts, "conformance tests (inline driver)");
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
