/* The GGUF writer (v3): metadata is encoded as it is set, tensors are
 * collected and laid out at write time, each aligned as the reader expects.
 * Quantizes to Q8_0 and Q4_0 so the tests can round-trip quantized files. */
#include "gguf.h"
#include "util/files.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A growing byte buffer; a failed allocation sticks and fails the write. */
typedef struct bytes {
  uint8_t *p;
  size_t len, cap;
  int oom;
} bytes;

typedef struct pending_tensor {
  char *name;
  uint32_t type, n_dims;
  int64_t ne[MKC_GGUF_MAX_DIMS];
  uint64_t n_elems, n_bytes;
  const void *data; /* borrowed (add_raw) or == owned; NULL: deferred (its bytes from fill) */
  void *owned;
} pending_tensor;

struct mkc_gguf_writer {
  bytes meta; /* the encoded metadata entries */
  uint64_t n_kv;
  char **keys; /* [n_kv], to refuse duplicates */
  uint64_t alignment;
  pending_tensor *tensors;
  size_t n_tensors;
  mkc_gguf_fill_fn fill; /* the deferred tensors' bytes */
  void *fill_ctx;
};

/* C sizes of one value as the caller passes it (STRING: a const char *). */
static const size_t ELEM_SIZE[MKC_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, sizeof(const char *),
                                                       0, 8, 8, 8};

__attribute__((format(printf, 1, 2))) static int writer_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mkc: error: gguf writer: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}

static void put(bytes *b, const void *src, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, src, n);
  b->len += n;
}

