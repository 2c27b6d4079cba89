/* llama-server's GET /props and POST /apply-template, Anthropic's POST
 * /v1/messages/count_tokens (serve.h): what a client asks a server before it sends a request:
 * the context size and default options, the chat template, and a conversation's prompt as the
 * template renders it, or its length in tokens. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve.h"
#include "backend/sampling_more.h"
#include "model/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/version.h"

/* A token's text, or "" without the token or a tokenizer. */
static void add_token(cJSON *o, const char *name, const mkc_tokenizer *tok, int id) {
  char *text = tok && id >= 0 ? mkc_tokenizer_decode(tok, &id, 1, 1) : NULL;
  cJSON_AddStringToObject(o, name, text ? text : "");
  free(text);
}

/* default_generation_settings.params: the server's options under llama-server's names. */
static cJSON *params(const mkc_server *sv) {
  const mkc_sampling *b = &sv->base;
  cJSON *p = cJSON_CreateObject();
  if (sv->fixed_seed)
    cJSON_AddNumberToObject(p, "seed", (double)((unsigned long long)b->seed_hi << 32 | b->seed_lo));
  else
    cJSON_AddNumberToObject(p, "seed", -1); /* drawn per request, as llama-server's default */
  cJSON_AddNumberToObject(p, "temperature", b->temp);
  cJSON_AddNumberToObject(p, "top_k", b->top_k);
  cJSON_AddNumberToObject(p, "top_p", b->top_p);
  cJSON_AddNumberToObject(p, "min_p", b->min_p);
  cJSON_AddNumberToObject(p, "repeat_last_n", b->repeat_last_n);
  cJSON_AddNumberToObject(p, "repeat_penalty", b->repeat_penalty);
  cJSON_AddNumberToObject(p, "presence_penalty", b->presence_penalty);
  cJSON_AddNumberToObject(p, "frequency_penalty", b->frequency_penalty);
  for (int k = 0; k < MKC_SAMPLING_MORE_OPTIONS; k++)
    cJSON_AddNumberToObject(p, mkc_sampling_more_options[k].field,
                            mkc_sampling_more_get(&sv->base_more, k));
  cJSON *breakers = cJSON_AddArrayToObject(p, "dry_sequence_breakers");
  for (int k = 0; k < sv->base_more.n_breakers; k++)
    cJSON_AddItemToArray(breakers, cJSON_CreateString(sv->base_more.breakers[k]));
  int n_predict = sv->c->have_n ? sv->c->n_gen : -1;
  cJSON_AddNumberToObject(p, "max_tokens", n_predict);
  cJSON_AddNumberToObject(p, "n_predict", n_predict);
  cJSON_AddNumberToObject(p, "n_probs", 0);
  cJSON_AddBoolToObject(p, "ignore_eos", 0);
  cJSON_AddBoolToObject(p, "stream", 0);
  cJSON_AddNumberToObject(p, "speculative.n_max", sv->c->draft_max);
  cJSON_AddNumberToObject(p, "speculative.n_min", sv->c->draft_min);
  return p;
}

void mkc_serve_props(const mkc_server *sv, int fd) {
  const mkc_tokenizer *tok = sv->m->file.tok;
  cJSON *o = cJSON_CreateObject(), *d = cJSON_AddObjectToObject(o, "default_generation_settings");
  cJSON_AddItemToObject(d, "params", params(sv));
  cJSON_AddNumberToObject(d, "n_ctx", sv->m->g.max_ctx);
  cJSON_AddNumberToObject(o, "total_slots", sv->c->slots > 0 ? sv->c->slots : 1);
  cJSON_AddStringToObject(o, "model_alias", sv->name);
  cJSON_AddStringToObject(o, "model_path", sv->c->model_path ? sv->c->model_path : "");
  cJSON *mod = cJSON_AddObjectToObject(o, "modalities");
  cJSON_AddBoolToObject(mod, "vision", 0);
  cJSON_AddBoolToObject(mod, "video", 0);
  cJSON_AddBoolToObject(mod, "audio", 0);
  /* the model's own template text; mkc renders its family's (chat_template.h) */
  const char *tmpl = sv->m->file.chat_template;
  cJSON_AddStringToObject(o, "chat_template", tmpl ? tmpl : "");
  cJSON_AddStringToObject(o, "chat_template_family",
                          sv->family >= 0 ? mkc_chat_family_name(sv->family) : "");
  add_token(o, "bos_token", tok, tok ? mkc_tokenizer_bos(tok) : -1);
  add_token(o, "eos_token", tok, tok ? mkc_tokenizer_eos(tok) : -1);
  cJSON_AddStringToObject(o, "build_info", "mkc " MKC_VERSION);
  cJSON_AddBoolToObject(o, "endpoint_slots", !sv->c->no_slots); /* GET /slots */
  cJSON_AddBoolToObject(o, "endpoint_props", 0);                /* POST /props: not answered */
  cJSON_AddBoolToObject(o, "endpoint_metrics", 1);
  cJSON_AddBoolToObject(o, "is_sleeping", 0);
  mkc_respond_json(fd, 200, o);
}

