#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/api-rename.sh: moves a tree (a branch, a user's program) to the current API names.
# Run it from the repository root (or give the root as $1). Idempotent: running it twice
# changes nothing the second time.
#
#  1. Renames (sed -E, whole words), so that each verb means one thing
#     (the conventions in include/cubert/cubert.h; CubeCL's names in docs/cubecl-mapping.md):
#       cubert_client_create            -> cubert_client_create_from_slice
#       cubert_client_create_bytes      -> cubert_client_create_from_bytes
#       cubert_client_create_tensor     -> cubert_client_create_tensor_from_slice
#       cubert_client_create_tensors    -> cubert_client_create_tensors_from_slices
#       cubert_sim_chooser_init_X       -> cubert_sim_chooser_initialize_X
#                                          (X = seed, replay, bytes, pct, explore)
#       cubert_sim_explorer_init        -> cubert_sim_explorer_initialize
#       cubert_fmt_init[_append]        -> cubert_fmt_initialize[_append]   (core-internal)
#       counting_allocator_init, fake_event_backend_init, host_storage_init
#                                       -> ..._initialize                  (tests/support)
#     The redesign of 0.2 (CHANGELOG.md, "Migration"): one noun per role:
#       cubert_server_* / CUBERT_SERVER_*      -> cubert_server_* / CUBERT_SERVER_*  (the server)
#       cubert_client_race_counters|last_report|seed -> cubert_client_race_*  (now in client.h)
#       cubert/driver/server.h             -> cubert/driver/server.h
#       cubert/driver/{driver,device,arith,sim}.h -> cubert/driver/...
#       cubert/os.h, cubert_os_{lock_create,lock_destroy,clock,stream_source}
#                                        -> cubert/os.h, cubert_os_...
#       cubert_error_set_driver, driver_code -> cubert_error_set_driver, driver_code
#       CUBERT_CTS_DRIVER                -> CUBERT_CTS_DRIVER (make cts DRIVER=...)
#  2. python3 tools/api_migrate.py out-error: calls of the functions that gained a trailing
#     `cubert_error_t *out_error` get `, NULL` (only calls with the old argument count).
#  3. python3 tools/api_migrate.py includes: files that use what moved from the user headers
#     to include/cubert/driver/ (handle table and memory ids, memory manager and pools, the
#     device handle and registry, the race checker, the simulation's choice calls, the
#     profiler, checked arithmetic) get the driver header.
#  4. sh tests/build/check_hygiene.sh add-spdx: the SPDX line in new source files.
# Steps 2 and 3 need python3; SKIP_PY=1 skips them.
set -eu
root=${1:-.}
cd "$root"
files=$(git ls-files '*.c' '*.h' '*.cpp' '*.cu' '*.md' 'Makefile' '*.mk' '*.sh' '*.py' |
  grep -v -e '^tools/api-rename\.sh$' -e '^tools/api_migrate\.py$' || true)
[ -n "$files" ] || { echo "api-rename: no files"; exit 0; }
# shellcheck disable=SC2086
sed -E -i \
  -e 's/\bcubert_client_create\b/cubert_client_create_from_slice/g' \
  -e 's/\bcubert_client_create_bytes\b/cubert_client_create_from_bytes/g' \
  -e 's/\bcubert_client_create_tensor\b/cubert_client_create_tensor_from_slice/g' \
  -e 's/\bcubert_client_create_tensors\b/cubert_client_create_tensors_from_slices/g' \
  -e 's/\bcubert_sim_chooser_init_(seed|replay|bytes|pct|explore)\b/cubert_sim_chooser_initialize_\1/g' \
  -e 's/\bcubert_sim_explorer_init\b/cubert_sim_explorer_initialize/g' \
  -e 's/\bcubert_fmt_init\b/cubert_fmt_initialize/g' \
  -e 's/\bcubert_fmt_init_append\b/cubert_fmt_initialize_append/g' \
  -e 's/\b(counting_allocator|fake_event_backend|host_storage)_init\b/\1_initialize/g' \
  -e 's/\bcubert_kit_race_(counters|last_report|seed)\b/cubert_client_race_\1/g' \
  -e 's/\bcubert_kit_/cubert_server_/g' \
  -e 's/\bCUBERT_KIT_/CUBERT_SERVER_/g' \
  -e 's/\bcubert_host_(lock_create|lock_destroy|clock|stream_source)\b/cubert_os_\1/g' \
  -e 's/\bcubert_error_set_backend\b/cubert_error_set_driver/g' \
  -e 's/\bbackend_code\b/driver_code/g' \
  -e 's|"cubert/driver/server\.h"|"cubert/driver/server.h"|g' \
  -e 's%"cubert/driver/(driver|device|arith|sim)\.h"%"cubert/driver/\1.h"%g' \
  -e 's|"cubert/host\.h"|"cubert/os.h"|g' \
  -e 's|<cubert/driver/server\.h>|<cubert/driver/server.h>|g' \
  -e 's%<cubert/driver/(driver|device|arith|sim)\.h>%<cubert/driver/\1.h>%g' \
  -e 's|<cubert/host\.h>|<cubert/os.h>|g' \
  -e 's/\bCUBERT_CTS_SERVER\b/CUBERT_CTS_DRIVER/g' \
  $files
echo "api-rename: renames applied"
if [ "${SKIP_PY:-0}" != 1 ]; then
  python3 tools/api_migrate.py out-error
  python3 tools/api_migrate.py includes
fi
if [ -f tests/build/check_hygiene.sh ]; then sh tests/build/check_hygiene.sh add-spdx; fi
