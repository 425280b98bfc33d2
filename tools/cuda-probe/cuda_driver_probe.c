/* SPDX-License-Identifier: MIT */
/*
 * tools/cuda-probe/cuda_driver_probe.c: what the CUDA driver does while a
 * stream waits on a gate word, and after a sticky error. Not part of the
 * build (it links libcuda directly and is GNU C); on a GPU machine:
 *
 *   gcc -O1 -g -std=gnu99 -I$CUDA_PATH/include tools/cuda-probe/cuda_driver_probe.c \
 *       -lcuda -ldl -lpthread -o /tmp/probe
 *   export NCCL_NVLS_ENABLE=0
 *   timeout 20 /tmp/probe gate OP dev|host [ctx1]   # OP: none modload modload_get getfunc
 *       # launch alloc free hostalloc writeval ctxsync ncclinit ncclinit_pre ncclinit_warm
 *   timeout 20 /tmp/probe lost bad|trap early|late  # GPU 1 opened before / after the fault
 *
 * gate: GPU 0's stream S waits (cuStreamWaitValue32) on a word in device
 * (dev) or host (host) memory; another thread opens it 4 s later (a
 * cuStreamWriteValue32 on another stream, or a host store); OP is timed
 * ("BLOCKED BY THE GATE" when it returned only once the gate opened; no
 * RESULT line and exit 124: it never returned). What it printed on two
 * H200s (driver 580.159.04, NCCL 2.28.3): docs/collectives.md, "NCCL before
 * the gates" and "A lost GPU".
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *PTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_nop() { ret; }\n"
    ".visible .entry k_bad(.param .u64 p) {\n .reg .u64 %rd<2>;\n .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p];\n mov.b32 %r1, 7;\n st.global.u32 [%rd1], %r1;\n ret;\n}\n"
    ".visible .entry k_trap() { trap; }\n";

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static double T0;
#define SAY(...) do { printf("[%7.1f ms] ", now_ms() - T0); printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)
static const char *nm(CUresult r) { const char *s = NULL; cuGetErrorName(r, &s); return s ? s : "?"; }
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { SAY("setup %s -> %s", #x, nm(r_)); exit(3); } } while (0)

/* NCCL */
typedef struct { char b[128]; } ncclUniqueId;
typedef void *ncclComm_t;
static int (*p_initall)(ncclComm_t *, int, const int *);
static int (*p_allreduce)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
static int (*p_gs)(void), (*p_ge)(void), (*p_destroy)(ncclComm_t);
static void nccl_load(void) {
  void *h = dlopen("libnccl.so.2", RTLD_NOW);
  if (!h) { SAY("no libnccl: %s", dlerror()); exit(4); }
  p_initall = (int (*)(ncclComm_t *, int, const int *))dlsym(h, "ncclCommInitAll");
  p_allreduce = (int (*)(const void *, void *, size_t, int, int, ncclComm_t, CUstream))dlsym(h, "ncclAllReduce");
  p_gs = (int (*)(void))dlsym(h, "ncclGroupStart");
  p_ge = (int (*)(void))dlsym(h, "ncclGroupEnd");
  p_destroy = (int (*)(ncclComm_t))dlsym(h, "ncclCommDestroy");
}

static CUcontext ctx[2];
static CUdevice dev[2];
static int ndev;
static volatile uint32_t *hword;
static CUdeviceptr dword;
static int use_host;
static CUcontext gate_ctx;
static int release_ms = 4000;

static void *releaser(void *arg) {
  (void)arg;
  usleep(release_ms * 1000);
  if (use_host) {
    SAY("releaser: host store opens the gate");
    *hword = 1;
    __sync_synchronize();
  } else {
    CUstream rs;
    double t;
    CK(cuCtxSetCurrent(gate_ctx));
    CK(cuStreamCreate(&rs, CU_STREAM_NON_BLOCKING));
    t = now_ms();
    SAY("releaser: cuStreamWriteValue32 on another stream ...");
    CUresult r = cuStreamWriteValue32(rs, dword, 1, 0);
    SAY("releaser: cuStreamWriteValue32 -> %s after %.1f ms", nm(r), now_ms() - t);
  }
  return NULL;
}

