/* mkc gguf-split: a GGUF model cut into files, or a split one put back in one file, with
 * llama.cpp's llama-gguf-split's command line and files (formats/gguf_shards.c reads them). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "formats/gguf.h"

static const char USAGE[] =
    "usage: mkc gguf-split [options] GGUF_IN GGUF_OUT\n"
    "\n"
    "Cuts GGUF_IN into GGUF_OUT-00001-of-0000N.gguf, ... as llama.cpp's\n"
    "llama-gguf-split does: the metadata in the first file, split.no, split.count\n"
    "and split.tensors.count in each, the tensors in GGUF_IN's order. With --merge,\n"
    "GGUF_IN is a split model's first file and GGUF_OUT one file of it all.\n"
    "  --split                cut (the default)\n"
    "  --merge                put a split model back in one file\n"
    "  --split-max-tensors N  at most N tensors a file (default 128)\n"
    "  --split-max-size N(M|G)  at most N megabytes (or gigabytes, of 1000) of\n"
    "                         tensor data a file, instead\n"
    "  --no-tensor-first-split  the first file holds the metadata alone\n"
    "  --dry-run              the files, their tensors and sizes (M: 10^6 bytes),\n"
    "                         none written\n"
    "  --delete-splits        with --merge, the split files deleted once the merged\n"
    "                         one is written\n";

typedef struct options {
  const char *in, *out;
  int merge, dry_run, no_tensor_first, delete_splits;
  long max_tensors;   /* --split-max-tensors, or 0 */
  uint64_t max_bytes; /* --split-max-size, or 0 */
} options;

static int usage(const char *fmt, const char *arg) {
  return mkc_cli_usage_error_in("gguf-split", fmt, arg);
}

static int parse(int argc, char **argv, options *o) {
  int split = 0, n_pos = 0;
  const char *pos[2];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    int has_value = strcmp(a, "--split-max-tensors") == 0 || strcmp(a, "--split-max-size") == 0;
    if (has_value && i + 1 >= argc) return usage("gguf-split: %s needs a value", a);
    const char *v = has_value ? argv[++i] : NULL;
    char *end;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      return MKC_CLI_HELP;
    } else if (strcmp(a, "--split") == 0 || strcmp(a, "--merge") == 0) {
      *(a[2] == 's' ? &split : &o->merge) = 1;
      if (split && o->merge) return usage("%s", "gguf-split: --split or --merge, not both");
    } else if (strcmp(a, "--dry-run") == 0)
      o->dry_run = 1;
    else if (strcmp(a, "--no-tensor-first-split") == 0)
      o->no_tensor_first = 1;
    else if (strcmp(a, "--delete-splits") == 0)
      o->delete_splits = 1;
    else if (strcmp(a, "--split-max-tensors") == 0) {
      o->max_tensors = strtol(v, &end, 10);
      if (end == v || *end || o->max_tensors < 1 || o->max_tensors > 65535)
        return usage("gguf-split: --split-max-tensors: expected 1 to 65535, got '%s'", v);
    } else if (strcmp(a, "--split-max-size") == 0) {
      long n = strtol(v, &end, 10);
      if (end == v || n < 1 || n > 1000000 || (strcmp(end, "M") != 0 && strcmp(end, "G") != 0))
        return usage("gguf-split: --split-max-size: expected N followed by M or G (megabytes or "
                     "gigabytes), got '%s'",
                     v);
      o->max_bytes = (uint64_t)n * (*end == 'G' ? 1000000000u : 1000000u);
    } else if (a[0] == '-' && a[1])
      return usage("gguf-split: unknown option '%s'", a);
    else if (n_pos == 2)
      return usage("gguf-split: one argument too many: '%s' (GGUF_IN GGUF_OUT)", a);
    else
      pos[n_pos++] = a;
  }
  if (o->max_tensors && o->max_bytes)
    return usage("%s", "gguf-split: --split-max-tensors or --split-max-size, not both");
  if (n_pos < 2) return usage("%s", "gguf-split: GGUF_IN and GGUF_OUT are required");
  if (!o->max_tensors && !o->max_bytes) o->max_tensors = 128;
  o->in = pos[0];
  o->out = pos[1];
  return 0;
}

