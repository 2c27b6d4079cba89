/* llama-perplexity's HellaSwag, Winogrande and multiple-choice scores (choice_score.h). */
#include "choice_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "choice_tasks.h"
#include "kld.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"
#include "util/mt19937.h"

/* A candidate text: its tokens, and the span [from, to) whose tokens its score averages. */
typedef struct candidate {
  int *ids;
  int n, from, to;
} candidate;

/* k known tokens in one step: 0, or -1 after a message (the backend's, or the refusal's). */
static int step(mkc_session *s, const int *ids, int k) {
  mkc_step_result r;
  if (mkc_session_step(s, ids, k, k - 1, &r) != 0) return -1;
  if (r.status == MKC_STATUS_OK) return 0;
  fprintf(stderr, "mkc: error: perplexity: a step was refused (status %d)\n", r.status);
  return -1;
}

/* Candidates c[0..n) sharing their first `prefix` tokens (1 <= prefix < each n, prefix <= each
 * from): the prefix read from an empty cache, then each candidate from it, its span's
 * log-probabilities summed (each token by the logits before it) and averaged into mean[k] (NaN
 * for an empty span, as llama-perplexity's 0 / 0). 0, or -1 after a message. */
static int score(mkc_session *s, const mkc_graph *g, const candidate *c, int n, int prefix,
                 float *last, double *mean) {
  mkc_session_reset(s);
  for (int pos = 0, k; pos < prefix; pos += k) {
    k = mkc_session_prompt_inputs(s, prefix - pos);
    if (step(s, c[0].ids + pos, k) != 0) return -1;
    const float *logits = pos + k == prefix ? mkc_session_logits(s, k - 1) : NULL;
    if (logits) memcpy(last, logits, (size_t)g->vocab * sizeof *last);
  }
  for (int e = 0; e < n; e++) {
    const candidate *d = &c[e];
    double sum = 0;
    if (mkc_session_pos(s) > prefix && mkc_session_rewind(s, prefix) != 0) return -1;
    if (d->from == prefix) sum -= mkc_token_nll(last, g->vocab, d->ids[prefix]);
    /* the inputs whose logits score a span token: positions prefix .. to - 2 */
    for (int pos = prefix, k; pos < d->to - 1; pos += k) {
      k = d->to - 1 - pos < g->t_max ? d->to - 1 - pos : g->t_max;
      if (step(s, d->ids + pos, k) != 0) return -1;
      for (int t = 0; t < k; t++) {
        if (pos + t + 1 < d->from) continue;
        const float *logits = mkc_session_logits(s, t);
        if (!logits) return fprintf(stderr, "mkc: error: perplexity: no logits\n"), -1;
        sum -= mkc_token_nll(logits, g->vocab, d->ids[pos + t + 1]);
      }
    }
    mean[e] = d->to > d->from ? sum / (d->to - d->from) : NAN;
  }
  return 0;
}

/* The tokens of a + b + c, BOS first where the model adds one, control tokens' spellings as
 * text (llama-perplexity's common_tokenize): the count, ids in *ids, or -1 after a message. */
static int tokens_of(const mkc_tokenizer *tok, const char *a, const char *b, const char *c,
                     int **ids) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
  char *text = malloc(la + lb + lc + 1);
  if (!text) return fprintf(stderr, "mkc: error: perplexity: out of memory\n"), -1;
  memcpy(text, a, la);
  memcpy(text + la, b, lb);
  memcpy(text + la + lb, c, lc + 1);
  int n = mkc_tokenizer_encode(tok, text, la + lb + lc, mkc_tokenizer_add_bos(tok), 0, ids);
  free(text);
  return n;
}

/* The tokens the candidates share from the start, at most each one's count - 1 (a candidate's
 * first scored token needs the logits before it). */
static int shared_prefix(const candidate *c, int n) {
  int p = 0;
  for (;; p++) {
    for (int e = 0; e < n; e++)
      if (p >= c[e].n - 1 || c[e].ids[p] != c[0].ids[p]) return p;
  }
}

