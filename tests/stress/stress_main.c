/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/stress_main.c: `make stress`, threads under stress.
 *
 * 8 client threads (STRESS_THREADS) on one threaded CPU device, each with its
 * own client (a clone) pinned to its own stream, run STRESS_OPS operations in
 * all (default 100,000): create, write, launch (ck_add_scalar_u32 of
 * examples/kernels/cubert_kernels.h), read, handle clone, release, sync. Half
 * of the operations touch the thread's own buffers, the other half a set of
 * buffers shared by every thread across their streams (one mutex per shared
 * buffer; the thread that used it syncs its stream before letting go, which
 * orders the next thread's stream after it, docs/race-checker.md). The race
 * checker is on: 0 reports at the end (no race, none reported falsely). Every buffer has a shadow copy on the host; every read is
 * compared with it byte for byte, and at the end every buffer is read once
 * more: 0 bytes lost or corrupted.
 *
 * No hang: each sync is a sync_async waited with a bound (STRESS_WAIT_S,
 * default 60 s: DEADLINE_EXCEEDED fails the run), and a watchdog thread fails
 * the run when no operation completed for STRESS_WATCHDOG_S (default 120 s).
 * Host memory: the device's allocator is a counting allocator
 * (tests/support/counting_allocator.h); after the device is released its
 * live blocks and bytes are back to the starting figure (0).
 *
 * Recorded sequences (cubert/record.h): each thread records, on its own
 * stream, two adds over a buffer slot, then replays it now and then with a
 * new scalar for the first add and one of its two replay buffers in the slot
 * (shadowed and checked like the others).
 *
 * STRESS_BUSY=N starts N threads that spin (no sleeping) for the whole run:
 * the oversubscribed case of a 2-core machine. STRESS_SEED (default 1).
 * Prints "stress: N ops, 8 threads, 0 corrupted, 0 leaked"; exit status 1 on any
 * corruption, leak, unexpected status or hang.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "counting_allocator.h"
#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/driver/server.h"
#include "cubert/record.h"
#include "cubert_kernels.h"

#define MAX_THREADS 64
#define PRIVATE_SLOTS 6
#define SHARED_SLOTS 8
#define MAX_WORDS 512 /* u32 words per buffer (up to 2 KiB) */

typedef struct slot_t {
  int live;
  cubert_handle_t handle;
  uint32_t words;
  uint32_t shadow[MAX_WORDS];
} slot_t;

typedef struct shared_slot_t {
  pthread_mutex_t mutex;
  cubert_client_t *owner; /* the client whose handle this is (any clone works) */
  slot_t slot;
} shared_slot_t;

typedef struct worker_t {
  unsigned index;
  pthread_t thread;
  cubert_client_t *client;
  uint64_t rng;
  uint64_t ops_target;
  slot_t slots[PRIVATE_SLOTS];
  const char *last_op; /* for the watchdog's report */
  /* the thread's recording (two adds over slot 0) and its two buffers */
  cubert_recording_t *rec;
  slot_t rslots[2];
  uint32_t rdelta; /* the second add's recorded delta */
} worker_t;

static cubert_client_t *g_device;
static shared_slot_t g_shared[SHARED_SLOTS];
static worker_t g_workers[MAX_THREADS];
static unsigned g_threads = 8;
static int g_shared_mode = 1; /* STRESS_SHARED: 0 private only, 1 half, 2 shared only */
static uint64_t g_wait_ns;
static int g_stop_busy; /* atomic */
static pthread_mutex_t g_count_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_ops, g_corrupted, g_errors, g_reads, g_launches;
static int g_done;

static void count(uint64_t *what, uint64_t n) {
  pthread_mutex_lock(&g_count_mutex);
  *what += n;
  pthread_mutex_unlock(&g_count_mutex);
}

static uint64_t next_rand(uint64_t *s) { /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717ULL;
}

static void report(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  msg[0] = 0;
  if (err) cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "stress: %s: %s %s\n", what, cubert_status_name(status), msg);
  count(&g_errors, 1);
}

