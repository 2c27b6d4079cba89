/* GGUF model files (versions 2 and 3): a memory-mapped reader that checks
 * every byte it trusts, the bridge from a file's tensors to the weight store,
 * and a writer (v3) for `mkc init` and the tests.
 *
 * Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count, the
 * metadata (key string, u32 value type, value), the tensor infos (name, u32
 * n_dims, u64 ne[n_dims], u32 type, u64 offset), padding to the alignment,
 * then the tensor data; offsets count from the start of that data section.
 * Strings are a u64 length and bytes, not NUL-terminated. Little-endian. */
#ifndef MKC_GGUF_H
#define MKC_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "dequant.h"
#include "codegen/graph.h"
#include "util/mapped.h"
#include "weights.h"

/* Metadata value types (the file's numbering). */
enum mkc_gguf_vtype {
  MKC_GGUF_UINT8 = 0,
  MKC_GGUF_INT8 = 1,
  MKC_GGUF_UINT16 = 2,
  MKC_GGUF_INT16 = 3,
  MKC_GGUF_UINT32 = 4,
  MKC_GGUF_INT32 = 5,
  MKC_GGUF_FLOAT32 = 6,
  MKC_GGUF_BOOL = 7,
  MKC_GGUF_STRING = 8,
  MKC_GGUF_ARRAY = 9,
  MKC_GGUF_UINT64 = 10,
  MKC_GGUF_INT64 = 11,
  MKC_GGUF_FLOAT64 = 12,
  MKC_GGUF_VTYPE_COUNT
};

#define MKC_GGUF_DEFAULT_ALIGNMENT 32
#define MKC_GGUF_MAX_DIMS 4

/* A string inside the file: len bytes at s, not NUL-terminated. */
typedef struct mkc_gguf_str {
  const char *s;
  uint64_t len;
} mkc_gguf_str;

typedef struct mkc_gguf_kv {
  char *key;            /* NUL-terminated copy */
  uint32_t type;        /* enum mkc_gguf_vtype */
  uint32_t elem_type;   /* arrays: the elements' type; else == type */
  uint64_t n;           /* arrays: the element count; else 1 */
  const uint8_t *value; /* the scalar or the first element, unaligned, in owned */
  char *str;            /* STRING: NUL-terminated copy */
  mkc_gguf_str *strs;   /* array of STRING: [n], in owned */
  uint8_t *owned;       /* the value's bytes copied from the file: after open, only
                           tensor data is read from the mapping */
} mkc_gguf_kv;

typedef struct mkc_gguf_tensor {
  char *name;                    /* NUL-terminated copy */
  uint32_t type;                 /* enum mkc_ggml_type */
  uint32_t n_dims;               /* 1..4 */
  int64_t ne[MKC_GGUF_MAX_DIMS]; /* ne[0] is the fastest dim (cols), ne[1] rows; unused 1 */
  uint64_t offset;               /* bytes from the start of the data section */
  uint64_t n_elems, n_bytes;
  const uint8_t *data; /* in the file (read through mkc_gguf_load_weights) */
  uint32_t shard;      /* the file it is in: 0 the one opened, k its shards[k - 1] */
} mkc_gguf_tensor;

typedef struct mkc_gguf {
  char *path;           /* as given; messages start "mkc: error: PATH: " */
  uint32_t version;     /* 2 or 3 */
  uint64_t alignment;   /* general.alignment, else 32 */
  uint64_t data_offset; /* start of the tensor data section */
  const uint8_t *base;  /* the whole file (mapped, or the caller's bytes) */
  size_t size;
  mkc_mapped map; /* the mapping (map.fd -1 for the caller's bytes) */
  uint64_t n_kv;
  mkc_gguf_kv *kv; /* [n_kv], file order */
  uint64_t n_tensors;
  mkc_gguf_tensor *tensors;  /* [n_tensors], file order */
  mkc_gguf_kv **kv_sorted;   /* [n_kv] by key, for lookup */
  mkc_gguf_tensor **by_name; /* [n_tensors] by name, for lookup */
  uint32_t n_split;          /* split.count: the files of a model llama.cpp's gguf-split cut */
  struct mkc_gguf **shards;  /* [n_split - 1]: the other files, whose tensors are in tensors */
} mkc_gguf;

