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
 * is a deadlock: FAILED_PRECONDITION (counted), never a hang. The kit's GC
 * is not a step: it polls events at its own calls, on the host's thread, so
 * a seed still fixes everything. */
#include "cpu/cpu_driver.h"

#include <string.h>

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
  if (cubert_allocator_malloc_array(d->allocator, cap, sizeof(uint32_t), 0, (void **)&d->sim_log) !=
          CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(d->allocator, d->stream_count, sizeof(uint32_t), 0,
                                    (void **)&d->sim_ids) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(d->allocator, d->stream_count, sizeof(uint64_t), 0,
                                    (void **)&d->sim_seqs) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "deterministic mode: choice log");
  d->sim_log_capacity = cap;
  if (o->replay_count || o->replay)
    status = cubert_sim_chooser_init_replay(&d->sim_own, o->replay, o->replay_count, d->sim_log, cap);
  else if (o->choice_bytes_count || o->choice_bytes)
    status = cubert_sim_chooser_init_bytes(&d->sim_own, o->choice_bytes, o->choice_bytes_count,
                                           d->sim_log, cap);
  else
    status = cubert_sim_chooser_init_seed(&d->sim_own, o->seed, d->sim_log, cap);
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

cubert_status_t cpu_sim_run_until(cpu_device_t *d, cpu_sim_done_fn_t done, void *arg) {
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

/* ---- public API ---- */

cubert_status_t cubert_cpu_sim_info(cubert_client_t *client, cubert_cpu_sim_info_t *out) {
  cpu_device_t *d = NULL;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cpu_device_of(client, &d));
  memset(out, 0, sizeof(*out));
  if (!d->deterministic) return CUBERT_STATUS_OK;
  pthread_mutex_lock(&d->sim_mutex);
  out->deterministic = 1;
  out->source = d->sim->source;
  out->seed = d->sim->seed;
  out->trace_hash = d->sim->trace_hash;
  out->steps = d->sim->steps;
  out->choices = d->sim->choices;
  out->log = d->sim->log;
  out->log_len = d->sim->log_len;
  out->log_truncated = d->sim->log_truncated;
  out->diverged = d->sim->diverged;
  out->deadlocks = d->sim_deadlocks;
  pthread_mutex_unlock(&d->sim_mutex);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_sim_attach(cubert_client_t *client, cubert_sim_chooser_t *chooser) {
  cpu_device_t *d = NULL;
  uint64_t seed = 0;
  CUBERT_RETURN_IF_ERROR(cpu_device_of(client, &d));
  if (!d->deterministic) return CUBERT_STATUS_FAILED_PRECONDITION;
  pthread_mutex_lock(&d->sim_mutex);
  d->sim = chooser ? chooser : &d->sim_own;
  if (d->sim->source == CUBERT_SIM_SOURCE_SEED || d->sim->source == CUBERT_SIM_SOURCE_PCT)
    seed = d->sim->seed;
  pthread_mutex_unlock(&d->sim_mutex);
  return cubert_kit_race_seed(client, seed); /* reports carry the seed (0: none) */
}

cubert_status_t cubert_cpu_sim_drain(cubert_client_t *client) {
  cpu_device_t *d = NULL;
  CUBERT_RETURN_IF_ERROR(cpu_device_of(client, &d));
  if (!d->deterministic) return CUBERT_STATUS_FAILED_PRECONDITION;
  CUBERT_RETURN_IF_ERROR(cpu_sim_run_until(d, NULL, NULL));
  (void)cubert_kit_collect(client); /* what the GC holds for events that completed */
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_race_counters(cubert_client_t *client, cubert_race_counters_t *out) {
  cpu_device_t *d = NULL;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cpu_device_of(client, &d));
  return cubert_kit_race_counters(client, out);
}

cubert_status_t cubert_cpu_race_last_report(cubert_client_t *client, cubert_race_report_t *out) {
  cpu_device_t *d = NULL;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cpu_device_of(client, &d));
  return cubert_kit_race_last_report(client, out);
}
