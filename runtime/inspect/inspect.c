/* Builds the inspect report of a kernel file: the AST (libclang), the codegen
 * metadata, the cross-check of the two, the step it is evaluated at, and the
 * resources from NVRTC. */
#include "inspect.h"
#include "util/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's own name, from the #line that starts its body. */
static char *kernel_file_name(const char *source) {
  char name[256] = "";
  for (const char *p = source; (p = strstr(p, "\n#line ")); p++) {
    int line;
    char n[256];
    if (sscanf(p + 1, "#line %d \"%255[^\"]\"", &line, n) == 2 && strncmp(n, "templates/", 10) != 0)
      snprintf(name, sizeof name, "%s", n);
  }
  return strdup(name);
}

int mkc_inspect_open(const char *path, const mkc_inspect_opts *o, mkc_inspect_report *r) {
  memset(r, 0, sizeof *r);
  r->path = strdup(path);
  r->source = mkc_read_file(path, NULL);
  if (!r->source) {
    fprintf(stderr, "mkc: error: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  char why[300];
  if (mkc_unfold(r->source, &r->unfolded, why, sizeof why) != 0) {
    fprintf(stderr, "%s:1: error: not an mkc kernel: its layer loop: %s\n", path, why);
    return -1;
  }
  if (mkc_ast_read(r) != 0) return -1;
  if (mkc_meta_header(r->source, &r->header, why, sizeof why) != 0) {
    fprintf(stderr, "%s:1: error: not an mkc kernel: %s\n", path, why);
    return -1;
  }
  r->file_name = kernel_file_name(r->source);
  const mkc_inspect_header *h = &r->header;
  r->at.tokens = o->tokens > 0 ? o->tokens : 1;
  if (r->at.tokens > h->t_max) {
    fprintf(stderr, "mkc: error: --tokens %d: this kernel takes at most %d tokens per step\n",
            r->at.tokens, h->t_max);
    return -1;
  }
  r->at.pos = o->pos >= 0 ? o->pos : h->max_ctx / 2;
  if (r->at.pos + r->at.tokens > h->max_ctx) {
    fprintf(stderr, "mkc: error: --pos %d: %d + %d tokens pass the kernel's context of %d\n",
            r->at.pos, r->at.pos, r->at.tokens, h->max_ctx);
    return -1;
  }
  const char *gpu = o->gpu ? o->gpu : mkc_default_gpu();
  r->gpu = mkc_gpu_find(gpu);
  if (!r->gpu) {
    int n;
    const mkc_gpu *t = mkc_gpu_table(&n);
    fprintf(stderr, "mkc: error: --gpu %s: unknown GPU (known:", gpu);
    for (int i = 0; i < n; i++) fprintf(stderr, " %s", t[i].id);
    fprintf(stderr, ")\n");
    return -1;
  }
  r->at.blocks = o->blocks > 0 ? o->blocks : r->gpu->sms;
  mkc_model_crosscheck(r);
  if (o->arch) {
    char arch[32];
    mkc_resources_get(r->source, r->file_name[0] ? r->file_name : path,
                      o->arch[0] ? o->arch : mkc_default_arch(arch, sizeof arch), &r->res);
  } else {
    snprintf(r->res.why, sizeof r->res.why, "not compiled (--arch none)");
  }
  return 0;
}

void mkc_inspect_close(mkc_inspect_report *r) {
  for (int i = 0; r->stages && i < r->n_stages; i++) mkc_meta_free(&r->stages[i].meta);
  free(r->stages);
  free(r->mismatches);
  free(r->path);
  free(r->source);
  mkc_unfolded_free(&r->unfolded);
  free(r->file_name);
  memset(r, 0, sizeof *r);
}