/* One task's candidates, their tokens and spans set, scored into mean[] (score), after checking
 * them against the context; their tokens freed. 0, or -1 after a message naming where the task
 * is (PATH:LINE, PATH: task N). */
static int score_task(mkc_loaded_model *m, const char *where, candidate *c, int n, int prefix,
                      double *mean) {
  int longest = 0, rc = -1;
  for (int e = 0; e < n; e++)
    if (c[e].n > longest) longest = c[e].n;
  float *last = NULL;
  if (longest > m->g.max_ctx)
    fprintf(stderr, "mkc: error: %s: a task of %d tokens, past the context of %d (-c)\n", where,
            longest, m->g.max_ctx);
  else if (prefix < 1)
    fprintf(stderr,
            "mkc: error: %s: the candidates share no first token to read them from (the model "
            "adds no BOS, and the text starts with them)\n",
            where);
  else if (!(last = malloc((size_t)m->g.vocab * sizeof *last)))
    fprintf(stderr, "mkc: error: perplexity: out of memory\n");
  else
    rc = score(m->s, &m->g, c, n, prefix, last, mean);
  free(last);
  for (int e = 0; e < n; e++) free(c[e].ids), c[e].ids = NULL;
  return rc;
}

/* The dataset's text and its name for messages; NULL after a message. */
static char *dataset(const mkc_cli *c, const mkc_loaded_model *m, const char **path, size_t *len) {
  *path = c->prompt_file ? c->prompt_file : "-p";
  if (!m->file.tok) {
    fprintf(stderr,
            "mkc: error: perplexity: the dataset's texts need a model with a tokenizer (-m)\n");
    return NULL;
  }
  char *text = mkc_cli_prompt_text(c);
  if (text) *len = strlen(text);
  return text;
}

int mkc_perplexity_hellaswag(const mkc_cli *c, mkc_loaded_model *m) {
  const char *path;
  size_t len;
  char *text = dataset(c, m, &path, &len);
  mkc_hellaswag_task *tasks = NULL;
  int n = 0, rc = 1;
  if (!text || mkc_hellaswag_parse(text, len, path, &tasks, &n) != 0) goto done;
  int count = c->hellaswag_tasks < n ? c->hellaswag_tasks : n;
  int *left = malloc((size_t)n * sizeof *left);
  if (!left) {
    fprintf(stderr, "mkc: error: perplexity: out of memory\n");
    goto done;
  }
  for (int i = 0; i < n; i++) left[i] = i;
  fprintf(stderr,
          "mkc: perplexity: HellaSwag, %d of %d tasks, chosen as llama-perplexity chooses "
          "them (mt19937, seed 1)\n",
          count, n);
  printf("\ntask\tacc_norm\t95%% confidence interval\n");
  mkc_mt19937 rng;
  mkc_mt19937_seed(&rng, 1);
  int correct = 0;
  candidate cand[4] = {{0}};
  for (int i = 0; i < count; i++) {
    /* a task drawn from those left, and taken out of them */
    size_t at = mkc_mt19937_uniform(&rng, (size_t)(n - i - 1));
    const mkc_hellaswag_task *t = &tasks[left[at]];
    memmove(left + at, left + at + 1, (size_t)(n - i - 1 - at) * sizeof *left);
    int bad = 0;
    for (int e = 0; e < 4; e++)
      bad |= (cand[e].n = tokens_of(m->file.tok, t->context, " ", t->ending[e], &cand[e].ids)) < 0;
    int prefix = bad ? 0 : shared_prefix(cand, 4);
    double mean[4];
    for (int e = 0; e < 4 && !bad; e++) cand[e].from = prefix, cand[e].to = cand[e].n;
    char where[4200];
    snprintf(where, sizeof where, "%s:%d", path, t->line);
    if (bad || score_task(m, where, cand, 4, prefix, mean) != 0) {
      for (int e = 0; e < 4; e++) free(cand[e].ids), cand[e].ids = NULL;
      free(left);
      goto done;
    }
    int best = 0;
    for (int e = 1; e < 4; e++)
      if (mean[e] > mean[best]) best = e;
    correct += best == t->gold;
    /* the accuracy so far and its Wilson score interval (95 %) */
    double done = i + 1, freq = correct / done, za = 1.95996398454, z = za * za / done;
    double spread = z * sqrt(done * (4 * freq * (1 - freq) + z)) / (2 * za);
    printf("%d\t%3.8f%%\t[%3.4f%%, %3.4f%%]\n", i + 1, 100 * freq,
           100 * (freq + z / 2 - spread) / (1 + z), 100 * (freq + z / 2 + spread) / (1 + z));
    fflush(stdout);
  }
  printf("\n");
  free(left);
  rc = 0;
done:
  free(tasks);
  free(text);
  return rc;
}

