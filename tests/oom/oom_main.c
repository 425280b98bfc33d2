/* SPDX-License-Identifier: MIT */
/*
 * tests/oom/oom_main.c: `make oom`, allocation failure everywhere.
 *
 * Every conformance test (tests/cts, linked into this program) runs again and
 * again with the injected allocator failing its 1st, 2nd, ... call, transient
 * (that call only) and persistent (that call and every later one), until a
 * run completes without reaching its failure point; on each server of
 * OOM_DRIVERS (default "cpu deterministic inline", as CUBERT_CTS_DRIVER).
 *
 * Each run is a fork()ed child (a crash or a hang cannot take the driver
 * down). In the child the test body runs on a thread; a failed CHECK (an
 * allocation failure makes the test's assertions fail: expected) does not end
 * the process but parks the failing thread, so the test's stack (its counting
 * allocators, its handles) stays valid. A CHECK failing on a thread the test
 * started ends that thread (the test's joins return; CTS objects are linked
 * with pthread_create renamed, the Makefile's oom block). When the test's
 * threads are done, the child releases the host buffers (reserve_staging,
 * staging) and the clients the test still holds, counts the blocks left in
 * every counting allocator the test made (0 or the run is a leak), and checks
 * that the next valid call succeeds (a fresh client: create, read, release;
 * 0 blocks left). A CHECK failing inside an exclusive section or a profiled
 * function parks a thread that holds the device: such a run is an error whose
 * leftovers are neither released nor counted (the summary says how many).
 * Collectives of the CPU server wait 2 s for a missing rank (a rank whose
 * thread stopped at a failed CHECK) instead of the default minute (at 500 ms,
 * a loaded 2-core machine made a single thread posting 4 devices' parts time
 * out: FAILED_PRECONDITION without any injected failure).
 *
 * A run fails `make oom` when it crashes, hangs (OOM_TIMEOUT seconds, default
 * 30), leaks, finds the next valid call failing, when a test fails in a run
 * where no allocation failed, or when a CHECK_STATUS got a status outside the
 * documented out-of-memory outcomes (RESOURCE_EXHAUSTED: host memory,
 * OUT_OF_MEMORY: device memory from the host allocator, SERVER_UNHEALTHY: a
 * failure queued on the stream; include/cubert/status.h, docs/errors.md).
 * Any other failed assertion after an injected failure is an "error" (an
 * expected outcome). Each server ends with "<server>: E errors out of T runs,
 * 0 leaks".
 *
 * Failure points: every call up to OOM_DENSE (default 8), then points
 * OOM_GROWTH percent apart (default 30: about 45 runs for a test of 300
 * calls), so that `make oom` stays within minutes on 2 cores;
 * OOM_DENSE=0 tries every point, however many (about 15 s a test on the
 * CPU server: tens of minutes for the suite).
 *
 * Environment: OOM_TESTS="prefix ..." (default: every cts_ test), OOM_DRIVERS,
 * OOM_JOBS (parallel tests, default 2), OOM_MAX_POINTS (highest failure point,
 * default 0 = no limit), OOM_DENSE, OOM_GROWTH, OOM_TIMEOUT, OOM_PROGRESS=1 (a
 * line per test), OOM_VERBOSE=1 (a line per run).
 *
 * The client and counting-allocator functions are wrapped at link time
 * (-Wl,--wrap=..., the Makefile's oom block), so the tests run unchanged.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cts.h"
#include "cubert/cpu.h"
#include "cubert/dlpack.h"
#include "cubert/inline.h"
#include "cubert/record.h"
#include "server/server_faults.h"

/* ---- the tests (registered by the CTS objects' constructors) ---------------- */

typedef struct oom_test_t {
  const char *name;
  test_fn_t fn;
} oom_test_t;

static oom_test_t *g_tests;
static size_t g_count, g_capacity;

void test_register(const char *name, test_fn_t fn, unsigned timeout_s) {
  (void)timeout_s;
  if (g_count == g_capacity) {
    size_t cap = g_capacity ? g_capacity * 2 : 256;
    oom_test_t *t = (oom_test_t *)realloc(g_tests, cap * sizeof(*t));
    if (!t) {
      fprintf(stderr, "oom: out of memory registering %s\n", name);
      exit(2);
    }
    g_tests = t;
    g_capacity = cap;
  }
  g_tests[g_count].name = name;
  g_tests[g_count].fn = fn;
  g_count++;
}

const char *test_status_name(int status) { return cubert_status_name((cubert_status_t)status); }

/* ---- one run (in the child) ------------------------------------------------- */

/* OUT_HELD: a CHECK failed inside an exclusive section or a profiled function
 * (the device is held by the failing thread, which cannot unwind): the run
 * counts as an error, and what it left is not released nor counted. */
enum { OUT_PASS = 0, OUT_ASSERT = 1, OUT_SKIP = 2, OUT_HANG = 3, OUT_HELD = 4 };

typedef struct run_result_t {
  int outcome;
  int undocumented; /* a CHECK_STATUS got a status outside the allowed set */
  int next_ok;      /* the next valid call succeeded */
  uint64_t calls;   /* allocating calls seen */
  uint64_t failed;  /* of them, failed by injection */
  int64_t leaked_blocks;
  int64_t leaked_bytes;
  char message[512];
} run_result_t;

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_done;    /* the test thread returned, failed or skipped */
static int g_outcome; /* OUT_* */
static char g_message[320];
static int g_active;  /* in a child: the test runs (failures are recorded, not fatal) */

/* The failure plan: the Nth allocating call (1-based) of any counting allocator. */
static uint64_t g_fail_at;
static int g_fail_persist;
static uint64_t g_calls, g_failed;

/* Every counting allocator the test made, wrapped. */
#define MAX_ALLOCATORS 256
typedef struct wrapped_allocator_t {
  counting_allocator_t *counting;
  int destroyed;
  int64_t blocks_at_destroy;
  int64_t bytes_at_destroy;
} wrapped_allocator_t;
static wrapped_allocator_t g_allocators[MAX_ALLOCATORS];
static size_t g_allocator_count;

#define OOM_COLLECTIVE_TIMEOUT_MS 2000u

/* Every client the test holds. */
#define MAX_CLIENTS 1024
static cubert_client_t *g_clients[MAX_CLIENTS];
static size_t g_client_count;
/* Every recording the test holds (each holds its device: destroyed before the clients). */
static cubert_recording_t *g_recordings[MAX_CLIENTS];
static size_t g_recording_count;

static void park_forever(void) __attribute__((noreturn));
static void park_forever(void) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&m);
  for (;;) pthread_cond_wait(&c, &m);
}

