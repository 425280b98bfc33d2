/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda_graph.c: CUDA graphs in the fake driver, as the real
 * one behaves for what the CUDA driver uses (kernel nodes in a chain):
 *  - cuGraphAddKernelNode copies the kernel's parameter values when it is
 *    called (here the dialect's three: the argument block, the mode word, the
 *    report address); the caller's memory may change right after;
 *  - cuGraphInstantiateWithFlags copies the graph: later changes to the
 *    graph do not reach the executable graph, and the graph may be destroyed
 *    while the executable lives;
 *  - cuGraphExecKernelNodeSetParams gives a node new parameters for the
 *    launches made after it (launches already enqueued keep theirs; the fake
 *    runs work at enqueue, so they ran already); its function must stay the
 *    one the node was made with (CUDA_ERROR_INVALID_VALUE otherwise), the
 *    node must be of the graph the executable came from;
 *  - cuGraphAddDependencies links nodes (programmatic edges too; rules at
 *    the function);
 *  - cuGraphLaunch runs the nodes in dependency order on the stream (here:
 *    the order they were added, which is a chain's), as that many
 *    cuLaunchKernel calls would, and counts one graph launch.
 * Errors: NULL or unknown objects CUDA_ERROR_INVALID_VALUE /
 * CUDA_ERROR_INVALID_HANDLE; no context CUDA_ERROR_INVALID_CONTEXT; a fault
 * knob for graph launches: CUBERT_FAKE_CUDA_GRAPH_LAUNCH_RESULT.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda_internal.h"

#define FAKE_GRAPH_MAX_NODES 4096

typedef struct fake_kernel_node_t {
  CUfunction func;
  unsigned grid[3], block[3], shared;
  unsigned char args[FAKE_CUDA_ARGS_BYTES];
  uint32_t mode;
  uint64_t report;
} fake_kernel_node_t;

struct CUgraphNode_st {
  struct CUgraph_st *graph;
  uint32_t index;
};

struct CUgraph_st {
  struct CUctx_st *ctx;
  uint32_t count, capacity;
  fake_kernel_node_t *nodes;
  struct CUgraphNode_st **handles;
};

struct CUgraphExec_st {
  struct CUctx_st *ctx;
  struct CUgraph_st *origin; /* for node identity only (may be destroyed: never read) */
  uint32_t count;
  fake_kernel_node_t *nodes;
};

static CUresult node_from(const CUDA_KERNEL_NODE_PARAMS_v2 *p, fake_kernel_node_t *out) {
  if (!p || !p->func || !p->kernelParams || p->gridDimX == 0 || p->gridDimY == 0 ||
      p->gridDimZ == 0 || p->blockDimX == 0 || p->blockDimY == 0 || p->blockDimZ == 0 ||
      (uint64_t)p->blockDimX * p->blockDimY * p->blockDimZ > 1024 || p->extra)
    return CUDA_ERROR_INVALID_VALUE;
  out->func = p->func;
  out->grid[0] = p->gridDimX;
  out->grid[1] = p->gridDimY;
  out->grid[2] = p->gridDimZ;
  out->block[0] = p->blockDimX;
  out->block[1] = p->blockDimY;
  out->block[2] = p->blockDimZ;
  out->shared = p->sharedMemBytes;
  /* the values, copied now (the kernel's parameter list: args, mode, report) */
  memcpy(out->args, p->kernelParams[0], FAKE_CUDA_ARGS_BYTES);
  memcpy(&out->mode, p->kernelParams[1], sizeof out->mode);
  memcpy(&out->report, p->kernelParams[2], sizeof out->report);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphCreate(CUgraph *out, unsigned int flags) {
  struct CUgraph_st *g;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  g = (struct CUgraph_st *)calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  g->ctx = fake_current;
  *out = g;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.graphs_live++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                   const CUDA_KERNEL_NODE_PARAMS_v2 *params) {
  fake_kernel_node_t node;
  struct CUgraphNode_st *h;
  size_t i;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || !g || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < ndeps; i++)
    if (!deps[i] || deps[i]->graph != g) return CUDA_ERROR_INVALID_VALUE;
  r = node_from(params, &node);
  if (r != CUDA_SUCCESS) return r;
  if (g->count == FAKE_GRAPH_MAX_NODES) return CUDA_ERROR_OUT_OF_MEMORY;
  if (g->count == g->capacity) {
    uint32_t cap = g->capacity ? g->capacity * 2 : 8;
    fake_kernel_node_t *n = (fake_kernel_node_t *)realloc(g->nodes, cap * sizeof *n);
    struct CUgraphNode_st **hs;
    if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
    g->nodes = n;
    hs = (struct CUgraphNode_st **)realloc(g->handles, cap * sizeof *hs);
    if (!hs) return CUDA_ERROR_OUT_OF_MEMORY;
    g->handles = hs;
    g->capacity = cap;
  }
  h = (struct CUgraphNode_st *)calloc(1, sizeof *h);
  if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
  h->graph = g;
  h->index = g->count;
  g->nodes[g->count] = node;
  g->handles[g->count++] = h;
  *out = h;
  return CUDA_SUCCESS;
}

/* Edges between nodes added before (the real driver's rules for what the
 * CUDA driver uses): `edges` NULL means default edges; a programmatic edge
 * (the downstream kernel may start once every block of the upstream one
 * triggered or ended: it waits in griddepcontrol.wait) must leave from the
 * PROGRAMMATIC or LAUNCH_ORDER port, the PROGRAMMATIC port only with a
 * programmatic edge, to_port is 0; both nodes of this graph, distinct. The
 * fake runs a graph's nodes in the order they were added, which for a
 * chain of kernels that wait at their start is what the GPU computes. */
CUresult fake_cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                     const CUgraphEdgeData *edges, size_t n) {
  size_t i;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!g || (n && (!from || !to))) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < n; i++) {
    if (!from[i] || !to[i] || from[i]->graph != g || to[i]->graph != g || from[i] == to[i] ||
        from[i]->index >= to[i]->index) /* a chain: the fake keeps the order they were added */
      return CUDA_ERROR_INVALID_VALUE;
    if (edges) {
      const CUgraphEdgeData *e = &edges[i];
      if (e->to_port != 0 || e->type > CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC ||
          e->from_port > CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER ||
          (e->type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC &&
           e->from_port == CU_GRAPH_KERNEL_NODE_PORT_DEFAULT) ||
          (e->type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT &&
           e->from_port == CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC))
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  pthread_mutex_lock(&fake_mutex);
  for (i = 0; i < n; i++)
    if (edges && edges[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC)
      fake_stats_.graph_programmatic_edges++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags) {
  struct CUgraphExec_st *x;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || !g || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  x = (struct CUgraphExec_st *)calloc(1, sizeof *x);
  if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
  x->nodes = (fake_kernel_node_t *)malloc((g->count ? g->count : 1) * sizeof *x->nodes);
  if (!x->nodes) {
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (g->count) memcpy(x->nodes, g->nodes, g->count * sizeof *x->nodes);
  x->count = g->count;
  x->ctx = g->ctx;
  x->origin = g;
  *out = x;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.graph_instantiations++;
  fake_stats_.graph_execs_live++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n,
                                             const CUDA_KERNEL_NODE_PARAMS_v2 *params) {
  fake_kernel_node_t node;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!x || !n || n->graph != x->origin || n->index >= x->count) return CUDA_ERROR_INVALID_VALUE;
  r = node_from(params, &node);
  if (r != CUDA_SUCCESS) return r;
  if (node.func != x->nodes[n->index].func) return CUDA_ERROR_INVALID_VALUE;
  x->nodes[n->index] = node;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.graph_node_updates++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphLaunch(CUgraphExec x, CUstream s) {
  CUresult want = (CUresult)fake_knob("CUBERT_FAKE_CUDA_GRAPH_LAUNCH_RESULT", 0);
  uint32_t i;
  CUresult r = fake_stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  if (s && s->ctx != x->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (want != CUDA_SUCCESS) {
    if (fake_is_fatal(want)) fake_poison(want);
    return want;
  }
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.graph_launches++;
  pthread_mutex_unlock(&fake_mutex);
  for (i = 0; i < x->count; i++) {
    fake_kernel_node_t *k = &x->nodes[i];
    void *params[3];
    params[0] = k->args;
    params[1] = &k->mode;
    params[2] = &k->report;
    r = fake_cuLaunchKernel(k->func, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                            k->block[2], k->shared, s, params, NULL);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphExecDestroy(CUgraphExec x) {
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  free(x->nodes);
  free(x);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.graph_execs_live--;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphDestroy(CUgraph g) {
  uint32_t i;
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < g->count; i++) free(g->handles[i]);
  free(g->handles);
  free(g->nodes);
  free(g);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.graphs_live--;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}
