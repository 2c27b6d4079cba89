/* See cli.h. */
#include "cli.h"

#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/logit_bias.h"
#include "codegen/graph.h"
#include "escapes.h"
#include "formats/gguf_override.h"
#include "model/reasoning.h"
#include "llama_flags.h"
#include "exec/session.h"
#include "model/model_dir.h"
#include "util/files.h"
#include "util/text.h"

int mkc_cli_usage_error_in(const char *cmd, const char *fmt, const char *arg) {
  fprintf(stderr, "mkc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run `mkc%s%s --help` for usage)\n", cmd ? " " : "", cmd ? cmd : "");
  return 2;
}

int mkc_cli_usage_error(const char *fmt, const char *arg) {
  return mkc_cli_usage_error_in(NULL, fmt, arg);
}

/* A whole-string integer in [lo, hi], or -1 with a message. */
static int parse_int(const char *flag, const char *s, long lo, long hi, long *v) {
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (!*s || *end || errno || x < lo || x > hi) {
    fprintf(stderr, "mkc: error: %s: expected an integer in %ld..%ld, got '%s'\n", flag, lo, hi, s);
    return -1;
  }
  *v = x;
  return 0;
}

int mkc_parse_seed(const char *s, unsigned long long *v) {
  char *end;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return !*s || *end || errno || s[0] == '-' ? -1 : 0;
}

int mkc_cli_check_model(const mkc_cli *c, const char *cmd) {
  if (!c->model_path || !(c->preset || c->have_seed || c->graph)) return 0;
  char msg[200];
  snprintf(msg, sizeof msg,
           "%s: -m brings its own graph, preset and weights; drop --preset, --graph and "
           "--random-weights",
           cmd);
  return mkc_cli_usage_error("%s", msg);
}

static int allows(const char *allowed, const char *flag) { return mkc_words_hold(allowed, flag); }

/* Flags a command takes where it takes another: the file forms of texts, llama-cli's plain
 * completion where run's chat is, and the weights' check where a model runs. */
static const struct {
  const char *flag, *with;
} DERIVED[] = {
    {"--system-prompt-file", "--system-prompt"},
    {"--chat-template-file", "--chat-template"},
    {"-no-cnv", "--chat"},
    {"--check-tensors", "--backend"},
    {"--reasoning", "--reasoning-budget"},
    {"--draft-p-min", "-md"},
    {"--override-kv", "--backend"},
    {"--rope-freq-base", "--backend"},
    {"--rope-scale", "--backend"},
    {"--rope-freq-scale", "--backend"},
    {"--rope-scaling", "--backend"},
    {"--yarn-orig-ctx", "--backend"},
    {"--yarn-ext-factor", "--backend"},
    {"--yarn-beta-fast", "--backend"},
    {"--yarn-beta-slow", "--backend"},
    {"--lora", "--backend"},
    {"--lora-scaled", "--backend"},
};

/* Whether the command (its allowed flags) takes flag. */
static int takes(const char *allowed, const char *flag) {
  for (size_t k = 0; k < sizeof DERIVED / sizeof *DERIVED; k++)
    if (!strcmp(flag, DERIVED[k].flag) && allows(allowed, DERIVED[k].with)) return 1;
  return allows(allowed, flag);
}

/* Flags whose value is kept as written. */
static const struct {
  const char *flag;
  size_t at; /* offsetof the const char * in mkc_cli */
} TEXT_FLAGS[] = {
    {"--preset", offsetof(mkc_cli, preset)},
    {"--graph", offsetof(mkc_cli, graph)},
    {"-o", offsetof(mkc_cli, out)},
    {"--output-format", offsetof(mkc_cli, output_format)},
    {"--prompt-ids", offsetof(mkc_cli, prompt_ids)},
    {"--kernel", offsetof(mkc_cli, kernel_dir)},
    {"--arch", offsetof(mkc_cli, archs)},
    {"-m", offsetof(mkc_cli, model_path)},
    {"-md", offsetof(mkc_cli, draft_model_path)},
    {"-p", offsetof(mkc_cli, prompt)},
    {"-f", offsetof(mkc_cli, prompt_file)},
    {"--system-prompt", offsetof(mkc_cli, system_prompt)},
    {"--chat-template", offsetof(mkc_cli, chat_template)},
    {"--reasoning-effort", offsetof(mkc_cli, reasoning_effort)},
    {"--batch", offsetof(mkc_cli, batch_file)},
    {"--host", offsetof(mkc_cli, host)},
    {"--alias", offsetof(mkc_cli, alias)},
    {"--slot-save-path", offsetof(mkc_cli, slot_save_path)},
    {"--prompt-cache", offsetof(mkc_cli, prompt_cache)},
    {"--api-key", offsetof(mkc_cli, api_key)},
    {"--api-key-file", offsetof(mkc_cli, api_key_file)},
    {"--pooling", offsetof(mkc_cli, pooling)},
    {"--format", offsetof(mkc_cli, format)},
    {"--json-schema-file", offsetof(mkc_cli, schema_file)},
    {"--grammar", offsetof(mkc_cli, grammar)},
    {"--grammar-file", offsetof(mkc_cli, grammar_file)},
    {"--system-prompt-file", offsetof(mkc_cli, system_prompt_file)},
    {"--chat-template-file", offsetof(mkc_cli, chat_template_file)},
    {"--samplers", offsetof(mkc_cli, samplers)},
    {"--sampling-seq", offsetof(mkc_cli, sampling_seq)},
    {"--in-prefix", offsetof(mkc_cli, in_prefix)},
    {"--in-suffix", offsetof(mkc_cli, in_suffix)},
    {"--kl-divergence-base", offsetof(mkc_cli, kl_base)},
};