static void put_le(bytes *b, uint64_t v, int n) {
  uint8_t le[8];
  for (int i = 0; i < n; i++) le[i] = (uint8_t)(v >> (8 * i));
  put(b, le, (size_t)n);
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void put_zeros(bytes *b, uint64_t n) {
  static const uint8_t zeros[256];
  while (n > 0) {
    size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
    put(b, zeros, k);
    n -= k;
  }
}

static void put_str(bytes *b, const char *s) {
  size_t n = strlen(s);
  put_le(b, n, 8);
  put(b, s, n);
}

/* One value of a non-array type, read from the caller's C object. */
static void put_value(bytes *b, uint32_t type, const void *value) {
  if (type == MKC_GGUF_STRING) {
    put_str(b, *(const char *const *)value);
    return;
  }
  size_t n = ELEM_SIZE[type];
  uint64_t v = 0;
  if (n == 1) v = *(const uint8_t *)value;
  if (n == 2) {
    uint16_t x;
    memcpy(&x, value, 2);
    v = x;
  }
  if (n == 4) {
    uint32_t x;
    memcpy(&x, value, 4);
    v = x;
  }
  if (n == 8) memcpy(&v, value, 8);
  put_le(b, v, (int)n);
}

mkc_gguf_writer *mkc_gguf_writer_new(void) {
  mkc_gguf_writer *w = calloc(1, sizeof *w);
  if (!w) {
    writer_error("out of memory");
    return NULL;
  }
  w->alignment = MKC_GGUF_DEFAULT_ALIGNMENT;
  return w;
}

void mkc_gguf_writer_free(mkc_gguf_writer *w) {
  if (!w) return;
  for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
  for (size_t i = 0; i < w->n_tensors; i++) {
    free(w->tensors[i].name);
    free(w->tensors[i].owned);
  }
  free(w->keys);
  free(w->tensors);
  free(w->meta.p);
  free(w);
}

/* The key and value type of a new entry; refuses a repeated key. */
static int begin_entry(mkc_gguf_writer *w, const char *key, uint32_t type) {
  for (uint64_t i = 0; i < w->n_kv; i++)
    if (strcmp(w->keys[i], key) == 0) return writer_error("duplicate metadata key '%s'", key);
  char **keys = realloc(w->keys, (w->n_kv + 1) * sizeof *keys);
  if (keys) w->keys = keys;
  if (!keys || !(w->keys[w->n_kv] = strdup(key))) return writer_error("out of memory");
  w->n_kv++;
  put_str(&w->meta, key);
  put_le(&w->meta, type, 4);
  return 0;
}

int mkc_gguf_set(mkc_gguf_writer *w, const char *key, uint32_t type, const void *value) {
  if (type >= MKC_GGUF_VTYPE_COUNT || type == MKC_GGUF_ARRAY)
    return writer_error("%s: value type %" PRIu32 " is not a scalar type", key, type);
  if (strcmp(key, "general.alignment") == 0) {
    uint32_t a;
    if (type != MKC_GGUF_UINT32) return writer_error("general.alignment must be a u32");
    memcpy(&a, value, sizeof a);
    if (a == 0 || (a & (a - 1)))
      return writer_error("general.alignment must be a power of two, got %" PRIu32, a);
    w->alignment = a;
  }
  if (begin_entry(w, key, type)) return -1;
  put_value(&w->meta, type, value);
  return 0;
}

int mkc_gguf_set_str(mkc_gguf_writer *w, const char *key, const char *s) {
  return mkc_gguf_set(w, key, MKC_GGUF_STRING, &s);
}

int mkc_gguf_set_u32(mkc_gguf_writer *w, const char *key, uint32_t v) {
  return mkc_gguf_set(w, key, MKC_GGUF_UINT32, &v);
}

int mkc_gguf_set_f32(mkc_gguf_writer *w, const char *key, float v) {
  return mkc_gguf_set(w, key, MKC_GGUF_FLOAT32, &v);
}

int mkc_gguf_set_arr(mkc_gguf_writer *w, const char *key, uint32_t elem_type, const void *values,
                     uint64_t n) {
  if (elem_type >= MKC_GGUF_VTYPE_COUNT || elem_type == MKC_GGUF_ARRAY)
    return writer_error("%s: array element type %" PRIu32 " is not a scalar type", key, elem_type);
  if (begin_entry(w, key, MKC_GGUF_ARRAY)) return -1;
  put_le(&w->meta, elem_type, 4);
  put_le(&w->meta, n, 8);
  for (uint64_t i = 0; i < n; i++)
    put_value(&w->meta, elem_type, (const char *)values + i * ELEM_SIZE[elem_type]);
  return 0;
}

/* Q8_0 block: d = max |x| / 127, q = round(x / d). */
static void quantize_q8_0(const float *x, uint8_t *b) {
  float amax = 0;
  for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
  float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
  uint16_t dh = mkc_float_to_f16(d);
  b[0] = (uint8_t)dh;
  b[1] = (uint8_t)(dh >> 8);
  for (int i = 0; i < 32; i++) {
    float q = roundf(x[i] * id);
    q = q >= -127.0f ? (q <= 127.0f ? q : 127.0f) : -127.0f; /* NaN lands on -127 */
    b[2 + i] = (uint8_t)(int8_t)q;
  }
}

static int nibble(float v) { /* round(v) + 8, clamped to 0..15; NaN gives 0 */
  if (!(v > -8.5f)) return 0;
  int q = (int)floorf(v + 8.5f);
  return q > 15 ? 15 : q;
}

/* Q4_0 block: the value of largest magnitude m maps to q = 0, d = m / -8. */
static void quantize_q4_0(const float *x, uint8_t *b) {
  float amax = 0, max = 0;
  for (int i = 0; i < 32; i++) {
    if (fabsf(x[i]) > amax) {
      amax = fabsf(x[i]);
      max = x[i];
    }
  }
  float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
  uint16_t dh = mkc_float_to_f16(d);
  b[0] = (uint8_t)dh;
  b[1] = (uint8_t)(dh >> 8);
  for (int i = 0; i < 16; i++)
    b[2 + i] = (uint8_t)(nibble(x[i] * id) | nibble(x[i + 16] * id) << 4);
}

static void encode(uint32_t type, const float *x, uint64_t n, uint8_t *out) {
  for (uint64_t i = 0; type == MKC_GGML_F32 && i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &x[i], 4);
    for (int k = 0; k < 4; k++) out[4 * i + (uint64_t)k] = (uint8_t)(bits >> (8 * k));
  }
  for (uint64_t i = 0; (type == MKC_GGML_F16 || type == MKC_GGML_BF16) && i < n; i++) {
    uint16_t h = type == MKC_GGML_F16 ? mkc_float_to_f16(x[i]) : mkc_float_to_bf16(x[i]);
    out[2 * i] = (uint8_t)h;
    out[2 * i + 1] = (uint8_t)(h >> 8);
  }
  for (uint64_t i = 0; type == MKC_GGML_Q8_0 && i < n / 32; i++)
    quantize_q8_0(x + 32 * i, out + 34 * i);
  for (uint64_t i = 0; type == MKC_GGML_Q4_0 && i < n / 32; i++)
    quantize_q4_0(x + 32 * i, out + 18 * i);
}

