/* mkc quantize: a GGUF model rewritten in one of llama-quantize's file types
 * (Q4_K_M, Q8_0, ...), each tensor typed by llama.cpp's mix rules
 * (formats/quant_mix.h) and encoded by mkc's quantizers (formats/quantize.h),
 * with llama-quantize's command line. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "formats/dequant.h"
#include "formats/gguf.h"
#include "formats/gguf_override.h"
#include "formats/imatrix.h"
#include "formats/quant_mix.h"
#include "formats/quantize.h"
#include "quantize_cmd.h"
#include "util/files.h"

static const char USAGE[] =
    "usage: mkc quantize [options] IN.gguf [OUT.gguf] TYPE [THREADS]\n"
    "\n"
    "Writes IN's model in TYPE, as llama.cpp's llama-quantize does: its metadata\n"
    "copied (general.file_type set to TYPE's), each matrix in the type TYPE's mix\n"
    "gives its kind and layer (Q4_K_M: attn_v and ffn_down Q6_K in the first and\n"
    "last eighths of the layers and every third between, the output Q6_K, ...),\n"
    "norms and vectors as they are. A row that is not whole blocks of its type\n"
    "falls back as llama.cpp's does (Q4_K to Q5_0, Q6_K to Q8_0, ...). The types\n"
    "are llama-quantize's; the values mkc's: each block's scales fitted for the\n"
    "least squared error, weighted by the importance matrix where one is given\n"
    "(TQ1_0, TQ2_0, Q1_0, Q2_0, MXFP4 and NVFP4 by ggml's own rules, its bytes).\n"
    "  TYPE                   Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K_S, Q3_K_M,\n"
    "                         Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL,\n"
    "                         IQ4_XS, IQ3_S, IQ3_M, TQ1_0, TQ2_0, Q1_0, Q2_0,\n"
    "                         MXFP4_MOE (experts MXFP4, the rest Q8_0), F16, BF16\n"
    "                         or F32, any case (Q3_K, Q4_K, Q5_K: the _M mixes),\n"
    "                         and with --imatrix\n"
    "                         IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS,\n"
    "                         IQ3_XS and Q2_K_S\n"
    "                         (COPY: every tensor as it is, for --prune-layers alone\n"
    "                         or a split model put in one file; TYPE may also be\n"
    "                         llama.cpp's number of the file type, 15 for Q4_K_M)\n"
    "  OUT                    default: IN's folder's ggml-model-TYPE.gguf\n"
    "  THREADS                threads that encode (default: every core)\n"
    "  --allow-requantize     a matrix already quantized is decoded and encoded\n"
    "                         again (without it, refused: each pass adds error)\n"
    "  --leave-output-tensor  output.weight as it is\n"
    "  --pure                 every quantized matrix in TYPE's own type, no mix\n"
    "  --output-tensor-type T     output.weight in type T (q8_0, q6_k, f16, ...)\n"
    "  --token-embedding-type T   token_embd.weight in type T\n"
    "  --tensor-type PATTERN=T    each matrix whose name PATTERN matches (an\n"
    "                         extended regular expression, the first that matches)\n"
    "                         in type T; repeatable\n"
    "  --imatrix FILE         llama-imatrix's importance matrix (GGUF or .dat): each\n"
    "                         matrix's error weighted by the inputs its columns\n"
    "                         meet; some mixes' rules change with it, as llama.cpp's\n"
    "  --include-weights NAME     use the matrix's entries only for tensors whose\n"
    "                         names contain NAME; repeatable\n"
    "  --exclude-weights NAME     not for tensors whose names contain NAME\n"
    "  --tensor-type-file F   --tensor-type's PATTERN=T items, separated by spaces or\n"
    "                         newlines\n"
    "  --override-kv KEY=TYPE:VALUE  metadata set in OUT (and read so by the rules),\n"
    "                         as llama.cpp's flag; repeatable\n"
    "  --dry-run              the types and sizes, without writing OUT\n"
    "  --prune-layers L0,L1,...   those layers left out, the rest numbered on\n"
    "                         (block_count set to the layers kept)\n"
    "  --keep-split           OUT in as many files as IN (a split model, llama.cpp's\n"
    "                         gguf-split's): OUT-00001-of-0000N.gguf, ..., each with\n"
    "                         the tensors of IN's file of that number\n"
    "  --max-buffer-size MiB  a tensor read and encoded in slabs of rows whose\n"
    "                         floats and bytes fit (default 8192)\n";

/* A tensor type by its name (q4_k, Q8_0, f16, ...; any case), or MKC_QUANT_NO_TYPE. */
static uint32_t type_named(const char *name) {
  for (uint32_t t = 0; t < MKC_GGML_TYPE_COUNT; t++) {
    const mkc_ggml_type_info *info = mkc_ggml_type(t);
    if (info && strcasecmp(info->name, name) == 0) return t;
  }
  return MKC_QUANT_NO_TYPE;
}

