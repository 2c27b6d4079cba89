/* See infill.h. The layout and the cuts follow llama-server's (its
 * format_prompt_infill), so that an editor plugin written for it (llama.vim,
 * llama.vscode) gets the same prompt, hence the same completion. */
#include "infill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mkc_infill_missing(const mkc_tokenizer *t, char *buf, size_t cap) {
  static const struct {
    int which;
    const char *name;
  } NEED[] = {{MKC_FIM_PRE, "prefix"}, {MKC_FIM_SUF, "suffix"}, {MKC_FIM_MID, "middle"}};
  size_t n = 0;
  if (cap) buf[0] = 0;
  for (size_t k = 0; k < sizeof NEED / sizeof *NEED; k++)
    if (mkc_tokenizer_fim(t, NEED[k].which) < 0 && n < cap)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", NEED[k].name);
  return n > 0;
}

/* A growing list of token ids. */
typedef struct list {
  int *ids;
  int n, cap, oom;
} list;

static void put(list *l, const int *ids, int n) {
  if (l->oom || n <= 0) return;
  if (l->n + n > l->cap) {
    int cap = (l->n + n) * 2;
    int *grown = realloc(l->ids, (size_t)cap * sizeof *grown);
    if (!grown) {
      l->oom = 1;
      return;
    }
    l->ids = grown, l->cap = cap;
  }
  memcpy(l->ids + l->n, ids, (size_t)n * sizeof *ids);
  l->n += n;
}

static void put1(list *l, int id) { put(l, &id, 1); }

/* text's tokens (no BOS; control tokens read only when special) appended. */
static int put_text(list *l, const mkc_tokenizer *t, const char *text, int special) {
  int *ids = NULL,
      n = mkc_tokenizer_encode(t, text ? text : "", text ? strlen(text) : 0, 0, special, &ids);
  if (n < 0) return -1;
  put(l, ids, n);
  free(ids);
  return 0;
}

static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }

int mkc_infill_prompt(const mkc_tokenizer *t, const mkc_infill *in, int **ids) {
  char missing[64];
  *ids = NULL;
  if (mkc_infill_missing(t, missing, sizeof missing)) {
    fprintf(stderr, "mkc: error: the model lacks fill-in-the-middle markers: %s\n", missing);
    return -1;
  }
  int rep = mkc_tokenizer_fim(t, MKC_FIM_REP), sep = mkc_tokenizer_fim(t, MKC_FIM_SEP);
  list extra = {0}, prefix = {0}, suffix = {0}, prompt = {0}, all = {0};
  int rc = 0;
  /* the other files first, as a repository: its name, then each file's name and text */
  if (rep >= 0) {
    put1(&extra, rep);
    rc |= put_text(&extra, t, "myproject\n", 0);
  }
  for (int i = 0; i < in->n_extra && rc == 0; i++) {
    if (sep >= 0) {
      char name[1100];
      snprintf(name, sizeof name, "%s\n", in->extra_names[i] ? in->extra_names[i] : "tmp");
      put1(&extra, sep);
      rc |= put_text(&extra, t, name, 0);
    } else {
      rc |= put_text(&extra, t, "\n\n--- snippet ---\n\n", 0);
    }
    rc |= put_text(&extra, t, in->extra_texts[i], 0);
  }
  if (sep >= 0) { /* the file being edited: llama-server names it "filename" */
    put1(&extra, sep);
    rc |= put_text(&extra, t, "filename\n", 0);
  }
  rc |= put_text(&prefix, t, in->prefix, 0);
  rc |= put_text(&suffix, t, in->suffix, 0);
  if (in->prompt && *in->prompt) rc |= put_text(&prompt, t, in->prompt, 1);
  if (rc == 0) {
    /* the prefix keeps its end, the suffix its start, the extra chunks their end */
    int n_prefix = min_int(prefix.n, 3 * (in->n_batch / 4));
    int n_suffix = min_int(suffix.n, max_int(0, in->n_batch / 4 - (2 + prompt.n)));
    int n_extra = min_int(max_int(0, in->n_ctx - in->n_batch - 2 * in->n_predict), extra.n);
    put(&all, extra.ids + extra.n - n_extra, n_extra);
    int bos = mkc_tokenizer_added_bos(t);
    if (bos >= 0) put1(&all, bos);
    for (int part = 0; part < 2; part++) /* prefix then suffix; spm: suffix then prefix */
      if ((part == 0) != (in->spm != 0)) {
        put1(&all, mkc_tokenizer_fim(t, MKC_FIM_PRE));
        put(&all, prefix.ids + prefix.n - n_prefix, n_prefix);
        put(&all, prompt.ids, prompt.n);
      } else {
        put1(&all, mkc_tokenizer_fim(t, MKC_FIM_SUF));
        put(&all, suffix.ids, n_suffix);
      }
    put1(&all, mkc_tokenizer_fim(t, MKC_FIM_MID));
  }
  int oom = extra.oom || prefix.oom || suffix.oom || prompt.oom || all.oom;
  free(extra.ids), free(prefix.ids), free(suffix.ids), free(prompt.ids);
  if (rc != 0 || oom) {
    if (oom) fprintf(stderr, "mkc: error: out of memory\n");
    free(all.ids);
    return -1;
  }
  *ids = all.ids;
  return all.n;
}
