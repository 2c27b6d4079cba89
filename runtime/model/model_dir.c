/* See model_dir.h. */
#include "model_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/files.h"

int mkc_model_dir(char *out, size_t cap) {
  const char *d = getenv("MKC_MODEL_DIR");
  if (d && *d) return (size_t)snprintf(out, cap, "%s", d) < cap ? 0 : -1;
  return mkc_user_cache_path("models", out, cap) == 0 ? 0 : -1;
}

const char *mkc_model_resolve(const char *name, char *out, size_t cap) {
  struct stat st;
  snprintf(out, cap, "%s", name);
  if (stat(name, &st) == 0) return out;
  char dir[4096], path[4400];
  if (mkc_model_dir(dir, sizeof dir) != 0) return out;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (!strchr(name, '/') && *name && stat(path, &st) == 0 &&
      (size_t)snprintf(out, cap, "%s", path) < cap) {
    fprintf(stderr, "mkc: %s: using %s\n", name, out);
    return out;
  }
  /* a path is the user's own: the open's error says it all */
  if (!strchr(name, '/'))
    fprintf(stderr,
            "mkc: note: no file or folder %s here nor in the model directory %s (models `make "
            "demo` fetched are there; MKC_MODEL_DIR sets it)\n",
            name, dir);
  return out;
}
