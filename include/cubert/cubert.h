/*
 * cubert: the CubeCL runtime rebuilt in C99.
 *
 * Umbrella header: the client API (client, handles, kernels, layouts, cube
 * counts, errors, properties, profiling). A device is created by its backend
 * (cubert/cpu.h, cubert/inline.h; the hosted layer: cubert/host.h). The
 * interface for backend authors (the driver table and the server kit) lives
 * in cubert/backend/ and is not included here; neither are the race checker
 * (cubert/race.h) and the simulation chooser (cubert/sim.h).
 *
 * The conventions every public header follows are written once, here:
 *
 *  - Names: prefix `cubert_`; types `cubert_thing_t`; macros `CUBERT_`; noun
 *    before verb (`cubert_handle_retain`); outputs last, named `out_...`.
 *  - Status: every fallible function returns a `cubert_status_t` (0 = OK).
 *    Details go to an optional caller-owned `cubert_error_t *out_error`
 *    (may be NULL). A call that fails has no side effect.
 *  - Ownership: "borrows" means the callee keeps no reference after returning;
 *    "retains" means it takes a reference that it releases later. Objects
 *    remember the allocator they were created with and free themselves with it.
 *  - Thread-safety: each declaration says whether it may be called from
 *    several threads at once. Unless it says so, an object must not be used
 *    from two threads at the same time.
 *  - Blocking: each declaration says whether it blocks. Nothing in core/
 *    blocks the OS; blocking waits live in the hosted layer.
 *  - The library never aborts, exits, panics or prints.
 */
#ifndef CUBERT_CUBERT_H
#define CUBERT_CUBERT_H

#include "cubert/base.h"
#include "cubert/config.h"
#include "cubert/status.h"
#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/handle.h"
#include "cubert/properties.h"
#include "cubert/device.h"
#include "cubert/cube.h"
#include "cubert/comm.h"
#include "cubert/stream_id.h"
#include "cubert/layout.h"
#include "cubert/client.h"
#include "cubert/memory.h"
#include "cubert/profile.h"
#include "cubert/kernel.h"

#endif /* CUBERT_CUBERT_H */
