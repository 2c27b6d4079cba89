/* See conversation.h. */
#include "conversation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int oom(void) {
  fprintf(stderr, "mkc: error: out of memory in the conversation\n");
  return -1;
}

static int add_msg(mkc_conversation *c, const char *role, const char *content) {
  if (c->n_msgs == c->cap_msgs) {
    int cap = c->cap_msgs ? 2 * c->cap_msgs : 8;
    mkc_chat_msg *m = realloc(c->msgs, (size_t)cap * sizeof *m);
    if (!m) return oom();
    c->msgs = m;
    c->cap_msgs = cap;
  }
  char *r = strdup(role), *t = strdup(content);
  if (!r || !t) {
    free(r);
    free(t);
    return oom();
  }
  c->msgs[c->n_msgs++] = (mkc_chat_msg){.role = r, .content = t};
  return 0;
}

static int add_ids(mkc_conversation *c, const int *ids, int n) {
  if (c->n_hist + n > c->cap_hist) {
    int cap = c->cap_hist ? c->cap_hist : 256;
    while (cap < c->n_hist + n) cap *= 2;
    int *h = realloc(c->hist, (size_t)cap * sizeof *h);
    if (!h) return oom();
    c->hist = h;
    c->cap_hist = cap;
  }
  memcpy(c->hist + c->n_hist, ids, (size_t)n * sizeof *ids);
  c->n_hist += n;
  return 0;
}

static int add_text(mkc_conversation *c, const char *s) {
  size_t a = c->text ? strlen(c->text) : 0, b = strlen(s);
  char *t = realloc(c->text, a + b + 1);
  if (!t) return oom();
  memcpy(t + a, s, b + 1);
  c->text = t;
  return 0;
}

int mkc_conversation_init(mkc_conversation *c, const mkc_tokenizer *tok, int family,
                          const char *system) {
  memset(c, 0, sizeof *c);
  c->tok = tok;
  c->family = family;
  if (add_text(c, "") != 0) return -1;
  return system ? add_msg(c, "system", system) : 0;
}

int mkc_conversation_options(mkc_conversation *c, const char *effort, int no_reasoning) {
  mkc_chat_opts o = {.reasoning_effort = effort, .no_reasoning = no_reasoning};
  char why[256];
  int refused = mkc_chat_check_opts(c->family, &o, why, sizeof why);
  if (refused == MKC_CHAT_OPT_EFFORT)
    fprintf(stderr, "mkc: error: --reasoning-effort %s: %s\n", effort, why);
  else if (refused)
    fprintf(stderr, "mkc: error: --reasoning-budget 0: %s\n", why);
  if (refused) return -1;
  c->opts = o;
  return 0;
}

/* text -> ids appended to the history; BOS first when the history is empty
 * and the model wants one the text does not already spell. */
static int append_tokens(mkc_conversation *c, const char *text) {
  int *ids = NULL;
  int n = mkc_tokenizer_encode(c->tok, text, strlen(text), 0, 1, &ids);
  if (n < 0) return -1;
  int bos = mkc_tokenizer_bos(c->tok), rc = 0;
  if (c->n_hist == 0 && mkc_tokenizer_add_bos(c->tok) && bos >= 0 && (n == 0 || ids[0] != bos))
    rc = add_ids(c, &bos, 1);
  if (rc == 0) rc = add_ids(c, ids, n);
  free(ids);
  return rc;
}

/* The history becomes full's tokens, the text it spells full (taken); *n_kept: how many of
 * the earlier tokens it starts with, which stay cached. */
static int rewrite(mkc_conversation *c, char *full, int *n_kept) {
  int *old = c->hist, n_old = c->n_hist;
  c->hist = NULL;
  c->n_hist = c->cap_hist = 0;
  int rc = append_tokens(c, full), k = 0;
  while (rc == 0 && k < n_old && k < c->n_hist && old[k] == c->hist[k]) k++;
  *n_kept = k;
  free(old);
  free(c->text);
  c->text = full;
  return rc;
}

int mkc_conversation_user(mkc_conversation *c, const char *content, int *n_kept) {
  *n_kept = c->n_hist;
  if (add_msg(c, "user", content) != 0) return -1;
  char *full = mkc_chat_render_with(c->family, c->msgs, c->n_msgs, 1, &c->opts);
  if (!full) return -1;
  size_t seen = strlen(c->text);
  /* The template changed text already read (it trims answers, say): the
   * history becomes the whole rendering; what matches stays cached. */
  if (strncmp(full, c->text, seen) != 0) return rewrite(c, full, n_kept);
  int rc = append_tokens(c, full + seen);
  free(c->text);
  c->text = full; /* what the history spells now */
  return rc;
}

int mkc_conversation_fit(mkc_conversation *c, int limit, int *n_kept, int *dropped) {
  mkc_chat_fit f;
  *n_kept = c->n_hist, *dropped = 0;
  if (mkc_chat_fit_into(c->family, c->msgs, c->n_msgs, &c->opts, c->tok, limit, &f) != 0) return -1;
  if (!f.dropped) {
    free(f.text);
    return 0;
  }
  /* the messages left out go: the system's before the cut stay, in order */
  int m = 0;
  for (int i = 0; i < c->n_msgs; i++)
    if (i >= f.first || !strcmp(c->msgs[i].role, "system")) {
      c->msgs[m++] = c->msgs[i];
    } else {
      free((char *)c->msgs[i].role);
      free((char *)c->msgs[i].content);
    }
  c->n_msgs = m;
  *dropped = f.dropped;
  return rewrite(c, f.text, n_kept);
}

int mkc_conversation_answer(mkc_conversation *c, const int *ids, int n, const char *text) {
  if (add_ids(c, ids, n) != 0 || add_msg(c, "assistant", text) != 0) return -1;
  /* The text the history now spells: the answer, then its end-of-generation
   * token as the template writes it (e.g. "<|im_end|>"). */
  char *spelled = mkc_tokenizer_decode(c->tok, ids, n, 1);
  if (!spelled) return oom();
  int rc = add_text(c, spelled);
  free(spelled);
  return rc;
}

void mkc_conversation_free(mkc_conversation *c) {
  for (int i = 0; i < c->n_msgs; i++) {
    free((char *)c->msgs[i].role);
    free((char *)c->msgs[i].content);
  }
  free(c->msgs);
  free(c->text);
  free(c->hist);
  memset(c, 0, sizeof *c);
}
