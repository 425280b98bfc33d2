/*
 * backend-cpu/host/host_stream_id.c: the calling thread's stream id (spec 3.4):
 * scoped overrides, per-thread ids from a global counter, the process-wide
 * policy. Per-thread state is two thread-local variables (GNU C __thread,
 * as the hosted layer already needs GNU C for its __atomic builtins): a
 * launch asks for the stream id on every call, and a thread-local read is a
 * load, where pthread_getspecific was a call and pthread_once another.
 *  - t_stream_id: the thread's allocated id + 1 (0 = not allocated yet);
 *  - t_override: the thread's innermost override token (caller storage),
 *    each token linking to the one it shadows.
 */
#include "cubert/host.h"

#define STREAM_ID_TOKEN_ACTIVE 0x53544944u /* "STID" */

static __thread uint64_t t_stream_id;
static __thread cubert_stream_id_token_t *t_override;

static uint64_t g_stream_id_next;                                /* atomic */
static uint32_t g_stream_id_policy = CUBERT_STREAM_POLICY_PER_THREAD; /* atomic */

cubert_stream_id_t cubert_stream_id_allocate(void) {
  return cubert_stream_id_from_value(__atomic_fetch_add(&g_stream_id_next, 1, __ATOMIC_RELAXED));
}

cubert_stream_id_t cubert_stream_id_current(void) {
  cubert_stream_id_t id;
  if (t_override) return t_override->id;
  if (cubert_stream_id_policy() == CUBERT_STREAM_POLICY_SINGLE) return cubert_stream_id_default();
  /* PER_THREAD, and PER_TASK (no task runtime here: per thread). */
  if (t_stream_id) return cubert_stream_id_from_value(t_stream_id - 1u);
  id = cubert_stream_id_allocate();
  if (id.value == UINT64_MAX) return cubert_stream_id_default(); /* id + 1 must not wrap */
  t_stream_id = id.value + 1u;
  return id;
}

cubert_status_t cubert_stream_id_executes_begin(cubert_stream_id_t id,
                                                cubert_stream_id_token_t *out_token) {
  if (!out_token) return CUBERT_STATUS_INVALID_ARGUMENT;
  out_token->id = id;
  out_token->previous_ = t_override;
  out_token->state_ = STREAM_ID_TOKEN_ACTIVE;
  t_override = out_token;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_stream_id_executes_end(cubert_stream_id_token_t *token) {
  if (!token || token->state_ != STREAM_ID_TOKEN_ACTIVE) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (t_override != token) return CUBERT_STATUS_INVALID_ARGUMENT; /* not this thread's innermost */
  t_override = (cubert_stream_id_token_t *)token->previous_;
  token->previous_ = NULL;
  token->state_ = 0;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_stream_id_executes(cubert_stream_id_t id, void (*fn)(void *user),
                                          void *user) {
  cubert_stream_id_token_t token;
  if (!fn) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_stream_id_executes_begin(id, &token));
  fn(user);
  return cubert_stream_id_executes_end(&token);
}

cubert_status_t cubert_stream_id_set_policy(cubert_stream_policy_t policy) {
  if (!cubert_stream_policy_is_valid(policy)) return CUBERT_STATUS_INVALID_ARGUMENT;
  __atomic_store_n(&g_stream_id_policy, (uint32_t)policy, __ATOMIC_RELEASE);
  return CUBERT_STATUS_OK;
}

cubert_stream_policy_t cubert_stream_id_policy(void) {
  return (cubert_stream_policy_t)__atomic_load_n(&g_stream_id_policy, __ATOMIC_ACQUIRE);
}
