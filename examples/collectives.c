/* SPDX-License-Identifier: MIT */
/* examples/collectives.c: four CPU devices in one process: an all_reduce
 * (Sum) across them, then a tensor moved from device 0 to device 3. */
#include <stdio.h>
#include <string.h>

#include "cubert/cubert.h"
#include "cubert/cpu.h"
#include "cubert/os.h"

#define DEVICES 4
#define N 8

static int check(cubert_status_t status, const cubert_error_t *err, const char *what) {
  char text[512];
  if (status == CUBERT_STATUS_OK) return 1;
  cubert_error_format(err, text, sizeof text);
  fprintf(stderr, "%s: %s\n", what, text);
  return 0;
}

int main(int argc, char **argv) {
  cubert_client_t *clients[DEVICES] = {NULL, NULL, NULL, NULL};
  cubert_device_id_t ids[DEVICES];
  cubert_handle_t h[DEVICES], moved;
  cubert_error_t err;
  float data[N], out[N];
  int i, k, ok = 1;
  if (argc > 1) { /* -h / --help: the usage on stdout; anything else is an error */
    int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
    fprintf(help ? stdout : stderr, "usage: %s [-h|--help]\n%s\n", "collectives", "all_reduce, send/recv and to_client between four CPU devices of one process.");
    return help ? 0 : 2;
  }
  for (i = 0; i < DEVICES && ok; i++) {
    cubert_cpu_options_t options;
    cubert_cpu_options_initialize(&options);
    options.device.index = (uint32_t)i;
    options.workers = 1;
    ok = check(cubert_cpu_client_create(cubert_allocator_libc(), &options, &clients[i], &err), &err,
               "create a CPU device");
    if (ok) ids[i] = cubert_client_device(clients[i]);
  }
  for (i = 0; i < DEVICES && ok; i++) {
    for (k = 0; k < N; k++) data[k] = (float)(i * 10 + k);
    ok = check(cubert_client_create_from_slice(clients[i], data, sizeof data, &h[i], &err), &err, "create");
  }
  /* every device enqueues its part; none waits for the others here */
  for (i = 0; i < DEVICES && ok; i++)
    ok = check(cubert_client_all_reduce(clients[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, ids,
                                        DEVICES, CUBERT_REDUCE_OPERATION_SUM, &err),
               &err, "all_reduce");
  for (i = 0; i < DEVICES && ok; i++) {
    ok = check(cubert_client_sync_collective(clients[i], &err), &err, "sync_collective") &&
         check(cubert_client_read_one(clients[i], &h[i], out, sizeof out, &err), &err, "read");
    if (ok) printf("device %d after all_reduce: %g %g ... %g\n", i, (double)out[0],
                   (double)out[1], (double)out[N - 1]);
  }
  if (ok) {
    cubert_copy_descriptor_t d;
    memset(&d, 0, sizeof d);
    d.binding = h[0];
    ok = check(cubert_client_to_client_tensor(clients[0], &d, clients[3], CUBERT_COMM_DTYPE_F32,
                                              &moved, &err),
               &err, "to_client_tensor") &&
         check(cubert_client_read_one(clients[3], &moved, out, sizeof out, &err), &err, "read");
    if (ok) {
      printf("device 3 received from device 0: %g ... %g\n", (double)out[0], (double)out[N - 1]);
      (void)cubert_client_handle_release(clients[3], &moved, NULL);
    }
  }
  for (i = 0; i < DEVICES; i++) {
    if (!clients[i]) continue;
    if (ok) (void)cubert_client_handle_release(clients[i], &h[i], NULL);
    cubert_client_release(clients[i]);
  }
  return ok ? 0 : 1;
}
