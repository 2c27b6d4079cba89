/* The GGUF reader: maps the file (its reads guarded against the file
 * shrinking, util/mapped.h), checks every length, count and offset against
 * the bytes that are really there before trusting it, and copies the
 * metadata out. Indexes metadata and tensors by name. Also the bridge to the
 * weight store. */
#include "gguf.h"
#include "quantize.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"
#include "util/text.h"

/* The fewest bytes one entry can take: a counted claim larger than the file
 * could hold is refused before anything is allocated for it. */
enum {
  MIN_KV_BYTES = 8 + 4 + 1,             /* empty key, type, a u8 */
  MIN_TENSOR_BYTES = 8 + 4 + 8 + 4 + 8, /* empty name, n_dims, one ne, type, offset */
};
#define NO_INDEX UINT64_MAX

static const int VALUE_BYTES[MKC_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static const char *const VTYPE_NAMES[MKC_GGUF_VTYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

const char *mkc_gguf_vtype_name(uint32_t type) {
  return type < MKC_GGUF_VTYPE_COUNT ? VTYPE_NAMES[type] : "?";
}

/* The parse position and what is being read there, for messages. */
typedef struct cursor {
  mkc_gguf *f;
  size_t pos;
  const char *what; /* "the header", "metadata", "tensor", ... */
  const char *name; /* the key or tensor name once known */
  uint64_t index;   /* the entry's number before its name is known */
} cursor;

static const char *describe(const cursor *c, char *buf, size_t size) {
  if (c->name)
    snprintf(buf, size, "%s '%s'", c->what, mkc_shown(c->name));
  else if (c->index != NO_INDEX)
    snprintf(buf, size, "%s %" PRIu64, c->what, c->index);
  else
    snprintf(buf, size, "%s", c->what);
  return buf;
}

static size_t left(const cursor *c) { return c->f->size - c->pos; }

static uint64_t read_le(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* The next n bytes, or NULL after a truncation message. */
static const uint8_t *take(cursor *c, uint64_t n) {
  if (n > left(c)) {
    char d[512];
    mkc_error_in(c->f->path, "truncated at offset %zu: %s needs %" PRIu64 " bytes, %zu left",
                 c->pos, describe(c, d, sizeof d), n, left(c));
    return NULL;
  }
  const uint8_t *p = c->f->base + c->pos;
  c->pos += n;
  return p;
}

static int read_u32(cursor *c, uint32_t *v) {
  const uint8_t *p = take(c, 4);
  if (p) *v = (uint32_t)read_le(p, 4);
  return p ? 0 : -1;
}

static int read_u64(cursor *c, uint64_t *v) {
  const uint8_t *p = take(c, 8);
  if (p) *v = read_le(p, 8);
  return p ? 0 : -1;
}

static int read_str(cursor *c, mkc_gguf_str *s) {
  uint64_t len;
  if (read_u64(c, &len)) return -1;
  if (len > left(c)) {
    char d[512];
    mkc_error_in(c->f->path,
                 "%s: string length %" PRIu64 " at offset %zu is more than the %zu bytes left",
                 describe(c, d, sizeof d), len, c->pos - 8, left(c));
    return -1;
  }
  s->s = (const char *)c->f->base + c->pos;
  s->len = len;
  c->pos += len;
  return 0;
}

/* A NUL-terminated copy into *out, stored before the bytes are read from
 * the mapping, so a fault there leaves nothing unfreed. */
static int copy_str(const mkc_gguf *f, mkc_gguf_str s, char **out) {
  if (!(*out = malloc(s.len + 1))) {
    mkc_error_in(f->path, "out of memory for a %" PRIu64 "-byte string", s.len);
    return -1;
  }
  memcpy(*out, s.s, s.len);
  (*out)[s.len] = '\0';
  return 0;
}

/* A name or key that goes through C string functions must not hide a NUL. */
static int read_name(cursor *c, const char *kind, char **out) {
  mkc_gguf_str s;
  if (read_str(c, &s)) return -1;
  if (memchr(s.s, 0, s.len)) {
    mkc_error_in(c->f->path, "%s %" PRIu64 ": the %s contains a NUL byte", c->what, c->index, kind);
    return -1;
  }
  return copy_str(c->f, s, out);
}

static int read_value(cursor *c, mkc_gguf_kv *kv) {
  char d[512];
  if (kv->type >= MKC_GGUF_VTYPE_COUNT) {
    mkc_error_in(c->f->path, "%s: unknown value type %" PRIu32, describe(c, d, sizeof d), kv->type);
    return -1;
  }
  kv->elem_type = kv->type;
  kv->n = 1;
  if (kv->type == MKC_GGUF_ARRAY) {
    if (read_u32(c, &kv->elem_type) || read_u64(c, &kv->n)) return -1;
    if (kv->elem_type >= MKC_GGUF_VTYPE_COUNT) {
      mkc_error_in(c->f->path, "%s: unknown array element type %" PRIu32, describe(c, d, sizeof d),
                   kv->elem_type);
      return -1;
    }
    if (kv->elem_type == MKC_GGUF_ARRAY) {
      mkc_error_in(c->f->path, "%s: arrays of arrays are not supported", describe(c, d, sizeof d));
      return -1;
    }
    uint64_t min_bytes =
        kv->elem_type == MKC_GGUF_STRING ? 8 : (uint64_t)VALUE_BYTES[kv->elem_type];
    if (kv->n > left(c) / min_bytes) {
      mkc_error_in(c->f->path,
                   "%s: %" PRIu64 " array elements of type %s cannot fit in the %zu bytes left",
                   describe(c, d, sizeof d), kv->n, VTYPE_NAMES[kv->elem_type], left(c));
      return -1;
    }
  }
  kv->value = c->f->base + c->pos;
  if (kv->elem_type != MKC_GGUF_STRING)
    return take(c, kv->n * (uint64_t)VALUE_BYTES[kv->elem_type]) ? 0 : -1;
  mkc_gguf_str s;
  if (kv->type == MKC_GGUF_STRING) return read_str(c, &s) || copy_str(c->f, s, &kv->str);
  kv->strs = malloc((kv->n ? kv->n : 1) * sizeof *kv->strs);
  if (!kv->strs) {
    mkc_error_in(c->f->path, "out of memory for %" PRIu64 " strings", kv->n);
    return -1;
  }
  for (uint64_t i = 0; i < kv->n; i++)
    if (read_str(c, &kv->strs[i])) return -1;
  return 0;
}

/* The value's bytes (kv->value up to the cursor) copied out of the file,
 * kv->value and kv->strs pointing into the copy. */
static int own_value(cursor *c, mkc_gguf_kv *kv) {
  size_t n = (size_t)(c->f->base + c->pos - kv->value);
  if (!(kv->owned = malloc(n ? n : 1))) {
    mkc_error_in(c->f->path, "out of memory for %zu bytes of metadata '%s'", n, mkc_shown(kv->key));
    return -1;
  }
  memcpy(kv->owned, kv->value, n);
  for (uint64_t i = 0; kv->strs && i < kv->n; i++)
    kv->strs[i].s = (const char *)kv->owned + ((const uint8_t *)kv->strs[i].s - kv->value);
  kv->value = kv->owned;
  return 0;
}

static int cmp_kv(const void *a, const void *b) {
  return strcmp((*(mkc_gguf_kv *const *)a)->key, (*(mkc_gguf_kv *const *)b)->key);
}

static int cmp_tensor(const void *a, const void *b) {
  return strcmp((*(mkc_gguf_tensor *const *)a)->name, (*(mkc_gguf_tensor *const *)b)->name);
}

static int read_metadata(cursor *c) {
  mkc_gguf *f = c->f;
  f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof *f->kv);
  f->kv_sorted = malloc((f->n_kv ? f->n_kv : 1) * sizeof *f->kv_sorted);
  if (!f->kv || !f->kv_sorted) {
    mkc_error_in(f->path, "out of memory for %" PRIu64 " metadata entries", f->n_kv);
    return -1;
  }
  for (uint64_t i = 0; i < f->n_kv; i++) {
    mkc_gguf_kv *kv = &f->kv[i];
    *c = (cursor){f, c->pos, "metadata entry", NULL, i};
    if (read_name(c, "key", &kv->key)) return -1;
    c->what = "metadata";
    c->name = kv->key;
    if (read_u32(c, &kv->type) || read_value(c, kv) || own_value(c, kv)) return -1;
    f->kv_sorted[i] = kv;
  }
  qsort(f->kv_sorted, f->n_kv, sizeof *f->kv_sorted, cmp_kv);
  for (uint64_t i = 1; i < f->n_kv; i++) {
    if (strcmp(f->kv_sorted[i - 1]->key, f->kv_sorted[i]->key) == 0) {
      mkc_error_in(f->path, "duplicate metadata key '%s'", mkc_shown(f->kv_sorted[i]->key));
      return -1;
    }
  }
  return 0;
}

static int read_alignment(mkc_gguf *f) {
  f->alignment = MKC_GGUF_DEFAULT_ALIGNMENT;
  const mkc_gguf_kv *kv = mkc_gguf_find(f, "general.alignment");
  if (!kv) return 0;
  if (kv->type != MKC_GGUF_UINT32) {
    mkc_error_in(f->path, "general.alignment: Expected a u32 power of two, Actual type %s",
                 mkc_gguf_vtype_name(kv->type));
    return -1;
  }
  uint64_t a = read_le(kv->value, 4);
  if (a == 0 || (a & (a - 1))) {
    mkc_error_in(f->path, "general.alignment: Expected a u32 power of two, Actual %" PRIu64, a);
    return -1;
  }
  f->alignment = a;
  return 0;
}

/* n_dims, ne[], type, offset; element and byte counts checked for overflow
 * and for whole blocks. */
static int read_tensor_info(cursor *c, mkc_gguf_tensor *t) {
  mkc_gguf *f = c->f;
  if (read_u32(c, &t->n_dims)) return -1;
  if (t->n_dims < 1 || t->n_dims > MKC_GGUF_MAX_DIMS) {
    mkc_error_in(f->path, "tensor '%s': %" PRIu32 " dimensions (mkc reads 1 to %d)",
                 mkc_shown(t->name), t->n_dims, MKC_GGUF_MAX_DIMS);
    return -1;
  }
  for (int d = 0; d < MKC_GGUF_MAX_DIMS; d++) {
    uint64_t ne = 1;
    if ((uint32_t)d < t->n_dims && read_u64(c, &ne)) return -1;
    if (ne > INT64_MAX) {
      mkc_error_in(f->path, "tensor '%s': ne[%d] = %" PRIu64 " is out of range", mkc_shown(t->name),
                   d, ne);
      return -1;
    }
    t->ne[d] = (int64_t)ne;
  }
  if (read_u32(c, &t->type) || read_u64(c, &t->offset)) return -1;
  const mkc_ggml_type_info *type = mkc_ggml_type(t->type);
  if (!type) {
    mkc_error_in(f->path, "tensor '%s': unknown tensor type %" PRIu32, mkc_shown(t->name), t->type);
    return -1;
  }
  uint64_t n = 1;
  int overflow = 0;
  for (int d = 0; d < MKC_GGUF_MAX_DIMS; d++) {
    uint64_t ne = (uint64_t)t->ne[d];
    if (ne && n > INT64_MAX / ne) overflow = 1;
    n *= ne;
  }
  uint64_t blocks = n / (uint64_t)type->block;
  if (overflow || blocks > INT64_MAX / (uint64_t)type->block_bytes) {
    mkc_error_in(f->path,
                 "tensor '%s': ne {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                 "} overflows 64 bits",
                 mkc_shown(t->name), t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    return -1;
  }
  if (t->ne[0] % type->block) {
    mkc_error_in(f->path,
                 "tensor '%s': ne[0] = %" PRId64 " is not a multiple of the %s block size %d",
                 mkc_shown(t->name), t->ne[0], type->name, type->block);
    return -1;
  }
  t->n_elems = n;
  t->n_bytes = blocks * (uint64_t)type->block_bytes;
  return 0;
}

/* Placement: each tensor's data aligned and inside the file. */
static int place_tensor(mkc_gguf *f, mkc_gguf_tensor *t) {
  uint64_t start = f->data_offset < f->size ? f->data_offset : f->size;
  uint64_t region = f->size - start;
  if (t->offset % f->alignment) {
    mkc_error_in(f->path,
                 "tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                 mkc_shown(t->name), t->offset, f->alignment);
    return -1;
  }
  if (t->offset > region || t->n_bytes > region - t->offset) {
    mkc_error_in(f->path,
                 "tensor '%s': %" PRIu64 " bytes at data offset %" PRIu64
                 " run past the end of the file (the data section holds %" PRIu64 " bytes)",
                 mkc_shown(t->name), t->n_bytes, t->offset, region);
    return -1;
  }
  t->data = f->base + start + t->offset;
  return 0;
}

/* Deliberately alike read_metadata: the same table-plus-sorted-index steps over another record. */
static int read_tensors(cursor *c) {
  mkc_gguf *f = c->f;
  f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
  f->by_name = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *f->by_name);
  if (!f->tensors || !f->by_name) {
    mkc_error_in(f->path, "out of memory for %" PRIu64 " tensor infos", f->n_tensors);
    return -1;
  }
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    mkc_gguf_tensor *t = &f->tensors[i];
    *c = (cursor){f, c->pos, "tensor info", NULL, i};
    if (read_name(c, "name", &t->name)) return -1;
    c->what = "tensor";
    c->name = t->name;
    if (read_tensor_info(c, t)) return -1;
    f->by_name[i] = t;
  }
  uint64_t a = f->alignment;
  f->data_offset = (c->pos + a - 1) / a * a;
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (place_tensor(f, &f->tensors[i])) return -1;
  qsort(f->by_name, f->n_tensors, sizeof *f->by_name, cmp_tensor);
  for (uint64_t i = 1; i < f->n_tensors; i++) {
    if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0) {
      mkc_error_in(f->path, "duplicate tensor name '%s'", mkc_shown(f->by_name[i]->name));
      return -1;
    }
  }
  return 0;
}

