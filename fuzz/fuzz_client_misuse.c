/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_client_misuse.c: the client API misused from two threads over
 * devices of different types (issue 25, "Integrity under misuse").
 *
 * Devices (made from the input's options, whose enums are random: an
 * invalid value must be refused with its record, then the device is made
 * with valid ones):
 *   0  the threaded CPU driver,          {CPU, 0}
 *   1  the inline driver (a host lock),  {INLINE, 0}    same index as 0
 *   2  the inline driver,                {INLINE, 256}  the old 8-bit tag of 1
 *   3  the CPU driver, deterministic,    {CPU, 1}       used by thread 0 only
 * Two threads, each with its own clone of every device's client, run the
 * operations of their half of the input against one shared pool of handles:
 * a handle created on one thread is read, cloned, offset, launched and
 * released by the other, through any device's client. Operations: create
 * (slices, tensors with zero dimensions and NULL data), read, read_async,
 * clone, offset, release, launch (buffer / scalar counts up to UINT32_MAX over
 * arrays of their true length, cube count kinds outside the enum, dynamic
 * counts, buffer_align values, misaligned sub-handles), forged handles
 * (device index or key changed), sync, sync_async, completion_wait(NULL).
 * Teardown may arm a read_async, release every client of its device, and
 * only then wait on it.
 *
 * Invariants: no crash, no sanitizer report, no leak (every block of the
 * injected allocator returned, no device left registered); every call returns
 * the code the rules predict (DEVICE_MISMATCH for a handle of another device,
 * INVALID_ARGUMENT for counts, kinds and misaligned views, ...) and fills the
 * error record with it (status equal, a kind, a reason for refusals).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/inline.h"
#include "cubert/kernel.h"
#include "cubert_kernels.h"
#include "fuzz.h"
#include "fuzz_alloc.h"

#define FUZZ_CHECK(cond)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "fuzz_client_misuse: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                                       \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

#define NDEV 4
#define DET_DEV 3 /* the deterministic device: thread 0 and the main thread only */
#define NPOOL 32
#define MAX_OPS 40
#define MAX_SIZE 64

CUBERT_KERNEL_DESCRIPTOR(fm_add, ck_add_scalar_u32, 1, 1, 0, 4, 1, 1);

typedef struct locked_alloc_t {
  pthread_mutex_t mu;
  fuzz_alloc_t fa;
} locked_alloc_t;

static void *locked_fn(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
  locked_alloc_t *l = (locked_alloc_t *)self;
  void *r;
  pthread_mutex_lock(&l->mu);
  r = fuzz_alloc_fn_(&l->fa, ptr, old_size, new_size, align);
  pthread_mutex_unlock(&l->mu);
  return r;
}

typedef struct entry_t {
  cubert_handle_t h;
  int dev;
  int used, busy;
} entry_t;

typedef struct world_t {
  locked_alloc_t la;
  cubert_allocator_t al;
  cubert_client_t *main[NDEV];
  cubert_lock_t locks[NDEV];
  pthread_mutex_t mu;
  entry_t pool[NPOOL];
} world_t;

typedef struct thread_t {
  world_t *w;
  int tid;
  fuzz_reader_t r;
  cubert_client_t *cl[NDEV];
} thread_t;

/* ---- records ---- */

/* A failed call: status in the record, a kind; refusals carry a reason. */
static void check_record(cubert_status_t st, const cubert_error_t *e) {
  if (st == CUBERT_STATUS_OK) return;
  FUZZ_CHECK(e->status == st);
  FUZZ_CHECK(e->depth > 0);
  if (st == CUBERT_STATUS_INVALID_ARGUMENT || st == CUBERT_STATUS_DEVICE_MISMATCH)
    FUZZ_CHECK(e->reason[0] != '\0');
}

static void expect(cubert_status_t st, const cubert_error_t *e, cubert_status_t want) {
  if (st != want) {
    fprintf(stderr, "fuzz_client_misuse: got %s, want %s (%s)\n", cubert_status_name(st),
            cubert_status_name(want), e->reason);
    FUZZ_CHECK(st == want);
  }
  check_record(st, e);
}

