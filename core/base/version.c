/* core/base/version.c: the library's version (cubert/base.h). */
#include "base/internal.h"

const char *cubert_version(void) { return CUBERT_VERSION_STRING; }

uint32_t cubert_version_number(void) { return (uint32_t)CUBERT_VERSION_NUMBER; }