static int parse(void *ctx) {
  mkc_gguf *f = ctx;
  cursor c = {f, 0, "the header", NULL, NO_INDEX};
  const uint8_t *magic = take(&c, 4);
  if (!magic) return -1;
  if (memcmp(magic, "GGUF", 4) != 0) {
    mkc_error_in(f->path,
                 "not a GGUF file: magic %02x %02x %02x %02x, expected 47 47 55 46 (\"GGUF\")",
                 magic[0], magic[1], magic[2], magic[3]);
    return -1;
  }
  if (read_u32(&c, &f->version)) return -1;
  if (f->version != 2 && f->version != 3) {
    uint32_t swapped = __builtin_bswap32(f->version);
    if (swapped >= 1 && swapped <= 3)
      mkc_error_in(f->path,
                   "big-endian GGUF files are not supported (version field 0x%08" PRIx32 ")",
                   f->version);
    else
      mkc_error_in(f->path, "unsupported GGUF version %" PRIu32 " (mkc reads versions 2 and 3)",
                   f->version);
    return -1;
  }
  if (read_u64(&c, &f->n_tensors) || read_u64(&c, &f->n_kv)) return -1;
  if (f->n_kv > left(&c) / MIN_KV_BYTES) {
    mkc_error_in(f->path, "metadata count %" PRIu64 " cannot fit in the %zu bytes after the header",
                 f->n_kv, left(&c));
    return -1;
  }
  if (f->n_tensors > (left(&c) - f->n_kv * MIN_KV_BYTES) / MIN_TENSOR_BYTES) {
    mkc_error_in(f->path, "tensor count %" PRIu64 " cannot fit in the %zu bytes after the header",
                 f->n_tensors, left(&c));
    return -1;
  }
  if (read_metadata(&c) || read_alignment(f)) return -1;
  return read_tensors(&c);
}