/* Flags that take no value: present sets the int to 1. */
static const struct {
  const char *flag;
  size_t at; /* offsetof the int in mkc_cli */
} BOOL_FLAGS[] = {
    {"--chat", offsetof(mkc_cli, chat)},
    {"-no-cnv", offsetof(mkc_cli, no_conversation)},
    {"--check-tensors", offsetof(mkc_cli, check_tensors)},
    {"--spm-infill", offsetof(mkc_cli, spm_infill)},
    {"--no-slots", offsetof(mkc_cli, no_slots)},
    {"--ignore-eos", offsetof(mkc_cli, ignore_eos)},
    {"--no-display-prompt", offsetof(mkc_cli, no_display_prompt)},
    {"--context-shift", offsetof(mkc_cli, context_shift)},
    {"--ids", offsetof(mkc_cli, ids_only)},
    {"--no-bos", offsetof(mkc_cli, no_bos)},
    {"--no-parse-special", offsetof(mkc_cli, no_parse_special)},
    {"--show-count", offsetof(mkc_cli, show_count)},
    {"--special", offsetof(mkc_cli, special)},
    {"--verbose-prompt", offsetof(mkc_cli, verbose_prompt)},
    {"--prompt-cache-ro", offsetof(mkc_cli, prompt_cache_ro)},
    {"--prompt-cache-all", offsetof(mkc_cli, prompt_cache_all)},
    {"--no-context-shift", offsetof(mkc_cli, no_context_shift)},
    {"--verbose", offsetof(mkc_cli, verbose)},
    {"--json", offsetof(mkc_cli, json)},
    {"--draft-adaptive", offsetof(mkc_cli, draft_adaptive)},
    {"--dequant", offsetof(mkc_cli, dequant)},
    {"--stages", offsetof(mkc_cli, stages)},
    {"--imatrix-kernel", offsetof(mkc_cli, imatrix_kernel)},
    {"--draft-head", offsetof(mkc_cli, draft_head)},
    {"--escape", offsetof(mkc_cli, escape)},
    {"--no-escape", offsetof(mkc_cli, no_escape)},
    {"--interactive", offsetof(mkc_cli, interactive)},
    {"--interactive-first", offsetof(mkc_cli, interactive_first)},
    {"--in-prefix-bos", offsetof(mkc_cli, in_prefix_bos)},
    {"--multiline-input", offsetof(mkc_cli, multiline)},
    {"--kl-divergence", offsetof(mkc_cli, kl_divergence)},
    {"--process-output", offsetof(mkc_cli, process_output)},
    {"--no-ppl", offsetof(mkc_cli, no_ppl)},
    {"--ppl", offsetof(mkc_cli, ppl)},
    {"--parse-special", offsetof(mkc_cli, parse_special)},
    {"--show-statistics", offsetof(mkc_cli, show_statistics)},
    {"--hellaswag", offsetof(mkc_cli, hellaswag)},
    {"--winogrande", offsetof(mkc_cli, winogrande)},
    {"--multiple-choice", offsetof(mkc_cli, multiple_choice)},
};

/* llama.cpp's other spellings of mkc's flags (taken where the command takes
 * the flag they stand for). */
static const struct {
  const char *alias, *flag;
} ALIASES[] = {
    {"--model", "-m"},
    {"--model-draft", "-md"},
    {"--prompt", "-p"},
    {"--n-predict", "-n"},
    {"--n-depth", "-d"},
    {"--file", "-f"},
    {"-s", "--seed"},
    {"-sys", "--system-prompt"},
    {"--reverse-prompt", "-r"},
    {"--logit-bias", "-l"},
    {"-e", "--escape"},
    {"-c", "--ctx"},
    {"--ctx-size", "--ctx"},
    {"-ub", "--ubatch"},
    {"--ubatch-size", "--ubatch"},
    {"--json-schema", "--format"}, /* llama.cpp's, for a schema */
    {"-j", "--format"},
    {"-jf", "--json-schema-file"},
    {"--parallel", "--slots"}, /* llama-server's parallel sequences: serve's slots */
    {"-a", "--alias"},
    {"-sp", "--special"},
    {"-np", "--slots"},
    /* the cpu backend runs one block per OS thread, so threads are blocks */
    {"-t", "--blocks"},
    {"--threads", "--blocks"},
    {"--sampler-seq", "--sampling-seq"},
    {"--temperature", "--temp"},
    {"--top-n-sigma", "--top-nsigma"},
    {"--typical-p", "--typical"},
    /* the draft's length: newer llama.cpp's names, and older ones */
    {"--spec-draft-n-max", "--draft-max"},
    {"--draft", "--draft-max"},
    {"--draft-n", "--draft-max"},
    {"--spec-draft-n-min", "--draft-min"},
    {"--draft-n-min", "--draft-min"},
    /* llama-cli's one turn of a conversation, the prompt as the user's: run's --chat */
    {"-st", "--chat"},
    {"--single-turn", "--chat"},
    {"-sysf", "--system-prompt-file"},
    {"--no-conversation", "-no-cnv"},
    {"-rea", "--reasoning"},
    {"--spec-draft-p-min", "--draft-p-min"},
    {"-r", "--repetitions"}, /* llama-bench's (run's -r, a reverse prompt, where it is taken) */
    {"--output", "-o"},
    {"--output-file", "-o"}, /* llama-imatrix's */
    {"-ofreq", "--output-frequency"},
    {"--from-chunk", "--chunk"},
    {"-to", "--timeout"},
    /* llama-completion's interactive text mode: run's (chat is a conversation already) */
    {"-i", "--interactive"},
    {"-if", "--interactive-first"},
    {"-mli", "--multiline-input"},
    {"--save-all-logits", "--kl-divergence-base"}, /* llama-perplexity's other name */
};

