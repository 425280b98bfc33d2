/* examples/demo.c: placeholder main demo until the CPU server lands. */
#include <stdio.h>

#include "cubert/cubert.h"

int main(void) {
  size_t out = 0;
  if (cubert_size_align_up(60, 8, &out) != CUBERT_STATUS_OK) return 1;
  printf("cubert %d.%d.%d: align_up(60, 8) = %zu\n", CUBERT_VERSION_MAJOR, CUBERT_VERSION_MINOR,
         CUBERT_VERSION_PATCH, out);
  return 0;
}
