/* mkc bench: decode speed of the megakernel, llama-bench style, with the
 * weight bandwidth it implies next to a plain copy's bandwidth measured in
 * the same run. Tests: pp P (a prompt of P tokens in the kernel's prompt
 * chunks: up to t_chunk, tiled on tensor cores past t_max), tg N
 * (N tokens, no drafts) and, with --draft-max K, tg N with prompt-lookup
 * drafts (on random weights drafts are rarely right: a floor, not a claim). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli.h"
#include "draft_source.h"
#include "json_format.h"
#include "loaded.h"
#include "bench_report.h"
#include "bench_stages.h"
#include "commands.h"
#include "backend/cuda/driver.h"
#include "exec/decode.h"
#include "util/clock.h"

#define REPS_DEFAULT 3 /* timed runs of each test (-r), after a warm-up */
#define REPS_MAX 100

typedef struct result {
  double tps[REPS_MAX];
  double steps_per_s; /* kernel steps per second (weights stream once per step) */
  double tokens_per_step;
} result;

/* The host's choice of each token (the samplers the kernel lacks): its document over the
 * model's vocabulary, restarted for each run, and the samplers. */
typedef struct bench_host {
  mkc_constraint *con;
  mkc_format_rules rules;
} bench_host;

/* One test reps times (after one warm-up run) on a reset session, greedy or
 * sampled as the session's options say, drafts from drafter (NULL: prompt
 * lookup), each token chosen on the host by host's samplers (NULL: in the kernel):
 * hist[0..depth) first, untimed (the cache a long conversation would
 * hold), then hist[depth..depth + n_prompt) and n_gen tokens, timed. */
static int run_test(mkc_loaded_model *m, mkc_drafter *drafter, const bench_host *host,
                    const int *hist, int depth, int n_prompt, int n_gen, int draft_max, int rounds,
                    int draft_layers, int adaptive, int draft_min, int reps, result *r) {
  memset(r, 0, sizeof *r);
  int *out = malloc((size_t)(n_gen + 1) * sizeof *out);
  double steps = 0, secs = 0, gen_tokens = 0;
  if (!out) return -1;
  /* rounds with --draft-layers: the kernel drafts with its first layers, not the drafter */
  mkc_decode_opts o = {.draft_max = draft_max,
                       .drafter = rounds > 1 && draft_layers ? NULL : drafter,
                       .rounds = rounds,
                       .draft_layers = rounds > 1 ? draft_layers : 0,
                       .adaptive = adaptive,
                       .draft_min = draft_min};
  for (int rep = -1; rep < reps; rep++) {
    mkc_decode_stats st, fill;
    mkc_session_reset(m->s);
    o.constraint = NULL; /* the depth's fill chooses nothing */
    if (depth > 0 && mkc_decode_with(m->s, &m->g, hist, depth, 0, &o, out, &fill) != 0) {
      free(out);
      return -1;
    }
    if (host && mkc_json_format_start(host->con, &host->rules, NULL, 1) != 0) {
      free(out);
      return -1;
    }
    o.constraint = host ? host->con : NULL;
    if (mkc_decode_more(m->s, &m->g, hist, depth + n_prompt, depth, n_gen, &o, out, &st) != 0) {
      free(out);
      return -1;
    }
    if (rep < 0) continue;
    if (n_gen == 0) {
      r->tps[rep] = n_prompt / st.prompt_seconds;
      steps += st.steps;
      secs += st.prompt_seconds;
      gen_tokens += n_prompt;
    } else {
      /* The first token comes from the prompt's step: count the rest. */
      double t = st.seconds - st.prompt_seconds;
      r->tps[rep] = (st.generated - 1) / t;
      steps += st.gen_steps;
      secs += t;
      gen_tokens += st.generated - 1;
    }
  }
  r->steps_per_s = steps / secs;
  r->tokens_per_step = gen_tokens / steps;
  free(out);
  return 0;
}

static double host_copy_bandwidth(size_t bytes) {
  char *a = malloc(bytes), *b = malloc(bytes);
  double best = -1;
  if (a && b) {
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int i = 0; i < 4; i++) {
      double t0 = mkc_seconds();
      memcpy(b, a, bytes);
      double s = mkc_seconds() - t0;
      double gbs = 2.0 * (double)bytes / s / 1e9;
      if (i > 0 && gbs > best) best = gbs;
    }
    if (b[bytes / 2] != 1) best = -1; /* keeps the copy from being optimised away */
  }
  free(a);
  free(b);
  return best;
}