/* Flags whose value is an integer in [lo, hi]. */
static const struct {
  const char *flag;
  long lo, hi;
  size_t at; /* offsetof the int in mkc_cli */
} INT_FLAGS[] = {
    {"--draft-max", 0, 31, offsetof(mkc_cli, draft_max)},
    {"--draft-min", 0, 31, offsetof(mkc_cli, draft_min)},
    {"--draft-layers", 1, 1 << 16, offsetof(mkc_cli, draft_layers)},
    {"--rounds", 1, MKC_ROUNDS_MAX, offsetof(mkc_cli, rounds)},
    {"--ubatch", 1, MKC_CHUNK_CAP, offsetof(mkc_cli, ubatch)},
    {"--ctx", 1, 1 << 20, offsetof(mkc_cli, max_ctx)},
    {"--blocks", 1, 1024, offsetof(mkc_cli, blocks)},
    {"-n", -1, INT_MAX / 2, offsetof(mkc_cli, n_gen)}, /* llama.cpp's -1: until the end */
    {"-d", 0, 1 << 20, offsetof(mkc_cli, depth)},
    {"--keep", -1, INT_MAX / 2, offsetof(mkc_cli, n_keep)},
    {"--slots", 2, MKC_SLOTS_CAP, offsetof(mkc_cli, slots)},
    {"--kv-pages", 1, 1 << 20, offsetof(mkc_cli, kv_pages)},
    {"--step-rows", 1, MKC_CHUNK_CAP, offsetof(mkc_cli, step_rows)},
    {"--port", 0, 65535, offsetof(mkc_cli, port)},
    {"--embd-normalize", -1, 64, offsetof(mkc_cli, embd_normalize)},
    {"--repetitions", 1, 100, offsetof(mkc_cli, repetitions)},
    {"--timeout", 1, 86400, offsetof(mkc_cli, http_timeout)},
    {"--chunks", -1, INT_MAX / 2, offsetof(mkc_cli, n_chunks)},
    {"--chunk", 0, INT_MAX / 2, offsetof(mkc_cli, i_chunk)},
    {"--output-frequency", 1, INT_MAX / 2, offsetof(mkc_cli, out_freq)},
    {"--save-frequency", 0, INT_MAX / 2, offsetof(mkc_cli, save_freq)},
    {"--ppl-stride", 0, 1 << 20, offsetof(mkc_cli, ppl_stride)},
    {"--ppl-output-type", 0, 1, offsetof(mkc_cli, ppl_output_type)},
    {"--hellaswag-tasks", 1, INT_MAX / 2, offsetof(mkc_cli, hellaswag_tasks)},
    {"--winogrande-tasks", 0, INT_MAX / 2, offsetof(mkc_cli, winogrande_tasks)},
    {"--multiple-choice-tasks", 0, INT_MAX / 2, offsetof(mkc_cli, mc_tasks)},
};

/* The sampler's numeric options: value range, where it goes, and its bit in
 * sampling_set. */
static const struct {
  const char *flag;
  double lo, hi;
  int is_int;
  size_t at; /* offsetof the double or int in mkc_cli */
} SAMPLING_FLAGS[] = {
    {"--top-k", 0, 1 << 30, 1, offsetof(mkc_cli, top_k)},
    {"--top-p", 0, 1, 0, offsetof(mkc_cli, top_p)},
    {"--min-p", 0, 1, 0, offsetof(mkc_cli, min_p)},
    {"--repeat-penalty", 0, 100, 0, offsetof(mkc_cli, repeat_penalty)},
    {"--repeat-last-n", 0, MKC_HIST_CAP, 1, offsetof(mkc_cli, repeat_last_n)},
    {"--presence-penalty", -100, 100, 0, offsetof(mkc_cli, presence_penalty)},
    {"--frequency-penalty", -100, 100, 0, offsetof(mkc_cli, frequency_penalty)},
    {"--logprobs", 1, MKC_LOGPROBS_MAX, 1, offsetof(mkc_cli, logprobs)},
};

_Static_assert(sizeof SAMPLING_FLAGS / sizeof *SAMPLING_FLAGS <= 32, "sampling_set's bits");

static int take_sampling(const char *a, const char *v, mkc_cli *c, int *done) {
  *done = 0;
  for (size_t k = 0; k < sizeof SAMPLING_FLAGS / sizeof *SAMPLING_FLAGS; k++) {
    if (strcmp(a, SAMPLING_FLAGS[k].flag) != 0) continue;
    char *end, msg[160];
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !(x >= SAMPLING_FLAGS[k].lo && x <= SAMPLING_FLAGS[k].hi) ||
        (SAMPLING_FLAGS[k].is_int && x != (double)(long)x)) {
      snprintf(msg, sizeof msg, "%s: expected %s in %.15g..%.15g, got '%%s'", a,
               SAMPLING_FLAGS[k].is_int ? "an integer" : "a number", SAMPLING_FLAGS[k].lo,
               SAMPLING_FLAGS[k].hi);
      return mkc_cli_usage_error(msg, v);
    }
    if (SAMPLING_FLAGS[k].is_int)
      *(int *)((char *)c + SAMPLING_FLAGS[k].at) = (int)x;
    else
      *(double *)((char *)c + SAMPLING_FLAGS[k].at) = x;
    c->sampling_set |= 1u << k;
    *done = 1;
  }
  for (int k = 0; k < MKC_SAMPLING_MORE_OPTIONS && !*done; k++) {
    const mkc_sampling_more_option *o = &mkc_sampling_more_options[k];
    if (strcmp(a, o->flag) != 0) continue;
    char *end, msg[160];
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !mkc_sampling_more_fits(k, x)) {
      snprintf(msg, sizeof msg, "%s: expected %s in %.15g..%.15g, got '%%s'", a,
               o->is_int ? "an integer" : "a number", o->lo, o->hi);
      return mkc_cli_usage_error(msg, v);
    }
    mkc_sampling_more_put(&c->more, k, x);
    c->more_set |= 1u << k;
    *done = 1;
  }
  return 0;
}

