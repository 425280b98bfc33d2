/*
 * bench/bench_memory.c: steady-state reserve + release through the memory
 * manager (like CubeCL's benches/dynamic.rs: a sliding window of live
 * handles, the oldest released before each new reservation), next to glibc
 * malloc/free of the same sizes in the same run.
 *
 * Sizes: log-uniform from 1 KiB to 64 MiB (a random octave, a random point
 * in it), one fixed sequence. Manager: the SubSlices preset for an 80 GiB
 * device (max page 20 GiB, alignment 512) over a storage that hands out ids
 * without memory (the bookkeeping is what is measured, as on a GPU). Each
 * figure is the median over batches of 1000 operations of the mean ns per
 * operation, one operation = one release (of the oldest) + one reserve.
 * The handle-table floor is the cost of the id operations alone (see
 * bench_table_floor), measured in the same run.
 *
 * Options: --quick (fewer operations), --no-malloc, --window N.
 *
 *   make BUILD=build bench   or   build/bench/bench_memory [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cubert/cubert.h"
#include "cubert/host.h"
#include "cubert/memory.h"
#include "host_storage.h"

#define BATCH 1000

static int g_skip_malloc; /* --no-malloc: the manager only (for profiling) */
static size_t g_window;   /* --window N: only this window size */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint64_t rng_next(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct workload_t {
  uint64_t *sizes;
  size_t count;   /* window + steady operations */
  size_t window;  /* live handles */
} workload_t;

static int workload_make(workload_t *w, size_t window, size_t steady) {
  size_t i;
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
  double median_ns;
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
  host_storage_init(&storage, 512);
  storage.virtual_memory = true;
  ring = (cubert_memory_id_t *)calloc(w->window, sizeof *ring);
  samples = (double *)calloc(batches, sizeof *samples);
  if (!ring || !samples ||
      cubert_handle_table_create(allocator, (uint32_t)(w->window * 2 + 1024), 1, &table) != CUBERT_STATUS_OK ||
      cubert_memory_manager_create(allocator, storage.storage, table, props, &config, NULL, &mm, &err) !=
          CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_memory: setup failed\n");
    return -1;
  }
  for (i = 0; i < w->window; i++)
    if (cubert_memory_manager_reserve(mm, w->sizes[i], &ring[i], &err) != CUBERT_STATUS_OK) return -1;
  for (b = 0; b < batches; b++) {
    double t0 = now_ns();
    for (i = 0; i < BATCH; i++) {
      size_t k = w->window + b * BATCH + i;
      cubert_memory_id_release_handle(table, ring[head]);
      if (cubert_memory_manager_reserve(mm, w->sizes[k], &ring[head], &err) != CUBERT_STATUS_OK) {
        fprintf(stderr, "bench_memory: reserve failed (%s)\n", cubert_status_name(err.status));
        return -1;
      }
      head = head + 1 == w->window ? 0 : head + 1;
    }
    samples[b] = (now_ns() - t0) / BATCH;
  }
  out->median_ns = median(samples, batches);
  out->usage = cubert_memory_manager_memory_usage(mm);
  out->storage_allocs = storage.live_allocs;
  for (i = 0; i < w->window; i++) cubert_memory_id_release_handle(table, ring[i]);
  cubert_memory_manager_destroy(mm);
  cubert_handle_table_destroy(table);
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
static int bench_table_floor(const workload_t *w, double *out_median) {
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
      cubert_handle_table_create(cubert_allocator_libc(), (uint32_t)(w->window * 2 + 1024), 1,
                                 &table) != CUBERT_STATUS_OK)
    return -1;
  for (i = 0; i < w->window; i++)
    if (cubert_memory_id_acquire_owned(table, loc, &ring[i]) != CUBERT_STATUS_OK) return -1;
  for (b = 0; b < batches; b++) {
    double t0 = now_ns();
    for (i = 0; i < BATCH; i++) {
      cubert_memory_id_t old = ring[head];
      cubert_memory_id_release_handle(table, old);
      if (cubert_memory_id_is_free(table, old)) cubert_memory_id_disown(table, old);
      if (cubert_memory_id_acquire_owned(table, unset, &ring[head]) != CUBERT_STATUS_OK) return -1;
      cubert_memory_id_set_location_owned(table, ring[head], loc);
      head = head + 1 == w->window ? 0 : head + 1;
    }
    samples[b] = (now_ns() - t0) / BATCH;
  }
  *out_median = median(samples, batches);
  cubert_handle_table_destroy(table);
  free(ring);
  free(samples);
  return 0;
}

static int bench_malloc(const workload_t *w, double *out_median) {
  void **ring = (void **)calloc(w->window, sizeof *ring);
  size_t i, head = 0, batches = (w->count - w->window) / BATCH, b;
  double *samples = (double *)calloc(batches, sizeof *samples);
  if (!ring || !samples) return -1;
  for (i = 0; i < w->window; i++) {
    ring[i] = malloc((size_t)w->sizes[i]);
    if (!ring[i]) return -1;
  }
  for (b = 0; b < batches; b++) {
    double t0 = now_ns();
    for (i = 0; i < BATCH; i++) {
      size_t k = w->window + b * BATCH + i;
      free(ring[head]);
      ring[head] = malloc((size_t)w->sizes[k]);
      if (!ring[head]) {
        fprintf(stderr, "bench_memory: malloc failed\n");
        return -1;
      }
      head = head + 1 == w->window ? 0 : head + 1;
    }
    samples[b] = (now_ns() - t0) / BATCH;
  }
  *out_median = median(samples, batches);
  for (i = 0; i < w->window; i++) free(ring[i]);
  free(ring);
  free(samples);
  return 0;
}

static int run(size_t window, size_t steady) {
  workload_t w;
  mm_result_t mm;
  double libc_ns, floor_ns;
  char reserved[32], in_use[32];
  if (workload_make(&w, window, steady) != 0) return -1;
  libc_ns = 0;
  if (bench_manager(&w, &mm) != 0 || bench_table_floor(&w, &floor_ns) != 0 ||
      (!g_skip_malloc && bench_malloc(&w, &libc_ns) != 0))
    return -1;
  cubert_memory_bytes_format(mm.usage.bytes_reserved, reserved, sizeof reserved);
  cubert_memory_bytes_format(mm.usage.bytes_in_use, in_use, sizeof in_use);
  printf("%7zu live | manager %6.1f ns (handle-table floor %5.1f) | malloc/free %8.1f ns | "
         "manager/malloc %6.3f | reserved %s for %s in use, %llu pages\n",
         window, mm.median_ns, floor_ns, libc_ns, libc_ns > 0 ? mm.median_ns / libc_ns : 0.0,
         reserved, in_use,
         (unsigned long long)mm.storage_allocs);
  free(w.sizes);
  return 0;
}

int main(int argc, char **argv) {
  int quick = 0, i;
  size_t steady;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--no-malloc") == 0) g_skip_malloc = 1;
    else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) g_window = (size_t)atol(argv[++i]);
  }
  steady = quick ? 50000 : 400000;
  printf("memory manager: reserve+release, sizes 1 KiB..64 MiB log-uniform, SubSlices 20 GiB/512,\n"
         "median over batches of %d ops, %zu steady-state ops per window\n", BATCH, steady);
  if (g_window) return run(g_window, steady) != 0;
  if (run(4000, steady) != 0) return 1;
  if (run(100000, steady) != 0) return 1;
  return 0;
}