/* Checks name, type and dims and appends the tensor without data. */
static pending_tensor *add(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne) {
  const mkc_ggml_type_info *info = mkc_ggml_type(type);
  if (!info) return writer_error("tensor '%s': unknown type %" PRIu32, name, type), NULL;
  if (n_dims < 1 || n_dims > MKC_GGUF_MAX_DIMS)
    return writer_error("tensor '%s': %" PRIu32 " dimensions (1 to 4)", name, n_dims), NULL;
  for (size_t i = 0; i < w->n_tensors; i++)
    if (strcmp(w->tensors[i].name, name) == 0)
      return writer_error("duplicate tensor name '%s'", name), NULL;
  uint64_t n = 1;
  for (uint32_t d = 0; d < n_dims; d++) {
    if (ne[d] < 0 || (ne[d] && n > INT64_MAX / (uint64_t)ne[d]))
      return writer_error("tensor '%s': bad dimension ne[%" PRIu32 "] = %" PRId64, name, d, ne[d]),
             NULL;
    n *= (uint64_t)ne[d];
  }
  if (ne[0] % info->block)
    return writer_error("tensor '%s': ne[0] = %" PRId64 " is not a multiple of the %s block %d",
                        name, ne[0], info->name, info->block),
           NULL;
  pending_tensor *ts = realloc(w->tensors, (w->n_tensors + 1) * sizeof *ts);
  if (!ts) return writer_error("out of memory"), NULL;
  w->tensors = ts;
  pending_tensor *t = &ts[w->n_tensors];
  *t = (pending_tensor){.name = strdup(name), .type = type, .n_dims = n_dims};
  if (!t->name) return writer_error("out of memory"), NULL;
  w->n_tensors++;
  for (int d = 0; d < MKC_GGUF_MAX_DIMS; d++) t->ne[d] = (uint32_t)d < n_dims ? ne[d] : 1;
  t->n_elems = n;
  t->n_bytes = n / (uint64_t)info->block * (uint64_t)info->block_bytes;
  return t;
}

int mkc_gguf_add_raw(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                     const int64_t *ne, const void *data) {
  pending_tensor *t = add(w, name, type, n_dims, ne);
  if (!t) return -1;
  t->data = data;
  return 0;
}

int mkc_gguf_add_deferred(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                          const int64_t *ne) {
  return add(w, name, type, n_dims, ne) ? 0 : -1;
}

void mkc_gguf_set_fill(mkc_gguf_writer *w, mkc_gguf_fill_fn fill, void *ctx) {
  w->fill = fill, w->fill_ctx = ctx;
}

