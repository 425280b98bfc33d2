/* SPDX-License-Identifier: MIT */
/* tests/cts/cts_driver_inline.c: the inline driver's conformance run (cts.h):
 * "inline". Hosted: a lock and a clock from the OS layer, per-thread stream ids.
 * In a CUBERT_CTS_INLINE_ONLY build (the embedded harness: no environment, no
 * thread, no OS layer): no lock, stream 0 for every call, a counting clock, and
 * a small target's pools. */
#include "cts.h"

#include "cubert/inline.h"
#if !CUBERT_CTS_INLINE_ONLY
#include "cubert/os.h"
#endif

/* Collectives: the inline driver has none. */
static void inline_no_collectives(uint32_t devices) {
  (void)devices;
  TEST_SKIP("collectives: the inline driver has none (it answers UNSUPPORTED)");
}

static void inline_options(const cts_options_t *o, cubert_inline_options_t *io) {
  cubert_inline_options_initialize(io);
  io->device = cts_device_options(o);
}

#if CUBERT_CTS_INLINE_ONLY
/* A monotonic clock without an OS: each reading is 1 us after the last. */
static uint64_t g_now_ns;

static uint64_t counting_now_ns(void *self) {
  uint64_t *now = (uint64_t *)self;
  *now += 1000u;
  return *now;
}

void cts_inline_clock_advance_ns(uint64_t ns);
void cts_inline_clock_advance_ns(uint64_t ns) { g_now_ns += ns; }

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
  inline_options(o, &io);
  io.clock.self = &g_now_ns; /* no lock, stream 0 for every call: one thread */
  io.clock.now_ns = counting_now_ns;
  io.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  io.memory_config.pools = k_pools;
  io.memory_config.pool_count = 2;
  if (o->memory_config) io.memory_config = *o->memory_config;
  return cubert_inline_client_create(a, &io, out, err);
}
#else
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
  inline_options(o, &io);
  io.lock = l->lock;
  io.clock = cubert_os_clock();
  io.stream_source = cubert_os_stream_source;
  io.release = inline_lock_release;
  io.release_self = l;
  if (o->memory_config) io.memory_config = *o->memory_config;
  status = cubert_inline_client_create(a, &io, out, err);
  if (status != CUBERT_STATUS_OK) inline_lock_release(l);
  return status;
}
#endif

static const cts_driver_t g_cts_inline = {
    "inline", "the inline driver (synchronous: work runs at submit, no thread)",
    CTS_DRIVER_SYNCHRONOUS, CUBERT_INLINE_DEVICE_TYPE, {CUBERT_LAYOUT_POLICY_CONTIGUOUS, 8},
    inline_create, NULL, inline_no_collectives, NULL, NULL, NULL, NULL, NULL};

CTS_DRIVER_REGISTER(g_cts_inline)
