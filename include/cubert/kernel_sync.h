/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel_sync.h: the cube barrier of the kernel dialect (included by
 * cubert/kernel.h; docs/kernels.md, "The barrier rule").
 *
 * The rule, the same on the CPU and on CUDA: a phase begins AND ends with a
 * cube-wide barrier. So
 *   - everything a phase writes (shared or global memory) is visible to the
 *     next phase and to the uniform code after it;
 *   - uniform code, which may read memory but never writes it, always sits
 *     between two barriers: it can read shared memory written by the phase
 *     before it, and the phase after it may overwrite what it read;
 *   - the only place two units can race is inside one phase (and two cubes
 *     anywhere in a launch): what the RACECHECK mode (kernel_race.h) checks.
 * On CUDA a phase is __syncthreads(), the block, __syncthreads(); on the CPU
 * the units of a phase run one after another, which is both barriers.
 *
 * CUBERT_SYNC_CUBE is CubeCL's sync_cube as a statement of uniform code: a
 * barrier on its own. Under the rule above it is never needed between phases
 * (where it only costs a __syncthreads); it exists so that code ported from
 * CubeCL statement by statement keeps its barriers. Inside a phase it cannot
 * work (on the CPU the units of a phase run in turn; on CUDA a barrier under
 * divergent control flow hangs or is undefined): RACECHECK reports it there.
 */
#ifndef CUBERT_KERNEL_SYNC_H
#define CUBERT_KERNEL_SYNC_H

#include "cubert/base.h"

/* Part of cubert/kernel.h (which includes it at its end): include that.
 * Alone it defines only macros (and, under nvcc, what needs kernel.h). */

#if !defined(__CUDACC__)
/* Checked copy: a barrier inside a phase is reported (RACECHECK); between
 * phases there is nothing to do on the CPU (uniform code sits between the
 * barriers of the phases around it). */
#define CUBERT_SYNC_CUBE()                                                                   \
  ((void)(cubert_unchecked_ || cubert_cube->unit == CUBERT_KERNEL_UNIFORM ||                 \
          !cubert_cube->race_note ||                                                         \
          (cubert_cube->race_note(cubert_cube, 0, 0, "sync_cube", 0, CUBERT_KERNEL_EVENT_SYNC), \
           0)))
#else
#define CUBERT_SYNC_CUBE() __syncthreads()
#endif

#endif /* CUBERT_KERNEL_SYNC_H */
