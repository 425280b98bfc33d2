/* backend-cpu/cpu_comm.c: ServerCommunication of the CPU server (spec 2.3, 8). */
#include "cpu_server.h"

/* ---- collectives: not on a single CPU server yet ---- */

static cubert_status_t comm_unsupported(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                          "collectives are not supported by this server");
}
cubert_status_t cpu_comm_init(cubert_server_t *server, const uint32_t *ids, size_t count,
                                     cubert_error_t *out_error) {
  (void)server; (void)ids; (void)count;
  return comm_unsupported(out_error);
}
cubert_status_t cpu_all_reduce(cubert_server_t *server, const cubert_binding_t *src,
                                      const cubert_binding_t *dst, uint32_t dtype,
                                      uint64_t stream, uint32_t op, const uint32_t *ids,
                                      size_t count, cubert_error_t *out_error) {
  (void)server; (void)src; (void)dst; (void)dtype; (void)stream; (void)op; (void)ids; (void)count;
  return comm_unsupported(out_error);
}
cubert_status_t cpu_send(cubert_server_t *server, const cubert_copy_descriptor_t *d,
                                uint32_t dtype, uint64_t stream, uint32_t dst,
                                cubert_error_t *out_error) {
  (void)server; (void)d; (void)dtype; (void)stream; (void)dst;
  return comm_unsupported(out_error);
}
cubert_status_t cpu_recv(cubert_server_t *server, const cubert_handle_t *h, uint32_t dtype,
                                uint64_t stream, uint32_t src, cubert_error_t *out_error) {
  (void)server; (void)h; (void)dtype; (void)stream; (void)src;
  return comm_unsupported(out_error);
}
cubert_status_t cpu_sync_collective(cubert_server_t *server, uint64_t stream,
                                           cubert_error_t *out_error) {
  (void)server; (void)stream;
  return comm_unsupported(out_error);
}

