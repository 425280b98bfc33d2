/* SPDX-License-Identifier: MIT */
/* cubert_version() and cubert_version_number() (cubert/base.h). */
#include <stdio.h>

#include "test.h"
#include "cubert/cubert.h"

TEST(version_string_matches_the_headers) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", CUBERT_VERSION_MAJOR, CUBERT_VERSION_MINOR,
           CUBERT_VERSION_PATCH);
  CHECK_EQ_STR(CUBERT_VERSION_STRING, want);
  CHECK_EQ_STR(cubert_version(), want);
  CHECK(cubert_version() == cubert_version()); /* static storage */
}

TEST(version_number_matches_the_headers) {
  uint32_t n = cubert_version_number();
  CHECK_EQ_U64(n, CUBERT_VERSION_NUMBER);
  CHECK_EQ_U64(n / 10000, CUBERT_VERSION_MAJOR);
  CHECK_EQ_U64(n / 100 % 100, CUBERT_VERSION_MINOR);
  CHECK_EQ_U64(n % 100, CUBERT_VERSION_PATCH);
}
