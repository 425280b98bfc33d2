/* SPDX-License-Identifier: MIT */
/* Conformance: DLPack export and import (cubert/dlpack.h, docs/interop.md):
 * the structs' layout, the fields of an exported tensor, zero-copy imports
 * of host memory and of cubert's own tensors, the lifetime rules (each
 * deleter exactly once, after the work that used the memory, nothing
 * leaked), every dtype, every refusal, stream order, and the non-blocking
 * get_resource. */
#include "cts.h"

#include <stddef.h>

#include "cubert/cube.h"
#include "cubert/dlpack.h"
#include "cts_kernels.h"
#include "cubert_kernels.h"

#define N 256 /* u32 elements: 4 cubes of CK_SMALL_BLOCK */

/* cts_sleep_u32 (cts_kernels.h): unit 0 of cube 0 sleeps, then buf[0] += 1. */
CUBERT_KERNEL_DESCRIPTOR(dlpack_sleep_kernel, cts_sleep_u32, 1, 0, 0, 1, 1, 1);

/* The record's kind, and its reason where the library keeps the core's
 * reason strings (CUBERT_CONFIG_ERROR_REASONS). */
#define CHECK_DL_RECORD(error, kind, text)                                                 \
  do {                                                                                     \
    if (cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS) {                         \
      CHECK_RECORD(error, kind, text);                                                     \
    } else {                                                                               \
      CHECK_EQ_U64(cubert_error_kind(&(error)), (kind));                                   \
    }                                                                                      \
  } while (0)

/* ---- helpers ------------------------------------------------------------------------------ */

static cubert_dlpack_dtype_t dt(uint8_t code, uint8_t bits, uint16_t lanes) {
  cubert_dlpack_dtype_t d;
  d.code = code;
  d.bits = bits;
  d.lanes = lanes;
  return d;
}

static cubert_copy_descriptor_t desc_1d(const cubert_handle_t *h, uint64_t n, uint64_t elem) {
  cubert_copy_descriptor_t d;
  memset(&d, 0, sizeof d);
  d.binding = *h;
  d.rank = 1;
  d.shape[0] = n;
  d.strides[0] = 1;
  d.elem_size = elem;
  return d;
}

/* A producer's tensor over host memory, counting its deleter's calls. */
typedef struct host_tensor_t {
  uint64_t storage[N + 8]; /* first: calloc's alignment (16) */
  cubert_dlpack_managed_tensor_versioned_t v;
  cubert_dlpack_managed_tensor_t u;
  int64_t shape[CUBERT_MAX_RANK];
  int64_t strides[CUBERT_MAX_RANK];
  int deleted;
  uint32_t first_at_delete; /* data's first u32 when the deleter ran */
} host_tensor_t;

static void host_deleter_v(cubert_dlpack_managed_tensor_versioned_t *self) {
  host_tensor_t *t = (host_tensor_t *)self->manager_ctx;
  t->deleted++;
  memcpy(&t->first_at_delete, t->storage, 4);
}

static void host_deleter_u(cubert_dlpack_managed_tensor_t *self) {
  host_tensor_t *t = (host_tensor_t *)self->manager_ctx;
  t->deleted++;
  memcpy(&t->first_at_delete, t->storage, 4);
}

/* A 1-D host tensor of n elements of dtype d on `device`. */
static void host_tensor_init(host_tensor_t *t, cubert_dlpack_device_t device, cubert_dlpack_dtype_t d,
                             int64_t n) {
  memset(t, 0, sizeof *t);
  t->shape[0] = n;
  t->strides[0] = 1;
  t->v.version.major = CUBERT_DLPACK_MAJOR_VERSION;
  t->v.version.minor = 0;
  t->v.manager_ctx = t;
  t->v.deleter = host_deleter_v;
  t->v.dl_tensor.data = t->storage;
  t->v.dl_tensor.device = device;
  t->v.dl_tensor.ndim = 1;
  t->v.dl_tensor.dtype = d;
  t->v.dl_tensor.shape = t->shape;
  t->v.dl_tensor.strides = t->strides;
  t->u.dl_tensor = t->v.dl_tensor;
  t->u.manager_ctx = t;
  t->u.deleter = host_deleter_u;
}

/* Host-memory imports need a device whose memory is host memory. */
static int host_device(cubert_client_t *client) {
  return cubert_client_dlpack_device(client).device_type == CUBERT_DLPACK_DEVICE_CPU;
}

static cubert_status_t add(cubert_client_t *c, const cubert_handle_t *h, uint32_t delta) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_SMALL_BLOCK);
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, h);
  cubert_launch_arguments_set_u32(&args, 0, delta);
  return cubert_client_launch(c, &ck_add_scalar_u32_kernel, &count, &args, NULL);
}

static cubert_status_t slow_increment(cubert_client_t *c, const cubert_handle_t *h) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(1);
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, h);
  return cubert_client_launch(c, &dlpack_sleep_kernel, &count, &args, NULL);
}

/* One export and its deleter, so that what the device keeps for reuse
 * (the CPU driver's free events) is there before a test counts blocks. */
static void warm_up(cts_env_t *env, const cubert_handle_t *h) {
  cubert_copy_descriptor_t d = desc_1d(h, 1, 1);
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  CHECK_OK(cubert_client_dlpack_export(env->client, &d, dt(CUBERT_DLPACK_UINT, 8, 1), NULL, &t, NULL));
  t->deleter(t);
}

/* ---- the layout ------------------------------------------------------------------------------ */

