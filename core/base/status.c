/* SPDX-License-Identifier: MIT */
/* core/base/status.c: names and descriptions of status codes (the
 * descriptions are text: CUBERT_CONFIG_ERROR_TEXT, cubert/config.h). */
#include "base/internal.h"

const char *cubert_status_name(cubert_status_t status) {
  switch (status) {
#define CUBERT_STATUS_NAME_(name, value, text) \
  case CUBERT_STATUS_##name:                   \
    return #name;
    CUBERT_STATUS_LIST(CUBERT_STATUS_NAME_)
#undef CUBERT_STATUS_NAME_
    default:
      return "UNKNOWN";
  }
}

#if CUBERT_CONFIG_ERROR_TEXT
const char *cubert_status_description(cubert_status_t status) {
  switch (status) {
#define CUBERT_STATUS_TEXT_(name, value, text) \
  case CUBERT_STATUS_##name:                   \
    return text;
    CUBERT_STATUS_LIST(CUBERT_STATUS_TEXT_)
#undef CUBERT_STATUS_TEXT_
    default:
      return "unknown status";
  }
}
#else
/* Compiled out (cubert/config.h): cubert_status_name still names the code. */
const char *cubert_status_description(cubert_status_t status) {
  (void)status;
  return "(error text compiled out)";
}
#endif