/* ---- the pool ---- */

static int pool_take(world_t *w, uint8_t pick) {
  int i, k = -1;
  pthread_mutex_lock(&w->mu);
  for (i = 0; i < NPOOL; i++) {
    int j = (pick + i) % NPOOL;
    if (w->pool[j].used && !w->pool[j].busy) {
      w->pool[j].busy = 1;
      k = j;
      break;
    }
  }
  pthread_mutex_unlock(&w->mu);
  return k;
}

static void pool_put(world_t *w, int k) {
  pthread_mutex_lock(&w->mu);
  w->pool[k].busy = 0;
  pthread_mutex_unlock(&w->mu);
}

static void pool_drop(world_t *w, int k) {
  pthread_mutex_lock(&w->mu);
  w->pool[k].busy = 0;
  w->pool[k].used = 0;
  pthread_mutex_unlock(&w->mu);
}

/* Keep `h` (of device dev, released through `c` when the pool is full). */
static void pool_add(world_t *w, cubert_client_t *c, int dev, const cubert_handle_t *h) {
  int i;
  cubert_error_t e;
  pthread_mutex_lock(&w->mu);
  for (i = 0; i < NPOOL; i++)
    if (!w->pool[i].used) {
      w->pool[i].used = 1;
      w->pool[i].busy = 0;
      w->pool[i].dev = dev;
      w->pool[i].h = *h;
      pthread_mutex_unlock(&w->mu);
      return;
    }
  pthread_mutex_unlock(&w->mu);
  expect(cubert_client_handle_release(c, h, &e), &e, CUBERT_STATUS_OK);
}

/* ---- devices ---- */

static const uint32_t k_bounds[] = {0, 1, 2, 3, 9, 0x7FFFFFFFu};
static const uint32_t k_config_kinds[] = {0, 1, 2, 2, 3, 77};

typedef struct dev_opts_t {
  uint32_t bounds, config_kind, pool_count, pools_null, mode, profile;
} dev_opts_t;

static dev_opts_t read_opts(fuzz_reader_t *r) {
  dev_opts_t o;
  uint8_t a = fuzz_u8(r), b = fuzz_u8(r);
  o.bounds = k_bounds[a % 6u];
  o.config_kind = k_config_kinds[(a >> 3) % 6u];
  o.pool_count = (b & 1u) ? 1u : ((b & 2u) ? 0u : 1u);
  o.pools_null = (b >> 2) & 1u;
  o.mode = (b >> 3) % 5u == 4u ? 7u : 0u;     /* 7: not a cpu mode */
  o.profile = (b >> 5) % 4u == 3u ? 99u : 0u; /* 99: not a profile level */
  return o;
}

static int opts_valid(const dev_opts_t *o, int cpu) {
  if (o->bounds > 3 || o->config_kind > 2) return 0;
  if (o->config_kind == 2 && (o->pool_count == 0 || o->pools_null)) return 0;
  if (cpu && (o->mode != 0 || o->profile != 0)) return 0;
  return 1;
}

static void fill_config(cubert_memory_configuration_t *c, const dev_opts_t *o,
                        const cubert_memory_pool_options_t *pool) {
  c->kind = (cubert_memory_configuration_kind_t)o->config_kind;
  c->pools = o->pools_null ? NULL : pool;
  c->pool_count = o->pool_count;
}

