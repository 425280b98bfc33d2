/* SPDX-License-Identifier: MIT */
/* tests/unit/test_error.c: the error record's Display text (CubeCL's
 * `#[error(...)]` strings, docs/errors.md), chains, truncation, the
 * ServerUnhealthy aggregate, CallError, and the core text builder
 * (core/base/fmt.h). */
#include <string.h>

#include "cubert/config.h"
#include "cubert/error.h"
#include "base/fmt.h"
#include "test.h"
#include "cubert/driver/error.h"

#define CANARY ((char)0x5a)

/* Format into a large buffer; checks the return equals strlen. */
static const char *fmt_big(const cubert_error_t *e) {
  static char text[4096];
  size_t n = cubert_error_format(e, text, sizeof(text));
  CHECK(n < sizeof(text));
  CHECK_EQ_U64(n, strlen(text));
  return text;
}

static void check_contains(const char *text, const char *needle) {
  CHECK_MSG(strstr(text, needle) != NULL, "\"%s\" not found in \"%s\"", needle, text);
}

/* Fields 11,22,33,44 / field2 55,66,77 / reason "why-R" for any kind. */
static void set_probe(cubert_error_t *e, cubert_error_kind_t kind) {
  static const uint64_t fields[4] = {11, 22, 33, 44};
  cubert_error_set(e, kind, fields, 4, "why-R");
  e->field2[0] = 55;
  e->field2[1] = 66;
  e->field2[2] = 77;
}

typedef struct kind_expect_t {
  cubert_error_kind_t kind;
  const char *expect[3]; /* substrings of the message, NULL-terminated */
} kind_expect_t;

/* One row per kind, in enum order: what distinguishes its message. */
static const kind_expect_t k_expect[] = {
    {CUBERT_ERROR_NONE, {"No error"}},
    {CUBERT_ERROR_SERVER_VALIDATION, {"A validation error happened\nCaused by:\n  why-R"}},
    {CUBERT_ERROR_SERVER_GENERIC, {"An error happened during execution", "why-R"}},
    {CUBERT_ERROR_SERVER_LAUNCH, {"A launch error happened\nCaused by:\n  why-R"}},
    {CUBERT_ERROR_SERVER_PROFILE, {"A profiling error happened\nCaused by:\n  why-R"}},
    {CUBERT_ERROR_SERVER_IO, {"An io error happened\nCaused by:\n  why-R"}},
    {CUBERT_ERROR_SERVER_UNHEALTHY, {"The server is in an invalid state", "why-R"}},
    {CUBERT_ERROR_LAUNCH_COMPILATION, {"A compilation error happened during launch", "why-R"}},
    {CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY, {"An out-of-memory error happened during launch", "why-R"}},
    {CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES,
     {"Too many resources were requested during launch", "why-R"}},
    {CUBERT_ERROR_LAUNCH_UNKNOWN, {"An unknown error happened during launch", "why-R"}},
    {CUBERT_ERROR_LAUNCH_IO, {"An io error happened during launch", "why-R"}},
    {CUBERT_ERROR_RESOURCE_SHARED_MEMORY, {"Requested 11 bytes, maximum 22 bytes available."}},
    {CUBERT_ERROR_RESOURCE_UNITS, {"Requested 11 units, max units is 22."}},
    {CUBERT_ERROR_RESOURCE_CUBE_DIM, {"Requested (11, 22, 33), max is (55, 66, 77)."}},
    {CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE, {"Requested 11 units per cube, max is 22."}},
    {CUBERT_ERROR_PROFILE_UNKNOWN, {"An unknown error happened during profiling", "why-R"}},
    {CUBERT_ERROR_PROFILE_NOT_REGISTERED, {"No profiling registered"}},
    {CUBERT_ERROR_PROFILE_LAUNCH, {"A launch error happened during profiling", "why-R"}},
    {CUBERT_ERROR_PROFILE_SERVER, {"An execution error happened during profiling", "why-R"}},
    {CUBERT_ERROR_IO_BUFFER_TOO_BIG, {"can't allocate buffer of size: 11"}},
    {CUBERT_ERROR_IO_OUT_OF_MEMORY, {"out of device memory allocating 11 bytes"}},
    {CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED,
     {"failed to reserve 11 bytes", "capped at 22 bytes", "(33 bytes in use)"}},
    {CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, {"the provided strides are not supported"}},
    {CUBERT_ERROR_IO_NOT_FOUND, {"couldn't find resource for that handle: why-R"}},
    {CUBERT_ERROR_IO_STORAGE_HANDLE_NOT_FOUND,
     {"the storage holds no allocation for that handle: why-R"}},
    {CUBERT_ERROR_IO_STORAGE_MAPPING_FAILED, {"deferred allocation of 11 bytes", "why-R"}},
    {CUBERT_ERROR_IO_FREE_ERROR, {"couldn't free the handle"}},
    {CUBERT_ERROR_IO_UNKNOWN, {"Unknown error happened during execution: why-R"}},
    {CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, {"The current IO operation is not supported"}},
    {CUBERT_ERROR_IO_EXECUTION,
     {"Can't perform the IO operation because of a runtime error: why-R"}},
    {CUBERT_ERROR_COMPILATION_UNSUPPORTED_INSTRUCTION,
     {"An unsupported instruction caused the compilation to fail", "why-R"}},
    {CUBERT_ERROR_COMPILATION_GENERIC, {"An error caused the compilation to fail", "why-R"}},
    {CUBERT_ERROR_COMPILATION_VALIDATION,
     {"A validation error caused the compilation to fail", "why-R"}},
    {CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST, {"the pool list is empty"}},
    {CUBERT_ERROR_CONFIG_ZERO_SIZE, {"`why-R` must be non-zero"}},
    {CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE, {"`max_slice_size` (22) exceeds `page_size` (11)"}},
    {CUBERT_ERROR_CONFIG_CAP_SMALLER_THAN_PAGE,
     {"`max_pool_size` (22) is smaller than `page_size` (11)"}},
    {CUBERT_ERROR_CONFIG_TOO_MANY_PAGES, {"spans 11 pages", "maximum of 65535"}},
    {CUBERT_ERROR_CONFIG_TOO_MANY_POOLS, {"has 11 entries", "maximum of 254"}},
    {CUBERT_ERROR_CONFIG_PRESET_UNAVAILABLE, {"the `why-R` preset is not available"}},
    {CUBERT_ERROR_CONFIG_SLICED_POOLS_UNAVAILABLE, {"sliced pools are not available"}},
    {CUBERT_ERROR_INSTALL_POOLS_IN_USE, {"11 B still live in the pools"}},
    {CUBERT_ERROR_INSTALL_STREAM_UNAVAILABLE, {"the calling stream is in an error state"}},
    {CUBERT_ERROR_INSTALL_UNSUPPORTED, {"no configurable memory pools"}},
    {CUBERT_ERROR_CALL_ERROR, {"CallError(", "disconnected"}},
    {CUBERT_ERROR_SERVICE_CREATION, {"ServiceCreationError { reason: \"why-R\" }"}},
    {CUBERT_ERROR_STRIDE_MALFORMED_RANKS, {"Malformed strides: why-R"}},
    {CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK, {"Unsupported rank 11: why-R"}},
    {CUBERT_ERROR_STRIDE_INVALID, {"Invalid strides: why-R"}},
    {CUBERT_ERROR_INVALID_ARGUMENT, {"Invalid argument: why-R"}},
    {CUBERT_ERROR_OUT_OF_RANGE, {"Out of range: why-R"}},
    {CUBERT_ERROR_OVERFLOW, {"Arithmetic overflow: why-R"}},
    {CUBERT_ERROR_INVALID_HANDLE, {"Invalid handle: why-R"}},
    {CUBERT_ERROR_HOST_OUT_OF_MEMORY, {"Host memory exhausted allocating 11 bytes: why-R"}},
    {CUBERT_ERROR_DEVICE_MISMATCH, {"Device mismatch: why-R"}},
    {CUBERT_ERROR_DEADLINE_EXCEEDED, {"Deadline exceeded after 11 ns: why-R"}},
    {CUBERT_ERROR_DEVICE_LOST, {"Device lost: why-R"}},
    {CUBERT_ERROR_COMPILED_OUT, {"Compiled out of this build: why-R"}},
    {CUBERT_ERROR_FAILED_PRECONDITION, {"Failed precondition: why-R"}},
};

