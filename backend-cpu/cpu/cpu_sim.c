/* SPDX-License-Identifier: MIT */
/* backend-cpu/cpu/cpu_sim.c: the deterministic mode of the CPU driver
 * (cubert/cpu.h CUBERT_CPU_MODE_DETERMINISTIC, docs/simulation.md).
 *
 * No thread runs stream ops or kernels. Whenever the host must wait (an
 * event synchronize: a completion, a GC wait, a full ring, a stream's
 * teardown), cpu_sim_run_until runs on the waiting thread, under sim_mutex:
 *   1. collect the runnable steps: each stream's head op whose wait (if
 *      any) is satisfied, in stream-index order;
 *   2. ask the chooser which one runs (no question when only one can);
 *   3. fold (kind, identity, sequence) into the trace hash and run it inline;
 * until the awaited condition holds. No runnable step while it does not hold
 * is a deadlock: FAILED_PRECONDITION (counted), never a hang. The server's GC
 * is not a step: it polls events at its own calls, on the host's thread, so
 * a seed still fixes everything. */
#include "cpu/cpu_driver.h"
#include "cubert/driver/sim.h"

#define SIM_DEFAULT_LOG 65536u
#define STEP_STREAM 1u

cubert_status_t cpu_sim_create(cpu_device_t *d, const cubert_cpu_options_t *o,
                               cubert_error_t *out_error) {
  size_t cap;
  cubert_status_t status;
  pthread_mutex_init(&d->sim_mutex, NULL);
  if (o->mode != CUBERT_CPU_MODE_DETERMINISTIC) return CUBERT_STATUS_OK;
  d->deterministic = 1;
  cap = o->log_capacity ? o->log_capacity : SIM_DEFAULT_LOG;
  d->sim_log_capacity = cap; /* cpu_sim_destroy frees the log with it if a later block fails */
  if (cubert_allocator_malloc_array(d->allocator, cap, sizeof(uint32_t), 0, (void **)&d->sim_log,
                                    NULL) !=
          CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(d->allocator, d->stream_count, sizeof(uint32_t), 0,
                                    (void **)&d->sim_ids, NULL) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(d->allocator, d->stream_count, sizeof(uint64_t), 0,
                                    (void **)&d->sim_seqs, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "deterministic mode: choice log");
  if (o->replay_count || o->replay)
    status = cubert_sim_chooser_initialize_replay(&d->sim_own, o->replay, o->replay_count, d->sim_log, cap, NULL);
  else if (o->choice_bytes_count || o->choice_bytes)
    status = cubert_sim_chooser_initialize_bytes(&d->sim_own, o->choice_bytes, o->choice_bytes_count,
                                           d->sim_log, cap, NULL);
  else
    status = cubert_sim_chooser_initialize_seed(&d->sim_own, o->seed, d->sim_log, cap, NULL);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "deterministic mode: bad replay log or choice bytes");
  d->sim = &d->sim_own;
  return CUBERT_STATUS_OK;
}

void cpu_sim_destroy(cpu_device_t *d) {
  if (d->sim_log)
    cubert_allocator_free(d->allocator, d->sim_log, d->sim_log_capacity * sizeof(uint32_t), 0);
  if (d->sim_ids)
    cubert_allocator_free(d->allocator, d->sim_ids, d->stream_count * sizeof(uint32_t), 0);
  if (d->sim_seqs)
    cubert_allocator_free(d->allocator, d->sim_seqs, d->stream_count * sizeof(uint64_t), 0);
  d->sim_log = NULL;
  d->sim_ids = NULL;
  d->sim_seqs = NULL;
  pthread_mutex_destroy(&d->sim_mutex);
}

void cpu_sim_set_stream(cpu_device_t *d, uint32_t index, cpu_stream_t *stream) {
  /* the step loop scans the stream table under its lock: a change waits for
   * a running loop (another thread's wait) to finish its step */
  if (d->deterministic) pthread_mutex_lock(&d->sim_mutex);
  __atomic_store_n(&d->streams[index], stream, __ATOMIC_RELEASE);
  if (d->deterministic) pthread_mutex_unlock(&d->sim_mutex);
}

cubert_status_t cpu_sim_run_until(void *device, cpu_stream_done_fn_t done, void *arg) {
  cpu_device_t *d = (cpu_device_t *)device;
  cubert_status_t status = CUBERT_STATUS_OK;
  pthread_mutex_lock(&d->sim_mutex);
  for (;;) {
    uint32_t n = 0, i, k;
    if (done && done(arg)) break;
    for (i = 0; i < d->stream_count; i++) {
      cpu_stream_t *s = __atomic_load_n(&d->streams[i], __ATOMIC_ACQUIRE);
      if (s && cpu_stream_head_runnable(s, &d->sim_seqs[n])) d->sim_ids[n++] = i;
    }
    if (n == 0) {
      if (done) {
        d->sim_deadlocks++;
        status = CUBERT_STATUS_FAILED_PRECONDITION;
      }
      break;
    }
    k = cubert_sim_choose(d->sim, n, d->sim_ids);
    cubert_sim_trace(d->sim, STEP_STREAM, d->sim_ids[k], d->sim_seqs[k]);
    cpu_stream_step(d->streams[d->sim_ids[k]]);
  }
  pthread_mutex_unlock(&d->sim_mutex);
  return status;
}
