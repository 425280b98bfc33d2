/* SPDX-License-Identifier: MIT */
/*
 * tests/support/enum_list.h: every enum type of the public headers, for the checks
 * that each one is 4 bytes wide on every target (arm-none-eabi and -fshort-enums
 * included): tests/unit/test_abi.c at run time, tests/build/enum_sizes.c at compile
 * time (make check-headers). A new public enum gets its line here.
 */
#ifndef CUBERT_TEST_ENUM_LIST_H
#define CUBERT_TEST_ENUM_LIST_H

#include "cubert/cubert.h"
#include "cubert/cpu.h"
#include "cubert/race.h"
#include "cubert/sim.h"
#include "cubert/driver/driver.h"
#include "memory/memory.h"
#include "cubert/driver/error.h"

#define CUBERT_TEST_PUBLIC_ENUMS(X)  \
  X(cubert_status_t)                 \
  X(cubert_error_kind_t)             \
  X(cubert_call_error_payload_t)     \
  X(cubert_bounds_check_mode_t)      \
  X(cubert_allocation_property_t)    \
  X(cubert_reduce_operation_t)       \
  X(cubert_comm_dtype_t)             \
  X(cubert_cpu_mode_t)               \
  X(cubert_cube_count_kind_t)        \
  X(cubert_execution_mode_t)         \
  X(cubert_layout_strategy_t)        \
  X(cubert_layout_policy_kind_t)     \
  X(cubert_memory_allocation_mode_t) \
  X(cubert_profile_level_t)          \
  X(cubert_timing_method_t)          \
  X(cubert_race_access_t)            \
  X(cubert_race_kind_t)              \
  X(cubert_sim_source_t)             \
  X(cubert_stream_policy_t)          \
  X(cubert_copy_kind_t)              \
  X(cubert_collective_kind_t)        \
  X(cubert_memory_pool_type_t)       \
  X(cubert_memory_configuration_kind_t) \
  X(cubert_memory_pools_config_kind_t)  \
  X(cubert_memory_pool_kind_t)       \
  X(cubert_persistent_memory_t)

#endif /* CUBERT_TEST_ENUM_LIST_H */
