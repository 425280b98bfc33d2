/* SPDX-License-Identifier: MIT */
/*
 * cubert/os.h: the OS layer (backend-cpu): what needs an OS.
 * Not part of the freestanding core; link libcubert (which includes it) on a
 * hosted platform.
 */
#ifndef CUBERT_OS_H
#define CUBERT_OS_H

#include "cubert/allocator.h"
#include "cubert/device.h"
#include "cubert/error.h"
#include "cubert/profile.h"
#include "cubert/stream_id.h"

CUBERT_EXTERN_C_BEGIN

/* The libc allocator (aligned allocation through posix_memalign; resizing
 * copies). Thread-safe, may block briefly inside libc. */
CUBERT_API cubert_allocator_t cubert_allocator_libc(void);

/* ---- stream identity (CubeCL's StreamId::current) ----------------------
 *
 * cubert_stream_id_current() resolves, in this order:
 *  1. the innermost override installed on the calling thread by
 *     cubert_stream_id_executes_begin (or cubert_stream_id_executes);
 *  2. the process-wide policy: PER_THREAD (default) and PER_TASK give the
 *     thread its own id, allocated on the thread's first query from a global
 *     counter starting at 0 and stable for the thread's life; SINGLE gives 0.
 * Per-thread state lives in thread-local variables (no allocation, no
 * system call). Ids of exited threads are not reused; once the counter is
 * exhausted (2^64 - 1 ids) a thread without an id uses stream 0 (the SINGLE
 * stream): always a valid stream, never an error.
 */

/* Caller-owned record of one override; opaque apart from `id`. It must stay
 * alive and unmoved from _begin to _end. */
typedef struct cubert_stream_id_token_t {
  cubert_stream_id_t id;        /* the overriding id */
  void *previous_;              /* private: the enclosing token or NULL */
  uint32_t state_;              /* private */
} cubert_stream_id_token_t;

/* The calling thread's stream id (see above). Never fails. Thread-safe,
 * non-blocking, lock-free. */
CUBERT_API cubert_stream_id_t cubert_stream_id_current(void);

/* A fresh id from the global counter (CubeCL's StreamId::allocate / manual
 * Stream::new): every call returns a new value. Thread-safe, lock-free. */
CUBERT_API cubert_stream_id_t cubert_stream_id_allocate(void);

/* Make `id` the calling thread's stream until the matching _end (CubeCL's
 * StreamId::executes). Overrides nest: each _end restores the enclosing
 * override, the outermost restores "no override". Borrows *out_token until
 * _end. Returns OK, or INVALID_ARGUMENT (kind INVALID_ARGUMENT, with a
 * reason) for NULL (nothing changes then). Calling thread only. */
CUBERT_API cubert_status_t cubert_stream_id_executes_begin(cubert_stream_id_t id,
                                                           cubert_stream_id_token_t *out_token,
                                                           cubert_error_t *out_error);

/* End the override `token` started. It must be the calling thread's
 * innermost override: INVALID_ARGUMENT (kind INVALID_ARGUMENT; the reason
 * says which) for NULL, a token already ended, a token of another thread or
 * one ended out of order (nothing changes then).
 * Calling thread only. C has no unwinding: the caller must reach _end on every path. */
CUBERT_API cubert_status_t cubert_stream_id_executes_end(cubert_stream_id_token_t *token,
                                                         cubert_error_t *out_error);

/* fn(user) under the override `id` (begin, call, end). Returns begin's error
 * without calling fn, else end's status. NULL fn: INVALID_ARGUMENT. */
CUBERT_API cubert_status_t cubert_stream_id_executes(cubert_stream_id_t id, void (*fn)(void *user),
                                                     void *user, cubert_error_t *out_error);

/* Set / read the process-wide policy (CubeCL's set_policy; programmatic
 * setting always wins, there is no config file here). Default PER_THREAD.
 * Takes effect for every later cubert_stream_id_current on any thread;
 * threads keep their per-thread id across policy changes. INVALID_ARGUMENT
 * (kind INVALID_ARGUMENT, field[0] the value) for an unknown value (policy
 * unchanged). Thread-safe, lock-free. */
CUBERT_API cubert_status_t cubert_stream_id_set_policy(cubert_stream_policy_t policy,
                                                       cubert_error_t *out_error);
