/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_plan.c: the driver's plans (recorded sequences,
 * docs/recording.md) as CUDA graphs: one kernel node per launch, each
 * depending on the one before (cuGraphCreate, cuGraphAddKernelNode;
 * programmatically, cuGraphAddDependencies, when the node's kernel waits
 * for the one before at its start: cubert_cuda_function_t.grid_wait),
 * instantiated once (cuGraphInstantiateWithFlags); an update gives a node new
 * parameters in the executable graph (cuGraphExecKernelNodeSetParams: the
 * launches already enqueued keep theirs); a replay is one cuGraphLaunch.
 *
 * What a graph node cannot do here is refused with UNSUPPORTED, and the
 * server then replays the recording launch by launch: VALIDATE and RACECHECK
 * launches (their reports are per launch), dynamic cube counts (read back
 * before each launch), a dynamic shared size above 48 KiB (an attribute the
 * launch path raises), and a shape beyond the compiled function's limits
 * (the launch path queues that on the stream).
 */
#include <string.h>

#include "driver/cuda_driver.h"

struct cubert_driver_plan_t {
  CUgraph graph;
  CUgraphExec exec;
  uint32_t count;
  CUgraphNode *nodes;                     /* [count] */
  const cubert_cuda_function_t **functions; /* [count] */
};

static cubert_status_t plan_unsupported(const cubert_driver_launch_t *l, const char *why,
                                        cubert_error_t *out_error) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  cubert__cuda_format(reason, sizeof reason, "cuda plan: kernel %s: %s",
                      l->kernel->name ? l->kernel->name : "(unnamed)", why);
  cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0, reason);
  return CUBERT_STATUS_UNSUPPORTED;
}

/* The function of a launch a graph node can run, else UNSUPPORTED / the
 * function cache's refusal. */
static cubert_status_t plan_function(cuda_drv_t *d, const cubert_driver_launch_t *l,
                                     const cubert_cuda_function_t **out_function,
                                     cubert_error_t *out_error) {
  cubert_error_t e;
  if (!l->kernel->cuda_entry_name) return plan_unsupported(l, "no CUDA entry point", out_error);
  if (l->dynamic) return plan_unsupported(l, "a dynamic cube count", out_error);
  if (l->execution == CUBERT_EXECUTION_VALIDATE || l->execution == CUBERT_EXECUTION_RACECHECK)
    return plan_unsupported(l, "a VALIDATE / RACECHECK launch (per-launch reports)", out_error);
  if (l->shared_memory_bytes > 48u * 1024u)
    return plan_unsupported(l, "dynamic shared memory above 48 KiB", out_error);
  if (cubert__cuda_function_get(d->dev, l->kernel, out_function, &e) != CUBERT_STATUS_OK ||
      cubert__cuda_launch_check_shaped(d->dev, *out_function, l->count, l->cube_dim,
                                       l->shared_memory_bytes, &e) != CUBERT_STATUS_OK)
    return plan_unsupported(l, "the launch path refuses or queues it", out_error);
  if (d->dev->cu->fake) cubert__cuda_fake_known(l->kernel); /* its CPU body runs in the graph */
  return CUBERT_STATUS_OK;
}

/* The node's parameters: `args` (caller storage, copied by the driver at the
 * call) filled from the launch; mode and report words likewise. */
static void node_params(const cubert_driver_launch_t *l, const cubert_cuda_function_t *f,
                        cubert_kernel_args_t *args, uint32_t *mode, CUdeviceptr *report,
                        void **params, CUDA_KERNEL_NODE_PARAMS *p) {
  uint32_t i;
  memset(args, 0, sizeof *args);
  for (i = 0; i < l->buffer_count; i++) {
    args->buffers[i].ptr = (void *)(uintptr_t)l->buffers[i].address;
    args->buffers[i].size_bytes = l->buffers[i].size;
  }
  if (l->scalar_count) memcpy(args->scalars, l->scalars, l->scalar_count * sizeof(uint64_t));
  args->buffer_count = l->buffer_count;
  args->scalar_count = l->scalar_count;
  *mode = l->execution;
  *report = 0;
  params[0] = args;
  params[1] = mode;
  params[2] = report;
  memset(p, 0, sizeof *p);
  p->func = f->handle;
  p->gridDimX = l->count.x;
  p->gridDimY = l->count.y;
  p->gridDimZ = l->count.z;
  p->blockDimX = l->cube_dim.x;
  p->blockDimY = l->cube_dim.y;
  p->blockDimZ = l->cube_dim.z;
  p->sharedMemBytes = l->shared_memory_bytes;
  p->kernelParams = params;
  p->extra = NULL;
}

static void plan_free(cuda_drv_t *d, struct cubert_driver_plan_t *p) {
  if (p->exec) (void)d->dev->cu->cuGraphExecDestroy(p->exec);
  if (p->graph) (void)d->dev->cu->cuGraphDestroy(p->graph);
  if (p->nodes) cubert_allocator_free(d->allocator, p->nodes, p->count * sizeof(CUgraphNode), 0);
  if (p->functions)
    cubert_allocator_free(d->allocator, p->functions, p->count * sizeof(*p->functions), 0);
  cubert_allocator_free(d->allocator, p, sizeof(*p), 0);
}