/* The structs are laid out as dlpack.h's (DLPack 1.x), on this ABI. */
TEST(cts_dlpack_struct_layout) {
  size_t p = sizeof(void *);
  CHECK_EQ_U64(sizeof(cubert_dlpack_version_t), 8);
  CHECK_EQ_U64(sizeof(cubert_dlpack_device_t), 8);
  CHECK_EQ_U64(sizeof(cubert_dlpack_dtype_t), 4);
  CHECK_EQ_U64(offsetof(cubert_dlpack_dtype_t, lanes), 2);
  CHECK_EQ_U64(offsetof(cubert_dlpack_tensor_t, device), p);
  CHECK_EQ_U64(offsetof(cubert_dlpack_tensor_t, ndim), p + 8);
  CHECK_EQ_U64(offsetof(cubert_dlpack_tensor_t, dtype), p + 12);
  CHECK_EQ_U64(offsetof(cubert_dlpack_tensor_t, shape), p + 16);
  CHECK_EQ_U64(offsetof(cubert_dlpack_tensor_t, strides), 2 * p + 16);
  if (p == 8) {
    CHECK_EQ_U64(offsetof(cubert_dlpack_tensor_t, byte_offset), 40);
    CHECK_EQ_U64(sizeof(cubert_dlpack_tensor_t), 48);
    CHECK_EQ_U64(sizeof(cubert_dlpack_managed_tensor_t), 64);
    CHECK_EQ_U64(offsetof(cubert_dlpack_managed_tensor_versioned_t, manager_ctx), 8);
    CHECK_EQ_U64(offsetof(cubert_dlpack_managed_tensor_versioned_t, flags), 24);
    CHECK_EQ_U64(offsetof(cubert_dlpack_managed_tensor_versioned_t, dl_tensor), 32);
    CHECK_EQ_U64(sizeof(cubert_dlpack_managed_tensor_versioned_t), 80);
  }
  CHECK_EQ_U64(offsetof(cubert_dlpack_managed_tensor_t, dl_tensor), 0);
  CHECK_EQ_U64(offsetof(cubert_dlpack_managed_tensor_versioned_t, version), 0);
}

/* ---- export ------------------------------------------------------------------------------------ */

TEST(cts_dlpack_export_fields_and_lifetime) {
  cts_env_t env;
  uint32_t data[N], back[N];
  cubert_memory_layout_t layout;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_options_t o;
  cubert_dlpack_device_t dev;
  cubert_resource_t r;
  uint64_t shape[2] = {16, 16};
  int64_t before;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < N; i++) data[i] = (uint32_t)i * 3u;
  CHECK_OK(cubert_client_create_tensor_from_slice(env.client, data, 2, shape, 4, &layout, NULL));
  memset(&d, 0, sizeof d);
  d.binding = layout.memory;
  d.rank = 2;
  d.shape[0] = 16;
  d.shape[1] = 16;
  d.strides[0] = layout.strides[0];
  d.strides[1] = layout.strides[1];
  d.elem_size = 4;
  warm_up(&env, &layout.memory);
  before = env.counting.live_blocks;
  cubert_dlpack_options_initialize(&o);
  o.flags = CUBERT_DLPACK_FLAG_READ_ONLY;
  CHECK_OK(cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), &o, &t, NULL));
  CHECK(t != NULL && t->deleter != NULL);
  CHECK(env.counting.live_blocks > before); /* the managed tensor */
  dev = cubert_client_dlpack_device(env.client);
  CHECK(dev.device_type == CUBERT_DLPACK_DEVICE_CPU || dev.device_type == CUBERT_DLPACK_DEVICE_CUDA);
  CHECK_EQ_U64(t->version.major, 1);
  CHECK_EQ_U64(t->flags, CUBERT_DLPACK_FLAG_READ_ONLY);
  CHECK_EQ_I64(t->dl_tensor.device.device_type, dev.device_type);
  CHECK_EQ_I64(t->dl_tensor.device.device_id, dev.device_id);
  CHECK_EQ_I64(t->dl_tensor.ndim, 2);
  CHECK_EQ_I64(t->dl_tensor.shape[0], 16);
  CHECK_EQ_I64(t->dl_tensor.shape[1], 16);
  CHECK_EQ_I64(t->dl_tensor.strides[0], (int64_t)layout.strides[0]);
  CHECK_EQ_I64(t->dl_tensor.strides[1], 1);
  CHECK_EQ_U64(t->dl_tensor.dtype.code, CUBERT_DLPACK_UINT);
  CHECK_EQ_U64(t->dl_tensor.dtype.bits, 32);
  CHECK_EQ_U64(t->dl_tensor.dtype.lanes, 1);
  CHECK_EQ_U64(t->dl_tensor.byte_offset, 0);
  /* the same address the resource gives */
  CHECK_OK(cubert_client_get_resource(env.client, &layout.memory, &r, NULL));
  CHECK_EQ_U64((uint64_t)(uintptr_t)t->dl_tensor.data, r.address);
  /* the tensor keeps the memory: the user's handle goes first */
  CHECK_OK(cubert_client_handle_release(env.client, &layout.memory, NULL));
  if (host_device(env.client)) {
    const uint32_t *p = (const uint32_t *)t->dl_tensor.data;
    CHECK_EQ_U64(p[0], 0);
    CHECK_EQ_U64(p[17 * 1], data[17]); /* row 1, column 1 with stride 16 */
    CHECK_EQ_U64(p[(uint64_t)layout.strides[0] * 15 + 15], data[255]);
  }
  (void)back;
  t->deleter(t); /* exactly once: releases the handle and the device reference */
  CHECK_EQ_I64(env.counting.live_blocks, before);
  cts_teardown(&env);
}

