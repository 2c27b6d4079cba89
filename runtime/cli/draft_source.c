/* See draft_source.h. */
#include "draft_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

/* How many of the model draft sources the flags ask for. */
static int model_sources(const mkc_cli *c) {
  return (c->draft_layers > 0) + (c->draft_model_path != NULL) + (c->draft_head != 0);
}

int mkc_draft_source_check(const mkc_cli *c, const char *cmd) {
  char msg[240];
  const char *flag = c->draft_layers       ? "--draft-layers"
                     : c->draft_model_path ? "-md"
                                           : "--draft-head";
  int n = model_sources(c);
  /* rounds draft inside the kernel (prompt lookup or its first layers), at a fixed depth
   * (exec/decode.h) */
  const char *not_with = c->draft_model_path ? "-md"
                         : c->draft_head     ? "--draft-head"
                         : c->draft_adaptive ? "--draft-adaptive"
                         : c->logprobs > 0   ? "--logprobs"
                                             : NULL;
  if (c->draft_p_min > 0 && (!(c->draft_model_path || c->draft_layers) || c->draft_head ||
                             mkc_draft_layers_in_kernel(c))) {
    snprintf(msg, sizeof msg,
             "%s: --draft-p-min: the confidence of a draft model's (-md) or self-speculation's "
             "(--draft-layers) choices, drafted on the host (not with --rounds)",
             cmd);
    return mkc_cli_usage_error("%s", msg);
  }
  if (c->rounds > 1 && not_with) {
    snprintf(msg, sizeof msg,
             "%s: --rounds drafts inside the kernel (prompt lookup, or --draft-layers), at a "
             "fixed depth and without log-probabilities: not with %s",
             cmd, not_with);
    return mkc_cli_usage_error("%s", msg);
  }
  if (n == 0) return 0;
  if (n > 1)
    snprintf(msg, sizeof msg,
             "%s: --draft-layers, -md and --draft-head are draft sources: give one", cmd);
  else if (c->draft_head && c->model_path)
    snprintf(msg, sizeof msg,
             "%s: --draft-head needs a trained head's weights, and mkc reads none yet: it runs "
             "with --preset and --random-weights only",
             cmd);
  else if (c->kernel_dir)
    snprintf(msg, sizeof msg, "%s: --kernel DIR runs the target only; %s needs its own kernel", cmd,
             flag);
  else if (c->draft_max == 0)
    snprintf(msg, sizeof msg, "%s: %s drafts K tokens a step: give --draft-max K (1..31)", cmd,
             flag);
  else
    return 0;
  return mkc_cli_usage_error("%s", msg);
}

/* Every token the same text in both (control tokens spelled out): 0, else
 * -1 after a message naming the first that differs. */
static int same_tokenizer(const mkc_tokenizer *a, const mkc_tokenizer *b, const char *draft,
                          const char *target) {
  int n = mkc_tokenizer_n_vocab(a);
  if (n != mkc_tokenizer_n_vocab(b) || strcmp(mkc_tokenizer_kind(a), mkc_tokenizer_kind(b))) {
    fprintf(stderr,
            "mkc: error: -md %s: its tokenizer (%s, %d tokens) is not the target's (%s, %d "
            "tokens): a draft model needs the target's vocabulary\n",
            draft, mkc_tokenizer_kind(b), mkc_tokenizer_n_vocab(b), mkc_tokenizer_kind(a), n);
    return -1;
  }
  for (int id = 0; id < n; id++) {
    char *x = mkc_tokenizer_decode(a, &id, 1, 1), *y = mkc_tokenizer_decode(b, &id, 1, 1);
    int same = x && y && strcmp(x, y) == 0;
    free(x);
    free(y);
    if (!same) {
      fprintf(stderr,
              "mkc: error: -md %s: token %d is not the same text as in %s: a draft model needs "
              "the target's vocabulary\n",
              draft, id, target);
      return -1;
    }
  }
  return 0;
}

