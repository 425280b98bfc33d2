/* SPDX-License-Identifier: MIT */
/*
 * fuzz/standalone_main.c: a main() for fuzz targets built without libFuzzer
 * (any C compiler). It feeds LLVMFuzzerTestOneInput the empty input, then
 * every regular file named on the command line or found (sorted, not
 * recursively) in a directory named there. Arguments starting with '-' are
 * ignored, so libFuzzer-style flags are harmless.
 *
 * usage: fuzz_NAME [FILE|DIR ...]
 * Exit status: 0 when every input ran; 2 when a path cannot be read. A bug
 * in the target aborts (the target's own checks or a sanitizer); on a fatal
 * signal the input being run is named on stderr before the signal is re-raised.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static size_t g_inputs;
static const char *volatile g_current = "(empty input)";

static void write_str(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* Names the input that crashed, then lets the signal do its default action. */
static void on_fatal_signal(int sig) {
  write_str("standalone_main: crashed on input ");
  write_str(g_current);
  write_str("\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_crash_handlers(void) {
  static const int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  size_t i;
  for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = (int)SA_RESETHAND;
    sigaction(sigs[i], &sa, NULL);
  }
}

/* Runs one file; 0 on success, -1 when it cannot be read. The buffer has the
 * exact size of the file so that sanitizers catch reads past the input. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long len;
  size_t got;
  if (!f) {
    fprintf(stderr, "standalone_main: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "standalone_main: %s: cannot size the file\n", path);
    fclose(f);
    return -1;
  }
  buf = (unsigned char *)malloc(len > 0 ? (size_t)len : 1);
  if (!buf) {
    fprintf(stderr, "standalone_main: %s: out of memory\n", path);
    fclose(f);
    return -1;
  }
  got = fread(buf, 1, (size_t)len, f);
  fclose(f);
  if (got != (size_t)len) {
    fprintf(stderr, "standalone_main: %s: short read\n", path);
    free(buf);
    return -1;
  }
  g_current = path;
  (void)LLVMFuzzerTestOneInput(buf, got);
  g_current = "(none)";
  free(buf);
  g_inputs++;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **names = NULL;
  size_t n = 0, cap = 0, i;
  int rc = 0;
  if (!d) {
    fprintf(stderr, "standalone_main: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    size_t len;
    char *path;
    struct stat st;
    if (e->d_name[0] == '.') continue;
    len = strlen(dir) + 1 + strlen(e->d_name) + 1;
    path = (char *)malloc(len);
    if (!path) {
      rc = -1;
      break;
    }
    snprintf(path, len, "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(path);
      continue;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      char **grown = (char **)realloc(names, ncap * sizeof(*names));
      if (!grown) {
        free(path);
        rc = -1;
        break;
      }
      names = grown;
      cap = ncap;
    }
    names[n++] = path;
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof(*names), cmp_str);
  for (i = 0; i < n; i++) {
    if (rc == 0 && run_file(names[i]) != 0) rc = -1;
    free(names[i]);
  }
  free(names);
  if (rc != 0) fprintf(stderr, "standalone_main: %s: not every input could be run\n", dir);
  return rc;
}

int main(int argc, char **argv) {
  int i, rc = 0;
  static const uint8_t empty[1] = {0};
  install_crash_handlers();
  (void)LLVMFuzzerTestOneInput(empty, 0);
  g_inputs++;
  for (i = 1; i < argc; i++) {
    struct stat st;
    if (argv[i][0] == '-') continue;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "standalone_main: %s: %s\n", argv[i], strerror(errno));
      rc = 2;
    } else if (S_ISDIR(st.st_mode)) {
      if (run_dir(argv[i]) != 0) rc = 2;
    } else if (run_file(argv[i]) != 0) {
      rc = 2;
    }
  }
  printf("%s: %lu inputs replayed%s\n", argv[0], (unsigned long)g_inputs,
         rc ? " (some paths could not be read)" : "");
  return rc;
}