void mkc_serve_apply_template(const mkc_server *sv, int fd, const mkc_http_req *req) {
  char why[400];
  mkc_api_req r;
  if (mkc_api_parse(req->body, req->body_len, 1, &r, why, sizeof why) != 0) {
    mkc_respond_error(fd, 400, why);
    return;
  }
  char *text = sv->m->file.tok ? mkc_serve_chat_text(sv, &r, why, sizeof why) : NULL;
  if (!sv->m->file.tok) snprintf(why, sizeof why, "%s has no tokenizer nor template", sv->name);
  mkc_api_req_free(&r);
  if (!text) {
    mkc_respond_error(fd, 400, why);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "prompt", text);
  free(text);
  mkc_respond_json(fd, 200, o);
}

void mkc_serve_count_tokens(mkc_server *sv, int fd, const mkc_http_req *req, int api) {
  char why[400];
  mkc_api_req r;
  void (*refuse)(int, int, const char *) =
      api == MKC_COUNT_ANTHROPIC ? mkc_respond_anthropic_error : mkc_respond_error;
  int parsed = api == MKC_COUNT_ANTHROPIC
                   ? mkc_api_parse_anthropic_count(req->body, req->body_len, &r, why, sizeof why)
                   : mkc_api_parse_responses(req->body, req->body_len, 1, api == MKC_COUNT_CHAT, &r,
                                             why, sizeof why);
  if (parsed != 0) {
    refuse(fd, 400, why);
    return;
  }
  /* the prompt a request of these messages would be given, read as the job reads it; one
   * longer than the context is counted too (a client asks to know that) */
  int n = 0, *ids = mkc_serve_prompt(sv, &r, &n, why, sizeof why);
  mkc_api_req_free(&r);
  if (!ids) {
    refuse(fd, strstr(why, "memory") ? 500 : 400, why);
    return;
  }
  free(ids);
  cJSON *o = cJSON_CreateObject();
  if (api != MKC_COUNT_ANTHROPIC) cJSON_AddStringToObject(o, "object", "response.input_tokens");
  cJSON_AddNumberToObject(o, "input_tokens", n);
  mkc_respond_json(fd, 200, o);
}

const char *mkc_serve_lora_asked(const mkc_loaded_model *m, const cJSON *list) {
  if (!cJSON_IsArray(list)) return "expected a list of {\"id\", \"scale\"} (llama-server's)";
  float asked[MKC_LORA_MAX] = {0}; /* llama-server's: an adapter left out is set to 0 */
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id"),
                *scale = cJSON_GetObjectItemCaseSensitive(e, "scale");
    if (!cJSON_IsNumber(id) || id->valueint < 0 || id->valueint >= m->n_lora ||
        id->valuedouble != id->valueint || (scale && !cJSON_IsNumber(scale)))
      return "each entry is {\"id\": an adapter's id (GET /lora-adapters), \"scale\": a number}";
    asked[id->valueint] = scale ? (float)scale->valuedouble : 0; /* llama-server's default */
  }
  for (int k = 0; k < m->n_lora; k++)
    if (asked[k] != m->lora[k].scale)
      return "mkc merges adapters into the weights at load: their scales are fixed (start the "
             "server with --lora-scaled FILE:SCALE for another; an adapter left out asks 0)";
  return NULL;
}

void mkc_serve_lora_adapters(mkc_server *sv, int fd, const mkc_http_req *req) {
  const mkc_loaded_model *m = sv->m;
  int post = !strcmp(req->method, "POST");
  if (!post && strcmp(req->method, "GET") != 0) {
    mkc_respond_error(fd, 405, "use GET or POST");
    return;
  }
  if (post) { /* the scales in effect may be asked again; others cannot be had */
    cJSON *body = cJSON_ParseWithLength(req->body, req->body_len);
    const char *why = mkc_serve_lora_asked(m, body);
    cJSON_Delete(body);
    if (why) {
      mkc_respond_error(fd, 400, why);
      return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "success", 1);
    mkc_respond_json(fd, 200, o);
    return;
  }
  cJSON *all = cJSON_CreateArray();
  for (int k = 0; k < m->n_lora; k++) { /* llama-server's fields */
    const char *task = "", *prefix = "";
    if (m->lora[k].f) { /* a GGUF adapter's metadata (a PEFT folder has none of them) */
      mkc_gguf_get_str(m->lora[k].f, "adapter.lora.task_name", &task);
      mkc_gguf_get_str(m->lora[k].f, "adapter.lora.prompt_prefix", &prefix);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", k);
    cJSON_AddStringToObject(o, "path", m->lora[k].path);
    cJSON_AddNumberToObject(o, "scale", m->lora[k].scale);
    cJSON_AddStringToObject(o, "task_name", task);
    cJSON_AddStringToObject(o, "prompt_prefix", prefix);
    cJSON_AddItemToArray(all, o);
  }
  mkc_respond_json(fd, 200, all);
}
