/* SPDX-License-Identifier: MIT */
/*
 * examples/embedded/cubert_config_minimal.h: the minimal core's choices as a
 * config header (docs/embedding.md, "The files to compile"). Compile the
 * library and the program with
 *
 *   -DCUBERT_CONFIG_FILE='"cubert_config_minimal.h"' -Ipath/to/this/folder
 *
 * Every feature below is left out; the API still links and answers
 * UNSUPPORTED with a COMPILED_OUT record (cubert/config.h says what each
 * switch removes). `make check-minimal` checks that this header and the
 * Makefile's MINIMAL_CONFIG flags give the same library.
 */
#ifndef CUBERT_CONFIG_MINIMAL_H
#define CUBERT_CONFIG_MINIMAL_H

#define CUBERT_CONFIG_RACE_CHECKER 0
#define CUBERT_CONFIG_SIMULATION 0
#define CUBERT_CONFIG_PROFILING 0
#define CUBERT_CONFIG_ERROR_TEXT 0
#define CUBERT_CONFIG_ERROR_REASONS 0
#define CUBERT_CONFIG_COLLECTIVES 0
#define CUBERT_CONFIG_STAGING 0
#define CUBERT_CONFIG_PAGED_POOLS 0
#define CUBERT_CONFIG_PERSISTENT_MEMORY 0
#define CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY 8

#endif
