#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_minimal_config.sh: the config header examples/embedded/cubert_config_minimal.h
# and the flags MINIMAL_CONFIG give the same library (its features and registry size); part of
# make check-minimal.
#
#   check_minimal_config.sh CC OUTDIR 'MINIMAL_CONFIG'
set -u
CC=$1 OUT=$2 MINIMAL=$3
mkdir -p "$OUT"
printf '#include <stdio.h>\n#include "device/device_registry.h"\nint main(void) { printf("%%lx %%d\\n", (unsigned long)cubert_config_features(), CUBERT_DEVICE_REGISTRY_CAPACITY); return 0; }\n' \
  > "$OUT/probe.c"
for how in "$MINIMAL" "-DCUBERT_CONFIG_FILE=\"cubert_config_minimal.h\" -Iexamples/embedded"; do
  # shellcheck disable=SC2086
  eval "$CC -Iinclude -Icore $how -o \"$OUT/probe\" \"$OUT/probe.c\" core/base/version.c" && "$OUT/probe"
done | uniq | awk 'END { if (NR != 1) { print "check-minimal: examples/embedded/cubert_config_minimal.h and MINIMAL_CONFIG differ"; exit 1 }
  print "check-minimal: the config header and MINIMAL_CONFIG give the same library (features and registry: " $0 ")" }'