static void gate_mode(const char *op, int gate_on_1) {
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUstream S, other;
  CUdeviceptr buf = 0, w2;
  pthread_t th;
  double t;
  CUresult r = CUDA_SUCCESS;
  ncclComm_t comms[2] = {0, 0};
  int devs[2] = {0, 1};
  if (!strncmp(op, "nccl", 4)) nccl_load();
  gate_ctx = ctx[gate_on_1 ? 1 : 0];
  CK(cuCtxSetCurrent(ctx[0]));
  if (!strcmp(op, "getfunc") || !strcmp(op, "launch")) CK(cuModuleLoadData(&mod, PTX));
  if (!strcmp(op, "launch")) CK(cuModuleGetFunction(&fn, mod, "k_nop"));
  if (!strcmp(op, "free")) CK(cuMemAlloc(&buf, 1 << 20));
  if (!strcmp(op, "ncclinit_pre") || !strcmp(op, "ncclinit_warm")) {
    if (!strcmp(op, "ncclinit_pre")) {
      t = now_ms();
      SAY("pre: ncclCommInitAll(2) -> %d (%.1f ms)", p_initall(comms, 2, devs), now_ms() - t);
    } else {
      int k;
      for (k = 0; k < 2; k++) {
        ncclComm_t c1 = NULL;
        t = now_ms();
        int rr = p_initall(&c1, 1, &devs[k]);
        SAY("warm GPU %d: ncclCommInitAll(1) -> %d (%.1f ms)", k, rr, now_ms() - t);
        t = now_ms();
        rr = p_destroy(c1);
        SAY("warm GPU %d: ncclCommDestroy -> %d (%.1f ms)", k, rr, now_ms() - t);
      }
    }
    CK(cuCtxSetCurrent(ctx[0]));
  }
  /* the gate */
  CK(cuCtxSetCurrent(gate_ctx));
  if (use_host) {
    void *hp;
    CK(cuMemHostAlloc(&hp, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    hword = (volatile uint32_t *)hp;
    *hword = 0;
    CK(cuMemHostGetDevicePointer(&dword, hp, 0));
  } else {
    CK(cuMemAlloc(&dword, 64));
    CK(cuMemsetD32(dword, 0, 16));
    CK(cuCtxSynchronize());
  }
  CK(cuStreamCreate(&S, CU_STREAM_NON_BLOCKING));
  CK(cuStreamWaitValue32(S, dword, 1, CU_STREAM_WAIT_VALUE_GEQ));
  SAY("gate closed on GPU %d's stream S (word in %s memory); opens at %d ms", gate_on_1, use_host ? "host" : "device", release_ms);
  pthread_create(&th, NULL, releaser, NULL);
  CK(cuCtxSetCurrent(ctx[0]));
  CK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  t = now_ms();
  SAY("op %s ...", op);
  if (!strcmp(op, "none")) r = CUDA_SUCCESS;
  else if (!strcmp(op, "modload")) r = cuModuleLoadData(&mod, PTX);
  else if (!strcmp(op, "modload_get")) { r = cuModuleLoadData(&mod, PTX); if (!r) r = cuModuleGetFunction(&fn, mod, "k_nop"); }
  else if (!strcmp(op, "getfunc")) r = cuModuleGetFunction(&fn, mod, "k_nop");
  else if (!strcmp(op, "launch")) { r = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, other, NULL, NULL); if (!r) r = cuStreamSynchronize(other); }
  else if (!strcmp(op, "alloc")) r = cuMemAlloc(&buf, 1 << 20);
  else if (!strcmp(op, "free")) r = cuMemFree(buf);
  else if (!strcmp(op, "hostalloc")) { void *p; r = cuMemHostAlloc(&p, 1 << 20, 0); }
  else if (!strcmp(op, "writeval")) { r = cuMemAlloc(&w2, 64); if (!r) r = cuStreamWriteValue32(other, w2, 5, 0); if (!r) r = cuStreamSynchronize(other); }
  else if (!strcmp(op, "ctxsync")) r = cuCtxSynchronize();
  else if (!strncmp(op, "ncclinit", 8)) {
    if (!comms[0]) {
      int rr = p_initall(comms, 2, devs);
      SAY("ncclCommInitAll(2) -> %d", rr);
    }
    CUdeviceptr b0, b1;
    CUstream s0, s1;
    CK(cuCtxSetCurrent(ctx[0]));
    CK(cuMemAlloc(&b0, 4096));
    CK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CK(cuCtxSetCurrent(ctx[1]));
    CK(cuMemAlloc(&b1, 4096));
    CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    p_gs();
    p_allreduce((void *)b0, (void *)b0, 1024, 7 /* float32 */, 0, comms[0], s0);
    p_allreduce((void *)b1, (void *)b1, 1024, 7, 0, comms[1], s1);
    int ge = p_ge();
    SAY("all_reduce enqueued -> %d", ge);
    cuCtxSetCurrent(ctx[0]);
    r = cuStreamSynchronize(s0);
    cuCtxSetCurrent(ctx[1]);
    if (!r) r = cuStreamSynchronize(s1);
  } else { SAY("unknown op"); exit(2); }
  double took = now_ms() - t;
  SAY("RESULT op=%s word=%s gate_on=GPU%d -> %s took %.1f ms: %s", op, use_host ? "host" : "dev", gate_on_1, nm(r), took,
      took > release_ms - 600 ? "BLOCKED BY THE GATE" : "not blocked");
  pthread_join(th, NULL);
  cuCtxSetCurrent(gate_ctx);
  r = cuStreamSynchronize(S);
  SAY("S drained -> %s", nm(r));
}

/* ---- after a sticky error ---- */
#define TRY(label, call) do { CUresult r_ = (call); SAY("  %-44s -> %s", label, nm(r_)); } while (0)

static void *fresh_thread(void *arg) {
  CUcontext c = NULL, cur = NULL;
  (void)arg;
  SAY(" a fresh thread (no current context):");
  TRY("cuCtxGetCurrent", cuCtxGetCurrent(&cur));
  SAY("  (current = %s)", cur == NULL ? "NULL" : cur == ctx[0] ? "ctx0" : cur == ctx[1] ? "ctx1" : "other");
  TRY("cuDevicePrimaryCtxRetain(GPU1)", cuDevicePrimaryCtxRetain(&c, dev[1]));
  TRY("cuCtxSetCurrent(ctx1)", cuCtxSetCurrent(ctx[1] ? ctx[1] : c));
  { CUdeviceptr p; TRY("cuMemAlloc on GPU1", cuMemAlloc(&p, 4096)); }
  TRY("cuCtxSynchronize on GPU1", cuCtxSynchronize());
  TRY("cuDevicePrimaryCtxRetain(GPU0)", cuDevicePrimaryCtxRetain(&c, dev[0]));
  return NULL;
}

static void lost_mode(const char *kind, int early) {
  CUmodule m0, m1 = NULL;
  CUfunction bad, trap, nop0, nop1 = NULL;
  CUstream s0, s1 = NULL;
  CUdeviceptr b0, b1 = 0;
  CUcontext c, cur;
  pthread_t th;
  void *args[1];
  CUdeviceptr badp = 0x10;
  char host[64];
  CK(cuCtxSetCurrent(ctx[0]));
  CK(cuModuleLoadData(&m0, PTX));
  CK(cuModuleGetFunction(&bad, m0, "k_bad"));
  CK(cuModuleGetFunction(&trap, m0, "k_trap"));
  CK(cuModuleGetFunction(&nop0, m0, "k_nop"));
  CK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&b0, 4096));
  if (early) {
    CK(cuCtxSetCurrent(ctx[1]));
    CK(cuModuleLoadData(&m1, PTX));
    CK(cuModuleGetFunction(&nop1, m1, "k_nop"));
    CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&b1, 4096));
    CK(cuCtxSetCurrent(ctx[0]));
  }
  args[0] = &badp;
  SAY("fault (%s) on GPU0, GPU1 %s", kind, early ? "opened before" : "not opened yet");
  if (!strcmp(kind, "bad")) TRY("cuLaunchKernel k_bad", cuLaunchKernel(bad, 1, 1, 1, 1, 1, 1, 0, s0, args, NULL));
  else TRY("cuLaunchKernel k_trap", cuLaunchKernel(trap, 1, 1, 1, 1, 1, 1, 0, s0, NULL, NULL));
  TRY("cuStreamSynchronize(s0)", cuStreamSynchronize(s0));
  SAY(" GPU0's context, current:");
  TRY("cuStreamQuery(s0)", cuStreamQuery(s0));
  TRY("cuCtxSynchronize", cuCtxSynchronize());
  { CUdeviceptr p; TRY("cuMemAlloc", cuMemAlloc(&p, 4096)); }
  TRY("cuMemcpyDtoH", cuMemcpyDtoH(host, b0, 16));
  { CUstream s; TRY("cuStreamCreate", cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)); }
  { CUevent e; TRY("cuEventCreate", cuEventCreate(&e, 0)); }
  TRY("cuLaunchKernel k_nop", cuLaunchKernel(nop0, 1, 1, 1, 1, 1, 1, 0, s0, NULL, NULL));
  { CUmodule m; TRY("cuModuleLoadData", cuModuleLoadData(&m, PTX)); }
  TRY("cuMemFree", cuMemFree(b0));
  TRY("cuCtxGetCurrent", cuCtxGetCurrent(&cur));
  SAY("  (current = %s)", cur == ctx[0] ? "ctx0" : cur ? "other" : "NULL");
  { unsigned int v; TRY("cuCtxGetApiVersion", cuCtxGetApiVersion(ctx[0], &v)); }
  { int n; TRY("cuDeviceGetCount", cuDeviceGetCount(&n)); }
  { int v; TRY("cuDriverGetVersion", cuDriverGetVersion(&v)); }
  { int v; TRY("cuDeviceGetAttribute(GPU1)", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev[1])); }
  { size_t f, t; TRY("cuMemGetInfo", cuMemGetInfo(&f, &t)); }
  SAY(" GPU1 from the same thread (ctx0 still current):");
  TRY("cuDevicePrimaryCtxRetain(GPU1)", cuDevicePrimaryCtxRetain(&c, dev[1]));
  TRY("cuCtxSetCurrent(ctx1)", cuCtxSetCurrent(ctx[1]));
  { CUdeviceptr p; TRY("cuMemAlloc on GPU1", cuMemAlloc(&p, 4096)); }
  if (early) {
    TRY("cuLaunchKernel k_nop on GPU1", cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, s1, NULL, NULL));
    TRY("cuStreamSynchronize(s1)", cuStreamSynchronize(s1));
    TRY("cuMemcpyDtoH on GPU1", cuMemcpyDtoH(host, b1, 16));
  } else {
    TRY("cuModuleLoadData on GPU1", cuModuleLoadData(&m1, PTX));
  }
  TRY("cuCtxSynchronize on GPU1", cuCtxSynchronize());
  TRY("cuCtxSetCurrent(NULL)", cuCtxSetCurrent(NULL));
  TRY("cuDevicePrimaryCtxRetain(GPU1) after unbinding", cuDevicePrimaryCtxRetain(&c, dev[1]));
  pthread_create(&th, NULL, fresh_thread, NULL);
  pthread_join(th, NULL);
  SAY(" GPU0 reset:");
  TRY("cuDevicePrimaryCtxRelease(GPU0)", cuDevicePrimaryCtxRelease(dev[0]));
  TRY("cuDevicePrimaryCtxReset(GPU0)", cuDevicePrimaryCtxReset(dev[0]));
  TRY("cuDevicePrimaryCtxRetain(GPU0) after reset", cuDevicePrimaryCtxRetain(&c, dev[0]));
  TRY("cuCtxSetCurrent(new ctx0)", cuCtxSetCurrent(c));
  { CUdeviceptr p; TRY("cuMemAlloc on the new ctx0", cuMemAlloc(&p, 4096)); }
  TRY("cuDevicePrimaryCtxRetain(GPU1) after GPU0 reset", cuDevicePrimaryCtxRetain(&c, dev[1]));
  TRY("cuCtxSetCurrent(ctx1)", cuCtxSetCurrent(c));
  { CUdeviceptr p; TRY("cuMemAlloc on GPU1 after GPU0 reset", cuMemAlloc(&p, 4096)); }
}

int main(int argc, char **argv) {
  int i;
  T0 = now_ms();
  if (argc < 3) return 2;
  CK(cuInit(0));
  CK(cuDeviceGetCount(&ndev));
  for (i = 0; i < ndev && i < 2; i++) {
    CK(cuDeviceGet(&dev[i], i));
    if (!strcmp(argv[1], "lost") && i == 1 && strcmp(argv[3], "early")) continue;
    CK(cuDevicePrimaryCtxRetain(&ctx[i], dev[i]));
  }
  if (!strcmp(argv[1], "gate")) {
    use_host = argc > 3 && !strcmp(argv[3], "host");
    gate_mode(argv[2], argc > 4 && !strcmp(argv[4], "ctx1"));
  } else {
    lost_mode(argv[2], !strcmp(argv[3], "early"));
  }
  SAY("done");
  return 0;
}