TEST(cts_dlpack_export_unversioned_and_rank0) {
  cts_env_t env;
  uint32_t v = 42;
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_t *t = NULL;
  int64_t before;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, &v, 4, &h, NULL));
  memset(&d, 0, sizeof d);
  d.binding = h;
  d.rank = 0; /* one element */
  warm_up(&env, &h);
  before = env.counting.live_blocks;
  CHECK_OK(cubert_client_dlpack_export_unversioned(env.client, &d, dt(CUBERT_DLPACK_INT, 32, 1), NULL,
                                                   &t, NULL));
  CHECK_EQ_I64(t->dl_tensor.ndim, 0);
  CHECK_EQ_U64(t->dl_tensor.dtype.code, CUBERT_DLPACK_INT);
  if (host_device(env.client)) CHECK_EQ_U64(*(const uint32_t *)t->dl_tensor.data, 42);
  t->deleter(t);
  CHECK_EQ_I64(env.counting.live_blocks, before);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* The exported tensor holds the device: the last client may go first; the
 * deleter then tears the device down and everything is given back. */
TEST(cts_dlpack_export_outlives_the_client) {
  cts_env_t env;
  uint32_t data[N] = {0};
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  data[5] = 5;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  d = desc_1d(&h, N, 4);
  CHECK_OK(cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), NULL, &t, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cubert_client_release(env.client);
  cts_forget_client(&env);
  CHECK(env.counting.live_blocks > 0);
  if (t->dl_tensor.device.device_type == CUBERT_DLPACK_DEVICE_CPU) CHECK_EQ_U64(((const uint32_t *)t->dl_tensor.data)[5], 5);
  t->deleter(t);
  CHECK_EQ_I64(env.counting.live_blocks, 0);
  CHECK_EQ_U64(env.counting.bad_frees, 0);
  counting_allocator_destroy(&env.counting);
}

/* ---- import -------------------------------------------------------------------------------------- */

/* Host memory becomes a handle without a copy: a kernel writes into it in
 * place; the deleter runs once, after the handle went, not before. */
TEST(cts_dlpack_import_host_memory_in_place) {
  cts_env_t env;
  host_tensor_t *t;
  cubert_dlpack_imported_t im;
  uint32_t *p, back[N];
  int i;
  cts_setup(&env, 0);
  if (!host_device(env.client)) {
    cts_teardown(&env);
    TEST_SKIP("the device's memory is not host memory (a host buffer is another device's)");
  }
  t = (host_tensor_t *)calloc(1, sizeof *t);
  CHECK(t != NULL);
  host_tensor_init(t, cubert_client_dlpack_device(env.client), dt(CUBERT_DLPACK_UINT, 32, 1), N);
  p = (uint32_t *)t->storage;
  for (i = 0; i < N; i++) p[i] = (uint32_t)i;
  CHECK_OK(cubert_client_dlpack_import(env.client, &t->v, NULL, &im, NULL));
  CHECK_EQ_U64(im.tensor.rank, 1);
  CHECK_EQ_U64(im.tensor.shape[0], N);
  CHECK_EQ_U64(im.tensor.strides[0], 1);
  CHECK_EQ_U64(im.tensor.elem_size, 4);
  CHECK_EQ_U64(cubert_handle_size_in_used(&im.tensor.binding), N * 4);
  CHECK_OK(add(env.client, &im.tensor.binding, 100));
  CHECK_OK(cubert_client_read_one(env.client, &im.tensor.binding, back, sizeof back, NULL));
  for (i = 0; i < N; i++) {
    CHECK_EQ_U64(p[i], (uint32_t)i + 100u); /* the producer's memory itself */
    CHECK_EQ_U64(back[i], (uint32_t)i + 100u);
  }
  {
    cubert_resource_t r;
    CHECK_OK(cubert_client_get_resource(env.client, &im.tensor.binding, &r, NULL));
    CHECK(r.ptr == (void *)t->storage);
  }
  CHECK_OK(cubert_client_flush(env.client, NULL));
  CHECK_EQ_I64(t->deleted, 0); /* the handle is alive */
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(t->deleted, 1);
  cts_teardown(&env);
  CHECK_EQ_I64(t->deleted, 1); /* once */
  free(t);
}

/* The deleter waits for the work that used the memory: a slow kernel's
 * write is there when it runs, even though the handle went at once. */
TEST(cts_dlpack_import_deleter_after_pending_work) {
  cts_env_t env;
  host_tensor_t *t;
  cubert_dlpack_imported_t im;
  cts_setup(&env, 0);
  if (!host_device(env.client)) {
    cts_teardown(&env);
    TEST_SKIP("the device's memory is not host memory");
  }
  t = (host_tensor_t *)calloc(1, sizeof *t);
  CHECK(t != NULL);
  host_tensor_init(t, cubert_client_dlpack_device(env.client), dt(CUBERT_DLPACK_UINT, 32, 1), 4);
  CHECK_OK(cubert_client_dlpack_import_unversioned(env.client, &t->u, NULL, &im, NULL));
  CHECK_EQ_U64(im.flags, 0);
  CHECK_OK(slow_increment(env.client, &im.tensor.binding));
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_flush(env.client, NULL)); /* notices the last reference went */
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(t->deleted, 1);
  CHECK_EQ_U64(t->first_at_delete, 1); /* the kernel had run */
  cts_teardown(&env);
  CHECK_EQ_I64(t->deleted, 1);
  free(t);
}

/* A handle still held at teardown: the deleter runs then, once. Offsets
 * and clones of an imported handle share its memory. */