/* Maps and parses path. NULL after a "mkc: error: PATH: ..." message on any
 * defect: wrong magic or version, truncation, counts or lengths the file
 * cannot hold, unknown value or tensor types, bad dims, misaligned or
 * out-of-bounds tensor data, duplicate keys or tensor names, a file
 * truncated or changed while it is read (util/mapped.h). The first file of a
 * split model (PREFIX-00001-of-0000N.gguf, split.count N) opens the other
 * N - 1 too, their tensors among its own (gguf_shards.c); another of them is
 * refused, naming the first. */
mkc_gguf *mkc_gguf_open(const char *path);
/* The same for one file alone, a split model's shard among them (its other files not opened). */
mkc_gguf *mkc_gguf_open_one(const char *path);
/* The same on size bytes at data, which must outlive the result; name is
 * used in messages. */
mkc_gguf *mkc_gguf_open_memory(const void *data, size_t size, const char *name);
void mkc_gguf_close(mkc_gguf *f);

/* Metadata. mkc_gguf_find: the entry, or NULL when absent (no message). The
 * getters return 1 when found, 0 when absent (no message), -1 (message with
 * Expected and Actual) when present with another type or out of range. */
const mkc_gguf_kv *mkc_gguf_find(const mkc_gguf *f, const char *key);
/* Sets key (a scalar type, or STRING) to the n bytes of value (a STRING's text, no NUL), in
 * place of the file's entry or as a new one: llama.cpp's --override-kv (gguf_override.h). 0, or
 * -1 when out of memory (no message). Entries found before are no longer valid. */
int mkc_gguf_put(mkc_gguf *f, const char *key, uint32_t type, const void *value, size_t n);
int mkc_gguf_get_int(const mkc_gguf *f, const char *key, int64_t *v);  /* any integer type */
int mkc_gguf_get_u32(const mkc_gguf *f, const char *key, uint32_t *v); /* integer in u32 range */
int mkc_gguf_get_float(const mkc_gguf *f, const char *key, double *v); /* f32, f64 */
int mkc_gguf_get_bool(const mkc_gguf *f, const char *key, int *v);
int mkc_gguf_get_str(const mkc_gguf *f, const char *key, const char **v);
/* An array whose elements are elem_type (-1: any). */
int mkc_gguf_get_arr(const mkc_gguf *f, const char *key, int elem_type, const mkc_gguf_kv **v);

/* Element i (< kv->n) of an array, or the scalar (i = 0). _int: integers
 * and bool (a u64 above INT64_MAX wraps; 0 for other types); _float: floats
 * and integers; _str: strings ("" for other types). */
int64_t mkc_gguf_arr_int(const mkc_gguf_kv *kv, uint64_t i);
double mkc_gguf_arr_float(const mkc_gguf_kv *kv, uint64_t i);
mkc_gguf_str mkc_gguf_arr_str(const mkc_gguf_kv *kv, uint64_t i);
/* A value as text: the scalar, a quoted string (escaped: util/text.h), or
 * "[N x u32]" for arrays. */
void mkc_gguf_format_value(const mkc_gguf_kv *kv, char *buf, size_t size);
const char *mkc_gguf_vtype_name(uint32_t type); /* "u32", "string", ...; "?" if unknown */

/* The tensor called name, or NULL (no message). */
const mkc_gguf_tensor *mkc_gguf_find_tensor(const mkc_gguf *f, const char *name);
/* Tensor `name`, a matrix of rows fused from n others (phi3's attn_qkv, and its ffn_up: the
 * gate's rows, then the up projection's), as n tensors names[k] of rows[k] rows each, in order,
 * over the same bytes (a part may keep the fused one's name). 0, 1 when there is no such tensor,
 * -1 after a message (rows that do not add up, a part's name taken). Pointers from find_tensor
 * are stale afterwards. */
int mkc_gguf_split_rows(mkc_gguf *f, const char *name, int n, const char *const *names,
                        const int64_t *rows);
struct mkc_model_desc;
/* The fused matrices of d's architecture split as its loader in llama.cpp reads them (phi3:
 * attn_qkv, and ffn_up where it holds 2 * ffn rows); other architectures: nothing. 0, or -1
 * after a message. */
int mkc_gguf_unfuse(mkc_gguf *f, const struct mkc_model_desc *d);