cubert_status_t cuda_drv_plan_create(void *self, const cubert_driver_launch_t *launches,
                                     uint32_t count, cubert_driver_plan_t **out_plan,
                                     cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  const cubert_cuda_loader_t *cu = d->dev->cu;
  struct cubert_driver_plan_t *p = NULL;
  cubert_kernel_args_t args;
  uint32_t i, mode;
  CUdeviceptr report;
  void *params[3];
  CUDA_KERNEL_NODE_PARAMS np;
  CUresult r = CUDA_SUCCESS;
  const char *what = "cuGraphCreate";
  cubert_status_t st = cubert__cuda_device_enter(d->dev, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  if (cubert_allocator_malloc(d->allocator, sizeof(*p), 0, (void **)&p, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cuda plan");
  memset(p, 0, sizeof *p);
  p->count = count;
  if (cubert_allocator_malloc(d->allocator, count * sizeof(CUgraphNode), 0, (void **)&p->nodes, NULL) !=
          CUBERT_STATUS_OK ||
      cubert_allocator_malloc(d->allocator, count * sizeof(*p->functions), 0, (void **)&p->functions,
                              NULL) != CUBERT_STATUS_OK) {
    plan_free(d, p);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cuda plan");
  }
  for (i = 0; i < count; i++) {
    st = plan_function(d, &launches[i], &p->functions[i], out_error);
    if (st != CUBERT_STATUS_OK) {
      plan_free(d, p);
      return st;
    }
  }
  r = cu->cuGraphCreate(&p->graph, 0);
  for (i = 0; r == CUDA_SUCCESS && i < count; i++) {
    int programmatic = i && cu->cuGraphAddDependencies && p->functions[i]->grid_wait;
    node_params(&launches[i], p->functions[i], &args, &mode, &report, params, &np);
    what = "cuGraphAddKernelNode";
    r = cu->cuGraphAddKernelNode(&p->nodes[i], p->graph, i && !programmatic ? &p->nodes[i - 1] : NULL,
                                 i && !programmatic ? 1 : 0, &np);
    if (r == CUDA_SUCCESS && programmatic) {
      /* the node's kernel waits for the one before at its start
       * (griddepcontrol.wait, include/cubert/kernel.h): it may launch as
       * soon as every cube of the one before started (its trigger), which
       * takes the launch latency off the chain (docs/recording.md) */
      CUgraphEdgeData edge;
      memset(&edge, 0, sizeof edge);
      edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      what = "cuGraphAddDependencies";
      r = cu->cuGraphAddDependencies(p->graph, &p->nodes[i - 1], &p->nodes[i], &edge, 1);
      if (r != CUDA_SUCCESS && !cubert__cuda_result_is_fatal(r)) {
        edge.from_port = 0; /* refused: the full dependency */
        edge.type = CU_GRAPH_DEPENDENCY_TYPE_DEFAULT;
        r = cu->cuGraphAddDependencies(p->graph, &p->nodes[i - 1], &p->nodes[i], &edge, 1);
      } else if (r == CUDA_SUCCESS) {
        d->stats.plan_programmatic_edges++;
      }
    }
  }
  if (r == CUDA_SUCCESS) {
    what = "cuGraphInstantiateWithFlags";
    r = cu->cuGraphInstantiateWithFlags(&p->exec, p->graph, 0);
  }
  if (r != CUDA_SUCCESS) {
    /* a lost device is returned; any other refusal of the graph calls lets the
     * server replay launch by launch (UNSUPPORTED, the driver's reason kept) */
    st = cubert__cuda_device_fail(d->dev, r, CUBERT_CUDA_OP_LAUNCH, what, 0, out_error);
    plan_free(d, p);
    if (st == CUBERT_STATUS_UNAVAILABLE || st == CUBERT_STATUS_RESOURCE_EXHAUSTED ||
        st == CUBERT_STATUS_OUT_OF_MEMORY)
      return st;
    return plan_unsupported(&launches[0], "the driver refused the graph", out_error);
  }
  d->stats.plans_created++;
  *out_plan = p;
  return CUBERT_STATUS_OK;
}

cubert_status_t cuda_drv_plan_update(void *self, cubert_driver_plan_t *plan, uint32_t index,
                                     const cubert_driver_launch_t *launch, cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  struct cubert_driver_plan_t *p = plan;
  cubert_kernel_args_t args;
  uint32_t mode;
  CUdeviceptr report;
  void *params[3];
  CUDA_KERNEL_NODE_PARAMS np;
  CUresult r;
  cubert_status_t st;
  /* unreachable: an index past the plan (the server updates the launches it planned) */
  if (index >= p->count)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "cuda plan: no such launch");
  st = cubert__cuda_device_enter(d->dev, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  node_params(launch, p->functions[index], &args, &mode, &report, params, &np);
  r = d->dev->cu->cuGraphExecKernelNodeSetParams(p->exec, p->nodes[index], &np);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(d->dev, r, CUBERT_CUDA_OP_LAUNCH, "cuGraphExecKernelNodeSetParams",
                                    0, out_error);
  d->stats.plan_updates++;
  return CUBERT_STATUS_OK;
}

cubert_status_t cuda_drv_plan_launch(void *self, cubert_driver_plan_t *plan,
                                     cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  CUresult r;
  cubert_status_t st;
  cuda_drv_settle(s);
  st = cubert__cuda_device_enter(d->dev, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = d->dev->cu->cuGraphLaunch(plan->exec, s->s.handle);
  s->ops++;
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(d->dev, r, CUBERT_CUDA_OP_LAUNCH, "cuGraphLaunch", 0, out_error);
  d->stats.plan_launches++;
  return CUBERT_STATUS_OK;
}

void cuda_drv_plan_destroy(void *self, cubert_driver_plan_t *plan) {
  cuda_drv_t *d = cuda_drv_of(self);
  cubert_error_t ignored;
  /* on a lost device the graph calls fail harmlessly; the memory goes anyway */
  (void)cubert__cuda_device_enter(d->dev, &ignored);
  plan_free(d, plan);
}
