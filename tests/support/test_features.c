/* SPDX-License-Identifier: MIT */
/* tests/support/test_features.c: TEST_REQUIRES / TEST_REQUIRE_FEATURE: a test that needs a feature
 * of cubert/config.h that this build compiled out is skipped with the switch's name. Shared by the
 * hosted runner (runner.c) and the embedded one (tests/embedded/runner.c). */
#include <stddef.h>

#include "test.h"
#include "cubert/config.h"

const char *test_current_name;

int test_require_features(const char *file, int line, unsigned bits) {
  static const struct {
    unsigned bit;
    const char *what;
  } k_features[] = {
      {CUBERT_FEATURE_RACE_CHECKER, "skipped: compiled out (CUBERT_CONFIG_RACE_CHECKER=0)"},
      {CUBERT_FEATURE_SIMULATION, "skipped: compiled out (CUBERT_CONFIG_SIMULATION=0)"},
      {CUBERT_FEATURE_PROFILING, "skipped: compiled out (CUBERT_CONFIG_PROFILING=0)"},
      {CUBERT_FEATURE_ERROR_TEXT, "skipped: compiled out (CUBERT_CONFIG_ERROR_TEXT=0)"},
      {CUBERT_FEATURE_COLLECTIVE_OPS, "skipped: compiled out (CUBERT_CONFIG_COLLECTIVES=0)"},
      {CUBERT_FEATURE_STAGING_BUFFERS, "skipped: compiled out (CUBERT_CONFIG_STAGING=0)"},
      {CUBERT_FEATURE_PAGED_POOLS, "skipped: compiled out (CUBERT_CONFIG_PAGED_POOLS=0)"},
      {CUBERT_FEATURE_PERSISTENT_MEMORY, "skipped: compiled out (CUBERT_CONFIG_PERSISTENT_MEMORY=0)"},
      {CUBERT_FEATURE_ERROR_REASONS, "skipped: compiled out (CUBERT_CONFIG_ERROR_REASONS=0)"},
  };
  unsigned missing = bits & ~(unsigned)cubert_config_features();
  size_t i;
  for (i = 0; i < sizeof k_features / sizeof k_features[0]; i++)
    if (missing & k_features[i].bit) test_skip(file, line, k_features[i].what);
  if (missing) test_skip(file, line, "skipped: compiled out (unknown feature)");
  return 0;
}
