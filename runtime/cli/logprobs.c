/* See logprobs.h. */
#include "logprobs.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>

/* A token's own text, special tokens spelled out; "" without a tokenizer. */
static char *token_text(const mkc_tokenizer *tok, int id) {
  char *s = tok && id >= 0 ? mkc_tokenizer_decode(tok, &id, 1, 1) : NULL;
  return s ? s : calloc(1, 1);
}

static cJSON *token_json(const mkc_tokenizer *tok, int id, const float *lp) {
  cJSON *o = cJSON_CreateObject();
  char *text = token_text(tok, id);
  cJSON_AddNumberToObject(o, "id", id);
  cJSON_AddStringToObject(o, "text", text ? text : "");
  if (lp) cJSON_AddNumberToObject(o, "logprob", *lp);
  free(text);
  return o;
}

void mkc_print_token(const mkc_tokenizer *tok, int json, int id, const float *lp, const int *ids,
                     const float *lps, int n) {
  if (json) {
    cJSON *o = token_json(tok, id, lp);
    if (n > 0) {
      cJSON *top = cJSON_AddArrayToObject(o, "top");
      for (int i = 0; i < n; i++)
        if (ids[i] >= 0) cJSON_AddItemToArray(top, token_json(tok, ids[i], &lps[i]));
    }
    char *line = cJSON_PrintUnformatted(o);
    if (line) printf("%s\n", line);
    fflush(stdout);
    free(line);
    cJSON_Delete(o);
    return;
  }
  if (n <= 0) return;
  /* The texts as JSON strings: quoted and escaped, whatever bytes they hold. */
  cJSON *s = cJSON_CreateString("");
  char *text = token_text(tok, id);
  cJSON_SetValuestring(s, text);
  char *q = cJSON_PrintUnformatted(s);
  fprintf(stderr, "mkc: token %d %s logprob %.4f; top:", id, q ? q : "", *lp);
  free(q);
  free(text);
  for (int i = 0; i < n && ids[i] >= 0; i++) {
    text = token_text(tok, ids[i]);
    cJSON_SetValuestring(s, text);
    q = cJSON_PrintUnformatted(s);
    fprintf(stderr, "%s %d %s %.4f", i ? "," : "", ids[i], q ? q : "", lps[i]);
    free(q);
    free(text);
  }
  fputc('\n', stderr);
  cJSON_Delete(s);
}