TEST(error_format_every_kind_shows_its_fields) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  size_t i, j;
  cubert_error_t e;
  CHECK_EQ_U64(sizeof(k_expect) / sizeof(k_expect[0]), CUBERT_ERROR_KIND_COUNT_);
  for (i = 0; i < sizeof(k_expect) / sizeof(k_expect[0]); i++) {
    const char *text;
    CHECK_EQ_U64(k_expect[i].kind, i); /* one row per kind, in order */
    set_probe(&e, k_expect[i].kind);
    text = fmt_big(&e);
    CHECK(text[0] != '\0');
    CHECK(strstr(text, "Unknown error kind") == NULL);
    for (j = 0; j < 3 && k_expect[i].expect[j]; j++) check_contains(text, k_expect[i].expect[j]);
  }
}

TEST(error_kind_table_covers_every_kind) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  int k, m;
  for (k = 0; k < (int)CUBERT_ERROR_KIND_COUNT_; k++) {
    const char *name = cubert_error_kind_name((cubert_error_kind_t)k);
    CHECK(name != NULL);
    CHECK_MSG(strcmp(name, "Unknown") != 0, "kind %d has no name", k);
    if (k == CUBERT_ERROR_NONE)
      CHECK_STATUS(cubert_error_kind_status((cubert_error_kind_t)k), CUBERT_STATUS_OK);
    else
      CHECK_MSG(cubert_error_kind_status((cubert_error_kind_t)k) != CUBERT_STATUS_OK,
                "kind %s maps to OK", name);
    for (m = 0; m < k; m++)
      CHECK_MSG(strcmp(name, cubert_error_kind_name((cubert_error_kind_t)m)) != 0,
                "duplicate name %s", name);
  }
  CHECK_EQ_STR(cubert_error_kind_name(CUBERT_ERROR_KIND_COUNT_), "Unknown");
  /* 127: out of the list yet representable by every enum size (-fshort-enums). */
  CHECK_EQ_STR(cubert_error_kind_name((cubert_error_kind_t)127), "Unknown");
  CHECK_EQ_STR(cubert_error_kind_name(CUBERT_ERROR_IO_OUT_OF_MEMORY), "IoError::OutOfMemory");
  CHECK_EQ_STR(cubert_error_kind_name(CUBERT_ERROR_SERVER_UNHEALTHY),
               "ServerError::ServerUnhealthy");
}

