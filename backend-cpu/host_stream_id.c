/*
 * backend-cpu/host_stream_id.c: the calling thread's stream id (spec 3.4):
 * scoped overrides, per-thread ids from a global counter, the process-wide
 * policy. Per-thread state is two pthread keys (no _Thread_local):
 *  - id key: the thread's allocated id, stored as (id + 1) in the pointer
 *    value (NULL = not allocated yet), so nothing is allocated per thread;
 *  - override key: the thread's innermost override token (caller storage),
 *    each token linking to the one it shadows.
 */
#include <pthread.h>

#include "cubert/host.h"

#define STREAM_ID_TOKEN_ACTIVE 0x53544944u /* "STID" */

static pthread_once_t g_stream_id_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_stream_id_key;
static pthread_key_t g_stream_id_override_key;
static int g_stream_id_keys_ok; /* written once inside pthread_once */

static uint64_t g_stream_id_next;                                /* atomic */
static uint32_t g_stream_id_policy = CUBERT_STREAM_POLICY_PER_THREAD; /* atomic */

static void stream_id_keys_create(void) {
  if (pthread_key_create(&g_stream_id_key, NULL) != 0) return;
  if (pthread_key_create(&g_stream_id_override_key, NULL) != 0) {
    pthread_key_delete(g_stream_id_key);
    return;
  }
  g_stream_id_keys_ok = 1;
}

static int stream_id_keys_ready(void) {
  if (pthread_once(&g_stream_id_once, stream_id_keys_create) != 0) return 0;
  return g_stream_id_keys_ok;
}

cubert_stream_id_t cubert_stream_id_allocate(void) {
  return cubert_stream_id_from_value(__atomic_fetch_add(&g_stream_id_next, 1, __ATOMIC_RELAXED));
}

cubert_stream_id_t cubert_stream_id_current(void) {
  const cubert_stream_id_token_t *top;
  void *slot;
  cubert_stream_id_t id;
  if (!stream_id_keys_ready()) return cubert_stream_id_default();
  top = (const cubert_stream_id_token_t *)pthread_getspecific(g_stream_id_override_key);
  if (top) return top->id;
  if (cubert_stream_id_policy() == CUBERT_STREAM_POLICY_SINGLE) return cubert_stream_id_default();
  /* PER_THREAD, and PER_TASK (no task runtime here: per thread). */
  slot = pthread_getspecific(g_stream_id_key);
  if (slot) return cubert_stream_id_from_value((uint64_t)((uintptr_t)slot - 1u));
  id = cubert_stream_id_allocate();
  /* id + 1 must fit a pointer (only 32-bit hosts after 2^32 - 1 ids). */
  if (id.value >= (uint64_t)UINTPTR_MAX ||
      pthread_setspecific(g_stream_id_key, (void *)(uintptr_t)(id.value + 1u)) != 0)
    return cubert_stream_id_default();
  return id;
}

cubert_status_t cubert_stream_id_executes_begin(cubert_stream_id_t id,
                                                cubert_stream_id_token_t *out_token) {
  void *previous;
  if (!out_token) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!stream_id_keys_ready()) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  previous = pthread_getspecific(g_stream_id_override_key);
  if (pthread_setspecific(g_stream_id_override_key, out_token) != 0)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  out_token->id = id;
  out_token->previous_ = previous;
  out_token->state_ = STREAM_ID_TOKEN_ACTIVE;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_stream_id_executes_end(cubert_stream_id_token_t *token) {
  if (!token || token->state_ != STREAM_ID_TOKEN_ACTIVE) return CUBERT_STATUS_INVALID_ARGUMENT;
  /* An active token implies the keys exist (begin succeeded). */
  if (!stream_id_keys_ready()) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (pthread_getspecific(g_stream_id_override_key) != (void *)token)
    return CUBERT_STATUS_INVALID_ARGUMENT; /* not this thread's innermost override */
  if (pthread_setspecific(g_stream_id_override_key, token->previous_) != 0)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
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
