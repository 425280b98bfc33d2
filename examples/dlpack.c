/* SPDX-License-Identifier: MIT */
/*
 * examples/dlpack.c: sharing tensors with another library through DLPack,
 * both ways, without a copy (docs/interop.md). The "other library" here is
 * a few lines of C that own a malloc'd buffer, as NumPy or PyTorch would:
 *
 *   1. it hands cubert a DLManagedTensorVersioned over its buffer; cubert
 *      adopts it as a handle (the same address), a cubert kernel adds 10 to
 *      every element in place, and the library's deleter runs once cubert's
 *      handle went and the kernel ran;
 *   2. cubert hands it a tensor of its own (a 4 x 8 u32 view); it reads the
 *      elements through data and strides, then calls the deleter.
 *
 *   make examples && build/examples/dlpack
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cubert.h"
#include "cubert/cpu.h"
#include "cubert/dlpack.h"
#include "cubert/os.h"
#include "cubert_kernels.h"

#define N 64

/* ---- the other library -------------------------------------------------------------------- */

typedef struct other_tensor_t {
  cubert_dlpack_managed_tensor_versioned_t managed; /* a DLManagedTensorVersioned */
  int64_t shape[1];
  uint32_t *data;
} other_tensor_t;

static int g_deleted;

static void other_deleter(cubert_dlpack_managed_tensor_versioned_t *self) {
  other_tensor_t *t = (other_tensor_t *)self->manager_ctx;
  g_deleted++;
  free(t->data);
  free(t);
}

static other_tensor_t *other_make(cubert_dlpack_device_t device) {
  other_tensor_t *t = (other_tensor_t *)calloc(1, sizeof *t);
  uint32_t i;
  if (!t) return NULL;
  t->data = (uint32_t *)malloc(N * sizeof(uint32_t));
  if (!t->data) {
    free(t);
    return NULL;
  }
  for (i = 0; i < N; i++) t->data[i] = i;
  t->shape[0] = N;
  t->managed.version.major = CUBERT_DLPACK_MAJOR_VERSION;
  t->managed.version.minor = CUBERT_DLPACK_MINOR_VERSION;
  t->managed.manager_ctx = t;
  t->managed.deleter = other_deleter;
  t->managed.dl_tensor.data = t->data;
  t->managed.dl_tensor.device = device; /* kDLCPU 0: host memory */
  t->managed.dl_tensor.ndim = 1;
  t->managed.dl_tensor.dtype.code = CUBERT_DLPACK_UINT;
  t->managed.dl_tensor.dtype.bits = 32;
  t->managed.dl_tensor.dtype.lanes = 1;
  t->managed.dl_tensor.shape = t->shape;
  t->managed.dl_tensor.strides = NULL; /* compact */
  return t;
}

/* ---- cubert --------------------------------------------------------------------------------- */

static int fail(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char text[256];
  cubert_error_format(err, text, sizeof text);
  fprintf(stderr, "dlpack: %s failed: %s (%s)\n", what, cubert_status_name(status), text);
  return 1;
}

static int run_example(void);

int main(int argc, char **argv) {
  if (argc > 1) { /* -h / --help: the usage on stdout; anything else is an error */
    int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
    fprintf(help ? stdout : stderr, "usage: %s [-h|--help]\n%s\n", "dlpack",
            "Shares tensors with another library through DLPack, both ways, without a copy\n"
            "(docs/interop.md).");
    return help ? 0 : 2;
  }
  (void)argv;
  return run_example();
}

static int run_example(void) {
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_status_t st;
  other_tensor_t *other;
  uint32_t *theirs, values[32], i;
  cubert_dlpack_imported_t im;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(1);
  cubert_resource_t r;
  cubert_completion_t done;
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_managed_tensor_versioned_t *mine = NULL;
  uint64_t shape[2] = {4, 8};
  int64_t row, col;
  cubert_error_clear(&err);
  st = cubert_cpu_client_create(cubert_allocator_libc(), NULL, &client, &err);
  if (st != CUBERT_STATUS_OK) return fail("cpu_client_create", st, &err);

  /* 1. the other library's tensor into cubert: no copy */
  other = other_make(cubert_client_dlpack_device(client));
  if (!other) return 1;
  theirs = other->data;
  st = cubert_client_dlpack_import(client, &other->managed, NULL, &im, &err);
  if (st != CUBERT_STATUS_OK) return fail("dlpack_import", st, &err); /* still ours: would free it */
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, &im.tensor.binding);
  cubert_launch_arguments_set_u32(&args, 0, 10);
  st = cubert_client_launch(client, &ck_add_scalar_u32_kernel, &count, &args, &err);
  if (st != CUBERT_STATUS_OK) return fail("launch", st, &err);
  /* the address, and a completion after the kernel: no blocking wait yet */
  st = cubert_client_get_resource_async(client, &im.tensor.binding, &r, &done, &err);
  if (st != CUBERT_STATUS_OK) return fail("get_resource_async", st, &err);
  st = cubert_completion_wait(&done, UINT64_MAX, &err);
  if (st != CUBERT_STATUS_OK) return fail("completion_wait", st, &err);
  printf("import: cubert's handle is at %p, the library's buffer at %p (%s)\n", r.ptr, (void *)theirs,
         r.ptr == (void *)theirs ? "the same memory" : "DIFFERENT");
  printf("import: a cubert kernel wrote the library's memory: [0] = %u, [63] = %u (were 0, 63)\n",
         (unsigned)theirs[0], (unsigned)theirs[N - 1]);
  if (r.ptr != (void *)theirs || theirs[0] != 10 || theirs[N - 1] != N - 1 + 10) return 1;
  cubert_client_handle_release(client, &im.tensor.binding, NULL);
  cubert_client_sync(client, NULL); /* the last reference went, the kernel ran: the deleter */
  printf("import: the library's deleter ran %d time(s)\n", g_deleted);

  /* 2. a cubert tensor out to the library: a 4 x 8 view */
  for (i = 0; i < 32; i++) values[i] = i * i;
  st = cubert_client_create_from_slice(client, values, sizeof values, &h, &err);
  if (st != CUBERT_STATUS_OK) return fail("create_from_slice", st, &err);
  d.binding = h;
  d.rank = 2;
  d.shape[0] = shape[0];
  d.shape[1] = shape[1];
  d.strides[0] = 8;
  d.strides[1] = 1;
  d.elem_size = 4;
  /* HOST ordering (the default): the export waits for the upload to land */
  st = cubert_client_dlpack_export(client, &d, im.dtype, NULL, &mine, &err);
  if (st != CUBERT_STATUS_OK) return fail("dlpack_export", st, &err);
  cubert_client_handle_release(client, &h, NULL); /* the tensor keeps the memory */
  row = 3;
  col = 5;
  printf("export: device %d:%d, %d-D %lld x %lld, element [3][5] = %u (expected %u)\n",
         (int)mine->dl_tensor.device.device_type, (int)mine->dl_tensor.device.device_id,
         (int)mine->dl_tensor.ndim, (long long)mine->dl_tensor.shape[0],
         (long long)mine->dl_tensor.shape[1],
         (unsigned)((const uint32_t *)mine->dl_tensor.data)[row * mine->dl_tensor.strides[0] +
                                                            col * mine->dl_tensor.strides[1]],
         (unsigned)values[3 * 8 + 5]);
  mine->deleter(mine); /* the consumer is done: cubert's reference goes */
  cubert_client_release(client);
  return g_deleted == 1 ? 0 : 1;
}
