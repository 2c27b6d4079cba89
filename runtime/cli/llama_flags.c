/* See llama_flags.h. */
#include "llama_flags.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util/text.h"

enum { NO_VALUE, VALUE, MAYBE_VALUE }; /* MAYBE: on/off/auto, which older versions lacked */

/* Why each group is not followed. */
static const char *const THREADS =
    "the kernel runs on the GPU, and the cpu backend runs one thread per block (-t)";
static const char *const MEMORY = "mkc maps the file to read it once, and copies the weights into "
                                  "the kernel's own buffers (device memory, or the cpu backend's)";
static const char *const DEVICES =
    "the whole model runs as one kernel on one device (-ngl 0: the cpu backend)";
static const char *const BATCH = "a prompt is fed in chunks of --ubatch tokens";
static const char *const CACHE =
    "the KV cache is the kernel's own (a sliding-window layer's a ring of its window)";
static const char *const ATTENTION = "the megakernel's attention is always fused";
static const char *const SAMPLING = "sampling runs in the kernel already";
static const char *const WARMUP =
    "the kernel is compiled (or found in the cache) before the first step, which needs no "
    "warm-up";
static const char *const LOGS = "mkc has no such logs: its stats line is on stderr";
static const char *const COLOR = "mkc prints plain text";
/* llama-server's */
static const char *const BATCHING = "serve --parallel decodes the requests it holds together, "
                                    "taking new ones between steps; the plain server one at a time";
static const char *const METRICS = "GET /metrics is always answered";
static const char *const PROPS =
    "GET /props is answered, POST /props not: the options are the flags";
static const char *const WEBUI = "mkc serves no web page";
static const char *const EMBEDDINGS = "/v1/embeddings is always answered, beside the completions";
static const char *const JINJA = "mkc renders the chat templates of the families it knows "
                                 "(--chat-template), not jinja itself";
static const char *const HTTP = "mkc's server reads and answers on one thread";
static const char *const SIMILARITY =
    "a request shares the pages of any cached prompt that begins as its own does";
static const char *const CACHE_REUSE =
    "a cached prompt is reused for the start it shares with the next, without shifting chunks";
static const char *const UNIFIED = "the slots' KV pages come from one pool";
/* the draft model's */
static const char *const DRAFT_PLACE = "the draft model runs beside the target, on its device";
static const char *const DRAFT_CACHE = "the draft's KV cache has the target's element type";

