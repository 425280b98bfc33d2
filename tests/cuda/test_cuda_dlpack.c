/* SPDX-License-Identifier: MIT */
/* The CUDA driver's DLPack primitives (docs/interop.md) on the fake driver:
 * the device is kDLCUDA with its ordinal, a device pointer is adopted as
 * is, and exports / imports ordered against a native CUstream (one the fake
 * created, as another library would) go through stream_order_native; the
 * ambiguous native stream 0 is refused. */
#include "cuda_test.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/dlpack.h"
#include "cubert_kernels.h"

int cts_cuda_prepare(char *skip, size_t size);

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

static cubert_client_t *open_device(cubert_allocator_t allocator, uint32_t index) {
  cubert_cuda_options_t o;
  cubert_client_t *c = NULL;
  cubert_cuda_options_initialize(&o);
  o.device.index = index;
  CHECK_OK(cubert_cuda_client_create(allocator, &o, &c, NULL));
  return c;
}

TEST(cuda_dlpack_native_streams) {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  const cubert_cuda_loader_t *cu = NULL;
  cubert_client_t *a, *b;
  CUstream native = NULL;
  uint32_t data[256], back[256];
  cubert_handle_t h;
  cubert_copy_descriptor_t d;
  cubert_dlpack_dtype_t u32 = {CUBERT_DLPACK_UINT, 32, 1};
  cubert_dlpack_options_t o;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_imported_t im;
  cubert_dlpack_device_t dev;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(4);
  cubert_error_t err;
  int i;
  fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
  allocator = counting_allocator_initialize(&counting);
  a = open_device(allocator, 0);
  b = open_device(allocator, 1); /* another device on the same GPU */
  dev = cubert_client_dlpack_device(a);
  CHECK_EQ_I64(dev.device_type, CUBERT_DLPACK_DEVICE_CUDA);
  CHECK_EQ_I64(dev.device_id, 0);
  CHECK_OK(cubert__cuda_loader_shared(&cu, NULL));
  CHECK(cu->cuStreamCreate(&native, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  for (i = 0; i < 256; i++) data[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(a, data, sizeof data, &h, NULL));
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, &h);
  cubert_launch_arguments_set_u32(&args, 0, 5);
  CHECK_OK(cubert_client_launch(a, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  memset(&d, 0, sizeof d);
  d.binding = h;
  d.rank = 1;
  d.shape[0] = 256;
  d.strides[0] = 1;
  d.elem_size = 4;
  cubert_dlpack_options_initialize(&o);
  o.stream_kind = CUBERT_DLPACK_STREAM_NATIVE;
  o.stream = 0; /* ambiguous: refused, nothing exported */
  CHECK_STATUS(cubert_client_dlpack_export(a, &d, u32, &o, &t, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "ambiguous");
  CHECK(t == NULL);
  o.stream = (uint64_t)(uintptr_t)native; /* the native stream waits for the kernel */
  CHECK_OK(cubert_client_dlpack_export(a, &d, u32, &o, &t, NULL));
  CHECK_EQ_I64(t->dl_tensor.device.device_type, CUBERT_DLPACK_DEVICE_CUDA);
  /* device b adopts the device pointer as is, after the native stream's work */
  CHECK_OK(cubert_client_dlpack_import(b, t, &o, &im, NULL));
  {
    cubert_resource_t ra, rb;
    CHECK_OK(cubert_client_get_resource(a, &h, &ra, NULL));
    CHECK_OK(cubert_client_get_resource(b, &im.tensor.binding, &rb, NULL));
    CHECK_EQ_U64(ra.address, rb.address);
    CHECK(rb.ptr == NULL); /* device memory: no host pointer */
  }
  CHECK_OK(cubert_client_read_one(b, &im.tensor.binding, back, sizeof back, NULL));
  for (i = 0; i < 256; i++) CHECK_EQ_U64(back[i], (uint32_t)i + 5u);
  CHECK_OK(cubert_client_handle_release(b, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_sync(b, NULL)); /* gives the tensor back: the export's deleter */
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  CHECK(cu->cuStreamSynchronize(native) == CUDA_SUCCESS);
  CHECK(cu->cuStreamDestroy(native) == CUDA_SUCCESS);
  cubert_client_release(b);
  cubert_client_release(a);
  CHECK_MSG(counting.live_blocks == 0, "leaked %lld blocks", (long long)counting.live_blocks);
  CHECK_EQ_U64(counting.bad_frees, 0);
  counting_allocator_destroy(&counting);
}