static const char USAGE[] =
    "usage: mkc bench --preset P --random-weights SEED [-p N] [-n N] [-d N] [options]\n"
    "       mkc bench -m MODEL [-p N] [-n N] [-d N] [--draft-max K] [options]\n"
    "\n"
    "Decode speed, llama-bench's table: model, size (the bytes a step of one input\n"
    "streams: quantized matrices as their blocks, of experts the ones an input\n"
    "runs), params (all), backend, test, t/s; then mkc's\n"
    "columns: the weight bandwidth a step implies, next to a copy's bandwidth\n"
    "measured in the same run. Tests: ppN (a prompt of N tokens), tgN (N generated\n"
    "tokens) and, with --draft-max K, tgN with prompt-lookup drafts (and with\n"
    "--draft-adaptive, at a depth the acceptance sets, as run's); with\n"
    "--rounds R, tgN with R steps per launch (drafted in the kernel); then tgN\n"
    "sampled in the kernel (llama.cpp's default chain, temperature 0.8); with one\n"
    "of llama.cpp's samplers the kernel lacks (as run's: --typical, --mirostat,\n"
    "--dry-multiplier, ...), tgN with that chain on the host, each step's logits\n"
    "read back (and with --draft-max, its drafts verified there).\n"
    "  -p N                   prompt tokens of the pp test (default 512, at most the\n"
    "                         context less one)\n"
    "  -n N                   generated tokens of the tg tests (default 128)\n"
    "  -d, --n-depth N        tokens already in the cache when each test starts\n"
    "                         (filled untimed): \"tg128 @ d4096\"\n"
    "  -r, --repetitions N    timed runs of each test, after a warm-up (default 3)\n"
    "  -o, --output F         md (the table, default), csv, json or jsonl:\n"
    "                         llama-bench's formats, its field names where it has the\n"
    "                         figure\n"
    "  --graph GRAPH          graph file (default graphs/llama.lua)\n"
    "  --backend auto|cuda|cpu  auto: the GPU if there is one; a large model on\n"
    "                         the cpu backend must be asked for with --backend cpu\n"
    "  --stages               then each stage's time (block 0's clock, a kernel built\n"
    "                         with stage timers), greedy and sampled, next to the\n"
    "                         bytes it moves and the time they take at the copy\n"
    "                         bandwidth measured here\n"
    "  -l, --logit-bias ID+B  every test with these logit biases (as run's), greedy\n"
    "                         and sampled: what a table of them costs the LM head\n"
    "  --ctx N, --kv-dtype T, --blocks B (-t N), --dequant, --ubatch N,\n"
    "  --draft-layers L, -md FILE, --draft-head, --rounds R, --draft-adaptive,\n"
    "  --draft-min K: as for run\n";

/* The flags bench takes and their checks: 0, the usage error's 2, or -1
 * after --help. */
static int bench_flags(int argc, char **argv, mkc_cli *c) {
  int rc = mkc_cli_parse(
      argc, argv, 2,
      "--graph --preset --random-weights -n --draft-max --backend --ctx --blocks -m --kv-dtype "
      "--dequant -p -d --stages --draft-layers -md --draft-head --ubatch --rounds --draft-adaptive "
      "--draft-min -l"
      " --typical --top-nsigma --xtc-probability --xtc-threshold --dynatemp-range --dynatemp-exp "
      "--mirostat --mirostat-lr --mirostat-ent --dry-multiplier --dry-base --dry-allowed-length "
      "--dry-penalty-last-n --dry-sequence-breaker --repetitions -o",
      0, c);
  if (rc) return rc == MKC_CLI_HELP ? -1 : rc;
  if ((rc = mkc_cli_check_model(c, "bench")) || (rc = mkc_draft_source_check(c, "bench")))
    return rc;
  if (!c->preset && !c->model_path)
    return mkc_cli_usage_error("%s", "bench: --preset (or -m MODEL) is required");
  if (!c->have_seed && !c->model_path)
    return mkc_cli_usage_error("%s", "bench: --random-weights SEED is required");
  if (c->n_gen < 2) return mkc_cli_usage_error("%s", "bench: -n must be at least 2");
  if (c->prompt) { /* llama-bench's -p: the pp test's prompt length */
    char *end;
    long n = strtol(c->prompt, &end, 10);
    if (!*c->prompt || *end || n < 1 || n > 1 << 20)
      return mkc_cli_usage_error("bench: -p: expected a prompt length in 1..1048576, got '%s'",
                                 c->prompt);
  }
  if (c->n_dry_breakers && !c->model_path)
    return mkc_cli_usage_error("%s", "bench: --dry-sequence-breaker is matched on the tokens' "
                                     "texts: it needs the model's tokenizer (-m)");
  if (c->backend && strcmp(c->backend, "ref") == 0)
    return mkc_cli_usage_error("%s", "bench: the ref backend is an oracle, not something to time");
  if (c->out && mkc_bench_format_from_name(c->out) < 0)
    return mkc_cli_usage_error("bench: -o: expected md, csv, json or jsonl, got '%s'", c->out);
  if (c->out && strcmp(c->out, "md") && c->stages)
    return mkc_cli_usage_error("%s", "bench: --stages prints a table of its own: with -o md");
  return 0;
}