/* The option's value when given, else llama.cpp's default. */
static double given(const mkc_cli *c, const char *flag, double dflt) {
  for (size_t k = 0; k < sizeof SAMPLING_FLAGS / sizeof *SAMPLING_FLAGS; k++)
    if (strcmp(flag, SAMPLING_FLAGS[k].flag) == 0 && (c->sampling_set & (1u << k)))
      return SAMPLING_FLAGS[k].is_int ? *(const int *)((const char *)c + SAMPLING_FLAGS[k].at)
                                      : *(const double *)((const char *)c + SAMPLING_FLAGS[k].at);
  return dflt;
}

static int samplers_of(const mkc_cli *c, unsigned *set, char *why, size_t n);

int mkc_cli_sampling(const mkc_cli *c, mkc_sampling *o, unsigned long long *seed) {
  memset(o, 0, sizeof *o);
  o->temp = (float)c->temp;
  o->top_k = (int)given(c, "--top-k", 40);
  o->top_p = (float)given(c, "--top-p", 0.95);
  o->min_p = (float)given(c, "--min-p", 0.05);
  o->repeat_penalty = (float)given(c, "--repeat-penalty", 1.0);
  o->repeat_last_n = (int)given(c, "--repeat-last-n", 64);
  o->presence_penalty = (float)given(c, "--presence-penalty", 0.0);
  o->frequency_penalty = (float)given(c, "--frequency-penalty", 0.0);
  o->logprobs = (int)given(c, "--logprobs", 0);
  for (int k = 0; k < c->n_bias; k++) /* as many as the table holds: never full */
    mkc_bias_add(o->bias_id, o->bias, &o->n_bias, c->bias_id[k], c->bias[k]);
  *seed = c->sample_seed;
  if (!c->have_sample_seed) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *seed = ((unsigned long long)ts.tv_sec * 1000000007ull) ^ (unsigned long long)ts.tv_nsec ^
            ((unsigned long long)getpid() << 32);
  }
  o->seed_lo = (unsigned)*seed;
  o->seed_hi = (unsigned)(*seed >> 32);
  mkc_sampling_more more;
  if (mkc_cli_sampling_more(c, &more) != 0) return 2;
  unsigned set;
  char why[300];
  if (samplers_of(c, &set, why, sizeof why) != 0) return mkc_cli_usage_error("%s", why);
  mkc_samplers_apply(set, o, &more);
  return mkc_sampling_check(o) == 0 ? 0 : 2;
}

/* --samplers or --sampling-seq: the chain's samplers into *set (all of them when neither is
 * given). 0, or -1 with why. */
static int samplers_of(const mkc_cli *c, unsigned *set, char *why, size_t n) {
  *set = ~0u;
  if (c->samplers && c->sampling_seq) {
    snprintf(why, n, "--samplers and --sampling-seq: one of them");
    return -1;
  }
  const char *t = c->samplers ? c->samplers : c->sampling_seq,
             *flag = c->samplers ? "--samplers" : "--sampling-seq";
  char reason[240];
  if (t && mkc_samplers_parse(t, strlen(t), !c->samplers, set, reason, sizeof reason) != 0) {
    snprintf(why, n, "%s: %s", flag, reason);
    return -1;
  }
  return 0;
}

/* The samplers the kernel lacks from the flags: 0, or the breaker that does not fit. */
static const char *more_of(const mkc_cli *c, mkc_sampling_more *m) {
  mkc_sampling_more_init(m);
  for (int k = 0; k < MKC_SAMPLING_MORE_OPTIONS; k++)
    if (c->more_set & (1u << k)) mkc_sampling_more_put(m, k, mkc_sampling_more_get(&c->more, k));
  if (c->n_dry_breakers > 0) m->n_breakers = 0; /* given: they replace the defaults */
  for (int k = 0; k < c->n_dry_breakers; k++)
    if (strcmp(c->dry_breakers[k], "none") != 0 &&
        mkc_sampling_more_add_breaker(m, c->dry_breakers[k], strlen(c->dry_breakers[k])) != 0)
      return c->dry_breakers[k];
  unsigned set;
  char why[300];
  mkc_sampling o = {.temp = 1}; /* the kernel's options: mkc_cli_sampling's */
  if (samplers_of(c, &set, why, sizeof why) == 0) mkc_samplers_apply(set, &o, m);
  return NULL;
}

int mkc_cli_sampling_more(const mkc_cli *c, mkc_sampling_more *m) {
  const char *long_one = more_of(c, m);
  if (long_one) {
    char msg[120];
    snprintf(msg, sizeof msg, "--dry-sequence-breaker: expected 1 to %d bytes, got '%%s'",
             MKC_DRY_BREAKER_LEN - 1);
    return mkc_cli_usage_error(msg, long_one);
  }
  char why[160];
  return mkc_sampling_more_check(m, why, sizeof why) == 0 ? 0 : mkc_cli_usage_error("%s", why);
}

void mkc_cli_more_words(const mkc_cli *c, char *buf, size_t n) {
  mkc_sampling_more m;
  char names[160];
  buf[0] = '\0';
  if (more_of(c, &m) || !mkc_sampling_more_on(&m)) return;
  mkc_sampling_more_names(&m, names, sizeof names);
  snprintf(buf, n, " on the host (%s)", names);
}

void mkc_cli_sampled_words(const mkc_cli *c, const unsigned long long *seed, char *buf, size_t n) {
  char more[200];
  mkc_cli_more_words(c, more, sizeof more);
  if (seed)
    snprintf(buf, n, "sampled, seed %llu%s", *seed, more);
  else
    snprintf(buf, n, "greedy%s", more);
}

int mkc_cli_more_on(const mkc_cli *c) {
  mkc_sampling_more m;
  more_of(c, &m);
  return mkc_sampling_more_on(&m);
}

