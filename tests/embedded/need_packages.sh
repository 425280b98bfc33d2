#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/embedded/need_packages.sh: makes sure the tools an embedded target needs are there,
# installing the missing Debian packages (apt-get update first) when it can.
#
# usage: need_packages.sh LABEL TOOL:PACKAGE ...
#   TOOL is a command looked up on PATH, or an absolute path that must exist (a sysroot file);
#   the word "newlib" stands for newlib's Cortex-M multilib (librdimon.a for -mcpu=cortex-m4
#   -mfloat-abi=hard, found through arm-none-eabi-gcc).
# Environment: EMBEDDED_NO_APT=1 only reports what is missing; ARM_CC (arm-none-eabi-gcc).
set -eu
label=$1
shift
have() {
  case "$1" in
    newlib)
      lib=$(${ARM_CC:-arm-none-eabi-gcc} -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 \
        -print-file-name=librdimon.a 2>/dev/null) || return 1
      [ -f "$lib" ] ;;
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}
missing=
for pair in "$@"; do
  tool=${pair%%:*}
  pkg=${pair#*:}
  have "$tool" || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
if [ "${EMBEDDED_NO_APT:-0}" = 1 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "$label: missing, install:$missing (Debian: apt-get install$missing)"
  exit 1
fi
sudo=
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
    echo "$label: missing:$missing; not root and no password-less sudo (Debian: apt-get install$missing)"
    exit 1
  fi
fi
echo "$label: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q </dev/null >/dev/null
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing </dev/null >/dev/null
for pair in "$@"; do
  have "${pair%%:*}" || { echo "$label: ${pair#*:} installed but ${pair%%:*} still not found"; exit 1; }
done
