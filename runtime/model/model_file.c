/* See model_file.h: which format a path is, and each format's description,
 * weights and tokenizer behind one interface. */
#include "model_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chat_template.h"
#include "formats/gguf_override.h"
#include "formats/hf.h"
#include "formats/safetensors.h"
#include "tokenizer/tokenizer.h"
#include "util/text.h"

/* The folder holding a .safetensors file or index, or path itself. */
static void hf_dir(const char *path, int is_dir, char *out, size_t cap) {
  if (is_dir) {
    snprintf(out, cap, "%s", path);
    return;
  }
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(out, cap, ".");
  else
    snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static int open_hf(const char *path, int is_dir, mkc_model_file *mf) {
  char dir[4096], tok_json[4200];
  hf_dir(path, is_dir, dir, sizeof dir);
  mf->format = "safetensors";
  if (mkc_hf_config_read(dir, &mf->desc) != 0) return -1;
  mf->st = mkc_st_open(path);
  if (!mf->st) return -1;
  /* as mkc_gguf_model_desc checks block_count: each layer holds tensors of its own */
  if (mf->desc.n_layers > mkc_st_count(mf->st)) {
    fprintf(
        stderr,
        "mkc: error: %s: config.json's num_hidden_layers = %d, but the weights hold %d tensor%s "
        "(Expected: each layer's tensors in the weights)\n",
        path, mf->desc.n_layers, mkc_st_count(mf->st), mkc_st_count(mf->st) == 1 ? "" : "s");
    return -1;
  }
  if (mkc_st_unfuse(mf->st, &mf->desc) != 0) return -1;
  snprintf(tok_json, sizeof tok_json, "%s/tokenizer.json", dir);
  if (access(tok_json, F_OK) == 0) {
    mf->tok = mkc_tokenizer_from_hf(dir);
    if (!mf->tok) return -1;
  }
  return mkc_chat_template_hf(dir, &mf->chat_template);
}

static int open_gguf(const char *path, const char *const *overrides, int n_overrides,
                     mkc_model_file *mf) {
  mf->format = "GGUF";
  mf->gguf = mkc_gguf_open(path);
  if (!mf->gguf) return -1;
  for (int k = 0; k < n_overrides; k++)
    if (mkc_gguf_override(mf->gguf, overrides[k]) != 0) return -1;
  if (mkc_gguf_model_desc(mf->gguf, &mf->desc) != 0) return -1;
  if (mkc_gguf_unfuse(mf->gguf, &mf->desc) != 0) return -1;
  if (mkc_gguf_find(mf->gguf, "tokenizer.ggml.model")) {
    mf->tok = mkc_tokenizer_from_gguf(mf->gguf);
    if (!mf->tok) return -1;
  }
  return mkc_chat_template_gguf(mf->gguf, &mf->chat_template);
}

/* The tokenizer and the graph must agree on the vocabulary: ids the
 * tokenizer makes index the embedding table. */
static int check_vocab(const mkc_model_file *mf) {
  if (!mf->tok) return 0;
  int n = mkc_tokenizer_n_vocab(mf->tok);
  if (n > mf->desc.vocab) {
    fprintf(stderr,
            "mkc: error: %s: the tokenizer has %d tokens but the embedding table %d rows "
            "(Expected: tokens <= rows)\n",
            mf->path, n, mf->desc.vocab);
    return -1;
  }
  return 0;
}

int mkc_model_file_open(const char *path, mkc_model_file *mf) {
  return mkc_model_file_open_with(path, NULL, 0, mf);
}

int mkc_model_file_open_with(const char *path, const char *const *kv_overrides, int n_overrides,
                             mkc_model_file *mf) {
  memset(mf, 0, sizeof *mf);
  mf->path = path;
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "mkc: error: cannot open model %s: %s\n", path, strerror(errno));
    return -1;
  }
  int rc, hf = S_ISDIR(st.st_mode) || mkc_ends_with(path, ".safetensors") ||
               mkc_ends_with(path, ".safetensors.index.json");
  if (hf && n_overrides > 0) {
    fprintf(stderr,
            "mkc: error: --override-kv: %s is a Hugging Face model; the flag overrides a GGUF "
            "file's metadata\n",
            path);
    return -1;
  }
  if (hf)
    rc = open_hf(path, S_ISDIR(st.st_mode), mf);
  else
    rc = open_gguf(path, kv_overrides, n_overrides, mf);
  if (rc == 0) rc = check_vocab(mf);
  if (rc != 0) mkc_model_file_close(mf);
  return rc;
}

int mkc_model_file_weights(const mkc_model_file *mf, const mkc_graph *g, mkc_weights *w) {
  if (mf->gguf) return mkc_gguf_load_weights(mf->gguf, g, w);
  return mkc_st_load_weights(mf->st, &mf->desc, g, w);
}

