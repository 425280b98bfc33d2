/* SPDX-License-Identifier: MIT */
/*
 * cubert: the CubeCL runtime rebuilt in C99.
 *
 * Umbrella header: the client API, for users. It pulls in the client
 * (cubert/client.h), handles as values (handle.h), kernels and their dialect
 * (kernel.h), layouts (layout.h), cube counts and dims (cube.h), errors and
 * status codes (error.h, status.h), device ids and properties (device.h,
 * properties.h), profiling tokens, levels and summaries (profile.h), memory
 * usage and allocation modes (memory.h), collective value types (comm.h),
 * stream ids (stream_id.h), the allocator and arena (allocator.h), the
 * version (base.h) and the compiled-in features (config.h).
 *
 * Not included, each included on its own where it is wanted:
 *  - device constructors: cubert/cpu.h (with the race report types of
 *    cubert/race.h and the choosers of cubert/sim.h), cubert/inline.h,
 *    cubert/cuda.h, and the OS layer cubert/os.h;
 *  - cubert/critical_section.h, the hook an embedded host without atomics
 *    provides;
 *  - cubert/record.h, recorded launch sequences (record once, replay many
 *    times: docs/recording.md);
 *  - everything for server authors, under cubert/driver/: the driver table
 *    and the server (driver.h, server.h), the handle table and memory ids
 *    (handle_table.h), the memory manager and pools (memory.h), the
 *    multi-stream (stream.h), the device handle and registry (device.h), the
 *    race checker (race.h), the simulation's choice calls (sim.h), the
 *    timestamp profiler (profiler.h), checked arithmetic (arith.h); the
 *    test-only switches (core/server/server_faults.h) reach every device
 *    through cubert_device_options_t.faults (client.h).
 *
 * The conventions every public header follows are written once, here:
 *
 *  - Names: prefix `cubert_`; types `cubert_thing_t`; macros `CUBERT_`; noun
 *    before verb (`cubert__handle_release`); outputs last, named `out_...`;
 *    CubeCL's names where CubeCL has one (docs/cubecl-mapping.md).
 *  - Lifetimes, one verb each: `_create` / `_destroy` for an object the
 *    caller owns alone; `_clone` / `_release` for references to something
 *    shared (handles, bindings, clients: CubeCL's Clone and Drop; a client is
 *    a reference to its device, the last release destroys the device);
 *    `_retain` / `_release` for raw reference counts (memory ids, driver
 *    only); `_initialize` for a caller-owned struct (options, arenas,
 *    choosers). Uploads are `cubert_client_create_from_slice` /
 *    `_from_bytes` / `create_tensor(s)_from_slice(s)` as in CubeCL.
 *  - Status and errors: every fallible function of the user headers returns a
 *    `cubert_status_t` (0 = OK) and takes `cubert_error_t *out_error` last
 *    (caller-owned, may be NULL), which it fills on failure with the error's
 *    kind and a reason. A call that returns OK leaves the record exactly as
 *    it was (it is neither written nor cleared). A call that fails has no
 *    side effect. The functions
 *    of cubert/error.h write records themselves and take none. Driver
 *    headers (cubert/driver/) follow the same rule except for hot-path
 *    primitives (handle table and memory ids, the multi-stream, the race
 *    checker's events, checked arithmetic), which return a status only; each
 *    such header says so.
 *  - Enums: every public enum has a CUBERT_..._FORCE_32BIT_ sentinel, so its
 *    size is 4 bytes on every target (arm-none-eabi uses short enums). Every
 *    enum value that enters through the API (an argument, a field of an
 *    option struct, a launch descriptor, a cube count, a byte buffer's
 *    property) is checked where it enters: a value outside the enum is
 *    refused with INVALID_ARGUMENT (or the code its declaration names) and
 *    the record filled, before anything is made or read.
 *  - Ownership: "borrows" means the callee keeps no reference after returning;
 *    "retains" means it takes a reference that it releases later. Objects
 *    remember the allocator they were created with and free themselves with it.
 *  - Thread-safety: each declaration says whether it may be called from
 *    several threads at once. Unless it says so, an object must not be used
 *    from two threads at the same time.
 *  - A pointer given to a call must stay valid for the whole call, and an
 *    object must outlive every call made on it: releasing a client
 *    (cubert_client_release) while another thread is still inside a call on
 *    that same client object is a use-after-free, as for any C object, and
 *    nothing detects it. To share a device between threads, give each thread
 *    its own client: cubert_client_clone (or cubert_client_load); each thread
 *    releases its own, and releasing one never affects calls on another (the
 *    device lives until its last client and its last pending completion are
 *    gone). Handles are values: they may be copied between threads and
 *    clients of the device that issued them; any other device refuses them
 *    (DEVICE_MISMATCH, cubert/handle.h). docs/errors.md, "Misuse".
 *  - Blocking: each declaration says whether it blocks. Nothing in core/
 *    blocks the OS; blocking waits live in the OS layer.
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
#include "cubert/memory.h"
#include "cubert/profile.h"
#include "cubert/kernel.h"
#include "cubert/client.h"

#endif /* CUBERT_CUBERT_H */
