/* The safetensors reader: maps each file (its reads guarded against the
 * file shrinking, util/mapped.h), checks the header's JSON (cJSON) entry by
 * entry against the bytes that are really there, follows a sharded
 * checkpoint's index, and indexes the tensors by name. Also the bridge from
 * HF tensors to the weight store. */
#include "hf.h"
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dequant.h"
#include "fused.h"
#include "util/files.h"
#include "util/json_text.h"
#include "util/mapped.h"
#include "util/text.h"

#define MAX_EXACT 9007199254740992.0 /* 2^53: JSON numbers above it are not exact integers */

typedef struct st_file {
  char *path;
  const uint8_t *base;
  size_t size;
  mkc_mapped map; /* map.fd -1 for the caller's bytes */
} st_file;

struct mkc_safetensors {
  char *path; /* as given */
  int n_files;
  st_file *files; /* [n_files] */
  int n_tensors, cap_tensors;
  mkc_st_tensor *tensors;  /* [n_tensors], file order */
  mkc_st_tensor **by_name; /* [n_tensors], sorted by name */
};

static const struct {
  const char *name;
  int size;
} DTYPES[MKC_ST_DTYPE_COUNT] = {
    [MKC_ST_BOOL] = {"BOOL", 1},       [MKC_ST_U8] = {"U8", 1},
    [MKC_ST_I8] = {"I8", 1},           [MKC_ST_F8_E5M2] = {"F8_E5M2", 1},
    [MKC_ST_F8_E4M3] = {"F8_E4M3", 1}, [MKC_ST_F8_E8M0] = {"F8_E8M0", 1},
    [MKC_ST_I16] = {"I16", 2},         [MKC_ST_U16] = {"U16", 2},
    [MKC_ST_F16] = {"F16", 2},         [MKC_ST_BF16] = {"BF16", 2},
    [MKC_ST_I32] = {"I32", 4},         [MKC_ST_U32] = {"U32", 4},
    [MKC_ST_F32] = {"F32", 4},         [MKC_ST_I64] = {"I64", 8},
    [MKC_ST_U64] = {"U64", 8},         [MKC_ST_F64] = {"F64", 8},
    [MKC_ST_C64] = {"C64", 8},
};

const char *mkc_st_dtype_name(int dtype) {
  return dtype >= 0 && dtype < MKC_ST_DTYPE_COUNT ? DTYPES[dtype].name : "?";
}

int mkc_st_dtype_size(int dtype) {
  return dtype >= 0 && dtype < MKC_ST_DTYPE_COUNT ? DTYPES[dtype].size : 0;
}

static int dtype_by_name(const char *name) {
  for (int i = 0; i < MKC_ST_DTYPE_COUNT; i++)
    if (strcmp(DTYPES[i].name, name) == 0) return i;
  return -1;
}

/* A JSON value in a message: a number or string as written, else its kind. */
const char *mkc_json_describe(const cJSON *v, char *buf, size_t size) {
  if (cJSON_IsNumber(v))
    snprintf(buf, size, "%.17g", v->valuedouble);
  else if (cJSON_IsString(v)) {
    char shown[200];
    size_t n = strlen(v->valuestring);
    mkc_escape(v->valuestring, n > 40 ? 40 : n, shown, sizeof shown);
    snprintf(buf, size, "\"%s%s\"", shown, n > 40 ? "..." : "");
  } else
    snprintf(buf, size, "%s",
             cJSON_IsBool(v)     ? (cJSON_IsTrue(v) ? "true" : "false")
             : cJSON_IsNull(v)   ? "null"
             : cJSON_IsArray(v)  ? "an array"
             : cJSON_IsObject(v) ? "an object"
                                 : "an invalid value");
  return buf;
}

/* A JSON number that is an exact non-negative integer. */
static int get_count(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return 0;
  double x = v->valuedouble;
  if (!(x >= 0 && x <= MAX_EXACT) || (double)(uint64_t)x != x) return 0;
  *out = (uint64_t)x;
  return 1;
}

static void format_shape(const mkc_st_tensor *t, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  n += (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < t->n_dims && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, d ? ", " : "", t->shape[d]);
  if (n < size) snprintf(buf + n, size - n, "]");
}

/* "dtype" of tensor name into t->dtype. */
static int read_dtype(const char *path, const char *name, const cJSON *dtype, mkc_st_tensor *t) {
  char v[96];
  if (!cJSON_IsString(dtype)) {
    mkc_error_in(path, "tensor '%s': \"dtype\" is %s, not a string", name,
                 mkc_json_describe(dtype, v, sizeof v));
    return -1;
  }
  if ((t->dtype = dtype_by_name(dtype->valuestring)) < 0) {
    mkc_error_in(path, "tensor '%s': unknown dtype %s", name,
                 mkc_json_describe(dtype, v, sizeof v));
    return -1;
  }
  return 0;
}

