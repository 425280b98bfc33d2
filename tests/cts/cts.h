/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/cts.h: the conformance suite's view of "the device under test".
 * Every CTS test gets its devices from cts_setup / cts_client_create, so the
 * same tests run on each driver under the server. The drivers register
 * themselves (CTS_DRIVER_REGISTER, below) from their own files; the suite
 * names none of them:
 *
 *   CUBERT_CTS_DRIVER=cpu            the threaded CPU driver (default;
 *                                    tests/cts/cts_driver_cpu.c)
 *   CUBERT_CTS_DRIVER=deterministic  the CPU driver in deterministic mode
 *                                    (seed CUBERT_CTS_SEED, default 1)
 *   CUBERT_CTS_DRIVER=inline         the inline driver (synchronous, no threads;
 *                                    tests/cts/cts_driver_inline.c)
 *   CUBERT_CTS_DRIVER=cuda           the CUDA driver (a CUDA=1 build;
 *                                    tests/cuda/test_cuda_cts_support.c): the GPU,
 *                                    or the fake libcuda named by CUBERT_LIBCUDA;
 *                                    without a driver every test prints
 *                                    "skipped: CUDA unavailable: <reason>"
 *   CUBERT_CTS_DRIVER=probe          test only: the threaded CPU driver with one
 *                                    kernel worker (tests/cts/test_cts_registry.c)
 *   CUBERT_CTS_RACE=0                turn the race checker off (it is on by
 *                                    default: cts_teardown checks 0 reports)
 *
 * (`make cts DRIVER=name`.) An unknown name fails every test with the list of
 * the registered drivers. A test that cannot apply to the device under test
 * skips with the reason ("skipped: ..."): the tests a driver lists as
 * unsupported skip with the driver's reason when they create their device.
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
  int race_off;                  /* no race checker whatever CUBERT_CTS_RACE says (a test
                                    that starves the allocator: the checker, short of
                                    memory, would report races that are not there) */
  /* TEST ONLY: the server's fault injection (core/server/server_faults.h), given
   * to the driver through its options (cubert_device_options_t.faults); NULL: none. */
  const struct cubert_server_faults_t *faults;
} cts_options_t;

/* ---- the drivers the suite runs on ------------------------------------------------
 * Each driver registers one record from its own file (tests/cts/cts_driver_cpu.c,
 * cts_driver_inline.c, tests/cuda/test_cuda_cts_support.c, ...) with
 * CTS_DRIVER_REGISTER; the suite has no list of drivers. CUBERT_CTS_DRIVER (`make
 * cts DRIVER=name`) picks one by name; an unknown name fails every test with the
 * list of the registered ones. A test the driver lists in `unsupported` skips with
 * "skipped: <reason>" when it creates its first device. */

/* A test the driver does not support: its name, or a prefix ending in '*'. */
typedef struct cts_unsupported_t {
  const char *test;
  const char *reason;
} cts_unsupported_t;

/* What the suite may assume of a driver (cts_driver_t.flags). */
#define CTS_DRIVER_THREADED 1u      /* runs work on other threads */
#define CTS_DRIVER_DETERMINISTIC 2u /* one host thread steps every device: its multi-device
                                       tests run on the threaded CPU driver (options.threaded) */
#define CTS_DRIVER_SYNCHRONOUS 4u   /* work runs to completion at submit */

typedef struct cts_env_t cts_env_t;

typedef struct cts_driver_t {
  const char *name;    /* CUBERT_CTS_DRIVER's value */
  const char *summary; /* one line for the list of drivers */
  uint32_t flags;      /* CTS_DRIVER_* */
  uint16_t device_type; /* the registry type id of its devices */
  cubert_layout_policy_t layout_policy; /* the tensors' layouts (cts_layout_policy) */
  /* Create a device for a test: `options` as the test gave them, with max_streams
   * (8) and the race checker (cts_race_check) resolved by the suite. Skips
   * (test_skip) when the driver cannot run here, with the reason. */
  cubert_status_t (*create)(cubert_allocator_t allocator, const cts_options_t *options,
                            cubert_client_t **out_client, cubert_error_t *out_error);
  /* Has `client` collectives beyond the driver table's collective primitive? NULL: yes. */
  int (*has_collectives)(cubert_client_t *client);
  /* A test of collectives over `devices` devices: skips (with the reason) when the
   * driver cannot run them; NULL: it can. */
  void (*require_collectives)(uint32_t devices);
  /* Communicators alive now (teardown checks 0); NULL: the OS layer's count. */
  uint32_t (*live_communicators)(void);
  /* Called after cts_setup made env's device / before cts_teardown releases it; NULL: nothing. */
  void (*after_setup)(cts_env_t *env);
  void (*before_teardown)(cts_env_t *env);
  /* The tests it does not support, each with why; ends with {NULL, NULL}. NULL: none. */
  const cts_unsupported_t *unsupported;
  /* Can it create a device here (cts_driver_available)? 0 and the reason in why if not;
   * NULL: yes. */
  int (*available)(char *why, size_t why_size);
} cts_driver_t;

