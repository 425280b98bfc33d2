/* SPDX-License-Identifier: MIT */
/*
 * core/check/race_off.c: the race checker's public entry points when the
 * checker is compiled out (CUBERT_CONFIG_RACE_CHECKER 0, cubert/config.h):
 * the text functions of cubert/race.h say so. Nothing else is stubbed: race.c,
 * race_shadow.c, race_format.c and core/server/server_race.c are not compiled;
 * a device asked for the checker answers COMPILED_OUT and the server's hooks
 * vanish at their call sites (core/server/server_internal.h, server.h).
 */
#include "base/internal.h"
#include "cubert/race.h"

#if !CUBERT_CONFIG_RACE_CHECKER

#define RACE_OFF_TEXT "(race checker compiled out)"

const char *cubert_race_access_name(uint32_t access) {
  (void)access;
  return RACE_OFF_TEXT;
}

const char *cubert_race_kind_name(uint32_t kind) {
  (void)kind;
  return RACE_OFF_TEXT;
}

size_t cubert_race_report_format(const cubert_race_report_t *report, char *buf, size_t size) {
  (void)report;
  if (buf && size > 0) (void)cubert__strlcpy(buf, RACE_OFF_TEXT, size);
  return sizeof(RACE_OFF_TEXT) - 1u;
}

#endif /* !CUBERT_CONFIG_RACE_CHECKER */