/* "shape" of tensor name into t's n_dims and shape, and its bytes (of
 * t->dtype) into t->n_bytes. */
static int read_shape(const char *path, const char *name, const cJSON *dims, mkc_st_tensor *t) {
  char v[96], shape[256];
  if (!cJSON_IsArray(dims)) {
    mkc_error_in(path, "tensor '%s': \"shape\" is %s, not an array", name,
                 mkc_json_describe(dims, v, sizeof v));
    return -1;
  }
  int n_dims = cJSON_GetArraySize(dims);
  if (n_dims > MKC_ST_MAX_DIMS) {
    mkc_error_in(path, "tensor '%s': %d dimensions (mkc reads up to %d)", name, n_dims,
                 MKC_ST_MAX_DIMS);
    return -1;
  }
  t->n_dims = n_dims;
  uint64_t n_elems = 1;
  int overflow = 0;
  for (int d = 0; d < n_dims; d++) {
    const cJSON *dim = cJSON_GetArrayItem(dims, d);
    uint64_t x;
    if (!get_count(dim, &x)) {
      mkc_error_in(path, "tensor '%s': shape[%d] is %s, not a non-negative integer", name, d,
                   mkc_json_describe(dim, v, sizeof v));
      return -1;
    }
    t->shape[d] = (int64_t)x;
    if (x && n_elems > UINT64_MAX / x) overflow = 1;
    n_elems *= x;
  }
  uint64_t size = (uint64_t)DTYPES[t->dtype].size;
  if (overflow || (n_elems && n_elems > UINT64_MAX / size)) {
    format_shape(t, shape, sizeof shape);
    mkc_error_in(path, "tensor '%s': shape %s of %s overflows 64 bits", name, shape,
                 DTYPES[t->dtype].name);
    return -1;
  }
  t->n_bytes = n_elems * size;
  return 0;
}

/* "data_offsets" of tensor name: t->n_bytes within the data_size bytes of
 * data, into t->data. */
static int read_offsets(const char *path, const char *name, const cJSON *offsets,
                        uint64_t data_size, const uint8_t *data, mkc_st_tensor *t) {
  char v[96], shape[256];
  uint64_t range[2];
  if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2) {
    mkc_error_in(path, "tensor '%s': \"data_offsets\" is %s, not [begin, end]", name,
                 mkc_json_describe(offsets, v, sizeof v));
    return -1;
  }
  for (int i = 0; i < 2; i++) {
    const cJSON *o = cJSON_GetArrayItem(offsets, i);
    if (!get_count(o, &range[i])) {
      mkc_error_in(path, "tensor '%s': data_offsets[%d] is %s, not a non-negative integer", name, i,
                   mkc_json_describe(o, v, sizeof v));
      return -1;
    }
  }
  if (range[0] > range[1]) {
    mkc_error_in(path, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "]: begin is after end",
                 name, range[0], range[1]);
    return -1;
  }
  if (range[1] > data_size) {
    mkc_error_in(path,
                 "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] run past the %" PRIu64
                 " bytes of data",
                 name, range[0], range[1], data_size);
    return -1;
  }
  if (range[1] - range[0] != t->n_bytes) {
    format_shape(t, shape, sizeof shape);
    mkc_error_in(path,
                 "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                 " bytes, shape %s of %s needs %" PRIu64,
                 name, range[0], range[1], range[1] - range[0], shape, DTYPES[t->dtype].name,
                 t->n_bytes);
    return -1;
  }
  t->data = data + range[0];
  return 0;
}

/* One header entry "NAME": {"dtype", "shape", "data_offsets"}. data_size:
 * the bytes after the header. */
static int read_entry(const char *path, const cJSON *e, uint64_t data_size, const uint8_t *data,
                      mkc_st_tensor *t) {
  const char *name = mkc_shown(e->string); /* for messages only */
  char v[96];
  if (!cJSON_IsObject(e)) {
    mkc_error_in(path, "tensor '%s': Expected an object, Actual %s", name,
                 mkc_json_describe(e, v, sizeof v));
    return -1;
  }
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  const char *missing = !dtype ? "dtype" : !dims ? "shape" : !offsets ? "data_offsets" : NULL;
  if (missing) {
    mkc_error_in(path, "tensor '%s': no \"%s\"", name, missing);
    return -1;
  }
  if (read_dtype(path, name, dtype, t) || read_shape(path, name, dims, t) ||
      read_offsets(path, name, offsets, data_size, data, t))
    return -1;
  return 0;
}

static int is_metadata(const cJSON *m) {
  if (!cJSON_IsObject(m)) return 0;
  for (const cJSON *kv = m->child; kv; kv = kv->next)
    if (!cJSON_IsString(kv)) return 0;
  return 1;
}

