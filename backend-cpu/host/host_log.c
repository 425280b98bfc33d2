/* SPDX-License-Identifier: MIT */
/* backend-cpu/host/host_log.c: the default log sink (stderr). */
#include "cubert/host.h"

#include <stdio.h>

void cubert_log_sink_stderr(void *self, const char *text, size_t length) {
  (void)self;
  if (text && length) (void)fwrite(text, 1, length, stderr);
}
