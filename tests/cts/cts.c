/* SPDX-License-Identifier: MIT */
/* tests/cts/cts.c: the device under test for the conformance suite (see cts.h). */
#include "cts.h"

#include <time.h>

#include "cubert/driver/server.h"
#include "cubert/inline.h"
#if !CUBERT_CTS_INLINE_ONLY
#include "cubert/cpu.h"
#include "cubert/os.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"
#include "memory/memory.h"
/* tests/cuda/test_cuda_cts_support.c: 0 when there is a CUDA driver to
 * test (the fake one gets its host kernel runner), else the skip line. */
int cts_cuda_prepare(char *skip, size_t size);
/* 1 when the CUDA devices can all_reduce (NCCL loads), else 0 and why. */
int cts_cuda_collectives(char *why, size_t size);
#endif
#endif

#if CUBERT_CTS_INLINE_ONLY
/* ---- the inline driver alone (no environment, no OS layer) ---- */

cts_driver_t cts_driver(void) { return CTS_DRIVER_INLINE; }

/* A monotonic clock without an OS: each reading is 1 us after the last. */
static uint64_t counting_now_ns(void *self) {
  uint64_t *now = (uint64_t *)self;
  *now += 1000u;
  return *now;
}

static uint64_t g_now_ns;

static cubert_profile_clock_t cts_clock(void) {
  cubert_profile_clock_t clock;
  clock.self = &g_now_ns;
  clock.now_ns = counting_now_ns;
  return clock;
}

void cts_sleep_ms(uint32_t ms) { g_now_ns += (uint64_t)ms * 1000000u; }

static int race_on(void) { return (cubert_config_features() & CUBERT_FEATURE_RACE_CHECKER) != 0; }

uint16_t cts_device_type(void) { return CUBERT_INLINE_DEVICE_TYPE; }

cubert_layout_policy_t cts_layout_policy(void) {
  cubert_layout_policy_t p;
  p.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  p.mem_alignment = 8;
  return p;
}

static cubert_status_t inline_create(cubert_allocator_t a, const cts_options_t *o,
                                     cubert_client_t **out, cubert_error_t *err) {
  /* the SubSlices preset's pages (1 GiB / 2 by default; 32 MiB and more for a
   * sliced pool) cannot fit the target's RAM: the same shape at its scale, a
   * sliced pool of 64 KiB pages for small buffers and a direct pool (exact
   * sizes) above, as docs/embedding.md advises for small targets */
  static const cubert_memory_pool_options_t k_pools[2] = {
      {CUBERT_MEMORY_POOL_SLICED, 64 * 1024, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE, 0,
       CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE},
      {CUBERT_MEMORY_POOL_DIRECT, 0, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE, 0, 0,
       CUBERT_MEMORY_NONE}};
  cubert_inline_options_t io;
  cubert_inline_options_initialize(&io);
  io.device_index = o->device_index;
  io.max_streams = o->max_streams ? o->max_streams : 8;
  io.memory_size = o->memory_size;
  io.max_handles = o->max_handles;
  io.bounds_check = o->bounds_check;
  io.race_check = (uint32_t)(race_on() || o->race_check_forced);
  io.clock = cts_clock(); /* no lock, stream 0 for every call: one thread */
  io.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  io.memory_config.pools = k_pools;
  io.memory_config.pool_count = 2;
  return cubert_inline_client_create(a, &io, out, err);
}

cubert_status_t cts_client_create(cubert_allocator_t allocator, const cts_options_t *options,
                                  cubert_client_t **out_client, cubert_error_t *out_error) {
  cts_options_t none;
  if (!options) {
    memset(&none, 0, sizeof none);
    options = &none;
  }
  return inline_create(allocator, options, out_client, out_error);
}

#else /* !CUBERT_CTS_INLINE_ONLY */

/* Deterministic runs: a failing test prints its seed and choice log at exit. */
static cubert_client_t *g_sim_client;

static void print_sim_run(void) {
  cubert_cpu_sim_info_t info;
  size_t i;
  if (!g_sim_client || cubert_cpu_sim_info(g_sim_client, &info, NULL) != CUBERT_STATUS_OK) return;
  fprintf(stderr, "deterministic run: seed %llu trace 0x%016llx steps %llu log [",
          (unsigned long long)info.seed, (unsigned long long)info.trace_hash,
          (unsigned long long)info.steps);
  for (i = 0; i < info.log_len; i++) fprintf(stderr, "%s%u", i ? "," : "", info.log[i]);
  fprintf(stderr, "]%s\n", info.log_truncated ? " (truncated)" : "");
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 0) : fallback;
}

/* On unless CUBERT_CTS_RACE=0 or the library has no race checker (make check-minimal). */
static int race_on(void) {
  return env_u64("CUBERT_CTS_RACE", 1) != 0 &&
         (cubert_config_features() & CUBERT_FEATURE_RACE_CHECKER) != 0;
}