/* -md FILE: opened, and its vocabulary checked against the target's. */
static int open_draft_model(const mkc_cli *c, const mkc_loaded_model *target, mkc_loaded_model *m) {
  const char *path = c->draft_model_path;
  if (mkc_model_file_open(path, &m->file) != 0) return -1;
  const char *target_name = c->model_path ? c->model_path : target->g.preset;
  if (m->file.desc.vocab != target->g.vocab) {
    fprintf(stderr,
            "mkc: error: -md %s: its vocabulary has %d tokens, the target's (%s) %d: a draft "
            "model needs the target's vocabulary\n",
            path, m->file.desc.vocab, target_name, target->g.vocab);
    return -1;
  }
  const mkc_tokenizer *mine = m->file.tok, *theirs = target->file.tok;
  if (mine && theirs) return same_tokenizer(theirs, mine, path, target_name);
  if (mine || theirs)
    fprintf(stderr,
            "mkc: warning: -md %s: only %s has a tokenizer: the draft's token ids are taken to "
            "mean the target's (both have %d)\n",
            path, mine ? path : target_name, target->g.vocab);
  return 0;
}

int mkc_draft_layers_in_kernel(const mkc_cli *c) {
  return c->rounds > 1 && c->draft_layers > 0 ? c->draft_layers : 0;
}

int mkc_draft_source_plan(const mkc_cli *c, const mkc_loaded_model *target, mkc_draft_source *ds) {
  memset(ds, 0, sizeof *ds);
  if (model_sources(c) == 0) return 0;
  mkc_loaded_model *m = &ds->m;
  const mkc_graph *tg = &target->g;
  /* The target's kernel options: its context, step width and KV type. */
  mkc_gen_opts o = {.graph_path = tg->graph_path,
                    .draft_max = tg->t_max - 1,
                    .max_ctx = tg->max_ctx,
                    .kv_dtype = mkc_kv_dtype_name(tg->kv_dtype),
                    .reference_only = c->backend && strcmp(c->backend, "ref") == 0};
  if (tg->slots) { /* a pool of as many slots, each step as wide, whole caches (a rewind) */
    if (c->draft_head) {
      fprintf(stderr, "mkc: error: --draft-head: the slots draft from -md or --draft-layers\n");
      return -1;
    }
    o.slots = tg->slots;
    o.step_rows = tg->step_rows;
    o.ubatch = tg->t_chunk;
  }
  const mkc_model_file *file = c->model_path ? &target->file : NULL;
  char head[4200];
  if (c->draft_head) { /* the head of the target's preset: its own graph, context and sizes */
    snprintf(head, sizeof head, "%s/graphs/draft_head.lua", mkc_home());
    o.graph_path = head;
    o.preset = tg->preset;
    o.max_ctx = 0;
    return mkc_codegen(&o, &m->g, &m->src);
  }
  if (c->draft_layers) {
    if (c->draft_layers >= tg->n_layers) {
      fprintf(stderr,
              "mkc: error: --draft-layers %d: the target has %d layers; self-speculation drafts "
              "with its first 1..%d\n",
              c->draft_layers, tg->n_layers, tg->n_layers - 1);
      return -1;
    }
    o.n_layers = c->draft_layers;
    o.preset = file ? NULL : tg->preset;
    o.model = file ? &file->desc : NULL;
  } else {
    if (open_draft_model(c, target, m) != 0) return -1;
    file = &m->file;
    o.model = &file->desc;
    if (file->desc.ctx_train < tg->max_ctx)
      fprintf(stderr,
              "mkc: warning: -md %s was trained on %d positions; it drafts for a context of %d\n",
              c->draft_model_path, file->desc.ctx_train, tg->max_ctx);
  }
  if (file && !c->dequant) { /* self-speculation reads the target's weights, adapted or not */
    int adapted = file == &target->file && target->n_lora;
    o.weight_type = adapted ? mkc_loaded_weight_type : mkc_model_file_weight_type;
    o.weight_type_ctx = adapted ? (void *)target : (void *)file;
  }
  return mkc_codegen(&o, &m->g, &m->src);
}

