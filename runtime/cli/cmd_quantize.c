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
    "                         (COPY: every tensor as it is: with --keep-split or\n"
    "                         --prune-layers, a file cut or pruned; TYPE may also be\n"
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

#define MAX_OVERRIDES 1024 /* --tensor-type and --tensor-type-file's lines */
#define MAX_NAMES 64       /* --include-weights, --exclude-weights, --override-kv */
#define MAX_PRUNE 4096     /* --prune-layers */

typedef struct override {
  regex_t re;
  uint32_t type;
} override;

typedef struct options {
  const char *in, *out, *imatrix;
  char out_buf[4200]; /* out when made from IN and TYPE */
  const mkc_quant_ftype *ft;
  int threads, requantize, dry_run, keep_split;
  size_t max_buffer;             /* --max-buffer-size, bytes */
  int prune[MAX_PRUNE], n_prune; /* --prune-layers, ascending, each once */
  override ov[MAX_OVERRIDES];
  int n_ov;
  const char *names[MAX_NAMES]; /* --include-weights or --exclude-weights */
  int n_names, include, exclude;
  const char *kv[MAX_NAMES]; /* --override-kv */
  int n_kv;
  mkc_imatrix im;
} options;

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

static void free_overrides(options *o) {
  for (int i = 0; i < o->n_ov; i++) regfree(&o->ov[i].re);
  o->n_ov = 0;
}

/* One PATTERN=TYPE of --tensor-type (flag) or --tensor-type-file into o; 0 or a usage error's
 * status. */