TEST(cts_dlpack_import_deleter_at_teardown) {
  cts_env_t env;
  host_tensor_t *t;
  cubert_dlpack_imported_t im;
  cubert_handle_t sub, clone;
  uint32_t two[2];
  cts_setup(&env, 0);
  if (!host_device(env.client)) {
    cts_teardown(&env);
    TEST_SKIP("the device's memory is not host memory");
  }
  t = (host_tensor_t *)calloc(1, sizeof *t);
  CHECK(t != NULL);
  host_tensor_init(t, cubert_client_dlpack_device(env.client), dt(CUBERT_DLPACK_UINT, 32, 1), 8);
  ((uint32_t *)t->storage)[4] = 44;
  ((uint32_t *)t->storage)[5] = 55;
  CHECK_OK(cubert_client_dlpack_import(env.client, &t->v, NULL, &im, NULL));
  CHECK_OK(cubert_client_handle_offset(env.client, &im.tensor.binding, 16, 8, &sub, NULL));
  CHECK_OK(cubert_client_handle_clone(env.client, &im.tensor.binding, &clone, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &sub, two, sizeof two, NULL));
  CHECK_EQ_U64(two[0], 44);
  CHECK_EQ_U64(two[1], 55);
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &sub, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_EQ_I64(t->deleted, 0); /* the clone holds it */
  cts_teardown(&env);           /* the clone is never released */
  CHECK_EQ_I64(t->deleted, 1);
  free(t);
}

/* export -> import on the same device: the same memory, no adoption; the
 * export's deleter runs at the import. */
TEST(cts_dlpack_round_trip_same_device) {
  cts_env_t env;
  uint32_t data[N], back[N];
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_imported_t im;
  cubert_resource_t r1, r2;
  int64_t before;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < N; i++) data[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  warm_up(&env, &h);
  before = env.counting.live_blocks;
  d = desc_1d(&h, N, 0); /* elem_size 0: the dtype's */
  CHECK_OK(cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), NULL, &t, NULL));
  CHECK_OK(cubert_client_dlpack_import(env.client, t, NULL, &im, NULL));
  CHECK_EQ_I64(env.counting.live_blocks, before); /* the export's deleter ran */
  CHECK_EQ_U64(im.tensor.binding.memory.index, h.memory.index);
  CHECK_EQ_U64(im.tensor.binding.memory.generation, h.memory.generation);
  CHECK_OK(cubert_client_get_resource(env.client, &h, &r1, NULL));
  CHECK_OK(cubert_client_get_resource(env.client, &im.tensor.binding, &r2, NULL));
  CHECK_EQ_U64(r1.address, r2.address);
  CHECK_OK(add(env.client, &im.tensor.binding, 7));
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, back, sizeof back, NULL));
  for (i = 0; i < N; i++) CHECK_EQ_U64(back[i], (uint32_t)i + 7u);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* A consumer may move data / byte_offset within what was exported: the
 * import is a sub-handle there; outside it, OUT_OF_RANGE and the tensor
 * stays the caller's. */