static cubert_status_t make_device(world_t *w, int dev, const dev_opts_t *o, uint64_t seed,
                                   cubert_error_t *e) {
  cubert_memory_pool_options_t pool = cubert_memory_pool_direct(0);
  if (dev == 0 || dev == DET_DEV) {
    cubert_cpu_options_t c;
    cubert_cpu_options_initialize(&c);
    c.device.index = dev == 0 ? 0 : 1;
    c.device.max_streams = 4;
    c.workers = 1;
    c.device.memory_size = 1u << 20;
    c.ignore_environment = 1;
    c.device.bounds_check = (cubert_bounds_check_mode_t)o->bounds;
    c.profile_level = (cubert_profile_level_t)o->profile;
    c.mode = dev == DET_DEV && o->mode == 0 ? CUBERT_CPU_MODE_DETERMINISTIC : o->mode;
    c.seed = seed;
    fill_config(&c.memory_config, o, &pool);
    return cubert_cpu_client_create(w->al, &c, &w->main[dev], e);
  } else {
    cubert_inline_options_t c;
    cubert_inline_options_initialize(&c);
    c.device.index = dev == 1 ? 0 : 256;
    c.device.max_streams = 4;
    c.device.memory_size = 1u << 20;
    c.lock = w->locks[dev];
    c.device.bounds_check = (cubert_bounds_check_mode_t)o->bounds;
    fill_config(&c.memory_config, o, &pool);
    return cubert_inline_client_create(w->al, &c, &w->main[dev], e);
  }
}

static void create_devices(world_t *w, fuzz_reader_t *r) {
  int d;
  uint64_t seed = fuzz_u64(r);
  for (d = 0; d < NDEV; d++) {
    dev_opts_t o = read_opts(r);
    cubert_error_t e;
    cubert_status_t st;
    int cpu = d == 0 || d == DET_DEV;
    if (!cpu) FUZZ_CHECK(cubert_os_lock_create(w->al, &w->locks[d], NULL) == CUBERT_STATUS_OK);
    st = make_device(w, d, &o, seed, &e);
    if (opts_valid(&o, cpu)) {
      expect(st, &e, CUBERT_STATUS_OK);
      continue;
    }
    /* a refused create: its record, and nothing made */
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_ARGUMENT || st == CUBERT_STATUS_CONFIG_INVALID);
    check_record(st, &e);
    FUZZ_CHECK(e.reason[0] != '\0');
    o.bounds = o.bounds % 3u;
    o.config_kind = 2;
    o.pool_count = 1;
    o.pools_null = 0;
    o.mode = 0;
    o.profile = 0;
    expect(make_device(w, d, &o, seed, &e), &e, CUBERT_STATUS_OK);
  }
}

/* ---- operations ---- */

static int pick_dev(thread_t *t, uint8_t b) {
  int d = b % NDEV;
  if (t->tid != 0 && d == DET_DEV) d = b % 3;
  return d;
}

static int queued_ok(cubert_status_t st) {
  return st == CUBERT_STATUS_OK || st == CUBERT_STATUS_SERVER_UNHEALTHY;
}

static void op_create(thread_t *t) {
  uint8_t buf[MAX_SIZE];
  uint8_t b = fuzz_u8(&t->r);
  int d = pick_dev(t, b);
  uint64_t size = fuzz_u8(&t->r) % (MAX_SIZE + 1u);
  cubert_handle_t h;
  cubert_error_t e;
  memset(buf, (int)b, sizeof buf);
  expect(cubert_client_create_from_slice(t->cl[d], size || (b & 0x80) ? buf : NULL, size, &h, &e),
         &e, CUBERT_STATUS_OK);
  FUZZ_CHECK(h.device_key >> 16 == cubert_client_device(t->cl[d]).type_id);
  pool_add(t->w, t->cl[d], d, &h);
}

/* create_tensor: NULL data is accepted exactly when the tensor has no bytes. */
static void op_tensor(thread_t *t) {
  uint8_t buf[4 * 3 * 5];
  uint8_t b = fuzz_u8(&t->r);
  int d = pick_dev(t, b);
  uint64_t shape[2];
  cubert_memory_layout_t l;
  cubert_error_t e;
  cubert_status_t st;
  int null_data = (b >> 7) & 1;
  shape[0] = (b >> 2) % 4u;
  shape[1] = (b >> 4) % 6u;
  memset(buf, 7, sizeof buf);
  st = cubert_client_create_tensor_from_slice(t->cl[d], null_data ? NULL : buf, 2, shape, 4, &l, &e);
  if (null_data && shape[0] && shape[1]) {
    expect(st, &e, CUBERT_STATUS_INVALID_ARGUMENT);
    return;
  }
  expect(st, &e, CUBERT_STATUS_OK);
  pool_add(t->w, t->cl[d], d, &l.memory);
}