cts_driver_t cts_driver(void) {
  const char *v = getenv("CUBERT_CTS_DRIVER");
  const char *mode = getenv("CUBERT_CTS_MODE");
  if (!v || !*v) return mode && strcmp(mode, "deterministic") == 0 ? CTS_DRIVER_DETERMINISTIC
                                                                   : CTS_DRIVER_CPU;
  if (strcmp(v, "cpu") == 0) return CTS_DRIVER_CPU;
  if (strcmp(v, "deterministic") == 0) return CTS_DRIVER_DETERMINISTIC;
  if (strcmp(v, "inline") == 0) return CTS_DRIVER_INLINE;
  if (strcmp(v, "cuda") == 0) return CTS_DRIVER_CUDA;
  test_fail(__FILE__, __LINE__,
            "CUBERT_CTS_DRIVER=%s: expected cpu, deterministic, inline or cuda", v);
}

uint16_t cts_device_type(void) {
  switch (cts_driver()) {
    case CTS_DRIVER_INLINE: return CUBERT_INLINE_DEVICE_TYPE;
    case CTS_DRIVER_CUDA: return 2; /* CUBERT_CUDA_DEVICE_TYPE (cubert/cuda.h) */
    default: return CUBERT_CPU_DEVICE_TYPE;
  }
}

cubert_layout_policy_t cts_layout_policy(void) {
  cubert_layout_policy_t p;
  p.kind = cts_driver() == CTS_DRIVER_CUDA ? CUBERT_LAYOUT_POLICY_PITCHED
                                           : CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  p.mem_alignment = cts_driver() == CTS_DRIVER_CUDA ? 512 : 8;
  return p;
}

/* The inline device's lock: made here, freed when the device is gone. */
typedef struct inline_lock_t {
  cubert_lock_t lock;
  cubert_allocator_t allocator;
} inline_lock_t;

static void inline_lock_release(void *self) {
  inline_lock_t *l = (inline_lock_t *)self;
  cubert_allocator_t a = l->allocator;
  cubert_os_lock_destroy(l->lock);
  cubert_allocator_free(a, l, sizeof(*l), 0);
}

