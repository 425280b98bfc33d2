/* backend-cpu/cpu_sim.c: the deterministic mode of the CPU server
 * (cubert/cpu.h CUBERT_CPU_MODE_DETERMINISTIC, docs/simulation.md).
 *
 * No thread runs stream ops, GC reclamations or kernels. Whenever the host
 * must wait, cpu_sim_run_until runs on the waiting thread, under sim_mutex:
 *   1. collect the runnable steps: each stream slot's head op whose wait
 *      (if any) is satisfied, in slot order, then the oldest GC task whose
 *      event completed (identity max_streams + 1);
 *   2. ask the chooser which one runs (no question when only one can);
 *   3. fold (kind, identity, sequence) into the trace hash and run it inline;
 * until the awaited condition holds. No runnable step while it does not hold
 * is a deadlock: FAILED_PRECONDITION (counted), never a hang.
 *
 * Also the process-wide list of CPU servers, so that the cubert_cpu_*
 * functions can find a client's server from its device id. */
#include "cpu_server.h"

#include <string.h>

#define SIM_DEFAULT_LOG 65536u
#define STEP_STREAM 1u
#define STEP_GC 2u

static pthread_mutex_t g_registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static cpu_server_t *g_registry;

void cpu_registry_add(cpu_server_t *s) {
  pthread_mutex_lock(&g_registry_mutex);
  s->registry_next = g_registry;
  g_registry = s;
  pthread_mutex_unlock(&g_registry_mutex);
}

void cpu_registry_remove(cpu_server_t *s) {
  cpu_server_t **p;
  pthread_mutex_lock(&g_registry_mutex);
  for (p = &g_registry; *p; p = &(*p)->registry_next)
    if (*p == s) {
      *p = s->registry_next;
      break;
    }
  pthread_mutex_unlock(&g_registry_mutex);
}

static cubert_status_t server_of_client(cubert_client_t *client, cpu_server_t **out) {
  cubert_device_id_t id;
  cpu_server_t *s;
  if (!client) return CUBERT_STATUS_INVALID_ARGUMENT;
  id = cubert_client_device(client);
  if (id.type_id != CUBERT_CPU_DEVICE_TYPE) return CUBERT_STATUS_NOT_FOUND;
  pthread_mutex_lock(&g_registry_mutex);
  for (s = g_registry; s; s = s->registry_next)
    if (s->device_index == id.index_id) break;
  pthread_mutex_unlock(&g_registry_mutex);
  if (!s) return CUBERT_STATUS_NOT_FOUND;
  *out = s;
  return CUBERT_STATUS_OK;
}

cubert_status_t cpu_sim_create(cpu_server_t *s, const cubert_cpu_options_t *o,
                               cubert_error_t *out_error) {
  size_t cap;
  cubert_status_t status;
  pthread_mutex_init(&s->sim_mutex, NULL);
  s->fault_drop_wait = o->fault_drop_wait;
  s->fault_drop_gc_wait = o->fault_drop_gc_wait;
  if (o->mode != CUBERT_CPU_MODE_DETERMINISTIC) return CUBERT_STATUS_OK;
  s->deterministic = 1;
  cap = o->log_capacity ? o->log_capacity : SIM_DEFAULT_LOG;
  s->sim_log_capacity = cap; /* cpu_sim_destroy frees the log with it if a later block fails */
  if (cubert_allocator_malloc_array(s->allocator, cap, sizeof(uint32_t), 0, (void **)&s->sim_log) !=
          CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(s->allocator, (size_t)s->max_streams + 2, sizeof(uint32_t), 0,
                                    (void **)&s->sim_ids) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(s->allocator, (size_t)s->max_streams + 2, sizeof(uint64_t), 0,
                                    (void **)&s->sim_seqs) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "deterministic mode: choice log");
  if (o->replay_count || o->replay)
    status = cubert_sim_chooser_init_replay(&s->sim_own, o->replay, o->replay_count, s->sim_log, cap);
  else if (o->choice_bytes_count || o->choice_bytes)
    status = cubert_sim_chooser_init_bytes(&s->sim_own, o->choice_bytes, o->choice_bytes_count,
                                           s->sim_log, cap);
  else
    status = cubert_sim_chooser_init_seed(&s->sim_own, o->seed, s->sim_log, cap);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "deterministic mode: bad replay log or choice bytes");
  s->sim = &s->sim_own;
  return CUBERT_STATUS_OK;
}

