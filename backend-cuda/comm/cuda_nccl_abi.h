/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_nccl_abi.h: the few NCCL types the CUDA driver uses,
 * declared here with NCCL's ABI (values and layouts of nccl.h, NCCL 2.x)
 * instead of including nccl.h: that header is often absent where the
 * library is built (NCCL is a separate package from the CUDA toolkit), it
 * includes cuda_runtime.h, and libnccl is only ever opened at run time
 * (cuda_nccl_loader.h). tests/cuda/test_cuda_nccl_abi.c checks every value
 * and size below against nccl.h where the build finds one.
 *
 * Only what NCCL documents as stable ABI is declared: the result, data type
 * and reduction enums, the 128-byte unique id, the opaque communicator and
 * the first fields of ncclConfig_t (NCCL copies min(size, its own size)
 * bytes of it and reads fields by `version`, so a caller built against an
 * older layout stays valid).
 */
#ifndef CUBERT_BACKEND_CUDA_COMM_CUDA_NCCL_ABI_H
#define CUBERT_BACKEND_CUDA_COMM_CUDA_NCCL_ABI_H

#include <stddef.h>

/* ncclResult_t */
typedef enum cubert_nccl_result_e {
  CUBERT_NCCL_SUCCESS = 0,
  CUBERT_NCCL_UNHANDLED_CUDA_ERROR = 1,
  CUBERT_NCCL_SYSTEM_ERROR = 2,
  CUBERT_NCCL_INTERNAL_ERROR = 3,
  CUBERT_NCCL_INVALID_ARGUMENT = 4,
  CUBERT_NCCL_INVALID_USAGE = 5,
  CUBERT_NCCL_REMOTE_ERROR = 6,
  CUBERT_NCCL_IN_PROGRESS = 7,
  CUBERT_NCCL_TIMEOUT = 8 /* newer NCCL (ncclNumResults is 8 before) */
} cubert__nccl_result_t;

/* ncclDataType_t */
typedef enum cubert_nccl_data_type_e {
  CUBERT_NCCL_INT8 = 0,
  CUBERT_NCCL_UINT8 = 1,
  CUBERT_NCCL_INT32 = 2,
  CUBERT_NCCL_UINT32 = 3,
  CUBERT_NCCL_INT64 = 4,
  CUBERT_NCCL_UINT64 = 5,
  CUBERT_NCCL_FLOAT16 = 6,
  CUBERT_NCCL_FLOAT32 = 7,
  CUBERT_NCCL_FLOAT64 = 8,
  CUBERT_NCCL_BFLOAT16 = 9,
  CUBERT_NCCL_FLOAT8E4M3 = 10, /* NCCL 2.24 */
  CUBERT_NCCL_FLOAT8E5M2 = 11  /* NCCL 2.24 */
} cubert_nccl_data_type_t;

/* ncclRedOp_t (the built-in operations) */
typedef enum cubert_nccl_red_op_e {
  CUBERT_NCCL_SUM = 0,
  CUBERT_NCCL_PROD = 1,
  CUBERT_NCCL_MAX = 2,
  CUBERT_NCCL_MIN = 3,
  CUBERT_NCCL_AVG = 4 /* NCCL 2.10 */
} cubert_nccl_red_op_t;

/* NCCL_UNIQUE_ID_BYTES, ncclUniqueId */
#define CUBERT_NCCL_UNIQUE_ID_BYTES 128
typedef struct cubert_nccl_unique_id_t {
  char internal[CUBERT_NCCL_UNIQUE_ID_BYTES];
} cubert_nccl_unique_id_t;

/* ncclComm_t: opaque */
typedef struct cubert_nccl_comm_opaque_t *cubert_nccl_comm_t;

/* The first fields of ncclConfig_t, as NCCL 2.14 defined it (the version
 * that introduced `blocking`). NCCL_CONFIG_INITIALIZER's magic; version
 * NCCL_VERSION(2,14,0). */
#define CUBERT_NCCL_CONFIG_MAGIC 0xcafebeefu
#define CUBERT_NCCL_CONFIG_VERSION 21400u
#define CUBERT_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1) /* NCCL_CONFIG_UNDEF_INT (INT_MIN) */
typedef struct cubert_nccl_config_t {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
} cubert_nccl_config_t;

/* NCCL_VERSION(X, Y, Z): versions before 2.9 count X*1000 + Y*100 + Z. */
#define CUBERT_NCCL_VERSION(x, y, z) \
  (((x) <= 2 && (y) <= 8) ? (x) * 1000 + (y) * 100 + (z) : (x) * 10000 + (y) * 100 + (z))

/* The entry points, with their nccl.h signatures over the types above
 * (cudaStream_t is a CUstream). */
struct CUstream_st;
typedef cubert__nccl_result_t (*cubert_nccl_get_version_fn)(int *version);
typedef cubert__nccl_result_t (*cubert_nccl_get_unique_id_fn)(cubert_nccl_unique_id_t *id);
typedef cubert__nccl_result_t (*cubert_nccl_comm_init_rank_fn)(cubert_nccl_comm_t *comm, int nranks,
                                                               cubert_nccl_unique_id_t id, int rank);
typedef cubert__nccl_result_t (*cubert_nccl_comm_init_rank_config_fn)(
    cubert_nccl_comm_t *comm, int nranks, cubert_nccl_unique_id_t id, int rank,
    cubert_nccl_config_t *config);
typedef cubert__nccl_result_t (*cubert_nccl_comm_init_all_fn)(cubert_nccl_comm_t *comms, int ndev,
                                                              const int *devlist);
typedef cubert__nccl_result_t (*cubert_nccl_comm_fn)(cubert_nccl_comm_t comm);
typedef cubert__nccl_result_t (*cubert_nccl_comm_get_async_error_fn)(cubert_nccl_comm_t comm,
                                                                     cubert__nccl_result_t *error);
typedef cubert__nccl_result_t (*cubert_nccl_all_reduce_fn)(const void *sendbuff, void *recvbuff,
                                                           size_t count,
                                                           cubert_nccl_data_type_t datatype,
                                                           cubert_nccl_red_op_t op,
                                                           cubert_nccl_comm_t comm,
                                                           struct CUstream_st *stream);
typedef cubert__nccl_result_t (*cubert_nccl_send_fn)(const void *sendbuff, size_t count,
                                                     cubert_nccl_data_type_t datatype, int peer,
                                                     cubert_nccl_comm_t comm,
                                                     struct CUstream_st *stream);
typedef cubert__nccl_result_t (*cubert_nccl_recv_fn)(void *recvbuff, size_t count,
                                                     cubert_nccl_data_type_t datatype, int peer,
                                                     cubert_nccl_comm_t comm,
                                                     struct CUstream_st *stream);
typedef cubert__nccl_result_t (*cubert_nccl_group_fn)(void);
typedef const char *(*cubert_nccl_get_error_string_fn)(cubert__nccl_result_t result);

#endif /* CUBERT_BACKEND_CUDA_COMM_CUDA_NCCL_ABI_H */
