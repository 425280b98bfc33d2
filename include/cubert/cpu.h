/* SPDX-License-Identifier: MIT */
/*
 * cubert/cpu.h: the CPU device (OS layer): the CPU driver
 * (backend-cpu/cpu) under the server. Streams are simulated by one
 * worker thread per stream slot; kernels are C functions (written in the
 * kernel dialect of cubert/kernel.h) run over the cube grid by a persistent
 * worker pool. A thread that waits for a stream without a timeout (a sync,
 * a read, an event wait) while the stream's worker is not running its ops
 * runs them itself, in order (docs/streams.md): a kernel may run on the
 * calling thread's stack, as with the inline driver. In deterministic mode (docs/simulation.md) no thread is
 * started and a seeded chooser orders every step; the server's race checker
 * (docs/race-checker.md) can run in either mode. Test-only switches:
 * core/server/server_faults.h.
 */
#ifndef CUBERT_CPU_H
#define CUBERT_CPU_H

#include "cubert/client.h"
#include "cubert/race.h"
#include "cubert/sim.h"

CUBERT_EXTERN_C_BEGIN

/* Type id of CPU devices in the device registry. */
#define CUBERT_CPU_DEVICE_TYPE 1

/* How the driver runs its streams (docs/simulation.md). */
typedef enum cubert_cpu_mode_e {
  /* One worker thread per stream, a kernel worker pool. */
  CUBERT_CPU_MODE_THREADED = 0,
  /* No thread at all: whenever the host must wait (an event synchronize:
   * a sync or read completion, a GC wait, a full op ring, destroy), one loop
   * on the waiting thread runs the runnable steps (each stream's head op
   * whose wait is satisfied), one at a time, in the order the chooser
   * decides; kernels run inline, cubes in order. Same seed (or replay log) => same order, trace hash and results
   * on any machine, for a single-threaded host program. */
  CUBERT_CPU_MODE_DETERMINISTIC = 1,
  CUBERT_CPU_MODE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_cpu_mode_t;

typedef struct cubert_cpu_options_t {
  /* What every device has (cubert/client.h): registered as {CUBERT_CPU_DEVICE_TYPE,
   * device.index}; memory_size 0: 1 GiB; the race checker runs in either mode;
   * device.faults: the CPU driver injects every fault. */
  cubert_device_options_t device;
  uint32_t workers;       /* kernel worker threads; 0: online CPUs - 1 (deterministic: none) */
  /* Kernel profiling of the new device (cubert_client_set_profiling) with
   * the log's sink (cubert_log_sink_default of cubert/os.h: stderr or
   * CUBERT_LOG_FILE). OFF: CUBERT_PROFILE_LEVEL, if set. */
  cubert_profile_level_t profile_level;
  uint32_t collective_timeout_ms; /* how long a collective (all_reduce, send, recv) waits
                                     for its peers before it fails with DEADLINE_EXCEEDED
                                     and aborts its communicator; 0: 60000. Collectives
                                     run in order on the device's communication stream
                                     (one worker); a call blocks while 512 of them are
                                     pending there. A device released with collectives
                                     pending lets them wait 1 s more for their peers,
                                     then cancels them (the communicator is aborted). */
  /* ---- simulation and race checking (docs/simulation.md) ---- */
  uint32_t mode;          /* cubert_cpu_mode_t; default THREADED */
  uint64_t seed;          /* DETERMINISTIC: seed of the built-in chooser (splitmix64) */
  /* DETERMINISTIC: replay this choice log instead of the seed (borrowed; must
   * outlive the client); NULL with 0: use the seed. */
  const uint32_t *replay;
  size_t replay_count;
  /* DETERMINISTIC: take choices from these bytes (fuzzers; borrowed); NULL
   * with 0: not used. At most one of replay and choice_bytes. */
  const uint8_t *choice_bytes;
  size_t choice_bytes_count;
  /* DETERMINISTIC: entries of the built-in choice log (allocated); 0: 65536.
   * Choices beyond it are still made but not logged (info.log_truncated). */
  uint32_t log_capacity;
  /* ---- observability and memory (docs/configuration.md) ---- */
  /* Non-zero: keep a per-kernel summary of the executions (name, total
   * time on the streams, count, ratio: cubert_profile_summary_format at
   * BASIC) and write it to the log's sink when the device is released
   * (its last client). Launches are not blocked. 0: CUBERT_PROFILE_SUMMARY. */
  uint32_t profile_summary;
  /* The pools of every stream's memory (cubert/memory.h). Zeroed (the
   * SubSlices preset): CUBERT_MEMORY, if set. */
  cubert_memory_configuration_t memory_config;
  /* Non-zero: read no CUBERT_* variable at create (the fields are all). */
  uint32_t ignore_environment;
  /* PLANE_DIM of the kernels (cubert/kernel_plane.h): units per plane, a
   * power of two from 1 to 64; 0: CUBERT_CPU_PLANE_DIM, else 32 (a warp).
   * Another size than 32 is a test mode: a kernel that assumes 32 fails. */
  uint32_t plane_dim;
  /* Stream helpers (docs/streams.md, "Stream helpers"): threads shared by
   * the device's streams that poll the cold streams whose own worker sleeps
   * and run their small ops, so that launches spread over many streams
   * (more than the cores) do not wake a worker each (measured:
   * docs/benchmarks.md, "Stream helpers": 64 streams from one thread 7-10x
   * faster with one helper on 16 cores, 8 threads on their own streams
   * within 10%). 0: CUBERT_CPU_STREAM_HELPERS, else the default: one helper
   * when the process may run on 16 CPUs or more (its affinity mask), none
   * below (a helper's spinning would take a core the workers and the caller
   * need); 1..64: that many; CUBERT_CPU_STREAM_HELPERS_NONE: none whatever
   * the environment. Deterministic mode has none. */
  uint32_t stream_helpers;
} cubert_cpu_options_t;

/* cubert_cpu_options_t.stream_helpers: no stream helper. */
#define CUBERT_CPU_STREAM_HELPERS_NONE 0xFFFFFFFFu
/* The most stream helpers a device may have. */
#define CUBERT_CPU_STREAM_HELPERS_MAX 64u

/* Defaults for every field (zeros mean "default" too). Reads no
 * environment variable: cubert_cpu_client_create does, for the fields left
 * at their defaults (docs/configuration.md). NULL: no-op. */
CUBERT_API void cubert_cpu_options_initialize(cubert_cpu_options_t *options);

/* Create a CPU device and its first client (registered in the device
 * registry; cubert_client_load finds it). Streams default to per-thread ids.
 *
 * The environment (docs/configuration.md) fills the fields left at their
 * defaults, unless ignore_environment: profile_level OFF takes
 * CUBERT_PROFILE_LEVEL, profile_summary 0 CUBERT_PROFILE_SUMMARY, workers 0
 * CUBERT_CPU_WORKERS, mode THREADED CUBERT_CPU_MODE, seed 0 CUBERT_CPU_SEED,
 * a zeroed memory_config CUBERT_MEMORY; a field set in code always wins.
 * CUBERT_TRACE starts the process's trace (cubert/trace.h) at the first
 * create. Every variable is checked, used or not: an invalid value fails the
 * create with INVALID_ARGUMENT (kind INVALID_ARGUMENT), the reason naming the
 * variable, its value and the accepted values (also a warning line in the
 * log when CUBERT_LOG is on).
 *
 * ALREADY_EXISTS when the device index is taken; RESOURCE_EXHAUSTED; INTERNAL
 * when a thread cannot be started; INVALID_ARGUMENT for a plane_dim that is
 * not a power of two from 1 to 64 (field 0: it), for an invalid
 * profile_level, an unknown mode, replay / choice_bytes given together, a
 * NULL array with a non-zero count, or replay / choice_bytes without
 * DETERMINISTIC mode, or an invalid environment variable (nothing is left
 * registered); the server's codes for a bad memory_config. Thread-safe against
 * other creates, not against setenv (getenv); blocks while starting. */
CUBERT_API cubert_status_t cubert_cpu_client_create(cubert_allocator_t allocator,
                                                    const cubert_cpu_options_t *options,
                                                    cubert_client_t **out_client,
                                                    cubert_error_t *out_error);

/* ---- deterministic simulation ------------------------------------------------
 * Every function takes a client of a CPU device created by
 * cubert_cpu_client_create (or a clone) and fills out_error (may be NULL) on
 * failure: INVALID_ARGUMENT (kind INVALID_ARGUMENT) for NULL arguments;
 * NOT_FOUND (kind IO_NOT_FOUND) when the client is not on a CPU device;
 * FAILED_PRECONDITION (kind FAILED_PRECONDITION) for a DETERMINISTIC-only call
 * on a THREADED device; each reason names the function. */

typedef struct cubert_cpu_sim_info_t {
  uint32_t deterministic;  /* 1 in DETERMINISTIC mode */
  uint32_t source;         /* the active chooser's cubert_sim_source_t */
  uint64_t seed;           /* the active chooser's seed (SEED, PCT) */
  uint64_t trace_hash;     /* of every step and choice so far */
  uint64_t steps;          /* steps run */
  uint64_t choices;        /* choice points (2 or more runnable steps) */
  const uint32_t *log;     /* the choice log (borrowed: valid until the next call
                              on this device or a chooser change) */
  size_t log_len;
  uint32_t log_truncated;  /* some choices were not logged */
  uint32_t diverged;       /* a replayed choice did not fit its choice point */
  uint64_t deadlocks;      /* host waits that found no runnable step */
} cubert_cpu_sim_info_t;

/* Copy the simulation state. Thread-safe (takes the simulation lock). A
 * THREADED device reports deterministic 0 and zeros. */
CUBERT_API cubert_status_t cubert_cpu_sim_info(cubert_client_t *client,
                                               cubert_cpu_sim_info_t *out_info,
                                               cubert_error_t *out_error);

/* Use `chooser` (caller storage; it must stay valid until replaced or the
 * device is released) for every later choice; NULL: back to the built-in
 * chooser (its state continues). Deterministic only. Thread-safe. */
CUBERT_API cubert_status_t cubert_cpu_sim_attach(cubert_client_t *client,
                                                 cubert_sim_chooser_t *chooser,
                                                 cubert_error_t *out_error);

/* Run steps (in the chooser's order) until nothing is runnable (every
 * enqueued op ran), then release what the server's GC holds whose event
 * completed. Deterministic only. Blocks (runs kernels inline). Thread-safe. */
CUBERT_API cubert_status_t cubert_cpu_sim_drain(cubert_client_t *client, cubert_error_t *out_error);

/* ---- race checker (options.device.race_check) ---------------------------------------- */

/* Counters of the device's checker (all zero when it is off); the same as
 * cubert_client_race_counters (cubert/driver/server.h). Thread-safe. */
CUBERT_API cubert_status_t cubert_cpu_race_counters(cubert_client_t *client,
                                                    cubert_race_counters_t *out_counters,
                                                    cubert_error_t *out_error);
/* The most recent report: OK, or NOT_FOUND (kind IO_NOT_FOUND) when there
 * was none (or the checker is off). Records as above. Thread-safe. */
CUBERT_API cubert_status_t cubert_cpu_race_last_report(cubert_client_t *client,
                                                       cubert_race_report_t *out_report,
                                                       cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CPU_H */
