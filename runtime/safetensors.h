/* Hugging Face model folders: the safetensors reader (one file, or shards
 * named by model.safetensors.index.json), config.json as an mkc_model_desc,
 * HF tensor names as GGUF names, the bridge to the weight store, and a small
 * writer for tests.
 *
 * safetensors layout: u64 little-endian header length N, N bytes of JSON
 * {"__metadata__": {str: str}, "NAME": {"dtype": "BF16", "shape": [rows,
 * cols], "data_offsets": [begin, end]}, ...}, then the data; offsets count
 * from the start of the data (byte 8 + N). Shape [out][in] is row-major. */
#ifndef MKC_SAFETENSORS_H
#define MKC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "model_desc.h"
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

/* Tensors in file order (shards in the order of their names). */
int mkc_st_count(const mkc_safetensors *st);
const mkc_st_tensor *mkc_st_tensor_at(const mkc_safetensors *st, int i);
/* The tensor called name, or NULL (no message). */
const mkc_st_tensor *mkc_st_find(const mkc_safetensors *st, const char *name);
/* The path of file i (a shard), for messages. */
const char *mkc_st_file_path(const mkc_safetensors *st, int file);

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

/* DIR/config.json as a model description: model_type llama, mistral, qwen2
 * or qwen3; the sizes, rope_theta, rms_norm_eps, tie_word_embeddings; the
 * name from the folder's name. Returns 0, or -1 after "mkc: error:
 * DIR/config.json: ..." (missing or mistyped field, an unsupported
 * model_type, rope_scaling, activation or bias). */
int mkc_hf_config_read(const char *dir, mkc_model_desc *d);
/* The same on len bytes of JSON text; where names it in messages and
 * dir_name (a folder path, may be NULL) gives d->name. */
int mkc_hf_config_parse(const char *text, size_t len, const char *where, const char *dir_name,
                        mkc_model_desc *d);

/* Names (runtime/hf_names.c). The HF name of a GGUF weight name
 * (blk.3.attn_q.weight -> model.layers.3.self_attn.q_proj.weight) and back.
 * Return 0, or -1 for a name with no counterpart or one that does not fit. */
int mkc_hf_name(const char *gguf_name, char *hf, size_t cap);
int mkc_gguf_name_from_hf(const char *hf_name, char *gguf, size_t cap);

/* The heads whose rows the weight gguf_name holds, if loading it from HF
 * must permute them into the interleaved RoPE layout (attn_q: n_heads,
 * attn_k: n_kv_heads, the q/k norms: 1 head); 0 when it is loaded as is. */
int mkc_hf_rope_heads(const char *gguf_name, const mkc_model_desc *d);
/* convert_hf_to_gguf.py's LlamaModel.permute on n_rows rows of row_len
 * elements, n_rows = heads * head_dim: within each head, GGUF row 2i + j is
 * HF row j * head_dim/2 + i, which turns HF's rotate-half (NEOX) pairs (i,
 * i + head_dim/2) into interleaved pairs (2i, 2i + 1). inverse = 1 undoes it.
 * dst and src must not overlap. Returns 0, or -1 if n_rows is not a multiple
 * of 2 * heads. */
int mkc_hf_permute_rows(uint16_t *dst, const uint16_t *src, int n_rows, int row_len, int heads,
                        int inverse);

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

/* DIR/config.json and DIR/model.safetensors (tensors in dtype: F32, F16 or
 * BF16) for d and w: an HF
 * folder mkc_hf_config_read and mkc_st_load_weights read back as they were
 * (runtime/hf_write.c). Refuses a layout transformers cannot express for
 * d->arch. 0, or -1 after a message. */
int mkc_hf_write(const char *dir, const mkc_model_desc *d, const mkc_weights *w, int dtype);

#endif
