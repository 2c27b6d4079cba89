/* llama-perplexity's multiple-choice datasets (choice_tasks.h). */
#include "choice_tasks.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"
#include "util/text.h"

/* The text's lines, split in place: their starts (malloc'd) and count; a last line without a
 * newline counts, an empty text has none. NULL when out of memory (or past INT_MAX / 6). */
static char **split_lines(char *text, size_t len, int *n) {
  size_t count = 0;
  for (size_t i = 0; i < len; i++) count += text[i] == '\n';
  count += len > 0 && text[len - 1] != '\n';
  if (count > INT_MAX / 6) return NULL; /* a count the callers' ints hold, six a task */
  char **lines = malloc((count ? count : 1) * sizeof *lines);
  if (!lines) return NULL;
  *n = 0;
  for (size_t i = 0; i < len;) {
    lines[(*n)++] = text + i;
    char *nl = memchr(text + i, '\n', len - i);
    if (!nl) break; /* the text ends the line: NUL-terminated by the caller's read */
    *nl = '\0';
    i = (size_t)(nl - text) + 1;
  }
  return lines;
}

/* A whole number in [lo, hi] at s, after blanks, before blanks or '\r' only: its value, or -1. */
static int small_number(const char *s, int lo, int hi) {
  while (*s == ' ' || *s == '\t') s++;
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s) return -1;
  while (*end == ' ' || *end == '\t' || *end == '\r') end++;
  return *end || v < lo || v > hi ? -1 : (int)v;
}

int mkc_hellaswag_parse(char *text, size_t len, const char *path, mkc_hellaswag_task **tasks,
                        int *n) {
  int n_lines = 0;
  char **lines = split_lines(text, len, &n_lines);
  *tasks = NULL, *n = 0;
  if (!lines) return mkc_error_in(path, "out of memory");
  int rc = 0;
  if (n_lines == 0 || n_lines % 6)
    rc = mkc_error_in(path,
                      "%d lines, not a whole number of tasks (6 lines each: the context, the "
                      "gold ending's index, 4 endings)",
                      n_lines);
  else if (!(*tasks = malloc((size_t)(n_lines / 6) * sizeof **tasks)))
    rc = mkc_error_in(path, "out of memory");
  for (int t = 0; rc == 0 && t < n_lines / 6; t++) {
    char **l = lines + 6 * t;
    mkc_hellaswag_task *k = &(*tasks)[t];
    k->context = l[0], k->line = 6 * t + 1;
    for (int e = 0; e < 4; e++) k->ending[e] = l[2 + e];
    if ((k->gold = small_number(l[1], 0, 3)) < 0) {
      fprintf(stderr, "mkc: error: %s:%d: the gold ending's index: 0, 1, 2 or 3, not '%s'\n", path,
              6 * t + 2, mkc_shown(l[1]));
      rc = -1;
    }
  }
  free(lines);
  if (rc) {
    free(*tasks);
    *tasks = NULL;
    return -1;
  }
  *n = n_lines / 6;
  return 0;
}

/* Line l as a Winogrande task into k, cut in place; NULL, or why it is not one. */
static const char *winogrande_line(char *l, mkc_winogrande_task *k) {
  char *comma[4];
  int found = 0, quoted = 0;
  for (char *c = l; *c && found < 4; c++) {
    if (quoted)
      quoted = *c != '"';
    else if (*c == '"')
      quoted = 1;
    else if (*c == ',')
      comma[found++] = c;
  }
  if (found < 4) return "not 5 fields (INDEX,SENTENCE,CHOICE1,CHOICE2,ANSWER)";
  char *sentence = comma[0] + 1, *end = comma[1];
  if (*sentence == '"' && end - sentence >= 2 && end[-1] == '"') sentence++, end--;
  char *blank = memchr(sentence, '_', (size_t)(end - sentence));
  if (!blank) return "the sentence has no '_' for a choice";
  if ((k->answer = small_number(comma[3] + 1, 1, 2)) < 0) return "the answer is not 1 or 2";
  *blank = *end = *comma[1] = *comma[2] = *comma[3] = '\0';
  k->first = sentence, k->second = blank + 1;
  k->choice[0] = comma[1] + 1, k->choice[1] = comma[2] + 1;
  return NULL;
}