/* Add `driver` (static storage) to the registry; CTS_DRIVER_REGISTER calls it
 * before main. At most CTS_DRIVER_MAX; a second record of one name is a bug
 * (every test then fails, saying so). */
#define CTS_DRIVER_MAX 16
void cts_driver_register(const cts_driver_t *driver);
#define CTS_DRIVER_REGISTER(record)                                 \
  __attribute__((constructor)) static void cts_register_##record(void) { \
    cts_driver_register(&(record));                                 \
  }

/* The driver under test (CUBERT_CTS_DRIVER; default "cpu", or "deterministic" when
 * CUBERT_CTS_MODE=deterministic; the inline driver in a CUBERT_CTS_INLINE_ONLY
 * build). An unknown name fails the test, listing the registered drivers. */
const cts_driver_t *cts_driver(void);
/* The registered driver named `name`, or NULL. */
const cts_driver_t *cts_driver_find(const char *name);
/* The registered drivers, by registration order: count and i-th. */
size_t cts_driver_count(void);
const cts_driver_t *cts_driver_at(size_t i);
/* Write the registered names ("cpu, deterministic, inline") into out (NUL-terminated,
 * truncated to size). */
void cts_driver_names(char *out, size_t size);
/* Is the driver under test the one named `name`? */
int cts_driver_is(const char *name);
/* The reason `driver` gives for not supporting test `test`, or NULL. */
const char *cts_unsupported_reason(const cts_driver_t *driver, const char *test);
/* The race checker a device of the driver under test gets (CUBERT_CTS_RACE, the
 * library's features, options->race_check_forced, options->race_off). */
uint32_t cts_race_check(const cts_options_t *options);
/* What every driver's options share (cubert_device_options_t, their first member)
 * for a device of `options`: index, max_streams, max_handles, memory_size,
 * bounds_check, the race checker (cts_race_check) and the faults. */
cubert_device_options_t cts_device_options(const cts_options_t *options);


/* Create a device of the driver under test (race checker as CUBERT_CTS_RACE
 * says); the allocator also serves the device's lock where it needs one. */
cubert_status_t cts_client_create(cubert_allocator_t allocator, const cts_options_t *options,
                                  cubert_client_t **out_client, cubert_error_t *out_error);

/* For tests that put devices of two drivers side by side (handles crossing devices):
 * 1 when `driver` (a registered record) can create a device here (deterministic: the
 * library has the simulation; cuda: a CUDA=1 build with a driver, the fake one
 * included), else 0 and the reason in why. */
int cts_driver_available(const cts_driver_t *driver, char *why, size_t why_size);
/* cts_client_create on `driver` whatever is under test (max_streams and the race
 * checker resolved as for the driver under test). */
cubert_status_t cts_client_create_as(const cts_driver_t *driver, cubert_allocator_t allocator,
                                     const cts_options_t *options, cubert_client_t **out_client,
                                     cubert_error_t *out_error);

struct cts_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_client_t *client;
  uint32_t race_check; /* the race checker runs; teardown checks 0 reports */
  int deterministic;   /* the CPU driver runs in deterministic mode */
};

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
/* The name of the driver under test. */
const char *cts_server_name(void);
/* The registry type id of the device under test's devices. */
uint16_t cts_device_type(void);
/* The memory layout policy of the device under test (CPU drivers:
 * contiguous, alignment 8; CUDA: pitched, alignment 512). */
cubert_layout_policy_t cts_layout_policy(void);

#endif
