/* A GGUF file's metadata -> mkc_model_desc: the architecture's keys
 * ("ARCH.block_count", ...), with the defaults llama.cpp's loader uses where a
 * key may be absent, and refusals for what the graph cannot express. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_file.h"
#include "util/text.h"

static const char *const ARCHS[] = {"llama", "mistral", "qwen2", "qwen3"};

/* "ARCH.suffix" as an integer in [1, 1<<30]: 1 found, 0 absent, -1 bad. */
static int get_size(const mkc_gguf *f, const char *arch, const char *suffix, int *v) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  int64_t x;
  int rc = mkc_gguf_get_int(f, key, &x);
  if (rc <= 0) return rc;
  if (x < 1 || x > (1 << 30)) {
    fprintf(stderr, "mkc: error: %s: %s = %lld: expected 1..%d\n", f->path, key, (long long)x,
            1 << 30);
    return -1;
  }
  *v = (int)x;
  return 1;
}

static int need_size(const mkc_gguf *f, const char *arch, const char *suffix, int *v) {
  int rc = get_size(f, arch, suffix, v);
  if (rc == 0)
    fprintf(stderr, "mkc: error: %s: missing metadata %s.%s (needed for the graph)\n", f->path,
            arch, suffix);
  return rc == 1 ? 0 : -1;
}

/* A float entry. An f32 is read back as the shortest decimal that rounds
 * to it (1e-05, not 9.99999975e-06): what the converter meant, and what
 * config.json says for the same model. */
static int get_real(const mkc_gguf *f, const char *arch, const char *suffix, double *v) {
  char key[128], text[32];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  int rc = mkc_gguf_get_float(f, key, v);
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (rc != 1 || kv->type != MKC_GGUF_FLOAT32) return rc;
  for (int digits = 1; digits <= 9; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, *v);
    if (strtof(text, NULL) == (float)*v) {
      *v = strtod(text, NULL);
      break;
    }
  }
  return 1;
}

/* A preset name from general.name (else the file's name): lower case, and
 * nothing but [a-z0-9.-]. */
static void preset_name(const mkc_gguf *f, char *out, size_t cap) {
  const char *name = NULL;
  if (mkc_gguf_get_str(f, "general.name", &name) != 1 || !*name) {
    const char *slash = strrchr(f->path, '/');
    name = slash ? slash + 1 : f->path;
  }
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < cap; p++) {
    char c = (char)tolower((unsigned char)*p);
    if (!isalnum((unsigned char)c) && c != '.' && c != '-') c = '-';
    if (c == '-' && (n == 0 || out[n - 1] == '-')) continue;
    out[n++] = c;
  }
  if (n >= 5 && strcmp(out + n - 5, ".gguf") == 0) n -= 5;
  while (n > 0 && out[n - 1] == '-') n--;
  out[n] = 0;
  if (!n) snprintf(out, cap, "model");
}

static int rope_layout(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  /* llama.cpp runs llama and mistral with interleaved pairs (their GGUF Q/K
   * rows were permuted at conversion), qwen2/qwen3 with NEOX halves. */
  d->rope_layout = strcmp(arch, "qwen2") == 0 || strcmp(arch, "qwen3") == 0 ? MKC_ROPE_NEOX
                                                                            : MKC_ROPE_INTERLEAVED;
  const char *layout;
  int rc = mkc_gguf_get_str(f, "mkc.rope.layout", &layout);
  if (rc < 0) return -1;
  if (rc == 1) {
    if (strcmp(layout, "neox") == 0)
      d->rope_layout = MKC_ROPE_NEOX;
    else if (strcmp(layout, "interleaved") == 0)
      d->rope_layout = MKC_ROPE_INTERLEAVED;
    else {
      fprintf(stderr, "mkc: error: %s: mkc.rope.layout = \"%s\": expected neox or interleaved\n",
              f->path, mkc_shown(layout));
      return -1;
    }
  }
  char key[128];
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  const char *scaling;
  rc = mkc_gguf_get_str(f, key, &scaling);
  if (rc < 0) return -1;
  if (rc == 1 && strcmp(scaling, "none") != 0) {
    fprintf(stderr, "mkc: error: %s: %s = \"%s\": RoPE scaling is not supported yet\n", f->path,
            key, mkc_shown(scaling));
    return -1;
  }
  if (mkc_gguf_find_tensor(f, "rope_freqs.weight")) {
    fprintf(stderr,
            "mkc: error: %s: has rope_freqs.weight (per-frequency RoPE factors, as Llama 3.1+ "
            "uses): not supported yet\n",
            f->path);
    return -1;
  }
  int rot = 0;
  rc = get_size(f, arch, "rope.dimension_count", &rot);
  if (rc < 0) return -1;
  if (rc == 1 && rot != d->head_dim) {
    fprintf(stderr,
            "mkc: error: %s: %s.rope.dimension_count = %d but heads have %d dims: partial RoPE is "
            "not supported\n",
            f->path, arch, rot, d->head_dim);
    return -1;
  }
  return 0;
}