/* Parses size bytes at base (map's, when it is mapped: then every read of
 * it is guarded). Takes map over, even on failure. */
static mkc_gguf *parse_new(const char *path, const void *base, size_t size, mkc_mapped *map) {
  static const uint8_t empty[1];
  mkc_gguf *f = calloc(1, sizeof *f);
  char *name = strdup(path);
  if (!f || !name) {
    fprintf(stderr, "mkc: error: %s: out of memory\n", path);
    mkc_mapped_close(map);
    free(f);
    free(name);
    return NULL;
  }
  f->path = name;
  f->base = size ? base : empty;
  f->size = size;
  f->map = *map;
  if (mkc_mapped_read(&f->map, f->path, parse, f) == 0) return f;
  mkc_gguf_close(f);
  return NULL;
}

void mkc_gguf_take_tensors(mkc_gguf *f, mkc_gguf_tensor *tensors, mkc_gguf_tensor **by_name,
                           uint64_t n) {
  free(f->tensors);
  free(f->by_name);
  f->tensors = tensors;
  f->by_name = by_name;
  f->n_tensors = n;
  for (uint64_t i = 0; i < n; i++) by_name[i] = &tensors[i];
  qsort(by_name, n, sizeof *by_name, cmp_tensor);
}

mkc_gguf *mkc_gguf_open_memory(const void *data, size_t size, const char *name) {
  mkc_mapped none = {NULL, 0, -1, 0};
  return parse_new(name, data, size, &none);
}