TEST(cts_dlpack_round_trip_moved_view) {
  cts_env_t env;
  uint32_t data[16], back[8];
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_imported_t im;
  cubert_error_t err;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 16; i++) data[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  d = desc_1d(&h, 16, 4);
  CHECK_OK(cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), NULL, &t, NULL));
  t->dl_tensor.byte_offset = 64 + 4; /* past the end */
  t->dl_tensor.shape[0] = 8;
  memset(&err, 0, sizeof err);
  CHECK_STATUS(cubert_client_dlpack_import(env.client, t, NULL, &im, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_DL_RECORD(err, CUBERT_ERROR_OUT_OF_RANGE, "outside the memory this device exported");
  t->dl_tensor.byte_offset = 4 * 4; /* elements 4..11 */
  CHECK_OK(cubert_client_dlpack_import(env.client, t, NULL, &im, NULL));
  CHECK_EQ_U64(im.tensor.binding.memory.index, h.memory.index);
  CHECK_EQ_U64(cubert_handle_size_in_used(&im.tensor.binding), 32);
  CHECK_OK(cubert_client_read_one(env.client, &im.tensor.binding, back, sizeof back, NULL));
  for (i = 0; i < 8; i++) CHECK_EQ_U64(back[i], (uint32_t)i + 4u);
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* Every dtype cubert takes, both ways: exported with its width, imported
 * back (own tensor), and a host tensor of it imported and read. */
TEST(cts_dlpack_every_dtype) {
  static const struct {
    uint8_t code, bits;
  } ok[] = {{0, 8}, {0, 16}, {0, 32}, {0, 64}, {1, 8}, {1, 16}, {1, 32}, {1, 64}, {2, 16},
            {2, 32}, {2, 64}, {4, 16}, {5, 64}, {5, 128}, {6, 8}};
  cts_env_t env;
  unsigned char bytes[64], back[64];
  size_t k;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 64; i++) bytes[i] = (unsigned char)(i * 7 + 1);
  for (k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    cubert_dlpack_dtype_t d = dt(ok[k].code, ok[k].bits, 1);
    uint64_t w = ok[k].bits / 8u, n = 64 / w;
    cubert_handle_t h;
    cubert_copy_descriptor_t c;
    cubert_dlpack_managed_tensor_versioned_t *t = NULL;
    cubert_dlpack_imported_t im;
    CHECK_OK(cubert_client_create_from_slice(env.client, bytes, 64, &h, NULL));
    c = desc_1d(&h, n, w);
    CHECK_OK(cubert_client_dlpack_export(env.client, &c, d, NULL, &t, NULL));
    CHECK_EQ_U64(t->dl_tensor.dtype.code, d.code);
    CHECK_EQ_U64(t->dl_tensor.dtype.bits, d.bits);
    CHECK_OK(cubert_client_dlpack_import(env.client, t, NULL, &im, NULL));
    CHECK_EQ_U64(im.tensor.elem_size, w);
    CHECK_EQ_U64(im.tensor.shape[0], n);
    CHECK_EQ_U64(im.dtype.code, d.code);
    memset(back, 0, sizeof back);
    CHECK_OK(cubert_client_read_one(env.client, &im.tensor.binding, back, sizeof back, NULL));
    CHECK(memcmp(back, bytes, 64) == 0);
    CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
    CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
    if (host_device(env.client)) {
      host_tensor_t *ht = (host_tensor_t *)calloc(1, sizeof *ht);
      unsigned char *at; /* 16-byte aligned for complex128 (calloc gives 8 on 32-bit targets) */
      CHECK(ht != NULL);
      host_tensor_init(ht, cubert_client_dlpack_device(env.client), d, (int64_t)n);
      at = (unsigned char *)ht->storage + ((16u - ((uintptr_t)ht->storage & 15u)) & 15u);
      memcpy(at, bytes, 64);
      ht->v.dl_tensor.data = at;
      CHECK_OK(cubert_client_dlpack_import(env.client, &ht->v, NULL, &im, NULL));
      memset(back, 0, sizeof back);
      CHECK_OK(cubert_client_read_one(env.client, &im.tensor.binding, back, sizeof back, NULL));
      CHECK(memcmp(back, bytes, 64) == 0);
      CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
      CHECK_OK(cubert_client_sync(env.client, NULL));
      CHECK_EQ_I64(ht->deleted, 1);
      free(ht);
    }
  }
  cts_teardown(&env);
}

/* ---- refusals: a status, a record, nothing adopted or retained ----------------------------------- */

static void refused_import(cts_env_t *env, host_tensor_t *t, const cubert_dlpack_options_t *o,
                           cubert_status_t status, cubert_error_kind_t kind, const char *text) {
  cubert_dlpack_imported_t im;
  cubert_error_t err;
  int64_t before = env->counting.live_blocks;
  memset(&im, 0xEE, sizeof im);
  memset(&err, 0, sizeof err);
  CHECK_STATUS(cubert_client_dlpack_import(env->client, &t->v, o, &im, &err), status);
  CHECK_DL_RECORD(err, kind, text);
  CHECK_EQ_U64(im.tensor.rank, 0xEEEEEEEEu); /* untouched */
  CHECK_EQ_I64(t->deleted, 0);               /* still the caller's */
  CHECK_EQ_I64(env->counting.live_blocks, before);
}

TEST(cts_dlpack_import_refusals) {
  cts_env_t env;
  host_tensor_t *t;
  cubert_dlpack_device_t dev, other;
  cubert_dlpack_options_t o;
  cubert_dlpack_imported_t im;
  cubert_error_t err;
  cts_setup(&env, 0);
  dev = cubert_client_dlpack_device(env.client);
  t = (host_tensor_t *)calloc(1, sizeof *t);
  CHECK(t != NULL);
#define RESET() host_tensor_init(t, dev, dt(CUBERT_DLPACK_FLOAT, 32, 1), 16)
  RESET();
  CHECK_STATUS(cubert_client_dlpack_import(env.client, NULL, NULL, &im, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_dlpack_import(env.client, &t->v, NULL, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_dlpack_import(NULL, &t->v, NULL, &im, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_dlpack_import_unversioned(env.client, NULL, NULL, &im, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* the device: another type, another ordinal */
  other = dev;
  other.device_type = dev.device_type == CUBERT_DLPACK_DEVICE_CPU ? CUBERT_DLPACK_DEVICE_CUDA
                                                                   : CUBERT_DLPACK_DEVICE_CPU;
  t->v.dl_tensor.device = other;
  refused_import(&env, t, NULL, CUBERT_STATUS_DEVICE_MISMATCH, CUBERT_ERROR_DEVICE_MISMATCH, "another device");
  RESET();
  t->v.dl_tensor.device.device_id = dev.device_id + 1;
  refused_import(&env, t, NULL, CUBERT_STATUS_DEVICE_MISMATCH, CUBERT_ERROR_DEVICE_MISMATCH, "another device");
  /* dtypes */
  RESET();
  t->v.dl_tensor.dtype.lanes = 4;
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, "lanes");
  RESET();
  t->v.dl_tensor.dtype.code = 3; /* kDLOpaqueHandle */
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, "dtype");
  RESET();
  t->v.dl_tensor.dtype.code = 99;
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, "dtype");
  RESET();
  t->v.dl_tensor.dtype.bits = 12;
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, "dtype");
  /* versions */
  RESET();
  t->v.version.major = 2;
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION,
                 "major version");
  /* layouts */
  RESET();
  t->strides[0] = -1;
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, "negative stride");
  RESET();
  t->strides[0] = 0;
  refused_import(&env, t, NULL, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, "zero stride");
  RESET();
  t->shape[0] = -3;
  refused_import(&env, t, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "negative dimension");
  RESET();
  t->v.dl_tensor.ndim = CUBERT_MAX_RANK + 1;
  refused_import(&env, t, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK, "rank");
  RESET();
  t->v.dl_tensor.ndim = -1;
  refused_import(&env, t, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK, "rank");
  RESET();
  t->strides[0] = INT64_MAX;
  t->shape[0] = 3;
  refused_import(&env, t, NULL, CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW, "overflows");
  /* data */
  RESET();
  t->v.dl_tensor.data = NULL;
  refused_import(&env, t, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "NULL data");
  RESET();
  t->v.dl_tensor.byte_offset = 2; /* an f32 at 2 bytes */
  refused_import(&env, t, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "misaligned");
  RESET();
  cubert_dlpack_options_initialize(&o);
  o.alignment = 4096;
  t->v.dl_tensor.byte_offset = 8;
  refused_import(&env, t, &o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "misaligned");
  /* options */
  RESET();
  o.alignment = 12;
  refused_import(&env, t, &o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "power of two");
  cubert_dlpack_options_initialize(&o);
  o.stream_kind = (cubert_dlpack_stream_kind_t)9;
  refused_import(&env, t, &o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "stream kind");
  cubert_dlpack_options_initialize(&o);
  o.flags = CUBERT_DLPACK_FLAG_READ_ONLY; /* no flags on an import */
  refused_import(&env, t, &o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "flags");
  if (!host_device(env.client)) {
    /* the host buffer is not this device's memory; the checks above come first */
  } else {
    /* a native stream on a driver without native streams */
    cubert_dlpack_options_initialize(&o);
    o.stream_kind = CUBERT_DLPACK_STREAM_NATIVE;
    o.stream = 1;
    refused_import(&env, t, &o, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION,
                   "stream_order_native");
  }
#undef RESET
  free(t);
  cts_teardown(&env);
}

