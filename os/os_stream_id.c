/* SPDX-License-Identifier: MIT */
/*
 * os/os_stream_id.c: the calling thread's stream id (CubeCL's StreamId::current):
 * scoped overrides, per-thread ids from a global counter, the process-wide
 * policy. Per-thread state is two thread-local variables (GNU C __thread,
 * as the OS layer already needs GNU C for its __atomic builtins): a
 * launch asks for the stream id on every call, and a thread-local read is a
 * load, where pthread_getspecific was a call and pthread_once another.
 *  - t_stream_id: the thread's allocated id + 1 (0 = not allocated yet);
 *  - t_override: the thread's innermost override token (caller storage),
 *    each token linking to the one it shadows.
 */
#include "cubert/os.h"

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

static cubert_status_t stream_id_invalid(cubert_error_t *out_error, const char *reason) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
}

cubert_status_t cubert_stream_id_executes_begin(cubert_stream_id_t id,
                                                cubert_stream_id_token_t *out_token,
                                                cubert_error_t *out_error) {
  if (!out_token)
    return stream_id_invalid(out_error, "cubert_stream_id_executes_begin: out_token is NULL");
  out_token->id = id;
  out_token->previous_ = t_override;
  out_token->state_ = STREAM_ID_TOKEN_ACTIVE;
  t_override = out_token;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_stream_id_executes_end(cubert_stream_id_token_t *token,
                                              cubert_error_t *out_error) {
  if (!token) return stream_id_invalid(out_error, "cubert_stream_id_executes_end: token is NULL");
  if (token->state_ != STREAM_ID_TOKEN_ACTIVE)
    return stream_id_invalid(out_error, "cubert_stream_id_executes_end: the token is not active "
                                        "(ended already, or never begun)");
  if (t_override != token) /* not this thread's innermost */
    return stream_id_invalid(out_error, "cubert_stream_id_executes_end: not the calling thread's "
                                        "innermost override");
  t_override = (cubert_stream_id_token_t *)token->previous_;
  token->previous_ = NULL;
  token->state_ = 0;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_stream_id_executes(cubert_stream_id_t id, void (*fn)(void *user),
                                          void *user, cubert_error_t *out_error) {
  cubert_stream_id_token_t token;
  if (!fn) return stream_id_invalid(out_error, "cubert_stream_id_executes: fn is NULL");
  CUBERT_RETURN_IF_ERROR(cubert_stream_id_executes_begin(id, &token, out_error));
  fn(user);
  return cubert_stream_id_executes_end(&token, out_error);
}

cubert_status_t cubert_stream_id_set_policy(cubert_stream_policy_t policy,
                                            cubert_error_t *out_error) {
  if (!cubert_stream_policy_is_valid(policy)) {
    uint64_t field = (uint64_t)(uint32_t)policy;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &field, 1,
                            "cubert_stream_id_set_policy: unknown policy");
  }
  __atomic_store_n(&g_stream_id_policy, (uint32_t)policy, __ATOMIC_RELEASE);
  return CUBERT_STATUS_OK;
}

cubert_stream_policy_t cubert_stream_id_policy(void) {
  return (cubert_stream_policy_t)__atomic_load_n(&g_stream_id_policy, __ATOMIC_ACQUIRE);
}
