/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_util.h: what every bench/ program shares: the clock, the
 * median / min / max of repeated runs, and the report rows (one line of the
 * printed table, one line of the CSV file that `make bench` gathers and
 * tools/bench_report.py turns into the combined table and the plot).
 *
 * A row: a figure measured through cubert (median [min..max] over the runs),
 * optionally the same operation through a peer measured in the same run,
 * the ratio "x better" (peer / cubert for times, cubert / peer for rates:
 * above 1 means cubert is ahead), and the goal for that ratio (met or
 * MISSED). A peer that could not be measured gives a row whose peer column
 * reads "skipped: <reason>".
 *
 * CSV: when the environment variable CUBERT_BENCH_CSV names a file, every row
 * is appended to it (a header first when the file is empty). Columns:
 *   program, section, figure, unit, better (lower|higher),
 *   cubert_median, cubert_min, cubert_max, runs,
 *   peer, peer_median, peer_min, peer_max, ratio, goal, met, skipped,
 *   series, x
 * (series / x: a point of a scaling curve; empty for the others).
 *
 * Header-only (each bench/ program is one translation unit); hosted code.
 */
#ifndef CUBERT_BENCH_UTIL_H
#define CUBERT_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MAX_RUNS 101

#if defined(__GNUC__) || defined(__clang__)
#define BENCH_UNUSED __attribute__((unused))
#else
#define BENCH_UNUSED
#endif

/* Keeps the compiler from dropping a computation whose result goes to `p`. */
#define BENCH_CLOBBER(p) __asm__ __volatile__("" : : "r"(p) : "memory")

typedef struct bench_stat_t {
  double median, min, max;
  int runs;
} bench_stat_t;

/* Monotonic nanoseconds. */
BENCH_UNUSED static double bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Sleep `us` microseconds (lets the spinning threads of the previous runtime
 * go to sleep before the next one is timed). */
BENCH_UNUSED static void bench_settle(long us) {
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  nanosleep(&ts, NULL);
}

BENCH_UNUSED static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median, min and max of v[0..n) (n in 1..BENCH_MAX_RUNS; v is not changed). */
BENCH_UNUSED static bench_stat_t bench_stat_of(const double *v, int n) {
  double s[BENCH_MAX_RUNS];
  bench_stat_t r;
  if (n < 1 || n > BENCH_MAX_RUNS) {
    fprintf(stderr, "bench: %d runs (1..%d)\n", n, BENCH_MAX_RUNS);
    exit(2);
  }
  memcpy(s, v, (size_t)n * sizeof(*v));
  qsort(s, (size_t)n, sizeof(*s), bench_cmp_double);
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r.min = s[0];
  r.max = s[n - 1];
  r.runs = n;
  return r;
}

/* The same figure as a rate: `scale` / x (e.g. 1e9 / ns per op = ops/s);
 * min and max swap. */
BENCH_UNUSED static bench_stat_t bench_stat_rate(bench_stat_t t, double scale) {
  bench_stat_t r;
  r.median = scale / t.median;
  r.min = scale / t.max;
  r.max = scale / t.min;
  r.runs = t.runs;
  return r;
}

/* ---- rows -------------------------------------------------------------------------- */

typedef struct bench_row_t {
  const char *section; /* a group: "launch", "compute", "pool", "scaling: ..." */
  const char *figure;  /* what is measured */
  const char *unit;    /* of the medians: "ns", "GB/s", "GFLOP/s", ... */
  int higher_is_better;
  bench_stat_t cubert;
  const char *peer;    /* the peer's name; NULL: no peer on this row */
  bench_stat_t peer_stat;
  const char *skipped; /* non-NULL: the peer was not measured, and why */
  double goal;         /* the ratio asked for ("x better"); 0: no goal */
  double ratio;        /* > 0: the "x better" to report instead of the ratio of the
                          medians (e.g. the median of per-run ratios) */
  const char *series;  /* a scaling curve's name; NULL: not a curve point */
  double x;            /* its x value */
} bench_row_t;

/* A row with the common fields set and no peer, goal or curve. */
BENCH_UNUSED static bench_row_t bench_row(const char *section, const char *figure,
                                          const char *unit, int higher_is_better,
                                          bench_stat_t cubert) {
  bench_row_t r;
  memset(&r, 0, sizeof r);
  r.section = section;
  r.figure = figure;
  r.unit = unit;
  r.higher_is_better = higher_is_better;
  r.cubert = cubert;
  return r;
}

/* "x better": above 1 means cubert is ahead of the peer. */
BENCH_UNUSED static double bench_ratio(const bench_row_t *r) {
  if (!r->peer || r->skipped || r->cubert.median <= 0 || r->peer_stat.median <= 0) return 0;
  if (r->ratio > 0) return r->ratio;
  return r->higher_is_better ? r->cubert.median / r->peer_stat.median
                             : r->peer_stat.median / r->cubert.median;
}

