/* llama-server's GET /slots (serve.h): what a load balancer or a dashboard
 * asks a server, each slot's context and whether it is decoding, and for a
 * slot with a request (the plain server: its last one) that request's
 * figures, options, prompt and text so far, under llama-server's names. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "exec/slots.h"
#include "serve.h"
#include "tokenizer/tokenizer.h"

/* A prompt's text: the tokenizer's, or the ids spelled out (a preset's). */
static char *prompt_text(const mkc_server *sv, const int *ids, int n) {
  const mkc_tokenizer *tok = sv->m->file.tok;
  if (tok) return mkc_tokenizer_decode(tok, ids, n, 1);
  char *s = malloc((size_t)n * 12 + 1), *at = s;
  if (!s) return NULL;
  *at = '\0';
  for (int i = 0; i < n; i++) at += sprintf(at, "%s%d", i ? " " : "", ids[i]);
  return s;
}

/* The request's part of a slot's entry. */
static void add_request(cJSON *o, long id, int n_prompt, int cached, int n_decoded, int n_predict,
                        int processing, const mkc_sampling *opt, int stream, const char *prompt,
                        const char *generated) {
  cJSON_AddNumberToObject(o, "id_task", (double)id);
  cJSON_AddNumberToObject(o, "n_prompt_tokens", n_prompt);
  cJSON_AddNumberToObject(o, "n_prompt_tokens_processed", n_prompt - cached);
  cJSON_AddNumberToObject(o, "n_prompt_tokens_cache", cached);
  cJSON *p = cJSON_AddObjectToObject(o, "params");
  cJSON_AddNumberToObject(p, "n_predict", n_predict);
  cJSON_AddNumberToObject(p, "seed",
                          (double)((unsigned long long)opt->seed_hi << 32 | opt->seed_lo));
  cJSON_AddNumberToObject(p, "temperature", opt->temp);
  cJSON_AddNumberToObject(p, "top_k", opt->top_k);
  cJSON_AddNumberToObject(p, "top_p", opt->top_p);
  cJSON_AddNumberToObject(p, "min_p", opt->min_p);
  cJSON_AddNumberToObject(p, "repeat_last_n", opt->repeat_last_n);
  cJSON_AddNumberToObject(p, "repeat_penalty", opt->repeat_penalty);
  cJSON_AddNumberToObject(p, "presence_penalty", opt->presence_penalty);
  cJSON_AddNumberToObject(p, "frequency_penalty", opt->frequency_penalty);
  cJSON_AddBoolToObject(p, "stream", stream);
  cJSON *next = cJSON_CreateObject();
  cJSON_AddBoolToObject(next, "has_next_token", processing);
  cJSON_AddBoolToObject(next, "has_new_line", generated && strchr(generated, '\n'));
  cJSON_AddNumberToObject(next, "n_remain",
                          processing && n_predict >= 0 ? n_predict - n_decoded : -1);
  cJSON_AddNumberToObject(next, "n_decoded", n_decoded);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "next_token"), next);
  cJSON_AddStringToObject(o, "prompt", prompt ? prompt : "");
  cJSON_AddStringToObject(o, "generated", generated ? generated : "");
}

static cJSON *slot_entry(const mkc_server *sv, int id, int processing) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", id);
  cJSON_AddNumberToObject(o, "n_ctx", sv->m->g.max_ctx);
  cJSON_AddBoolToObject(o, "speculative", sv->c->draft_max > 0 || sv->drafter);
  cJSON_AddBoolToObject(o, "is_processing", processing);
  return o;
}

/* The job in slot s of the --parallel pool, or NULL. */
static const mkc_serve_job *job_in(const mkc_server *sv, int s) {
  const mkc_batch_seq *q = mkc_sched_in_slot(sv->sched, s);
  for (const mkc_serve_job *j = sv->jobs; q && j; j = j->next)
    if (&j->q == q) return j;
  return NULL;
}

void mkc_serve_slot_list(mkc_server *sv, int fd, const mkc_http_req *req) {
  if (strcmp(req->method, "GET") != 0) {
    mkc_respond_error(fd, 405, "use GET");
    return;
  }
  cJSON *all = cJSON_CreateArray();
  int idle = 0;
  /* the plain server's one slot (no request decodes while this is answered), or the pool's */
  int slots = sv->sched ? mkc_slots_count(sv->slots) : 1;
  for (int s = 0; s < slots; s++) {
    const mkc_serve_job *j = sv->sched ? job_in(sv, s) : NULL;
    const mkc_slot_last *last = sv->lasts ? &sv->lasts[s] : &sv->last;
    int processing = j && j->q.stopped == MKC_BATCH_RUNNING;
    cJSON *o = slot_entry(sv, s, processing);
    idle += !processing;
    if (j) { /* its request now */
      char *prompt = prompt_text(sv, j->prompt, j->n_prompt);
      add_request(o, j->id, j->n_prompt, j->q.shared, j->q.n_out, j->n_gen, processing, &j->opt,
                  j->r.stream, prompt, j->g.text);
      free(prompt);
    } else if (last->id) { /* the last one it answered */
      char *prompt = last->prompt ? prompt_text(sv, last->prompt, last->n_prompt) : NULL;
      add_request(o, last->id, last->n_prompt, last->n_cached, last->n_decoded, last->n_predict, 0,
                  &last->opt, last->stream, prompt, last->generated);
      free(prompt);
    }
    cJSON_AddItemToArray(all, o);
  }
  char flag[32];
  if (mkc_http_query(req, "fail_on_no_slot", flag, sizeof flag) == 1 && flag[0] && idle == 0) {
    cJSON_Delete(all);
    mkc_respond_error(fd, 503, "no slot available");
    return;
  }
  mkc_respond_json(fd, 200, all);
}

void mkc_serve_slot_record(mkc_server *sv, int s, const mkc_serve_job *j, int cached,
                           int n_decoded) {
  if (sv->slots && !sv->lasts)
    sv->lasts = calloc((size_t)mkc_slots_count(sv->slots), sizeof *sv->lasts);
  if (sv->slots && !sv->lasts) return; /* out of memory: GET /slots lists no last request */
  mkc_slot_last *last = sv->lasts ? &sv->lasts[s] : &sv->last;
  free(last->prompt);
  free(last->generated);
  last->id = j->id;
  last->n_prompt = j->n_prompt;
  last->n_cached = cached;
  last->n_decoded = n_decoded;
  last->n_predict = j->n_gen;
  last->stream = j->r.stream;
  last->opt = j->opt;
  last->prompt = malloc((size_t)(j->n_prompt > 0 ? j->n_prompt : 1) * sizeof *j->prompt);
  if (last->prompt) memcpy(last->prompt, j->prompt, (size_t)j->n_prompt * sizeof *j->prompt);
  last->generated = j->g.text ? strdup(j->g.text) : NULL;
}

void mkc_serve_slot_records_free(mkc_server *sv) {
  int n = sv->lasts ? mkc_slots_count(sv->slots) : 0;
  for (int s = 0; s < n; s++) free(sv->lasts[s].prompt), free(sv->lasts[s].generated);
  free(sv->lasts);
  free(sv->last.prompt);
  free(sv->last.generated);
}