static void op_read(thread_t *t, int async) {
  uint8_t dst[256];
  int k = pool_take(t->w, fuzz_u8(&t->r));
  int d = pick_dev(t, fuzz_u8(&t->r));
  cubert_error_t e;
  cubert_status_t st;
  if (k < 0) return;
  if (async) {
    cubert_completion_t c;
    void *dsts[1];
    uint64_t sizes[1];
    dsts[0] = dst;
    sizes[0] = sizeof dst;
    st = cubert_client_read_async(t->cl[d], &t->w->pool[k].h, 1, dsts, sizes, &c, &e);
    if (st == CUBERT_STATUS_OK) {
      st = cubert_completion_wait(&c, UINT64_MAX, &e);
      FUZZ_CHECK(queued_ok(st));
      check_record(st, &e);
    }
  } else {
    st = cubert_client_read_one(t->cl[d], &t->w->pool[k].h, dst, sizeof dst, &e);
  }
  if (d != t->w->pool[k].dev) expect(st, &e, CUBERT_STATUS_DEVICE_MISMATCH);
  else {
    FUZZ_CHECK(queued_ok(st));
    check_record(st, &e);
  }
  pool_put(t->w, k);
}

static void op_clone_or_offset(thread_t *t, int offset) {
  int k = pool_take(t->w, fuzz_u8(&t->r));
  int d = pick_dev(t, fuzz_u8(&t->r));
  uint64_t a = fuzz_u8(&t->r) % 40u, z = fuzz_u8(&t->r) % 40u;
  cubert_handle_t h;
  cubert_error_t e;
  cubert_status_t st;
  if (k < 0) return;
  st = offset ? cubert_client_handle_offset(t->cl[d], &t->w->pool[k].h, a, z, &h, &e)
              : cubert_client_handle_clone(t->cl[d], &t->w->pool[k].h, &h, &e);
  if (d != t->w->pool[k].dev) {
    expect(st, &e, CUBERT_STATUS_DEVICE_MISMATCH);
  } else if (offset && a + z > cubert_handle_size_in_used(&t->w->pool[k].h)) {
    expect(st, &e, CUBERT_STATUS_OUT_OF_RANGE);
  } else {
    expect(st, &e, CUBERT_STATUS_OK);
    pool_add(t->w, t->cl[d], d, &h);
  }
  pool_put(t->w, k);
}

static void op_release(thread_t *t) {
  int k = pool_take(t->w, fuzz_u8(&t->r));
  int d = pick_dev(t, fuzz_u8(&t->r));
  cubert_error_t e;
  cubert_status_t st;
  if (k < 0) return;
  st = cubert_client_handle_release(t->cl[d], &t->w->pool[k].h, &e);
  if (d != t->w->pool[k].dev) {
    expect(st, &e, CUBERT_STATUS_DEVICE_MISMATCH); /* the handle stays alive */
    pool_put(t->w, k);
  } else {
    expect(st, &e, CUBERT_STATUS_OK);
    pool_drop(t->w, k);
  }
}

/* A copy of a pool handle with its device index or key changed: never
 * accepted by the device it names now unless it names its issuer. */
static void op_forge(thread_t *t) {
  int k = pool_take(t->w, fuzz_u8(&t->r));
  uint8_t b = fuzz_u8(&t->r);
  int d = pick_dev(t, b);
  uint32_t x = (uint32_t)fuzz_uint(&t->r, 4) | 1u;
  uint8_t dst[256];
  cubert_handle_t h;
  cubert_error_t e;
  cubert_status_t st;
  if (k < 0) return;
  h = t->w->pool[k].h;
  if (b & 0x80) h.device ^= x;
  else h.device_key ^= x;
  st = cubert_client_read_one(t->cl[d], &h, dst, sizeof dst, &e);
  FUZZ_CHECK(st == CUBERT_STATUS_DEVICE_MISMATCH || st == CUBERT_STATUS_INVALID_HANDLE ||
             queued_ok(st));
  check_record(st, &e);
  /* A release through the forged copy: refused unless the copy now names the
   * device it is given to (its type and index; the fuzzer may find that
   * device's instance number too, and then the id decides). */
  if ((h.device_key >> 16) != cubert_client_device(t->cl[d]).type_id ||
      h.device != cubert_client_device(t->cl[d]).index_id) {
    st = cubert_client_handle_release(t->cl[d], &h, &e);
    expect(st, &e, CUBERT_STATUS_DEVICE_MISMATCH);
  }
  pool_put(t->w, k);
}