CUBERT_API cubert_stream_policy_t cubert_stream_id_policy(void);

/* ---- hooks for the server (cubert/driver/server.h, cubert/inline.h) --- */

/* A recursive device lock (cubert_lock_t): a mutex plus its owner thread and
 * a depth, so a re-entry is a compare. *out_lock owns the allocation until
 * cubert_os_lock_destroy. INVALID_ARGUMENT (NULL), RESOURCE_EXHAUSTED (kind
 * HOST_OUT_OF_MEMORY: the allocation or the mutex); out_error (may be NULL)
 * holds the record.
 * The lock functions are thread-safe and block while another thread holds
 * it. */
CUBERT_API cubert_status_t cubert_os_lock_create(cubert_allocator_t allocator,
                                                 cubert_lock_t *out_lock,
                                                 cubert_error_t *out_error);
/* Destroy a lock made by cubert_os_lock_create (not held). A lock with NULL
 * functions: no-op. */
CUBERT_API void cubert_os_lock_destroy(cubert_lock_t lock);

/* The host's monotonic clock (CLOCK_MONOTONIC, nanoseconds) as a profiling
 * clock. Thread-safe, non-blocking. */
CUBERT_API cubert_profile_clock_t cubert_os_clock(void);

/* A stream source (cubert_stream_source_fn_t of cubert/client.h) returning
 * cubert_stream_id_current().value; `self` is ignored. */
CUBERT_API uint64_t cubert_os_stream_source(void *self);

/* ---- logging ------------------------------------------------------------ */

/* Levels of the OS layer's log (docs/configuration.md: CUBERT_LOG). A
 * level writes its lines and those of every level before it. */
typedef enum cubert_log_level_e {
  CUBERT_LOG_LEVEL_OFF = 0,   /* nothing (the default) */
  CUBERT_LOG_LEVEL_ERROR = 1, /* a device or a call failed for a reason the caller may not see */
  CUBERT_LOG_LEVEL_WARN = 2,  /* errors surfaced on a stream, invalid configuration */
  CUBERT_LOG_LEVEL_INFO = 3,  /* client create / release, what the device runs with */
  CUBERT_LOG_LEVEL_DEBUG = 4, /* device properties, the trace, GC releases */
  CUBERT_LOG_LEVEL_TRACE = 5, /* every allocation and free of device memory */
  CUBERT_LOG_LEVEL_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_log_level_t;

/* "off", "error", "warn", "info", "debug", "trace"; "unknown" otherwise.
 * Pure. */
CUBERT_API const char *cubert_log_level_name(cubert_log_level_t level);

/* The level in force: the last cubert_log_set_level, else CUBERT_LOG (read
 * once, at the first log line or call here; an invalid value gives WARN and
 * a warning line that names the accepted values), else OFF. Thread-safe. */
CUBERT_API cubert_log_level_t cubert_log_level(void);

/* Set the level for the rest of the process (it wins over CUBERT_LOG).
 * Lines go to CUBERT_LOG_FILE (opened once for append; stderr when unset
 * or when it cannot be opened, with a warning) or stderr. Returns OK, or
 * INVALID_ARGUMENT (kind INVALID_ARGUMENT; level unchanged) for an unknown
 * level. Thread-safe, non-blocking. */
CUBERT_API cubert_status_t cubert_log_set_level(cubert_log_level_t level,
                                                cubert_error_t *out_error);

/* A log sink (cubert_log_sink_fn_t) writing to the log's destination
 * (CUBERT_LOG_FILE or stderr) whatever the level; the CPU device sends the
 * environment's kernel profiling (CUBERT_PROFILE_LEVEL) and the
 * CUBERT_PROFILE_SUMMARY table there. `self` is ignored. Thread-safe; blocks
 * on the write. */
CUBERT_API void cubert_log_sink_default(void *self, const char *text, size_t length);

/* The default log sink (cubert_log_sink_fn_t of cubert/client.h): writes
 * the text to stderr in one fwrite. `self` is ignored. Thread-safe (stdio
 * locks the stream); blocks on the write. */
CUBERT_API void cubert_log_sink_stderr(void *self, const char *text, size_t length);

CUBERT_EXTERN_C_END

#endif /* CUBERT_OS_H */
