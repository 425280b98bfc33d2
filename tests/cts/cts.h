/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/cts.h: the conformance suite's view of "the device under test".
 * Every CTS test gets its devices from cts_setup / cts_client_create, so the
 * same tests run on each driver under the server:
 *
 *   CUBERT_CTS_DRIVER=cpu            the threaded CPU driver (default)
 *   CUBERT_CTS_DRIVER=deterministic  the CPU driver in deterministic mode
 *                                    (seed CUBERT_CTS_SEED, default 1)
 *   CUBERT_CTS_DRIVER=inline         the inline driver (synchronous, no threads)
 *   CUBERT_CTS_DRIVER=cuda           the CUDA driver (a CUDA=1 build): the GPU, or
 *                                    the fake libcuda named by CUBERT_LIBCUDA;
 *                                    without a driver every test prints
 *                                    "skipped: CUDA unavailable: <reason>"
 *   CUBERT_CTS_RACE=0                turn the race checker off (it is on by
 *                                    default: cts_teardown checks 0 reports)
 *
 * (`make cts DRIVER=cpu|deterministic|inline|cuda`.) A test that cannot apply to
 * the device under test skips with the reason ("skipped: ...").
 *
 * Built with CUBERT_CTS_INLINE_ONLY=1 (the embedded harness of tests/embedded,
 * where there is no environment, no thread and no OS layer), the device
 * under test is the inline driver, always: no lock, no stream-id source, a
 * counting clock (cts_clock), and nothing of backend-cpu/cpu or /host is
 * linked. Tests that need threads or the OS layer skip there.
 */
#ifndef CUBERT_CTS_H
#define CUBERT_CTS_H

#include "test.h"
#include "counting_allocator.h"
#include "cubert/cubert.h"
#include "cubert/client.h"
#include "cubert/layout.h"

#ifndef CUBERT_CTS_INLINE_ONLY
#define CUBERT_CTS_INLINE_ONLY 0
#endif

/* A test that starts other threads, or calls the OS layer (os,
 * backend-cpu/cpu), skips on a build of the CTS for the inline driver alone. */
#if CUBERT_CTS_INLINE_ONLY
#define CTS_REQUIRE_THREADS() TEST_SKIP("needs threads (this harness runs one thread)")
#define CTS_REQUIRE_HOST(what) TEST_SKIP("needs the OS layer: " what " (not on this target)")
#else
#define CTS_REQUIRE_THREADS() ((void)0)
#define CTS_REQUIRE_HOST(what) ((void)0)
#endif

typedef enum cts_server_e {
  CTS_DRIVER_CPU = 0,
  CTS_DRIVER_DETERMINISTIC = 1,
  CTS_DRIVER_INLINE = 2,
  CTS_DRIVER_CUDA = 3
} cts_driver_t;

/* The device under test (from CUBERT_CTS_DRIVER; CUBERT_CTS_MODE=deterministic is
 * read too). An unknown value fails the test. */
cts_driver_t cts_driver(void);
const char *cts_server_name(void);

/* What a test may ask of a device; zeros are the defaults (8 streams, 2
 * workers, 1 GiB pages, ...). */
typedef struct cts_options_t {
  uint32_t device_index;
  uint32_t max_streams;          /* 0: 8 */
  uint32_t workers;              /* CPU: kernel workers (0: 2) */
  uint64_t memory_size;          /* 0: 1 GiB */
  uint32_t max_handles;          /* 0: the default */
  cubert_bounds_check_mode_t bounds_check;
  uint32_t collective_timeout_ms; /* CPU: 0: the default */
  int threaded;                  /* the threaded CPU driver whatever is under test
                                    (multi-device runs of the deterministic mode) */
  int race_check_forced;         /* ask for the race checker even when the library
                                    lacks it (tests of CUBERT_CONFIG_RACE_CHECKER=0) */
  const cubert_memory_configuration_t *memory_config; /* NULL: the driver's default */
} cts_options_t;

/* Create a device of the driver under test (race checker as CUBERT_CTS_RACE
 * says); the allocator also serves the device's lock where it needs one. */
cubert_status_t cts_client_create(cubert_allocator_t allocator, const cts_options_t *options,
                                  cubert_client_t **out_client, cubert_error_t *out_error);

/* The drivers this build and machine have, for tests that put devices of two
 * drivers side by side (handles crossing devices): 1 when `server` can be
 * created here (CUDA: a CUDA=1 build with a driver, the fake one included),
 * else 0 and the reason in why. */
int cts_server_available(cts_driver_t server, char *why, size_t why_size);
/* cts_client_create for `server` whatever is under test (a CUDA device where
 * none is available fails the test). */
cubert_status_t cts_client_create_as(cts_driver_t server, cubert_allocator_t allocator,
                                     const cts_options_t *options, cubert_client_t **out_client,
                                     cubert_error_t *out_error);
/* The registry type id of `server`'s devices. */
uint16_t cts_server_device_type(cts_driver_t server);

typedef struct cts_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_client_t *client;
  uint32_t race_check; /* the race checker runs; teardown checks 0 reports */
  int deterministic;   /* the CPU driver runs in deterministic mode */
} cts_env_t;

/* Create a fresh device (index `device_index`) with a counting allocator. */
void cts_setup(cts_env_t *env, uint32_t device_index);
/* The same with options (options->device_index is used). */
void cts_setup_with(cts_env_t *env, const cts_options_t *options);
/* The test releases env's client itself (cubert_client_release): forget it
 * (env->client NULL, no deterministic-run report on it at exit). */
void cts_forget_client(cts_env_t *env);
/* Release the client and check that every block was given back. */
void cts_teardown(cts_env_t *env);

/* Sleep `ms` milliseconds (nanosleep). Built with CUBERT_CTS_INLINE_ONLY, where
 * the devices' profiling clock is a counter (no timer, one thread), it moves
 * that clock forward by `ms` instead: durations measured across it still
 * cover the sleep. */
void cts_sleep_ms(uint32_t ms);

/* Does the device under test have collectives (the CPU drivers in threaded
 * mode do)? Tests that need them skip otherwise. */
int cts_has_collectives(cubert_client_t *client);
/* Does it run work on other threads (the threaded CPU driver)? */
int cts_is_threaded(void);
/* The registry type id of the device under test's devices. */
uint16_t cts_device_type(void);
/* The memory layout policy of the device under test (CPU drivers:
 * contiguous, alignment 8; CUDA: pitched, alignment 512). */
cubert_layout_policy_t cts_layout_policy(void);

#endif