/* llama.cpp's RoPE flags into c->rope: 1 when a is one (*rc 0, or 2 after the usage error). */
static int take_rope(const char *a, const char *v, mkc_cli *c, int *rc) {
#define AT(f) offsetof(mkc_rope_flags, f)
  static const struct {
    const char *flag;
    double lo; /* the least value; above it only where open */
    int open, whole;
    size_t at;      /* the double (or, whole, the int) in mkc_rope_flags */
    int inverse;    /* the field takes 1 / value */
    unsigned given; /* its bit in yarn_given */
  } R[] = {{"--rope-freq-base", 0, 1, 0, AT(freq_base), 0, 0},
           {"--rope-scale", 0, 1, 0, AT(freq_scale), 1, 0},
           {"--rope-freq-scale", 0, 1, 0, AT(freq_scale), 0, 0},
           {"--yarn-orig-ctx", 1, 0, 1, AT(yarn_orig_ctx), 0, 0},
           {"--yarn-ext-factor", 0, 0, 0, AT(yarn_ext_factor), 0, 1},
           {"--yarn-beta-fast", 0, 1, 0, AT(yarn_beta_fast), 0, 2},
           {"--yarn-beta-slow", 0, 1, 0, AT(yarn_beta_slow), 0, 4}};
#undef AT
  mkc_rope_flags *r = &c->rope;
  *rc = 0;
  if (!strcmp(a, "--rope-scaling")) {
    int t = mkc_rope_scaling_from_name(v);
    if (t != MKC_ROPE_SCALING_NONE && t != MKC_ROPE_SCALING_LINEAR && t != MKC_ROPE_SCALING_YARN)
      *rc = mkc_cli_usage_error("--rope-scaling: expected none, linear or yarn, got '%s'", v);
    r->scaling = t + 1;
    return 1;
  }
  for (size_t k = 0; k < sizeof R / sizeof *R; k++) {
    if (strcmp(a, R[k].flag)) continue;
    char *end, msg[120];
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x) || x < R[k].lo || (R[k].open && x == R[k].lo) ||
        (R[k].whole && (x != floor(x) || x > 1 << 24))) {
      snprintf(msg, sizeof msg, "%s: expected %s %s %g, got '%%s'", a,
               R[k].whole ? "a whole number" : "a number", R[k].open ? ">" : ">=", R[k].lo);
      *rc = mkc_cli_usage_error(msg, v);
      return 1;
    }
    char *field = (char *)r + R[k].at;
    if (R[k].whole)
      *(int *)field = (int)x;
    else
      *(double *)field = R[k].inverse ? 1 / x : x;
    r->yarn_given |= R[k].given;
    return 1;
  }
  return 0;
}

/* The value of flag a (allowed, known; spelled so on the command line, an
 * alias maybe): 0, or 2 after the usage error. */