static const uint32_t k_counts[] = {0, 1, 1, 1, 2, 16, 17, 255, 0xFFFFFFFFu};
static const uint32_t k_kinds[] = {0, 0, 0, 1, 2, 5, 0x7FFFFFFFu};
static const uint8_t k_aligns[] = {0, 0, 3, 4, 8, 16, 64, 5, 96, 128}; /* the kernel is u32: 4 and up */
/* One descriptor per alignment (a launch borrows its kernel until it ran:
 * they live as long as the process; written before the threads start). */
static cubert_kernel_t g_kernels[10];

static void op_launch(thread_t *t) {
  uint8_t b0 = fuzz_u8(&t->r), b1 = fuzz_u8(&t->r), b2 = fuzz_u8(&t->r), b3 = fuzz_u8(&t->r);
  int d = pick_dev(t, b0);
  uint32_t bc = k_counts[b1 % 9u], sc = k_counts[(b1 >> 4) % 9u];
  uint32_t nb = bc <= 16 ? bc : 1, ns = sc <= 16 ? sc : 1, i;
  const cubert_kernel_t *kp = &g_kernels[b2 % 10u];
  cubert_cube_count_t count;
  cubert_launch_arguments_t args;
  cubert_binding_t *buffers = NULL;
  uint64_t *scalars = NULL;
  cubert_handle_t sub, dyn;
  int ks[16], nk = 0, have_sub = 0, have_dyn = 0, dyn_dev = d;
  cubert_status_t st, want = CUBERT_STATUS_OK;
  cubert_error_t e;
  uint32_t dyn_vals[3] = {1, 1, 1};
  memset(&count, 0, sizeof count);
  count.kind = (cubert_cube_count_kind_t)k_kinds[(b2 >> 4) % 7u];
  count.count.x = b3 % 3u;
  count.count.y = 1;
  count.count.z = 1;
  /* arrays of their true length: a count above it must not be read past */
  buffers = (cubert_binding_t *)malloc((nb ? nb : 1) * sizeof *buffers);
  scalars = (uint64_t *)malloc((ns ? ns : 1) * sizeof *scalars);
  FUZZ_CHECK(buffers && scalars);
  for (i = 0; i < ns; i++) scalars[i] = b3;
  for (i = 0; i < nb; i++) {
    int kk = pool_take(t->w, (uint8_t)(b0 + i));
    if (kk < 0) break;
    ks[nk++] = kk;
    buffers[i] = t->w->pool[kk].h;
  }
  if (nk < (int)nb) goto done; /* not enough handles in the pool */
  /* slot 0 through a sub-handle at a random offset */
  if (nb > 0 && (b3 & 0x40) && t->w->pool[ks[0]].dev == d &&
      cubert_handle_size_in_used(&buffers[0]) > 8) {
    uint64_t off = (b3 >> 3) % 8u;
    expect(cubert_client_handle_offset(t->cl[d], &buffers[0], off, 0, &sub, &e), &e,
           CUBERT_STATUS_OK);
    buffers[0] = sub;
    have_sub = 1;
  }
  if (count.kind == CUBERT_CUBE_COUNT_DYNAMIC) {
    dyn_dev = (b3 & 0x80) ? pick_dev(t, b3) : d;
    expect(cubert_client_create_from_slice(t->cl[dyn_dev], dyn_vals, (b3 & 0x20) ? 8 : 12, &dyn,
                                           &e),
           &e, CUBERT_STATUS_OK);
    count.binding = dyn;
    have_dyn = 1;
  }
  cubert_launch_arguments_initialize(&args);
  args.buffers = buffers;
  args.buffer_count = bc;
  args.scalars = scalars;
  args.scalar_count = sc;
  st = (b0 & 0x40) ? cubert_client_launch_unchecked(t->cl[d], kp, &count, &args, &e)
                   : cubert_client_launch(t->cl[d], kp, &count, &args, &e);
  /* the rules, in the order launch checks them */
  if (bc > 16 || sc > 16) {
    want = CUBERT_STATUS_INVALID_ARGUMENT;
  } else if ((uint32_t)count.kind > 1u) {
    want = CUBERT_STATUS_INVALID_ARGUMENT;
  } else if (count.kind == CUBERT_CUBE_COUNT_STATIC && count.count.x == 0) {
    want = CUBERT_STATUS_OK;
  } else {
    for (i = 0; i < nb && want == CUBERT_STATUS_OK; i++) {
      uint32_t a = kp->buffer_align[i] ? kp->buffer_align[i] : CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN;
      if (t->w->pool[ks[i]].dev != d) want = CUBERT_STATUS_DEVICE_MISMATCH;
      else if (a > 64 || (a & (a - 1)) || buffers[i].offset_start % a)
        want = CUBERT_STATUS_INVALID_ARGUMENT;
    }
    if (want == CUBERT_STATUS_OK && (bc < 1 || sc < 1)) want = CUBERT_STATUS_INVALID_ARGUMENT;
    if (want == CUBERT_STATUS_OK && have_dyn && dyn_dev != d)
      want = CUBERT_STATUS_DEVICE_MISMATCH;
    if (want == CUBERT_STATUS_OK && have_dyn && (b3 & 0x20))
      want = CUBERT_STATUS_OUT_OF_RANGE; /* 8 bytes: a dynamic count needs 12 */
  }
  expect(st, &e, want);
  if (bc > 16 || sc > 16) FUZZ_CHECK(e.chain[0] == CUBERT_ERROR_SERVER_VALIDATION);
  if (have_sub) expect(cubert_client_handle_release(t->cl[d], &sub, &e), &e, CUBERT_STATUS_OK);
  if (have_dyn)
    expect(cubert_client_handle_release(t->cl[dyn_dev], &dyn, &e), &e, CUBERT_STATUS_OK);
done:
  for (i = 0; i < (uint32_t)nk; i++) pool_put(t->w, ks[i]);
  free(buffers);
  free(scalars);
}