/* The draft's weights: a draft model's own, the target's for self-speculation, a head's random
 * ones. NULL after a message. */
static const mkc_weights *draft_weights(const mkc_cli *c, const mkc_loaded_model *target,
                                        mkc_draft_source *ds) {
  mkc_loaded_model *m = &ds->m;
  if (c->draft_model_path) {
    if (mkc_model_file_weights(&m->file, &m->g, &m->w) != 0 ||
        (c->check_tensors && mkc_weights_check(&m->w, c->draft_model_path) != 0))
      return NULL;
    return &m->w;
  }
  /* no trained head exists here: random weights, of the seed after the target's */
  if (c->draft_head) return mkc_weights_random(&m->w, &m->g, c->seed + 1) == 0 ? &m->w : NULL;
  return &target->w; /* self-speculation reads them by name (blk.0..L-1, output_norm, the head) */
}

static void draft_name(const mkc_cli *c, const mkc_loaded_model *target, const mkc_graph *g,
                       char *name, size_t cap) {
  if (c->draft_layers)
    snprintf(name, cap, "self-speculation (first %d of %d layers)", g->n_layers,
             target->g.n_layers);
  else
    snprintf(name, cap, "draft model %s", c->draft_model_path);
}

int mkc_draft_source_start(const mkc_cli *c, const mkc_loaded_model *target, mkc_draft_source *ds) {
  if (model_sources(c) == 0) return 0;
  mkc_loaded_model *m = &ds->m;
  const mkc_weights *w = draft_weights(c, target, ds);
  if (!w) return -1;
  /* the target's backend, as auto resolved it */
  int kind = mkc_backend_kind_from_name(mkc_session_backend(target->s));
  mkc_session *s = mkc_session_open((enum mkc_backend_kind)kind, &m->g, &m->src, w, c->blocks);
  if (!s) return -1;
  char name[sizeof ds->drafter->name];
  if (c->draft_head) {
    snprintf(name, sizeof name, "drafter head (%s, random weights)", m->g.preset);
    ds->drafter = mkc_drafter_head(s, &m->g, target->s, &target->g, NULL, 0, 0, name);
    return ds->drafter ? 0 : -1;
  }
  draft_name(c, target, &m->g, name, sizeof name);
  ds->drafter = mkc_drafter_model(s, &m->g, name);
  if (ds->drafter && c->draft_p_min > 0 &&
      mkc_drafter_model_p_min(ds->drafter, (float)c->draft_p_min) != 0)
    return -1;
  return ds->drafter ? 0 : -1;
}

int mkc_draft_source_start_slots(const mkc_cli *c, const mkc_loaded_model *target,
                                 mkc_draft_source *ds, int kind) {
  if (model_sources(c) == 0) return 0;
  const mkc_weights *w = draft_weights(c, target, ds);
  mkc_slots *pool =
      w ? mkc_slots_open((enum mkc_backend_kind)kind, &ds->m.g, &ds->m.src, w, c->blocks) : NULL;
  if (!pool) return -1;
  char name[sizeof ds->drafter->name];
  draft_name(c, target, &ds->m.g, name, sizeof name);
  ds->pool = mkc_slot_drafter_open(pool, name);
  if (ds->pool && c->draft_p_min > 0 && mkc_slot_drafter_p_min(ds->pool, (float)c->draft_p_min))
    return -1;
  return ds->pool ? 0 : -1;
}

void mkc_draft_source_close(mkc_draft_source *ds) {
  mkc_drafter_close(ds->drafter); /* and its session */
  ds->drafter = NULL;
  mkc_slot_drafter_close(ds->pool); /* and its slots */
  ds->pool = NULL;
  mkc_loaded_close(&ds->m);
}