mkc_gguf *mkc_gguf_open_one(const char *path) {
  mkc_mapped map;
  if (mkc_mapped_open(path, &map)) return NULL;
  return parse_new(path, map.base, map.size, &map);
}

mkc_gguf *mkc_gguf_open(const char *path) {
  mkc_gguf *f = mkc_gguf_open_one(path);
  if (f && mkc_gguf_open_shards(f) != 0) {
    mkc_gguf_close(f);
    return NULL;
  }
  return f;
}

void mkc_gguf_close(mkc_gguf *f) {
  if (!f) return;
  for (uint64_t i = 0; f->kv && i < f->n_kv; i++) {
    free(f->kv[i].key);
    free(f->kv[i].str);
    free(f->kv[i].strs);
    free(f->kv[i].owned);
  }
  for (uint64_t i = 0; f->tensors && i < f->n_tensors; i++) free(f->tensors[i].name);
  free(f->kv);
  free(f->kv_sorted);
  free(f->tensors);
  free(f->by_name);
  for (uint32_t k = 0; f->shards && k + 1 < f->n_split; k++) mkc_gguf_close(f->shards[k]);
  free(f->shards);
  mkc_mapped_close(&f->map);
  free(f->path);
  free(f);
}

const mkc_gguf_kv *mkc_gguf_find(const mkc_gguf *f, const char *key) {
  mkc_gguf_kv probe = {.key = (char *)key}, *p = &probe;
  mkc_gguf_kv **hit = bsearch(&p, f->kv_sorted, f->n_kv, sizeof p, cmp_kv);
  return hit ? *hit : NULL;
}

