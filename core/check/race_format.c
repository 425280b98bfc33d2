/* SPDX-License-Identifier: MIT */
/* core/check/race_format.c: names and the text of a race report (cubert/race.h). */
#include "check/race_internal.h"
#include "base/fmt.h"

#if CUBERT_CONFIG_RACE_CHECKER /* else race_off.c: the public entry points (cubert/config.h) */

const char *cubert_race_access_name(uint32_t access) {
  switch (access) {
    case CUBERT_RACE_READ: return "read";
    case CUBERT_RACE_WRITE: return "write";
    case CUBERT_RACE_RECLAIM: return "reclaim";
    default: return "?";
  }
}

const char *cubert_race_kind_name(uint32_t kind) {
  switch (kind) {
    case CUBERT_RACE_KIND_READ_AFTER_WRITE: return "read-after-write";
    case CUBERT_RACE_KIND_WRITE_AFTER_READ: return "write-after-read";
    case CUBERT_RACE_KIND_WRITE_AFTER_WRITE: return "write-after-write";
    case CUBERT_RACE_KIND_RECLAIM: return "reclaim-while-in-use";
    default: return "?";
  }
}

static void race_format_timeline(cubert_fmt_t *f, uint32_t stream) {
  if (stream == CUBERT_RACE_HOST) {
    cubert__fmt_append_str(f, "host");
  } else {
    cubert__fmt_append_str(f, "stream ");
    cubert__fmt_append_u64(f, stream);
  }
}

static void race_format_op(cubert_fmt_t *f, const cubert_race_op_t *op) {
  if (op->access == CUBERT_RACE_RECLAIM) {
    cubert__fmt_append_str(f, "reclaim by ");
    race_format_timeline(f, op->stream);
    cubert__fmt_append_str(f, " at op ");
    cubert__fmt_append_u64(f, op->index);
    return;
  }
  race_format_timeline(f, op->stream);
  cubert__fmt_append_str(f, " op ");
  cubert__fmt_append_u64(f, op->index);
  if (op->name) {
    cubert__fmt_append_str(f, " '");
    cubert__fmt_append_str(f, op->name);
    cubert__fmt_append_char(f, '\'');
  }
  cubert__fmt_append_char(f, ' ');
  cubert__fmt_append_str(f, cubert_race_access_name(op->access));
  if (op->start != 0 || op->end != CUBERT_RACE_WHOLE_END) {
    cubert__fmt_append_str(f, " bytes [");
    cubert__fmt_append_u64(f, op->start);
    cubert__fmt_append_str(f, ", ");
    cubert__fmt_append_u64(f, op->end);
    cubert__fmt_append_char(f, ')');
  }
}

size_t cubert_race_report_format(const cubert_race_report_t *report, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, size);
  if (!report) return 0;
  cubert__fmt_append_str(&f, "race: ");
  cubert__fmt_append_str(&f, cubert_race_kind_name(report->kind));
  cubert__fmt_append_str(&f, " on buffer 0x");
  cubert__fmt_append_hex(&f, report->buffer, 16);
  cubert__fmt_append_str(&f, ": ");
  race_format_op(&f, &report->current);
  cubert__fmt_append_str(&f, " is not ordered after ");
  race_format_op(&f, &report->previous);
  if (report->has_seed) {
    cubert__fmt_append_str(&f, " (seed ");
    cubert__fmt_append_u64(&f, report->seed);
    cubert__fmt_append_char(&f, ')');
  }
  return cubert__fmt_length(&f);
}

#endif /* CUBERT_CONFIG_RACE_CHECKER */