/* Where the session runs: the GPU's arch or the host's machine name, and the
 * copy bandwidth measured there now (GB/s, < 0 when unknown) over *copy_bytes. */
static double machine(mkc_session *s, char *arch, size_t cap, size_t *copy_bytes) {
  int cuda = strcmp(mkc_session_backend(s), "cuda") == 0;
  mkc_cuda_device dev;
  char why[256];
  if (cuda && mkc_cuda_device_get(&dev, why, sizeof why) == 0) {
    snprintf(arch, cap, "%s", dev.arch);
  } else {
    struct utsname u;
    snprintf(arch, cap, "%s", uname(&u) == 0 ? u.machine : "host");
  }
  *copy_bytes = cuda ? (size_t)1 << 30 : (size_t)256 << 20;
  return cuda ? mkc_session_copy_bandwidth(s, *copy_bytes) : host_copy_bandwidth(*copy_bytes);
}

/* pp, tg, draft, adaptive, verify, rounds, sampled, sampled draft, host, host draft */
enum { MAX_TESTS = 10 };

typedef struct bench_test {
  char name[160];
  int n_prompt, n_gen, draft_max, sampled, rounds, full; /* full: every step verifies K + 1 */
  int adaptive; /* the depth follows the acceptance (--draft-adaptive) */
  int host;     /* each token chosen on the host (the samplers the kernel lacks) */
} bench_test;

/* llama-bench's rows: prompt processing, generation, and generation with
 * drafts; then generation sampled in the kernel (llama.cpp's default chain at
 * temperature 0.8), with drafts too when asked: its cost next to greedy's; then, where more
 * names samplers the kernel lacks, generation with them on the host (and drafts). */
static int bench_tests(const mkc_cli *c, int n_pp, const mkc_sampling_more *more,
                       bench_test tests[MAX_TESTS]) {
  int n = 0;
  memset(tests, 0, MAX_TESTS * sizeof *tests);
  snprintf(tests[n].name, sizeof tests[0].name, "pp%d", n_pp);
  tests[n].n_prompt = n_pp, tests[n].n_gen = 0, tests[n++].draft_max = 0;
  snprintf(tests[n].name, sizeof tests[0].name, "tg%d", c->n_gen);
  tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n++].draft_max = 0;
  if (c->draft_max > 0) {
    snprintf(tests[n].name, sizeof tests[0].name, "tg%d draft%d", c->n_gen, c->draft_max);
    tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n++].draft_max = c->draft_max;
    if (c->draft_adaptive) { /* the controller next to plain and fixed-depth drafting */
      snprintf(tests[n].name, sizeof tests[0].name, "tg%d draft%d..%d adaptive", c->n_gen,
               c->draft_min, c->draft_max);
      tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n].adaptive = 1;
      tests[n++].draft_max = c->draft_max;
    }
    /* A verify step's cost, whatever acceptance is: K drafts every step. */
    snprintf(tests[n].name, sizeof tests[0].name, "tg%d verify%d", c->n_gen, c->draft_max + 1);
    tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n].full = 1;
    tests[n++].draft_max = c->draft_max;
  }
  if (c->rounds > 1) { /* the drafts (if any) in the kernel, R steps per launch */
    if (c->draft_max > 0)
      snprintf(tests[n].name, sizeof tests[0].name, "tg%d draft%d rounds%d", c->n_gen, c->draft_max,
               c->rounds);
    else
      snprintf(tests[n].name, sizeof tests[0].name, "tg%d rounds%d", c->n_gen, c->rounds);
    tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n].rounds = c->rounds;
    tests[n++].draft_max = c->draft_max;
  }
  snprintf(tests[n].name, sizeof tests[0].name, "tg%d sampled", c->n_gen);
  tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n].sampled = 1, tests[n++].draft_max = 0;
  if (c->draft_max > 0) {
    snprintf(tests[n].name, sizeof tests[0].name, "tg%d sampled draft%d", c->n_gen, c->draft_max);
    tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n].sampled = 1;
    tests[n++].draft_max = c->draft_max;
  }
  if (mkc_sampling_more_on(more)) {
    char names[120];
    mkc_sampling_more_names(more, names, sizeof names);
    for (int d = 0; d <= (c->draft_max > 0); d++) {
      char drafts[24] = "";
      if (d) snprintf(drafts, sizeof drafts, " draft%d", c->draft_max);
      snprintf(tests[n].name, sizeof tests[0].name, "tg%d host%s (%s)", c->n_gen, drafts, names);
      tests[n].n_prompt = 1, tests[n].n_gen = c->n_gen, tests[n].sampled = 1, tests[n].host = 1;
      tests[n++].draft_max = d ? c->draft_max : 0;
    }
  }
  return n;
}

