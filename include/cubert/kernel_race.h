/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_race.h: what the kernel race checker reports (included by
 * cubert/kernel.h; docs/kernels.md, "The race checker").
 *
 * A launch in CUBERT_EXECUTION_RACECHECK mode on a CPU driver runs as
 * VALIDATE (bounds checked, the first violation kept) and, in addition,
 * keeps shadow state for every element the accessors touch (CUBERT_LOAD,
 * CUBERT_STORE and the atomics, on buffer views and on shared views):
 * which unit of which cube, in which phase, read, wrote or updated it
 * atomically. Cubes run one after another on one thread, units in order, so
 * the result is the same on every run and every machine; nothing needs a
 * GPU. The first report (lowest cube, then program order) lands in the
 * launch's cubert_kernel_report_t (race_* fields) and, through the server,
 * in the stream's error queue as a SERVER_VALIDATION error whose reason
 * names the kernel, the view, the element, both units or cubes and the
 * phase. Raw accesses (`view.ptr[i]`) are not seen.
 *
 * What it reports (race_kind):
 *   UNITS           two units of one cube touched one element in one phase,
 *                   at least one wrote it, and not both atomically;
 *   CUBES           two cubes of the launch touched one global element, at
 *                   least one wrote it, not both atomically;
 *   UNIFORM_WRITE   uniform code (outside any phase) wrote memory;
 *   PLANE_DIVERGENT a plane operation ran inside a phase (on a GPU: under
 *                   divergent control flow, undefined);
 *   SYNC_DIVERGENT  CUBERT_SYNC_CUBE ran inside a phase;
 *   UNIT_DONE       a unit went on after CUBERT_UNIT_DONE (used inside a
 *                   loop nested in the phase, where it is that loop's
 *                   `continue`);
 *   PLANE_LANE      a plane broadcast / shuffle read a lane its plane lacks.
 * Uniform code reading shared memory that the phase before it wrote is not a
 * race under the barrier rule (kernel_sync.h: a phase ends with a barrier),
 * so there is nothing to report for it.
 */
#ifndef CUBERT_KERNEL_RACE_H
#define CUBERT_KERNEL_RACE_H

#include "cubert/base.h"

/* Part of cubert/kernel.h (which includes it at its end): include that.
 * Alone it defines only macros (and, under nvcc, what needs kernel.h). */

#define CUBERT_KERNEL_RACE_NONE 0u
#define CUBERT_KERNEL_RACE_UNITS 1u
#define CUBERT_KERNEL_RACE_CUBES 2u
#define CUBERT_KERNEL_RACE_UNIFORM_WRITE 3u
#define CUBERT_KERNEL_RACE_PLANE_DIVERGENT 4u
#define CUBERT_KERNEL_RACE_SYNC_DIVERGENT 5u
#define CUBERT_KERNEL_RACE_UNIT_DONE 6u
typedef char cubert_kernel_race_unit_done_is_6_[CUBERT_KERNEL_RACE_UNIT_DONE == 6u ? 1 : -1]; /* kernel.h reports it by number */
#define CUBERT_KERNEL_RACE_PLANE_LANE 7u

/* Events the dialect gives the checker besides accesses (race_note's
 * `access` argument; `name` is the primitive's CubeCL name). */
#define CUBERT_KERNEL_EVENT_SYNC 8u       /* CUBERT_SYNC_CUBE */
#define CUBERT_KERNEL_EVENT_PLANE 9u      /* a plane operation */
#define CUBERT_KERNEL_EVENT_PLANE_LANE 10u /* index: the missing lane */

#endif /* CUBERT_KERNEL_RACE_H */