int mkc_gguf_add_tensor(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                        const int64_t *ne, const float *values) {
  if (type != MKC_GGML_F32 && type != MKC_GGML_F16 && type != MKC_GGML_BF16 &&
      type != MKC_GGML_Q8_0 && type != MKC_GGML_Q4_0) {
    const mkc_ggml_type_info *info = mkc_ggml_type(type);
    return writer_error("tensor '%s': cannot encode %s from floats (use mkc_gguf_add_raw)", name,
                        info ? info->name : "an unknown type");
  }
  pending_tensor *t = add(w, name, type, n_dims, ne);
  if (!t) return -1;
  if (!(t->owned = malloc(t->n_bytes ? t->n_bytes : 1))) {
    free(t->name);
    w->n_tensors--; /* not written without its data */
    return writer_error("tensor '%s': out of memory", name);
  }
  encode(type, values, t->n_elems, t->owned);
  t->data = t->owned;
  return 0;
}

/* Header, metadata and tensor infos with each tensor's aligned offset. */
static void put_header(const mkc_gguf_writer *w, bytes *b) {
  put(b, "GGUF", 4);
  put_le(b, 3, 4);
  put_le(b, w->n_tensors, 8);
  put_le(b, w->n_kv, 8);
  put(b, w->meta.p ? w->meta.p : (const uint8_t *)"", w->meta.len);
  uint64_t offset = 0;
  for (size_t i = 0; i < w->n_tensors; i++) {
    const pending_tensor *t = &w->tensors[i];
    put_str(b, t->name);
    put_le(b, t->n_dims, 4);
    for (uint32_t d = 0; d < t->n_dims; d++) put_le(b, (uint64_t)t->ne[d], 8);
    put_le(b, t->type, 4);
    put_le(b, offset, 8);
    offset = align_up(offset + t->n_bytes, w->alignment);
  }
  put_zeros(b, align_up(b->len, w->alignment) - b->len);
}

uint64_t mkc_gguf_writer_meta_size(const mkc_gguf_writer *w) {
  bytes header = {0};
  put_header(w, &header);
  uint64_t n = header.oom || w->meta.oom ? 0 : header.len;
  free(header.p);
  return n;
}

int mkc_gguf_write(mkc_gguf_writer *w, const char *path) {
  if (w->meta.oom) return writer_error("out of memory");
  bytes header = {0};
  put_header(w, &header);
  if (header.oom) {
    free(header.p);
    return writer_error("out of memory");
  }
  /* A reader never sees a half-written file under the real name. */
  char tmp[4200];
  FILE *out = mkc_atomic_open(path, tmp, sizeof tmp);
  if (!out) {
    free(header.p);
    if (!tmp[0]) return writer_error("path too long: %s", path);
    fprintf(stderr, "mkc: error: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  int bad = fwrite(header.p, 1, header.len, out) != header.len;
  free(header.p);
  static const uint8_t zeros[256];
  int filled = 0; /* a deferred tensor's fill failed (and said why) */
  for (size_t i = 0; !bad && i < w->n_tensors; i++) {
    const pending_tensor *t = &w->tensors[i];
    const void *data = t->data;
    void *made = NULL;
    if (!data && t->n_bytes) { /* deferred: made now, written, freed */
      if (!w->fill || !(made = malloc(t->n_bytes)))
        filled = writer_error("tensor '%s': %s", t->name, w->fill ? "out of memory" : "no data");
      else if (w->fill(w->fill_ctx, i, made) != 0)
        filled = -1;
      data = made;
      bad = filled != 0;
    }
    bad = bad || (t->n_bytes && fwrite(data, 1, t->n_bytes, out) != t->n_bytes);
    free(made);
    for (uint64_t pad = align_up(t->n_bytes, w->alignment) - t->n_bytes; !bad && pad;) {
      size_t k = pad < sizeof zeros ? pad : sizeof zeros;
      bad = fwrite(zeros, 1, k, out) != k;
      pad -= k;
    }
  }
  if (bad) mkc_atomic_abandon(out, tmp);
  if (filled) return -1;
  if (bad || mkc_atomic_commit(out, tmp, path) != 0) {
    fprintf(stderr, "mkc: error: cannot write %s: %s\n", path,
            errno ? strerror(errno) : "I/O error");
    return -1;
  }
  return 0;
}
