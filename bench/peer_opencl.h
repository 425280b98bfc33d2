/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_opencl.h: the OpenCL peer of bench/bench_peers.c (PoCL, OpenCL
 * on the CPU, on Debian: pocl-opencl-icd + ocl-icd-opencl-dev), doing the
 * operations cubert's CPU server is measured on: an empty-kernel enqueue +
 * clFinish round trip, async enqueues from one thread, a float vector add
 * and a tiled matmul. The OpenCL C sources below are the same algorithms as
 * ck_add_f32 and ck_matmul_f32 (examples/kernels/cubert_kernels.h): 256 work-items
 * per group for the add, 16 x 16 local tiles for the matmul.
 *
 * Built with BENCH_HAVE_OPENCL=1 when the Makefile's probe found CL/cl.h and
 * libOpenCL; otherwise peer_cl_open says why and fails (the rows print
 * "skipped: <reason>"). The first CPU device of the first platform that has
 * one is used (prefer PoCL where several exist). Single-threaded use.
 */
#ifndef CUBERT_BENCH_PEER_OPENCL_H
#define CUBERT_BENCH_PEER_OPENCL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench_util.h"

#define PEER_CL_TILE 16
#define PEER_CL_GROUP 256

#if BENCH_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

static const char peer_cl_source[] =
    "__kernel void empty(void) {}\n"
    "__kernel void add(__global const float *a, __global const float *b,\n"
    "                  __global float *out, uint len) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < len) out[i] = a[i] + b[i];\n"
    "}\n"
    "#define TILE 16\n"
    "__kernel void matmul(__global const float *a, __global const float *b,\n"
    "                     __global float *c, uint m, uint k, uint n) {\n"
    "  __local float ta[TILE * TILE];\n"
    "  __local float tb[TILE * TILE];\n"
    "  uint lx = get_local_id(0), ly = get_local_id(1);\n"
    "  uint col = get_group_id(0) * TILE + lx, row = get_group_id(1) * TILE + ly;\n"
    "  float acc = 0.0f;\n"
    "  for (uint t = 0; t < k; t += TILE) {\n"
    "    ta[ly * TILE + lx] = row < m && t + lx < k ? a[row * k + t + lx] : 0.0f;\n"
    "    tb[ly * TILE + lx] = t + ly < k && col < n ? b[(t + ly) * n + col] : 0.0f;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint i = 0; i < TILE; i++) acc += ta[ly * TILE + i] * tb[i * TILE + lx];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (row < m && col < n) c[row * n + col] = acc;\n"
    "}\n";

typedef struct peer_cl_t {
  int ok;
  char why[192];     /* when !ok: the reason */
  char device[128];  /* platform: device */
  cl_context context;
  cl_command_queue queue;
  cl_program program;
  cl_kernel empty, add, matmul;
  cl_mem mem[3];     /* the operands of the add or the matmul in use */
} peer_cl_t;

static int peer_cl_fail(peer_cl_t *cl, const char *what, cl_int code) {
  snprintf(cl->why, sizeof cl->why, "%s failed (OpenCL error %d)", what, (int)code);
  cl->ok = 0;
  return -1;
}

/* Pick a CPU device (a platform named "Portable Computing Language" first). */
static int peer_cl_pick(peer_cl_t *cl, cl_platform_id *out_platform, cl_device_id *out_device) {
  cl_platform_id platforms[8];
  cl_uint count = 0, i;
  int pass;
  cl_int e = clGetPlatformIDs(8, platforms, &count);
  if (e != CL_SUCCESS || count == 0) {
    snprintf(cl->why, sizeof cl->why,
             "no OpenCL platform (clGetPlatformIDs: %d; Debian: pocl-opencl-icd)", (int)e);
    return -1;
  }
  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < count && i < 8; i++) {
      char name[96];
      cl_device_id device;
      name[0] = 0;
      clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
      if (pass == 0 && strstr(name, "Portable Computing Language") == NULL) continue;
      if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_CPU, 1, &device, NULL) == CL_SUCCESS) {
        *out_platform = platforms[i];
        *out_device = device;
        return 0;
      }
    }
  snprintf(cl->why, sizeof cl->why, "no OpenCL CPU device among %u platform(s)", (unsigned)count);
  return -1;
}

