/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_memory.c: steady-state reserve + release through the memory
 * manager (like CubeCL's benches/dynamic.rs: a sliding window of live
 * handles, the oldest released before each new reservation), next to host
 * allocators doing malloc + free of the same sizes with the same window:
 * glibc, jemalloc and mimalloc (Debian libjemalloc2, libmimalloc2.0).
 *
 * Sizes: log-uniform from 1 KiB to 64 MiB (a random octave, a random point
 * in it), one fixed sequence. Manager: the SubSlices preset for an 80 GiB
 * device (max page 20 GiB, alignment 512) over a storage that hands out ids
 * without memory (the bookkeeping is what is measured, as on a GPU). Each
 * figure is the median (and min..max) over batches of 1000 operations of the
 * mean ns per operation, one operation = one release (of the oldest) + one
 * reserve. The handle-table floor is the cost of the id operations alone
 * (see bench_table_floor), measured in the same run.
 *
 * Live handles (the window): 1k, 10k, 100k and 1M. The manager runs 400,000
 * steady-state operations per window, each host allocator 50,000 (the
 * sequence's first 50 batches; glibc takes microseconds per operation on
 * these sizes). Each host allocator runs in a child process of this program
 * (`--malloc-child`), jemalloc and mimalloc through LD_PRELOAD (they replace
 * malloc/free there; jemalloc cannot be dlopen'ed: initial-exec TLS); the
 * child checks that the allocator it was asked for is the one answering and
 * reports "skipped" otherwise (library missing, allocation failed).
 *
 * Goals (issue "Benchmarks against the peers"): reserve + release >= 10x
 * faster than glibc malloc + free with 100k live handles; flat from 1k to 1M
 * live handles (here: at most 1.5x the 1k figure, ratio >= 0.67).
 *
 * Options: --quick (fewer operations), --no-malloc (the manager only),
 * --window N (that window only).
 *
 *   make bench   or   build/bench/bench_memory [--quick]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubert/cubert.h"
#include "cubert/os.h"
#include "cubert/memory.h"
#include "memory/handle_table.h"
#include "memory/memory.h"
#include "bench_util.h"
#include "host_storage.h"

#define BATCH 1000
#define PEER_STEADY 50000
#define SERIES "pool: ns per reserve + release vs live handles"

static int g_skip_malloc; /* --no-malloc: the manager only (for profiling) */
static size_t g_window;   /* --window N: only this window size */

static uint64_t rng_state;

static uint64_t rng_next(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Median, min, max of n samples (any n >= 1). */
static bench_stat_t stat_of_samples(const double *v, size_t n) {
  double *s = (double *)malloc(n * sizeof *s);
  bench_stat_t r;
  if (!s) {
    fprintf(stderr, "bench_memory: out of host memory\n");
    exit(1);
  }
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, bench_cmp_double);
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r.min = s[0];
  r.max = s[n - 1];
  r.runs = (int)n;
  free(s);
  return r;
}

typedef struct workload_t {
  uint64_t *sizes;
  size_t count;   /* window + steady operations */
  size_t window;  /* live handles */
} workload_t;

/* The same sequence for every window size and every process. */
static int workload_make(workload_t *w, size_t window, size_t steady) {
  size_t i;
  rng_state = 0x2545F4914F6CDD1Dull;
  w->window = window;
  w->count = window + steady;
  w->sizes = (uint64_t *)malloc(w->count * sizeof *w->sizes);
  if (!w->sizes) return -1;
  for (i = 0; i < w->count; i++) {
    unsigned octave = 10 + (unsigned)(rng_next() % 16); /* 2^10 .. 2^25 */
    uint64_t base = (uint64_t)1 << octave;
    w->sizes[i] = base + rng_next() % base;             /* [1 KiB, 64 MiB) */
  }
  return 0;
}

typedef struct mm_result_t {
  bench_stat_t ns;
  cubert_memory_usage_t usage;
  uint64_t storage_allocs;
} mm_result_t;

static int bench_manager(const workload_t *w, mm_result_t *out) {
  cubert_allocator_t allocator = cubert_allocator_libc();
  cubert_handle_table_t *table = NULL;
  cubert_memory_manager_t *mm = NULL;
  host_storage_t storage;
  cubert_memory_device_properties_t props;
  cubert_memory_configuration_t config = cubert_memory_configuration_default(false);
  cubert_memory_id_t *ring;
  cubert_error_t err;
  size_t i, head = 0, batches = (w->count - w->window) / BATCH, b;
  double *samples;
  props.max_page_size = (uint64_t)20 << 30;
  props.alignment = 512;
  host_storage_initialize(&storage, 512);
  storage.virtual_memory = true;
  ring = (cubert_memory_id_t *)calloc(w->window, sizeof *ring);
  samples = (double *)calloc(batches, sizeof *samples);
  if (!ring || !samples ||
      cubert__handle_table_create(allocator, (uint32_t)(w->window * 2 + 1024), 1, &table) != CUBERT_STATUS_OK ||
      cubert__memory_manager_create(allocator, storage.storage, table, props, &config, NULL, &mm, &err) !=
      CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_memory: setup failed\n");
    return -1;
  }
  for (i = 0; i < w->window; i++)
    if (cubert__memory_manager_reserve(mm, w->sizes[i], &ring[i], &err) != CUBERT_STATUS_OK) return -1;
  for (b = 0; b < batches; b++) {
    double t0 = bench_now_ns();
    for (i = 0; i < BATCH; i++) {
      size_t k = w->window + b * BATCH + i;
      cubert__memory_id_release_handle(table, ring[head]);
      if (cubert__memory_manager_reserve(mm, w->sizes[k], &ring[head], &err) != CUBERT_STATUS_OK) {
        fprintf(stderr, "bench_memory: reserve failed (%s)\n", cubert_status_name(err.status));
        return -1;
      }
      head = head + 1 == w->window ? 0 : head + 1;
    }
    samples[b] = (bench_now_ns() - t0) / BATCH;
  }
  out->ns = stat_of_samples(samples, batches);
  out->usage = cubert__memory_manager_memory_usage(mm);
  out->storage_allocs = storage.live_allocs;
  for (i = 0; i < w->window; i++) cubert__memory_id_release_handle(table, ring[i]);
  cubert__memory_manager_destroy(mm);
  cubert__handle_table_destroy(table);
  host_storage_destroy(&storage);
  free(ring);
  free(samples);
  return 0;
}

/* The handle-table operations one reserve + release needs at least (the
 * user's release, the pool dropping the old owner, a new id owned by the
 * pool with its location), through the calls the manager makes (the owner
 * fast paths: acquire_owned, set_location_owned, disown): the floor
 * core/memory/handle.c sets, measured alone. */
static int bench_table_floor(const workload_t *w, bench_stat_t *out) {
  cubert_handle_table_t *table = NULL;
  cubert_memory_id_t *ring = (cubert_memory_id_t *)calloc(w->window, sizeof *ring);
  cubert_memory_location_t loc, unset;
  size_t i, head = 0, batches = (w->count - w->window) / BATCH, b;
  double *samples = (double *)calloc(batches, sizeof *samples);
  memset(&unset, 0, sizeof unset);
  loc.pool = 1;
  loc.init = 1;
  loc.page = 2;
  loc.slice = 3;
  if (!ring || !samples ||
      cubert__handle_table_create(cubert_allocator_libc(), (uint32_t)(w->window * 2 + 1024), 1,
                                 &table) != CUBERT_STATUS_OK)
    return -1;
  for (i = 0; i < w->window; i++)
    if (cubert__memory_id_acquire_owned(table, loc, &ring[i]) != CUBERT_STATUS_OK) return -1;
  for (b = 0; b < batches; b++) {
    double t0 = bench_now_ns();
    for (i = 0; i < BATCH; i++) {
      cubert_memory_id_t old = ring[head];
      cubert__memory_id_release_handle(table, old);
      if (cubert__memory_id_is_free(table, old)) cubert__memory_id_disown(table, old);
      if (cubert__memory_id_acquire_owned(table, unset, &ring[head]) != CUBERT_STATUS_OK) return -1;
      cubert__memory_id_set_location_owned(table, ring[head], loc);
      head = head + 1 == w->window ? 0 : head + 1;
    }
    samples[b] = (bench_now_ns() - t0) / BATCH;
  }
  *out = stat_of_samples(samples, batches);
  cubert__handle_table_destroy(table);
  free(ring);
  free(samples);
  return 0;
}

/* ---- host allocators (in a child process) -------------------------------------------------- */

typedef struct host_allocator_t {
  const char *name;    /* as printed */
  const char *preload; /* LD_PRELOAD value; NULL: glibc */
  const char *symbol;  /* a symbol only that allocator defines; NULL: glibc */
  const char *package; /* Debian package */
} host_allocator_t;

static const host_allocator_t g_allocators[] = {
    {"glibc", NULL, NULL, "libc6"},
    {"jemalloc", "libjemalloc.so.2", "mallocx", "libjemalloc2"},
    {"mimalloc", "libmimalloc.so.2", "mi_malloc", "libmimalloc2.0"},
};
#define ALLOCATORS (sizeof g_allocators / sizeof g_allocators[0])

/* In the child: is malloc the allocator asked for? NULL: yes; else why not. */
static const char *child_check_allocator(const host_allocator_t *a) {
  void *self = dlopen(NULL, RTLD_NOW), *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *ours = self ? dlsym(self, "malloc") : NULL, *glibc = libc ? dlsym(libc, "malloc") : NULL;
  if (!ours || !glibc) return "cannot look up malloc (dlsym)";
  if (!a->symbol) return ours == glibc ? NULL : "malloc is not glibc's (LD_PRELOAD set?)";
  if (!dlsym(self, a->symbol) || ours == glibc) return "not preloaded";
  return NULL;
}

/* --malloc-child NAME WINDOW STEADY: prints "ok MEDIAN MIN MAX BATCHES" or
 * "skipped REASON" on stdout. */
static int malloc_child(const char *name, size_t window, size_t steady) {
  const host_allocator_t *a = NULL;
  const char *why;
  workload_t w;
  void **ring;
  size_t i, k, head = 0, batches, b;
  double *samples;
  bench_stat_t s;
  for (i = 0; i < ALLOCATORS; i++)
    if (strcmp(g_allocators[i].name, name) == 0) a = &g_allocators[i];
  if (!a) {
    printf("skipped unknown allocator %s\n", name);
    return 0;
  }
  if ((why = child_check_allocator(a)) != NULL) {
    printf("skipped %s: %s (Debian: %s)\n", a->preload ? a->preload : "glibc", why, a->package);
    return 0;
  }
  if (workload_make(&w, window, steady) != 0) return 1;
  batches = steady / BATCH;
  ring = (void **)calloc(window, sizeof *ring);
  samples = (double *)calloc(batches, sizeof *samples);
  if (!ring || !samples) return 1;
  for (i = 0; i < window; i++)
    if ((ring[i] = malloc((size_t)w.sizes[i])) == NULL) {
      printf("skipped malloc returned NULL after %lu live blocks (address space or mappings)\n",
             (unsigned long)i);
      return 0;
    }
  for (b = 0; b < batches; b++) {
    double t0 = bench_now_ns();
    for (k = 0; k < BATCH; k++) {
      free(ring[head]);
      ring[head] = malloc((size_t)w.sizes[window + b * BATCH + k]);
      if (!ring[head]) {
        printf("skipped malloc returned NULL in the steady state\n");
        return 0;
      }
      head = head + 1 == window ? 0 : head + 1;
    }
    samples[b] = (bench_now_ns() - t0) / BATCH;
  }
  s = stat_of_samples(samples, batches);
  printf("ok %.6g %.6g %.6g %lu\n", s.median, s.min, s.max, (unsigned long)batches);
  return 0; /* the process exits: no need to free a million blocks */
}

/* Run the child for allocator a; 0 with *out, or 1 with why[] filled. */
static int host_allocator_measure(const char *self_path, const host_allocator_t *a, size_t window,
                                  size_t steady, bench_stat_t *out, char *why, size_t why_size) {
  char cmd[512], line[256];
  FILE *p;
  int rc = 1, batches = 0;
  snprintf(cmd, sizeof cmd, "%s%s '%s' --malloc-child %s %lu %lu 2>&1",
           a->preload ? "LD_PRELOAD=" : "", a->preload ? a->preload : "", self_path, a->name,
           (unsigned long)window, (unsigned long)steady);
  snprintf(why, why_size, "child process failed");
  p = popen(cmd, "r");
  if (!p) return 1;
  while (fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    if (sscanf(line, "ok %lf %lf %lf %d", &out->median, &out->min, &out->max, &batches) == 4) {
      out->runs = batches;
      rc = 0;
    } else if (strncmp(line, "skipped ", 8) == 0) {
      snprintf(why, why_size, "%.190s", line + 8);
    } else if (line[0]) {
      snprintf(why, why_size, "child: %.180s", line); /* e.g. the loader's message */
    }
  }
  if (pclose(p) != 0) rc = 1;
  return rc;
}

/* ---- one window --------------------------------------------------------------------------- */

static int run(const char *self_path, size_t window, size_t steady, size_t peer_steady,
               bench_stat_t *first) {
  static char why[ALLOCATORS][200];
  workload_t w;
  mm_result_t mm;
  bench_stat_t floor_ns, peer[ALLOCATORS];
  char reserved[32], in_use[32], figure[96];
  bench_row_t row;
  size_t i;
  if (workload_make(&w, window, steady) != 0) return -1;
  if (bench_manager(&w, &mm) != 0 || bench_table_floor(&w, &floor_ns) != 0) return -1;
  free(w.sizes);
  for (i = 0; i < ALLOCATORS && !g_skip_malloc; i++)
    if (host_allocator_measure(self_path, &g_allocators[i], window, peer_steady, &peer[i], why[i],
                               sizeof why[i]) == 0)
      why[i][0] = 0;
  cubert_memory_bytes_format(mm.usage.bytes_reserved, reserved, sizeof reserved);
  cubert_memory_bytes_format(mm.usage.bytes_in_use, in_use, sizeof in_use);
  snprintf(figure, sizeof figure, "reserve + release, %lu live handles", (unsigned long)window);
  for (i = 0; i < ALLOCATORS && !g_skip_malloc; i++) {
    row = bench_row("pool", figure, "ns", 0, mm.ns);
    row.peer = g_allocators[i].name;
    row.peer_stat = peer[i];
    row.skipped = why[i][0] ? why[i] : NULL;
    row.goal = i == 0 && window == 100000 ? 10.0 : 0;
    row.series = SERIES;
    row.x = (double)window;
    bench_emit(&row);
  }
  row = bench_row("pool", figure, "ns", 0, mm.ns);
  row.peer = "handle-table floor";
  row.peer_stat = floor_ns;
  row.series = SERIES;
  row.x = (double)window;
  bench_emit(&row);
  if (!first->runs) {
    *first = mm.ns;
  } else {
    row = bench_row("pool", figure, "ns", 0, mm.ns);
    row.peer = "baseline: 1000 live";
    row.peer_stat = *first;
    row.goal = 1.0 / 1.5;
    bench_emit(&row);
  }
  printf("  (%lu live: reserved %s for %s in use, %llu pages)\n", (unsigned long)window, reserved,
         in_use, (unsigned long long)mm.storage_allocs);
  return 0;
}

int main(int argc, char **argv) {
  static const size_t windows[] = {1000, 10000, 100000, 1000000};
  int quick = 0, i;
  size_t steady, peer_steady, k;
  bench_stat_t first;
  char self_path[400];
  ssize_t len;
  if (argc == 5 && strcmp(argv[1], "--malloc-child") == 0)
    return malloc_child(argv[2], (size_t)atol(argv[3]), (size_t)atol(argv[4]));
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--no-malloc") == 0) g_skip_malloc = 1;
    else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) g_window = (size_t)atol(argv[++i]);
  }
  len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (len <= 0) {
    snprintf(self_path, sizeof self_path, "%s", argv[0]);
  } else {
    self_path[len] = 0;
  }
  steady = quick ? 50000 : 400000;
  peer_steady = quick ? 10000 : PEER_STEADY;
  printf("bench_memory: reserve + release, sizes 1 KiB..64 MiB log-uniform, SubSlices 20 GiB/512;\n"
         "  median [min..max] over batches of %d ops; %lu steady-state ops per window (manager), "
         "%lu (host allocators, each in a child process)\n\n",
         BATCH, (unsigned long)steady, (unsigned long)peer_steady);
  bench_table_begin("bench_memory");
  memset(&first, 0, sizeof first);
  for (k = 0; k < sizeof windows / sizeof windows[0]; k++) {
    if (g_window && windows[k] != g_window) continue;
    if (run(self_path, windows[k], steady, peer_steady, &first) != 0) return 1;
  }
  if (g_window && first.runs == 0 && run(self_path, g_window, steady, peer_steady, &first) != 0)
    return 1;
  printf("\nx better: peer / cubert (ns per operation). The baseline rows compare a window with "
         "1000 live handles (flat: >= 0.67x, at most 1.5x the 1k cost).\n");
  return 0;
}