static const struct {
  const char *names; /* every spelling, space-separated */
  int value;
  const char *const *why;
  int serve; /* llama-server's: taken by mkc serve only */
} FLAGS[] = {
    {"-tb --threads-batch", VALUE, &THREADS, 0},
    {"-C --cpu-mask", VALUE, &THREADS, 0},
    {"-Cr --cpu-range", VALUE, &THREADS, 0},
    {"--cpu-strict", VALUE, &THREADS, 0},
    {"--prio", VALUE, &THREADS, 0},
    {"--poll", VALUE, &THREADS, 0},
    {"-Cb --cpu-mask-batch", VALUE, &THREADS, 0},
    {"-Crb --cpu-range-batch", VALUE, &THREADS, 0},
    {"--cpu-strict-batch", VALUE, &THREADS, 0},
    {"--prio-batch", VALUE, &THREADS, 0},
    {"--poll-batch", VALUE, &THREADS, 0},
    {"--numa", VALUE, &THREADS, 0},
    {"--mlock --mmap --no-mmap --no-host -nr --no-repack --repack -dio --direct-io --no-direct-io",
     NO_VALUE, &MEMORY, 0},
    {"-lm --load-mode", VALUE, &MEMORY, 0},
    {"-dev --device -sm --split-mode -ts --tensor-split -mg --main-gpu -ot --override-tensor "
     "-ncmoe --n-cpu-moe --rpc -fitt --fit-target -fitc --fit-ctx",
     VALUE, &DEVICES, 0},
    {"-cmoe --cpu-moe -nkvo --no-kv-offload --kv-offload --no-op-offload --op-offload", NO_VALUE,
     &DEVICES, 0},
    {"-fit --fit", MAYBE_VALUE, &DEVICES, 0},
    {"-b --batch-size", VALUE, &BATCH, 0},
    {"--swa-full", NO_VALUE, &CACHE, 0},
    {"-dt --defrag-thold -cram --cache-ram -ctxcp --ctx-checkpoints --swa-checkpoints", VALUE,
     &CACHE, 0},
    {"-fa --flash-attn", MAYBE_VALUE, &ATTENTION, 0},
    {"-bs --backend-sampling", NO_VALUE, &SAMPLING, 0},
    {"--warmup --no-warmup", NO_VALUE, &WARMUP, 0},
    {"--perf --no-perf --log-disable --log-prefix --no-log-prefix --log-timestamps "
     "--no-log-timestamps --show-timings --no-show-timings",
     NO_VALUE, &LOGS, 0},
    {"--log-file -lv --verbosity --log-verbosity", VALUE, &LOGS, 0},
    {"--log-colors", MAYBE_VALUE, &LOGS, 0},
    {"-co --color", MAYBE_VALUE, &COLOR, 0},
    {"--simple-io", NO_VALUE, &COLOR, 0},
    {"-td --threads-draft -tbd --threads-batch-draft -Cd --cpu-mask-draft -Crd "
     "--cpu-range-draft --prio-draft --poll-draft --spec-draft-threads --spec-draft-threads-batch",
     VALUE, &THREADS, 0},
    {"-ngld --gpu-layers-draft --n-gpu-layers-draft --spec-draft-ngl -devd --device-draft "
     "--spec-draft-device -otd --override-tensor-draft --spec-draft-override-tensor",
     VALUE, &DRAFT_PLACE, 0},
    {"-ctkd --cache-type-k-draft -ctvd --cache-type-v-draft --spec-draft-type-k "
     "--spec-draft-type-v",
     VALUE, &DRAFT_CACHE, 0},
    {"-cb --cont-batching -nocb --no-cont-batching", NO_VALUE, &BATCHING, 1},
    {"--metrics", NO_VALUE, &METRICS, 1},
    {"--props", NO_VALUE, &PROPS, 1},
    {"--webui --no-webui", NO_VALUE, &WEBUI, 1},
    {"--embedding --embeddings", NO_VALUE, &EMBEDDINGS, 1},
    {"--jinja --no-jinja", NO_VALUE, &JINJA, 1},
    {"--threads-http", VALUE, &HTTP, 1},
    {"-sps --slot-prompt-similarity", VALUE, &SIMILARITY, 1},
    {"--cache-reuse", VALUE, &CACHE_REUSE, 1},
    {"-kvu --kv-unified -no-kvu --no-kv-unified", NO_VALUE, &UNIFIED, 1},
};

/* The values llama.cpp's on/off/auto flags take (and its older bool forms lacked). */
static int is_switch(const char *v) {
  static const char *const WORDS[] = {"on", "off",     "auto",     "true", "false", "1",
                                      "0",  "enabled", "disabled", "yes",  "no"};
  for (size_t k = 0; k < sizeof WORDS / sizeof *WORDS; k++)
    if (strcmp(v, WORDS[k]) == 0) return 1;
  return 0;
}

int mkc_llama_flag_skip(int argc, char **argv, int *i, int serve) {
  const char *a = argv[*i];
  for (size_t k = 0; k < sizeof FLAGS / sizeof *FLAGS; k++) {
    if (!mkc_words_hold(FLAGS[k].names, a) || (FLAGS[k].serve && !serve)) continue;
    const char *v = NULL;
    if (FLAGS[k].value == VALUE && *i + 1 >= argc)
      return mkc_cli_usage_error("%s needs a value", a);
    if (FLAGS[k].value == VALUE ||
        (FLAGS[k].value == MAYBE_VALUE && *i + 1 < argc && is_switch(argv[*i + 1])))
      v = argv[++*i];
    fprintf(stderr, "mkc: note: %s%s%s: not followed (llama.cpp's flag): %s\n", a, v ? " " : "",
            v ? v : "", *FLAGS[k].why);
    return 1;
  }
  return 0;
}
