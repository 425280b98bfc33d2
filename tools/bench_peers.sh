#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/bench_peers.sh: installs the Debian packages of the peers `make bench` measures
# cubert against, when they are missing and this can be done (root, apt-get); otherwise says
# why not and exits 0: a peer still absent prints "skipped: <reason>" in its rows.
#   pocl-opencl-icd ocl-icd-opencl-dev  PoCL (OpenCL on the CPU) + CL/cl.h, libOpenCL (bench_peers)
#   libjemalloc2 libmimalloc2.0         host allocators next to the memory pool (bench_memory)
#   libomp-dev                          OpenMP for clang, only when CC is clang (gcc has libgomp)
# Environment: CC (the compiler make uses), BENCH_NO_INSTALL=1 to never install.
set -u
pkgs="pocl-opencl-icd ocl-icd-opencl-dev libjemalloc2 libmimalloc2.0"
case "$(basename "${CC:-cc}")" in
  clang*) pkgs="$pkgs libomp-dev" ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "bench peers: not a Debian system (no dpkg-query); peers not installed, their rows may print skipped"
  exit 0
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "bench peers: installed ($pkgs)"
  exit 0
fi
if [ "${BENCH_NO_INSTALL:-0}" = 1 ]; then
  echo "bench peers: missing$missing; BENCH_NO_INSTALL=1, not installing (their rows print skipped)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "bench peers: missing$missing; not root or no apt-get, not installing (their rows print skipped)"
  echo "bench peers: to install them: apt-get update && apt-get install -y$missing"
  exit 0
fi
echo "bench peers: installing$missing (apt-get)"
apt-get update -qq >/dev/null 2>&1 || echo "bench peers: apt-get update failed (offline?)"
if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null 2>&1; then
  echo "bench peers: installed$missing"
  exit 0
fi
# one at a time, so one package apt cannot find does not keep the others out
for p in $missing; do
  if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null 2>&1; then
    echo "bench peers: installed $p"
  else
    echo "bench peers: apt-get could not install $p (offline? not packaged?); its rows print skipped"
  fi
done
exit 0