static int take_value(const char *a, const char *spelled, const char *v, mkc_cli *c) {
  int done, rc = take_sampling(a, v, c, &done);
  if (rc || done) return rc;
  if (take_rope(a, v, c, &rc)) return rc;
  for (size_t k = 0; k < sizeof TEXT_FLAGS / sizeof *TEXT_FLAGS; k++)
    if (strcmp(a, TEXT_FLAGS[k].flag) == 0) {
      *(const char **)((char *)c + TEXT_FLAGS[k].at) = v;
      return 0;
    }
  for (size_t k = 0; k < sizeof INT_FLAGS / sizeof *INT_FLAGS; k++)
    if (strcmp(a, INT_FLAGS[k].flag) == 0) {
      long x;
      if (parse_int(spelled, v, INT_FLAGS[k].lo, INT_FLAGS[k].hi, &x)) return 2;
      *(int *)((char *)c + INT_FLAGS[k].at) = (int)x;
      c->have_n |= strcmp(a, "-n") == 0;
      return 0;
    }
  if (strcmp(a, "-l") == 0) {
    /* llama.cpp's form: TOKEN_ID, a sign, the amount (15043+1, 15043-inf) */
    char *end;
    errno = 0;
    long id = strtol(v, &end, 10);
    int ok = end != v && !errno && id >= 0 && id <= INT_MAX && (*end == '+' || *end == '-');
    double x = ok ? strtod(end, &end) : 0;
    if (!ok || *end || !(x < INFINITY) || c->n_bias == MKC_BIAS_CAP) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "%s: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (a number, or -inf to ban the token; "
               "at most %d of them), got '%%s'",
               spelled, MKC_BIAS_CAP);
      return mkc_cli_usage_error(msg, v);
    }
    c->bias_id[c->n_bias] = (int)id;
    c->bias[c->n_bias++] = (float)x;
  } else if (strcmp(a, "--dry-sequence-breaker") == 0) {
    if (c->n_dry_breakers == MKC_DRY_BREAKERS) {
      char msg[100];
      snprintf(msg, sizeof msg, "%s: at most %d breakers, got '%%s' past them", spelled,
               MKC_DRY_BREAKERS);
      return mkc_cli_usage_error(msg, v);
    }
    c->dry_breakers[c->n_dry_breakers++] = v;
  } else if (strcmp(a, "--override-kv") == 0) {
    if (c->n_kv_overrides == MKC_KV_OVERRIDES) {
      char msg[100];
      snprintf(msg, sizeof msg,
               "%s: at most %d of them (commas join more in one), got '%%s' past them", spelled,
               MKC_KV_OVERRIDES);
      return mkc_cli_usage_error(msg, v);
    }
    if (mkc_gguf_override_check(v) != 0) return 2;
    c->kv_overrides[c->n_kv_overrides++] = v;
  } else if (strcmp(a, "-r") == 0) {
    if (c->n_reverse == MKC_REVERSE_MAX) {
      char msg[80];
      snprintf(msg, sizeof msg, "%s: at most %d reverse prompts, got '%%s' past them", spelled,
               MKC_REVERSE_MAX);
      return mkc_cli_usage_error(msg, v);
    }
    c->reverse[c->n_reverse++] = v;
  } else if (strcmp(a, "-ngl") == 0) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!strcmp(v, "all") || !strcmp(v, "auto"))
      n = -1;
    else if (!*v || *end || errno || n < 0 || n > 1 << 20)
      return mkc_cli_usage_error(
          "-ngl: expected a number of layers (0: none on the GPU), all or auto, got '%s'", v);
    c->gpu_layers = (int)n;
    c->have_gpu_layers = 1;
  } else if (strcmp(a, "--backend") == 0) {
    if (mkc_backend_kind_from_name(v) < 0)
      return mkc_cli_usage_error("--backend: expected cuda, cpu, ref or auto, got '%s'", v);
    c->backend = v;
  } else if (strcmp(a, "--reasoning-budget") == 0) {
    /* llama.cpp's flag, with its two values */
    if (strcmp(v, "-1") && strcmp(v, "0"))
      return mkc_cli_usage_error("--reasoning-budget: expected -1 (unrestricted) or 0 (no "
                                 "reasoning), got '%s'",
                                 v);
    c->no_reasoning = strcmp(v, "0") == 0;
  } else if (strcmp(a, "--reasoning") == 0) {
    /* llama.cpp's -rea: off is the template told not to reason (--reasoning-budget 0); on and
     * auto, the model reasoning as its template has it */
    int off = !strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "0");
    if (!off && strcmp(v, "on") && strcmp(v, "true") && strcmp(v, "1") && strcmp(v, "auto"))
      return mkc_cli_usage_error("--reasoning: expected on, off or auto, got '%s'", v);
    c->no_reasoning = off;
  } else if (strcmp(a, "--draft-p-min") == 0) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !(x >= 0 && x <= 1))
      return mkc_cli_usage_error("--draft-p-min: expected a probability in 0..1, got '%s'", v);
    c->draft_p_min = x;
  } else if (strcmp(a, "--reasoning-format") == 0) {
    if (mkc_reasoning_format_from_name(v) < 0)
      return mkc_cli_usage_error("--reasoning-format: expected none, deepseek or auto (mkc does "
                                 "not give deepseek-legacy's both at once), got '%s'",
                                 v);
    c->reasoning_format = mkc_reasoning_format_from_name(v);
  } else if (strcmp(a, "--kv-dtype") == 0) {
    if (mkc_kv_dtype_from_name(v) < 0)
      return mkc_cli_usage_error("--kv-dtype: expected bf16, f16 or f32, got '%s'", v);
    c->kv_dtype = v;
  } else if (strcmp(a, "--temp") == 0) {
    char *end;
    errno = 0;
    c->temp = strtod(v, &end);
    if (!*v || *end || errno || !(c->temp >= 0) || c->temp > 100)
      return mkc_cli_usage_error("--temp: expected a number in 0..100, got '%s'", v);
  } else if (strcmp(a, "--seed") == 0) {
    if (mkc_parse_seed(v, &c->sample_seed) != 0)
      return mkc_cli_usage_error("--seed: expected a non-negative integer, got '%s'", v);
    c->have_sample_seed = 1;
  } else if (strcmp(a, "--keep-layers") == 0) {
    /* a comma-separated list of layers; codegen checks them against the model */
    c->n_keep_layers = 0;
    for (const char *p = v;; p++) {
      char *end;
      errno = 0;
      long l = strtol(p, &end, 10);
      if (end == p || errno || l < 0 || l > 1 << 16 || (*end && *end != ',') ||
          c->n_keep_layers == MKC_KEEP_MAX) {
        char msg[120];
        snprintf(msg, sizeof msg,
                 "--keep-layers: expected up to %d layer numbers separated by commas, got '%%s'",
                 MKC_KEEP_MAX);
        return mkc_cli_usage_error(msg, v);
      }
      c->keep_layers[c->n_keep_layers++] = (int)l;
      if (!*end) break;
      p = end;
    }
  } else if (strcmp(a, "--random-weights") == 0) {
    if (mkc_parse_seed(v, &c->seed) != 0)
      return mkc_cli_usage_error("--random-weights: expected a non-negative integer seed, got '%s'",
                                 v);
    c->have_seed = 1;
  } else {
    return mkc_cli_usage_error("unknown option '%s'", a); /* allowed but known to no table */
  }
  return 0;
}

/* The texts read from files for flags (-sysf, --chat-template-file): the command's whole run. */
static char *file_texts[2];
static void free_file_texts(void) {
  for (int k = 0; k < 2; k++) free(file_texts[k]);
}

/* -sysf FILE as -sys (its one closing newline dropped, as llama.cpp reads it), and
 * --chat-template-file FILE as --chat-template: 0, or -1 after the message. */
static int read_text_files(mkc_cli *c) {
  const char *const flags[2] = {"-sysf", "--chat-template-file"};
  const char *paths[2] = {c->system_prompt_file, c->chat_template_file};
  const char **texts[2] = {&c->system_prompt, &c->chat_template};
  for (int k = 0; k < 2; k++) {
    if (!paths[k]) continue;
    if (*texts[k]) {
      fprintf(stderr, "mkc: error: %s and %s: give one\n", flags[k],
              k ? "--chat-template" : "-sys");
      return -1;
    }
    size_t n;
    char *text = mkc_read_file(paths[k], &n);
    if (!text) {
      fprintf(stderr, "mkc: error: %s %s: %s\n", flags[k], paths[k], strerror(errno));
      return -1;
    }
    if (strlen(text) != n) {
      fprintf(stderr, "mkc: error: %s %s: the file holds a NUL byte, which a text cannot\n",
              flags[k], paths[k]);
      free(text);
      return -1;
    }
    if (k == 0 && n > 0 && text[n - 1] == '\n') text[n - 1] = '\0';
    if (!file_texts[0] && !file_texts[1]) atexit(free_file_texts);
    free(file_texts[k]);
    file_texts[k] = text;
    *texts[k] = text;
  }
  return 0;
}