/* Every weight of g from the file: found by name, shape checked (ne[0] =
 * cols, ne[1] = rows, a 1-D tensor has rows 1), converted to bf16. Returns 0,
 * or -1 after a message naming the tensor (missing, Expected/Actual shape,
 * a type mkc does not read) or the file (truncated or changed since it was
 * opened); w is then empty. */
int mkc_gguf_load_weights(const mkc_gguf *f, const mkc_graph *g, mkc_weights *w);

/* Opens the other files of a split model f is the first of, and takes their tensors in (each
 * tensor's shard says which file); nothing for a file that is not split. 0, or -1 after a message
 * (f is then to be closed). */
int mkc_gguf_open_shards(mkc_gguf *f);
/* read(ctx) guarded as mkc_mapped_read does, on the file holding tensor t: 0 or -1. */
int mkc_gguf_read_tensor(const mkc_gguf *f, const mkc_gguf_tensor *t, int (*read)(void *ctx),
                         void *ctx);
/* Installs tensors[n] (by_name: room for n pointers, filled and sorted here) as f's tensors in
 * place of its own, whose arrays are freed (their names are the caller's to keep or free). */
void mkc_gguf_take_tensors(mkc_gguf *f, mkc_gguf_tensor *tensors, mkc_gguf_tensor **by_name,
                           uint64_t n);
/* Tensor t's bytes copied to dst, guarded so: 0 or -1. */
int mkc_gguf_copy_tensor(const mkc_gguf *f, const mkc_gguf_tensor *t, void *dst);
/* The path of the file holding tensor t. */
const char *mkc_gguf_tensor_path(const mkc_gguf *f, const mkc_gguf_tensor *t);

/* The writer (v3). Metadata and tensors are written in the order added;
 * "general.alignment" (u32) set here also sets the layout. Functions return
 * 0, or -1 after a "mkc: error: ..." message. */
typedef struct mkc_gguf_writer mkc_gguf_writer;

mkc_gguf_writer *mkc_gguf_writer_new(void);
void mkc_gguf_writer_free(mkc_gguf_writer *w);
/* One value of a scalar type; for STRING, value is a const char *. */
int mkc_gguf_set(mkc_gguf_writer *w, const char *key, uint32_t type, const void *value);
int mkc_gguf_set_str(mkc_gguf_writer *w, const char *key, const char *s);
int mkc_gguf_set_u32(mkc_gguf_writer *w, const char *key, uint32_t v);
int mkc_gguf_set_f32(mkc_gguf_writer *w, const char *key, float v);
/* n elements of elem_type; for STRING, values is const char *const [n]. */
int mkc_gguf_set_arr(mkc_gguf_writer *w, const char *key, uint32_t elem_type, const void *values,
                     uint64_t n);
/* A tensor converted from floats to F32, F16, BF16, Q8_0 or Q4_0 (ne[0] a
 * multiple of the block). ne[0] is the fastest dim. */
int mkc_gguf_add_tensor(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                        const int64_t *ne, const float *values);
/* A tensor of any known type from its encoded bytes, which must stay alive
 * until mkc_gguf_write (they are not copied). */
int mkc_gguf_add_raw(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                     const int64_t *ne, const void *bytes);
/* A tensor whose bytes are made while the file is written: fill(ctx, index, out) writes
 * tensor number index's (in the order added) to out, the writer's buffer of its size, freed once
 * written; 0, or -1 after a message (the file is then not written). So a file larger than memory
 * is written a tensor at a time (mkc quantize). */
typedef int (*mkc_gguf_fill_fn)(void *ctx, size_t index, void *out);
int mkc_gguf_add_deferred(mkc_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                          const int64_t *ne);
void mkc_gguf_set_fill(mkc_gguf_writer *w, mkc_gguf_fill_fn fill, void *ctx);
/* Writes the file (through a temporary name, renamed when complete). */
int mkc_gguf_write(mkc_gguf_writer *w, const char *path);
/* The bytes the file would hold before its tensor data: the header, metadata and tensor infos,
 * padded to the alignment (ggml's gguf_get_meta_size); 0 where out of memory. */
uint64_t mkc_gguf_writer_meta_size(const mkc_gguf_writer *w);
/* Adds f's entry kv to out as it is (gguf_copy.c): 0, or -1 after a message naming f (an array
 * of arrays, a string element holding a NUL byte). */
int mkc_gguf_copy_kv(const mkc_gguf *f, const mkc_gguf_kv *kv, mkc_gguf_writer *out);

#endif