static void op_sync(thread_t *t, int async) {
  int d = pick_dev(t, fuzz_u8(&t->r));
  cubert_error_t e;
  cubert_status_t st;
  if (async) {
    cubert_completion_t c;
    st = cubert_client_sync_async(t->cl[d], &c, &e);
    FUZZ_CHECK(st == CUBERT_STATUS_OK);
    st = cubert_completion_wait(&c, UINT64_MAX, &e);
  } else {
    st = cubert_client_sync(t->cl[d], &e);
  }
  FUZZ_CHECK(queued_ok(st));
  check_record(st, &e);
}

static void *thread_main(void *p) {
  thread_t *t = (thread_t *)p;
  int n;
  for (n = 0; n < MAX_OPS && !fuzz_reader_done(&t->r); n++) {
    cubert_error_t e;
    switch (fuzz_u8(&t->r) % 12u) {
      case 0: op_create(t); break;
      case 1: op_tensor(t); break;
      case 2: op_read(t, 0); break;
      case 3: op_read(t, 1); break;
      case 4: op_clone_or_offset(t, 0); break;
      case 5: op_clone_or_offset(t, 1); break;
      case 6: op_release(t); break;
      case 7: op_forge(t); break;
      case 8: op_launch(t); break;
      case 9: op_launch(t); break;
      case 10: op_sync(t, fuzz_u8(&t->r) & 1); break;
      default:
        expect(cubert_completion_wait(NULL, 0, &e), &e, CUBERT_STATUS_INVALID_ARGUMENT);
        break;
    }
  }
  return NULL;
}

/* ---- teardown ---- */