/* --lora FILE,... (scaled 0) or --lora-scaled FILE:SCALE,... (llama.cpp's forms: a comma
 * between adapters, the last colon before a scale) added to c's adapters. 0, or a usage
 * error's status. The value is the program's to write (argv). */
static int add_loras(mkc_cli *c, int scaled, char *value) {
  const char *flag = scaled ? "--lora-scaled" : "--lora";
  for (char *item = value, *next; item; item = next) {
    if ((next = strchr(item, ','))) *next++ = '\0';
    float scale = 1;
    if (scaled) {
      char *colon = strrchr(item, ':'), *end;
      errno = 0;
      scale = colon ? strtof(colon + 1, &end) : 0;
      if (!colon || colon == item || !colon[1] || *end || errno || !isfinite(scale))
        return mkc_cli_usage_error("--lora-scaled: expected FILE:SCALE (a finite number), got "
                                   "'%s'",
                                   item);
      *colon = '\0';
    }
    if (!*item) return mkc_cli_usage_error("%s: an empty file name", flag);
    if (c->n_lora == MKC_LORA_MAX) {
      char most[16];
      snprintf(most, sizeof most, "%d", MKC_LORA_MAX);
      return mkc_cli_usage_error("--lora, --lora-scaled: at most %s adapters", most);
    }
    c->lora_scale[c->n_lora] = scale;
    c->lora[c->n_lora++] = item;
  }
  return 0;
}

int mkc_cli_parse(int argc, char **argv, int first, const char *allowed, int want_positional,
                  mkc_cli *c) {
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) {
      if (!want_positional || c->positional)
        return mkc_cli_usage_error("unexpected argument '%s'", a);
      c->positional = a;
      continue;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(c->usage ? c->usage : "(no usage text: run `mkc --help`)\n", stdout);
      return MKC_CLI_HELP;
    }
    for (size_t k = 0; k < sizeof ALIASES / sizeof *ALIASES; k++)
      if (strcmp(a, ALIASES[k].alias) == 0 && takes(allowed, ALIASES[k].flag)) a = ALIASES[k].flag;
    /* llama-cli's conversation: mkc's chat command (which takes the flag as said); -i and -if
     * are run's interactive text mode where run is the command */
    int cnv = !strcmp(a, "-cnv") || !strcmp(a, "--conversation") ||
              (!takes(allowed, "--interactive") &&
               (!strcmp(a, "-i") || !strcmp(a, "--interactive") || !strcmp(a, "-if") ||
                !strcmp(a, "--interactive-first")));
    if (cnv && allows(allowed, "--chat"))
      return mkc_cli_usage_error(
          "%s: a conversation is mkc's chat command (mkc chat -m MODEL); "
          "run answers one prompt (--chat: with the chat template; -i: the user "
          "writes in turn with the model, as text)",
          argv[i]);
    if (cnv && allows(allowed, "--system-prompt")) continue; /* chat: a conversation already */
    /* llama.cpp's flags that ask for nothing mkc does otherwise: taken, with a note */
    if (allows(allowed, "--backend")) {
      int skipped = mkc_llama_flag_skip(argc, argv, &i, allows(allowed, "--port"));
      if (skipped == 2) return 2;
      if (skipped) continue;
    }
    /* llama.cpp's K and V cache types, wherever mkc's one KV type is taken */
    int kv = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")   ? 0
             : !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v") ? 1
                                                                  : -1;
    if (kv >= 0 && allows(allowed, "--kv-dtype")) {
      if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
      c->cache_type[kv] = argv[++i];
      continue;
    }
    /* llama-imatrix's matrices to add in, each time given */
    if (!strcmp(a, "--in-file") && takes(allowed, a)) {
      if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
      if (c->n_in_files == MKC_IN_FILES_MAX)
        return mkc_cli_usage_error("--in-file: at most %s files", "64");
      c->in_files[c->n_in_files++] = argv[++i];
      continue;
    }
    /* llama.cpp's LoRA adapters, wherever a model runs */
    if ((!strcmp(a, "--lora") || !strcmp(a, "--lora-scaled")) && takes(allowed, a)) {
      if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
      int rc = add_loras(c, a[6] == '-', argv[++i]);
      if (rc) return rc;
      continue;
    }
    /* llama.cpp's GPU layer count, wherever a backend is chosen */
    if ((!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers") || !strcmp(a, "--gpu-layers")) &&
        allows(allowed, "--backend")) {
      if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
      int rc = take_value("-ngl", a, argv[i + 1], c);
      if (rc) return rc;
      i++;
      continue;
    }
    if (!takes(allowed, a)) return mkc_cli_usage_error("unknown option '%s'", argv[i]);
    int is_bool = 0;
    for (size_t k = 0; k < sizeof BOOL_FLAGS / sizeof *BOOL_FLAGS; k++)
      if (strcmp(a, BOOL_FLAGS[k].flag) == 0) {
        *(int *)((char *)c + BOOL_FLAGS[k].at) = 1;
        is_bool = 1;
      }
    if (is_bool) continue;
    if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
    int rc = take_value(a, argv[i], argv[i + 1], c);
    i++;
    if (rc) return rc;
  }
  /* -ctk and -ctv: mkc's K and V rows share one type; a type given once is both's */
  const char *k = c->cache_type[0], *v = c->cache_type[1], *t = k ? k : v;
  if (t) {
    char both[96];
    snprintf(both, sizeof both, "-ctk %s and -ctv %s", k ? k : "(f16)", v ? v : "(f16)");
    if (k && v && strcmp(k, v) != 0)
      return mkc_cli_usage_error("%s: mkc's K and V rows share one type; give the same", both);
    if (mkc_kv_dtype_from_name(t) < 0)
      return mkc_cli_usage_error("-ctk/-ctv: the KV cache is bf16, f16 or f32 here, not '%s'", t);
    if (c->kv_dtype && strcmp(c->kv_dtype, t) != 0)
      return mkc_cli_usage_error("-ctk/-ctv %s and --kv-dtype: one type, given once", t);
    c->kv_dtype = t;
  }
  if (read_text_files(c) != 0) return 2;
  if (c->n_kv_overrides && !c->model_path)
    return mkc_cli_usage_error("%s", "--override-kv: a model file's metadata: give -m MODEL");
  if (c->n_lora && (!c->model_path || c->kernel_dir))
    return mkc_cli_usage_error("%s", "--lora: an adapter of a model file's weights: give -m MODEL "
                                     "(and no --kernel DIR, whose kernel was planned without it)");
  if (mkc_rope_flags_any(&c->rope) && !c->model_path)
    return mkc_cli_usage_error("%s", "--rope-* and --yarn-*: a model file's RoPE: give -m MODEL");
  if (c->no_conversation && c->chat)
    return mkc_cli_usage_error("%s", "-no-cnv and --chat (or -st, -sys, --chat-template): one");
  if (c->have_gpu_layers) { /* -ngl 0: the cpu backend; else the GPU's, unless told otherwise */
    const char *b = c->backend;
    if (c->gpu_layers == 0 && b && strcmp(b, "cpu") != 0)
      return mkc_cli_usage_error("-ngl 0 keeps every layer off the GPU: not with --backend %s", b);
    if (c->gpu_layers != 0 && b && (!strcmp(b, "cpu") || !strcmp(b, "ref")))
      return mkc_cli_usage_error("-ngl puts layers on the GPU: not with --backend %s", b);
    if (c->gpu_layers == 0) c->backend = "cpu";
  }
  if (c->model_path)
    c->model_path = mkc_model_resolve(c->model_path, c->model_buf, sizeof c->model_buf);
  if (c->draft_model_path)
    c->draft_model_path =
        mkc_model_resolve(c->draft_model_path, c->draft_model_buf, sizeof c->draft_model_buf);
  return 0;
}