/* The writers' fill: tensor index of the file, copied (guarded) from the one it is in. */
typedef struct part {
  const mkc_gguf *f;
  uint64_t first;
} part;
static int fill(void *ctx, size_t index, void *out) {
  const part *p = ctx;
  return mkc_gguf_copy_tensor(p->f, &p->f->tensors[p->first + index], out);
}

/* The file's metadata but for keys starting with skip (NULL: none). */
static int copy_metadata(const mkc_gguf *f, const char *skip, mkc_gguf_writer *w) {
  for (uint64_t k = 0; k < f->n_kv; k++)
    if (!(skip && strncmp(f->kv[k].key, skip, strlen(skip)) == 0) &&
        mkc_gguf_copy_kv(f, &f->kv[k], w) != 0)
      return -1;
  return 0;
}

static uint64_t padded(uint64_t n) { return (n + 31) / 32 * 32; }

/* Where each file starts in f's tensors (first[n_files] = n_tensors): llama-gguf-split's plan,
 * a new file where the tensor count reaches a multiple of the limit or the data would pass the
 * size. The number of files, or 0 after a message (a file left with no tensor). */
static uint32_t plan(const options *o, const mkc_gguf *f, uint64_t *first) {
  uint32_t n = 0;
  first[n++] = 0;
  if (o->no_tensor_first) first[n++] = 0; /* the first file's tensors: none */
  uint64_t size = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    uint64_t next = size + padded(f->tensors[i].n_bytes);
    int cut = o->max_bytes ? next > o->max_bytes : i > 0 && i % (uint64_t)o->max_tensors == 0;
    if (cut) {
      if (first[n - 1] == i) {
        fprintf(stderr,
                "mkc: error: gguf-split: a file would hold no tensor (%s): the limit is below "
                "one tensor\n",
                f->tensors[i].name);
        return 0;
      }
      if (n > 65534) {
        fprintf(stderr, "mkc: error: gguf-split: more than 65535 files\n");
        return 0;
      }
      first[n++] = i;
      size = padded(f->tensors[i].n_bytes);
    } else
      size = next;
  }
  first[n] = f->n_tensors;
  return n;
}