/* Arm a read on device d, release every handle and client of d, then wait:
 * the completion kept the device. */
static void wait_after_release(world_t *w, int d) {
  uint8_t src[16], dst[16];
  cubert_handle_t h;
  cubert_completion_t c;
  cubert_error_t e;
  void *dsts[1];
  uint64_t sizes[1];
  int i;
  memset(src, 0x3C, sizeof src);
  memset(dst, 0, sizeof dst);
  expect(cubert_client_create_from_slice(w->main[d], src, sizeof src, &h, &e), &e,
         CUBERT_STATUS_OK);
  dsts[0] = dst;
  sizes[0] = sizeof dst;
  expect(cubert_client_read_async(w->main[d], &h, 1, dsts, sizes, &c, &e), &e, CUBERT_STATUS_OK);
  expect(cubert_client_handle_release(w->main[d], &h, &e), &e, CUBERT_STATUS_OK);
  for (i = 0; i < NPOOL; i++)
    if (w->pool[i].used && w->pool[i].dev == d) {
      expect(cubert_client_handle_release(w->main[d], &w->pool[i].h, &e), &e, CUBERT_STATUS_OK);
      w->pool[i].used = 0;
    }
  cubert_client_release(w->main[d]);
  w->main[d] = NULL;
  FUZZ_CHECK(queued_ok(cubert_completion_wait(&c, UINT64_MAX, &e)));
  FUZZ_CHECK(dst[0] == 0x3C && dst[15] == 0x3C);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  world_t *w = (world_t *)calloc(1, sizeof *w);
  fuzz_reader_t r = fuzz_reader_init(data, size);
  thread_t th[2];
  pthread_t pt[2];
  size_t half;
  uint8_t flags;
  int d, i;
  FUZZ_CHECK(w != NULL);
  for (i = 0; i < 10; i++) {
    g_kernels[i] = fm_add;
    g_kernels[i].buffer_align[0] = k_aligns[i];
  }
  pthread_mutex_init(&w->la.mu, NULL);
  pthread_mutex_init(&w->mu, NULL);
  w->al = fuzz_alloc_init(&w->la.fa);
  w->al.self = &w->la;
  w->al.fn = locked_fn;
  flags = fuzz_u8(&r);
  create_devices(w, &r);
  half = r.pos < size ? (size - r.pos) / 2 : 0;
  for (i = 0; i < 2; i++) {
    th[i].w = w;
    th[i].tid = i;
    th[i].r = fuzz_reader_init(data + r.pos + (size_t)i * half, half);
    for (d = 0; d < NDEV; d++) {
      th[i].cl[d] = NULL;
      if (i != 0 && d == DET_DEV) continue;
      FUZZ_CHECK(cubert_client_clone(w->main[d], &th[i].cl[d], NULL) == CUBERT_STATUS_OK);
    }
  }
  for (i = 0; i < 2; i++) FUZZ_CHECK(pthread_create(&pt[i], NULL, thread_main, &th[i]) == 0);
  for (i = 0; i < 2; i++) FUZZ_CHECK(pthread_join(pt[i], NULL) == 0);
  for (i = 0; i < 2; i++)
    for (d = 0; d < NDEV; d++) cubert_client_release(th[i].cl[d]);
  if (flags & 1) wait_after_release(w, (flags >> 1) % NDEV);
  for (i = 0; i < NPOOL; i++)
    if (w->pool[i].used) {
      cubert_error_t e;
      expect(cubert_client_handle_release(w->main[w->pool[i].dev], &w->pool[i].h, &e), &e,
             CUBERT_STATUS_OK);
    }
  for (d = 0; d < NDEV; d++) cubert_client_release(w->main[d]);
  for (d = 0; d < NDEV; d++)
    if (w->locks[d].lock) cubert_os_lock_destroy(w->locks[d]);
  FUZZ_CHECK(cubert_client_device_count_total() == 0);
  FUZZ_CHECK(fuzz_alloc_balanced(&w->la.fa));
  pthread_mutex_destroy(&w->mu);
  pthread_mutex_destroy(&w->la.mu);
  free(w);
  return 0;
}