/* Winogrande's subset of count of n tasks, as llama-perplexity draws it: an index scaled from
 * each draw in float, the task taken and the last one moved into its place. */
static void winogrande_pick(int n, int count, int *order) {
  int *left = order + count; /* room for n more */
  mkc_mt19937 rng;
  mkc_mt19937_seed(&rng, 1);
  const float scale = 1 / (1.f + 4294967295.f);
  for (int i = 0; i < n; i++) left[i] = i;
  for (int i = 0; i < count; i++) {
    int size = n - i, j = (int)(scale * (float)mkc_mt19937_next(&rng) * (float)size);
    if (j >= size) j = size - 1; /* a draw that rounds up to 2^32 */
    order[i] = left[j];
    left[j] = left[size - 1];
  }
}

int mkc_perplexity_winogrande(const mkc_cli *c, mkc_loaded_model *m) {
  const char *path;
  size_t len;
  char *text = dataset(c, m, &path, &len);
  mkc_winogrande_task *tasks = NULL;
  int n = 0, rc = 1;
  if (!text || mkc_winogrande_parse(text, len, path, &tasks, &n) != 0) goto done;
  int count = c->winogrande_tasks > 0 && c->winogrande_tasks < n ? c->winogrande_tasks : n;
  int *order = malloc((size_t)(count + n) * sizeof *order);
  if (!order) {
    fprintf(stderr, "mkc: error: perplexity: out of memory\n");
    goto done;
  }
  if (count < n)
    winogrande_pick(n, count, order);
  else
    for (int i = 0; i < n; i++) order[i] = i;
  fprintf(stderr, "mkc: perplexity: Winogrande, %d of %d tasks\n", count, n);
  int correct = 0;
  for (int i = 0; i < count; i++) {
    const mkc_winogrande_task *t = &tasks[order[i]];
    candidate cand[2] = {{0}};
    int base[2], bad = 0, *ids;
    for (int e = 0; e < 2; e++) {
      bad |=
          (cand[e].n = tokens_of(m->file.tok, t->first, t->choice[e], t->second, &cand[e].ids)) < 0;
      ids = NULL;
      bad |= (base[e] = tokens_of(m->file.tok, t->first, t->choice[e], "", &ids)) < 0;
      free(ids);
    }
    int prefix = bad ? 0 : shared_prefix(cand, 2);
    /* the words after the choice when both have more than 3 tokens after the shared start, else
     * everything after it; the last token (the full stop) left out where there is another */
    int skip = !bad && cand[0].n - prefix > 3 && cand[1].n - prefix > 3;
    for (int e = 0; e < 2 && !bad; e++) {
      int from = skip ? base[e] : prefix;
      if (from < prefix) from = prefix; /* the choice merged into the shared start */
      cand[e].from = from;
      cand[e].to = cand[e].n - (cand[e].n - from > 1);
    }
    double mean[2];
    char where[4200];
    snprintf(where, sizeof where, "%s:%d", path, t->line);
    if (bad || score_task(m, where, cand, 2, prefix, mean) != 0) {
      for (int e = 0; e < 2; e++) free(cand[e].ids), cand[e].ids = NULL;
      free(order);
      goto done;
    }
    int answer = mean[0] > mean[1] ? 1 : 2;
    correct += answer == t->answer;
    printf("%d\t%.4f\t%10.6f  %10.6f  %d  %d\n", i + 1, 100.0 * correct / (i + 1), mean[0], mean[1],
           answer, t->answer);
    fflush(stdout);
  }
  printf("\n");
  if (count >= 100) {
    double p = (double)correct / count;
    printf("Final Winogrande score(%d tasks): %.4f +/- %.4f\n", count, 100 * p,
           100 * sqrt(p * (1 - p) / (count - 1)));
  }
  free(order);
  rc = 0;
done:
  free(tasks);
  free(text);
  return rc;
}

