/* SPDX-License-Identifier: MIT */
/*
 * os/os_obs.h: observability of the OS layer (not
 * installed): the configuration read from the environment (host_config.c),
 * the leveled logger (os_log.c) and the timeline trace recorder
 * (os_trace.c). docs/configuration.md lists the variables;
 * docs/profiling.md the trace.
 *
 * Both the logger and the recorder cost one load and one branch per call
 * site while they are off: OS_LOG and OS_TRACE_ON test a global word
 * before anything else is evaluated.
 */
#ifndef CUBERT_OS_OBS_H
#define CUBERT_OS_OBS_H

#include <stdint.h>

#include "cubert/cubert.h"
#include "cubert/os.h"
#include "cubert/trace.h"

/* ---- configuration (host_config.c) -------------------------------------- */

/* Bits of cubert_os_config_t.set: which variables are set (non-empty). */
#define HOST_CONFIG_LOG 0x1u
#define HOST_CONFIG_LOG_FILE 0x2u
#define HOST_CONFIG_PROFILE_LEVEL 0x4u
#define HOST_CONFIG_PROFILE_SUMMARY 0x8u
#define HOST_CONFIG_CPU_WORKERS 0x10u
#define HOST_CONFIG_CPU_MODE 0x20u
#define HOST_CONFIG_CPU_SEED 0x40u
#define HOST_CONFIG_MEMORY 0x80u
#define OS_CONFIG_TRACE 0x100u
#define OS_CONFIG_TRACE_BUFFER 0x200u
#define HOST_CONFIG_CPU_PLANE_DIM 0x400u
#define HOST_CONFIG_CPU_STREAM_HELPERS 0x800u

/* Largest CUBERT_CPU_WORKERS accepted: the CPU executor's limit
 * (CUBERT_CPU_EXECUTOR_MAX_WORKERS, backend-cpu/cpu/cpu_executor.h). */
#define HOST_CONFIG_MAX_WORKERS 1024u

typedef struct cubert_os_config_t {
  uint32_t set;                         /* HOST_CONFIG_* bits */
  cubert_log_level_t log_level;         /* CUBERT_LOG */
  const char *log_file;                 /* CUBERT_LOG_FILE (getenv's string) */
  cubert_profile_level_t profile_level; /* CUBERT_PROFILE_LEVEL */
  uint32_t profile_summary;             /* CUBERT_PROFILE_SUMMARY: 0 or 1 */
  uint32_t cpu_workers;                 /* CUBERT_CPU_WORKERS: 1..HOST_CONFIG_MAX_WORKERS */
  uint32_t cpu_mode;                    /* CUBERT_CPU_MODE: cubert_cpu_mode_t */
  uint64_t cpu_seed;                    /* CUBERT_CPU_SEED */
  cubert_memory_configuration_kind_t memory; /* CUBERT_MEMORY: SUB_SLICES / EXCLUSIVE_PAGES */
  const char *trace_path;               /* CUBERT_TRACE (getenv's string) */
  uint32_t trace_buffer;                /* CUBERT_TRACE_BUFFER: events */
  uint32_t cpu_plane_dim;               /* CUBERT_CPU_PLANE_DIM: 1, 2, 4 .. 64 */
  uint32_t cpu_stream_helpers;          /* CUBERT_CPU_STREAM_HELPERS: 0 (none) .. 64 */
} cubert_os_config_t;

/* Read every CUBERT_* variable of docs/configuration.md. An unset or empty
 * variable is "not set". OK; INVALID_ARGUMENT (kind INVALID_ARGUMENT) for
 * the first invalid value, the reason naming the variable, its value and
 * the accepted values (*out is then filled for the variables before it).
 * getenv: not thread-safe against setenv. */
cubert_status_t cubert__os_config_read(cubert_os_config_t *out, cubert_error_t *out_error);

/* One variable: CUBERT_LOG. OK (out set), NOT_FOUND (unset or empty),
 * INVALID_ARGUMENT with the record as above. */
cubert_status_t cubert__os_config_log_level(cubert_log_level_t *out, cubert_error_t *out_error);

/* ---- logger (os_log.c) ------------------------------------------------- */

/* The most verbose level that is written (cubert_log_level_t), or 0xFF
 * before the first use reads CUBERT_LOG. Read with a relaxed load. */