/* general.architecture, one mkc runs, into d->arch. */
static int read_arch(const mkc_gguf *f, mkc_model_desc *d) {
  const char *arch;
  int rc = mkc_gguf_get_str(f, "general.architecture", &arch);
  if (rc == 0) fprintf(stderr, "mkc: error: %s: missing metadata general.architecture\n", f->path);
  if (rc != 1) return -1;
  int known = 0;
  for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++) known |= strcmp(arch, ARCHS[i]) == 0;
  if (!known) {
    fprintf(stderr,
            "mkc: error: %s: architecture \"%s\" is not supported (mkc runs llama, mistral, qwen2, "
            "qwen3)\n",
            f->path, mkc_shown(arch));
    return -1;
  }
  snprintf(d->arch, sizeof d->arch, "%s", arch);
  return 0;
}

/* Layers, widths, heads and the trained context, with llama.cpp's defaults. */
static int read_sizes(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  if (need_size(f, arch, "block_count", &d->n_layers) ||
      need_size(f, arch, "embedding_length", &d->dim) ||
      need_size(f, arch, "feed_forward_length", &d->ffn) ||
      need_size(f, arch, "attention.head_count", &d->n_heads))
    return -1;
  d->n_kv_heads = d->n_heads;
  d->head_dim = d->dim / d->n_heads;
  d->ctx_train = 4096;
  if (get_size(f, arch, "attention.head_count_kv", &d->n_kv_heads) < 0 ||
      get_size(f, arch, "attention.key_length", &d->head_dim) < 0 ||
      get_size(f, arch, "context_length", &d->ctx_train) < 0)
    return -1;
  int v_dim = d->head_dim;
  if (get_size(f, arch, "attention.value_length", &v_dim) < 0) return -1;
  if (v_dim != d->head_dim) {
    fprintf(stderr,
            "mkc: error: %s: %s.attention.value_length = %d differs from key_length %d: not "
            "supported\n",
            f->path, arch, v_dim, d->head_dim);
    return -1;
  }
  if (d->n_heads % d->n_kv_heads != 0) {
    fprintf(stderr,
            "mkc: error: %s: %d attention heads are not a multiple of %d KV heads (Expected: "
            "head_count %% head_count_kv == 0)\n",
            f->path, d->n_heads, d->n_kv_heads);
    return -1;
  }
  if (d->head_dim % 2) {
    fprintf(stderr, "mkc: error: %s: head dim %d is odd: RoPE needs pairs\n", f->path, d->head_dim);
    return -1;
  }
  return 0;
}

/* RoPE's base and the norms' epsilon, with llama.cpp's defaults. */
static int read_reals(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  d->rope_theta = 10000.0;
  d->norm_eps = 1e-5;
  if (get_real(f, arch, "rope.freq_base", &d->rope_theta) < 0 ||
      get_real(f, arch, "attention.layer_norm_rms_epsilon", &d->norm_eps) < 0)
    return -1;
  if (!(d->rope_theta > 0) || !(d->norm_eps > 0) || d->norm_eps >= 1) {
    fprintf(stderr, "mkc: error: %s: rope.freq_base %g or rms epsilon %g out of range\n", f->path,
            d->rope_theta, d->norm_eps);
    return -1;
  }
  return 0;
}

/* The vocabulary (the embedding table's rows are what the graph indexes) and
 * which optional tensors the file has. */
static int read_tensors(const mkc_gguf *f, mkc_model_desc *d) {
  const mkc_gguf_tensor *embd = mkc_gguf_find_tensor(f, "token_embd.weight");
  if (!embd) {
    fprintf(stderr, "mkc: error: %s: missing tensor token_embd.weight\n", f->path);
    return -1;
  }
  if (embd->n_dims != 2 || embd->ne[0] != d->dim || embd->ne[1] < 1 || embd->ne[1] > (1 << 30)) {
    fprintf(stderr,
            "mkc: error: %s: token_embd.weight: Expected [vocab][%d] (ne {%d, vocab}); Actual ne "
            "{%lld, %lld}\n",
            f->path, d->dim, d->dim, (long long)embd->ne[0], (long long)embd->ne[1]);
    return -1;
  }
  d->vocab = (int)embd->ne[1];
  d->tied = mkc_gguf_find_tensor(f, "output.weight") == NULL;
  d->qkv_bias = mkc_gguf_find_tensor(f, "blk.0.attn_q.bias") != NULL;
  d->qk_norm = mkc_gguf_find_tensor(f, "blk.0.attn_q_norm.weight") != NULL;
  return 0;
}

int mkc_gguf_model_desc(const mkc_gguf *f, mkc_model_desc *d) {
  memset(d, 0, sizeof *d);
  if (read_arch(f, d)) return -1;
  preset_name(f, d->name, sizeof d->name);
  if (read_sizes(f, d->arch, d) || read_reals(f, d->arch, d) || read_tensors(f, d)) return -1;
  return rope_layout(f, d->arch, d);
}