/* The test's own threads (the CTS objects' pthread_create is renamed to
 * oom_pthread_create for this program, the Makefile's oom block): a failed
 * CHECK on one of them records the failure and ends that thread; the test's
 * main thread goes on (its joins return) and ends or fails in turn. */
static pthread_t g_test_main;
static int g_test_threads; /* running */
static int g_first_failure_set;
static char g_first_failure[320];

typedef struct oom_thread_start_t {
  void *(*fn)(void *);
  void *arg;
} oom_thread_start_t;

static void test_thread_ended(void) {
  pthread_mutex_lock(&g_mutex);
  g_test_threads--;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_mutex);
}

static void *oom_thread_trampoline(void *p) {
  oom_thread_start_t start = *(oom_thread_start_t *)p;
  void *result;
  free(p);
  result = start.fn(start.arg);
  test_thread_ended();
  return result;
}

int oom_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                       void *arg);
int oom_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                       void *arg) {
  oom_thread_start_t *start = (oom_thread_start_t *)malloc(sizeof *start);
  int rc;
  if (!start) return EAGAIN;
  start->fn = fn;
  start->arg = arg;
  pthread_mutex_lock(&g_mutex);
  g_test_threads++;
  pthread_mutex_unlock(&g_mutex);
  rc = pthread_create(thread, attr, oom_thread_trampoline, start);
  if (rc != 0) {
    free(start);
    test_thread_ended();
  }
  return rc;
}

static void record_failure(const char *message) {
  pthread_mutex_lock(&g_mutex);
  if (!g_first_failure_set) {
    g_first_failure_set = 1;
    snprintf(g_first_failure, sizeof g_first_failure, "%s", message);
  }
  pthread_mutex_unlock(&g_mutex);
}

static void finish(int outcome, const char *message) {
  pthread_mutex_lock(&g_mutex);
  if (!g_done) {
    g_done = 1;
    g_outcome = outcome;
    if (message) snprintf(g_message, sizeof g_message, "%s", message);
    pthread_cond_broadcast(&g_cond);
  }
  pthread_mutex_unlock(&g_mutex);
}

static __thread int t_held; /* this thread runs inside exclusive / profile */

