/* phi3's fused matrices (fused.h). */
#include "fused.h"

#include <stdio.h>
#include <string.h>

#include "codegen/model_desc.h"

const mkc_fused_group MKC_PHI3_FUSED[MKC_FUSED_GROUPS] = {
    {"attn_qkv.weight",
     "self_attn.qkv_proj.weight",
     3,
     {"attn_q.weight", "attn_k.weight", "attn_v.weight"},
     {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"}},
    {"ffn_up.weight",
     "mlp.gate_up_proj.weight",
     2,
     {"ffn_gate.weight", "ffn_up.weight"},
     {"mlp.gate_proj.weight", "mlp.up_proj.weight"}},
};

int mkc_unfuse(const mkc_model_desc *d, int hf, mkc_split_fn split, void *ctx) {
  if (strcmp(d->arch, "phi3") != 0) return 0;
  const char *prefix = hf ? "model.layers" : "blk";
  int64_t kv = (int64_t)d->n_kv_heads * d->head_dim;
  const int64_t rows[MKC_FUSED_GROUPS][MKC_FUSED_MAX_PARTS] = {
      {(int64_t)d->n_heads * d->head_dim, kv, kv}, {d->ffn, d->ffn}};
  for (int l = 0; l < d->n_layers; l++)
    for (int g = 0; g < MKC_FUSED_GROUPS; g++) {
      const mkc_fused_group *f = &MKC_PHI3_FUSED[g];
      char fused[96], parts[MKC_FUSED_MAX_PARTS][96];
      const char *names[MKC_FUSED_MAX_PARTS];
      snprintf(fused, sizeof fused, "%s.%d.%s", prefix, l, hf ? f->hf : f->gguf);
      for (int p = 0; p < f->n_parts; p++) {
        snprintf(parts[p], sizeof parts[p], "%s.%d.%s", prefix, l,
                 hf ? f->hf_parts[p] : f->gguf_parts[p]);
        names[p] = parts[p];
      }
      if (split(ctx, fused, f->n_parts, names, rows[g]) < 0) return -1;
    }
  return 0;
}