static int usage(const char *fmt, const char *arg) {
  return mkc_cli_usage_error_in("quantize", fmt, arg);
}

/* A flag's type value; MKC_QUANT_NO_TYPE after a usage message. */
static uint32_t type_arg(const char *flag, const char *v, int *rc) {
  uint32_t t = type_named(v);
  if (t == MKC_QUANT_NO_TYPE) {
    char msg[600];
    snprintf(msg, sizeof msg, "quantize: %s: '%%s' is not a tensor type (%s)", flag,
             mkc_dequant_type_names());
    *rc = usage(msg, v);
  }
  return t;
}

static void free_overrides(quantize_options *o) {
  for (int i = 0; i < o->n_ov; i++) regfree(&o->ov[i].re);
  o->n_ov = 0;
}

/* One PATTERN=TYPE of --tensor-type (flag) or --tensor-type-file into o; 0 or a usage error's
 * status. */
static int tensor_type(quantize_options *o, const char *flag, const char *v) {
  const char *eq = strrchr(v, '=');
  char msg[200];
  if (!eq || eq == v || !eq[1]) {
    snprintf(msg, sizeof msg, "quantize: %s: expected PATTERN=TYPE, got '%%s'", flag);
    return usage(msg, v);
  }
  if (o->n_ov == MAX_OVERRIDES) return usage("quantize: --tensor-type: more than %s", "1024");
  if (eq - v >= 512) {
    snprintf(msg, sizeof msg, "quantize: %s: a pattern of 512 bytes or more: '%%.40s...'", flag);
    return usage(msg, v);
  }
  char pattern[512];
  snprintf(pattern, sizeof pattern, "%.*s", (int)(eq - v), v);
  quantize_override *ov = &o->ov[o->n_ov];
  int rc = 0;
  if ((ov->type = type_arg(flag, eq + 1, &rc)) == MKC_QUANT_NO_TYPE) return rc;
  if (regcomp(&ov->re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
    snprintf(msg, sizeof msg, "quantize: %s: '%%s' is not a regular expression", flag);
    return usage(msg, pattern);
  }
  o->n_ov++;
  return 0;
}

/* --tensor-type-file: PATTERN=TYPE items separated by spaces or newlines, as llama-quantize's. */
static int tensor_type_file(quantize_options *o, const char *path) {
  size_t size;
  char *text = mkc_read_file(path, &size);
  if (!text) return mkc_error_in(path, "--tensor-type-file: %s", strerror(errno)), 2;
  int rc = 0;
  if (memchr(text, 0, size)) rc = usage("quantize: --tensor-type-file %s: a NUL byte in it", path);
  for (char *save = NULL, *item = strtok_r(text, " \t\r\n", &save); item && !rc;
       item = strtok_r(NULL, " \t\r\n", &save))
    rc = tensor_type(o, "--tensor-type-file", item);
  free(text);
  return rc;
}

static int cmp_int(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* --prune-layers L0,L1,...: layer numbers (0 up), kept ascending and each once; 0 or a usage
 * error's status. */
static int prune_layers(quantize_options *o, const char *v) {
  for (const char *p = v;;) {
    char *end;
    long id = strtol(p, &end, 10);
    if (end == p || id < 0 || id > 1000000 || (*end && *end != ','))
      return usage("quantize: --prune-layers: expected layer numbers 0, 1, ... separated by "
                   "commas, got '%s'",
                   v);
    if (o->n_prune == MAX_PRUNE) return usage("quantize: --prune-layers: more than %s", "4096");
    o->prune[o->n_prune++] = (int)id;
    if (!*end) break;
    p = end + 1;
  }
  qsort(o->prune, (size_t)o->n_prune, sizeof *o->prune, cmp_int);
  int n = 0;
  for (int i = 0; i < o->n_prune; i++)
    if (!n || o->prune[n - 1] != o->prune[i]) o->prune[n++] = o->prune[i];
  o->n_prune = n;
  return 0;
}

/* Reads argv into o and m's flags; 0, MKC_CLI_HELP, or a usage error's status. */
static int parse(int argc, char **argv, quantize_options *o, mkc_quant_mix *m) {
  const char *pos[4];
  int n_pos = 0, rc = 0;
  for (int i = 2; i < argc && !rc; i++) {
    const char *a = argv[i];
    int has_value = strcmp(a, "--output-tensor-type") == 0 ||
                    strcmp(a, "--token-embedding-type") == 0 || strcmp(a, "--tensor-type") == 0 ||
                    strcmp(a, "--imatrix") == 0 || strcmp(a, "--include-weights") == 0 ||
                    strcmp(a, "--exclude-weights") == 0 || strcmp(a, "--tensor-type-file") == 0 ||
                    strcmp(a, "--override-kv") == 0 || strcmp(a, "--prune-layers") == 0 ||
                    strcmp(a, "--max-buffer-size") == 0;
    if (has_value && i + 1 >= argc) return usage("quantize: %s needs a value", a);
    const char *v = has_value ? argv[++i] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      return MKC_CLI_HELP;
    } else if (strcmp(a, "--allow-requantize") == 0)
      o->requantize = 1;
    else if (strcmp(a, "--leave-output-tensor") == 0)
      m->quantize_output = 0;
    else if (strcmp(a, "--pure") == 0)
      m->pure = 1;
    else if (strcmp(a, "--dry-run") == 0)
      o->dry_run = 1;
    else if (strcmp(a, "--keep-split") == 0)
      o->keep_split = 1;
    else if (strcmp(a, "--prune-layers") == 0)
      rc = prune_layers(o, v);
    else if (strcmp(a, "--max-buffer-size") == 0) {
      char *end;
      long long mib = strtoll(v, &end, 10);
      if (end == v || *end || mib < 1 || mib > (1ll << 30))
        return usage("quantize: --max-buffer-size: expected MiB, 1 or more, got '%s'", v);
      o->max_buffer = (size_t)mib << 20;
    } else if (strcmp(a, "--output-tensor-type") == 0)
      m->output_type = type_arg(a, v, &rc);
    else if (strcmp(a, "--token-embedding-type") == 0)
      m->embd_type = type_arg(a, v, &rc);
    else if (strcmp(a, "--imatrix") == 0)
      o->imatrix = v;
    else if (strcmp(a, "--include-weights") == 0 || strcmp(a, "--exclude-weights") == 0) {
      if (o->n_names == MAX_NAMES) return usage("quantize: %s: more than 64", a);
      o->names[o->n_names++] = v;
      a[2] == 'i' ? (o->include = 1) : (o->exclude = 1);
      if (o->include && o->exclude)
        return usage("%s", "quantize: --include-weights and --exclude-weights cannot be used "
                           "together");
    } else if (strcmp(a, "--tensor-type") == 0)
      rc = tensor_type(o, a, v);
    else if (strcmp(a, "--tensor-type-file") == 0)
      rc = tensor_type_file(o, v);
    else if (strcmp(a, "--override-kv") == 0) {
      if (o->n_kv == MAX_NAMES) return usage("quantize: --override-kv: more than %s", "64");
      if (mkc_gguf_override_check(v) != 0) return 2;
      o->kv[o->n_kv++] = v;
    } else if (a[0] == '-' && a[1])
      return usage("quantize: unknown option '%s'", a);
    else if (n_pos == 4)
      return usage("quantize: one argument too many: '%s' (IN [OUT] TYPE [THREADS])", a);
    else
      pos[n_pos++] = a;
  }
  if (rc) return rc;
  if (n_pos < 2) return usage("%s", "quantize: IN.gguf and TYPE are required");
  if (o->n_names && !o->imatrix)
    return usage("quantize: %s: without --imatrix there are no entries to choose from",
                 o->include ? "--include-weights" : "--exclude-weights");
  o->in = pos[0];
  /* as llama-quantize: IN TYPE [THREADS] where the second is a type, else IN OUT TYPE [THREADS] */
  int typed = mkc_quant_ftype_parse(pos[1]) != NULL, at = typed ? 1 : 2;
  if (at >= n_pos) return usage("%s", "quantize: IN.gguf, OUT.gguf and TYPE are required");
  if (!(o->ft = mkc_quant_ftype_parse(pos[at]))) {
    char msg[700];
    snprintf(msg, sizeof msg, "quantize: '%%s' is not a type llama-quantize makes (%s)",
             mkc_quant_ftype_names());
    return usage(msg, pos[at]);
  }
  if (at + 2 < n_pos)
    return usage("quantize: one argument too many: '%s' (IN [OUT] TYPE [THREADS])", pos[at + 2]);
  if (at + 1 < n_pos) {
    char *end;
    long t = strtol(pos[at + 1], &end, 10);
    if (*end || end == pos[at + 1] || t < 1 || t > 32)
      return usage("quantize: THREADS: expected 1 to 32, got '%s'", pos[at + 1]);
    o->threads = (int)t;
  }
  if (typed) { /* IN's folder's ggml-model-TYPE.gguf */
    const char *slash = strrchr(o->in, '/');
    int dir = slash ? (int)(slash - o->in + 1) : 0;
    snprintf(o->out_buf, sizeof o->out_buf, "%.*sggml-model-%s%s", dir, o->in, o->ft->name,
             o->keep_split ? "" : ".gguf");
  } else { /* --keep-split: OUT's .gguf is the shards' */
    size_t n = strlen(pos[1]);
    int cut = o->keep_split && n > 5 && strcmp(pos[1] + n - 5, ".gguf") == 0;
    snprintf(o->out_buf, sizeof o->out_buf, "%.*s", (int)(cut ? n - 5 : n), pos[1]);
  }
  o->out = o->out_buf;
  return 0;
}

/* Metadata that may be one value or one per layer: the first. */
static int64_t hparam(const mkc_gguf *f, const char *arch, const char *name, int64_t missing) {
  char key[200];
  snprintf(key, sizeof key, "%s.%s", arch, name);
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  return kv && kv->n ? mkc_gguf_arr_int(kv, 0) : missing;
}

/* Dimensions without the trailing ones, as ggml counts them. */
static int dims(const mkc_gguf_tensor *t) {
  int n = (int)t->n_dims;
  while (n > 1 && t->ne[n - 1] == 1) n--;
  return n;
}

static const mkc_gguf *sort_file; /* qsort's context */
static int by_order(const void *a, const void *b) {
  return mkc_quant_order(sort_file->tensors[*(const uint64_t *)a].name,
                         sort_file->tensors[*(const uint64_t *)b].name);
}

static const char *type_name(uint32_t t) { return mkc_ggml_type(t)->name; }

/* Whether the importance matrix's entry for t, if any, has its size. Not: false after
 * llama.cpp's error, but for token_embd, which it quantizes unweighted, as llama.cpp does. */
static int imatrix_fits(const quantize_options *o, const mkc_gguf_tensor *t) {
  const mkc_imatrix_entry *e = mkc_imatrix_find(&o->im, t->name);
  uint64_t want = mkc_quantize_imatrix_size(t);
  if (!e || e->n == want || strcmp(t->name, "token_embd.weight") == 0) return 1;
  fprintf(stderr,
          "mkc: error: quantize: %s: the importance matrix has %zu values, and the tensor %llu "
          "columns (by experts): the matrix is another model's\n",
          t->name, e->n, (unsigned long long)want);
  return 0;
}

/* The type tensor t is written in (the first pass, before anything is written or said, as
 * llama-quantize's): MKC_QUANT_NO_TYPE after a message. *fell: the type the rules gave where
 * its rows are not whole blocks of it. */
static uint32_t decide(const quantize_options *o, mkc_quant_mix *m, const mkc_gguf_tensor *t,
                       const char *name, uint32_t *fell) {
  uint32_t ov = MKC_QUANT_NO_TYPE;
  for (int i = 0; i < o->n_ov && ov == MKC_QUANT_NO_TYPE; i++)
    if (regexec(&o->ov[i].re, name, 0, NULL, 0) == 0) ov = o->ov[i].type;
  uint32_t type = mkc_quant_type(m, name, dims(t), t->ne[0], t->type, ov, fell);
  int is_float = t->type == MKC_GGML_F32 || t->type == MKC_GGML_F16 || t->type == MKC_GGML_BF16;
  if (type == MKC_QUANT_NO_TYPE)
    fprintf(stderr,
            "mkc: error: quantize: %s: its %lld columns are not whole blocks of %s, and "
            "llama.cpp's quantize has no type to fall back to\n",
            name, (long long)t->ne[0], type_name(*fell));
  else if (type != t->type && mkc_quant_needs_imatrix(m, name, type) &&
           !mkc_imatrix_find(&o->im, t->name))
    fprintf(stderr,
            "mkc: error: quantize: %s in %s, a very low-bit type, needs an importance matrix, "
            "and %s\n",
            name, type_name(type),
            o->imatrix ? "the --imatrix file has no entry for it" : "no --imatrix was given");
  else if (type != t->type && t->ne[0] % mkc_ggml_type(type)->block != 0)
    fprintf(stderr,
            "mkc: error: quantize: %s: its %lld columns are not whole blocks of %s, the type "
            "a flag gives it\n",
            name, (long long)t->ne[0], type_name(type));
  else if (type != t->type && !imatrix_fits(o, t))
    ; /* said */
  else if (type != t->type && !is_float && !o->requantize)
    fprintf(stderr,
            "mkc: error: quantize: %s is %s already: quantizing it again adds error "
            "(--allow-requantize does it all the same)\n",
            name, type_name(t->type));
  else
    return type;
  return MKC_QUANT_NO_TYPE;
}

/* --keep-split's order, as llama-quantize sorts under it: by the file a tensor is in, then its
 * place there; each name stays with its tensor. 0, or -1 out of memory. */
typedef struct named {
  uint64_t index;
  const char *name;
} named;
static int by_file(const void *a, const void *b) {
  const mkc_gguf_tensor *x = &sort_file->tensors[((const named *)a)->index],
                        *y = &sort_file->tensors[((const named *)b)->index];
  if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
  return (x->offset > y->offset) - (x->offset < y->offset);
}
static int sort_by_file(const mkc_gguf *f, uint64_t *order, const char **names, uint64_t n) {
  named *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return fprintf(stderr, "mkc: error: quantize: out of memory\n"), -1;
  for (uint64_t k = 0; k < n; k++) v[k] = (named){order[k], names[k]};
  sort_file = f;
  qsort(v, n, sizeof *v, by_file);
  for (uint64_t k = 0; k < n; k++) order[k] = v[k].index, names[k] = v[k].name;
  free(v);
  return 0;
}

int mkc_cmd_quantize(int argc, char **argv) {
  quantize_options o = {.max_buffer = (size_t)8 << 30}; /* llama-quantize's 8 GiB */
  mkc_quant_mix m = {
      .quantize_output = 1, .output_type = MKC_QUANT_NO_TYPE, .embd_type = MKC_QUANT_NO_TYPE};
  int rc = parse(argc, argv, &o, &m);
  size_t loaded = 0; /* the importance matrix's entries before --include/--exclude-weights */
  if (rc) {
    free_overrides(&o);
    return rc == MKC_CLI_HELP ? 0 : rc;
  }
  if (o.ft->imatrix && !o.imatrix) {
    fprintf(stderr,
            "mkc: error: quantize: %s needs an importance matrix: --imatrix FILE (llama-imatrix "
            "writes one)\n",
            o.ft->name);
    free_overrides(&o);
    return 1;
  }
  if (o.imatrix) {
    if (mkc_imatrix_load(o.imatrix, &o.im) != 0) {
      free_overrides(&o);
      return 1;
    }
    loaded = o.im.n;
    if (o.n_names) mkc_imatrix_filter(&o.im, o.names, o.n_names, o.include);
    m.has_imatrix = o.im.n > 0;
  }
  if (!o.threads) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = n < 1 ? 1 : n > 32 ? 32 : (int)n;
  }
  m.ft = o.ft;
  mkc_gguf *f = mkc_gguf_open(o.in);
  uint64_t cap = f && f->n_tensors ? f->n_tensors : 1;
  uint64_t *order = f ? malloc(cap * sizeof *order) : NULL;
  uint64_t *bytes = f ? malloc(cap * sizeof *bytes) : NULL;
  uint32_t *types = f ? malloc(cap * sizeof *types) : NULL;
  uint32_t *fell = f ? malloc(cap * sizeof *fell) : NULL;
  char **renamed = f ? calloc(cap, sizeof *renamed) : NULL;
  const char **names = f ? malloc(cap * sizeof *names) : NULL;
  rc = 1;
  if (!f) goto done;
  if (!order || !bytes || !types || !fell || !renamed || !names) {
    fprintf(stderr, "mkc: error: quantize: out of memory\n");
    goto done;
  }
  for (int i = 0; i < o.n_kv; i++)
    if (mkc_gguf_override(f, o.kv[i]) != 0) goto done;
  const char *arch = "";
  if (mkc_gguf_get_str(f, "general.architecture", &arch) != 1) {
    fprintf(stderr, "mkc: error: %s: no general.architecture: not a model llama-quantize reads\n",
            o.in);
    goto done;
  }
  int64_t heads = hparam(f, arch, "attention.head_count", 0);
  int64_t kv_heads = hparam(f, arch, "attention.head_count_kv", heads);
  m.n_layer = (int)hparam(f, arch, "block_count", 0);
  m.n_expert = (int)hparam(f, arch, "expert_count", 0);
  m.n_gqa = kv_heads > 0 ? (int)(heads / kv_heads) : 0;
  m.is_70b = strcmp(arch, "llama") == 0 && m.n_layer == 80 && heads != kv_heads;
  m.tied = !mkc_gguf_find_tensor(f, "output.weight");
  uint64_t n = f->n_tensors;
  for (uint64_t i = 0; i < n; i++) order[i] = i;
  sort_file = f;
  qsort(order, n, sizeof *order, by_order);
  int ftype = o.ft->ftype;
  if (o.ft->base == MKC_QUANT_NO_TYPE) { /* COPY: IN's file type, else llama.cpp's guess */
    int64_t in_ft;
    for (uint64_t k = 0; k < n; k++) types[k] = f->tensors[order[k]].type;
    int got = mkc_gguf_get_int(f, "general.file_type", &in_ft);
    if (got < 0) goto done; /* said: not an integer */
    ftype = got == 1 ? (int)in_ft : mkc_quant_guess_ftype(types, n);
  }
  int blocks = m.n_layer; /* block_count written */
  if (o.n_prune &&
      (blocks = mkc_quantize_prune(o.prune, o.n_prune, m.n_layer, f, order, &n, renamed)) < 0)
    goto done;
  for (uint64_t k = 0; k < n; k++) names[k] = renamed[k] ? renamed[k] : f->tensors[order[k]].name;
  if (o.keep_split && sort_by_file(f, order, names, n) != 0) goto done;
  for (uint64_t k = 0; k < n; k++) m.n_attn_v += mkc_quant_v_like(names[k]);
  for (uint64_t k = 0; k < n; k++)
    if ((types[k] = decide(&o, &m, &f->tensors[order[k]], names[k], &fell[k])) == MKC_QUANT_NO_TYPE)
      goto done;
  if (o.imatrix)
    fprintf(stderr, "mkc: quantize: %s: %zu importance matrix entries (%zu kept)%s%s, %d chunks\n",
            o.imatrix, loaded, o.im.n, o.im.dataset ? " from " : "",
            o.im.dataset ? o.im.dataset : "", o.im.chunks);
  uint64_t size_in = 0, size_out = 0, elems = 0;
  quantize_plan p = {&o, f, order, names, types, fell, bytes, n};
  for (uint64_t k = 0; k < n; k++) {
    const mkc_gguf_tensor *t = &f->tensors[order[k]];
    const mkc_ggml_type_info *to = mkc_ggml_type(types[k]);
    bytes[k] =
        types[k] == t->type ? t->n_bytes : t->n_elems / (uint64_t)to->block * to->block_bytes;
    if (o.dry_run) mkc_quantize_report(&p, k);
    size_in += t->n_bytes;
    size_out += bytes[k];
    elems += t->n_elems;
  }
  if (!o.dry_run && mkc_quantize_write(&p, arch, ftype, o.n_prune ? blocks : -1) != 0) goto done;
  fprintf(stderr,
          "mkc: quantize: %s %s%s: %.2f MiB (%.2f bits a weight) -> %.2f MiB (%.2f bits a "
          "weight)%s\n",
          o.dry_run ? "would write" : "wrote", o.out, o.keep_split ? "-*.gguf" : "",
          size_in / 1048576.0, elems ? size_in * 8.0 / (double)elems : 0.0, size_out / 1048576.0,
          elems ? size_out * 8.0 / (double)elems : 0.0,
          m.n_fallback ? "; some rows fell back to another type (above)" : "");
  rc = 0;
done:
  for (uint64_t i = 0; renamed && i < cap; i++) free(renamed[i]);
  free(renamed);
  free((void *)names);
  free(bytes);
  free(order);
  free(types);
  free(fell);
  mkc_gguf_close(f);
  free_overrides(&o);
  mkc_imatrix_free(&o.im);
  return rc;
}