int mkc_cmd_bench(int argc, char **argv) {
  mkc_cli c = {.n_gen = 128, .usage = USAGE};
  int rc = bench_flags(argc, argv, &c);
  if (rc) return rc < 0 ? 0 : rc;
  mkc_loaded_model m;
  int *hist = NULL;
  mkc_drafter *full = NULL; /* the verify rows' drafter */
  mkc_draft_source ds = {0};
  bench_host host = {0};
  rc = 1;
  if (mkc_json_format_rules(&c, &host.rules) != 0 || mkc_loaded_plan(&c, &m) != 0 ||
      mkc_draft_source_plan(&c, &m, &ds) != 0)
    goto done;
  int n_pp = c.prompt ? atoi(c.prompt) : 512, depth = c.depth;
  if (n_pp > m.g.max_ctx - 1) n_pp = m.g.max_ctx - 1; /* the pp row's one generated token */
  int need = depth + (n_pp > 1 + c.n_gen ? n_pp : 1 + c.n_gen);
  if (need > m.g.max_ctx) {
    fprintf(stderr,
            "mkc: error: bench: -d %d and the longest test (%d tokens) need %d positions, more "
            "than the context (%d); use --ctx\n",
            depth, need - depth, need, m.g.max_ctx);
    goto done;
  }
  /* A warm-up and reps timed runs of each test, each after its depth. */
  int reps = c.repetitions ? c.repetitions : REPS_DEFAULT;
  int format = c.out ? mkc_bench_format_from_name(c.out) : MKC_BENCH_MD;
  int host_rows = mkc_sampling_more_on(&host.rules.more) ? 1 + (c.draft_max > 0) : 0;
  double tokens = (reps + 1) *
                  (n_pp + c.n_gen * (host_rows + (c.draft_max > 0 ? 4.0 + c.draft_adaptive : 2.0)) +
                   4.0 * depth);
  if (mkc_loaded_cpu_guard(&c, &m, tokens, "bench") != 0) goto done;
  if (mkc_loaded_start(&c, &m) != 0 || mkc_draft_source_start(&c, &m, &ds) != 0) goto done;
  hist = malloc((size_t)(depth + n_pp) * sizeof *hist);
  if (!hist) {
    fprintf(stderr, "mkc: error: bench: out of memory\n");
    goto done;
  }
  for (int i = 0; i < depth + n_pp; i++) hist[i] = (int)((i * 2654435761u) % (unsigned)m.g.vocab);

  /* What one step streams: every weight once, as the kernel stores it (the tied head shares
   * the embedding; quantized matrices as their blocks; of experts, the ones an input runs). */
  double params = mkc_graph_params(&m.g), weight_bytes = mkc_graph_weight_bytes(&m.g);
  const char *backend = mkc_session_backend(m.s);
  char arch[72] = "", types[64], size[32];
  size_t copy_bytes;
  double copy_gbs = machine(m.s, arch, sizeof arch, &copy_bytes);
  bench_test tests[MAX_TESTS];
  mkc_sampling greedy = {.top_p = 1.0f, .repeat_penalty = 1.0f}, sampled = {.temp = 0.8f,
                                                                            .top_k = 40,
                                                                            .top_p = 0.95f,
                                                                            .min_p = 0.05f,
                                                                            .repeat_penalty = 1.0f,
                                                                            .repeat_last_n = 64,
                                                                            .seed_lo = 1};
  mkc_sampling given; /* -l: its biases on both */
  unsigned long long unused;
  if (mkc_cli_sampling(&c, &given, &unused) != 0 ||
      mkc_sampling_check_vocab(&given, m.g.vocab) != 0)
    goto done;
  greedy.n_bias = sampled.n_bias = given.n_bias;
  memcpy(greedy.bias_id, given.bias_id, sizeof given.bias_id);
  memcpy(greedy.bias, given.bias, sizeof given.bias);
  memcpy(sampled.bias_id, given.bias_id, sizeof given.bias_id);
  memcpy(sampled.bias, given.bias, sizeof given.bias);
  int n_tests = bench_tests(&c, n_pp, &host.rules.more, tests);
  if (mkc_sampling_more_on(&host.rules.more) &&
      !(host.con = mkc_host_choice_open(c.model_path ? m.file.tok : NULL, m.g.vocab)))
    goto done;
  const char *base = strrchr(m.g.graph_path, '/');
  base = base ? base + 1 : m.g.graph_path;
  char model[260];
  mkc_graph_matrix_types(&m.g, types, sizeof types);
  snprintf(model, sizeof model, "%.*s %s %s", (int)strcspn(base, "."), base, m.g.preset, types);
  mkc_bench_report_begin(format);
  for (int i = 0; i < n_tests; i++) {
    result r;
    if (mkc_session_set_sampling(m.s, tests[i].sampled ? &sampled : &greedy) != 0) goto done;
    if (tests[i].full && !full && !(full = mkc_drafter_full())) goto done;
    if (run_test(&m, tests[i].full ? full : ds.drafter, tests[i].host ? &host : NULL, hist, depth,
                 tests[i].n_prompt, tests[i].n_gen, tests[i].draft_max, tests[i].rounds,
                 c.draft_layers, tests[i].adaptive, c.draft_min, reps, &r) != 0)
      goto done;
    mkc_bench_row row = {.model_file = c.model_path ? c.model_path : m.g.preset,
                         .model = model,
                         .model_bytes = weight_bytes,
                         .params = params,
                         .backend = backend,
                         .arch = arch,
                         .test = tests[i].name,
                         .n_prompt = tests[i].n_gen ? 0 : tests[i].n_prompt,
                         .n_gen = tests[i].n_gen,
                         .n_depth = depth,
                         .n_draft = tests[i].draft_max,
                         .tps = r.tps,
                         .reps = reps,
                         .tokens_per_step = r.tokens_per_step,
                         .steps_per_s = r.steps_per_s,
                         .weights_gbs = r.steps_per_s * weight_bytes / 1e9,
                         .copy_gbs = copy_gbs};
    mkc_bench_report_row(format, &row, i);
  }
  mkc_bench_report_end(format);
  if (format == MKC_BENCH_MD) {
    mkc_bench_size(weight_bytes, size, sizeof size);
    printf("\n%s: %s. Copy bandwidth (read + write, %zu MiB buffer, same run): %.1f GB/s. "
           "Weights stream once per kernel step: weights GB/s = steps/s x %s.\n",
           backend, mkc_session_describe(m.s), copy_bytes >> 20, copy_gbs, size);
    if (given.n_bias) printf("Every test with %d logit biases (-l).\n", given.n_bias);
  }
  if (c.stages && mkc_bench_stages(m.s, &m.g, m.src.source, hist + depth, 1,
                                   c.n_gen < m.g.max_ctx - depth - 1 ? c.n_gen : 1, &greedy,
                                   &sampled, copy_gbs) != 0)
    goto done;
  rc = 0;
done:
  free(hist);
  mkc_constraint_close(host.con);
  mkc_format_rules_free(&host.rules);
  if (full) mkc_drafter_close(full);
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  return rc;
}