int mkc_gguf_put(mkc_gguf *f, const char *key, uint32_t type, const void *value, size_t n) {
  uint8_t *bytes = malloc(n + 1);
  char *str = type == MKC_GGUF_STRING ? malloc(n + 1) : NULL;
  mkc_gguf_kv *kv = (mkc_gguf_kv *)mkc_gguf_find(f, key);
  if (!bytes || (type == MKC_GGUF_STRING && !str)) goto oom;
  memcpy(bytes, value, n);
  if (str) memcpy(str, value, n), str[n] = 0;
  if (!kv) { /* a new entry: the index rebuilt over the grown list */
    mkc_gguf_kv *grown = realloc(f->kv, (size_t)(f->n_kv + 1) * sizeof *grown);
    if (grown) f->kv = grown;
    mkc_gguf_kv **sorted = realloc(f->kv_sorted, (size_t)(f->n_kv + 1) * sizeof *sorted);
    if (sorted) f->kv_sorted = sorted;
    char *name = strdup(key);
    if (!grown || !sorted || !name) {
      free(name);
      goto oom;
    }
    kv = &f->kv[f->n_kv++];
    *kv = (mkc_gguf_kv){.key = name};
    for (uint64_t i = 0; i < f->n_kv; i++) f->kv_sorted[i] = &f->kv[i];
    qsort(f->kv_sorted, f->n_kv, sizeof *f->kv_sorted, cmp_kv);
  }
  free(kv->str);
  free(kv->strs);
  free(kv->owned);
  kv->type = kv->elem_type = type;
  kv->n = 1;
  kv->owned = bytes;
  kv->value = bytes;
  kv->str = str;
  kv->strs = NULL;
  return 0;
oom:
  free(bytes);
  free(str);
  return -1;
}