int mkc_winogrande_parse(char *text, size_t len, const char *path, mkc_winogrande_task **tasks,
                         int *n) {
  int n_lines = 0, skipped = 0;
  char **lines = split_lines(text, len, &n_lines);
  *tasks = NULL, *n = 0;
  if (!lines || !(*tasks = malloc((size_t)(n_lines ? n_lines : 1) * sizeof **tasks))) {
    free(lines);
    return mkc_error_in(path, "out of memory");
  }
  for (int i = 0; i < n_lines; i++) {
    mkc_winogrande_task *k = &(*tasks)[*n];
    const char *why = winogrande_line(lines[i], k);
    if (!why) {
      k->line = i + 1;
      ++*n;
    } else if (++skipped <= 3) {
      fprintf(stderr, "mkc: warning: %s:%d: %s: skipped, as llama-perplexity skips it\n", path,
              i + 1, why);
    }
  }
  if (skipped > 3) fprintf(stderr, "mkc: warning: %s: %d lines skipped in all\n", path, skipped);
  free(lines);
  if (*n == 0) {
    free(*tasks);
    *tasks = NULL;
    return mkc_error_in(path, "no Winogrande task in %d lines", n_lines);
  }
  return 0;
}

static uint32_t u32_at(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int mkc_mc_count(const unsigned char *data, size_t n, const char *path, int *n_task) {
  *n_task = 0;
  if (n < 4) return mkc_error_in(path, "%zu bytes: no task count", n);
  uint32_t count = u32_at(data);
  if (count == 0) return mkc_error_in(path, "no tasks");
  if ((uint64_t)count * 4 + 4 > n)
    return mkc_error_in(path, "%u tasks, whose positions pass the end of its %zu bytes", count, n);
  for (uint32_t i = 0; i < count; i++)
    if (u32_at(data + 4 + 4 * (size_t)i) >= n)
      return mkc_error_in(path, "task %u's position %u is past the end of its %zu bytes", i,
                          u32_at(data + 4 + 4 * (size_t)i), n);
  *n_task = (int)count;
  return 0;
}

size_t mkc_mc_position(const unsigned char *data, int i) {
  return u32_at(data + 4 + 4 * (size_t)i);
}

/* A string at *at (a u32 length and its bytes) copied, NUL-terminated; NULL when cut short or
 * out of memory. */
static char *string_at(const unsigned char *data, size_t n, size_t *at) {
  if (n - *at < 4) return NULL;
  uint32_t len = u32_at(data + *at);
  if (n - *at - 4 < len) return NULL;
  char *s = malloc((size_t)len + 1);
  if (s) memcpy(s, data + *at + 4, len), s[len] = '\0';
  *at += 4 + (size_t)len;
  return s;
}

/* A set of answers at *at into t (mc1), or read past (t NULL: mc2). NULL, or why not. */
static const char *answers_at(const unsigned char *data, size_t n, size_t *at, mkc_mc_task *t) {
  if (n - *at < 4) return "cut short";
  uint32_t count = u32_at(data + *at);
  *at += 4;
  if (count > 100) return "more than 100 answers";
  if (t) {
    t->answers = calloc(count ? count : 1, sizeof *t->answers);
    t->labels = malloc((count ? count : 1) * sizeof *t->labels);
    if (!t->answers || !t->labels) return "out of memory";
    t->n_answers = (int)count;
  }
  for (uint32_t i = 0; i < count; i++) {
    char *s = string_at(data, n, at);
    if (!s) return "cut short";
    if (t)
      t->answers[i] = s;
    else
      free(s);
  }
  if ((n - *at) / 4 < count) return "cut short";
  for (uint32_t i = 0; t && i < count; i++) t->labels[i] = (int32_t)u32_at(data + *at + 4 * i);
  *at += 4 * (size_t)count;
  return NULL;
}

int mkc_mc_read(const unsigned char *data, size_t n, size_t *at, const char *path, int index,
                mkc_mc_task *t) {
  memset(t, 0, sizeof *t);
  const char *why = *at > n ? "cut short" : NULL;
  if (!why && !(t->question = string_at(data, n, at))) why = "cut short";
  if (!why) why = answers_at(data, n, at, t);
  if (!why) why = answers_at(data, n, at, NULL);
  if (!why && (!t->question[0] || t->n_answers == 0)) why = "an empty question, or no answers";
  for (int i = 0; !why && i < t->n_answers; i++)
    if (!t->answers[i][0]) why = "an empty answer";
  if (!why) return 0;
  mkc_mc_free(t);
  return mkc_error_in(path, "task %d: %s", index, why);
}

void mkc_mc_free(mkc_mc_task *t) {
  for (int i = 0; t->answers && i < t->n_answers; i++) free(t->answers[i]);
  free(t->answers);
  free(t->labels);
  free(t->question);
  memset(t, 0, sizeof *t);
}
