/* SPDX-License-Identifier: MIT */
/*
 * Conformance: the registry of drivers (cts.h). The drivers register
 * themselves from their own files; this file adds one more, "probe" (test
 * only: the threaded CPU driver with one kernel worker), without any edit of
 * tests/cts/cts.c, and checks that the suite finds it by name
 * (`make cts DRIVER=probe` runs the whole suite on it), that a name nobody
 * registered fails with the list of the registered ones, and that a test a
 * driver lists as unsupported skips with the driver's reason.
 */
#include "cts.h"

#if !CUBERT_CTS_INLINE_ONLY
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cubert/cpu.h"

static cubert_status_t probe_create(cubert_allocator_t a, const cts_options_t *options,
                                    cubert_client_t **out, cubert_error_t *err) {
  cubert_cpu_options_t o;
  cubert_cpu_options_initialize(&o);
  o.device = cts_device_options(options); /* what every driver's options share */
  o.workers = 1;
  o.collective_timeout_ms = options->collective_timeout_ms;
  return cubert_cpu_client_create(a, &o, out, err);
}

static const cts_unsupported_t k_probe_unsupported[] = {
    {"cts_registry_probe_listed_test", "probe: listed as unsupported to show the skip"},
    {"cts_registry_probe_prefix_*", "probe: a prefix of tests listed as unsupported"},
    {NULL, NULL}};

static const cts_driver_t g_cts_probe = {
    "probe",
    "test only (tests/cts/test_cts_registry.c): the threaded CPU driver with one kernel worker",
    CTS_DRIVER_THREADED, CUBERT_CPU_DEVICE_TYPE, {CUBERT_LAYOUT_POLICY_CONTIGUOUS, 8},
    probe_create, NULL, NULL, NULL, NULL, NULL, k_probe_unsupported, NULL};

CTS_DRIVER_REGISTER(g_cts_probe)

TEST(cts_registry_finds_every_driver_by_name) {
  char names[256];
  size_t i;
  CHECK(cts_driver_find("cpu") != NULL);
  CHECK(cts_driver_find("deterministic") != NULL);
  CHECK(cts_driver_find("inline") != NULL);
  CHECK(cts_driver_find("probe") == &g_cts_probe);
  CHECK(cts_driver_find("no-such-driver") == NULL);
  CHECK(cts_driver_find(NULL) == NULL);
  CHECK(cts_driver_count() >= 4);
  CHECK(cts_driver_at(cts_driver_count()) == NULL);
  for (i = 0; i < cts_driver_count(); i++) {
    const cts_driver_t *d = cts_driver_at(i);
    CHECK(d && d->name && d->summary && d->create);
    CHECK(cts_driver_find(d->name) == d); /* one record per name */
  }
  cts_driver_names(names, sizeof names);
  CHECK(strstr(names, "cpu, deterministic") != NULL);
  CHECK(strstr(names, "inline") != NULL && strstr(names, "probe") != NULL);
  cts_driver_names(names, 6); /* truncated, still terminated */
  CHECK(strlen(names) <= 5);
}

TEST(cts_registry_unsupported_reason_by_name_or_prefix) {
  CHECK(strcmp(cts_unsupported_reason(&g_cts_probe, "cts_registry_probe_listed_test"),
               "probe: listed as unsupported to show the skip") == 0);
  CHECK(cts_unsupported_reason(&g_cts_probe, "cts_registry_probe_listed_test_2") == NULL);
  CHECK(strcmp(cts_unsupported_reason(&g_cts_probe, "cts_registry_probe_prefix_any"),
               "probe: a prefix of tests listed as unsupported") == 0);
  CHECK(cts_unsupported_reason(&g_cts_probe, "cts_launch_add") == NULL);
  CHECK(cts_unsupported_reason(&g_cts_probe, NULL) == NULL);
  CHECK(cts_unsupported_reason(NULL, "cts_launch_add") == NULL);
  CHECK(cts_unsupported_reason(cts_driver_find("cpu"), "cts_registry_probe_listed_test") == NULL);
}

/* Run on "probe" (make cts DRIVER=probe), it skips with the probe's reason;
 * on every other driver it runs. */
TEST(cts_registry_probe_listed_test) {
  cts_env_t env;
  cts_setup(&env, 0);
  CHECK(!cts_driver_is("probe"));
  cts_teardown(&env);
}

TEST(cts_registry_probe_prefix_skips_too) {
  cts_env_t env;
  cts_setup(&env, 0);
  CHECK(!cts_driver_is("probe"));
  cts_teardown(&env);
}

/* A name nobody registered fails the test, naming the registered drivers. */
TEST(cts_registry_unknown_name_lists_the_registered) {
  int fds[2], status = 0;
  char out[1024];
  ssize_t n, got = 0;
  pid_t pid;
  CHECK(pipe(fds) == 0);
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    /* a runner whose failures do not end the process (the OOM harness
     * records them and parks the thread) would keep the pipe open: end */
    alarm(5);
    setenv("CUBERT_CTS_DRIVER", "no-such-driver", 1);
    (void)cts_driver(); /* fails: exit status 1 */
    _exit(0);
  }
  close(fds[1]);
  while ((n = read(fds[0], out + got, sizeof out - 1 - (size_t)got)) > 0) got += n;
  close(fds[0]);
  out[got] = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    TEST_SKIP("cts_driver's failure did not end the forked process: this runner records "
              "failures instead (the OOM harness)");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  CHECK_MSG(strstr(out, "CUBERT_CTS_DRIVER=no-such-driver: no such driver; registered: cpu, "
                        "deterministic") != NULL, "%s", out);
  CHECK_MSG(strstr(out, "probe") != NULL, "%s", out);
}
#else
TEST(cts_registry_finds_every_driver_by_name) {
  CHECK(cts_driver_find("inline") != NULL);
  CHECK(cts_driver() == cts_driver_find("inline"));
}
#endif