const mkc_gguf_tensor *mkc_gguf_find_tensor(const mkc_gguf *f, const char *name) {
  mkc_gguf_tensor probe = {.name = (char *)name}, *p = &probe;
  mkc_gguf_tensor **hit = bsearch(&p, f->by_name, f->n_tensors, sizeof p, cmp_tensor);
  return hit ? *hit : NULL;
}

static int is_integer(uint32_t type) {
  return type <= MKC_GGUF_INT32 || type == MKC_GGUF_UINT64 || type == MKC_GGUF_INT64;
}

int64_t mkc_gguf_arr_int(const mkc_gguf_kv *kv, uint64_t i) {
  if (kv->elem_type >= MKC_GGUF_VTYPE_COUNT || !VALUE_BYTES[kv->elem_type]) return 0;
  const uint8_t *p = kv->value + i * (uint64_t)VALUE_BYTES[kv->elem_type];
  switch (kv->elem_type) {
  case MKC_GGUF_INT8:
    return (int8_t)p[0];
  case MKC_GGUF_INT16:
    return (int16_t)read_le(p, 2);
  case MKC_GGUF_INT32:
    return (int32_t)read_le(p, 4);
  case MKC_GGUF_UINT8:
  case MKC_GGUF_UINT16:
  case MKC_GGUF_UINT32:
  case MKC_GGUF_UINT64:
  case MKC_GGUF_INT64:
    return (int64_t)read_le(p, VALUE_BYTES[kv->elem_type]);
  case MKC_GGUF_BOOL:
    return p[0] != 0;
  }
  return 0; /* floats: converting one out of range would be undefined */
}

double mkc_gguf_arr_float(const mkc_gguf_kv *kv, uint64_t i) {
  if (kv->elem_type == MKC_GGUF_FLOAT32) {
    uint32_t bits = (uint32_t)read_le(kv->value + 4 * i, 4);
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
  }
  if (kv->elem_type == MKC_GGUF_FLOAT64) {
    uint64_t bits = read_le(kv->value + 8 * i, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
  }
  if (kv->elem_type == MKC_GGUF_UINT64) return (double)(uint64_t)mkc_gguf_arr_int(kv, i);
  return (double)mkc_gguf_arr_int(kv, i);
}

mkc_gguf_str mkc_gguf_arr_str(const mkc_gguf_kv *kv, uint64_t i) {
  if (kv->type == MKC_GGUF_STRING) return (mkc_gguf_str){kv->str, read_le(kv->value, 8)};
  if (kv->elem_type == MKC_GGUF_STRING && i < kv->n) return kv->strs[i];
  return (mkc_gguf_str){"", 0};
}

void mkc_gguf_format_value(const mkc_gguf_kv *kv, char *buf, size_t size) {
  if (kv->type == MKC_GGUF_ARRAY)
    snprintf(buf, size, "[%" PRIu64 " x %s]", kv->n, mkc_gguf_vtype_name(kv->elem_type));
  else if (kv->type == MKC_GGUF_STRING)
    snprintf(buf, size, "\"%s\"", mkc_shown_n(kv->str, read_le(kv->value, 8)));
  else if (kv->type == MKC_GGUF_BOOL)
    snprintf(buf, size, "%s", kv->value[0] ? "true" : "false");
  else if (kv->type == MKC_GGUF_FLOAT32 || kv->type == MKC_GGUF_FLOAT64)
    snprintf(buf, size, "%g", mkc_gguf_arr_float(kv, 0));
  else if (kv->type == MKC_GGUF_UINT64)
    snprintf(buf, size, "%" PRIu64, (uint64_t)mkc_gguf_arr_int(kv, 0));
  else
    snprintf(buf, size, "%" PRId64, mkc_gguf_arr_int(kv, 0));
}

/* The kind of value kv holds, for Expected/Actual messages. */
static int type_error(const mkc_gguf *f, const mkc_gguf_kv *kv, const char *expected) {
  char actual[160], value[128];
  if (kv->type == MKC_GGUF_ARRAY)
    snprintf(actual, sizeof actual, "an array of %s", mkc_gguf_vtype_name(kv->elem_type));
  else {
    mkc_gguf_format_value(kv, value, sizeof value);
    snprintf(actual, sizeof actual, "%s %s", mkc_gguf_vtype_name(kv->type), value);
  }
  mkc_error_in(f->path, "metadata '%s': Expected %s, Actual %s", mkc_shown(kv->key), expected,
               actual);
  return -1;
}

int mkc_gguf_get_int(const mkc_gguf *f, const char *key, int64_t *v) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (!kv) return 0;
  if (!is_integer(kv->type) || (kv->type == MKC_GGUF_UINT64 && read_le(kv->value, 8) > INT64_MAX))
    return type_error(f, kv, "an integer");
  *v = mkc_gguf_arr_int(kv, 0);
  return 1;
}

