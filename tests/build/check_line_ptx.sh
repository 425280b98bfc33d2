#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_line_ptx.sh: line loads and stores (cubert/kernel_line.h)
# compile to real vector instructions on CUDA: nvcc's PTX of the line test
# kernels (tests/cts/cts_kernels_launch.h) must hold ld/st.global.v4.f32 (f32x4),
# .v4.u32 (u32x4, u8x16), .v2.f64 (f64x2), .v2.u32 (u32x2), .v2.u16 (u16x2)
# and .v2.u8 (u8x2). Needs nvcc; no GPU.
#
#   check_line_ptx.sh NVCC OUTDIR
set -u
nvcc=$1
out=$2
mkdir -p "$out"
if ! command -v "$nvcc" >/dev/null 2>&1; then
  echo "check_line_ptx: skipped: $nvcc not found"
  exit 0
fi
"$nvcc" -std=c++14 -O3 -arch=compute_75 -ptx -Iinclude -x cu tests/cts/cts_kernels_launch.h \
  -o "$out/lines.ptx" || exit 1
fail=0
for want in ld.global.v4.f32 st.global.v4.f32 ld.global.v4.u32 st.global.v4.u32 \
            ld.global.v2.f64 st.global.v2.f64 ld.global.v2.u32 st.global.v2.u32 \
            ld.global.v2.u16 st.global.v2.u16 ld.global.v2.u8 st.global.v2.u8; do
  grep -q "$want" "$out/lines.ptx" || { echo "check_line_ptx: no $want in $out/lines.ptx"; fail=1; }
done
[ $fail = 0 ] && echo "check_line_ptx: ok (line accesses are vector loads and stores in the PTX)"
exit $fail
