/*
 * tests/host/kernels_test.cu: the kernels of kernels_test.h compiled by nvcc,
 * proving the dialect's CUDA expansion builds the very source the CPU tests
 * run. Each CUBERT_KERNEL becomes
 *   extern "C" __global__ void name(const cubert_kernel_args_t args,
 *                                   uint32_t mode, cubert_kernel_report_t *report)
 *
 *   nvcc -std=c++14 -arch=sm_90 -Iinclude -Itests/host -c tests/host/kernels_test.cu -o k.o
 *   nvcc -std=c++14 -arch=sm_90 -Iinclude -Itests/host -ptx tests/host/kernels_test.cu -o k.ptx
 *
 * With -DKT_CUDA_MAIN it also builds a program that runs the kernels on a GPU
 * and checks them against plain C references (tests/host/kernels_test_cuda.sh).
 */
#include "kernels_test.h"

#ifdef KT_CUDA_MAIN
#include "kernels_test_cuda_main.inc"
#endif
