/* mkc serve's answers as a client reads them, for tests of what a chat's
 * answer carries (test_reasoning, test_tools): a small byte-level vocabulary
 * with gpt-oss's harmony control tokens, Qwen's think tags and tool-call
 * tags, the kinds of chat request (OpenAI's and ollama's, whole and streamed),
 * an answer's tokens fed to serve_answer.c as the decode loop feeds
 * them, and the JSON written to the socket read back. */
#ifndef MKC_TEST_SERVE_ANSWERS_H
#define MKC_TEST_SERVE_ANSWERS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/serve_answer.h"
#include "model/reasoning.h"
#include "tokenizer/impl.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

static const char *const SPECIALS[] = {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>",
                                       "<|end|>",   "<|return|>",  "<|call|>",    "<|endoftext|>"};
#define N_SPECIALS ((int)(sizeof SPECIALS / sizeof *SPECIALS))

/* Qwen's think and tool-call tags: added tokens, not special ones (its tokenizer.json). */
static const char *const TAGS[] = {"<think>", "</think>", "<tool_call>", "</tool_call>"};
#define N_TAGS ((int)(sizeof TAGS / sizeof *TAGS))

/* The 256 byte tokens, then the specials and the tags, but `without`. */
static mkc_tokenizer *vocabulary(const char *without) {
  cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
  cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
  cJSON_AddArrayToObject(model, "merges");
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  cJSON_AddStringToObject(model, "type", "BPE");
  for (int b = 0; b < 256; b++) {
    char c[5];
    c[mkc_utf8_put(mkc_bpe_byte_char(b), c)] = '\0';
    cJSON_AddNumberToObject(vocab, c, b);
  }
  int id = 256;
  for (int k = 0; k < N_SPECIALS + N_TAGS; k++) {
    const char *name = k < N_SPECIALS ? SPECIALS[k] : TAGS[k - N_SPECIALS];
    if (without && strcmp(name, without) == 0) continue;
    cJSON_AddNumberToObject(vocab, name, id);
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "id", id++);
    cJSON_AddStringToObject(t, "content", name);
    cJSON_AddBoolToObject(t, "special", k < N_SPECIALS);
    cJSON_AddItemToArray(added, t);
  }
  cJSON_AddItemToObject(root, "pre_tokenizer",
                        cJSON_Parse("{\"type\": \"ByteLevel\", \"add_prefix_space\": false}"));
  char *json = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  mkc_tokenizer *t = json ? mkc_tok_from_json(json, strlen(json), NULL, 0, "harmony") : NULL;
  free(json);
  return t;
}

/* The kinds of chat request: OpenAI's and ollama's, whole and streamed, with
 * where their reply and reasoning are. */
static const struct {
  int ollama, stream;
  const char *name;
  const char *const content[4], *const thought[4];
} KINDS[] = {
    {0,
     0,
     "OpenAI's chat",
     {"choices", "message", "content"},
     {"choices", "message", "reasoning_content"}},
    {0,
     1,
     "OpenAI's chat, streamed",
     {"choices", "delta", "content"},
     {"choices", "delta", "reasoning_content"}},
    {1, 0, "ollama's chat", {"message", "content"}, {"message", "thinking"}},
    {1, 1, "ollama's chat, streamed", {"message", "content"}, {"message", "thinking"}},
};
#define N_KINDS (sizeof KINDS / sizeof *KINDS)

/* The client: reads the socket to its end into a malloc'd text. */
typedef struct client {
  int fd;
  char *out;
} client;

static void *client_reads(void *arg) {
  client *c = arg;
  size_t len = 0;
  FILE *f = open_memstream(&c->out, &len);
  char buf[4096];
  for (ssize_t k; (k = read(c->fd, buf, sizeof buf)) > 0;)
    if (f) fwrite(buf, 1, (size_t)k, f);
  if (f) fclose(f);
  return NULL;
}

/* What mkc serve writes for answer (a reply's tokens, its end-of-generation
 * token last) to request r, a chat in family's template: the HTTP
 * response, malloc'd. The client reads as the answer is written (a stream
 * of one event per token outgrows the socket's buffer). */
static char *serve(const mkc_tokenizer *t, int family, const mkc_api_req *r, const char *answer) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return NULL;
  client c = {fds[1], NULL};
  pthread_t reader;
  if (pthread_create(&reader, NULL, client_reads, &c) != 0) {
    close(fds[0]), close(fds[1]);
    return NULL;
  }
  int stream = r->stream;
  mkc_answer g;
  int *ids = NULL, n = mkc_tokenizer_encode(t, answer, strlen(answer), 0, 1, &ids);
  if (n > 0 && mkc_answer_open(&g, r, fds[0], t, "gpt-oss", 1, n) == 0) {
    if (mkc_answer_reasoning_apart(r, MKC_REASONING_AUTO)) mkc_answer_reasoning(&g, family);
    mkc_answer_tools(&g, family);
    if (stream) mkc_answer_stream_start(&g);
    for (int i = 0; i < n && !mkc_answer_on_token(&g, ids[i]); i++) {
    }
    mkc_answer_flush(&g);
    mkc_decode_stats st = {0};
    if (stream)
      mkc_answer_stream_end(&g, 5, 0, &st);
    else
      mkc_answer_respond(&g, 5, 0, &st);
    mkc_answer_close(&g);
  }
  free(ids);
  close(fds[0]);
  pthread_join(reader, NULL);
  close(fds[1]);
  return c.out;
}

/* The texts at path (a list of names into nested objects, a number an index into a list; a
 * list met at a name is its first item) of each JSON object in the body (one, or one per
 * "data: " event or line; other lines, such as an "event: " name, are no JSON), joined. */
static void joined(const char *response, const char *const *path, char *out, size_t cap) {
  out[0] = '\0';
  const char *body = response ? strstr(response, "\r\n\r\n") : NULL;
  for (const char *line = body ? body + 4 : NULL; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (strncmp(line, "data: ", 6) == 0) line += 6, len -= 6;
    cJSON *root = cJSON_ParseWithLength(line, len), *o = root;
    for (int k = 0; o && path[k]; k++) {
      int index = path[k][0] >= '0' && path[k][0] <= '9';
      cJSON *item = index ? cJSON_GetArrayItem(o, atoi(path[k]))
                          : cJSON_GetObjectItemCaseSensitive(o, path[k]);
      int next_index = path[k + 1] && path[k + 1][0] >= '0' && path[k + 1][0] <= '9';
      if (cJSON_IsArray(item) && !next_index) item = cJSON_GetArrayItem(item, 0);
      if (!path[k + 1] && cJSON_IsString(item))
        strncat(out, item->valuestring, cap - strlen(out) - 1);
      if (!item) break;
      o = item;
    }
    cJSON_Delete(root);
    line = end ? end + 1 : NULL;
  }
}

#endif