TEST(error_kind_status_mapping) {
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_IO_BUFFER_TOO_BIG), CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_IO_OUT_OF_MEMORY), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED),
               CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_IO_NOT_FOUND), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_RESOURCE_CUBE_DIM), CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_CONFIG_ZERO_SIZE), CUBERT_STATUS_CONFIG_INVALID);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_SERVER_UNHEALTHY),
               CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_INSTALL_POOLS_IN_USE),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_HOST_OUT_OF_MEMORY),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_DEADLINE_EXCEEDED),
               CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK_STATUS(cubert_error_kind_status(CUBERT_ERROR_KIND_COUNT_), CUBERT_STATUS_INTERNAL);
  CHECK_STATUS(cubert_error_kind_status((cubert_error_kind_t)-1), CUBERT_STATUS_INTERNAL);
  /* cubert_error_set returns the kind's status, also with a NULL record. */
  CHECK_STATUS(cubert_error_set(NULL, CUBERT_ERROR_IO_BUFFER_TOO_BIG, NULL, 0, NULL),
               CUBERT_STATUS_BUFFER_TOO_BIG);
}

/* CubeCL's `#[error(...)]` strings, literally (without the Backtrace part). */
TEST(error_format_cubecl_exact_leaves) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT | CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t e;
  uint64_t f2[2] = {49152, 32768};
  cubert_dim3_t req = {1024, 2, 1}, max = {1024, 1024, 64};

  cubert_error_set(&e, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "graph_prepare: a graph capture is already prepared on this stream");
  CHECK_EQ_STR(fmt_big(&e), "An error happened during execution\nCaused by:\n  graph_prepare: a graph capture is already prepared on this stream");

  cubert_error_set(&e, CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY, NULL, 0, "no memory");
  CHECK_EQ_STR(fmt_big(&e), "An out-of-memory error happened during launch\nCaused by:\n  no memory");

  cubert_error_set(&e, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "CUDA version 12.8 required for tensor map format Im2colWide");
  CHECK_EQ_STR(fmt_big(&e), "An unknown error happened during launch\nCaused by:\n  CUDA version 12.8 required for tensor map format Im2colWide");

  cubert_error_set(&e, CUBERT_ERROR_RESOURCE_SHARED_MEMORY, f2, 2, NULL);
  CHECK_EQ_STR(fmt_big(&e), "Too much shared memory requested.\nRequested 49152 bytes, maximum 32768 bytes available.");

  CHECK_STATUS(cubert_error_set2(&e, CUBERT_ERROR_RESOURCE_UNITS, 2048, 1024), CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_STR(fmt_big(&e), "Total unit count exceeds maximum.\nRequested 2048 units, max units is 1024.");

  CHECK_STATUS(cubert_error_set_resource_cube_dim(&e, req, max), CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_STR(fmt_big(&e), "Cube dim exceeds maximum bounds.\nRequested (1024, 2, 1), max is (1024, 1024, 64).");

  cubert_error_set(&e, CUBERT_ERROR_PROFILE_UNKNOWN, NULL, 0, "token failed");
  CHECK_EQ_STR(fmt_big(&e), "An unknown error happened during profiling\nCaused by:\n  token failed");

  cubert_error_set(&e, CUBERT_ERROR_PROFILE_NOT_REGISTERED, NULL, 0, NULL);
  CHECK_EQ_STR(fmt_big(&e), "No profiling registered");

  f2[0] = 18446744073709551615ull;
  cubert_error_set(&e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, f2, 1, NULL);
  CHECK_EQ_STR(fmt_big(&e), "can't allocate buffer of size: 18446744073709551615");

  cubert_error_set(&e, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, NULL, 0, NULL);
  CHECK_EQ_STR(fmt_big(&e), "the provided strides are not supported for this operation");

  CHECK_STATUS(cubert_error_set_not_found(&e, "Memory location was never initialized"), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(fmt_big(&e), "couldn't find resource for that handle: Memory location was never initialized");

  /* Reason::NotProvided. */
  cubert_error_set_not_found(&e, NULL);
  CHECK_EQ_STR(fmt_big(&e), "couldn't find resource for that handle: No reason provided for the error");

  cubert_error_set(&e, CUBERT_ERROR_IO_FREE_ERROR, NULL, 0, NULL);
  CHECK_EQ_STR(fmt_big(&e), "couldn't free the handle, since it is currently in used. ");

  cubert_error_set(&e, CUBERT_ERROR_IO_UNKNOWN, NULL, 0, NULL);
  CHECK_EQ_STR(fmt_big(&e), "Unknown error happened during execution");

  cubert_error_set(&e, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0, NULL);
  CHECK_EQ_STR(fmt_big(&e), "The current IO operation is not supported");
}

/* The variants newer cubecl-runtime versions added (their Display text). */
TEST(error_format_newer_exact_leaves) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  uint64_t v = 4096;
  CHECK_STATUS(cubert_error_set_pool_capacity(&e, 1024, 65536, 65000), CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK_EQ_STR(fmt_big(&e), "memory pool capacity exceeded: failed to reserve 1024 bytes, pool is capped at 65536 bytes (65000 bytes in use)");
  cubert_error_set(&e, CUBERT_ERROR_IO_OUT_OF_MEMORY, &v, 1, NULL);
  CHECK_EQ_STR(fmt_big(&e), "out of device memory allocating 4096 bytes");
  cubert_error_set2(&e, CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE, 1024, 2048);
  CHECK_EQ_STR(fmt_big(&e), "`max_slice_size` (2048) exceeds `page_size` (1024); a slice can never span pages");
  cubert_error_set(&e, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "page_size");
  CHECK_EQ_STR(fmt_big(&e), "`page_size` must be non-zero");
  cubert_error_set(&e, CUBERT_ERROR_IO_UNKNOWN, NULL, 0, "Unable to reserve pinned memory");
  CHECK_EQ_STR(fmt_big(&e), "Unknown error happened during execution: Unable to reserve pinned memory");
}

/* The three forms of CallError's Debug text. */
TEST(error_call_error_payloads) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT | CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t e;
  CHECK_STATUS(cubert_error_set_call(&e, CUBERT_CALL_ERROR_PANIC_MESSAGE, "boom"), CUBERT_STATUS_INTERNAL);
  CHECK_EQ_STR(fmt_big(&e), "CallError(task panicked on device runner thread: boom)");
  cubert_error_set_call(&e, CUBERT_CALL_ERROR_PANIC_NON_STRING, "ignored");
  CHECK_EQ_STR(fmt_big(&e), "CallError(task panicked on device runner thread with a non-string payload)");
  CHECK_EQ_STR(e.reason, "");
  cubert_error_set_call(&e, CUBERT_CALL_ERROR_DISCONNECTED, NULL);
  check_contains(fmt_big(&e), "disconnected");
  CHECK(strstr(fmt_big(&e), "panicked") == NULL);
}

/* The example of the task: ServerError::Launch(LaunchError::TooManyResources(
 * ResourceLimitError::Units { requested, max })). */
TEST(error_format_nested_exact) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  uint64_t size = 1u << 20;
  cubert_error_set2(&e, CUBERT_ERROR_RESOURCE_UNITS, 2048, 1024);
  CHECK_STATUS(cubert_error_wrap(&e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES), CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_STATUS(cubert_error_wrap(&e, CUBERT_ERROR_SERVER_LAUNCH), CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_STR(fmt_big(&e),
               "A launch error happened\nCaused by:\n  "
               "Too many resources were requested during launch\n"
               "Total unit count exceeds maximum.\nRequested 2048 units, max units is 1024.");
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_RESOURCE_UNITS);
  CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK(!cubert_error_has_kind(&e, CUBERT_ERROR_LAUNCH_IO));

  /* IoError::Execution(ServerError::Generic) inside LaunchError::IoError. */
  cubert_error_set(&e, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "stream is in error");
  cubert_error_wrap(&e, CUBERT_ERROR_IO_EXECUTION);
  cubert_error_wrap(&e, CUBERT_ERROR_LAUNCH_IO);
  CHECK_EQ_STR(fmt_big(&e),
               "An io error happened during launch\nCaused by:\n  "
               "Can't perform the IO operation because of a runtime error: "
               "An error happened during execution\nCaused by:\n  stream is in error");

  /* StorageMappingFailed { size, source: OutOfMemory { size } }. */
  cubert_error_set(&e, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1, NULL);
  CHECK_STATUS(cubert_error_wrap_storage_mapping_failed(&e, 2u << 20), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_STR(fmt_big(&e),
               "couldn't map storage for a deferred allocation of 2097152 bytes\nCaused by:\n  "
               "out of device memory allocating 1048576 bytes");
  CHECK_STATUS(cubert_error_wrap_storage_mapping_failed(NULL, 1), CUBERT_STATUS_OK);
  cubert_error_clear(&e);
  CHECK_STATUS(cubert_error_wrap_storage_mapping_failed(&e, 1), CUBERT_STATUS_OK);
  CHECK_EQ_U64(e.depth, 0);
}

TEST(error_format_nesting_three_levels_outer_to_inner) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  const char *text, *a, *b, *c;
  cubert_error_set(&e, CUBERT_ERROR_COMPILATION_GENERIC, NULL, 0, "[Compilation Error] bad ptx");
  cubert_error_wrap(&e, CUBERT_ERROR_LAUNCH_COMPILATION);
  cubert_error_wrap(&e, CUBERT_ERROR_PROFILE_LAUNCH);
  CHECK_EQ_U64(e.depth, 3);
  CHECK_STATUS(e.status, CUBERT_STATUS_COMPILATION_FAILED);
  text = fmt_big(&e);
  a = strstr(text, "A launch error happened during profiling");
  b = strstr(text, "A compilation error happened during launch");
  c = strstr(text, "An error caused the compilation to fail\nCaused by:\n  [Compilation Error] bad ptx");
  CHECK(a == text);
  CHECK(b != NULL && c != NULL);
  CHECK(a < b && b < c);
}

/* A kind that does not wrap in CubeCL, used as an outer kind, still shows
 * its name and the inner message; a wrapping kind used alone shows its reason. */
TEST(error_format_unusual_chains) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  cubert_error_set(&e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, NULL, 0, NULL);
  cubert_error_wrap(&e, CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_STR(fmt_big(&e), "DeviceLost\nCaused by:\n  can't allocate buffer of size: 0");
  cubert_error_set(&e, CUBERT_ERROR_SERVER_LAUNCH, NULL, 0, NULL);
  CHECK_EQ_STR(fmt_big(&e), "A launch error happened\nCaused by:\n  No reason provided for the error");
}

TEST(error_wrap_full_chain_keeps_innermost) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  int i;
  uint64_t size = 77;
  const char *text;
  cubert_error_set(&e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  for (i = 0; i < 10; i++) cubert_error_wrap(&e, CUBERT_ERROR_IO_EXECUTION);
  cubert_error_wrap(&e, CUBERT_ERROR_SERVER_IO);
  CHECK_EQ_U64(e.depth, CUBERT_ERROR_MAX_DEPTH);
  CHECK_EQ_U64(e.chain[0], CUBERT_ERROR_SERVER_IO);
  CHECK_EQ_U64(e.chain[CUBERT_ERROR_MAX_DEPTH - 1], CUBERT_ERROR_IO_BUFFER_TOO_BIG);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_IO_BUFFER_TOO_BIG);
  CHECK_STATUS(e.status, CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_EQ_U64(e.field[0], 77);
  text = fmt_big(&e);
  {
    const char *head = "An io error happened";
    const char *tail = "runtime error: can't allocate buffer of size: 77";
    CHECK(strncmp(text, head, strlen(head)) == 0);
    CHECK(strlen(text) > strlen(tail));
    CHECK_EQ_STR(text + strlen(text) - strlen(tail), tail);
  }
}

/* Return value is always the full length; the buffer is NUL-terminated and
 * nothing is written at or past buf[size] (canary). */
TEST(error_format_truncation) {
  cubert_error_t e;
  char full[512], buf[600];
  size_t n, sizes[7], k, i;
  cubert_error_set2(&e, CUBERT_ERROR_RESOURCE_UNITS, 2048, 1024);
  cubert_error_wrap(&e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  n = cubert_error_format(&e, full, sizeof(full));
  CHECK(n > 10 && n < sizeof(full));
  sizes[0] = 0;
  sizes[1] = 1;
  sizes[2] = 5;
  sizes[3] = n;
  sizes[4] = n + 1;
  sizes[5] = n - 1;
  sizes[6] = n + 50;
  for (k = 0; k < 7; k++) {
    size_t size = sizes[k];
    memset(buf, CANARY, sizeof(buf));
    CHECK_EQ_U64(cubert_error_format(&e, buf, size), n);
    for (i = size; i < sizeof(buf); i++)
      CHECK_MSG(buf[i] == CANARY, "size %zu: byte %zu written", size, i);
    if (size > 0) {
      size_t kept = n < size - 1 ? n : size - 1;
      CHECK_EQ_U64(strlen(buf), kept);
      CHECK(memcmp(buf, full, kept) == 0);
    }
  }
  CHECK_EQ_U64(cubert_error_format(&e, NULL, 0), n);
  memset(buf, CANARY, sizeof(buf));
  CHECK_EQ_U64(cubert_error_format(&e, buf, 1), n);
  CHECK(buf[0] == '\0' && buf[1] == CANARY);
  /* size exact: everything but the last byte */
  CHECK_EQ_U64(cubert_error_format(&e, buf, n), n);
  CHECK_EQ_U64(strlen(buf), n - 1);
}

TEST(error_null_record_handling) {
  char buf[32];
  cubert_error_t e;
  CHECK_EQ_U64(cubert_error_format(NULL, buf, sizeof(buf)), 8);
  CHECK_EQ_STR(buf, "No error");
  cubert_error_clear(NULL);
  cubert_error_clear(&e);
  CHECK_EQ_STR(fmt_big(&e), "No error");
  CHECK_STATUS(e.status, CUBERT_STATUS_OK);
  CHECK_STATUS(cubert_error_wrap(NULL, CUBERT_ERROR_SERVER_IO), CUBERT_STATUS_OK);
  CHECK_STATUS(cubert_error_wrap(&e, CUBERT_ERROR_SERVER_IO), CUBERT_STATUS_OK);
  CHECK_EQ_U64(e.depth, 0);
  CHECK_EQ_U64(cubert_error_kind(NULL), CUBERT_ERROR_NONE);
  CHECK(!cubert_error_has_kind(NULL, CUBERT_ERROR_NONE));
  CHECK_STATUS(cubert_error_set_not_found(NULL, "x"), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_error_set_pool_capacity(NULL, 1, 2, 3), CUBERT_STATUS_POOL_CAPACITY_EXCEEDED);
  CHECK_STATUS(cubert_error_set_call(NULL, CUBERT_CALL_ERROR_DISCONNECTED, NULL), CUBERT_STATUS_INTERNAL);
  CHECK_STATUS(cubert_error_set_driver(NULL, CUBERT_ERROR_SERVER_GENERIC, 1, "x"), CUBERT_STATUS_INTERNAL);
  {
    cubert_dim3_t d = {1, 1, 1};
    CHECK_STATUS(cubert_error_set_resource_cube_dim(NULL, d, d), CUBERT_STATUS_LIMIT_EXCEEDED);
  }
  CHECK_EQ_U64(cubert_error_aggregate_count(NULL), 0);
  CHECK_STATUS(cubert_error_unhealthy_first(NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_error_unhealthy_first(&e, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

/* A record filled with garbage (a reader must never trust it). */
TEST(error_format_corrupt_record_is_safe) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t e;
  char buf[1024];
  size_t n;
  memset(&e, 0xff, sizeof(e));
  memset(buf, CANARY, sizeof(buf));
  n = cubert_error_format(&e, buf, 100);
  CHECK(n >= 99);
  CHECK_EQ_U64(strlen(buf), 99);
  CHECK(buf[100] == CANARY);
  n = cubert_error_format(&e, buf, sizeof(buf));
  CHECK(n < sizeof(buf));
  check_contains(buf, "Unknown error kind 65535");
  CHECK_EQ_U64(cubert_error_kind(&e), (cubert_error_kind_t)0xffff);
  CHECK(!cubert_error_has_kind(&e, CUBERT_ERROR_NONE));
}

TEST(error_backend_code_is_shown) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT | CUBERT_FEATURE_ERROR_REASONS);
  cubert_error_t e;
  CHECK_STATUS(cubert_error_set_driver(&e, CUBERT_ERROR_SERVER_GENERIC, -2, "cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS"),
               CUBERT_STATUS_INTERNAL);
  CHECK_EQ_I64(e.driver_code, -2);
  CHECK_EQ_STR(fmt_big(&e), "An error happened during execution\nCaused by:\n  cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS\nDriver code: -2");
}

TEST(error_set_clamps_and_truncates) {
  cubert_error_t e;
  uint64_t many[6] = {1, 2, 3, 4, 5, 6};
  char long_reason[400];
  memset(long_reason, 'r', sizeof(long_reason) - 1);
  long_reason[sizeof(long_reason) - 1] = '\0';
  cubert_error_set(&e, CUBERT_ERROR_SERVER_GENERIC, many, 6, long_reason);
  CHECK_EQ_U64(e.field[3], 4);
  CHECK_EQ_U64(strlen(e.reason), CUBERT_ERROR_REASON_SIZE - 1);
  CHECK_EQ_U64(e.field2[0], 0);
  cubert_error_set(&e, CUBERT_ERROR_NONE, NULL, 0, NULL);
  CHECK_EQ_U64(e.depth, 0);
  CHECK_STATUS(e.status, CUBERT_STATUS_OK);
}

/* ---- ServerUnhealthy aggregate --------------------------------------------- */

static void make_small(cubert_error_t *e, uint64_t i) {
  cubert_error_set(e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &i, 1, NULL);
}

static void make_numbered(cubert_error_t *e, uint64_t i) {
  cubert_error_set(e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &i, 1, NULL);
  cubert_error_wrap(e, CUBERT_ERROR_SERVER_IO);
}

TEST(error_aggregate_one) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t agg, e, first;
  char one[256];
  cubert_dim3_t req = {2048, 1, 1}, max = {1024, 1024, 64};
  cubert_error_set_resource_cube_dim(&e, req, max);
  cubert_error_wrap(&e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  e.driver_code = 5;
  cubert_error_format(&e, one, sizeof(one));
  cubert_error_clear(&agg);
  CHECK_STATUS(cubert_error_aggregate(&agg, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(agg.status, CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 1);
  CHECK_EQ_U64(agg.field[0], 1);
  CHECK_EQ_U64(agg.depth, 3);
  CHECK_EQ_U64(agg.chain[0], CUBERT_ERROR_SERVER_UNHEALTHY);
  CHECK_EQ_U64(agg.chain[1], CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  /* The first error stays inspectable. */
  CHECK_EQ_U64(cubert_error_kind(&agg), CUBERT_ERROR_RESOURCE_CUBE_DIM);
  CHECK(cubert_error_has_kind(&agg, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK_EQ_U64(agg.field[1], 2048);
  CHECK_EQ_U64(agg.field2[2], 64);
  CHECK_EQ_STR(agg.reason, one);
  {
    char expect[512];
    strcpy(expect, "The server is in an invalid state\nCaused by:\n  ");
    strcat(expect, one);
    CHECK_EQ_STR(fmt_big(&agg), expect);
  }
  CHECK_OK(cubert_error_unhealthy_first(&agg, &first));
  CHECK_EQ_U64(first.depth, 2);
  CHECK_EQ_U64(first.chain[0], CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  CHECK_EQ_U64(first.field[0], 2048);
  CHECK_EQ_U64(first.field[1], 1);
  CHECK_EQ_U64(first.field2[0], 1024);
  CHECK_EQ_I64(first.driver_code, 5);
  CHECK_STATUS(first.status, CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_STR(fmt_big(&first), one);
  /* Not an aggregate: NOT_FOUND, out untouched. */
  first.field[3] = 99;
  CHECK_STATUS(cubert_error_unhealthy_first(&e, &first), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_U64(first.field[3], 99);
  CHECK_EQ_U64(cubert_error_aggregate_count(&e), 0);
}

TEST(error_aggregate_three_joined_by_newline) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t agg, e;
  char expect[1024];
  cubert_error_clear(&agg);
  strcpy(expect, "The server is in an invalid state\nCaused by:\n  ");
  cubert_error_set(&e, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "a");
  cubert_error_aggregate(&agg, &e);
  strcat(expect, "An error happened during execution\nCaused by:\n  a\n");
  cubert_error_set2(&e, CUBERT_ERROR_RESOURCE_UNITS, 3, 2);
  cubert_error_aggregate(&agg, &e);
  strcat(expect, "Total unit count exceeds maximum.\nRequested 3 units, max units is 2.\n");
  cubert_error_set(&e, CUBERT_ERROR_PROFILE_NOT_REGISTERED, NULL, 0, NULL);
  CHECK_STATUS(cubert_error_aggregate(&agg, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  strcat(expect, "No profiling registered");
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 3);
  CHECK_EQ_U64(cubert_error_kind(&agg), CUBERT_ERROR_SERVER_GENERIC); /* the first */
  CHECK_EQ_STR(fmt_big(&agg), expect);
}

TEST(error_aggregate_hundred_truncates_text_keeps_count) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t agg, e;
  char full[16384];
  cubert_fmt_t f;
  uint64_t i;
  cubert_error_clear(&agg);
  cubert__fmt_initialize(&f, full, sizeof(full));
  for (i = 0; i < 100; i++) {
    char one[256];
    make_numbered(&e, i);
    CHECK_STATUS(cubert_error_aggregate(&agg, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
    cubert_error_format(&e, one, sizeof(one));
    if (i > 0) cubert__fmt_append_char(&f, '\n');
    cubert__fmt_append_str(&f, one);
  }
  CHECK(!cubert__fmt_truncated(&f));
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 100);
  CHECK_EQ_U64(agg.field[1], 0); /* the first error's size */
  /* The text is a NUL-terminated prefix of the full join, cut at the buffer. */
  CHECK(memchr(agg.reason, '\0', sizeof(agg.reason)) != NULL);
  CHECK(strlen(agg.reason) <= CUBERT_ERROR_REASON_SIZE - 1);
  CHECK(strlen(agg.reason) > 100);
  CHECK(strncmp(full, agg.reason, strlen(agg.reason)) == 0);
  check_contains(fmt_big(&agg), "can't allocate buffer of size: 0");
  CHECK(strstr(fmt_big(&agg), "size: 99") == NULL);
}

TEST(error_aggregate_flattens_and_converts) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_TEXT);
  cubert_error_t a, b, plain, e;
  cubert_error_clear(&a);
  cubert_error_clear(&b);
  make_small(&e, 1);
  cubert_error_aggregate(&a, &e);
  make_small(&e, 2);
  cubert_error_aggregate(&a, &e);
  make_small(&e, 3);
  cubert_error_aggregate(&b, &e);
  make_small(&e, 4);
  cubert_error_aggregate(&b, &e);
  make_small(&e, 5);
  cubert_error_aggregate(&b, &e);
  /* aggregate of aggregates: counts add, texts join */
  CHECK_STATUS(cubert_error_aggregate(&a, &b), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&a), 5);
  CHECK_EQ_STR(a.reason, "can't allocate buffer of size: 1\ncan't allocate buffer of size: 2\n"
               "can't allocate buffer of size: 3\ncan't allocate buffer of size: 4\n"
               "can't allocate buffer of size: 5");
  /* an aggregate into an empty record is copied as is */
  cubert_error_clear(&e);
  cubert_error_aggregate(&e, &b);
  CHECK_EQ_U64(cubert_error_aggregate_count(&e), 3);
  CHECK_EQ_STR(e.reason, b.reason);
  /* a plain error in the aggregate slot becomes the first */
  cubert_error_set(&plain, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "first");
  make_small(&e, 9);
  cubert_error_aggregate(&plain, &e);
  CHECK_EQ_U64(cubert_error_aggregate_count(&plain), 2);
  CHECK_EQ_U64(cubert_error_kind(&plain), CUBERT_ERROR_SERVER_GENERIC);
  CHECK_EQ_STR(plain.reason, "An error happened during execution\nCaused by:\n  first\n"
               "can't allocate buffer of size: 9");
  /* self-aggregation doubles the count */
  CHECK_STATUS(cubert_error_aggregate(&plain, &plain), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&plain), 4);
  /* nothing to add */
  CHECK_STATUS(cubert_error_aggregate(&plain, NULL), CUBERT_STATUS_SERVER_UNHEALTHY);
  cubert_error_clear(&e);
  CHECK_STATUS(cubert_error_aggregate(&plain, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&plain), 4);
  CHECK_STATUS(cubert_error_aggregate(&e, NULL), CUBERT_STATUS_OK);
  CHECK_EQ_U64(e.depth, 0);
  CHECK_STATUS(cubert_error_aggregate(NULL, &b), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(cubert_error_aggregate(NULL, NULL), CUBERT_STATUS_OK);
  /* counts saturate instead of wrapping */
  a.field[0] = UINT64_MAX - 1;
  cubert_error_aggregate(&a, &b);
  CHECK_EQ_U64(cubert_error_aggregate_count(&a), UINT64_MAX);
}

TEST(error_aggregate_full_chain_keeps_first_innermost) {
  cubert_error_t agg, e;
  int i;
  uint64_t size = 123;
  cubert_error_set(&e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  for (i = 0; i < CUBERT_ERROR_MAX_DEPTH; i++) cubert_error_wrap(&e, CUBERT_ERROR_IO_EXECUTION);
  CHECK_EQ_U64(e.depth, CUBERT_ERROR_MAX_DEPTH);
  cubert_error_clear(&agg);
  cubert_error_aggregate(&agg, &e);
  CHECK_EQ_U64(agg.depth, CUBERT_ERROR_MAX_DEPTH);
  CHECK_EQ_U64(agg.chain[0], CUBERT_ERROR_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_kind(&agg), CUBERT_ERROR_IO_BUFFER_TOO_BIG);
  CHECK_EQ_U64(agg.field[1], 123);
}

/* ---- core/base/fmt.h ------------------------------------------------------------- */

TEST(error_fmt_numbers) {
  char buf[128];
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, sizeof(buf));
  cubert__fmt_append_u64(&f, 0);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_u64(&f, UINT64_MAX);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_i64(&f, INT64_MIN);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_i64(&f, INT64_MAX);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_i64(&f, -7);
  CHECK_EQ_STR(buf, "0 18446744073709551615 -9223372036854775808 9223372036854775807 -7");
  CHECK_EQ_U64(cubert__fmt_length(&f), strlen(buf));
  cubert__fmt_initialize(&f, buf, sizeof(buf));
  cubert__fmt_append_hex(&f, 255, 4);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_hex(&f, 0, 0);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_hex(&f, UINT64_MAX, 99);
  cubert__fmt_append_char(&f, ' ');
  cubert__fmt_append_hex(&f, 0xabc, 1);
  CHECK_EQ_STR(buf, "00ff 0 ffffffffffffffff abc");
}

TEST(error_fmt_truncation_invariant) {
  char buf[40];
  size_t size, i;
  for (size = 0; size < 30; size++) {
    cubert_fmt_t f;
    memset(buf, CANARY, sizeof(buf));
    cubert__fmt_initialize(&f, size ? buf : NULL, size);
    cubert__fmt_append_str(&f, "abc");
    cubert__fmt_append_u64(&f, 12345);
    cubert__fmt_append_strn(&f, "xyzw", 2);
    cubert__fmt_append_strn(&f, NULL, 5);
    cubert__fmt_append_str(&f, NULL);
    cubert__fmt_append_i64(&f, -42);
    CHECK_EQ_U64(cubert__fmt_length(&f), 13); /* "abc12345xy-42" */
    CHECK(cubert__fmt_truncated(&f) == (size < 14));
    for (i = size; i < sizeof(buf); i++) CHECK(buf[i] == CANARY);
    if (size > 0) {
      CHECK_EQ_U64(strlen(buf), size - 1 < 13 ? size - 1 : 13);
      CHECK(strncmp(buf, "abc12345xy-42", strlen(buf)) == 0);
    }
  }
}

TEST(error_fmt_init_append) {
  char buf[8];
  cubert_fmt_t f;
  memcpy(buf, "ab\0zzzzz", 8);
  cubert__fmt_initialize_append(&f, buf, sizeof(buf));
  CHECK_EQ_U64(cubert__fmt_length(&f), 2);
  cubert__fmt_append_str(&f, "cdefghij");
  CHECK_EQ_STR(buf, "abcdefg");
  CHECK_EQ_U64(cubert__fmt_length(&f), 10);
  /* an unterminated buffer is terminated at size - 1 */
  memset(buf, 'q', sizeof(buf));
  cubert__fmt_initialize_append(&f, buf, sizeof(buf));
  CHECK_EQ_U64(cubert__fmt_length(&f), 7);
  CHECK_EQ_STR(buf, "qqqqqqq");
}
