/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/inline/inline_testing.h: TEST-ONLY entry point of the inline
 * device: cubert_inline_client_create with the server's fault injection
 * (core/server/server_faults.h). Not for production use.
 */
#ifndef CUBERT_BACKEND_CPU_INLINE_INLINE_TESTING_H
#define CUBERT_BACKEND_CPU_INLINE_INLINE_TESTING_H

#include "server/server_faults.h"
#include "cubert/inline.h"

CUBERT_EXTERN_C_BEGIN

/* cubert_inline_client_create with fault injection (faults NULL: none;
 * borrowed for the call). Same codes; freestanding, as the inline device. */
cubert_status_t cubert__inline_client_create_with_faults(
    cubert_allocator_t allocator, const cubert_inline_options_t *options,
    const cubert_server_faults_t *faults, cubert_client_t **out_client, cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_BACKEND_CPU_INLINE_INLINE_TESTING_H */
