/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_faults.h: TEST-ONLY switches of the server (seeded-bug
 * programs of the race checker, docs/race-checker.md). Not for production
 * use: they make the runtime drop synchronization it needs, or make work
 * fail while it runs (docs/errors.md, "Errors from a running stream"). A
 * device gets them through cubert_device_options_t.faults (cubert/client.h),
 * the first member of every driver's options, which reaches
 * cubert_server_options_t.faults (cubert_server_options_from_device).
 */
#ifndef CUBERT_CORE_SERVER_SERVER_FAULTS_H
#define CUBERT_CORE_SERVER_SERVER_FAULTS_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* Faults injected for tests (the first two by the server, the rest by the
 * drivers named below). Zero: none. */
typedef struct cubert_server_faults_t {
  /* Drop the Nth (1-based) cross-stream wait the multi-stream's plans ask
   * for (neither enqueued nor told to the race checker). */
  uint32_t drop_wait;
  /* Misplace the Nth (1-based) release point of a command's pinned bindings:
   * recorded before the command instead of after it, so the release ring
   * may let the pins go while the command still reads them (the fence a GC
   * reclamation relies on; the name is from when a GC stream waited on the
   * consumer). */
  uint32_t drop_gc_wait;

  /* ---- run-time faults: honoured by the CPU drivers (threaded and
   * deterministic) and the inline driver, given in their options
   * (device.faults); the server alone and the CUDA driver ignore them ----
   * The work is accepted at submit (the call returns OK) and fails WHILE IT
   * RUNS on its stream: it does nothing (a kernel's outputs, a copy's
   * destination stay untouched) and its failure becomes an error of its
   * stream, returned (SERVER_UNHEALTHY) by the next flush / sync / read on
   * that stream and inherited by every stream that waits on a point of it
   * after the failure (docs/errors.md). Counted in submit order, on the
   * whole device. */

  /* Fail the Nth (1-based) launch of the kernel named fail_kernel (NULL:
   * of any kernel); 0 with fail_kernel set: every launch of that kernel.
   * Kinds SERVER_LAUNCH > LAUNCH_UNKNOWN, reason "kernel <name> failed on
   * stream <slot>: injected fault". */
  uint32_t fail_launch;
  /* Fail the Nth (1-based) copy (host to device, device to host or device
   * to device, as the server enqueues them: uploads, reads, staging). Kinds
   * SERVER_IO > IO_UNKNOWN, reason "copy failed on stream <slot>: injected
   * fault". */
  uint32_t fail_copy;
  /* The kernel name fail_launch counts (cubert_kernel_t.name, compared as
   * text; copied at creation, at most 63 characters); NULL: any kernel. */
  const char *fail_kernel;
} cubert_server_faults_t;

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_SERVER_SERVER_FAULTS_H */