extern uint32_t cubert_os_log_max_;

#define OS_LOG_ON(level) \
  ((uint32_t)(level) <= __atomic_load_n(&cubert_os_log_max_, __ATOMIC_RELAXED))

/* OS_LOG(CUBERT_LOG_LEVEL_INFO, "fmt", ...): one branch while off. */
#define OS_LOG(level, ...)                                         \
  do {                                                               \
    if (OS_LOG_ON(level)) cubert__os_log_write((level), __VA_ARGS__); \
  } while (0)

/* Write one line (a prefix, the formatted message, '\n') to the log
 * destination when `level` is enabled. Thread-safe. */
void cubert__os_log_write(cubert_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write an error record at `level` ("<what>: <cubert_error_format>"). */
void cubert__os_log_error(cubert_log_level_t level, const char *what, const cubert_error_t *error);

/* ---- trace recorder (os_trace.c) --------------------------------------- */

/* Non-zero while recording. Read with a relaxed load. */
extern uint32_t cubert_os_trace_on_;

#define OS_TRACE_ON() (__atomic_load_n(&cubert_os_trace_on_, __ATOMIC_RELAXED) != 0u)

/* Track ids (Chrome's tid) inside a device's process (pid = 1 + device index). */
#define OS_TRACE_TID_STREAM 1000u /* + stream slot */
#define OS_TRACE_TID_WORKER 2000u /* + kernel worker index */

/* Event categories (the "cat" field). */
typedef enum os_trace_cat_e {
  OS_TRACE_CAT_LAUNCH = 0, /* host: a kernel launch enqueued */
  OS_TRACE_CAT_KERNEL,     /* stream / worker: a kernel running */
  OS_TRACE_CAT_COPY,       /* host: a copy enqueued; stream: a copy running */
  OS_TRACE_CAT_SYNC,       /* host: waiting for a stream or an event */
  OS_TRACE_CAT_EVENT,      /* host: an event recorded; a cross-stream wait enqueued */
  OS_TRACE_CAT_WAIT,       /* stream: waiting for another stream's point */
  OS_TRACE_CAT_MEMORY,     /* allocations and frees */
  OS_TRACE_CAT_GC,         /* the server's garbage collector */
  OS_TRACE_CAT_COLLECTIVE,
  OS_TRACE_CAT_COUNT_
} os_trace_cat_t;

/* Flow direction of a record: none, a flow starts at the record's start
 * ("s"), or a flow ends at it ("f"). */
#define OS_TRACE_FLOW_NONE 0u
#define OS_TRACE_FLOW_OUT 1u
#define OS_TRACE_FLOW_IN 2u

/* Non-zero while the trace records or the log writes DEBUG lines: the
 * word the server's observer reads (cubert_server_observer_t.enabled). */
extern uint32_t cubert_os_obs_on_;
/* Recompute cubert_os_obs_on_ (after a trace start / stop, a level change). */
void cubert__os_obs_update(void);

/* The monotonic clock (ns). */
uint64_t cubert__os_trace_now(void);
/* The calling host thread's track id (1, 2, ...: first use order). */
uint32_t cubert__os_trace_thread_tid(void);
/* The flow id of op `seq` of stream `slot` of device `device_index`: the
 * same at the enqueue and at the execution, without storage. */
uint64_t cubert__os_trace_flow_id(uint32_t device_index, uint32_t slot, uint64_t seq);

/* Record a span [t0, t1] (t1 == t0 with instant != 0: an instant event) on
 * track `tid` of device `device_index`. `name` is copied (truncated to 47
 * bytes); `arg` is written as args.value when arg_name is non-NULL (a
 * static string). Call only when OS_TRACE_ON(); a record made after a
 * stop is dropped. Thread-safe, lock-free, never allocates. */
void cubert__os_trace_record(uint32_t device_index, uint32_t tid, os_trace_cat_t cat,
                             const char *name, uint64_t t0, uint64_t t1, int instant,
                             uint32_t flow_dir, uint64_t flow_id, const char *arg_name,
                             uint64_t arg);

/* Start the recorder from CUBERT_TRACE (once per process; the file is
 * written at exit). Called at each CPU client create; no-op when the
 * variable is unset, already started, or an API session records. */
void cubert__os_trace_from_env(const cubert_os_config_t *config);

#endif /* CUBERT_OS_OBS_H */