#define MUST(what, expr)                                                     \
  do {                                                                       \
    cubert_error_t must_err_;                                                \
    cubert_status_t must_s_;                                                 \
    memset(&must_err_, 0, sizeof must_err_);                                 \
    must_s_ = (expr);                                                        \
    if (must_s_ != CUBERT_STATUS_OK) {                                       \
      report(what, must_s_, &must_err_);                                     \
      return 1;                                                              \
    }                                                                        \
  } while (0)

/* ---- operations (each returns 0, or 1 after reporting a failure) ---------- */

static void fill_random(uint32_t *words, uint32_t n, uint64_t *rng) {
  uint32_t i;
  for (i = 0; i < n; i++) words[i] = (uint32_t)next_rand(rng);
}

static int op_create(worker_t *w, cubert_client_t *c, slot_t *s) {
  s->words = 1u + (uint32_t)(next_rand(&w->rng) % MAX_WORDS);
  fill_random(s->shadow, s->words, &w->rng);
  w->last_op = "create";
  MUST("create_from_slice",
       cubert_client_create_from_slice(c, s->shadow, (uint64_t)s->words * 4u, &s->handle,
                                       &must_err_));
  s->live = 1;
  return 0;
}

static int op_write(worker_t *w, cubert_client_t *c, slot_t *s) {
  uint32_t data[MAX_WORDS];
  fill_random(data, s->words, &w->rng);
  w->last_op = "write";
  MUST("write", cubert_client_write(c, &s->handle, data, (uint64_t)s->words * 4u, &must_err_));
  memcpy(s->shadow, data, (size_t)s->words * 4u);
  return 0;
}

static int launch_add(worker_t *w, cubert_client_t *c, const cubert_handle_t *h, slot_t *s) {
  uint32_t delta = (uint32_t)next_rand(&w->rng);
  uint64_t scalar = delta;
  cubert_launch_arguments_t args;
  cubert_cube_count_t cubes = cubert_cube_count_new_1d((s->words + CK_SMALL_BLOCK - 1) /
                                                       CK_SMALL_BLOCK);
  uint32_t i;
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  args.scalar_count = 1;
  args.scalars = &scalar;
  w->last_op = "launch";
  MUST("launch", cubert_client_launch(c, &ck_add_scalar_u32_kernel, &cubes, &args, &must_err_));
  for (i = 0; i < s->words; i++) s->shadow[i] += delta;
  count(&g_launches, 1);
  return 0;
}

static int op_read(worker_t *w, cubert_client_t *c, const cubert_handle_t *h, const slot_t *s) {
  uint32_t out[MAX_WORDS];
  const unsigned char *a = (const unsigned char *)out, *b = (const unsigned char *)s->shadow;
  uint64_t bad = 0;
  size_t i;
  w->last_op = "read";
  MUST("read_one", cubert_client_read_one(c, h, out, (uint64_t)s->words * 4u, &must_err_));
  for (i = 0; i < (size_t)s->words * 4u; i++) bad += a[i] != b[i];
  count(&g_reads, 1);
  if (bad) {
    fprintf(stderr, "stress: thread %u: %llu of %u bytes differ from the shadow\n", w->index,
            (unsigned long long)bad, s->words * 4u);
    count(&g_corrupted, bad);
    return 1;
  }
  return 0;
}

/* clone the handle, launch or read through the clone, release the clone */
static int op_clone(worker_t *w, cubert_client_t *c, slot_t *s) {
  cubert_handle_t clone;
  int r;
  w->last_op = "clone";
  MUST("handle_clone", cubert_client_handle_clone(c, &s->handle, &clone, &must_err_));
  r = next_rand(&w->rng) & 1 ? launch_add(w, c, &clone, s) : op_read(w, c, &clone, s);
  MUST("handle_release (clone)", cubert_client_handle_release(c, &clone, &must_err_));
  return r;
}

static int op_release(worker_t *w, cubert_client_t *c, slot_t *s) {
  w->last_op = "release";
  MUST("handle_release", cubert_client_handle_release(c, &s->handle, &must_err_));
  s->live = 0;
  return 0;
}