static cubert_status_t inline_create(cubert_allocator_t a, const cts_options_t *o,
                                     cubert_client_t **out, cubert_error_t *err) {
  cubert_inline_options_t io;
  inline_lock_t *l = NULL;
  cubert_status_t status;
  if (cubert_allocator_malloc(a, sizeof(*l), 0, (void **)&l, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cts: lock");
  l->allocator = a;
  if (cubert_os_lock_create(a, &l->lock, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(a, l, sizeof(*l), 0);
    return cubert_error_set(err, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cts: lock");
  }
  cubert_inline_options_initialize(&io);
  io.device_index = o->device_index;
  io.max_streams = o->max_streams ? o->max_streams : 8;
  io.memory_size = o->memory_size;
  io.max_handles = o->max_handles;
  io.bounds_check = o->bounds_check;
  io.race_check = (uint32_t)(race_on() || o->race_check_forced);
  io.lock = l->lock;
  io.clock = cubert_os_clock();
  io.stream_source = cubert_os_stream_source;
  io.release = inline_lock_release;
  io.release_self = l;
  status = cubert_inline_client_create(a, &io, out, err);
  if (status != CUBERT_STATUS_OK) inline_lock_release(l);
  return status;
}

/* A CUDA device (a test without a CUDA driver to run on is skipped, with
 * the reason). Device indexes share the GPUs there are (index mod count). */
static cubert_status_t cuda_create(cubert_allocator_t a, const cts_options_t *o,
                                   cubert_client_t **out, cubert_error_t *err) {
#if defined(CUBERT_HAVE_BACKEND_CUDA)
  static char skip[CUBERT_ERROR_REASON_SIZE + 16];
  cubert_cuda_options_t co;
  uint32_t gpus = 1;
  if (cts_cuda_prepare(skip, sizeof skip) != 0) test_skip(__FILE__, __LINE__, skip);
  if (cubert_cuda_device_count(&gpus, NULL) != CUBERT_STATUS_OK || gpus == 0) gpus = 1;
  cubert_cuda_options_initialize(&co);
  co.device_index = o->device_index;
  co.ordinal = o->device_index % gpus;
  co.max_streams = o->max_streams ? o->max_streams : 8;
  co.memory_size = o->memory_size;
  co.max_handles = o->max_handles;
  co.bounds_check = o->bounds_check;
  co.race_check = env_u64("CUBERT_CTS_RACE", 1) != 0;
  co.collective_timeout_ms = o->collective_timeout_ms;
  return cubert_cuda_client_create(a, &co, out, err);
#else
  (void)a;
  (void)o;
  (void)out;
  (void)err;
  test_skip(__FILE__, __LINE__,
            "CUDA unavailable: this build has no CUDA driver (make CUDA=1)");
#endif
}

cubert_status_t cts_client_create(cubert_allocator_t allocator, const cts_options_t *options,
                                  cubert_client_t **out_client, cubert_error_t *out_error) {
  cubert_cpu_options_t o;
  cts_options_t none;
  if (!options) {
    memset(&none, 0, sizeof none);
    options = &none;
  }
  if (cts_driver() == CTS_DRIVER_INLINE && !options->threaded)
    return inline_create(allocator, options, out_client, out_error);
  if (cts_driver() == CTS_DRIVER_CUDA && !options->threaded)
    return cuda_create(allocator, options, out_client, out_error);
  cubert_cpu_options_initialize(&o);
  o.device_index = options->device_index;
  o.max_streams = options->max_streams ? options->max_streams : 8;
  o.workers = options->workers ? options->workers : 2;
  if (options->memory_size) o.memory_size = options->memory_size;
  o.max_handles = options->max_handles;
  o.bounds_check = options->bounds_check;
  o.collective_timeout_ms = options->collective_timeout_ms;
  if (cts_driver() == CTS_DRIVER_DETERMINISTIC && !options->threaded) {
    o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
    o.seed = env_u64("CUBERT_CTS_SEED", 1);
  }
  o.race_check = (uint32_t)(race_on() || options->race_check_forced);
  return cubert_cpu_client_create(allocator, &o, out_client, out_error);
}


void cts_sleep_ms(uint32_t ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000u);
  ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
  nanosleep(&ts, NULL);
}
#endif /* CUBERT_CTS_INLINE_ONLY */

const char *cts_server_name(void) {
  switch (cts_driver()) {
    case CTS_DRIVER_DETERMINISTIC: return "deterministic";
    case CTS_DRIVER_INLINE: return "inline";
    case CTS_DRIVER_CUDA: return "cuda";
    case CTS_DRIVER_CPU:
    default: return "cpu";
  }
}

int cts_is_threaded(void) { return cts_driver() == CTS_DRIVER_CPU; }

void cts_setup_with(cts_env_t *env, const cts_options_t *options) {
  cubert_error_t err;
  char msg[256];
  memset(env, 0, sizeof(*env));
  env->allocator = counting_allocator_initialize(&env->counting);
  env->deterministic = cts_driver() == CTS_DRIVER_DETERMINISTIC && !options->threaded;
  env->race_check = (uint32_t)race_on();
  if (cts_client_create(env->allocator, options, &env->client, &err) != CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "cts_setup: cannot create the %s device: %s", cts_server_name(),
              msg);
  }
#if !CUBERT_CTS_INLINE_ONLY
  if (env->deterministic) {
    static int registered;
    g_sim_client = env->client;
    if (!registered) registered = atexit(print_sim_run) == 0;
  }
#endif
}

void cts_setup(cts_env_t *env, uint32_t device_index) {
  cts_options_t o;
  memset(&o, 0, sizeof o);
  o.device_index = device_index;
  cts_setup_with(env, &o);
}

void cts_teardown(cts_env_t *env) {
  if (env->race_check) {
    cubert_race_counters_t counters;
    cubert_race_report_t report;
    char line[512];
    CHECK_OK(cubert_client_race_counters(env->client, &counters, NULL));
    if (counters.reports && cubert_client_race_last_report(env->client, &report,
                                                           NULL) == CUBERT_STATUS_OK) {
      cubert_race_report_format(&report, line, sizeof line);
      test_fail(__FILE__, __LINE__, "%llu race report(s), last: %s",
                (unsigned long long)counters.reports, line);
    }
  }
#if !CUBERT_CTS_INLINE_ONLY
  if (g_sim_client == env->client) g_sim_client = NULL;
#endif
  cubert_client_release(env->client);
  env->client = NULL;
  CHECK_MSG(env->counting.live_blocks == 0, "leaked %lld blocks (%lld bytes)",
            (long long)env->counting.live_blocks, (long long)env->counting.live_bytes);
  CHECK_EQ_U64(env->counting.bad_frees, 0);
  counting_allocator_destroy(&env->counting);
}

int cts_has_collectives(cubert_client_t *client) {
  const cubert_driver_t *driver = NULL;
  void *self = NULL;
  if (cubert_server_driver_of(client, &driver, &self) != CUBERT_STATUS_OK) return 0;
  if (!driver->collective) return 0;
#if CUBERT_CTS_INLINE_ONLY
  return 1;
#else
#if defined(CUBERT_HAVE_BACKEND_CUDA)
  if (cts_driver() == CTS_DRIVER_CUDA) return cts_cuda_collectives(NULL, 0); /* NCCL loads */
#endif
  {
    cubert_cpu_sim_info_t info; /* the CPU driver refuses them in deterministic mode */
    return cubert_cpu_sim_info(client, &info, NULL) != CUBERT_STATUS_OK || !info.deterministic;
  }
#endif
}
