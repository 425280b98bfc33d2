/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_image.c: the process-wide registry of kernel images
 * (cubert/cuda.h). A fixed array under a mutex: images register once, at
 * startup, and are looked up only when a kernel's function is not cached.
 */
#include <pthread.h>
#include <string.h>

#include "cubert/cuda.h"

static pthread_mutex_t g_images_mutex = PTHREAD_MUTEX_INITIALIZER;
static const cubert_cuda_image_t *g_images[CUBERT_CUDA_IMAGE_REGISTRY_MAX];
static size_t g_image_count;

static bool image_valid(const cubert_cuda_image_t *image) {
  uint32_t i;
  if (!image) return false;
  if (!(image->ptx && image->ptx_size) && !(image->cubin && image->cubin_size)) return false;
  if (!image->entries || image->entry_count == 0) return false;
  for (i = 0; i < image->entry_count; i++)
    if (!image->entries[i] || !image->entries[i][0]) return false;
  return true;
}

cubert_status_t cubert_cuda_image_register(const cubert_cuda_image_t *image,
                                           cubert_error_t *out_error) {
  size_t i;
  cubert_status_t st = CUBERT_STATUS_OK;
  if (!image_valid(image))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_image_register: NULL image, no PTX nor cubin, "
                            "or no entry");
  (void)pthread_mutex_lock(&g_images_mutex);
  for (i = 0; i < g_image_count; i++)
    if (g_images[i] == image) break;
  if (i == g_image_count) {
    if (g_image_count == CUBERT_CUDA_IMAGE_REGISTRY_MAX)
      st = cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "the CUDA image registry is full");
    else
      g_images[g_image_count++] = image;
  }
  (void)pthread_mutex_unlock(&g_images_mutex);
  return st;
}

const cubert_cuda_image_t *cubert_cuda_image_find(const char *entry_name) {
  const cubert_cuda_image_t *found = NULL;
  size_t i;
  uint32_t e;
  if (!entry_name) return NULL;
  (void)pthread_mutex_lock(&g_images_mutex);
  for (i = 0; i < g_image_count && !found; i++)
    for (e = 0; e < g_images[i]->entry_count; e++)
      if (strcmp(g_images[i]->entries[e], entry_name) == 0) {
        found = g_images[i];
        break;
      }
  (void)pthread_mutex_unlock(&g_images_mutex);
  return found;
}

size_t cubert_cuda_image_count(void) {
  size_t n;
  (void)pthread_mutex_lock(&g_images_mutex);
  n = g_image_count;
  (void)pthread_mutex_unlock(&g_images_mutex);
  return n;
}
