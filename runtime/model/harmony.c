/* See harmony.h. */
#include "harmony.h"

#include <string.h>

static int find(const mkc_tokenizer *tok, const char *name) {
  return mkc_tokenizer_find(tok, name, strlen(name));
}

int mkc_harmony_init(mkc_harmony *h, const mkc_tokenizer *tok) {
  *h = (mkc_harmony){.start = find(tok, "<|start|>"),
                     .channel = find(tok, "<|channel|>"),
                     .message = find(tok, "<|message|>"),
                     .constrain = find(tok, "<|constrain|>"),
                     .end = find(tok, "<|end|>"),
                     .ret = find(tok, "<|return|>"),
                     .call = find(tok, "<|call|>"),
                     .part = MKC_PART_REPLY};
  return h->channel >= 0 && h->message >= 0 ? 0 : -1;
}

int mkc_harmony_push(mkc_harmony *h, int id, const char *text, size_t n) {
  if (id < 0) return h->part;
  if (id == h->start || id == h->channel) {
    /* a header: the role (and a recipient), then the channel's name */
    h->part = MKC_PART_HEADER;
    h->naming = id == h->channel;
    h->n_name = 0;
    return MKC_PART_HEADER;
  }
  if (id == h->constrain) {
    h->naming = 0; /* the content type of a tool call's arguments follows */
    return MKC_PART_HEADER;
  }
  if (id == h->message) {
    h->name[h->n_name] = '\0';
    h->part = strncmp(h->name, "analysis", 8) == 0 ? MKC_PART_REASONING : MKC_PART_REPLY;
    h->naming = 0;
    return MKC_PART_HEADER;
  }
  if (id == h->end || id == h->ret || id == h->call) {
    /* text after a message and before the next header is shown, not lost */
    h->part = MKC_PART_REPLY;
    h->naming = 0;
    return MKC_PART_HEADER;
  }
  if (h->naming)
    for (size_t i = 0; i < n && h->n_name + 1 < sizeof h->name; i++) h->name[h->n_name++] = text[i];
  return h->part;
}
