/* SPDX-License-Identifier: MIT */
/* core/client/client_completion.c: waiting on completions (the wait itself is the device's: the server's
 * completions synchronize an event, then drain the stream's errors). */
#include "base/internal.h"
#include "cubert/client.h"
#include "stream/stream.h"

void cubert__completion_set_done(cubert_completion_t *completion, cubert_status_t status,
                                 const cubert_error_t *error) {
  if (!completion) return;
  cubert_memset(completion, 0, sizeof(*completion));
  completion->vtable = NULL;
  completion->status = status;
  if (error) completion->error = *error;
  else if (status != CUBERT_STATUS_OK) completion->error.status = status;
}

cubert_status_t cubert_completion_wait(cubert_completion_t *completion, uint64_t timeout_ns,
                                       cubert_error_t *out_error) {
  cubert_status_t status;
  if (!completion) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (completion->vtable && completion->vtable->wait) {
    status = completion->vtable->wait(completion, timeout_ns);
    if (status == CUBERT_STATUS_DEADLINE_EXCEEDED) {
      return cubert_error_set(out_error, CUBERT_ERROR_DEADLINE_EXCEEDED, &timeout_ns, 1,
                              "completion not finished before the deadline");
    }
    if (status != CUBERT_STATUS_OK) return status;
  }
  if (completion->status != CUBERT_STATUS_OK && out_error) *out_error = completion->error;
  return completion->status;
}