static int op_sync(worker_t *w, cubert_client_t *c) {
  cubert_completion_t done;
  w->last_op = "sync";
  MUST("sync_async", cubert_client_sync_async(c, &done, &must_err_));
  MUST("sync wait (bounded)", cubert_completion_wait(&done, g_wait_ns, &must_err_));
  return 0;
}

/* One operation on a slot: create when it is empty, else a random one. */
static int op_on(worker_t *w, cubert_client_t *c, slot_t *s, int may_release) {
  unsigned k;
  if (!s->live) return op_create(w, c, s);
  k = (unsigned)(next_rand(&w->rng) % 10u);
  switch (k) {
    case 0:
    case 1: return op_write(w, c, s);
    case 2:
    case 3:
    case 4: return launch_add(w, c, &s->handle, s);
    case 5:
    case 6: return op_read(w, c, &s->handle, s);
    case 7: return op_clone(w, c, s);
    case 8: return may_release ? op_release(w, c, s) : op_read(w, c, &s->handle, s);
    default: return op_sync(w, c);
  }
}

#define REPLAY_WORDS 256

/* buf += delta (a typed u32 scalar), run or recorded */
static int add_typed(cubert_client_t *c, const cubert_handle_t *h, uint32_t delta) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t cubes = cubert_cube_count_new_1d(REPLAY_WORDS / CK_SMALL_BLOCK);
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, h);
  cubert_launch_arguments_set_u32(&args, 0, delta);
  MUST("launch (recorded)", cubert_client_launch(c, &ck_add_scalar_u32_kernel, &cubes, &args, &must_err_));
  return 0;
}

/* Replay the thread's recording (made at the first call) with a new delta and
 * one of its two buffers; now and then read that buffer back. */
static int op_replay(worker_t *w, cubert_client_t *c) {
  cubert_launch_arguments_t scalars;
  uint32_t j, d1, i;
  slot_t *s;
  if (!w->rec) {
    for (j = 0; j < 2; j++) {
      s = &w->rslots[j];
      s->words = REPLAY_WORDS;
      fill_random(s->shadow, s->words, &w->rng);
      w->last_op = "create (replay)";
      MUST("create_from_slice", cubert_client_create_from_slice(c, s->shadow, REPLAY_WORDS * 4u,
                                                                &s->handle, &must_err_));
      s->live = 1;
    }
    w->rdelta = (uint32_t)next_rand(&w->rng);
    w->last_op = "record";
    MUST("record_begin", cubert_client_record_begin(c, &must_err_));
    add_typed(c, &w->rslots[0].handle, 0);
    add_typed(c, &w->rslots[0].handle, w->rdelta);
    MUST("record_end", cubert_client_record_end(c, &w->rec, &must_err_));
  }
  j = (uint32_t)(next_rand(&w->rng) & 1);
  s = &w->rslots[j];
  d1 = (uint32_t)next_rand(&w->rng);
  cubert_launch_arguments_initialize(&scalars);
  cubert_launch_arguments_set_u32(&scalars, 0, d1);
  w->last_op = "replay";
  MUST("recording_set_buffer", cubert_recording_set_buffer(w->rec, 0, &s->handle, &must_err_));
  MUST("recording_set_scalars", cubert_recording_set_scalars(w->rec, 0, &scalars, &must_err_));
  MUST("replay", cubert_client_replay(c, w->rec, &must_err_));
  for (i = 0; i < s->words; i++) s->shadow[i] += d1 + w->rdelta;
  count(&g_launches, 2);
  if (next_rand(&w->rng) % 4 == 0) return op_read(w, c, &s->handle, s);
  return 0;
}