int mkc_gguf_get_u32(const mkc_gguf *f, const char *key, uint32_t *v) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (!kv) return 0;
  int ok =
      is_integer(kv->type) && !(kv->type == MKC_GGUF_UINT64 && read_le(kv->value, 8) > INT64_MAX);
  int64_t x = ok ? mkc_gguf_arr_int(kv, 0) : -1; /* an empty array has no element 0 */
  if (x < 0 || x > UINT32_MAX) return type_error(f, kv, "an integer in 0..4294967295");
  *v = (uint32_t)x;
  return 1;
}

int mkc_gguf_get_float(const mkc_gguf *f, const char *key, double *v) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (!kv) return 0;
  if (kv->type != MKC_GGUF_FLOAT32 && kv->type != MKC_GGUF_FLOAT64)
    return type_error(f, kv, "a f32 or f64");
  *v = mkc_gguf_arr_float(kv, 0);
  return 1;
}

int mkc_gguf_get_bool(const mkc_gguf *f, const char *key, int *v) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (!kv) return 0;
  if (kv->type != MKC_GGUF_BOOL) return type_error(f, kv, "a bool");
  *v = kv->value[0] != 0;
  return 1;
}

int mkc_gguf_get_str(const mkc_gguf *f, const char *key, const char **v) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (!kv) return 0;
  if (kv->type != MKC_GGUF_STRING) return type_error(f, kv, "a string");
  *v = kv->str;
  return 1;
}

int mkc_gguf_get_arr(const mkc_gguf *f, const char *key, int elem_type, const mkc_gguf_kv **v) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (!kv) return 0;
  if (kv->type != MKC_GGUF_ARRAY || (elem_type >= 0 && kv->elem_type != (uint32_t)elem_type)) {
    char expected[64];
    snprintf(expected, sizeof expected, "an array of %s",
             elem_type >= 0 ? mkc_gguf_vtype_name((uint32_t)elem_type) : "any type");
    return type_error(f, kv, expected);
  }
  *v = kv;
  return 1;
}

/* GGUF ne[0] is the fastest dim: a [rows][cols] weight is ne {cols, rows}. The experts'
 * matrices (NAME_exps.weight, ne {cols, rows, experts}) are read as their experts' rows one
 * after another: [experts * rows][cols]. */
static int shape_matches(const mkc_gguf_tensor *t, const mkc_weight_info *w) {
  if (t->ne[2] > 1 && strstr(t->name, "_exps.") && t->ne[3] == 1)
    return t->ne[0] == w->cols && t->ne[1] * t->ne[2] == w->rows;
  /* the experts' biases (NAME_exps.bias, ne {rows, experts}: gpt-oss's): one vector, each
   * expert's block of rows after the one before, as the graph's [1][experts * rows] */
  if (w->rows == 1 && strstr(t->name, "_exps.bias") && t->ne[2] == 1 && t->ne[3] == 1)
    return t->ne[0] * t->ne[1] == w->cols;
  return t->ne[0] == w->cols && t->ne[1] == w->rows && t->ne[2] == 1 && t->ne[3] == 1;
}

