/* SPDX-License-Identifier: MIT */
/* core/base/version.c: the library's version (cubert/base.h) and compiled-in
 * features (cubert/config.h). */
#include "base/internal.h"

const char *cubert_version(void) { return CUBERT_VERSION_STRING; }

uint32_t cubert_version_number(void) { return (uint32_t)CUBERT_VERSION_NUMBER; }

uint32_t cubert_config_features(void) {
  return (CUBERT_CONFIG_RACE_CHECKER ? CUBERT_FEATURE_RACE_CHECKER : 0u) |
         (CUBERT_CONFIG_SIMULATION ? CUBERT_FEATURE_SIMULATION : 0u) |
         (CUBERT_CONFIG_PROFILING ? CUBERT_FEATURE_PROFILING : 0u) |
         (CUBERT_CONFIG_ERROR_TEXT ? CUBERT_FEATURE_ERROR_TEXT : 0u) |
         (CUBERT_CONFIG_COLLECTIVES ? CUBERT_FEATURE_COLLECTIVE_OPS : 0u) |
         (CUBERT_CONFIG_STAGING ? CUBERT_FEATURE_STAGING_BUFFERS : 0u) |
         (CUBERT_CONFIG_PAGED_POOLS ? CUBERT_FEATURE_PAGED_POOLS : 0u) |
         (CUBERT_CONFIG_PERSISTENT_MEMORY ? CUBERT_FEATURE_PERSISTENT_MEMORY : 0u) |
         (CUBERT_CONFIG_ERROR_REASONS ? CUBERT_FEATURE_ERROR_REASONS : 0u);
}
