/* Drafts from a head conditioned on the target's hidden state
 * (graphs/draft_head.lua; EAGLE's idea, a whole block per step as a
 * block-diffusion drafter makes it). The target's last step left, at the
 * input whose logits chose the history's last token, its hidden state
 * (mkc_session_hidden); the head takes that token then mask tokens, that
 * hidden state as every input's feature, and drafts the token after each
 * input in one step of its own kernel. Nothing carries from one block to the
 * next (the head's cache starts empty each time), so there is nothing to roll
 * back. */
#include "draft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct head_drafter {
  mkc_drafter base;
  mkc_session *head;   /* owned */
  const mkc_graph *g;  /* the head's */
  mkc_session *target; /* the target's session: its last step's hidden states */
  int mask_token, dim; /* dim: the target's */
  int n_layers;        /* the target layers whose outputs make the feature, in order */
  int layers[MKC_KEEP_MAX];
  float *feature; /* [g->t_max][n_layers * dim] */
} head_drafter;

static int head_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  head_drafter *h = (head_drafter *)d;
  int t = mkc_session_last_choice(h->target);
  /* no hidden state behind the history's last token (rounds, a rewind): no drafts now */
  if (n < 1 || t < 0) return 0;
  if (k > h->g->t_max) k = h->g->t_max;
  size_t n_feat = (size_t)h->n_layers * h->dim; /* the layers' outputs one after another */
  for (int j = 0; j < h->n_layers; j++)
    if (mkc_session_hidden_layer(h->target, h->layers[j], t, h->feature + (size_t)j * h->dim) != 0)
      return -1;
  for (int i = 1; i < k; i++)
    memcpy(h->feature + i * n_feat, h->feature, n_feat * sizeof *h->feature);
  int in[MKC_T_CAP];
  in[0] = hist[n - 1];
  for (int i = 1; i < k; i++) in[i] = h->mask_token;
  mkc_session_reset(h->head);
  mkc_step_result r;
  if (mkc_session_set_feature(h->head, h->feature, k) != 0 ||
      mkc_session_step(h->head, in, k, k - 1, &r) != 0)
    return -1;
  d->steps++;
  if (r.status != MKC_STATUS_OK) {
    fprintf(stderr, "mkc: error: %s: the head's step failed (status %d)\n", d->name, r.status);
    return -1;
  }
  /* the kernel's argmax at each input: k ints read back, not k rows of logits */
  if (mkc_session_choices(h->head, out, k) != 0) return -1;
  int made = 0;
  while (made < k && out[made] >= 0) made++; /* drafts end where nothing finite won */
  return made;
}

static mkc_session *head_session(mkc_drafter *d) { return ((head_drafter *)d)->head; }

static void head_close(mkc_drafter *d) {
  head_drafter *h = (head_drafter *)d;
  mkc_session_close(h->head);
  free(h->feature);
  free(h);
}

static const mkc_drafter_ops HEAD = {
    .propose = head_propose, .session = head_session, .close = head_close};

mkc_drafter *mkc_drafter_head(mkc_session *head, const mkc_graph *g, mkc_session *target,
                              const mkc_graph *target_g, const int *layers, int n_layers,
                              int mask_token, const char *name) {
  int last = target_g->n_layers - 1, feature_n = g->feature_n, kept = 1;
  if (n_layers == 0) layers = &last, n_layers = 1;
  for (int j = 0; j < n_layers && j < MKC_KEEP_MAX; j++) {
    int found = layers[j] == last;
    for (int k = 0; k < target_g->n_keep; k++) found |= target_g->keep_layers[k] == layers[j];
    kept &= found;
  }
  const char *bad = feature_n == 0 ? "has no feature (g.feature)"
                    : n_layers > MKC_KEEP_MAX || !kept
                        ? "reads target layers whose outputs the target's kernel does not keep"
                    : feature_n != n_layers * target_g->dim
                        ? "reads a feature of another size than the target layers' outputs"
                    : g->vocab != target_g->vocab ? "has another vocabulary than the target's"
                    : mask_token < 0 || mask_token >= g->vocab
                        ? "has a mask token outside its vocabulary"
                        : NULL;
  if (bad) {
    fprintf(stderr,
            "mkc: error: the drafter head %s %s (feature %d, %d target layers of dim %d; vocab "
            "%d, target's %d; mask token %d)\n",
            g->graph_path, bad, feature_n, n_layers, target_g->dim, g->vocab, target_g->vocab,
            mask_token);
    mkc_session_close(head);
    return NULL;
  }
  head_drafter *h = calloc(1, sizeof *h);
  float *feature = calloc((size_t)g->t_max * feature_n, sizeof *feature);
  if (!h || !feature) {
    fprintf(stderr, "mkc: error: out of memory opening the drafter (%s)\n", name);
    free(h);
    free(feature);
    mkc_session_close(head);
    return NULL;
  }
  h->base.ops = &HEAD;
  snprintf(h->base.name, sizeof h->base.name, "%s", name);
  h->head = head;
  h->g = g;
  h->target = target;
  h->mask_token = mask_token;
  h->dim = target_g->dim;
  h->n_layers = n_layers;
  memcpy(h->layers, layers, (size_t)n_layers * sizeof *layers);
  h->feature = feature;
  return &h->base;
}
