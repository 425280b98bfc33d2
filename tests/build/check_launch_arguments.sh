#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_launch_arguments.sh: cubert_client_launch takes a
# cubert_launch_arguments_t, and passing the kernel-side struct
# (cubert_kernel_args_t) is a compile ERROR in C, not a warning: the wrong
# programs below must fail to compile even without -Werror, with the
# diagnostic naming the type check, while the right one compiles with -Werror.
#
#   check_launch_arguments.sh CC OUTDIR [CXX]
set -u
cc=$1
out=$2
cxx=${3:-}
mkdir -p "$out"
fail=0
prelude='#include "cubert/cubert.h"
CUBERT_KERNEL(k_body) { CUBERT_PHASE { } }
CUBERT_KERNEL_DESCRIPTOR(k, k_body, 0, 0, 0, 1, 1, 1);
int f(cubert_client_t *client, cubert_handle_t *h);
int f(cubert_client_t *client, cubert_handle_t *h) {
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_t args;
  cubert_kernel_args_t kargs;
  cubert_error_t err;
  (void)h; (void)args; (void)kargs;
  cubert_launch_arguments_initialize(&args);
  cubert_kernel_args_initialize(&kargs);'
write() { # name, body
  printf '%s\n%s\n  return 0;\n}\n' "$prelude" "$2" >"$out/$1.c"
}
write right '  (void)cubert_launch_arguments_set_buffer(&args, 0, h);
  (void)cubert_launch_arguments_set_f32(&args, 0, 1.5f);
  (void)cubert_client_launch(client, &k, &count, &args, &err);
  (void)cubert_client_launch_unchecked(client, &k, &count, &args, &err);
  { cubert_status_t (*fn)(cubert_client_t *, const struct cubert_kernel_t *,
        const struct cubert_cube_count_t *, const cubert_launch_arguments_t *,
        cubert_error_t *) = cubert_client_launch; (void)fn; }'
write wrong_launch '  (void)cubert_client_launch(client, &k, &count, &kargs, &err);'
write wrong_unchecked '  (void)cubert_client_launch_unchecked(client, &k, &count, &kargs, &err);'
write wrong_handle '  (void)cubert_client_launch(client, &k, &count, h, &err);'
flags="-std=c99 -pedantic -Wall -Wextra -Iinclude"
if ! $cc $flags -Werror -c "$out/right.c" -o "$out/right.o" 2>"$out/right.log"; then
  echo "check_launch_arguments: the right program does not compile:"; cat "$out/right.log"; fail=1
fi
for w in wrong_launch wrong_unchecked wrong_handle; do
  # -w: no warnings at all, so only a hard error can stop the build
  if $cc $flags -w -c "$out/$w.c" -o "$out/$w.o" 2>"$out/$w.log"; then
    echo "check_launch_arguments: $w.c compiled ($cc): the wrong struct must be an error"; fail=1
  elif ! grep -q cubert_launch_arguments_tag_ "$out/$w.log"; then
    echo "check_launch_arguments: $w.c failed for another reason:"; cat "$out/$w.log"; fail=1
  fi
done
if [ -n "$cxx" ]; then
  cp "$out/wrong_launch.c" "$out/wrong_launch.cpp"
  if $cxx -std=c++11 -w -Iinclude -c "$out/wrong_launch.cpp" -o "$out/wrong_launch_cpp.o" 2>/dev/null; then
    echo "check_launch_arguments: wrong_launch.cpp compiled ($cxx)"; fail=1
  fi
fi
[ $fail = 0 ] && echo "check_launch_arguments: ok ($cc: the kernel-side struct or a handle given to cubert_client_launch(_unchecked) does not compile)"
exit $fail
