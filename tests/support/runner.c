/* SPDX-License-Identifier: MIT */
/*
 * tests/support/runner.c: runs every registered test in its own process with
 * a timeout, up to J at a time, prints one line per test and closes with the
 * plain line "N passed, N failed[, N skipped]".
 *
 * usage: cubert-test [-j N] [--list] [--no-fork] [PREFIX ...]
 *   PREFIX...   run only tests whose name starts with one of the prefixes
 *   -j N        parallel jobs (default: CUBERT_TEST_JOBS or online CPUs)
 *   --no-fork   run in this process, stop at the first failure (for gdb/valgrind)
 * Environment: CUBERT_TEST_TIMEOUT_SCALE multiplies every timeout (e.g. 10
 * under valgrind).
 */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cubert/config.h"
#include "cubert/status.h"

#define EXIT_SKIP 77
#define DEFAULT_TIMEOUT_S 60

typedef struct test_entry_t {
  const char *name;
  test_fn_t fn;
  unsigned timeout_s;
} test_entry_t;

static test_entry_t *g_tests;
static size_t g_count, g_capacity;
static int g_no_fork;

void test_register(const char *name, test_fn_t fn, unsigned timeout_s) {
  if (g_count == g_capacity) {
    size_t cap = g_capacity ? g_capacity * 2 : 256;
    test_entry_t *t = (test_entry_t *)realloc(g_tests, cap * sizeof(*t));
    if (!t) {
      fprintf(stderr, "runner: out of memory registering %s\n", name);
      exit(2);
    }
    g_tests = t;
    g_capacity = cap;
  }
  g_tests[g_count].name = name;
  g_tests[g_count].fn = fn;
  g_tests[g_count].timeout_s = timeout_s;
  g_count++;
}

const char *test_status_name(int status) {
  return cubert_status_name((cubert_status_t)status);
}

void test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stdout, "  %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
  fflush(stdout);
  exit(1);
}

void test_skip(const char *file, int line, const char *reason) {
  fprintf(stdout, "%s (%s:%d)\n", reason, file, line);
  fflush(stdout);
  exit(EXIT_SKIP);
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const test_entry_t *)a)->name, ((const test_entry_t *)b)->name);
}

static int selected(const char *name, int argc, char **patterns) {
  int i;
  if (argc == 0) return 1;
  for (i = 0; i < argc; i++)
    if (strncmp(name, patterns[i], strlen(patterns[i])) == 0) return 1;
  return 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct running_t {
  pid_t pid;
  size_t index;
  FILE *log;
  double start_ms;
} running_t;

static unsigned timeout_for(const test_entry_t *t) {
  const char *scale_s = getenv("CUBERT_TEST_TIMEOUT_SCALE");
  unsigned base = t->timeout_s ? t->timeout_s : DEFAULT_TIMEOUT_S;
  double scale = scale_s ? atof(scale_s) : 1.0;
  if (scale < 1.0) scale = 1.0;
  return (unsigned)((double)base * scale);
}

static void dump_log(FILE *log) {
  char buf[4096];
  size_t n;
  rewind(log);
  while ((n = fread(buf, 1, sizeof buf, log)) > 0) fwrite(buf, 1, n, stdout);
}

static int first_line(FILE *log, char *out, size_t size) {
  rewind(log);
  if (!fgets(out, (int)size, log)) return 0;
  out[strcspn(out, "\n")] = 0;
  return 1;
}

int main(int argc, char **argv) {
  int jobs = 0, list = 0, i, npat = 0;
  char **patterns = (char **)calloc((size_t)argc + 1, sizeof(char *));
  size_t next = 0, passed = 0, failed = 0, skipped = 0, nrun = 0;
  running_t *run;
  const char *jobs_env = getenv("CUBERT_TEST_JOBS");
  if (!patterns) return 2;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-j") == 0 && i + 1 < argc) jobs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--list") == 0) list = 1;
    else if (strcmp(argv[i], "--no-fork") == 0) g_no_fork = 1;
    else patterns[npat++] = argv[i];
  }
  if (jobs <= 0 && jobs_env) jobs = atoi(jobs_env);
  if (jobs <= 0) jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs <= 0) jobs = 1;
  if (g_count) qsort(g_tests, g_count, sizeof(*g_tests), cmp_entry);
  if (list) {
    size_t k;
    for (k = 0; k < g_count; k++)
      if (selected(g_tests[k].name, npat, patterns)) printf("%s\n", g_tests[k].name);
    return 0;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (g_no_fork) {
    size_t k;
    for (k = 0; k < g_count; k++) {
      if (!selected(g_tests[k].name, npat, patterns)) continue;
      printf("run  %s\n", g_tests[k].name);
      g_tests[k].fn();
      printf("ok   %s\n", g_tests[k].name);
      passed++;
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    return 0;
  }
  run = (running_t *)calloc((size_t)jobs, sizeof(running_t));
  if (!run) return 2;
  for (;;) {
    /* Launch while there are free job slots. */
    while ((int)nrun < jobs) {
      pid_t pid;
      FILE *log;
      while (next < g_count && !selected(g_tests[next].name, npat, patterns)) next++;
      if (next >= g_count) break;
      log = tmpfile();
      if (!log) {
        perror("runner: tmpfile");
        return 2;
      }
      fflush(stdout);
      pid = fork();
      if (pid < 0) {
        perror("runner: fork");
        return 2;
      }
      if (pid == 0) {
        int fd = fileno(log);
        dup2(fd, 1);
        dup2(fd, 2);
        setvbuf(stdout, NULL, _IONBF, 0);
        alarm(timeout_for(&g_tests[next]));
        g_tests[next].fn();
        fflush(stdout);
        exit(0); /* not _exit: sanitizers report (and set the status) at exit */
      }
      run[nrun].pid = pid;
      run[nrun].index = next;
      run[nrun].log = log;
      run[nrun].start_ms = now_ms();
      nrun++;
      next++;
    }
    if (nrun == 0) break;
    {
      int st = 0;
      size_t k;
      pid_t pid = waitpid(-1, &st, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        perror("runner: waitpid");
        return 2;
      }
      for (k = 0; k < nrun; k++)
        if (run[k].pid == pid) break;
      if (k == nrun) continue;
      {
        const test_entry_t *t = &g_tests[run[k].index];
        double ms = now_ms() - run[k].start_ms;
        char line[512];
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
          printf("ok   %s (%.0f ms)\n", t->name, ms);
          passed++;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SKIP) {
          if (!first_line(run[k].log, line, sizeof line)) strcpy(line, "no reason given");
          /* reasons may carry the "skipped: " prefix already (the feature skips) */
          printf("skip %s: %s%s\n", t->name, strncmp(line, "skipped: ", 9) ? "skipped: " : "",
                 line);
          skipped++;
        } else {
          if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
            printf("FAIL %s: timed out after %u s\n", t->name, timeout_for(t));
          else if (WIFSIGNALED(st))
            printf("FAIL %s: killed by signal %d\n", t->name, WTERMSIG(st));
          else
            printf("FAIL %s: exit status %d\n", t->name, WEXITSTATUS(st));
          dump_log(run[k].log);
          failed++;
        }
        fclose(run[k].log);
        run[k] = run[nrun - 1];
        nrun--;
      }
    }
  }
  if (skipped)
    printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
  else
    printf("%zu passed, %zu failed\n", passed, failed);
  free(run);
  free(patterns);
  free(g_tests);
  return failed ? 1 : 0;
}
