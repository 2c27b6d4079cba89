/* safetensors files: the reader (one file, or shards named by
 * model.safetensors.index.json), the bridge to the weight store, and a small
 * writer for tests. The rest of a Hugging Face folder (config.json, HF tensor
 * names) is hf.h's.
 *
 * safetensors layout: u64 little-endian header length N, N bytes of JSON
 * {"__metadata__": {str: str}, "NAME": {"dtype": "BF16", "shape": [rows,
 * cols], "data_offsets": [begin, end]}, ...}, then the data; offsets count
 * from the start of the data (byte 8 + N). Shape [out][in] is row-major. */
#ifndef MKC_SAFETENSORS_H
#define MKC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/graph.h"
#include "codegen/model_desc.h"
#include "weights.h"

/* Element types as the header spells them ("F32", ...). */
enum mkc_st_dtype {
  MKC_ST_BOOL,
  MKC_ST_U8,
  MKC_ST_I8,
  MKC_ST_F8_E5M2,
  MKC_ST_F8_E4M3,
  MKC_ST_F8_E8M0,
  MKC_ST_I16,
  MKC_ST_U16,
  MKC_ST_F16,
  MKC_ST_BF16,
  MKC_ST_I32,
  MKC_ST_U32,
  MKC_ST_F32,
  MKC_ST_I64,
  MKC_ST_U64,
  MKC_ST_F64,
  MKC_ST_C64,
  MKC_ST_DTYPE_COUNT
};

#define MKC_ST_MAX_DIMS 8
#define MKC_ST_MAX_HEADER 100000000 /* bytes of header JSON mkc accepts */

typedef struct mkc_st_tensor {
  char *name;                     /* the HF name, e.g. model.layers.0.self_attn.q_proj.weight */
  int dtype;                      /* enum mkc_st_dtype */
  int n_dims;                     /* 0..MKC_ST_MAX_DIMS */
  int64_t shape[MKC_ST_MAX_DIMS]; /* shape[0] is the slowest dim (rows) */
  const uint8_t *data;            /* in the mapped file, unaligned */
  uint64_t n_bytes;               /* product(shape) * dtype size */
  int file;                       /* the shard it lives in: index into the open files */
} mkc_st_tensor;

typedef struct mkc_safetensors mkc_safetensors;

/* path: a .safetensors file, a model.safetensors.index.json, or a folder
 * holding model.safetensors or model.safetensors.index.json and its shards.
 * Every file is mapped and its header checked. NULL after "mkc: error: PATH:
 * ..." naming the file at fault: short file, header length past the end or
 * over MKC_ST_MAX_HEADER, header not a JSON object, a tensor entry without
 * dtype/shape/data_offsets or of the wrong JSON types, an unknown dtype,
 * dims that are not non-negative integers, data_offsets not [begin, end] in
 * the data, a byte count that is not the shape's, duplicate tensor names, an
 * index naming a shard that is missing or a tensor its shard lacks. */
mkc_safetensors *mkc_st_open(const char *path);
/* One file's size bytes at data, which must outlive the result; name is
 * used in messages. */
mkc_safetensors *mkc_st_open_memory(const void *data, size_t size, const char *name);
void mkc_st_close(mkc_safetensors *st);

/* Tensor `name`, a matrix fused from n others by rows, as n tensors names[k]
 * of rows[k] rows each, in order, over the same bytes. 0, 1 when there is no
 * such tensor, -1 after a message. Pointers from mkc_st_find are stale
 * afterwards. */
int mkc_st_split_rows(mkc_safetensors *st, const char *name, int n, const char *const *names,
                      const int64_t *rows);
struct mkc_model_desc;
/* The fused matrices of d's architecture split as transformers slices them
 * (phi3: qkv_proj into q/k/v_proj, gate_up_proj into gate_proj then
 * up_proj); other architectures: nothing. 0, or -1 after a message. */
int mkc_st_unfuse(mkc_safetensors *st, const struct mkc_model_desc *d);

/* Tensors in file order (shards in the order of their names). */
int mkc_st_count(const mkc_safetensors *st);
const mkc_st_tensor *mkc_st_tensor_at(const mkc_safetensors *st, int i);
/* The tensor called name, or NULL (no message). */
const mkc_st_tensor *mkc_st_find(const mkc_safetensors *st, const char *name);
/* The path of file i (a shard), for messages. */
const char *mkc_st_file_path(const mkc_safetensors *st, int file);

/* Every element of t (F32, F16 or BF16) as floats into dst, read from its
 * file's mapping (util/mapped.h: a file changed while reading is an error).
 * 0, or -1 after a message. */
int mkc_st_read_f32(const mkc_safetensors *st, const mkc_st_tensor *t, float *dst);

const char *mkc_st_dtype_name(int dtype); /* "BF16"; "?" if unknown */
int mkc_st_dtype_size(int dtype);         /* bytes per element; 0 if unknown */

/* Every weight of g (GGUF names) from the HF tensors of st, found by
 * mkc_hf_name, shape checked (HF [out][in] = [rows][cols]; a vector is
 * [cols] or [1][cols] and has rows 1), converted from F32, F16 or BF16 to
 * bf16. Q and K rows (and their biases and q/k norms) are permuted into the
 * interleaved RoPE layout when d->rope_layout says so. Returns 0, or -1
 * after a message naming the tensor (missing, Expected/Actual shape, a dtype
 * mkc does not read); w is then empty. */
int mkc_st_load_weights(const mkc_safetensors *st, const mkc_model_desc *d, const mkc_graph *g,
                        mkc_weights *w);

/* The writer, for tests and fixtures. Each tensor comes from floats
 * (converted to dtype: F32, F16 or BF16, rounding to nearest even) or from
 * raw bytes already in dtype's encoding (any dtype). The header carries
 * {"__metadata__": {"format": "pt"}} and is padded with spaces to 8 bytes. */
typedef struct mkc_st_out {
  const char *name;
  int dtype;
  int n_dims;
  int64_t shape[MKC_ST_MAX_DIMS];
  const float *values; /* product(shape) floats, or NULL: */
  const void *raw;     /* product(shape) * dtype size bytes */
} mkc_st_out;

/* Writes n tensors to path (a temp name, renamed when complete). 0, or -1
 * after a message. */
int mkc_st_write(const char *path, const mkc_st_out *tensors, int n);
/* Writes w (GGUF names, bf16) as an HF checkpoint: HF names, Q/K rows put
 * back into HF's order per d (the inverse of what mkc_st_load_weights does),
 * vectors 1-D, values in dtype (F32, F16 or BF16). 0 or -1. */
int mkc_st_write_weights(const char *path, const mkc_weights *w, const mkc_model_desc *d,
                         int dtype);

/* A JSON value in a message: a number or string as written (long strings
 * cut), else its kind ("an object", "null", ...). Returns buf. */
struct cJSON;
const char *mkc_json_describe(const struct cJSON *v, char *buf, size_t size);

#endif