/* The header JSON of files[file]: an object, nothing after it but spaces. */
static cJSON *parse_header(const st_file *f, uint64_t len) {
  char *text = malloc(len + 1); /* cJSON gets a NUL-terminated copy */
  if (!text) {
    mkc_error_in(f->path, "out of memory for a %" PRIu64 "-byte header", len);
    return NULL;
  }
  if (mkc_mapped_copy(&f->map, f->path, text, f->base + 8, len)) {
    free(text);
    return NULL;
  }
  text[len] = '\0';
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  size_t at = end ? (size_t)(end - text) : 0;
  if (!root)
    mkc_error_in(f->path, "the header is not valid JSON (at byte %zu of %" PRIu64 ")", at, len);
  else if (!cJSON_IsObject(root))
    mkc_error_in(f->path, "the header is not a JSON object");
  while (root && at < len && mkc_json_space(text[at])) at++;
  if (root && cJSON_IsObject(root) && at < len)
    mkc_error_in(f->path, "the header has bytes after its JSON object (at byte %zu of %" PRIu64 ")",
                 at, len);
  free(text);
  if (root && (!cJSON_IsObject(root) || at < len)) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

/* Parses files[file] and appends its tensors. */
static int parse_file(mkc_safetensors *st, int file) {
  const st_file *f = &st->files[file];
  if (f->size < 8) {
    mkc_error_in(f->path, "the file is %zu bytes, too short for the 8-byte header length", f->size);
    return -1;
  }
  uint8_t head[8];
  if (mkc_mapped_copy(&f->map, f->path, head, f->base, 8)) return -1;
  uint64_t len = 0;
  for (int i = 7; i >= 0; i--) len = len << 8 | head[i];
  if (len > MKC_ST_MAX_HEADER) {
    mkc_error_in(f->path, "header length %" PRIu64 " is over mkc's limit of %d bytes", len,
                 MKC_ST_MAX_HEADER);
    return -1;
  }
  if (len > f->size - 8) {
    mkc_error_in(f->path,
                 "header length %" PRIu64 " runs past the end of the file (%zu bytes follow it)",
                 len, f->size - 8);
    return -1;
  }
  cJSON *root = parse_header(f, len);
  if (!root) return -1;
  int n = cJSON_GetArraySize(root);
  if (st->n_tensors + n > st->cap_tensors) {
    int cap = st->n_tensors + n;
    mkc_st_tensor *grown = realloc(st->tensors, (size_t)(cap ? cap : 1) * sizeof *grown);
    if (!grown) {
      mkc_error_in(f->path, "out of memory for %d tensors", cap);
      cJSON_Delete(root);
      return -1;
    }
    st->tensors = grown;
    st->cap_tensors = cap;
  }
  uint64_t data_size = f->size - 8 - len;
  const uint8_t *data = f->base + 8 + len;
  for (const cJSON *e = root->child; e; e = e->next) {
    if (strcmp(e->string, "__metadata__") == 0) {
      if (is_metadata(e)) continue;
      mkc_error_in(f->path, "\"__metadata__\" is not an object of strings");
      goto fail;
    }
    mkc_st_tensor *t = &st->tensors[st->n_tensors];
    memset(t, 0, sizeof *t);
    t->file = file;
    if (read_entry(f->path, e, data_size, data, t)) goto fail;
    if (!(t->name = strdup(e->string))) {
      mkc_error_in(f->path, "out of memory");
      goto fail;
    }
    st->n_tensors++;
  }
  cJSON_Delete(root);
  return 0;
fail:
  cJSON_Delete(root);
  return -1;
}

static int cmp_tensor(const void *a, const void *b) {
  return strcmp((*(mkc_st_tensor *const *)a)->name, (*(mkc_st_tensor *const *)b)->name);
}

/* by_name, and no name twice. index_path: where two shards' clash is told. */
static int index_names(mkc_safetensors *st, const char *index_path) {
  st->by_name = malloc((size_t)(st->n_tensors ? st->n_tensors : 1) * sizeof *st->by_name);
  if (!st->by_name) {
    mkc_error_in(st->path, "out of memory for %d tensors", st->n_tensors);
    return -1;
  }
  for (int i = 0; i < st->n_tensors; i++) st->by_name[i] = &st->tensors[i];
  qsort(st->by_name, (size_t)st->n_tensors, sizeof *st->by_name, cmp_tensor);
  for (int i = 1; i < st->n_tensors; i++) {
    const mkc_st_tensor *a = st->by_name[i - 1], *b = st->by_name[i];
    if (strcmp(a->name, b->name) != 0) continue;
    if (a->file > b->file) {
      const mkc_st_tensor *first = b;
      b = a;
      a = first;
    }
    if (a->file == b->file)
      mkc_error_in(st->files[a->file].path, "duplicate tensor name '%s'", mkc_shown(a->name));
    else
      mkc_error_in(index_path, "tensor '%s' is in both %s and %s", mkc_shown(a->name),
                   st->files[a->file].path, st->files[b->file].path);
    return -1;
  }
  return 0;
}

static mkc_safetensors *new_st(const char *path, int n_files) {
  mkc_safetensors *st = calloc(1, sizeof *st);
  if (st) st->files = calloc((size_t)(n_files ? n_files : 1), sizeof *st->files);
  for (int i = 0; st && st->files && i < n_files; i++) st->files[i].map.fd = -1;
  if (st) st->path = strdup(path);
  if (!st || !st->files || !st->path) {
    fprintf(stderr, "mkc: error: %s: out of memory\n", path);
    mkc_st_close(st);
    return NULL;
  }
  st->n_files = n_files;
  return st;
}

static int map_file(st_file *f) {
  static const uint8_t empty[1];
  if (mkc_mapped_open(f->path, &f->map)) return -1;
  f->base = f->map.base ? f->map.base : empty;
  f->size = f->map.size;
  return 0;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir), m = strlen(name);
  char *p = malloc(n + m + 2);
  if (p) snprintf(p, n + m + 2, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
  return p;
}

mkc_safetensors *mkc_st_open_memory(const void *data, size_t size, const char *name) {
  static const uint8_t empty[1];
  mkc_safetensors *st = new_st(name, 1);
  if (!st) return NULL;
  st->files[0] = (st_file){strdup(name), size ? data : empty, size, {NULL, 0, -1, 0}};
  if (st->files[0].path && parse_file(st, 0) == 0 && index_names(st, name) == 0) return st;
  mkc_st_close(st);
  return NULL;
}

static mkc_safetensors *open_single(const char *path, const char *file_path) {
  mkc_safetensors *st = new_st(path, 1);
  if (!st) return NULL;
  st->files[0].path = strdup(file_path);
  if (st->files[0].path && map_file(&st->files[0]) == 0 && parse_file(st, 0) == 0 &&
      index_names(st, file_path) == 0)
    return st;
  mkc_st_close(st);
  return NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A shard name from the weight_map: a plain file name in the index's folder. */
static int plain_file_name(const char *s) {
  return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* The weight_map's shards, each once, sorted; NULL after a message. */
static const char **list_shards(const char *index, const cJSON *map, int *n_shards) {
  int n = cJSON_GetArraySize(map), k = 0;
  const char **names = malloc((size_t)(n ? n : 1) * sizeof *names);
  if (!names) {
    mkc_error_in(index, "out of memory for %d weight_map entries", n);
    return NULL;
  }
  char v[96];
  for (const cJSON *e = map->child; e; e = e->next) {
    if (!cJSON_IsString(e) || !plain_file_name(e->valuestring)) {
      mkc_error_in(index, "weight_map: tensor '%s': Expected a shard file name, Actual %s",
                   mkc_shown(e->string), mkc_json_describe(e, v, sizeof v));
      free(names);
      return NULL;
    }
    names[k++] = e->valuestring;
  }
  qsort(names, (size_t)k, sizeof *names, cmp_str);
  int u = 0;
  for (int i = 0; i < k; i++)
    if (u == 0 || strcmp(names[u - 1], names[i]) != 0) names[u++] = names[i];
  *n_shards = u;
  return names;
}

/* Every weight_map entry names a tensor of its shard, once. */
static int check_weight_map(const mkc_safetensors *st, const char *index, const cJSON *map,
                            const char **shards) {
  int n = cJSON_GetArraySize(map), k = 0, rc = 0;
  const char **names = malloc((size_t)(n ? n : 1) * sizeof *names);
  if (!names) {
    mkc_error_in(index, "out of memory for %d weight_map entries", n);
    return -1;
  }
  for (const cJSON *e = map->child; e && !rc; e = e->next) {
    const mkc_st_tensor *t = mkc_st_find(st, e->string);
    if (!t || strcmp(shards[t->file], e->valuestring) != 0) {
      mkc_error_in(index, "weight_map: tensor '%s' is not in its shard %s", mkc_shown(e->string),
                   mkc_shown(e->valuestring));
      rc = -1;
    }
    names[k++] = e->string;
  }
  qsort(names, (size_t)k, sizeof *names, cmp_str);
  for (int i = 1; i < k && !rc; i++) {
    if (strcmp(names[i - 1], names[i]) == 0) {
      mkc_error_in(index, "weight_map names tensor '%s' twice", mkc_shown(names[i]));
      rc = -1;
    }
  }
  free(names);
  return rc;
}

/* model.safetensors.index.json: {"metadata": ..., "weight_map": {NAME: SHARD}}. */
static mkc_safetensors *open_index(const char *path, const char *index, const char *dir) {
  size_t len = 0;
  char *text = mkc_read_file(index, &len);
  if (!text) {
    mkc_error_in(index, "cannot read: %s", strerror(errno));
    return NULL;
  }
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  mkc_safetensors *st = NULL;
  const char **shards = NULL;
  int n_shards = 0;
  if (!cJSON_IsObject(root)) {
    mkc_error_in(index, root ? "not a JSON object" : "not valid JSON");
    goto done;
  }
  if (!cJSON_IsObject(map) || !map->child) {
    mkc_error_in(index, "no \"weight_map\" object naming the tensors' shards");
    goto done;
  }
  if (!(shards = list_shards(index, map, &n_shards)) || !(st = new_st(path, n_shards))) goto done;
  for (int i = 0; i < n_shards; i++) {
    st_file *f = &st->files[i];
    if (!(f->path = join(dir, shards[i]))) {
      mkc_error_in(index, "out of memory");
      goto fail;
    }
    if (access(f->path, R_OK) != 0) {
      mkc_error_in(index, "weight_map names shard %s, which cannot be opened: %s",
                   mkc_shown(shards[i]), strerror(errno));
      goto fail;
    }
    if (map_file(f) || parse_file(st, i)) goto fail;
  }
  if (index_names(st, index) || check_weight_map(st, index, map, shards)) goto fail;
  goto done;
fail:
  mkc_st_close(st);
  st = NULL;
done:
  free(shards);
  cJSON_Delete(root);
  return st;
}

static int is_file(const char *path) {
  struct stat s;
  return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

mkc_safetensors *mkc_st_open(const char *path) {
  struct stat s;
  if (stat(path, &s) != 0) {
    mkc_error_in(path, "cannot open: %s", strerror(errno));
    return NULL;
  }
  if (!S_ISDIR(s.st_mode)) {
    if (!mkc_ends_with(path, ".json")) return open_single(path, path);
    char *dir = strdup(path);
    if (!dir) return NULL;
    char *slash = strrchr(dir, '/');
    if (slash)
      slash[1] = '\0';
    else
      strcpy(dir, ".");
    mkc_safetensors *st = open_index(path, path, dir);
    free(dir);
    return st;
  }
  char *single = join(path, "model.safetensors"),
       *index = join(path, "model.safetensors.index.json");
  mkc_safetensors *st = NULL;
  if (!single || !index)
    mkc_error_in(path, "out of memory");
  else if (is_file(single))
    st = open_single(path, single);
  else if (is_file(index))
    st = open_index(path, index, path);
  else
    mkc_error_in(path, "no model.safetensors or model.safetensors.index.json in this folder");
  free(single);
  free(index);
  return st;
}

void mkc_st_close(mkc_safetensors *st) {
  if (!st) return;
  for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
  for (int i = 0; st->files && i < st->n_files; i++) {
    st_file *f = &st->files[i];
    mkc_mapped_close(&f->map);
    free(f->path);
  }
  free(st->files);
  free(st->tensors);
  free(st->by_name);
  free(st->path);
  free(st);
}

int mkc_st_count(const mkc_safetensors *st) { return st->n_tensors; }

int mkc_st_split_rows(mkc_safetensors *st, const char *name, int n, const char *const *names,
                      const int64_t *rows) {
  const mkc_st_tensor *t = mkc_st_find(st, name);
  if (!t) return 1;
  const char *where = mkc_st_file_path(st, t->file);
  int64_t total = 0;
  for (int k = 0; k < n; k++) total += rows[k];
  if (n < 1 || n > 8 || t->n_dims != 2 || t->shape[0] != total)
    return mkc_error_in(where, "tensor '%s': expected %d fused matrices of %" PRId64 " rows in all",
                        name, n, total);
  for (int k = 0; k < n; k++)
    if (mkc_st_find(st, names[k]))
      return mkc_error_in(where, "tensor '%s' is there both fused (in '%s') and on its own",
                          names[k], name);
  int count = st->n_tensors - 1 + n;
  mkc_st_tensor *tensors = calloc((size_t)count, sizeof *tensors);
  mkc_st_tensor **by_name = malloc((size_t)count * sizeof *by_name);
  char *part_names[8] = {0};
  int ok = tensors && by_name;
  for (int k = 0; ok && k < n; k++) ok = (part_names[k] = strdup(names[k])) != NULL;
  if (!ok) {
    for (int k = 0; k < n; k++) free(part_names[k]);
    free(tensors);
    free(by_name);
    return mkc_error_in(where, "out of memory splitting '%s'", name);
  }
  int j = 0;
  for (int i = 0; i < st->n_tensors; i++)
    if (&st->tensors[i] != t) tensors[j++] = st->tensors[i];
  uint64_t row_bytes = t->n_bytes / (uint64_t)total, off = 0;
  for (int k = 0; k < n; k++) {
    mkc_st_tensor *p = &tensors[j++];
    *p = *t;
    p->name = part_names[k];
    p->shape[0] = rows[k];
    p->n_bytes = row_bytes * (uint64_t)rows[k];
    p->data = t->data + off;
    off += p->n_bytes;
  }
  free(t->name);
  free(st->tensors);
  free(st->by_name);
  st->tensors = tensors;
  st->by_name = by_name;
  st->n_tensors = st->cap_tensors = count;
  for (int i = 0; i < count; i++) by_name[i] = &tensors[i];
  qsort(by_name, (size_t)count, sizeof *by_name, cmp_tensor);
  return 0;
}

/* mkc_st_split_rows as fused.h's mkc_split_fn. */
static int split_st(void *st, const char *name, int n, const char *const *names,
                    const int64_t *rows) {
  return mkc_st_split_rows(st, name, n, names, rows);
}

int mkc_st_unfuse(mkc_safetensors *st, const mkc_model_desc *d) {
  return mkc_unfuse(d, 1, split_st, st);
}

const mkc_st_tensor *mkc_st_tensor_at(const mkc_safetensors *st, int i) {
  return i >= 0 && i < st->n_tensors ? &st->tensors[i] : NULL;
}

const mkc_st_tensor *mkc_st_find(const mkc_safetensors *st, const char *name) {
  mkc_st_tensor probe = {.name = (char *)name}, *p = &probe;
  mkc_st_tensor **hit = bsearch(&p, st->by_name, (size_t)st->n_tensors, sizeof p, cmp_tensor);
  return hit ? *hit : NULL;
}

const char *mkc_st_file_path(const mkc_safetensors *st, int file) {
  return file >= 0 && file < st->n_files ? st->files[file].path : st->path;
}

/* The loader. */

static int ggml_type_of(int dtype) {
  return dtype == MKC_ST_F32    ? MKC_GGML_F32
         : dtype == MKC_ST_F16  ? MKC_GGML_F16
         : dtype == MKC_ST_BF16 ? MKC_GGML_BF16
                                : -1;
}

/* HF [out][in] is [rows][cols]; a vector is [cols] or [1][cols]. */
static int shape_matches(const mkc_st_tensor *t, const mkc_weight_info *w) {
  if (t->n_dims == 2) return t->shape[0] == w->rows && t->shape[1] == w->cols;
  return t->n_dims == 1 && w->rows == 1 && t->shape[0] == w->cols;
}

typedef struct dequant_job {
  const mkc_st_tensor *t;
  size_t n;
  uint16_t *dst;
} dequant_job;

static int dequant(void *ctx) {
  dequant_job *job = ctx;
  return mkc_dequant_bf16((uint32_t)ggml_type_of(job->t->dtype), job->t->data, job->n, job->dst);
}

/* n elements of t as bf16 into dst, read from its file's mapping. */
static int read_bf16(const mkc_safetensors *st, const mkc_st_tensor *t, size_t n, uint16_t *dst) {
  dequant_job job = {t, n, dst};
  return mkc_mapped_read(&st->files[t->file].map, st->files[t->file].path, dequant, &job);
}

static int dequant_f32(void *ctx) {
  dequant_job *job = ctx;
  return mkc_dequant_f32((uint32_t)ggml_type_of(job->t->dtype), job->t->data, job->n,
                         (float *)job->dst);
}

int mkc_st_read_f32(const mkc_safetensors *st, const mkc_st_tensor *t, float *dst) {
  int elem = mkc_st_dtype_size(t->dtype);
  dequant_job job = {t, elem ? t->n_bytes / (uint64_t)elem : 0, (uint16_t *)dst};
  return mkc_mapped_read(&st->files[t->file].map, st->files[t->file].path, dequant_f32, &job);
}

/* The n elements of t (its shape checked: all of them) plus 1 as bf16 into dst: Gemma's norms,
 * summed in float as transformers' Gemma3RMSNorm does (1.0 + weight.float()), then rounded. */
static int read_bf16_plus_one(const mkc_safetensors *st, const mkc_st_tensor *t, size_t n,
                              uint16_t *dst) {
  float *f = malloc((n ? n : 1) * sizeof *f);
  if (!f) return mkc_error_in(mkc_st_file_path(st, t->file), "tensor '%s': out of memory", t->name);
  int rc = mkc_st_read_f32(st, t, f);
  for (size_t i = 0; rc == 0 && i < n; i++) dst[i] = mkc_float_to_bf16(1.0f + f[i]);
  free(f);
  return rc;
}

/* t as bf16 into dst ([rows][cols]), Q/K rows permuted when d asks, Gemma's
 * norms with their 1 added. */
static int load_one(const mkc_safetensors *st, const mkc_model_desc *d, const mkc_st_tensor *t,
                    const mkc_weight_info *info, uint16_t *dst) {
  const char *where = mkc_st_file_path(st, t->file);
  size_t n = (size_t)info->rows * (size_t)info->cols;
  int heads = mkc_hf_rope_heads(info->name, d);
  if (mkc_hf_norm_offset(info->name, d)) {
    if (heads) { /* no architecture both offsets its norms and permutes their rows */
      mkc_error_in(where, "tensor '%s' (%s): an offset norm in permuted rows", t->name, info->name);
      return -1;
    }
    return read_bf16_plus_one(st, t, n, dst);
  }
  if (!heads) return read_bf16(st, t, n, dst);
  /* Rows are the output features; a bias or norm vector has one per element. */
  int n_rows = info->rows == 1 ? info->cols : info->rows,
      row_len = info->rows == 1 ? 1 : info->cols;
  if (d->head_dim <= 0 || d->head_dim % 2 || n_rows != heads * d->head_dim) {
    mkc_error_in(where,
                 "tensor '%s' (%s): %d rows are not %d heads of head_dim %d (even), as RoPE needs",
                 t->name, info->name, n_rows, heads, d->head_dim);
    return -1;
  }
  uint16_t *hf = malloc((n ? n : 1) * sizeof *hf);
  if (!hf) {
    mkc_error_in(where, "tensor '%s': out of memory", t->name);
    return -1;
  }
  int rc = read_bf16(st, t, n, hf);
  if (rc == 0) mkc_hf_permute_rows(dst, hf, n_rows, row_len, heads, 0);
  free(hf);
  return rc;
}

/* Whether t (HF name hf, the graph's gguf) is in a dtype mkc reads; -1 after a message if not. */
static int readable(const mkc_safetensors *st, const mkc_st_tensor *t, const char *hf,
                    const char *gguf) {
  if (ggml_type_of(t->dtype) >= 0) return 0;
  mkc_error_in(mkc_st_file_path(st, t->file),
               "tensor '%s' (%s): dtype %s is not supported (mkc reads F32, F16, BF16)", hf, gguf,
               mkc_st_dtype_name(t->dtype));
  return -1;
}

/* The HF tensor of name hf in one of its spellings (mkc_hf_name_spelling), or NULL; its name
 * into hf. */
static const mkc_st_tensor *find_spelled(const mkc_safetensors *st, char *hf, size_t cap) {
  char spelled[512];
  const mkc_st_tensor *t = NULL;
  for (int k = 0; !t && mkc_hf_name_spelling(hf, k, spelled, sizeof spelled) == 0; k++)
    t = mkc_st_find(st, spelled);
  if (t) snprintf(hf, cap, "%s", t->name);
  return t;
}

/* An experts' matrix (info: [experts * rows][cols]) from each expert's own tensor, expert e's
 * rows from e * rows. 0, or -1 after a message. */
static int load_experts(const mkc_safetensors *st, const mkc_model_desc *d,
                        const mkc_weight_info *info, mkc_weights *w) {
  int E = d->n_experts, rows = E > 0 ? info->rows / E : 0;
  char hf[512], shape[256];
  if (E <= 0 || rows * E != info->rows) {
    mkc_error_in(st->path, "the graph's '%s' [%d, %d] is not the rows of %d experts", info->name,
                 info->rows, info->cols, E);
    return -1;
  }
  mkc_tensor *dst = mkc_weights_append(w, info);
  if (!dst) {
    mkc_error_in(st->path, "'%s': out of memory for %zu elements", info->name,
                 (size_t)info->rows * (size_t)info->cols);
    return -1;
  }
  size_t n = (size_t)rows * (size_t)info->cols;
  for (int e = 0; e < E; e++) {
    const mkc_st_tensor *t = NULL;
    if (mkc_hf_expert_name(d->arch, info->name, e, hf, sizeof hf) == 0)
      t = find_spelled(st, hf, sizeof hf);
    if (!t) {
      mkc_error_in(st->path, "tensor '%s' is missing (expert %d of %d in the graph's '%s')", hf, e,
                   E, info->name);
      return -1;
    }
    if (readable(st, t, hf, info->name)) return -1;
    const char *where = mkc_st_file_path(st, t->file);
    if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != info->cols) {
      format_shape(t, shape, sizeof shape);
      mkc_error_in(where, "tensor '%s' (expert %d of '%s'): Expected [%d, %d], Actual %s", hf, e,
                   info->name, rows, info->cols, shape);
      return -1;
    }
    if (read_bf16(st, t, n, dst->data + (size_t)e * n)) return -1;
  }
  return 0;
}

/* An experts' matrix (info: [experts * rows][cols]) from the checkpoint's one tensor of every
 * expert, hf [experts][parts * rows][cols]: part `part` of each expert's rows. 0, or -1 after a
 * message. */
static int load_fused_experts(const mkc_safetensors *st, const mkc_model_desc *d,
                              const mkc_weight_info *info, const char *hf, int part, int parts,
                              mkc_weights *w) {
  char name[512], shape[256];
  snprintf(name, sizeof name, "%s", hf);
  const mkc_st_tensor *t = find_spelled(st, name, sizeof name);
  int E = d->n_experts, rows = E > 0 ? info->rows / E : 0;
  if (!t) {
    mkc_error_in(st->path, "tensor '%s' is missing (every expert's rows of the graph's '%s')", name,
                 info->name);
    return -1;
  }
  if (readable(st, t, name, info->name)) return -1;
  const char *where = mkc_st_file_path(st, t->file);
  if (E <= 0 || rows * E != info->rows || t->n_dims != 3 || t->shape[0] != E ||
      t->shape[1] != (int64_t)parts * rows || t->shape[2] != info->cols) {
    format_shape(t, shape, sizeof shape);
    mkc_error_in(where, "tensor '%s' (%s): Expected [%d, %d, %d], Actual %s", name, info->name, E,
                 parts * rows, info->cols, shape);
    return -1;
  }
  mkc_tensor *dst = mkc_weights_append(w, info);
  if (!dst) {
    mkc_error_in(where, "'%s': out of memory", info->name);
    return -1;
  }
  size_t n = (size_t)rows * (size_t)info->cols, elem = (size_t)mkc_st_dtype_size(t->dtype);
  for (int e = 0; e < E; e++) {
    mkc_st_tensor sub = *t; /* expert e's part: n values from row (e * parts + part) * rows */
    sub.data += ((size_t)e * parts + (size_t)part) * n * elem;
    sub.n_bytes = n * elem;
    if (read_bf16(st, &sub, n, dst->data + (size_t)e * n)) return -1;
  }
  return 0;
}

int mkc_st_load_weights(const mkc_safetensors *st, const mkc_model_desc *d, const mkc_graph *g,
                        mkc_weights *w) {
  mkc_mapped_test_pause("MKC_TEST_PAUSE_BEFORE_TENSORS");
  if (mkc_weights_begin(w, g) != 0) {
    mkc_error_in(st->path, "out of memory for %d weights", g->n_weights);
    return -1;
  }
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    char hf[512], shape[256];
    int part, parts,
        fused = mkc_hf_experts_fused(d->arch, info->name, hf, sizeof hf, &part, &parts);
    if (fused == 0 || mkc_hf_expert_name(d->arch, info->name, 0, hf, sizeof hf) == 0) {
      if (mkc_weight_block_type(info->type)) {
        mkc_error_in(st->path, "'%s': the kernel was planned for %s blocks", info->name,
                     mkc_ggml_type((uint32_t)info->type)->name);
        goto fail;
      }
      if (fused == 0 ? load_fused_experts(st, d, info, hf, part, parts, w)
                     : load_experts(st, d, info, w))
        goto fail;
      continue;
    }
    if (mkc_hf_name(d->arch, info->name, hf, sizeof hf)) {
      mkc_error_in(st->path, "the graph's weight '%s' has no Hugging Face name mkc knows",
                   info->name);
      goto fail;
    }
    const mkc_st_tensor *t = find_spelled(st, hf, sizeof hf);
    if (!t) {
      mkc_error_in(st->path,
                   "tensor '%s' is missing (HF name '%s'; the graph needs it as [%d, %d])",
                   info->name, hf, info->rows, info->cols);
      goto fail;
    }
    if (readable(st, t, hf, info->name)) goto fail;
    const char *where = mkc_st_file_path(st, t->file);
    if (!shape_matches(t, info)) {
      format_shape(t, shape, sizeof shape);
      if (info->rows == 1)
        mkc_error_in(where, "tensor '%s' (%s): Expected [%d], Actual %s", hf, info->name,
                     info->cols, shape);
      else
        mkc_error_in(where, "tensor '%s' (%s): Expected [%d, %d], Actual %s", hf, info->name,
                     info->rows, info->cols, shape);
      goto fail;
    }
    if (mkc_weight_block_type(info->type)) { /* a plan made for another file */
      mkc_error_in(where, "tensor '%s' (%s): the kernel was planned for %s blocks", hf, info->name,
                   mkc_ggml_type((uint32_t)info->type)->name);
      goto fail;
    }
    mkc_tensor *dst = mkc_weights_append(w, info);
    if (!dst) {
      mkc_error_in(where, "tensor '%s': out of memory for %zu elements", hf,
                   (size_t)info->rows * (size_t)info->cols);
      goto fail;
    }
    if (load_one(st, d, t, info, dst->data)) goto fail;
  }
  return 0;
fail:
  mkc_weights_free(w);
  return -1;
}
