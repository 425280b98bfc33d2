/* SPDX-License-Identifier: MIT */
/* cubert/kernel_math.h: portable math of the kernel dialect (placeholder). */
#ifndef CUBERT_KERNEL_MATH_H
#define CUBERT_KERNEL_MATH_H

#include "cubert/kernel.h"

#endif /* CUBERT_KERNEL_MATH_H */