static void *worker_main(void *arg) {
  worker_t *w = (worker_t *)arg;
  uint64_t done = 0;
  unsigned i;
  while (done < w->ops_target) {
    int failed;
    uint64_t r = next_rand(&w->rng);
    if (r % 16 == 15) {
      failed = op_replay(w, w->client);
    } else if ((g_shared_mode == 0) || (g_shared_mode == 1 && (r & 1))) {
      failed = op_on(w, w->client, &w->slots[next_rand(&w->rng) % PRIVATE_SLOTS], 1);
    } else {
      shared_slot_t *sh = &g_shared[next_rand(&w->rng) % SHARED_SLOTS];
      pthread_mutex_lock(&sh->mutex);
      /* a shared buffer is never released mid-run: other streams use it. The
       * thread syncs its stream before it lets go of the buffer: streams are
       * ordered by what the program expresses (CUDA's rules, docs/streams.md,
       * docs/race-checker.md), and a host sync is what orders the next
       * thread's stream after this one's work */
      failed = op_on(w, w->client, &sh->slot, 0);
      if (!failed) failed = op_sync(w, w->client);
      pthread_mutex_unlock(&sh->mutex);
    }
    done++;
    count(&g_ops, 1);
    if (failed) break;
  }
  /* final check and release of the private buffers (and the recording's) */
  for (i = 0; i < PRIVATE_SLOTS; i++)
    if (w->slots[i].live) {
      op_read(w, w->client, &w->slots[i].handle, &w->slots[i]);
      op_release(w, w->client, &w->slots[i]);
    }
  for (i = 0; i < 2; i++)
    if (w->rslots[i].live) {
      op_read(w, w->client, &w->rslots[i].handle, &w->rslots[i]);
      op_release(w, w->client, &w->rslots[i]);
    }
  cubert_recording_destroy(w->rec);
  w->rec = NULL;
  op_sync(w, w->client);
  w->last_op = "done";
  return NULL;
}

static void *busy_main(void *arg) {
  volatile uint64_t x = 0;
  (void)arg;
  while (!__atomic_load_n(&g_stop_busy, __ATOMIC_RELAXED)) x++;
  return NULL;
}

static unsigned g_watchdog_s = 120;

static void *watchdog_main(void *arg) {
  uint64_t last = (uint64_t)-1;
  unsigned idle = 0, i;
  (void)arg;
  for (;;) {
    uint64_t now;
    int done;
    sleep(1);
    pthread_mutex_lock(&g_count_mutex);
    now = g_ops;
    done = g_done;
    pthread_mutex_unlock(&g_count_mutex);
    if (done) return NULL;
    idle = now == last ? idle + 1 : 0;
    last = now;
    if (idle >= g_watchdog_s) {
      fprintf(stderr, "stress: HANG: no operation completed for %u s (%llu ops done)\n",
              g_watchdog_s, (unsigned long long)now);
      for (i = 0; i < g_threads; i++)
        fprintf(stderr, "  thread %u: last operation %s\n", i, g_workers[i].last_op);
      fflush(stderr);
      _exit(1);
    }
  }
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 0) : fallback;
}

