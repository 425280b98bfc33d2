/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_testing.h: TEST-ONLY entry point of the CPU device:
 * cubert_cpu_client_create with the server's fault injection
 * (core/server/server_faults.h). Not for production use.
 */
#ifndef CUBERT_BACKEND_CPU_CPU_CPU_TESTING_H
#define CUBERT_BACKEND_CPU_CPU_CPU_TESTING_H

#include "server/server_faults.h"
#include "cubert/cpu.h"

CUBERT_EXTERN_C_BEGIN

/* cubert_cpu_client_create with fault injection (faults NULL: none;
 * borrowed for the call). Same codes. */
cubert_status_t cubert__cpu_client_create_with_faults(
    cubert_allocator_t allocator, const cubert_cpu_options_t *options,
    const cubert_server_faults_t *faults, cubert_client_t **out_client, cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_BACKEND_CPU_CPU_CPU_TESTING_H */