/* Context, in-order queue, the program built; 0 or -1 (cl->why). */
static int peer_cl_open(peer_cl_t *cl) {
  cl_platform_id platform;
  cl_device_id device;
  cl_int e;
  const char *src = peer_cl_source;
  char pname[64], dname[64];
  memset(cl, 0, sizeof *cl);
  if (peer_cl_pick(cl, &platform, &device) != 0) return -1;
  pname[0] = dname[0] = 0;
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  snprintf(cl->device, sizeof cl->device, "%s: %s", pname, dname);
  cl->context = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateContext", e);
  cl->queue = clCreateCommandQueue(cl->context, device, 0, &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateCommandQueue", e);
  cl->program = clCreateProgramWithSource(cl->context, 1, &src, NULL, &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateProgramWithSource", e);
  e = clBuildProgram(cl->program, 1, &device, "", NULL, NULL);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clBuildProgram", e);
  cl->empty = clCreateKernel(cl->program, "empty", &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateKernel(empty)", e);
  cl->add = clCreateKernel(cl->program, "add", &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateKernel(add)", e);
  cl->matmul = clCreateKernel(cl->program, "matmul", &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateKernel(matmul)", e);
  cl->ok = 1;
  return 0;
}

static void peer_cl_release_buffers(peer_cl_t *cl) {
  int i;
  for (i = 0; i < 3; i++)
    if (cl->mem[i]) {
      clReleaseMemObject(cl->mem[i]);
      cl->mem[i] = NULL;
    }
}

static void peer_cl_close(peer_cl_t *cl) {
  peer_cl_release_buffers(cl);
  if (cl->empty) clReleaseKernel(cl->empty);
  if (cl->add) clReleaseKernel(cl->add);
  if (cl->matmul) clReleaseKernel(cl->matmul);
  if (cl->program) clReleaseProgram(cl->program);
  if (cl->queue) clReleaseCommandQueue(cl->queue);
  if (cl->context) clReleaseContext(cl->context);
  memset(cl, 0, sizeof *cl);
}

/* n round trips (one work-item enqueued, then clFinish); ns per round trip,
 * or -1 on an OpenCL error. */
static double peer_cl_round_trips(peer_cl_t *cl, long n) {
  size_t one = 1;
  long i;
  double t0 = bench_now_ns();
  for (i = 0; i < n; i++) {
    if (clEnqueueNDRangeKernel(cl->queue, cl->empty, 1, NULL, &one, &one, 0, NULL, NULL) !=
        CL_SUCCESS ||
        clFinish(cl->queue) != CL_SUCCESS)
      return -1;
  }
  return (bench_now_ns() - t0) / (double)n;
}

/* n enqueues of the empty kernel, then one clFinish; ns per launch or -1. */
static double peer_cl_async(peer_cl_t *cl, long n) {
  size_t one = 1;
  long i;
  double t0 = bench_now_ns();
  for (i = 0; i < n; i++)
    if (clEnqueueNDRangeKernel(cl->queue, cl->empty, 1, NULL, &one, &one, 0, NULL, NULL) !=
        CL_SUCCESS)
      return -1;
  if (clFinish(cl->queue) != CL_SUCCESS) return -1;
  return (bench_now_ns() - t0) / (double)n;
}

/* Device buffers holding copies of a (a_bytes), b (b_bytes) and an output of
 * out_bytes; 0 or -1 (cl->why). Replaces the previous operands. */
static int peer_cl_upload(peer_cl_t *cl, const void *a, size_t a_bytes, const void *b,
                          size_t b_bytes, size_t out_bytes) {
  cl_int e;
  peer_cl_release_buffers(cl);
  cl->mem[0] = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, a_bytes,
                              (void *)(size_t)a, &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateBuffer(a)", e);
  cl->mem[1] = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, b_bytes,
                              (void *)(size_t)b, &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateBuffer(b)", e);
  cl->mem[2] = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, out_bytes, NULL, &e);
  if (e != CL_SUCCESS) return peer_cl_fail(cl, "clCreateBuffer(out)", e);
  return 0;
}

/* One add over the uploaded operands (n floats), enqueue + clFinish; ns or -1. */
static double peer_cl_add(peer_cl_t *cl, size_t n) {
  cl_uint len = (cl_uint)n;
  size_t local = PEER_CL_GROUP, global = (n + PEER_CL_GROUP - 1) / PEER_CL_GROUP * PEER_CL_GROUP;
  double t0;
  if (clSetKernelArg(cl->add, 0, sizeof(cl_mem), &cl->mem[0]) != CL_SUCCESS ||
      clSetKernelArg(cl->add, 1, sizeof(cl_mem), &cl->mem[1]) != CL_SUCCESS ||
      clSetKernelArg(cl->add, 2, sizeof(cl_mem), &cl->mem[2]) != CL_SUCCESS ||
      clSetKernelArg(cl->add, 3, sizeof len, &len) != CL_SUCCESS)
    return -1;
  t0 = bench_now_ns();
  if (clEnqueueNDRangeKernel(cl->queue, cl->add, 1, NULL, &global, &local, 0, NULL, NULL) !=
      CL_SUCCESS ||
      clFinish(cl->queue) != CL_SUCCESS)
    return -1;
  return bench_now_ns() - t0;
}

/* One m x k . k x n matmul over the uploaded operands, enqueue + clFinish;
 * ns or -1. */
static double peer_cl_matmul(peer_cl_t *cl, cl_uint m, cl_uint k, cl_uint n) {
  size_t local[2], global[2];
  double t0;
  local[0] = local[1] = PEER_CL_TILE;
  global[0] = (n + PEER_CL_TILE - 1) / PEER_CL_TILE * PEER_CL_TILE;
  global[1] = (m + PEER_CL_TILE - 1) / PEER_CL_TILE * PEER_CL_TILE;
  if (clSetKernelArg(cl->matmul, 0, sizeof(cl_mem), &cl->mem[0]) != CL_SUCCESS ||
      clSetKernelArg(cl->matmul, 1, sizeof(cl_mem), &cl->mem[1]) != CL_SUCCESS ||
      clSetKernelArg(cl->matmul, 2, sizeof(cl_mem), &cl->mem[2]) != CL_SUCCESS ||
      clSetKernelArg(cl->matmul, 3, sizeof m, &m) != CL_SUCCESS ||
      clSetKernelArg(cl->matmul, 4, sizeof k, &k) != CL_SUCCESS ||
      clSetKernelArg(cl->matmul, 5, sizeof n, &n) != CL_SUCCESS)
    return -1;
  t0 = bench_now_ns();
  if (clEnqueueNDRangeKernel(cl->queue, cl->matmul, 2, NULL, global, local, 0, NULL, NULL) !=
      CL_SUCCESS ||
      clFinish(cl->queue) != CL_SUCCESS)
    return -1;
  return bench_now_ns() - t0;
}

/* Copy the output buffer (bytes) to dst; 0 or -1. */
static int peer_cl_read(peer_cl_t *cl, void *dst, size_t bytes) {
  return clEnqueueReadBuffer(cl->queue, cl->mem[2], CL_TRUE, 0, bytes, dst, 0, NULL, NULL) ==
                 CL_SUCCESS
             ? 0
             : -1;
}

#else /* !BENCH_HAVE_OPENCL: every call fails with the reason */

typedef struct peer_cl_t {
  int ok;
  char why[192];
  char device[128];
} peer_cl_t;

static int peer_cl_open(peer_cl_t *cl) {
  memset(cl, 0, sizeof *cl);
  snprintf(cl->why, sizeof cl->why,
           "built without OpenCL (no CL/cl.h + libOpenCL at build time; Debian: "
           "ocl-icd-opencl-dev pocl-opencl-icd)");
  return -1;
}
static void peer_cl_close(peer_cl_t *cl) { (void)cl; }
static double peer_cl_round_trips(peer_cl_t *cl, long n) { (void)cl; (void)n; return -1; }
static double peer_cl_async(peer_cl_t *cl, long n) { (void)cl; (void)n; return -1; }
static int peer_cl_upload(peer_cl_t *cl, const void *a, size_t a_bytes, const void *b,
                          size_t b_bytes, size_t out_bytes) {
  (void)cl; (void)a; (void)a_bytes; (void)b; (void)b_bytes; (void)out_bytes;
  return -1;
}
static double peer_cl_add(peer_cl_t *cl, size_t n) { (void)cl; (void)n; return -1; }
static double peer_cl_matmul(peer_cl_t *cl, uint32_t m, uint32_t k, uint32_t n) {
  (void)cl; (void)m; (void)k; (void)n;
  return -1;
}
static int peer_cl_read(peer_cl_t *cl, void *dst, size_t bytes) {
  (void)cl; (void)dst; (void)bytes;
  return -1;
}

#endif /* BENCH_HAVE_OPENCL */

#endif /* CUBERT_BENCH_PEER_OPENCL_H */