int mkc_cli_shift_check(const mkc_cli *c, const char *cmd) {
  if (c->context_shift && c->no_context_shift)
    return mkc_cli_usage_error_in(cmd, "%s: --context-shift or --no-context-shift: one", cmd);
  if (c->n_keep && !c->context_shift)
    return mkc_cli_usage_error_in(
        cmd, "%s: --keep N says what a context shift keeps: it goes with --context-shift", cmd);
  return 0;
}

int mkc_cli_prompt_cache_check(const mkc_cli *c, const char *cmd) {
  if ((c->prompt_cache_ro || c->prompt_cache_all) && !c->prompt_cache)
    return mkc_cli_usage_error_in(
        cmd, "%s: --prompt-cache-ro and --prompt-cache-all go with --prompt-cache FILE", cmd);
  return 0;
}

int mkc_cli_unescape(mkc_cli *c) {
  if (c->escape && c->no_escape)
    return mkc_cli_usage_error("%s", "-e/--escape and --no-escape: give one");
  /* -p, --in-prefix and --in-suffix (k -3..-1), then the reverse prompts and the breakers */
  for (int k = -3; k < c->n_reverse + c->n_dry_breakers; k++) {
    int breaker = k >= c->n_reverse;
    char *text = (char *)(k == -3   ? c->prompt
                          : k == -2 ? c->in_prefix
                          : k == -1 ? c->in_suffix
                          : breaker ? c->dry_breakers[k - c->n_reverse]
                                    : c->reverse[k]);
    if (!text) continue;
    const char *flag = k == -3   ? "-p"
                       : k == -2 ? "--in-prefix"
                       : k == -1 ? "--in-suffix"
                       : breaker ? "--dry-sequence-breaker"
                                 : "-r";
    if (!c->no_escape && mkc_unescape(text) == (size_t)-1) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "%s: '%%s' names the NUL byte (\\x00), which a text cannot hold (--no-escape "
               "takes backslashes as written)",
               flag);
      return mkc_cli_usage_error(msg, mkc_shown(text));
    }
    if (k >= 0 && !*text)
      return mkc_cli_usage_error("%s", breaker ? "--dry-sequence-breaker: expected a text"
                                               : "-r: an empty reverse prompt would end "
                                                 "generation at once");
  }
  return 0;
}

/* See cli.h. */
char *mkc_cli_prompt_text(const mkc_cli *c) {
  if (c->prompt) return strdup(c->prompt);
  size_t n;
  char *text = mkc_read_file(c->prompt_file, &n);
  if (!text) {
    fprintf(stderr, "mkc: error: -f %s: %s\n", c->prompt_file, strerror(errno));
    return NULL;
  }
  if (strlen(text) != n) {
    fprintf(stderr, "mkc: error: -f %s: a NUL byte at offset %zu: the prompt must be text\n",
            c->prompt_file, strlen(text));
    free(text);
    return NULL;
  }
  return text;
}

int *mkc_parse_ids(const char *s, int vocab, int *n, const char *what) {
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  int *ids = malloc((size_t)cap * sizeof *ids);
  if (!ids) return NULL;
  *n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || (*end && *end != ',')) {
      fprintf(stderr, "mkc: error: %s: expected comma-separated token ids, got '%s'\n", what, s);
      free(ids);
      return NULL;
    }
    if (v < 0 || v >= vocab) {
      fprintf(stderr, "mkc: error: %s: token %ld is outside the vocabulary (0..%d)\n", what, v,
              vocab - 1);
      free(ids);
      return NULL;
    }
    ids[(*n)++] = (int)v;
    if (!*end) break;
    p = end + 1;
  }
  return ids;
}
