// SPDX-License-Identifier: MIT
// tools/gpu_graph_kernels.cu: what one kernel of a 10-node CUDA graph costs on
// the GPU, for a plain nvcc add and for the dialect's expansion piece by piece
// (its signature, 64-bit positions, a phase's two barriers, a cube context
// in local memory) up to ck_add_f32 UNCHECKED and CHECKED (docs/kernels.md,
// "Execution modes"). 1024 floats, 4 cubes of 256, 2000 replays then a sync,
// median of 7; then one replay + sync. On a machine with a GPU:
//   nvcc -std=c++17 -O2 -arch=sm_90 -Iinclude -Iexamples/kernels \
//        tools/gpu_graph_kernels.cu -o /tmp/gpu_graph_kernels && /tmp/gpu_graph_kernels
#include <cstdio>
#include <cstring>
#include <chrono>
#include <algorithm>
#include <vector>
#include "cubert_kernels.h"
extern "C" __global__ void small_add(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
#define SIG const cubert_kernel_args_t args, uint32_t mode, cubert_kernel_report_t *report
#define BODY32 unsigned n = (unsigned)(args.buffers[2].size_bytes / 4); unsigned i = blockIdx.x * blockDim.x + threadIdx.x; \
  if (i < n) ((float *)args.buffers[2].ptr)[i] = ((const float *)args.buffers[0].ptr)[i] + ((const float *)args.buffers[1].ptr)[i];
extern "C" __global__ void sig_add(SIG) { BODY32 }
extern "C" __global__ void sig_add64(SIG) {
  uint64_t n = args.buffers[2].size_bytes / 4; uint64_t i = ABSOLUTE_POS;
  if (i < n) ((float *)args.buffers[2].ptr)[i] = ((const float *)args.buffers[0].ptr)[i] + ((const float *)args.buffers[1].ptr)[i];
}
extern "C" __global__ void sig_add_bar(SIG) { __syncthreads(); { BODY32 } __syncthreads(); }
struct cube_t { uint32_t mode; cubert_kernel_report_t *report; };
static __device__ __noinline__ void oob(cube_t *c, uint64_t i) { if (c->report) c->report->oob_count = i; }
extern "C" __global__ void sig_add_local(SIG) {
  cube_t c; c.mode = mode; c.report = report;
  unsigned n = (unsigned)(args.buffers[2].size_bytes / 4); unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ((float *)args.buffers[2].ptr)[i] = ((const float *)args.buffers[0].ptr)[i] + ((const float *)args.buffers[1].ptr)[i];
  else if (i > 100000000u) oob(&c, i);
}
static double now() { return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
enum { N = 1024, K = 10, R = 2000, V = 7 };
static float *A, *B, *C;
static cubert_kernel_args_t args;
static void launch(int v, cudaStream_t s) {
  switch (v) {
  case 0: small_add<<<4, 256, 0, s>>>(A, B, C, N); break;
  case 1: sig_add<<<4, 256, 0, s>>>(args, 0, nullptr); break;
  case 2: sig_add64<<<4, 256, 0, s>>>(args, 0, nullptr); break;
  case 3: sig_add_bar<<<4, 256, 0, s>>>(args, 0, nullptr); break;
  case 4: sig_add_local<<<4, 256, 0, s>>>(args, 0, nullptr); break;
  case 5: ck_add_f32<<<4, 256, 0, s>>>(args, CUBERT_KERNEL_MODE_UNCHECKED, nullptr); break;
  case 6: ck_add_f32<<<4, 256, 0, s>>>(args, CUBERT_KERNEL_MODE_CHECKED, nullptr); break;
  }
}
int main() {
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMalloc(&A, N * 4); cudaMalloc(&B, N * 4); cudaMalloc(&C, N * 4);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, A, N * 4);
  cubert_kernel_args_set_buffer(&args, 1, B, N * 4);
  cubert_kernel_args_set_buffer(&args, 2, C, N * 4);
  const char *names[] = {"small_add", "sig_add (dialect signature)", "sig_add64 (64-bit pos)", "sig_add_bar (2 barriers)", "sig_add_local (cube in local)", "ck_add_f32 UNCHECKED", "ck_add_f32 CHECKED"};
  for (int rep = 0; rep < 2; rep++)
  for (int v = 0; v < V; v++) {
    cudaGraph_t g; cudaGraphExec_t ge;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int k = 0; k < K; k++) launch(v, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    std::vector<double> tg, tg1;
    for (int run = 0; run < 7; run++) {
      cudaGraphLaunch(ge, s); cudaStreamSynchronize(s);
      double t0 = now();
      for (int r = 0; r < R; r++) cudaGraphLaunch(ge, s);
      cudaStreamSynchronize(s);
      tg.push_back((now() - t0) / (R * K));
      t0 = now();
      for (int r = 0; r < 200; r++) { cudaGraphLaunch(ge, s); cudaStreamSynchronize(s); }
      tg1.push_back((now() - t0) / 200);
    }
    std::sort(tg.begin(), tg.end()); std::sort(tg1.begin(), tg1.end());
    printf("%-30s graph/kernel %6.0f ns [%6.0f..%6.0f]  graph10+sync %6.0f ns\n", names[v], tg[3], tg[0], tg[6], tg1[3]);
    cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
