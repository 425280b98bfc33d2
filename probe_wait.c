#include <cuda.h>
#include <stdio.h>
#define C(x) do { CUresult r_ = (x); const char *n_; cuGetErrorName(r_, &n_); printf("%-60s -> %s\n", #x, n_); } while (0)
int main(void) {
  CUdevice d; CUcontext c; CUstream s; CUdeviceptr a = 0, b = 0; int v = 0;
  cuInit(0); cuDeviceGet(&d, 0); cuDevicePrimaryCtxRetain(&c, d); cuCtxSetCurrent(c);
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, d); printf("MEM_OPS_V1 %d\n", v);
  cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1, d); printf("NOR_V1 %d\n", v);
  C(cuMemAlloc(&a, 512));
  C(cuMemsetD8Async(a, 0, 4, s));
  C(cuStreamWaitValue32(s, a, 0, CU_STREAM_WAIT_VALUE_GEQ));
  C(cuStreamWriteValue32(s, a, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  C(cuMemAllocAsync(&b, 512, s));
  C(cuMemsetD8Async(b, 0, 4, s));
  C(cuStreamWaitValue32(s, b, 0, CU_STREAM_WAIT_VALUE_GEQ));
  C(cuStreamWriteValue32(s, b, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  C(cuStreamSynchronize(s));
  { void *f = 0; CUdriverProcAddressQueryResult q; 
    C(cuGetProcAddress("cuStreamWaitValue32", &f, 11070, 0, &q));
    { CUresult (*w)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = (CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned))f;
      C(w(s, b, 0, CU_STREAM_WAIT_VALUE_GEQ)); C(w(s, a, 0, CU_STREAM_WAIT_VALUE_GEQ)); }
    C(cuGetProcAddress("cuStreamWaitValue32", &f, 8000, 0, &q));
    { CUresult (*w)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = (CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned))f;
      C(w(s, b, 0, CU_STREAM_WAIT_VALUE_GEQ)); C(w(s, a, 0, CU_STREAM_WAIT_VALUE_GEQ)); }
  }
  C(cuStreamSynchronize(s));
  return 0;
}