/* Tasks `count` of n: in the file's order when all, else drawn as Winogrande's are. The tasks
 * read one after another, or each at its position. */
int mkc_perplexity_multiple_choice(const mkc_cli *c, mkc_loaded_model *m) {
  const char *path = c->prompt_file;
  size_t len = 0;
  unsigned char *data = path ? mkc_read_file(path, &len) : NULL;
  int n = 0, rc = 1, correct = 0, answers = 0, done = 0;
  int *order = NULL;
  candidate *cand = NULL;
  double *mean = NULL;
  mkc_mc_task t = {0};
  if (!path || !m->file.tok) {
    fprintf(stderr, "mkc: error: perplexity: --multiple-choice reads -f FILE with a model's "
                    "tokenizer (-m)\n");
    goto done;
  }
  if (!data) {
    mkc_error_in(path, "cannot be read");
    goto done;
  }
  if (mkc_mc_count(data, len, path, &n) != 0) goto done;
  int count = c->mc_tasks > 0 && c->mc_tasks < n ? c->mc_tasks : n;
  order = malloc((size_t)(count + n) * sizeof *order);
  cand = calloc(100, sizeof *cand);
  mean = malloc(100 * sizeof *mean);
  if (!order || !cand || !mean) {
    fprintf(stderr, "mkc: error: perplexity: out of memory\n");
    goto done;
  }
  if (count < n) winogrande_pick(n, count, order);
  fprintf(stderr, "mkc: perplexity: multiple choice, %d of %d tasks\n", count, n);
  printf("\ntask\tacc_norm\n");
  size_t at = 4 + 4 * (size_t)n; /* all: one after another */
  for (int i = 0; i < count; i++) {
    int index = count < n ? order[i] : i;
    if (count < n) at = mkc_mc_position(data, index);
    if (mkc_mc_read(data, len, &at, path, index, &t) != 0) goto done;
    int bad = 0;
    for (int e = 0; e < t.n_answers; e++)
      bad |= (cand[e].n = tokens_of(m->file.tok, t.question, " ", t.answers[e], &cand[e].ids)) < 0;
    int prefix = bad ? 0 : shared_prefix(cand, t.n_answers);
    for (int e = 0; e < t.n_answers && !bad; e++) cand[e].from = prefix, cand[e].to = cand[e].n;
    char where[4200];
    snprintf(where, sizeof where, "%s: task %d", path, index);
    if (bad || score_task(m, where, cand, t.n_answers, prefix, mean) != 0) {
      for (int e = 0; e < t.n_answers; e++) free(cand[e].ids), cand[e].ids = NULL;
      goto done;
    }
    int best = 0;
    for (int e = 1; e < t.n_answers; e++)
      if (mean[e] > mean[best]) best = e;
    correct += t.labels[best] == 1;
    answers += t.n_answers;
    done++;
    printf("%d\t%.8f\n", done, 100.0 * correct / done);
    fflush(stdout);
    mkc_mc_free(&t);
  }
  { /* printed for any count, as llama-perplexity prints it */
    double p = (double)correct / done, chance = (double)done / answers;
    double err = done > 1 ? sqrt(p * (1 - p) / (done - 1)) : 0;
    printf("\nFinal result: %.4f +/- %.4f\n", 100 * p, 100 * err);
    printf("Random chance: %.4f +/- %.4f\n", 100 * chance,
           done > 1 ? 100 * sqrt(chance * (1 - chance) / (done - 1)) : 0);
  }
  rc = 0;
done:
  mkc_mc_free(&t);
  free(order), free(cand), free(mean);
  free(data);
  return rc;
}