void cpu_sim_destroy(cpu_server_t *s) {
  if (s->sim_log)
    cubert_allocator_free(s->allocator, s->sim_log, s->sim_log_capacity * sizeof(uint32_t), 0);
  if (s->sim_ids)
    cubert_allocator_free(s->allocator, s->sim_ids, ((size_t)s->max_streams + 2) * sizeof(uint32_t),
                          0);
  if (s->sim_seqs)
    cubert_allocator_free(s->allocator, s->sim_seqs,
                          ((size_t)s->max_streams + 2) * sizeof(uint64_t), 0);
  s->sim_log = NULL;
  s->sim_ids = NULL;
  s->sim_seqs = NULL;
  pthread_mutex_destroy(&s->sim_mutex);
}

cubert_status_t cpu_sim_run_until(cpu_server_t *s, cpu_sim_done_fn_t done, void *arg) {
  cubert_status_t status = CUBERT_STATUS_OK;
  uint32_t gc_id = s->max_streams + 1;
  pthread_mutex_lock(&s->sim_mutex);
  for (;;) {
    uint32_t n = 0, i, k;
    if (done && done(arg)) break;
    for (i = 0; i <= s->max_streams; i++)
      if (s->slots[i].initialized && cpu_stream_head_runnable(&s->slots[i].stream, &s->sim_seqs[n]))
        s->sim_ids[n++] = i;
    if (cpu_gc_runnable(s, &s->sim_seqs[n])) s->sim_ids[n++] = gc_id;
    if (n == 0) {
      if (done) {
        s->sim_deadlocks++;
        status = CUBERT_STATUS_FAILED_PRECONDITION;
      }
      break;
    }
    k = cubert_sim_choose(s->sim, n, s->sim_ids);
    if (s->sim_ids[k] == gc_id) {
      cubert_sim_trace(s->sim, STEP_GC, gc_id, s->sim_seqs[k]);
      cpu_gc_step(s);
    } else {
      cubert_sim_trace(s->sim, STEP_STREAM, s->sim_ids[k], s->sim_seqs[k]);
      cpu_stream_step(&s->slots[s->sim_ids[k]].stream);
    }
  }
  pthread_mutex_unlock(&s->sim_mutex);
  return status;
}

/* ---- public API ---- */

cubert_status_t cubert_cpu_sim_info(cubert_client_t *client, cubert_cpu_sim_info_t *out) {
  cpu_server_t *s = NULL;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(server_of_client(client, &s));
  memset(out, 0, sizeof(*out));
  if (!s->deterministic) return CUBERT_STATUS_OK;
  pthread_mutex_lock(&s->sim_mutex);
  out->deterministic = 1;
  out->source = s->sim->source;
  out->seed = s->sim->seed;
  out->trace_hash = s->sim->trace_hash;
  out->steps = s->sim->steps;
  out->choices = s->sim->choices;
  out->log = s->sim->log;
  out->log_len = s->sim->log_len;
  out->log_truncated = s->sim->log_truncated;
  out->diverged = s->sim->diverged;
  out->deadlocks = s->sim_deadlocks;
  pthread_mutex_unlock(&s->sim_mutex);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_sim_attach(cubert_client_t *client, cubert_sim_chooser_t *chooser) {
  cpu_server_t *s = NULL;
  CUBERT_RETURN_IF_ERROR(server_of_client(client, &s));
  if (!s->deterministic) return CUBERT_STATUS_FAILED_PRECONDITION;
  pthread_mutex_lock(&s->sim_mutex);
  s->sim = chooser ? chooser : &s->sim_own;
  pthread_mutex_unlock(&s->sim_mutex);
  if (s->race) {
    pthread_mutex_lock(&s->race_mutex);
    if (s->sim->source == CUBERT_SIM_SOURCE_SEED || s->sim->source == CUBERT_SIM_SOURCE_PCT)
      cubert_race_set_seed(s->race, s->sim->seed);
    else
      cubert_race_clear_seed(s->race);
    pthread_mutex_unlock(&s->race_mutex);
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_sim_drain(cubert_client_t *client) {
  cpu_server_t *s = NULL;
  CUBERT_RETURN_IF_ERROR(server_of_client(client, &s));
  if (!s->deterministic) return CUBERT_STATUS_FAILED_PRECONDITION;
  return cpu_sim_run_until(s, NULL, NULL);
}

cubert_status_t cubert_cpu_race_counters(cubert_client_t *client, cubert_race_counters_t *out) {
  cpu_server_t *s = NULL;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(server_of_client(client, &s));
  pthread_mutex_lock(&s->race_mutex);
  cubert_race_counters(s->race, out); /* zeros for NULL */
  pthread_mutex_unlock(&s->race_mutex);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cpu_race_last_report(cubert_client_t *client, cubert_race_report_t *out) {
  cpu_server_t *s = NULL;
  bool got;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(server_of_client(client, &s));
  pthread_mutex_lock(&s->race_mutex);
  got = cubert_race_last_report(s->race, out);
  pthread_mutex_unlock(&s->race_mutex);
  return got ? CUBERT_STATUS_OK : CUBERT_STATUS_NOT_FOUND;
}
