/* See harmony.h. */
#include "harmony.h"

#include <string.h>

#include "util/json_text.h"

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
                     .part = MKC_PART_REPLY,
                     .opening = 1,
                     .in_header = 1};
  return h->channel >= 0 && h->message >= 0 ? 0 : -1;
}

/* The recipient the header names (" to=functions.f", before or after the
 * channel) into h->recipient: 1, or 0 when it names none. */
static int read_recipient(mkc_harmony *h) {
  h->head[h->n_head] = '\0';
  const char *to = strstr(h->head, "to=");
  while (to && to > h->head && to[-1] != ' ') to = strstr(to + 1, "to=");
  if (!to) return 0;
  to += 3;
  size_t k = 0;
  while (to[k] && to[k] != ' ') k++;
  if (k == 0 || k >= sizeof h->recipient) return 0; /* a name cut short would call another */
  memcpy(h->recipient, to, k);
  h->recipient[k] = '\0';
  return 1;
}

/* The opening's text (held, then this piece): still possibly a recipient
 * (blanks, then a start of "to=", or "to=" and a name)? Else it is given
 * back as reply, all of it: *text, *n moved to it. */
static int opening_text(mkc_harmony *h, const char **text, size_t *n) {
  int fits = h->n_head + *n < sizeof h->head;
  if (fits) {
    memcpy(h->head + h->n_head, *text, *n);
    h->n_head += *n;
  }
  size_t i = 0;
  while (i < h->n_head && mkc_json_space(h->head[i])) i++;
  size_t rest = h->n_head - i;
  const char *t = h->head + i;
  int may_be = fits && (rest < 3 ? memcmp(t, "to=", rest) == 0
                                 : memcmp(t, "to=", 3) == 0 && rest < 3 + sizeof h->recipient &&
                                       !memchr(t, '\n', rest));
  if (may_be) return MKC_PART_HEADER;
  if (fits) *text = h->head, *n = h->n_head;
  h->opening = h->in_header = 0;
  h->n_head = 0;
  return MKC_PART_REPLY;
}

int mkc_harmony_push(mkc_harmony *h, int id, const char **text, size_t *n) {
  if (id < 0 && h->opening) { /* the answer ended in its opening: what it held is reply */
    if (opening_text(h, text, n) == MKC_PART_HEADER) *text = h->head, *n = h->n_head;
    h->opening = h->in_header = 0;
    return MKC_PART_REPLY;
  }
  if (id < 0) return h->part;
  if (h->opening && id != h->start && id != h->channel && id != h->message && id != h->constrain &&
      id != h->end && id != h->ret && id != h->call)
    return opening_text(h, text, n);
  h->opening = 0;
  if (id == h->start || id == h->channel) {
    /* a header: the role (and a recipient), then the channel's name */
    h->part = MKC_PART_HEADER;
    h->naming = id == h->channel;
    h->n_name = 0;
    if (id == h->start || !h->in_header) h->n_head = 0;
    if (h->n_head + 1 < sizeof h->head) h->head[h->n_head++] = ' '; /* the sections apart */
    h->in_header = 1;
    return MKC_PART_HEADER;
  }
  if (id == h->constrain) {
    h->naming = 0; /* the content type of a tool call's arguments follows */
    if (h->n_head + 1 < sizeof h->head) h->head[h->n_head++] = ' ';
    return MKC_PART_HEADER;
  }
  if (id == h->message) {
    h->name[h->n_name] = '\0';
    h->part = read_recipient(h)                      ? MKC_PART_CALL
              : strncmp(h->name, "analysis", 8) == 0 ? MKC_PART_REASONING
                                                     : MKC_PART_REPLY;
    h->naming = h->in_header = 0;
    return MKC_PART_HEADER;
  }
  if (id == h->end || id == h->ret || id == h->call) {
    /* text after a message and before the next header is shown, not lost */
    h->part = MKC_PART_REPLY;
    h->naming = h->in_header = 0;
    return MKC_PART_HEADER;
  }
  if (h->in_header)
    for (size_t i = 0; i < *n && h->n_head + 1 < sizeof h->head; i++)
      h->head[h->n_head++] = (*text)[i];
  if (h->naming)
    for (size_t i = 0; i < *n && h->n_name + 1 < sizeof h->name; i++)
      h->name[h->n_name++] = (*text)[i];
  return h->part;
}