void test_fail(const char *file, int line, const char *fmt, ...) {
  char text[256], message[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  snprintf(message, sizeof message, "%s:%d: %s", file, line, text);
  if (!g_active) {
    fprintf(stderr, "%s\n", message);
    exit(1);
  }
  record_failure(message);
  if (t_held) {
    finish(OUT_HELD, g_first_failure);
    park_forever();
  }
  if (!pthread_equal(pthread_self(), g_test_main)) {
    test_thread_ended();
    pthread_exit(NULL); /* one of the test's threads: the test's main thread goes on */
  }
  finish(OUT_ASSERT, g_first_failure);
  park_forever(); /* keeps this thread's stack (the test's objects) alive */
}

void test_skip(const char *file, int line, const char *reason) {
  char message[320];
  snprintf(message, sizeof message, "%s (%s:%d)", reason, file, line);
  if (!g_active) {
    fprintf(stderr, "skipped: %s\n", message);
    exit(77);
  }
  if (!pthread_equal(pthread_self(), g_test_main)) {
    record_failure(message);
    test_thread_ended();
    pthread_exit(NULL);
  }
  finish(OUT_SKIP, message);
  park_forever();
}

/* ---- wrapped functions --------------------------------------------------------- */

cubert_allocator_t __real_counting_allocator_initialize(counting_allocator_t *counting);
cubert_allocator_t __wrap_counting_allocator_initialize(counting_allocator_t *counting);
void __real_counting_allocator_destroy(counting_allocator_t *counting);
void __wrap_counting_allocator_destroy(counting_allocator_t *counting);

/* tests/support/counting_allocator.c's counting function (the same header, the same
 * figures, the test's own countdown), poisoning only the first POISON_LIMIT bytes of a
 * block: the device pages of the CPU servers (tens of MiB) are not written in full
 * at each of the thousands of runs (that took 50 ms a run). */
typedef struct oom_block_header_t {
  uint64_t size;
  uint64_t magic;
  void *map;      /* a large block's mapping (NULL: posix_memalign) */
  size_t map_len;
} oom_block_header_t;
#define OOM_MAGIC 0xC0BE47A110CA7EDULL
#define OOM_PAD 128 /* header space; keeps alignment up to 128 (CUBERT_FALSE_SHARING_BYTES) */
#define POISON_LIMIT 4096u
/* Blocks from 1 MiB up (the device pages) are mapped on 2 MiB boundaries with
 * transparent huge pages asked for: 8 page faults for 16 MiB instead of 4096
 * (on this project's VM, a run spent most of its time faulting the page in). */
#define LARGE_BLOCK (1u << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static size_t poison_size(size_t n) { return n < POISON_LIMIT ? n : POISON_LIMIT; }

static oom_block_header_t *raw_alloc(size_t size) {
  oom_block_header_t *h = NULL;
  if (size >= LARGE_BLOCK) {
    size_t len = (OOM_PAD + size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE + HUGE_PAGE;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uintptr_t start;
    if (map == MAP_FAILED) return NULL;
    start = ((uintptr_t)map + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
#ifdef MADV_HUGEPAGE
    (void)madvise((void *)start, len - (start - (uintptr_t)map), MADV_HUGEPAGE);
#endif
    h = (oom_block_header_t *)start;
    h->map = map;
    h->map_len = len;
  } else {
    void *raw = NULL;
    if (posix_memalign(&raw, OOM_PAD, OOM_PAD + size) != 0) return NULL;
    h = (oom_block_header_t *)raw;
    h->map = NULL;
    h->map_len = 0;
  }
  h->size = size;
  h->magic = OOM_MAGIC;
  return h;
}

static void raw_free(oom_block_header_t *h) {
  h->magic = 0;
  if (h->map) munmap(h->map, h->map_len);
  else free(h);
}

static void *block_of(oom_block_header_t *h) { return (unsigned char *)h + OOM_PAD; }
static oom_block_header_t *header_of(void *p) {
  return (oom_block_header_t *)(void *)((unsigned char *)p - OOM_PAD);
}

static void *counting_fn_fast(counting_allocator_t *c, void *ptr, size_t old_size,
                              size_t new_size, size_t align) {
  void *result = NULL;
  pthread_mutex_lock(&c->mutex);
  if ((align < 16 ? 16 : align) > OOM_PAD) {
    pthread_mutex_unlock(&c->mutex);
    return NULL;
  }
  if (new_size == 0) {
    if (ptr != NULL) {
      oom_block_header_t *h = header_of(ptr);
      if (h->magic != OOM_MAGIC || h->size != old_size) c->bad_frees++;
      c->live_blocks--;
      c->live_bytes -= (int64_t)h->size;
      memset(ptr, 0x55, poison_size((size_t)h->size));
      raw_free(h);
    }
    pthread_mutex_unlock(&c->mutex);
    return NULL;
  }
  c->calls++;
  if (c->fail_at != 0 && (c->calls == c->fail_at || (c->fail_persist && c->calls > c->fail_at))) {
    c->failures++;
    pthread_mutex_unlock(&c->mutex);
    return NULL;
  }
  {
    oom_block_header_t *nh = raw_alloc(new_size);
    if (nh) {
      result = block_of(nh);
      if (ptr == NULL) {
        memset(result, 0xAA, poison_size(new_size));
        c->live_blocks++;
        c->live_bytes += (int64_t)new_size;
      } else {
        oom_block_header_t *h = header_of(ptr);
        size_t keep = old_size < new_size ? old_size : new_size;
        if (h->magic != OOM_MAGIC || h->size != old_size) c->bad_frees++;
        memcpy(result, ptr, keep);
        if (new_size > keep)
          memset((unsigned char *)result + keep, 0xAA, poison_size(new_size - keep));
        c->live_bytes += (int64_t)new_size - (int64_t)h->size;
        raw_free(h);
      }
    }
  }
  if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
  pthread_mutex_unlock(&c->mutex);
  return result;
}

static void *oom_allocator_fn(void *self, void *ptr, size_t old_size, size_t new_size,
                              size_t align) {
  wrapped_allocator_t *w = (wrapped_allocator_t *)self;
  if (new_size != 0) {
    int fail = 0;
    pthread_mutex_lock(&g_mutex);
    if (g_active) {
      g_calls++;
      if (g_fail_at && (g_calls == g_fail_at || (g_fail_persist && g_calls > g_fail_at))) {
        g_failed++;
        fail = 1;
      }
    }
    pthread_mutex_unlock(&g_mutex);
    if (fail) return NULL;
  }
  return counting_fn_fast(w->counting, ptr, old_size, new_size, align);
}

cubert_allocator_t __wrap_counting_allocator_initialize(counting_allocator_t *counting) {
  cubert_allocator_t a = __real_counting_allocator_initialize(counting);
  wrapped_allocator_t *w;
  pthread_mutex_lock(&g_mutex);
  if (g_allocator_count == MAX_ALLOCATORS) {
    pthread_mutex_unlock(&g_mutex);
    return a; /* not watched (never with the CTS) */
  }
  w = &g_allocators[g_allocator_count++];
  pthread_mutex_unlock(&g_mutex);
  w->counting = counting;
  a.self = w;
  a.fn = oom_allocator_fn;
  return a;
}

void __wrap_counting_allocator_destroy(counting_allocator_t *counting) {
  size_t i;
  pthread_mutex_lock(&g_mutex);
  for (i = g_allocator_count; i-- > 0;)
    if (g_allocators[i].counting == counting && !g_allocators[i].destroyed) {
      g_allocators[i].destroyed = 1;
      g_allocators[i].blocks_at_destroy = counting->live_blocks;
      g_allocators[i].bytes_at_destroy = counting->live_bytes;
      break;
    }
  pthread_mutex_unlock(&g_mutex);
  __real_counting_allocator_destroy(counting);
}

static void track_client(cubert_status_t status, cubert_client_t **out) {
  if (status != CUBERT_STATUS_OK || !out || !*out) return;
  pthread_mutex_lock(&g_mutex);
  if (g_client_count < MAX_CLIENTS) g_clients[g_client_count++] = *out;
  pthread_mutex_unlock(&g_mutex);
}

cubert_status_t __real_cubert_cpu_client_create(cubert_allocator_t allocator,
                                                const cubert_cpu_options_t *options,
                                                cubert_client_t **out_client,
                                                cubert_error_t *out_error);
cubert_status_t __wrap_cubert_cpu_client_create(cubert_allocator_t allocator,
                                                const cubert_cpu_options_t *options,
                                                cubert_client_t **out_client,
                                                cubert_error_t *out_error);
cubert_status_t __wrap_cubert_cpu_client_create(cubert_allocator_t allocator,
                                                const cubert_cpu_options_t *options,
                                                cubert_client_t **out_client,
                                                cubert_error_t *out_error) {
  cubert_cpu_options_t o;
  cubert_status_t s;
  if (options) {
    /* a collective whose other ranks stopped at a failed CHECK waits this long,
     * not the default minute (a thread left waiting is not a hang of the library) */
    o = *options;
    if (o.collective_timeout_ms == 0) o.collective_timeout_ms = OOM_COLLECTIVE_TIMEOUT_MS;
    options = &o;
  }
  s = __real_cubert_cpu_client_create(allocator, options, out_client, out_error);
  track_client(s, out_client);
  return s;
}

cubert_status_t __real_cubert_inline_client_create(cubert_allocator_t allocator,
                                                   const cubert_inline_options_t *options,
                                                   cubert_client_t **out_client,
                                                   cubert_error_t *out_error);
cubert_status_t __wrap_cubert_inline_client_create(cubert_allocator_t allocator,
                                                   const cubert_inline_options_t *options,
                                                   cubert_client_t **out_client,
                                                   cubert_error_t *out_error);
cubert_status_t __wrap_cubert_inline_client_create(cubert_allocator_t allocator,
                                                   const cubert_inline_options_t *options,
                                                   cubert_client_t **out_client,
                                                   cubert_error_t *out_error) {
  cubert_status_t s =
      __real_cubert_inline_client_create(allocator, options, out_client, out_error);
  track_client(s, out_client);
  return s;
}

cubert_status_t __real_cubert_client_load(cubert_device_id_t device, cubert_client_t **out_client,
                                          cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_load(cubert_device_id_t device, cubert_client_t **out_client,
                                          cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_load(cubert_device_id_t device, cubert_client_t **out_client,
                                          cubert_error_t *out_error) {
  cubert_status_t s = __real_cubert_client_load(device, out_client, out_error);
  track_client(s, out_client);
  return s;
}

cubert_status_t __real_cubert_client_clone(const cubert_client_t *client,
                                           cubert_client_t **out_client,
                                           cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_clone(const cubert_client_t *client,
                                           cubert_client_t **out_client,
                                           cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_clone(const cubert_client_t *client,
                                           cubert_client_t **out_client,
                                           cubert_error_t *out_error) {
  cubert_status_t s = __real_cubert_client_clone(client, out_client, out_error);
  track_client(s, out_client);
  return s;
}

void __real_cubert_client_release(cubert_client_t *client);
void __wrap_cubert_client_release(cubert_client_t *client);
void __wrap_cubert_client_release(cubert_client_t *client) {
  size_t i;
  pthread_mutex_lock(&g_mutex);
  for (i = g_client_count; i-- > 0;)
    if (g_clients[i] == client) {
      g_clients[i] = g_clients[--g_client_count];
      break;
    }
  pthread_mutex_unlock(&g_mutex);
  __real_cubert_client_release(client);
}

cubert_status_t __real_cubert_client_record_end(cubert_client_t *client,
                                                cubert_recording_t **out_recording,
                                                cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_record_end(cubert_client_t *client,
                                                cubert_recording_t **out_recording,
                                                cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_record_end(cubert_client_t *client,
                                                cubert_recording_t **out_recording,
                                                cubert_error_t *out_error) {
  cubert_status_t s = __real_cubert_client_record_end(client, out_recording, out_error);
  if (s == CUBERT_STATUS_OK && out_recording && *out_recording) {
    pthread_mutex_lock(&g_mutex);
    if (g_recording_count < MAX_CLIENTS) g_recordings[g_recording_count++] = *out_recording;
    pthread_mutex_unlock(&g_mutex);
  }
  return s;
}

void __real_cubert_recording_destroy(cubert_recording_t *recording);
void __wrap_cubert_recording_destroy(cubert_recording_t *recording);
void __wrap_cubert_recording_destroy(cubert_recording_t *recording) {
  size_t i;
  pthread_mutex_lock(&g_mutex);
  for (i = g_recording_count; i-- > 0;)
    if (g_recordings[i] == recording) {
      g_recordings[i] = g_recordings[--g_recording_count];
      break;
    }
  pthread_mutex_unlock(&g_mutex);
  __real_cubert_recording_destroy(recording);
}

/* ---- device-held sections and caller-owned host bytes ----------------------- */

cubert_status_t __real_cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn,
                                               void *user, cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn,
                                               void *user, cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn,
                                               void *user, cubert_error_t *out_error) {
  cubert_status_t s;
  t_held++;
  s = __real_cubert_client_exclusive(client, fn, user, out_error);
  t_held--;
  return s;
}

cubert_status_t __real_cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn,
                                             void *user, const char *name,
                                             cubert_profile_duration_t *out_duration,
                                             cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn,
                                             void *user, const char *name,
                                             cubert_profile_duration_t *out_duration,
                                             cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn,
                                             void *user, const char *name,
                                             cubert_profile_duration_t *out_duration,
                                             cubert_error_t *out_error) {
  cubert_status_t s;
  t_held++;
  s = __real_cubert_client_profile(client, fn, user, name, out_duration, out_error);
  t_held--;
  return s;
}

/* Host buffers the test owns (reserve_staging, staging): their release goes
 * through bytes_released, so that the ones a failed test left are released for
 * it (before its clients) like its clients are. */
#define MAX_BYTES 4096
typedef struct tracked_bytes_t {
  void *owner;
  void (*release)(void *owner, void *data, uint64_t size);
  void *data;
  uint64_t size;
  int released;
  int moved; /* given to the runtime (create_from_bytes) */
} tracked_bytes_t;
static tracked_bytes_t g_bytes[MAX_BYTES];
static size_t g_bytes_count;

static void bytes_released(void *owner, void *data, uint64_t size) {
  tracked_bytes_t *b = (tracked_bytes_t *)owner;
  pthread_mutex_lock(&g_mutex);
  b->released = 1;
  pthread_mutex_unlock(&g_mutex);
  b->release(b->owner, data, size);
}

static void track_bytes(cubert_bytes_t *bytes, size_t count) {
  size_t i;
  for (i = 0; i < count; i++) {
    tracked_bytes_t *b;
    if (!bytes[i].release || bytes[i].release == bytes_released) continue;
    pthread_mutex_lock(&g_mutex);
    if (g_bytes_count == MAX_BYTES) {
      pthread_mutex_unlock(&g_mutex);
      return;
    }
    b = &g_bytes[g_bytes_count++];
    pthread_mutex_unlock(&g_mutex);
    b->owner = bytes[i].owner;
    b->release = bytes[i].release;
    b->data = bytes[i].data;
    b->size = bytes[i].size;
    b->released = 0;
    b->moved = 0;
    bytes[i].owner = b;
    bytes[i].release = bytes_released;
  }
}

/* create_from_bytes takes ownership (on success and on failure): the runtime
 * releases them, not the failed test's cleanup */
cubert_status_t __real_cubert_client_create_from_bytes(cubert_client_t *client,
                                                       cubert_bytes_t bytes,
                                                       cubert_handle_t *out_handle,
                                                       cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_create_from_bytes(cubert_client_t *client,
                                                       cubert_bytes_t bytes,
                                                       cubert_handle_t *out_handle,
                                                       cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_create_from_bytes(cubert_client_t *client,
                                                       cubert_bytes_t bytes,
                                                       cubert_handle_t *out_handle,
                                                       cubert_error_t *out_error) {
  if (bytes.release == bytes_released) {
    pthread_mutex_lock(&g_mutex);
    ((tracked_bytes_t *)bytes.owner)->moved = 1;
    pthread_mutex_unlock(&g_mutex);
  }
  return __real_cubert_client_create_from_bytes(client, bytes, out_handle, out_error);
}

/* DLPack exports (cubert/dlpack.h) hold their device (a client clone made
 * inside the library) until their deleter runs: a test that failed before
 * calling it would leave the device alive. The wrappers track every
 * exported tensor through a deleter of their own (the test's call reaches
 * the library's deleter through it); an import hands the library's own
 * deleter back for the call (the library recognizes its exports by it) and,
 * once the import succeeded, the tensor is the runtime's. The cleanup of a
 * failed run calls the deleter of those still held, before the clients. */
#define MAX_EXPORTS 256
typedef struct tracked_export_t {
  void *tensor;
  int versioned;
  void (*deleter_v)(cubert_dlpack_managed_tensor_versioned_t *);
  void (*deleter_u)(cubert_dlpack_managed_tensor_t *);
  int done; /* deleted, or taken by an import */
} tracked_export_t;
static tracked_export_t g_exports[MAX_EXPORTS];
static size_t g_export_count;

static tracked_export_t *export_find(const void *tensor) {
  size_t i;
  for (i = g_export_count; i-- > 0;)
    if (g_exports[i].tensor == tensor && !g_exports[i].done) return &g_exports[i];
  return NULL;
}

static void export_deleter_v(cubert_dlpack_managed_tensor_versioned_t *self) {
  tracked_export_t *e;
  pthread_mutex_lock(&g_mutex);
  e = export_find(self);
  if (e) e->done = 1;
  pthread_mutex_unlock(&g_mutex);
  if (e) e->deleter_v(self);
}

static void export_deleter_u(cubert_dlpack_managed_tensor_t *self) {
  tracked_export_t *e;
  pthread_mutex_lock(&g_mutex);
  e = export_find(self);
  if (e) e->done = 1;
  pthread_mutex_unlock(&g_mutex);
  if (e) e->deleter_u(self);
}

static void export_track(void *tensor, int versioned) {
  tracked_export_t *e;
  pthread_mutex_lock(&g_mutex);
  if (g_export_count == MAX_EXPORTS) {
    pthread_mutex_unlock(&g_mutex);
    return;
  }
  e = &g_exports[g_export_count++];
  memset(e, 0, sizeof *e);
  e->tensor = tensor;
  e->versioned = versioned;
  if (versioned) {
    cubert_dlpack_managed_tensor_versioned_t *t = (cubert_dlpack_managed_tensor_versioned_t *)tensor;
    e->deleter_v = t->deleter;
    t->deleter = export_deleter_v;
  } else {
    cubert_dlpack_managed_tensor_t *t = (cubert_dlpack_managed_tensor_t *)tensor;
    e->deleter_u = t->deleter;
    t->deleter = export_deleter_u;
  }
  pthread_mutex_unlock(&g_mutex);
}

/* Before an import: the library's deleter back (NULL: not a tracked export). */
static tracked_export_t *export_untrack(void *tensor, int versioned) {
  tracked_export_t *e;
  pthread_mutex_lock(&g_mutex);
  e = export_find(tensor);
  pthread_mutex_unlock(&g_mutex);
  if (!e) return NULL;
  if (versioned)
    ((cubert_dlpack_managed_tensor_versioned_t *)tensor)->deleter = e->deleter_v;
  else
    ((cubert_dlpack_managed_tensor_t *)tensor)->deleter = e->deleter_u;
  return e;
}

/* After it: the runtime's on success, tracked again on failure. */
static void export_retrack(tracked_export_t *e, cubert_status_t status) {
  if (!e) return;
  if (status == CUBERT_STATUS_OK) {
    pthread_mutex_lock(&g_mutex);
    e->done = 1;
    pthread_mutex_unlock(&g_mutex);
  } else if (e->versioned) {
    ((cubert_dlpack_managed_tensor_versioned_t *)e->tensor)->deleter = export_deleter_v;
  } else {
    ((cubert_dlpack_managed_tensor_t *)e->tensor)->deleter = export_deleter_u;
  }
}

static void exports_release(void) {
  size_t i;
  for (i = g_export_count; i-- > 0;) {
    tracked_export_t *e = &g_exports[i];
    if (e->done) continue;
    e->done = 1;
    if (e->versioned) e->deleter_v((cubert_dlpack_managed_tensor_versioned_t *)e->tensor);
    else e->deleter_u((cubert_dlpack_managed_tensor_t *)e->tensor);
  }
}

cubert_status_t __real_cubert_client_dlpack_export(cubert_client_t *client, const cubert_copy_descriptor_t *tensor,
                                                   cubert_dlpack_dtype_t dtype, const cubert_dlpack_options_t *options,
                                                   cubert_dlpack_managed_tensor_versioned_t **out_tensor,
                                                   cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_export(cubert_client_t *client, const cubert_copy_descriptor_t *tensor,
                                                   cubert_dlpack_dtype_t dtype, const cubert_dlpack_options_t *options,
                                                   cubert_dlpack_managed_tensor_versioned_t **out_tensor,
                                                   cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_export(cubert_client_t *client, const cubert_copy_descriptor_t *tensor,
                                                   cubert_dlpack_dtype_t dtype, const cubert_dlpack_options_t *options,
                                                   cubert_dlpack_managed_tensor_versioned_t **out_tensor,
                                                   cubert_error_t *out_error) {
  cubert_status_t s = __real_cubert_client_dlpack_export(client, tensor, dtype, options, out_tensor, out_error);
  if (s == CUBERT_STATUS_OK) export_track(*out_tensor, 1);
  return s;
}

cubert_status_t __real_cubert_client_dlpack_export_unversioned(
    cubert_client_t *client, const cubert_copy_descriptor_t *tensor, cubert_dlpack_dtype_t dtype,
    const cubert_dlpack_options_t *options, cubert_dlpack_managed_tensor_t **out_tensor, cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_export_unversioned(
    cubert_client_t *client, const cubert_copy_descriptor_t *tensor, cubert_dlpack_dtype_t dtype,
    const cubert_dlpack_options_t *options, cubert_dlpack_managed_tensor_t **out_tensor, cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_export_unversioned(
    cubert_client_t *client, const cubert_copy_descriptor_t *tensor, cubert_dlpack_dtype_t dtype,
    const cubert_dlpack_options_t *options, cubert_dlpack_managed_tensor_t **out_tensor, cubert_error_t *out_error) {
  cubert_status_t s =
      __real_cubert_client_dlpack_export_unversioned(client, tensor, dtype, options, out_tensor, out_error);
  if (s == CUBERT_STATUS_OK) export_track(*out_tensor, 0);
  return s;
}

cubert_status_t __real_cubert_client_dlpack_import(cubert_client_t *client,
                                                   cubert_dlpack_managed_tensor_versioned_t *tensor,
                                                   const cubert_dlpack_options_t *options,
                                                   cubert_dlpack_imported_t *out, cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_import(cubert_client_t *client,
                                                   cubert_dlpack_managed_tensor_versioned_t *tensor,
                                                   const cubert_dlpack_options_t *options,
                                                   cubert_dlpack_imported_t *out, cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_import(cubert_client_t *client,
                                                   cubert_dlpack_managed_tensor_versioned_t *tensor,
                                                   const cubert_dlpack_options_t *options,
                                                   cubert_dlpack_imported_t *out, cubert_error_t *out_error) {
  tracked_export_t *e = tensor ? export_untrack(tensor, 1) : NULL;
  cubert_status_t s = __real_cubert_client_dlpack_import(client, tensor, options, out, out_error);
  export_retrack(e, s);
  return s;
}

cubert_status_t __real_cubert_client_dlpack_import_unversioned(cubert_client_t *client,
                                                               cubert_dlpack_managed_tensor_t *tensor,
                                                               const cubert_dlpack_options_t *options,
                                                               cubert_dlpack_imported_t *out,
                                                               cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_import_unversioned(cubert_client_t *client,
                                                               cubert_dlpack_managed_tensor_t *tensor,
                                                               const cubert_dlpack_options_t *options,
                                                               cubert_dlpack_imported_t *out,
                                                               cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_dlpack_import_unversioned(cubert_client_t *client,
                                                               cubert_dlpack_managed_tensor_t *tensor,
                                                               const cubert_dlpack_options_t *options,
                                                               cubert_dlpack_imported_t *out,
                                                               cubert_error_t *out_error) {
  tracked_export_t *e = tensor ? export_untrack(tensor, 0) : NULL;
  cubert_status_t s = __real_cubert_client_dlpack_import_unversioned(client, tensor, options, out, out_error);
  export_retrack(e, s);
  return s;
}

cubert_status_t __real_cubert_client_reserve_staging(cubert_client_t *client,
                                                     const uint64_t *sizes, size_t count,
                                                     cubert_bytes_t *out_bytes,
                                                     cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_reserve_staging(cubert_client_t *client,
                                                     const uint64_t *sizes, size_t count,
                                                     cubert_bytes_t *out_bytes,
                                                     cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_reserve_staging(cubert_client_t *client,
                                                     const uint64_t *sizes, size_t count,
                                                     cubert_bytes_t *out_bytes,
                                                     cubert_error_t *out_error) {
  cubert_status_t s =
      __real_cubert_client_reserve_staging(client, sizes, count, out_bytes, out_error);
  if (s == CUBERT_STATUS_OK && out_bytes) track_bytes(out_bytes, count);
  return s;
}

cubert_status_t __real_cubert_client_staging(cubert_client_t *client, cubert_bytes_t *bytes,
                                             size_t count, bool file_only,
                                             cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_staging(cubert_client_t *client, cubert_bytes_t *bytes,
                                             size_t count, bool file_only,
                                             cubert_error_t *out_error);
cubert_status_t __wrap_cubert_client_staging(cubert_client_t *client, cubert_bytes_t *bytes,
                                             size_t count, bool file_only,
                                             cubert_error_t *out_error) {
  cubert_status_t s = __real_cubert_client_staging(client, bytes, count, file_only, out_error);
  if (s == CUBERT_STATUS_OK && bytes) track_bytes(bytes, count);
  return s;
}

/* ---- the child's side of a run ---------------------------------------------------- */

static unsigned g_timeout_s = 30;

static void *test_thread(void *arg) {
  const oom_test_t *t = (const oom_test_t *)arg;
  pthread_mutex_lock(&g_mutex);
  g_test_main = pthread_self(); /* before the test runs or starts a thread */
  pthread_mutex_unlock(&g_mutex);
  t->fn();
  pthread_mutex_lock(&g_mutex);
  if (g_first_failure_set) {
    pthread_mutex_unlock(&g_mutex);
    finish(OUT_ASSERT, g_first_failure); /* a thread of the test failed */
  } else {
    pthread_mutex_unlock(&g_mutex);
    finish(OUT_PASS, NULL);
  }
  return NULL;
}

/* Statuses an out-of-memory run may report where the test wanted another. */
static int documented_oom_status(const char *name) {
  static const char *const allowed[] = {"RESOURCE_EXHAUSTED", "OUT_OF_MEMORY",
                                        "SERVER_UNHEALTHY"};
  size_t i;
  for (i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
    if (strncmp(name, allowed[i], strlen(allowed[i])) == 0 && name[strlen(allowed[i])] == ',')
      return 1;
  return 0;
}

/* Fresh client, create + read + release, 0 blocks left: the next valid call works. */
static int next_call_works(void) {
  counting_allocator_t counting;
  wrapped_allocator_t w;
  cubert_allocator_t a = __real_counting_allocator_initialize(&counting);
  cubert_client_t *client = NULL;
  const uint8_t data[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  uint8_t out[16];
  cubert_handle_t h;
  int ok = 0;
  memset(&w, 0, sizeof w);
  w.counting = &counting;
  a.self = &w;
  a.fn = oom_allocator_fn; /* g_active is 0: nothing fails */
  if (cts_client_create(a, NULL, &client, NULL) == CUBERT_STATUS_OK) {
    memset(out, 0, sizeof out);
    ok = cubert_client_create_from_slice(client, data, sizeof data, &h, NULL) ==
             CUBERT_STATUS_OK &&
         cubert_client_read_one(client, &h, out, sizeof out, NULL) == CUBERT_STATUS_OK &&
         memcmp(out, data, sizeof data) == 0 &&
         cubert_client_handle_release(client, &h, NULL) == CUBERT_STATUS_OK;
    __real_cubert_client_release(client);
  }
  ok = ok && counting.live_blocks == 0 && counting.bad_frees == 0;
  __real_counting_allocator_destroy(&counting);
  return ok;
}

static void child_run(const oom_test_t *t, uint64_t fail_at, int persist, int fd) {
  run_result_t r;
  pthread_t thread;
  pthread_attr_t attr;
  struct timespec deadline;
  size_t i;
  int timed_out = 0;
  memset(&r, 0, sizeof r);
  g_fail_at = fail_at;
  g_fail_persist = persist;
  g_active = 1;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 8u << 20);
  pthread_mutex_lock(&g_mutex);
  if (pthread_create(&thread, &attr, test_thread, (void *)t) != 0) _exit(3);
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += (time_t)g_timeout_s;
  /* the test's main thread ended or failed, and every thread it started ended */
  while ((!g_done || g_test_threads > 0) && !timed_out)
    if (pthread_cond_timedwait(&g_cond, &g_mutex, &deadline) == ETIMEDOUT) timed_out = 1;
  r.calls = g_calls;
  r.failed = g_failed;
  g_fail_at = 0; /* from here on nothing fails */
  g_active = 0;
  pthread_mutex_unlock(&g_mutex);
  if (timed_out) {
    r.outcome = OUT_HANG;
    snprintf(r.message, sizeof r.message, "no end after %u s (%s; %d thread(s) of the test running)%s%s",
             g_timeout_s, g_done ? "the test's main thread ended" : "the test's main thread runs",
             g_test_threads, g_first_failure_set ? ", first failure: " : "", g_first_failure_set ? g_first_failure + (strlen(g_first_failure) > 200 ? strlen(g_first_failure) - 200 : 0) : "");
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(4);
    _exit(0);
  }
  r.outcome = g_outcome;
  snprintf(r.message, sizeof r.message, "%s", g_message);
  if (r.outcome == OUT_PASS) pthread_join(thread, NULL);
  if (r.outcome == OUT_ASSERT) {
    const char *got = strstr(r.message, "got ");
    if (got && !documented_oom_status(got + 4)) r.undocumented = 1;
  }
  if (r.outcome == OUT_HELD) { /* the device is held by the parked thread: nothing to release */
    r.next_ok = 1;
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(4);
    _exit(0);
  }
  /* release what the test still holds: its host buffers, its DLPack exports, its recordings,
   * then its clients (most recent first) */
  exports_release();
  for (i = 0; i < g_bytes_count; i++)
    if (!g_bytes[i].released && !g_bytes[i].moved)
      bytes_released(&g_bytes[i], g_bytes[i].data, g_bytes[i].size);
  while (g_recording_count > 0) __real_cubert_recording_destroy(g_recordings[--g_recording_count]);
  while (g_client_count > 0) {
    cubert_client_t *c = g_clients[--g_client_count];
    __real_cubert_client_release(c);
  }
  for (i = 0; i < g_allocator_count; i++) {
    const wrapped_allocator_t *w = &g_allocators[i];
    r.leaked_blocks += w->destroyed ? w->blocks_at_destroy : w->counting->live_blocks;
    r.leaked_bytes += w->destroyed ? w->bytes_at_destroy : w->counting->live_bytes;
  }
  r.next_ok = next_call_works();
  if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(4);
  _exit(0);
}

/* ---- the driver ------------------------------------------------------------------- */

typedef struct totals_t {
  uint64_t runs, errors, leaks, crashes, hangs, undocumented, next_failed, skipped_tests, held,
      plain_failures; /* a test failing in a run where no allocation failed */
} totals_t;

static int g_verbose, g_progress;
static uint64_t g_dense = 8, g_growth = 30;

/* Runs one (test, point, mode) in a child; returns 1 when the run reached its point. */
static int one_run(const oom_test_t *t, uint64_t n, int persist, totals_t *tot, int *skipped) {
  int fds[2], st = 0, bad = 0;
  pid_t pid;
  run_result_t r;
  ssize_t got = 0;
  const char *mode = persist ? "persistent" : "transient";
  if (pipe(fds) != 0) {
    perror("oom: pipe");
    exit(2);
  }
  fflush(stdout);
  pid = fork();
  if (pid < 0) {
    perror("oom: fork");
    exit(2);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(g_timeout_s * 2 + 10); /* the child's own cleanup hanging */
    child_run(t, n, persist, fds[1]);
  }
  close(fds[1]);
  memset(&r, 0, sizeof r);
  for (;;) {
    ssize_t k = read(fds[0], (char *)&r + got, sizeof r - (size_t)got);
    if (k > 0) {
      got += k;
      if ((size_t)got == sizeof r) break;
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  close(fds[0]);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  tot->runs++;
  if ((size_t)got != sizeof r || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
      tot->hangs++;
      printf("FAIL %s [%s, %s %llu]: hang (cleanup after the test did not end)\n", t->name,
             getenv("CUBERT_CTS_DRIVER"), mode, (unsigned long long)n);
    } else {
      tot->crashes++;
      printf("FAIL %s [%s, %s %llu]: crash (%s %d)\n", t->name, getenv("CUBERT_CTS_DRIVER"),
             mode, (unsigned long long)n, WIFSIGNALED(st) ? "signal" : "exit status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    return 1; /* keep going: the next point may run */
  }
  if (r.outcome == OUT_SKIP) {
    *skipped = 1;
    if (g_verbose) printf("skip %s: %s\n", t->name, r.message);
    return 0;
  }
  if (r.outcome == OUT_HANG) {
    tot->hangs++;
    printf("FAIL %s [%s, %s %llu]: hang: %s\n", t->name, getenv("CUBERT_CTS_DRIVER"), mode,
           (unsigned long long)n, r.message);
    return 1;
  }
  if (r.outcome == OUT_HELD) {
    tot->errors++;
    tot->held++;
    if (g_verbose)
      printf("held %s [%s, %s %llu]: %s\n", t->name, getenv("CUBERT_CTS_DRIVER"), mode,
             (unsigned long long)n, r.message);
    return r.failed != 0;
  }
  if (r.outcome == OUT_ASSERT) {
    tot->errors++;
    if (n == 0 || r.failed == 0) {
      bad = 1;
      tot->plain_failures++;
      printf("FAIL %s [%s, %s %llu]: fails without an injected failure: %s\n", t->name,
             getenv("CUBERT_CTS_DRIVER"), mode, (unsigned long long)n, r.message);
    }
  }
  if (r.undocumented) {
    tot->undocumented++;
    bad = 1;
    printf("FAIL %s [%s, %s %llu]: undocumented status: %s\n", t->name,
           getenv("CUBERT_CTS_DRIVER"), mode, (unsigned long long)n, r.message);
  }
  if (r.leaked_blocks != 0) {
    tot->leaks++;
    bad = 1;
    printf("FAIL %s [%s, %s %llu]: leaked %lld blocks (%lld bytes)%s%s\n", t->name,
           getenv("CUBERT_CTS_DRIVER"), mode, (unsigned long long)n,
           (long long)r.leaked_blocks, (long long)r.leaked_bytes, r.message[0] ? " after: " : "",
           r.message);
  }
  if (!r.next_ok) {
    tot->next_failed++;
    bad = 1;
    printf("FAIL %s [%s, %s %llu]: the next valid call failed\n", t->name,
           getenv("CUBERT_CTS_DRIVER"), mode, (unsigned long long)n);
  }
  if (g_verbose && !bad)
    printf("ok   %s [%s, %s %llu]: %s, %llu calls%s%s\n", t->name, getenv("CUBERT_CTS_DRIVER"),
           mode, (unsigned long long)n, r.outcome == OUT_PASS ? "passed" : "error",
           (unsigned long long)r.calls, r.message[0] ? ": " : "", r.message);
  return r.failed != 0;
}

static int selected(const char *name, const char *prefixes) {
  const char *p = prefixes;
  if (strncmp(name, "cts_", 4) != 0) return 0;
  if (!p || !*p) return 1;
  while (*p) {
    size_t len;
    while (*p == ' ' || *p == ',') p++;
    len = strcspn(p, " ,");
    if (len && strncmp(name, p, len) == 0) return 1;
    p += len;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_test_points(const oom_test_t *t, uint64_t max_points, totals_t *tot);

static void run_test(const oom_test_t *t, uint64_t max_points, totals_t *tot) {
  double t0 = now_s();
  uint64_t runs0 = tot->runs, errors0 = tot->errors;
  run_test_points(t, max_points, tot);
  if (g_progress)
    printf("  %-60s %5llu runs, %5llu errors, %.1f s\n", t->name,
           (unsigned long long)(tot->runs - runs0), (unsigned long long)(tot->errors - errors0),
           now_s() - t0);
}

static void run_test_points(const oom_test_t *t, uint64_t max_points, totals_t *tot) {
  int persist, skipped = 0;
  /* the run without failure first: a test that skips is skipped at every point */
  one_run(t, 0, 0, tot, &skipped);
  if (skipped) {
    tot->runs--;
    tot->skipped_tests++;
    return;
  }
  for (persist = 0; persist <= 1; persist++) {
    uint64_t n;
    /* every point up to g_dense (client creation and the first operations), then
     * points g_growth percent apart (OOM_DENSE=0: every point, however many) */
    for (n = 1; !max_points || n <= max_points;) {
      uint64_t step;
      if (!one_run(t, n, persist, tot, &skipped)) break;
      step = (!g_dense || n < g_dense) ? 1 : (n - g_dense) * g_growth / 100u;
      n += step ? step : 1;
    }
  }
}

static int cmp_test(const void *a, const void *b) {
  return strcmp(((const oom_test_t *)a)->name, ((const oom_test_t *)b)->name);
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 0) : fallback;
}

/* One server: J worker processes take the tests in turn, each writes its totals back. */
static int run_server(const char *server, const char *prefixes, unsigned jobs,
                      uint64_t max_points) {
  totals_t sum;
  unsigned j;
  pid_t pids[64];
  int fds[64];
  size_t selected_count = 0, i;
  int status = 0;
  for (i = 0; i < g_count; i++) selected_count += (size_t)selected(g_tests[i].name, prefixes);
  setenv("CUBERT_CTS_DRIVER", server, 1);
  if (g_dense)
    printf("== oom: %s server, %zu tests, transient and persistent failures at calls 1..%llu, then "
           "%llu%% apart, until a run ends before its failure point\n",
           server, selected_count, (unsigned long long)g_dense, (unsigned long long)g_growth);
  else
    printf("== oom: %s server, %zu tests, transient and persistent failures at every call, until a "
           "run ends before its failure point\n", server, selected_count);
  fflush(stdout);
  memset(&sum, 0, sizeof sum);
  for (j = 0; j < jobs; j++) {
    int p[2];
    if (pipe(p) != 0) return 2;
    pids[j] = fork();
    if (pids[j] == 0) {
      totals_t tot;
      size_t k = 0;
      close(p[0]);
      memset(&tot, 0, sizeof tot);
      for (i = 0; i < g_count; i++) {
        if (!selected(g_tests[i].name, prefixes)) continue;
        if (k++ % jobs == j) run_test(&g_tests[i], max_points, &tot);
      }
      fflush(stdout);
      if (write(p[1], &tot, sizeof tot) != (ssize_t)sizeof tot) _exit(4);
      _exit(0);
    }
    close(p[1]);
    fds[j] = p[0];
  }
  for (j = 0; j < jobs; j++) {
    totals_t tot;
    int st = 0;
    memset(&tot, 0, sizeof tot);
    if (read(fds[j], &tot, sizeof tot) != (ssize_t)sizeof tot) status = 1;
    close(fds[j]);
    waitpid(pids[j], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
    sum.runs += tot.runs;
    sum.errors += tot.errors;
    sum.leaks += tot.leaks;
    sum.crashes += tot.crashes;
    sum.hangs += tot.hangs;
    sum.undocumented += tot.undocumented;
    sum.next_failed += tot.next_failed;
    sum.skipped_tests += tot.skipped_tests;
    sum.held += tot.held;
    sum.plain_failures += tot.plain_failures;
  }
  printf("%s: %llu errors out of %llu runs, %llu leaks", server, (unsigned long long)sum.errors,
         (unsigned long long)sum.runs, (unsigned long long)sum.leaks);
  if (sum.crashes || sum.hangs || sum.undocumented || sum.next_failed || sum.plain_failures)
    printf(", %llu crashes, %llu hangs, %llu undocumented statuses, %llu failed next calls, "
           "%llu failures without an injected failure",
           (unsigned long long)sum.crashes, (unsigned long long)sum.hangs,
           (unsigned long long)sum.undocumented, (unsigned long long)sum.next_failed,
           (unsigned long long)sum.plain_failures);
  if (sum.skipped_tests)
    printf(" (%llu tests skipped on this server)", (unsigned long long)sum.skipped_tests);
  if (sum.held)
    printf(" (%llu of the errors stopped inside an exclusive section: not checked for leaks)",
           (unsigned long long)sum.held);
  printf("\n");
  fflush(stdout);
  if (sum.leaks || sum.crashes || sum.hangs || sum.undocumented || sum.next_failed ||
      sum.plain_failures)
    status = 1;
  return status;
}

int main(int argc, char **argv) {
  const char *servers = getenv("OOM_DRIVERS");
  const char *prefixes = getenv("OOM_TESTS");
  unsigned jobs = (unsigned)env_u64("OOM_JOBS", 2);
  uint64_t max_points = env_u64("OOM_MAX_POINTS", 0);
  char list[256];
  char *save = NULL, *s;
  int status = 0;
  (void)argc;
  (void)argv;
  g_timeout_s = (unsigned)env_u64("OOM_TIMEOUT", 30);
  g_verbose = (int)env_u64("OOM_VERBOSE", 0);
  g_progress = g_verbose || env_u64("OOM_PROGRESS", 0);
  g_dense = env_u64("OOM_DENSE", 8);
  g_growth = env_u64("OOM_GROWTH", 30);
  if (jobs < 1) jobs = 1;
  if (jobs > 64) jobs = 64;
  if (!servers || !*servers) servers = "cpu deterministic inline";
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (g_count) qsort(g_tests, g_count, sizeof(*g_tests), cmp_test);
  if (getenv("OOM_RUN") && *getenv("OOM_RUN")) {
    /* OOM_RUN=t41 / p41: one run (transient / persistent point 41) of the first
     * selected test, in this process (for a debugger); the result to stdout */
    const char *spec = getenv("OOM_RUN");
    size_t k;
    for (k = 0; k < g_count; k++)
      if (selected(g_tests[k].name, prefixes)) {
        printf("oom: %s, %s point %s\n", g_tests[k].name,
               spec[0] == 'p' ? "persistent" : "transient", spec + 1);
        child_run(&g_tests[k], strtoull(spec + 1, NULL, 10), spec[0] == 'p', 1);
      }
    return 2;
  }
  snprintf(list, sizeof list, "%s", servers);
  for (s = strtok_r(list, " ,", &save); s; s = strtok_r(NULL, " ,", &save))
    if (run_server(s, prefixes, jobs, max_points) != 0) status = 1;
  printf("oom: %s\n", status ? "FAILED" : "ok");
  free(g_tests);
  return status;
}
