#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_minimal_config.sh: the config header examples/embedded/cubert_config_minimal.h
# and the flags MINIMAL_CONFIG give the same library (its features and registry size); part of
# make check-minimal. Each probe must build and run: a failed one fails the check.
#
#   check_minimal_config.sh CC OUTDIR 'MINIMAL_CONFIG'
set -u
CC=$1 OUT=$2 MINIMAL=$3
mkdir -p "$OUT"
printf '#include <stdio.h>\n#include "device/device_registry.h"\nint main(void) { printf("%%lx %%d\\n", (unsigned long)cubert_config_features(), CUBERT_DEVICE_REGISTRY_CAPACITY); return 0; }\n' \
  > "$OUT/probe.c"
# shellcheck disable=SC2086
$CC -Iinclude -Icore $MINIMAL -o "$OUT/probe-flags" "$OUT/probe.c" core/base/version.c ||
  { echo "check-minimal: the probe does not build with MINIMAL_CONFIG"; exit 1; }
$CC -Iinclude -Icore '-DCUBERT_CONFIG_FILE="cubert_config_minimal.h"' -Iexamples/embedded \
  -o "$OUT/probe-file" "$OUT/probe.c" core/base/version.c ||
  { echo "check-minimal: the probe does not build with CUBERT_CONFIG_FILE"; exit 1; }
a=$("$OUT/probe-flags") || { echo "check-minimal: the MINIMAL_CONFIG probe failed"; exit 1; }
b=$("$OUT/probe-file") || { echo "check-minimal: the CUBERT_CONFIG_FILE probe failed"; exit 1; }
if [ "$a" != "$b" ]; then
  echo "check-minimal: examples/embedded/cubert_config_minimal.h ($b) and MINIMAL_CONFIG ($a) differ"
  exit 1
fi
echo "check-minimal: the config header and MINIMAL_CONFIG give the same library (features and registry: $a)"