static int tensor_type(options *o, const char *flag, const char *v) {
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
  override *ov = &o->ov[o->n_ov];
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
static int tensor_type_file(options *o, const char *path) {
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
static int prune_layers(options *o, const char *v) {
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
static int parse(int argc, char **argv, options *o, mkc_quant_mix *m) {
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

/* The writer's metadata: IN's, with general.file_type and general.quantization_version set and
 * a split file's keys left out (and an earlier importance matrix's, where imatrix_metadata
 * writes this one's). */
static int copy_metadata(const mkc_gguf *f, int ftype, int new_imatrix, const char *arch,
                         int blocks, mkc_gguf_writer *w) {
  int have_ft = 0, have_qv = 0;
  char block_count[200];
  snprintf(block_count, sizeof block_count, "%s.block_count", arch);
  for (uint64_t k = 0; k < f->n_kv; k++) {
    const mkc_gguf_kv *kv = &f->kv[k];
    int rc;
    if (strncmp(kv->key, "split.", 6) == 0) continue;
    if (new_imatrix && strncmp(kv->key, "quantize.imatrix.", 17) == 0) continue;
    if (blocks >= 0 && strcmp(kv->key, block_count) == 0)
      rc = mkc_gguf_set_u32(w, kv->key, (uint32_t)blocks); /* --prune-layers */
    else if (strcmp(kv->key, "general.file_type") == 0)
      have_ft = 1, rc = mkc_gguf_set_u32(w, kv->key, (uint32_t)ftype);
    else if (strcmp(kv->key, "general.quantization_version") == 0)
      have_qv = 1, rc = mkc_gguf_set_u32(w, kv->key, 2);
    else
      rc = mkc_gguf_copy_kv(f, kv, w);
    if (rc) return -1;
  }
  if (!have_qv && mkc_gguf_set_u32(w, "general.quantization_version", 2)) return -1;
  if (!have_ft && mkc_gguf_set_u32(w, "general.file_type", (uint32_t)ftype)) return -1;
  return 0;
}

/* The importance values tensor t takes: its columns times its slices (the experts: a part of
 * the matrix each). */
static uint64_t imatrix_size(const mkc_gguf_tensor *t) { return t->n_elems / (uint64_t)t->ne[1]; }

/* Whether the importance matrix's entry for t, if any, has its size. Not: false after
 * llama.cpp's error, but for token_embd, which it quantizes unweighted, as llama.cpp does. */
/* The name tensor t had in IN (--prune-layers renames the layers kept): what the importance
 * matrix calls it. */
static const char *const *source_names; /* [the file's tensors], NULL where unchanged */
static const char *source_name(const mkc_gguf *f, const mkc_gguf_tensor *t) {
  const char *s = source_names ? source_names[t - f->tensors] : NULL;
  return s ? s : t->name;
}
static const mkc_gguf *quantized_file; /* the file source_name's tensors are in */

static int imatrix_fits(const options *o, const mkc_gguf_tensor *t) {
  const mkc_imatrix_entry *e = mkc_imatrix_find(&o->im, source_name(quantized_file, t));
  uint64_t want = imatrix_size(t);
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
static uint32_t decide(const options *o, mkc_quant_mix *m, const mkc_gguf_tensor *t,
                       uint32_t *fell) {
  uint32_t ov = MKC_QUANT_NO_TYPE;
  for (int i = 0; i < o->n_ov && ov == MKC_QUANT_NO_TYPE; i++)
    if (regexec(&o->ov[i].re, t->name, 0, NULL, 0) == 0) ov = o->ov[i].type;
  uint32_t type = mkc_quant_type(m, t->name, dims(t), t->ne[0], t->type, ov, fell);
  int is_float = t->type == MKC_GGML_F32 || t->type == MKC_GGML_F16 || t->type == MKC_GGML_BF16;
  if (type == MKC_QUANT_NO_TYPE)
    fprintf(stderr,
            "mkc: error: quantize: %s: its %lld columns are not whole blocks of %s, and "
            "llama.cpp's quantize has no type to fall back to\n",
            t->name, (long long)t->ne[0], type_name(*fell));
  else if (type != t->type && mkc_quant_needs_imatrix(m, t->name, type) &&
           !mkc_imatrix_find(&o->im, source_name(quantized_file, t)))
    fprintf(stderr,
            "mkc: error: quantize: %s in %s, a very low-bit type, needs an importance matrix, "
            "and %s\n",
            t->name, type_name(type),
            o->imatrix ? "the --imatrix file has no entry for it" : "no --imatrix was given");
  else if (type != t->type && t->ne[0] % mkc_ggml_type(type)->block != 0)
    fprintf(stderr,
            "mkc: error: quantize: %s: its %lld columns are not whole blocks of %s, the type "
            "a flag gives it\n",
            t->name, (long long)t->ne[0], type_name(type));
  else if (type != t->type && !imatrix_fits(o, t))
    ; /* said */
  else if (type != t->type && !is_float && !o->requantize)
    fprintf(stderr,
            "mkc: error: quantize: %s is %s already: quantizing it again adds error "
            "(--allow-requantize does it all the same)\n",
            t->name, type_name(t->type));
  else
    return type;
  return MKC_QUANT_NO_TYPE;
}

/* The importance matrix's values for tensor t (NULL: none, said on stderr as llama-quantize
 * says it; or a size imatrix_fits let pass: token_embd's). */
static const float *importance(const options *o, const mkc_gguf_tensor *t, uint32_t type) {
  if (!o->imatrix || type == t->type || !mkc_quantize_has_fit(type)) return NULL;
  const mkc_imatrix_entry *e = mkc_imatrix_find(&o->im, source_name(quantized_file, t));
  if (e && e->n == imatrix_size(t)) return e->values;
  fprintf(stderr, "mkc: quantize: %s: %s; unweighted\n", t->name,
          e ? "the importance matrix's entry is not its size" : "no importance matrix entry");
  return NULL;
}

/* A slab of rows of a tensor read as floats (mkc_gguf_read_tensor's read: guarded). */
typedef struct slab {
  const mkc_gguf_tensor *t;
  const uint8_t *src;
  size_t n;
  float *x;
} slab;
static int read_slab(void *ctx) {
  const slab *s = ctx;
  if (mkc_dequant_f32(s->t->type, s->src, s->n, s->x) == 0) return 0;
  fprintf(stderr, "mkc: error: quantize: %s: mkc cannot read %s\n", s->t->name,
          type_name(s->t->type));
  return -1;
}

/* Tensor t's bytes in type (its own: copied as they are) at out, its size: read and encoded a
 * slab of rows at a time, each slab's floats and bytes within --max-buffer-size (llama-quantize's
 * limit; at least a row). 0, or -1 after a message. */
static int encode(const options *o, const mkc_gguf *f, const mkc_gguf_tensor *t, uint32_t type,
                  uint64_t bytes, uint8_t *out) {
  if (type == t->type) return mkc_gguf_copy_tensor(f, t, out);
  const float *imp = importance(o, t, type);
  /* a slice a expert: each its own part of the importance matrix */
  size_t cols = (size_t)t->ne[0], rows = (size_t)t->ne[1],
         slices = (size_t)t->n_elems / cols / rows;
  size_t src_row = (size_t)t->n_bytes / slices / rows, dst_row = (size_t)bytes / slices / rows;
  size_t per_row = src_row + dst_row + cols * sizeof(float);
  size_t slab_rows = o->max_buffer / per_row < rows ? o->max_buffer / per_row : rows;
  if (slab_rows < 1) slab_rows = 1;
  float *x = malloc(slab_rows * cols * sizeof *x);
  if (!x) {
    fprintf(stderr, "mkc: error: quantize: %s: out of memory for %zu rows\n", t->name, slab_rows);
    return -1;
  }
  int rc = 0;
  for (size_t e = 0; e < slices && !rc; e++)
    for (size_t r = 0; r < rows && !rc; r += slab_rows) {
      size_t nr = rows - r < slab_rows ? rows - r : slab_rows, row = e * rows + r;
      slab sl = {t, t->data + row * src_row, nr * cols, x};
      if ((rc = mkc_gguf_read_tensor(f, t, read_slab, &sl)) != 0)
        break; /* said: unreadable, or truncated or changed while reading */
      if ((rc = mkc_quantize_fit(type, x, nr, cols, imp ? imp + e * cols : NULL,
                                 out + row * dst_row, o->threads)) != 0)
        fprintf(stderr, "mkc: error: quantize: %s: mkc cannot write %s\n", t->name,
                type_name(type));
    }
  free(x);
  return rc;
}

/* The tensors written (n of them: --prune-layers leaves some out) in llama.cpp's order (with
 * --keep-split: by file, then place in it), their types and sizes: what the writers' fill reads. */
typedef struct plan {
  const options *o;
  const mkc_gguf *f;
  const uint64_t *order;
  const uint32_t *types, *fell;
  const uint64_t *bytes;
  uint64_t n;
} plan;

/* Tensor k's fallback (if any) and progress line, as llama-quantize prints them. */
static void report(const plan *p, uint64_t k) {
  const mkc_gguf_tensor *t = &p->f->tensors[p->order[k]];
  const char *to = type_name(p->types[k]);
  if (p->fell[k] != MKC_QUANT_NO_TYPE)
    fprintf(stderr, "mkc: quantize: %s: %lld columns are not whole blocks of %s; %s instead\n",
            t->name, (long long)t->ne[0], type_name(p->fell[k]), to);
  char shape[80];
  int n = snprintf(shape, sizeof shape, "%lld", (long long)t->ne[0]);
  for (uint32_t d = 1; d < t->n_dims && n < (int)sizeof shape; d++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, ", %lld", (long long)t->ne[d]);
  fprintf(stderr, "[%4llu/%4llu] %-36s [%s] %s -> %s, %.3f -> %.3f MiB\n",
          (unsigned long long)k + 1, (unsigned long long)p->n, t->name, shape, type_name(t->type),
          to, t->n_bytes / 1048576.0, p->bytes[k] / 1048576.0);
}

/* One output file's tensors: plan entries first .. first + n - 1. */
typedef struct out_file {
  const plan *p;
  uint64_t first;
} out_file;

/* The writer's fill (mkc_gguf_set_fill): tensor k of a file encoded as the file is written, one
 * at a time, so the output is never all in memory. */
static int fill(void *ctx, size_t k, void *out) {
  const out_file *of = ctx;
  const plan *p = of->p;
  k += of->first;
  const mkc_gguf_tensor *t = &p->f->tensors[p->order[k]];
  if (encode(p->o, p->f, t, p->types[k], p->bytes[k], out) != 0) return -1;
  report(p, k);
  return 0;
}

/* llama-quantize's record of the importance matrix in the output's metadata. */
static int imatrix_metadata(const options *o, mkc_gguf_writer *w) {
  if (!o->im.n) return 0;
  uint32_t entries = (uint32_t)o->im.n, chunks = (uint32_t)o->im.chunks;
  if (mkc_gguf_set_str(w, "quantize.imatrix.file", o->imatrix) ||
      (o->im.dataset && mkc_gguf_set_str(w, "quantize.imatrix.dataset", o->im.dataset)) ||
      mkc_gguf_set_u32(w, "quantize.imatrix.entries_count", entries) ||
      (chunks && mkc_gguf_set_u32(w, "quantize.imatrix.chunks_count", chunks)))
    return -1;
  return 0;
}

/* By the file a tensor is in, then its place there: --keep-split's order, as llama-quantize's. */
static int by_file(const void *a, const void *b) {
  const mkc_gguf_tensor *x = &sort_file->tensors[*(const uint64_t *)a],
                        *y = &sort_file->tensors[*(const uint64_t *)b];
  if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

/* --prune-layers: the tensors of o's layers left out of order (*n of them), the others' layer
 * numbers closed up (blk.5. after pruning 3 is blk.4.; source[i] keeps tensor i's name before).
 * The layers kept, or -1 after a message. */
static int prune(const options *o, mkc_gguf *f, int n_layer, uint64_t *order, uint64_t *n,
                 char **source) {
  int below = 0; /* pruned layers that exist */
  for (int i = 0; i < o->n_prune; i++) {
    if (o->prune[i] >= n_layer) {
      fprintf(stderr,
              "mkc: error: quantize: --prune-layers: layer %d: the model has %d (0 to %d)\n",
              o->prune[i], n_layer, n_layer - 1);
      return -1;
    }
    below++;
  }
  if (below >= n_layer) {
    fprintf(stderr, "mkc: error: quantize: --prune-layers: every one of the %d layers\n", n_layer);
    return -1;
  }
  uint64_t kept = 0;
  for (uint64_t k = 0; k < *n; k++) {
    mkc_gguf_tensor *t = &f->tensors[order[k]];
    int layer, at;
    if (sscanf(t->name, "blk.%d.%n", &layer, &at) != 1 || layer < 0) {
      order[kept++] = order[k];
      continue;
    }
    int shift = 0;
    while (shift < o->n_prune && o->prune[shift] < layer) shift++;
    if (shift < o->n_prune && o->prune[shift] == layer) continue; /* pruned */
    order[kept++] = order[k];
    if (!shift) continue;
    char name[600];
    snprintf(name, sizeof name, "blk.%d.%s", layer - shift, t->name + at);
    char *renamed = strdup(name);
    if (!renamed) {
      fprintf(stderr, "mkc: error: quantize: out of memory\n");
      return -1;
    }
    source[order[k]] = t->name; /* freed with source */
    t->name = renamed;
  }
  *n = kept;
  return n_layer - below;
}

/* COPY's general.file_type: IN's, else llama.cpp's guess from the type most tensors have (the
 * first to reach that count, in llama.cpp's order), marked guessed (+ 1024). */
static int copied_ftype(const mkc_gguf *f, const uint64_t *order, uint64_t n) {
  int64_t ft;
  if (mkc_gguf_get_int(f, "general.file_type", &ft) == 1) return (int)ft;
  static const int FT_OF[MKC_GGML_TYPE_COUNT] = {
      [MKC_GGML_F32] = 0,      [MKC_GGML_F16] = 1,     [MKC_GGML_BF16] = 32,
      [MKC_GGML_Q4_0] = 2,     [MKC_GGML_Q4_1] = 3,    [MKC_GGML_Q5_0] = 8,
      [MKC_GGML_Q5_1] = 9,     [MKC_GGML_Q8_0] = 7,    [MKC_GGML_Q2_K] = 10,
      [MKC_GGML_Q3_K] = 12,    [MKC_GGML_Q4_K] = 15,   [MKC_GGML_Q5_K] = 17,
      [MKC_GGML_Q6_K] = 18,    [MKC_GGML_TQ1_0] = 36,  [MKC_GGML_TQ2_0] = 37,
      [MKC_GGML_IQ2_XXS] = 19, [MKC_GGML_IQ2_XS] = 20, [MKC_GGML_IQ2_S] = 28,
      [MKC_GGML_IQ3_XXS] = 23, [MKC_GGML_IQ1_S] = 24,  [MKC_GGML_IQ1_M] = 31,
      [MKC_GGML_IQ4_NL] = 25,  [MKC_GGML_IQ4_XS] = 30, [MKC_GGML_IQ3_S] = 26,
      [MKC_GGML_NVFP4] = 39,   [MKC_GGML_Q1_0] = 40,   [MKC_GGML_Q2_0] = 41};
  uint64_t count[MKC_GGML_TYPE_COUNT] = {0}, most = 0;
  uint32_t top = MKC_GGML_F32;
  for (uint64_t k = 0; k < n; k++) {
    uint32_t t = f->tensors[order[k]].type;
    if (t < MKC_GGML_TYPE_COUNT && most < ++count[t]) most = count[t], top = t;
  }
  return FT_OF[top] | 1024; /* other types: F32's 0, as llama.cpp's */
}

/* The output: one file, or with --keep-split one per file of IN (OUT-00001-of-0000N.gguf, ...,
 * each with split.no, split.count and split.tensors.count, the first with the metadata). blocks:
 * block_count written (-1: as it was). 0, or -1 after a message. */
static int write_files(const options *o, const plan *p, const char *arch, int ftype, int blocks) {
  const mkc_gguf *f = p->f;
  uint32_t files = o->keep_split && f->n_split > 1 ? f->n_split : 1;
  uint64_t k = 0;
  for (uint32_t s = 0; s < files; s++) {
    mkc_gguf_writer *w = mkc_gguf_writer_new();
    out_file of = {p, k};
    int bad = !w;
    if (!bad && s == 0)
      bad =
          copy_metadata(f, ftype, o->im.n > 0, arch, blocks, w) != 0 || imatrix_metadata(o, w) != 0;
    if (!bad && files > 1) {
      uint16_t no = (uint16_t)s, count = (uint16_t)files;
      int32_t listed = (int32_t)p->n;
      bad = mkc_gguf_set(w, "split.no", MKC_GGUF_UINT16, &no) != 0 ||
            mkc_gguf_set(w, "split.count", MKC_GGUF_UINT16, &count) != 0 ||
            mkc_gguf_set(w, "split.tensors.count", MKC_GGUF_INT32, &listed) != 0;
    }
    for (; !bad && k < p->n && (files == 1 || f->tensors[p->order[k]].shard == s); k++) {
      const mkc_gguf_tensor *t = &f->tensors[p->order[k]];
      bad = mkc_gguf_add_deferred(w, t->name, p->types[k], t->n_dims, t->ne) != 0;
    }
    char path[4300];
    if (o->keep_split)
      snprintf(path, sizeof path, "%s-%05u-of-%05u.gguf", o->out, s + 1, files);
    else
      snprintf(path, sizeof path, "%s", o->out);
    if (!bad) mkc_gguf_set_fill(w, fill, &of);
    bad = bad || mkc_gguf_write(w, path) != 0;
    if (!w) fprintf(stderr, "mkc: error: quantize: out of memory\n");
    mkc_gguf_writer_free(w);
    if (bad) return -1;
  }
  return 0;
}

int mkc_cmd_quantize(int argc, char **argv) {
  options o = {.max_buffer = (size_t)8 << 30}; /* llama-quantize's 8 GiB */
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
  char **source = f ? calloc(cap, sizeof *source) : NULL;
  rc = 1;
  if (!f) goto done;
  if (!order || !bytes || !types || !fell || !source) {
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
  int blocks = m.n_layer; /* block_count written */
  if (o.n_prune && (blocks = prune(&o, f, m.n_layer, order, &n, source)) < 0) goto done;
  source_names = (const char *const *)source;
  quantized_file = f;
  if (o.keep_split) qsort(order, n, sizeof *order, by_file);
  for (uint64_t k = 0; k < n; k++) m.n_attn_v += mkc_quant_v_like(f->tensors[order[k]].name);
  int ftype = o.ft->base == MKC_QUANT_NO_TYPE ? copied_ftype(f, order, n) : o.ft->ftype;
  for (uint64_t k = 0; k < n; k++)
    if ((types[k] = decide(&o, &m, &f->tensors[order[k]], &fell[k])) == MKC_QUANT_NO_TYPE)
      goto done;
  if (o.imatrix)
    fprintf(stderr, "mkc: quantize: %s: %zu importance matrix entries (%zu kept)%s%s, %d chunks\n",
            o.imatrix, loaded, o.im.n, o.im.dataset ? " from " : "",
            o.im.dataset ? o.im.dataset : "", o.im.chunks);
  uint64_t size_in = 0, size_out = 0, elems = 0;
  plan p = {&o, f, order, types, fell, bytes, n};
  for (uint64_t k = 0; k < n; k++) {
    const mkc_gguf_tensor *t = &f->tensors[order[k]];
    const mkc_ggml_type_info *to = mkc_ggml_type(types[k]);
    bytes[k] =
        types[k] == t->type ? t->n_bytes : t->n_elems / (uint64_t)to->block * to->block_bytes;
    if (o.dry_run) report(&p, k);
    size_in += t->n_bytes;
    size_out += bytes[k];
    elems += t->n_elems;
  }
  if (!o.dry_run && write_files(&o, &p, arch, ftype, o.n_prune ? blocks : -1) != 0) goto done;
  fprintf(stderr,
          "mkc: quantize: %s %s%s: %.2f MiB (%.2f bits a weight) -> %.2f MiB (%.2f bits a "
          "weight)%s\n",
          o.dry_run ? "would write" : "wrote", o.out, o.keep_split ? "-*.gguf" : "",
          size_in / 1048576.0, elems ? size_in * 8.0 / (double)elems : 0.0, size_out / 1048576.0,
          elems ? size_out * 8.0 / (double)elems : 0.0,
          m.n_fallback ? "; some rows fell back to another type (above)" : "");
  rc = 0;
done:
  source_names = NULL;
  for (uint64_t i = 0; source && i < cap; i++) free(source[i]);
  free(source);
  free(bytes);
  free(order);
  free(types);
  free(fell);
  mkc_gguf_close(f);
  free_overrides(&o);
  mkc_imatrix_free(&o.im);
  return rc;
}