int mkc_model_file_weight_type(void *ctx, const char *name) {
  const mkc_model_file *mf = ctx;
  const mkc_gguf_tensor *t = mf->gguf ? mkc_gguf_find_tensor(mf->gguf, name) : NULL;
  return t ? (int)t->type : -1;
}

void mkc_model_file_close(mkc_model_file *mf) {
  if (mf->tok) mkc_tokenizer_free(mf->tok);
  if (mf->gguf) mkc_gguf_close(mf->gguf);
  if (mf->st) mkc_st_close(mf->st);
  free(mf->chat_template);
  mf->chat_template = NULL;
  mf->tok = NULL;
  mf->gguf = NULL;
  mf->st = NULL;
}

/* ", llama3 scaling: factor 32, ..." (nothing for plain RoPE): the scaling
 * and the parameters its type reads. */
static void format_scaling(const mkc_rope_scaling *s, char *buf, size_t cap) {
  buf[0] = 0;
  if (s->type == MKC_ROPE_SCALING_NONE) return;
  if (s->type == MKC_ROPE_SCALING_LONGROPE) {
    snprintf(buf, cap,
             ", longrope scaling: original context %d, attn factor %g, %d short and long factors",
             s->orig_ctx, s->attn_factor, s->n_factors);
    return;
  }
  int n = snprintf(buf, cap, ", %s scaling: factor %g", mkc_rope_scaling_name(s->type), s->factor);
  if (n < 0 || (size_t)n >= cap || s->type == MKC_ROPE_SCALING_LINEAR) return;
  if (s->type == MKC_ROPE_SCALING_LLAMA3)
    snprintf(buf + n, cap - n, ", low/high freq factor %g/%g, original context %d",
             s->low_freq_factor, s->high_freq_factor, s->orig_ctx);
  else
    snprintf(buf + n, cap - n,
             ", original context %d, beta fast/slow %g/%g, ext factor %g, attn factor %g",
             s->orig_ctx, s->beta_fast, s->beta_slow, s->ext_factor, s->attn_factor);
}

void mkc_model_desc_format(const mkc_model_desc *d, char *buf, size_t cap) {
  char scaling[192], partial[48] = "";
  format_scaling(&d->rope_scaling, scaling, sizeof scaling);
  if (d->rope_dim > 0) snprintf(partial, sizeof partial, ", the first %d dims", d->rope_dim);
  snprintf(buf, cap,
           "%s: %d layers, dim %d, %d heads (%d KV) of %d, ffn %d, vocab %d, context %d, rope "
           "theta %g (%s%s%s), rms eps %g, %s head%s%s",
           d->arch, d->n_layers, d->dim, d->n_heads, d->n_kv_heads, d->head_dim, d->ffn, d->vocab,
           d->ctx_train, d->rope_theta, d->rope_layout == MKC_ROPE_NEOX ? "neox" : "interleaved",
           partial, scaling, d->norm_eps, d->tied ? "tied" : "separate",
           d->qkv_bias ? ", qkv bias" : "", d->qk_norm ? ", qk norm" : "");
  size_t len = strlen(buf);
  if (d->sliding_window > 0 && len < cap)
    len +=
        (size_t)snprintf(buf + len, cap - len, ", %d local : %d global layers over a window of %d",
                         d->swa_local, d->swa_global, d->sliding_window);
  if (d->sliding_window > 0 && d->rope_theta_swa > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, " (rope theta %g)", d->rope_theta_swa);
  if (d->nope_interval == 1 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", no RoPE in any layer (NoPE)");
  else if (d->nope_interval > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", no RoPE every %d layers from layer %d (NoPE)",
                            d->nope_interval, d->nope_interval - 1);
  if (d->post_norms && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", norms after attention and the MLP%s",
                            d->no_pre_norms ? " (none before)" : "");
  if (d->ffn_gelu && len < cap) len += (size_t)snprintf(buf + len, cap - len, ", GeGLU");
  if (d->embed_scale > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", embeddings x %g", d->embed_scale);
  if (d->attn_scale > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", attention scale %g", d->attn_scale);
  if (d->residual_scale > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", residual branches x %g", d->residual_scale);
  if (d->logit_scale > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", logits / %g", d->logit_scale);
  if (d->attn_softcap > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", scores capped at %g", d->attn_softcap);
  if (d->final_softcap > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", logits capped at %g", d->final_softcap);
  if (d->n_experts > 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, ", %d of %d experts of ffn %d a token%s",
                            d->n_experts_used, d->n_experts, d->expert_ffn,
                            d->norm_topk ? " (weights renormalized)" : "");
  if (mkc_gptoss(d->arch) && len < cap)
    len += (size_t)snprintf(buf + len, cap - len,
                            ", attention sinks, biases on the output, router and experts, "
                            "gpt-oss's clamped glu");
  if (d->pooling != MKC_POOL_UNSET && len < cap)
    snprintf(buf + len, cap - len, ", embeddings pooling %s", mkc_pooling_name(d->pooling));
}