static void refused_export(cts_env_t *env, const cubert_copy_descriptor_t *d, cubert_dlpack_dtype_t dtype,
                           const cubert_dlpack_options_t *o, cubert_status_t status,
                           cubert_error_kind_t kind, const char *text) {
  cubert_dlpack_managed_tensor_versioned_t *t = (cubert_dlpack_managed_tensor_versioned_t *)1;
  cubert_error_t err;
  int64_t before = env->counting.live_blocks;
  memset(&err, 0, sizeof err);
  CHECK_STATUS(cubert_client_dlpack_export(env->client, d, dtype, o, &t, &err), status);
  CHECK_DL_RECORD(err, kind, text);
  CHECK(t == (cubert_dlpack_managed_tensor_versioned_t *)1);
  CHECK_EQ_I64(env->counting.live_blocks, before);
}

TEST(cts_dlpack_export_refusals) {
  cts_env_t env;
  uint32_t data[16] = {0};
  cubert_handle_t h, dead;
  cubert_copy_descriptor_t d;
  cubert_dlpack_options_t o;
  cubert_dlpack_managed_tensor_t *u = NULL;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_dtype_t u32 = dt(CUBERT_DLPACK_UINT, 32, 1);
  cubert_error_t err;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  d = desc_1d(&h, 16, 4);
  CHECK_STATUS(cubert_client_dlpack_export(NULL, &d, u32, NULL, &t, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_dlpack_export(env.client, NULL, u32, NULL, &t, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_dlpack_export(env.client, &d, u32, NULL, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  refused_export(&env, &d, dt(CUBERT_DLPACK_UINT, 32, 2), NULL, CUBERT_STATUS_UNSUPPORTED,
                 CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, "lanes");
  refused_export(&env, &d, dt(17, 4, 1), NULL, CUBERT_STATUS_UNSUPPORTED,
                 CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, "dtype");
  refused_export(&env, &d, dt(CUBERT_DLPACK_UINT, 64, 1), NULL, CUBERT_STATUS_INVALID_ARGUMENT,
                 CUBERT_ERROR_INVALID_ARGUMENT, "elem_size");
  d.shape[0] = 17; /* one element past the handle */
  refused_export(&env, &d, u32, NULL, CUBERT_STATUS_OUT_OF_RANGE, CUBERT_ERROR_OUT_OF_RANGE, "spans more");
  d.shape[0] = 16;
  d.strides[0] = 2;
  refused_export(&env, &d, u32, NULL, CUBERT_STATUS_OUT_OF_RANGE, CUBERT_ERROR_OUT_OF_RANGE, "spans more");
  d.strides[0] = 1;
  d.rank = CUBERT_MAX_RANK + 1;
  refused_export(&env, &d, u32, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK,
                 "rank");
  d.rank = 1;
  d.shape[0] = (uint64_t)INT64_MAX + 1u;
  refused_export(&env, &d, u32, NULL, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT,
                 "INT64_MAX");
  d.shape[0] = 16;
  cubert_dlpack_options_initialize(&o);
  o.flags = 8;
  refused_export(&env, &d, u32, &o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, "flags");
  o.flags = CUBERT_DLPACK_FLAG_READ_ONLY; /* the unversioned form has none */
  CHECK_STATUS(cubert_client_dlpack_export_unversioned(env.client, &d, u32, &o, &u, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(u == NULL);
  cubert_dlpack_options_initialize(&o);
  o.stream_kind = (cubert_dlpack_stream_kind_t)7;
  refused_export(&env, &d, u32, &o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT,
                 "stream kind");
  if (host_device(env.client)) {
    o.stream_kind = CUBERT_DLPACK_STREAM_NATIVE;
    o.stream = 1;
    refused_export(&env, &d, u32, &o, CUBERT_STATUS_UNSUPPORTED, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION,
                   "stream_order_native");
  }
  /* a dead handle, a handle of another device */
  CHECK_OK(cubert_client_handle_clone(env.client, &h, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  d = desc_1d(&dead, 16, 4);
  refused_export(&env, &d, u32, NULL, CUBERT_STATUS_INVALID_HANDLE, CUBERT_ERROR_INVALID_HANDLE, "");
  d.binding.device_key ^= 1u;
  refused_export(&env, &d, u32, NULL, CUBERT_STATUS_DEVICE_MISMATCH, CUBERT_ERROR_DEVICE_MISMATCH, "");
  cts_teardown(&env);
}

/* The allocator fails at each allocation of an export in turn: the export
 * is refused with nothing left behind. */
TEST(cts_dlpack_export_host_oom) {
  cts_env_t env;
  uint32_t data[16] = {0};
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_error_t err;
  uint64_t n;
  int64_t before;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  d = desc_1d(&h, 16, 4);
  warm_up(&env, &h);
  before = env.counting.live_blocks;
  for (n = 1;; n++) { /* each allocation of an export fails in turn, then it works */
    cubert_status_t st;
    counting_allocator_fail_at(&env.counting, n, 0);
    st = cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), NULL, &t, &err);
    counting_allocator_fail_at(&env.counting, 0, 0);
    if (st == CUBERT_STATUS_OK) break;
    CHECK_EQ_U64(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK_EQ_I64(env.counting.live_blocks, before);
    CHECK(n < 8);
  }
  CHECK(n > 1); /* the managed tensor's allocation failed first */
  t->deleter(t);
  CHECK_EQ_I64(env.counting.live_blocks, before);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* ---- stream order ---------------------------------------------------------------------------- */

/* An export to a cubert stream does not block; that stream's later work
 * waits for the pending write (on another stream). */
TEST(cts_dlpack_export_orders_a_cubert_stream) {
  cts_env_t env;
  uint32_t zero[4] = {0}, back[4];
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_imported_t im;
  cubert_dlpack_options_t o;
  cts_setup(&env, 0);
  cubert_client_set_stream(env.client, 1);
  CHECK_OK(cubert_client_create_from_slice(env.client, zero, sizeof zero, &h, NULL));
  CHECK_OK(slow_increment(env.client, &h)); /* pending on stream 1 */
  d = desc_1d(&h, 4, 4);
  cubert_dlpack_options_initialize(&o);
  o.stream_kind = CUBERT_DLPACK_STREAM_CUBERT;
  o.stream = 2;
  CHECK_OK(cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), &o, &t, NULL));
  cubert_client_set_stream(env.client, 2);
  /* the consumer on stream 2: the import of the tensor (same device: the
   * same memory) read on stream 2 sees the write */
  CHECK_OK(cubert_client_dlpack_import(env.client, t, NULL, &im, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL));
  if (host_device(env.client)) {
    cubert_resource_t r;
    cubert_completion_t c;
    CHECK_OK(cubert_client_get_resource_async(env.client, &im.tensor.binding, &r, &c, NULL));
    CHECK_OK(cubert_completion_wait(&c, UINT64_MAX, NULL));
    CHECK_EQ_U64(((const uint32_t *)r.ptr)[0], 1);
  }
  CHECK_OK(cubert_client_read_one(env.client, &im.tensor.binding, back, sizeof back, NULL));
  CHECK_EQ_U64(back[0], 1);
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* An import after a producer's cubert stream: the client's stream waits. */
TEST(cts_dlpack_import_orders_after_a_cubert_stream) {
  cts_env_t env;
  host_tensor_t *t;
  cubert_dlpack_imported_t im;
  cubert_dlpack_options_t o;
  uint32_t back[4];
  cts_setup(&env, 0);
  if (!host_device(env.client)) {
    cts_teardown(&env);
    TEST_SKIP("the device's memory is not host memory");
  }
  t = (host_tensor_t *)calloc(1, sizeof *t);
  CHECK(t != NULL);
  host_tensor_init(t, cubert_client_dlpack_device(env.client), dt(CUBERT_DLPACK_UINT, 32, 1), 4);
  cubert_client_set_stream(env.client, 3);
  CHECK_OK(cubert_client_dlpack_import(env.client, &t->v, NULL, &im, NULL));
  CHECK_OK(slow_increment(env.client, &im.tensor.binding)); /* the "producer": stream 3 */
  cubert_client_set_stream(env.client, 4);
  {
    cubert_dlpack_imported_t im2;
    host_tensor_t *t2 = (host_tensor_t *)calloc(1, sizeof *t2);
    CHECK(t2 != NULL);
    host_tensor_init(t2, cubert_client_dlpack_device(env.client), dt(CUBERT_DLPACK_UINT, 32, 1), 4);
    t2->v.dl_tensor.data = t->storage; /* the same bytes, another owner record */
    cubert_dlpack_options_initialize(&o);
    o.stream_kind = CUBERT_DLPACK_STREAM_CUBERT;
    o.stream = 3;
    CHECK_OK(cubert_client_dlpack_import(env.client, &t2->v, &o, &im2, NULL));
    CHECK_OK(cubert_client_read_one(env.client, &im2.tensor.binding, back, sizeof back, NULL));
    CHECK_EQ_U64(back[0], 1); /* stream 4 waited for stream 3's kernel */
    CHECK_OK(cubert_client_handle_release(env.client, &im2.tensor.binding, NULL));
    CHECK_OK(cubert_client_sync(env.client, NULL));
    CHECK_EQ_I64(t2->deleted, 1);
    free(t2);
  }
  CHECK_OK(cubert_client_handle_release(env.client, &im.tensor.binding, NULL));
  cts_teardown(&env);
  CHECK_EQ_I64(t->deleted, 1);
  free(t);
}

/* get_resource_async: the address at once, a completion after the pending
 * writes. */
TEST(cts_get_resource_async) {
  cts_env_t env;
  uint32_t zero[4] = {0};
  cubert_handle_t h;
  cubert_resource_t r, r2;
  cubert_completion_t c;
  cubert_error_t err;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, zero, sizeof zero, &h, NULL));
  CHECK_OK(slow_increment(env.client, &h));
  CHECK_OK(cubert_client_get_resource_async(env.client, &h, &r, &c, NULL));
  CHECK_OK(cubert_completion_wait(&c, UINT64_MAX, NULL));
  CHECK_OK(cubert_client_get_resource(env.client, &h, &r2, NULL));
  CHECK_EQ_U64(r.address, r2.address);
  CHECK_EQ_U64(r.size, 16);
  if (r.ptr) CHECK_EQ_U64(((const uint32_t *)r.ptr)[0], 1);
  CHECK_STATUS(cubert_client_get_resource_async(env.client, NULL, &r, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_get_resource_async(env.client, &h, &r, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  CHECK_STATUS(cubert_client_get_resource_async(env.client, &h, &r, &c, &err), CUBERT_STATUS_INVALID_HANDLE);
  cts_teardown(&env);
}

/* Whether two clients' devices share a memory space in DLPack's terms (CPU
 * devices; CUDA devices of one GPU). On a machine of several GPUs the CUDA
 * driver's device 1 is GPU 1: a tensor of device 0 is then refused. */
static int same_dlpack_device(const cubert_client_t *a, const cubert_client_t *b) {
  const cubert_dlpack_device_t x = cubert_client_dlpack_device(a), y = cubert_client_dlpack_device(b);
  return x.device_type == y.device_type && x.device_id == y.device_id;
}

/* Another device's tensor (two devices of one driver share the memory
 * space: CPU devices host memory, CUDA devices of one GPU its device memory)
 * is adopted, not copied: a kernel of the importer writes the exporter's
 * memory; the exporter's deleter runs once, when the importer's last
 * reference went and its work completed. */
TEST(cts_dlpack_import_from_another_device) {
  cts_env_t env;
  cts_options_t o;
  cubert_client_t *b = NULL;
  uint32_t data[N], back[N];
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_imported_t im;
  cubert_resource_t ra, rb;
  int64_t blocks;
  int i;
  cts_setup(&env, 0);
  memset(&o, 0, sizeof o);
  o.device_index = 1;
  CHECK_OK(cts_client_create(env.allocator, &o, &b, NULL));
  for (i = 0; i < N; i++) data[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  d = desc_1d(&h, N, 4);
  CHECK_OK(cubert_client_dlpack_export(env.client, &d, dt(CUBERT_DLPACK_UINT, 32, 1), NULL, &t, NULL));
  blocks = env.counting.live_blocks;
  if (!same_dlpack_device(env.client, b)) { /* two GPUs: refused, nothing adopted */
    cubert_error_t err;
    CHECK_STATUS(cubert_client_dlpack_import(b, t, NULL, &im, &err), CUBERT_STATUS_DEVICE_MISMATCH);
    CHECK_DL_RECORD(err, CUBERT_ERROR_DEVICE_MISMATCH, "another device");
    t->deleter(t); /* the caller still owns a refused tensor */
    CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
    cubert_client_release(b);
    cts_teardown(&env);
    return;
  }
  CHECK_OK(cubert_client_dlpack_import(b, t, NULL, &im, NULL));
  CHECK(im.tensor.binding.device == 1);
  CHECK_OK(cubert_client_get_resource(env.client, &h, &ra, NULL));
  CHECK_OK(cubert_client_get_resource(b, &im.tensor.binding, &rb, NULL));
  CHECK_EQ_U64(ra.address, rb.address); /* the same memory */
  CHECK_OK(add(b, &im.tensor.binding, 9));
  CHECK_OK(cubert_client_sync(b, NULL)); /* the importer's work ran */
  CHECK_OK(cubert_client_read_one(env.client, &h, back, sizeof back, NULL));
  for (i = 0; i < N; i++) CHECK_EQ_U64(back[i], (uint32_t)i + 9u);
  CHECK(env.counting.live_blocks >= blocks); /* the export is alive */
  CHECK_OK(cubert_client_handle_release(b, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_sync(b, NULL)); /* the importer gives it back: the export's deleter */
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cubert_client_release(b);
  cts_teardown(&env); /* every block back: the export's deleter ran (once: no bad free) */
}

/* The importing device goes first: its teardown gives the tensor back. */
TEST(cts_dlpack_import_given_back_at_importer_teardown) {
  cts_env_t env;
  cts_options_t o;
  cubert_client_t *b = NULL;
  uint32_t data[4] = {1, 2, 3, 4};
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_t *t = NULL;
  cubert_dlpack_imported_t im;
  cts_setup(&env, 0);
  memset(&o, 0, sizeof o);
  o.device_index = 1;
  CHECK_OK(cts_client_create(env.allocator, &o, &b, NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  d = desc_1d(&h, 4, 4);
  CHECK_OK(cubert_client_dlpack_export_unversioned(env.client, &d, dt(CUBERT_DLPACK_FLOAT, 32, 1), NULL,
                                                   &t, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL)); /* the tensor holds the memory */
  if (!same_dlpack_device(env.client, b)) { /* two GPUs: refused, nothing adopted */
    CHECK_STATUS(cubert_client_dlpack_import_unversioned(b, t, NULL, &im, NULL),
                 CUBERT_STATUS_DEVICE_MISMATCH);
    t->deleter(t); /* the caller still owns a refused tensor */
    cubert_client_release(b);
    cts_teardown(&env);
    return;
  }
  CHECK_OK(cubert_client_dlpack_import_unversioned(b, t, NULL, &im, NULL));
  CHECK_OK(add(b, &im.tensor.binding, 1)); /* still pending, the handle never released */
  cubert_client_release(b); /* b's teardown: after its work, the export's deleter */
  cts_teardown(&env);
}