BENCH_UNUSED static const char *bench_program_name = "bench";

/* Name the program in the CSV rows and print the table's header. */
BENCH_UNUSED static void bench_table_begin(const char *program) {
  bench_program_name = program;
  printf("| %-52s | %-30s | %-40s | %9s | %-13s |\n", "figure", "cubert median [min..max]",
         "peer median [min..max]", "x better", "goal");
  printf("|------------------------------------------------------|--------------------------------"
         "|------------------------------------------|-----------|---------------|\n");
}

/* "median [min..max] unit"; a constant (min == max: a goal or a reference
 * figure) as "value unit". */
BENCH_UNUSED static void bench_format_stat(char *out, size_t size, bench_stat_t s, const char *unit) {
  const char *fmt = s.median >= 100 ? "%.0f [%.0f..%.0f] %s"
                    : s.median >= 10 ? "%.1f [%.1f..%.1f] %s"
                                     : "%.2f [%.2f..%.2f] %s";
  if (s.min == s.max)
    snprintf(out, size, "%.4g %s", s.median, unit);
  else
    snprintf(out, size, fmt, s.median, s.min, s.max, unit);
}

BENCH_UNUSED static void bench_csv_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

BENCH_UNUSED static void bench_csv_append(const bench_row_t *r, double ratio) {
  const char *path = getenv("CUBERT_BENCH_CSV");
  FILE *f;
  long size;
  if (!path || !*path) return;
  f = fopen(path, "a");
  if (!f) {
    fprintf(stderr, "bench: cannot append to %s (CUBERT_BENCH_CSV)\n", path);
    return;
  }
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  if (size == 0)
    fprintf(f, "program,section,figure,unit,better,cubert_median,cubert_min,cubert_max,runs,"
            "peer,peer_median,peer_min,peer_max,ratio,goal,met,skipped,series,x\n");
  bench_csv_string(f, bench_program_name);
  fputc(',', f);
  bench_csv_string(f, r->section);
  fputc(',', f);
  bench_csv_string(f, r->figure);
  fputc(',', f);
  bench_csv_string(f, r->unit);
  fprintf(f, ",%s,%.6g,%.6g,%.6g,%d,", r->higher_is_better ? "higher" : "lower", r->cubert.median,
          r->cubert.min, r->cubert.max, r->cubert.runs);
  bench_csv_string(f, r->peer);
  if (r->peer && !r->skipped)
    fprintf(f, ",%.6g,%.6g,%.6g,%.6g,", r->peer_stat.median, r->peer_stat.min, r->peer_stat.max,
            ratio);
  else
    fprintf(f, ",,,,,");
  if (r->goal > 0)
    fprintf(f, "%.6g,%s,", r->goal, r->skipped ? "skipped" : ratio >= r->goal ? "met" : "MISSED");
  else
    fprintf(f, ",,");
  bench_csv_string(f, r->skipped);
  fputc(',', f);
  bench_csv_string(f, r->series);
  if (r->series)
    fprintf(f, ",%.6g\n", r->x);
  else
    fprintf(f, ",\n");
  fclose(f);
}

/* Print the row (one table line) and append it to the CSV file. */
BENCH_UNUSED static void bench_emit(const bench_row_t *r) {
  char ours[64], peer[128], ratio_text[16], goal[32];
  double ratio = bench_ratio(r);
  bench_format_stat(ours, sizeof ours, r->cubert, r->unit);
  if (!r->peer)
    snprintf(peer, sizeof peer, "-");
  else if (r->skipped)
    snprintf(peer, sizeof peer, "%s: skipped: %s", r->peer, r->skipped);
  else {
    char s[64];
    bench_format_stat(s, sizeof s, r->peer_stat, r->unit);
    snprintf(peer, sizeof peer, "%s %s", r->peer, s);
  }
  if (ratio > 0)
    snprintf(ratio_text, sizeof ratio_text, "%.2fx", ratio);
  else
    snprintf(ratio_text, sizeof ratio_text, "-");
  if (r->goal <= 0)
    snprintf(goal, sizeof goal, "-");
  else if (r->skipped)
    snprintf(goal, sizeof goal, ">= %.2gx skipped", r->goal);
  else
    snprintf(goal, sizeof goal, ">= %.2gx %s", r->goal, ratio >= r->goal ? "met" : "MISSED");
  printf("| %-52s | %-30s | %-40s | %9s | %-13s |\n", r->figure, ours, peer, ratio_text, goal);
  fflush(stdout);
  bench_csv_append(r, ratio);
}

/* The machine's load average (Linux /proc/loadavg), for the record. */
BENCH_UNUSED static void bench_print_load(const char *when) {
  char text[128];
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  if (fgets(text, sizeof text, f)) printf("load average %s: %s", when, text);
  fclose(f);
}

#endif /* CUBERT_BENCH_UTIL_H */