int main(void) {
  counting_allocator_t counting;
  cubert_allocator_t allocator = counting_allocator_initialize(&counting);
  cubert_cpu_options_t o;
  cubert_error_t err;
  pthread_t busy[64], watchdog;
  uint64_t ops = env_u64("STRESS_OPS", 100000), seed = env_u64("STRESS_SEED", 1);
  unsigned nbusy = (unsigned)env_u64("STRESS_BUSY", 0), i;
  int64_t start_blocks = counting.live_blocks, start_bytes = counting.live_bytes;
  int64_t peak;
  struct timespec t0, t1;
  int status = 0;
  g_threads = (unsigned)env_u64("STRESS_THREADS", 8);
  if (g_threads < 1 || g_threads > MAX_THREADS) g_threads = 8;
  if (nbusy > 64) nbusy = 64;
  g_shared_mode = (int)env_u64("STRESS_SHARED", 1);
  g_wait_ns = env_u64("STRESS_WAIT_S", 60) * 1000000000ull;
  g_watchdog_s = (unsigned)env_u64("STRESS_WATCHDOG_S", 120);
  clock_gettime(CLOCK_MONOTONIC, &t0);

  cubert_cpu_options_initialize(&o);
  o.device.max_streams = g_threads + 8; /* each thread's stream in a slot of its own */
  o.workers = 2;
  o.device.race_check = (cubert_config_features() & CUBERT_FEATURE_RACE_CHECKER) != 0;
  if (cubert_cpu_client_create(allocator, &o, &g_device, &err) != CUBERT_STATUS_OK) {
    report("cpu_client_create", CUBERT_STATUS_INTERNAL, &err);
    return 1;
  }
  for (i = 0; i < nbusy; i++)
    if (pthread_create(&busy[i], NULL, busy_main, NULL) != 0) return 1;
  if (pthread_create(&watchdog, NULL, watchdog_main, NULL) != 0) return 1;
  for (i = 0; i < SHARED_SLOTS; i++) {
    pthread_mutex_init(&g_shared[i].mutex, NULL);
    g_shared[i].owner = g_device;
  }
  for (i = 0; i < g_threads; i++) {
    worker_t *w = &g_workers[i];
    w->index = i;
    w->rng = (seed * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)(i + 1) * 0xD1B54A32D192ED03ULL);
    if (!w->rng) w->rng = 1;
    w->ops_target = ops / g_threads + (i < ops % g_threads);
    w->last_op = "start";
    if (cubert_client_clone(g_device, &w->client, &err) != CUBERT_STATUS_OK) {
      report("client_clone", CUBERT_STATUS_INTERNAL, &err);
      return 1;
    }
    cubert_client_set_stream(w->client, 1000u + i);
  }
  for (i = 0; i < g_threads; i++)
    if (pthread_create(&g_workers[i].thread, NULL, worker_main, &g_workers[i]) != 0) return 1;
  for (i = 0; i < g_threads; i++) pthread_join(g_workers[i].thread, NULL);

  /* every shared buffer read once more (on the device's own stream), then released */
  {
    worker_t last;
    memset(&last, 0, sizeof last);
    last.index = g_threads;
    last.rng = 1;
    for (i = 0; i < SHARED_SLOTS; i++)
      if (g_shared[i].slot.live) {
        op_read(&last, g_device, &g_shared[i].slot.handle, &g_shared[i].slot);
        op_release(&last, g_device, &g_shared[i].slot);
      }
    op_sync(&last, g_device);
  }
  if (o.device.race_check) {
    cubert_race_counters_t counters;
    cubert_race_report_t rep;
    char line[512];
    if (cubert_client_race_counters(g_device, &counters, NULL) != CUBERT_STATUS_OK) {
      count(&g_errors, 1);
    } else if (counters.reports) {
      fprintf(stderr, "stress: %llu race reports\n", (unsigned long long)counters.reports);
      if (cubert_client_race_last_report(g_device, &rep, NULL) == CUBERT_STATUS_OK) {
        cubert_race_report_format(&rep, line, sizeof line);
        fprintf(stderr, "stress: last: %s\n", line);
      }
      count(&g_errors, 1);
    }
  }
  for (i = 0; i < g_threads; i++) cubert_client_release(g_workers[i].client);
  cubert_client_release(g_device);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pthread_mutex_lock(&g_count_mutex);
  g_done = 1;
  pthread_mutex_unlock(&g_count_mutex);
  pthread_join(watchdog, NULL);
  __atomic_store_n(&g_stop_busy, 1, __ATOMIC_RELAXED);
  for (i = 0; i < nbusy; i++) pthread_join(busy[i], NULL);

  pthread_mutex_lock(&counting.mutex);
  peak = counting.peak_bytes;
  pthread_mutex_unlock(&counting.mutex);
  printf("stress: %llu reads checked, %llu launches, %u busy threads, %.1f s, host memory peak "
         "%lld bytes, at the end %lld blocks / %lld bytes (start %lld / %lld)\n",
         (unsigned long long)g_reads, (unsigned long long)g_launches, nbusy,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
         (long long)peak, (long long)counting.live_blocks, (long long)counting.live_bytes,
         (long long)start_blocks, (long long)start_bytes);
  printf("stress: %llu ops, %u threads, %llu corrupted, %lld leaked\n", (unsigned long long)g_ops,
         g_threads, (unsigned long long)g_corrupted,
         (long long)(counting.live_blocks - start_blocks));
  if (g_corrupted || g_errors || counting.live_blocks != start_blocks ||
      counting.live_bytes != start_bytes || counting.bad_frees || g_ops < ops) {
    printf("stress: FAILED (%llu errors, %llu bad frees)\n", (unsigned long long)g_errors,
           (unsigned long long)counting.bad_frees);
    status = 1;
  }
  counting_allocator_destroy(&counting);
  return status;
}