static int split(const options *o, const mkc_gguf *f) {
  uint64_t *first = malloc((f->n_tensors + 3) * sizeof *first);
  if (!first) fprintf(stderr, "mkc: error: gguf-split: out of memory\n");
  uint32_t files = first ? plan(o, f, first) : 0;
  int rc = files ? 0 : 1;
  if (o->dry_run && files) printf("n_split: %" PRIu32 "\n", files);
  for (uint32_t s = 0; s < files && !rc; s++) {
    mkc_gguf_writer *w = mkc_gguf_writer_new();
    uint16_t no = (uint16_t)s, count = (uint16_t)files;
    int32_t listed = (int32_t)f->n_tensors;
    part p = {f, first[s]};
    uint64_t bytes = 0;
    /* llama-gguf-split's order: split.count set again once the count is known goes last */
    rc = !w || (s == 0 && copy_metadata(f, "split.", w) != 0) ||
         mkc_gguf_set(w, "split.no", MKC_GGUF_UINT16, &no) != 0 ||
         mkc_gguf_set(w, "split.tensors.count", MKC_GGUF_INT32, &listed) != 0 ||
         mkc_gguf_set(w, "split.count", MKC_GGUF_UINT16, &count) != 0;
    for (uint64_t i = first[s]; i < first[s + 1] && !rc; i++) {
      const mkc_gguf_tensor *t = &f->tensors[i];
      bytes += t->n_bytes;
      rc = mkc_gguf_add_deferred(w, t->name, t->type, t->n_dims, t->ne) != 0;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s-%05u-of-%05u.gguf", o->out, s + 1, files);
    if (o->dry_run && !rc) /* llama-gguf-split's: metadata and tensors, unpadded, in 10^6 bytes */
      printf("split %05u: n_tensors = %" PRIu64 ", total_size = %" PRIu64 "M\n", s + 1,
             first[s + 1] - first[s], (mkc_gguf_writer_meta_size(w) + bytes) / 1000 / 1000);
    else if (!rc) {
      mkc_gguf_set_fill(w, fill, &p);
      rc = mkc_gguf_write(w, path) != 0;
      if (!rc)
        fprintf(stderr, "mkc: gguf-split: wrote %s (%" PRIu64 " tensors)\n", path,
                first[s + 1] - first[s]);
    }
    if (!w) fprintf(stderr, "mkc: error: gguf-split: out of memory\n");
    mkc_gguf_writer_free(w);
  }
  free(first);
  return rc;
}

/* The split model whole in one file: its metadata with split.count 0 (so that it is not taken
 * for a split model again, as llama-gguf-split marks it), every tensor in file order. */
static int merge(const options *o, const mkc_gguf *f) {
  int64_t count = 0;
  if (mkc_gguf_get_int(f, "split.count", &count) != 1 || count < 1) {
    fprintf(stderr,
            "mkc: error: %s: not the first file of a split model (no split.count of 1 or more)\n",
            o->in);
    return 1;
  }
  if (access(o->out, F_OK) == 0) { /* as llama-gguf-split: never over a file, an input least */
    fprintf(stderr, "mkc: error: gguf-split: %s already exists\n", o->out);
    return 1;
  }
  if (o->dry_run) {
    printf("n_split: %" PRIu32 ", %" PRIu64 " tensors into %s\n", f->n_split, f->n_tensors, o->out);
    return 0;
  }
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  uint16_t zero = 0;
  part p = {f, 0};
  int rc = !w || copy_metadata(f, "split.count", w) != 0 ||
           mkc_gguf_set(w, "split.count", MKC_GGUF_UINT16, &zero) != 0;
  for (uint64_t i = 0; i < f->n_tensors && !rc; i++) {
    const mkc_gguf_tensor *t = &f->tensors[i];
    rc = mkc_gguf_add_deferred(w, t->name, t->type, t->n_dims, t->ne) != 0;
  }
  if (!rc) {
    mkc_gguf_set_fill(w, fill, &p);
    rc = mkc_gguf_write(w, o->out) != 0;
  }
  if (!w) fprintf(stderr, "mkc: error: gguf-split: out of memory\n");
  mkc_gguf_writer_free(w);
  if (!rc)
    fprintf(stderr, "mkc: gguf-split: wrote %s (%" PRIu64 " tensors from %" PRIu32 " files)\n",
            o->out, f->n_tensors, f->n_split);
  return rc;
}

int mkc_cmd_gguf_split(int argc, char **argv) {
  options o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc == MKC_CLI_HELP ? 0 : rc;
  mkc_gguf *f = mkc_gguf_open(o.in);
  if (!f) return 1;
  rc = o.merge ? merge(&o, f) : split(&o, f);
  if (!rc && o.merge && o.delete_splits && !o.dry_run) { /* the merged file is whole: drop them */
    uint32_t files = f->n_split > 1 ? f->n_split : 1, n = 0;
    char **paths = calloc(files, sizeof *paths);
    for (uint32_t k = 0; paths && k < files; k++)
      if ((paths[n] = strdup(k ? f->shards[k - 1]->path : f->path))) n++;
    mkc_gguf_close(f);
    f = NULL;
    if (n < files) {
      fprintf(stderr, "mkc: error: gguf-split: out of memory: the split files were kept\n");
      rc = 1;
    }
    for (uint32_t k = 0; k < n; k++) {
      if (n == files && unlink(paths[k]) != 0) {
        fprintf(stderr, "mkc: error: gguf-split: %s: cannot delete: %s\n", paths[k],
                strerror(errno));
        rc = 1;
      }
      free(paths[k]);
    }
    free(paths);
  }
  mkc_gguf_close(f);
  return rc;
}