typedef struct dequant_job {
  const mkc_gguf_tensor *t;
  mkc_tensor *dst;
} dequant_job;

/* Into the store: the blocks as stored where the plan keeps them, else bf16. */
static int dequant(void *ctx) {
  dequant_job *job = ctx;
  if (job->dst->blocks)
    memcpy(job->dst->blocks, job->t->data,
           (size_t)job->dst->rows * mkc_quant_row_bytes((uint32_t)job->dst->type, job->dst->cols));
  else
    mkc_dequant_bf16(job->t->type, job->t->data, job->t->n_elems, job->dst->data);
  return 0;
}

/* Whether experts' matrix `name` (blk.N.KIND_exps.weight) is in the file as one tensor an
 * expert instead (blk.N.KIND.0.weight: the first GGUF Mixtrals). */
static int one_per_expert(const mkc_gguf *f, const char *name) {
  const char *exps = strstr(name, "_exps.weight");
  char old[256];
  if (!exps || (size_t)(exps - name) > sizeof old - 16) return 0;
  snprintf(old, sizeof old, "%.*s.0.weight", (int)(exps - name), name);
  return mkc_gguf_find_tensor(f, old) != NULL;
}

int mkc_gguf_load_weights(const mkc_gguf *f, const mkc_graph *g, mkc_weights *w) {
  mkc_mapped_test_pause("MKC_TEST_PAUSE_BEFORE_TENSORS");
  if (mkc_weights_begin(w, g) != 0) {
    mkc_error_in(f->path, "out of memory for %d weights", g->n_weights);
    return -1;
  }
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    const mkc_gguf_tensor *t = mkc_gguf_find_tensor(f, info->name);
    if (!t) {
      mkc_error_in(
          f->path, "tensor '%s' is missing (the graph needs it as [%d, %d])%s", info->name,
          info->rows, info->cols,
          one_per_expert(f, info->name)
              ? ": the file keeps each expert's matrix on its own (blk.N.ffn_gate.E.weight), "
                "as early Mixtral GGUFs did; neither mkc nor today's llama.cpp reads that "
                "layout: convert the model again"
              : "");
      goto fail;
    }
    if (!mkc_ggml_type(t->type)->readable) {
      mkc_error_in(f->path, "tensor '%s': type %s is not supported (mkc reads %s)",
                   mkc_shown(t->name), mkc_ggml_type(t->type)->name, mkc_dequant_type_names());
      goto fail;
    }
    if (!shape_matches(t, info)) {
      char actual[128] = "";
      for (int d = (int)t->n_dims - 1; d >= 0; d--)
        snprintf(actual + strlen(actual), sizeof actual - strlen(actual), "%s%" PRId64,
                 d == (int)t->n_dims - 1 ? "" : ", ", t->ne[d]);
      mkc_error_in(f->path, "tensor '%s': Expected [%d, %d], Actual [%s]", mkc_shown(t->name),
                   info->rows, info->cols, actual);
      goto fail;
    }
    if (mkc_weight_block_type(info->type) && t->type != (uint32_t)info->type) {
      mkc_error_in(f->path, "tensor '%s' is %s, but the kernel was planned for %s",
                   mkc_shown(t->name), mkc_ggml_type(t->type)->name,
                   mkc_ggml_type((uint32_t)info->type)->name);
      goto fail;
    }
    mkc_tensor *dst = mkc_weights_append(w, info);
    if (!dst) {
      mkc_error_in(f->path, "tensor '%s': out of memory for %" PRIu64 " elements",
                   mkc_shown(t->name), t->n_elems);
      goto fail;
    }
    dequant_job job = {t, dst};
    if (mkc_gguf_read_tensor(f, t, dequant, &job)) goto fail;
  }
  return 0;
fail:
  mkc_weights_free(w);
  return -1;
}
