/* The AST view of an emitted kernel: libclang parses the file as device-side
 * CUDA with the declarations below standing in for NVRTC's built-ins (no
 * CUDA headers), finds the one __global__ kernel, splits its body at the
 * stage comments, and reads each stage's calls with their literal arguments
 * and the template file:line each callee comes from (through #line). */
#include "inspect.h"
#include "libclang.h"
#include "util/files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What NVRTC provides and prelude_cuda.cuh uses: enough for clang to type-check
 * the kernel as NVRTC would. A template that reaches for a new built-in fails
 * here with "undeclared identifier" until it is added. */
static const char CLANG_PRELUDE_NAME[] = "/mkc-inspect/nvrtc_builtins.h";
static const char CLANG_PRELUDE[] =
    "#define __CUDACC__ 1\n"
    "#define __global__ __attribute__((global))\n"
    "#define __device__ __attribute__((device))\n"
    "#define __shared__ __attribute__((shared))\n"
    "#define __constant__ __attribute__((constant))\n"
    "#define __forceinline__ __inline__ __attribute__((always_inline))\n"
    "#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))\n"
    "#define __align__(n) __attribute__((aligned(n)))\n"
    "struct uint3 { unsigned x, y, z; };\n"
    "struct uint4 { unsigned x, y, z, w; };\n"
    "struct float4 { float x, y, z, w; };\n"
    "extern const __device__ uint3 threadIdx, blockIdx, gridDim, blockDim;\n"
    "__device__ void __syncthreads(void);\n"
    "__device__ void __syncwarp(unsigned mask = 0xffffffffu);\n"
    "__device__ float __shfl_xor_sync(unsigned mask, float v, int lane, int width = 32);\n"
    "__device__ int __shfl_xor_sync(unsigned mask, int v, int lane, int width = 32);\n"
    "__device__ unsigned __shfl_xor_sync(unsigned mask, unsigned v, int lane, int width = 32);\n"
    "__device__ unsigned atomicAdd(unsigned *p, unsigned v);\n"
    "__device__ int atomicAdd(int *p, int v);\n"
    "__device__ float atomicAdd(float *p, float v);\n"
    "__device__ void __threadfence(void);\n"
    "__device__ void __nanosleep(unsigned ns);\n"
    "__device__ float __uint_as_float(unsigned u);\n"
    "__device__ unsigned __float_as_uint(float f);\n"
    "__device__ float fmaxf(float, float);\n"
    "__device__ float fminf(float, float);\n"
    "__device__ float fmaf(float, float, float);\n"
    "__device__ float fabsf(float);\n"
    "__device__ float floorf(float);\n"
    "__device__ float ceilf(float);\n"
    "__device__ float sqrtf(float);\n"
    "__device__ float rsqrtf(float);\n"
    "__device__ float expf(float);\n"
    "__device__ float __expf(float);\n"
    "__device__ float logf(float);\n"
    "__device__ float powf(float, float);\n"
    "__device__ float cosf(float);\n"
    "__device__ float sinf(float);\n"
    "__device__ void sincospif(float, float *, float *);\n"
    "__device__ double rint(double);\n"
    "__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);\n"
    "__device__ int __popc(unsigned);\n"
    "__device__ float tanhf(float);\n";

/* Warnings --check turns on: unused values, shadowing, sign and width
 * conversions, constant out-of-bounds indices. Not -Wunused-function: every
 * kernel carries the whole template library, and a graph need not call all of it. */
static const char *const CHECK_FLAGS[] = {
    "-Wall",
    "-Wextra",
    "-Wshadow-all",
    "-Wconversion",
    "-Wsign-conversion",
    "-Wshorten-64-to-32",
    "-Wimplicit-int-conversion",
    "-Wfloat-conversion",
    "-Wdouble-promotion",
    "-Wunused",
    "-Wunused-parameter",
    "-Warray-bounds",
    "-Warray-bounds-pointer-arithmetic",
    "-Wcomma",
    "-Wunreachable-code",
    "-Wconditional-uninitialized",
    "-Wimplicit-fallthrough",
    "-Wno-unused-function",
};

typedef struct parse {
  CXIndex index;
  CXTranslationUnit tu;
} parse;

/* Device-side CUDA, no CUDA installation or headers, the prelude above. */
static int parse_open(const char *path, const char *text, int check, parse *p, char *why,
                      size_t why_size) {
  memset(p, 0, sizeof *p);
  if (mkc_clang_load(why, why_size) != 0) return -1;
  const char *args[64];
  int n = 0;
  args[n++] = "-x";
  args[n++] = "cuda";
  args[n++] = "--cuda-device-only";
  args[n++] = "--cuda-gpu-arch=sm_90";
  args[n++] = "-nocudainc";
  args[n++] = "-nocudalib";
  args[n++] = "-std=c++17";
  args[n++] = "-Wno-unknown-cuda-version";
  args[n++] = "-include";
  args[n++] = CLANG_PRELUDE_NAME;
  args[n++] = "-ferror-limit=50";
  if (check)
    for (size_t i = 0; i < sizeof CHECK_FLAGS / sizeof *CHECK_FLAGS; i++)
      args[n++] = CHECK_FLAGS[i];
  else
    args[n++] = "-w";
  struct CXUnsavedFile unsaved[2] = {{CLANG_PRELUDE_NAME, CLANG_PRELUDE, sizeof CLANG_PRELUDE - 1},
                                     {path, text, text ? strlen(text) : 0}};
  p->index = mkc_clang.createIndex(0, 0);
  int rc =
      mkc_clang.parseTranslationUnit2(p->index, path, args, n, unsaved, text ? 2 : 1, 0, &p->tu);
  if (rc != 0 || !p->tu) {
    snprintf(why, why_size, "libclang could not parse %s (error %d)", path, rc);
    mkc_clang.disposeIndex(p->index);
    p->index = NULL;
    return -1;
  }
  return 0;
}

static void parse_close(parse *p) {
  if (p->tu) mkc_clang.disposeTranslationUnit(p->tu);
  if (p->index) mkc_clang.disposeIndex(p->index);
  memset(p, 0, sizeof *p);
}

/* The unfolded kernel being read (mkc_ast_read): its lines are reported as
 * the file's lines they come from. */
static const mkc_unfolded *unfolded;

/* A line of the parsed text as a line of the kernel file. */
static unsigned file_line(unsigned l) {
  if (unfolded && unfolded->folded && l >= 1 && (int)l <= unfolded->n_lines)
    return (unsigned)unfolded->line_of[l - 1];
  return l;
}

/* The parsed text's line of loc, unmapped. */
static unsigned text_line(CXSourceLocation loc) {
  unsigned l = 0;
  mkc_clang.getExpansionLocation(loc, NULL, &l, NULL, NULL);
  return l;
}

static void physical(CXSourceLocation loc, char **file, unsigned *line, unsigned *col,
                     unsigned *offset) {
  CXFile f = NULL;
  unsigned l = 0, c = 0, o = 0;
  mkc_clang.getExpansionLocation(loc, &f, &l, &c, &o);
  if (file) *file = f ? mkc_clang_take(mkc_clang.getFileName(f)) : strdup("");
  if (line) *line = file_line(l);
  if (col) *col = c;
  if (offset) *offset = o;
}

/* Line `line` (1-based) of text, without its newline. */
static void print_source_line(const char *text, unsigned line, FILE *f) {
  for (unsigned l = 1; text && *text && l < line; text++)
    if (*text == '\n') l++;
  if (!text || !*text) return;
  fprintf(f, "    %.*s\n", (int)strcspn(text, "\n"), text);
}

/* Prints each diagnostic as "file:line:col: severity: message [-Wflag]", the
 * file being the template for template code (#line), then where it is in the
 * emitted file and the line itself. Returns how many are warnings or worse. */
static int print_diagnostics(CXTranslationUnit tu, const char *path, const char *source,
                             int min_severity, FILE *out) {
  static const char *const severity[] = {"ignored", "note", "warning", "error", "fatal error"};
  int count = 0;
  unsigned n = mkc_clang.getNumDiagnostics(tu);
  for (unsigned i = 0; i < n; i++) {
    CXDiagnostic d = mkc_clang.getDiagnostic(tu, i);
    int sev = mkc_clang.getDiagnosticSeverity(d);
    if (sev < min_severity) {
      mkc_clang.disposeDiagnostic(d);
      continue;
    }
    count++;
    CXSourceLocation loc = mkc_clang.getDiagnosticLocation(d);
    CXString pfile;
    unsigned pline = 0, pcol = 0, line = 0;
    mkc_clang.getPresumedLocation(loc, &pfile, &pline, &pcol);
    char *presumed = mkc_clang_take(pfile), *file = NULL;
    physical(loc, &file, &line, NULL, NULL);
    char *msg = mkc_clang_take(mkc_clang.getDiagnosticSpelling(d));
    char *opt = mkc_clang_take(mkc_clang.getDiagnosticOption(d, NULL));
    fprintf(out, "%s:%u:%u: %s: %s", *presumed ? presumed : path, pline, pcol,
            severity[sev < 0 || sev > 4 ? 3 : sev], msg);
    if (*opt) fprintf(out, " [%s]", opt);
    fputc('\n', out);
    /* file:line in the kernel file itself, where #line points elsewhere */
    int in_kernel = *file && strstr(file, "/mkc-inspect/") == NULL;
    if (in_kernel && (strcmp(presumed, path) != 0 || pline != line))
      fprintf(out, "    (%s:%u)\n", path, line);
    if (in_kernel) print_source_line(source, line, out);
    free(presumed);
    free(file);
    free(msg);
    free(opt);
    mkc_clang.disposeDiagnostic(d);
  }
  return count;
}

int mkc_inspect_check(const char *path) {
  char why[512];
  char *source = mkc_read_file(path, NULL);
  if (!source) {
    fprintf(stderr, "mkc: error: cannot read %s\n", path);
    return -1;
  }
  parse p;
  if (parse_open(path, NULL, 1, &p, why, sizeof why) != 0) {
    fprintf(stderr, "mkc: error: %s\n", why);
    free(source);
    return -1;
  }
  int n = print_diagnostics(p.tu, path, source, MKC_CX_Diagnostic_Warning, stdout);
  parse_close(&p);
  free(source);
  return n;
}

/* ---- the kernel and its stages ---- */

typedef struct children {
  CXCursor c[64];
  int n;
} children;

static int collect(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  children *ch = data;
  if (ch->n < 64) ch->c[ch->n++] = c;
  return MKC_CX_Visit_Continue;
}

static children kids(CXCursor c) {
  children ch;
  ch.n = 0;
  mkc_clang.visitChildren(c, collect, &ch);
  return ch;
}

static int is_expr(CXCursor c) {
  int k = mkc_clang.getCursorKind(c);
  return k >= 100 && k < 200;
}

static void set_base(mkc_arg *a, const char *name) {
  snprintf(a->base, sizeof a->base, "%s", name);
}

/* An argument as constant, buffer + constant, or a named value. */
static void classify(CXCursor c, mkc_arg *a) {
  memset(a, 0, sizeof *a);
  int k = mkc_clang.getCursorKind(c);
  if (k != MKC_CX_DeclRefExpr && k != MKC_CX_MemberRefExpr) {
    CXEvalResult ev = mkc_clang.Cursor_Evaluate(c);
    if (ev) {
      int ek = mkc_clang.EvalResult_getKind(ev);
      if (ek == MKC_CX_Eval_Int) {
        a->kind = MKC_ARG_INT;
        a->value = mkc_clang.EvalResult_getAsLongLong(ev);
      } else if (ek == MKC_CX_Eval_Float) {
        a->kind = MKC_ARG_FLOAT;
        a->fvalue = mkc_clang.EvalResult_getAsDouble(ev);
      }
      mkc_clang.EvalResult_dispose(ev);
      if (a->kind != MKC_ARG_OTHER) return;
    }
  }
  if (k == MKC_CX_CallExpr) { /* a matrix: its first row's buffer offset and its row bytes */
    char *fn = mkc_clang_take(mkc_clang.getCursorSpelling(c));
    int wmat = strcmp(fn, "mkc_wmat_of") == 0 && mkc_clang.Cursor_getNumArguments(c) == 3;
    free(fn);
    if (!wmat) return;
    mkc_arg bytes;
    classify(mkc_clang.Cursor_getArgument(c, 0), a);
    classify(mkc_clang.Cursor_getArgument(c, 1), &bytes);
    if (a->kind != MKC_ARG_BUFFER || bytes.kind != MKC_ARG_INT || bytes.value <= 0)
      a->kind = MKC_ARG_OTHER;
    else
      a->row_bytes = bytes.value;
    return;
  }
  children ch = kids(c);
  CXCursor last = {0};
  int have_last = 0;
  for (int i = 0; i < ch.n; i++)
    if (is_expr(ch.c[i])) last = ch.c[i], have_last = 1;
  switch (k) {
  case MKC_CX_UnexposedExpr:
  case MKC_CX_ParenExpr:
  case MKC_CX_CStyleCastExpr:
    if (have_last) classify(last, a);
    if (k == MKC_CX_CStyleCastExpr && a->kind == MKC_ARG_INT && a->value == 0)
      a->kind = MKC_ARG_NULL;
    return;
  case MKC_CX_DeclRefExpr: {
    char *name = mkc_clang_take(mkc_clang.getCursorSpelling(c));
    static const char *const buffers[] = {"weights", "scratch", "kv", "smem"};
    a->kind = MKC_ARG_NAME;
    for (int i = 0; i < 4; i++)
      if (strcmp(name, buffers[i]) == 0) a->kind = MKC_ARG_BUFFER;
    set_base(a, name);
    free(name);
    return;
  }
  case MKC_CX_MemberRefExpr: /* state->inputs: part of the state */
    if (have_last) classify(last, a);
    if (a->kind != MKC_ARG_NAME) a->kind = MKC_ARG_OTHER;
    return;
  case MKC_CX_BinaryOperator: {
    mkc_arg l, r;
    int n_expr = 0;
    CXCursor ops[2];
    for (int i = 0; i < ch.n && n_expr < 2; i++)
      if (is_expr(ch.c[i])) ops[n_expr++] = ch.c[i];
    if (n_expr != 2 || mkc_clang.getCursorBinaryOperatorKind(c) != MKC_CX_BinaryOperator_Add)
      return;
    classify(ops[0], &l);
    classify(ops[1], &r);
    if (l.kind == MKC_ARG_BUFFER && r.kind == MKC_ARG_INT) {
      *a = l;
      a->value += r.value;
    } else if (r.kind == MKC_ARG_BUFFER && l.kind == MKC_ARG_INT) {
      *a = r;
      a->value += l.value;
    }
    return;
  }
  default:
    if (k == 131) a->kind = MKC_ARG_NULL; /* CXCursor_CXXNullPtrLiteralExpr */
    return;
  }
}

/* Where the callee is defined (the template file:line, through #line) and its
 * parameter names, which the cost model looks arguments up by. */
static void read_callee(CXCursor call, mkc_call *out) {
  CXCursor def = mkc_clang.getCursorDefinition(mkc_clang.getCursorReferenced(call));
  if (mkc_clang.getCursorKind(def) != MKC_CX_FunctionDecl) return;
  CXString file;
  unsigned l = 0, c = 0;
  mkc_clang.getPresumedLocation(mkc_clang.getCursorLocation(def), &file, &l, &c);
  char *f = mkc_clang_take(file);
  snprintf(out->template_file, sizeof out->template_file, "%s", f);
  out->template_line = (int)l;
  free(f);
  int n = mkc_clang.Cursor_getNumArguments(def);
  for (int i = 0; i < n && i < MKC_INSPECT_MAX_ARGS; i++) {
    CXCursor param = mkc_clang.Cursor_getArgument(def, (unsigned)i);
    char *name = mkc_clang_take(mkc_clang.getCursorSpelling(param));
    snprintf(out->params[out->n_params++], sizeof out->params[0], "%s", name);
    free(name);
  }
}

static void read_call(CXCursor call, mkc_call *out) {
  memset(out, 0, sizeof *out);
  char *name = mkc_clang_take(mkc_clang.getCursorSpelling(call));
  snprintf(out->name, sizeof out->name, "%s", name);
  free(name);
  unsigned line = 0;
  physical(mkc_clang.getCursorLocation(call), NULL, &line, NULL, NULL);
  out->line = (int)line;
  read_callee(call, out);
  int n = mkc_clang.Cursor_getNumArguments(call);
  for (int i = 0; i < n && i < MKC_INSPECT_MAX_ARGS; i++)
    classify(mkc_clang.Cursor_getArgument(call, (unsigned)i), &out->args[out->n_args++]);
}

typedef struct kernel_find {
  CXCursor kernel;
  int n_global, found;
} kernel_find;

static int find_kernel(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  kernel_find *kf = data;
  int kind = mkc_clang.getCursorKind(c);
  if (kind == MKC_CX_LinkageSpec || kind == MKC_CX_UnexposedDecl) return MKC_CX_Visit_Recurse;
  if (kind != MKC_CX_FunctionDecl || !mkc_clang.isCursorDefinition(c)) return MKC_CX_Visit_Continue;
  children ch = kids(c);
  for (int i = 0; i < ch.n; i++)
    if (mkc_clang.getCursorKind(ch.c[i]) == MKC_CX_CUDAGlobalAttr) {
      kf->n_global++;
      char *name = mkc_clang_take(mkc_clang.getCursorSpelling(c));
      if (strcmp(name, "mkc_step") == 0) kf->kernel = c, kf->found = 1;
      free(name);
    }
  return MKC_CX_Visit_Continue;
}

/* Statements of the kernel body go to the stage whose comment precedes them. */
typedef struct stage_mark {
  unsigned offset, line, text_line;
  char *text;
} stage_mark;

static int add_mismatch(mkc_inspect_report *r, int stage, const char *what) {
  mkc_mismatch *m = realloc(r->mismatches, (size_t)(r->n_mismatches + 1) * sizeof *m);
  if (!m) return -1;
  r->mismatches = m;
  m[r->n_mismatches].stage = stage;
  snprintf(m[r->n_mismatches].what, sizeof m->what, "%s", what);
  r->n_mismatches++;
  return 0;
}

typedef struct body_walk {
  mkc_inspect_report *r;
  const stage_mark *marks;
  int n_marks, failed;
} body_walk;

static int stage_statement(CXCursor c, CXCursor parent, CXClientData data);

/* The parts of a stage's `if (condition) { calls; sync; }` (a stage that runs
 * only when the state says so, as sampling does): the block's statements are
 * the stage's; the condition is not a statement. */
static int conditional_part(CXCursor c, CXCursor parent, CXClientData data) {
  if (mkc_clang.getCursorKind(c) == MKC_CX_CompoundStmt)
    mkc_clang.visitChildren(c, stage_statement, data);
  return MKC_CX_Visit_Continue;
}

/* Whether an if's condition is `T == 1`: codegen's test before a stage's copy
 * for steps of one input (codegen/emit.lua, ctx.one_input). */
static int one_input_test(CXCursor cond) {
  mkc_arg t, one;
  children ops = kids(cond);
  if (mkc_clang.getCursorKind(cond) != MKC_CX_BinaryOperator || ops.n != 2 ||
      mkc_clang.getCursorBinaryOperatorKind(cond) != MKC_CX_BinaryOperator_EQ)
    return 0;
  classify(ops.c[0], &t);
  classify(ops.c[1], &one);
  return t.kind == MKC_ARG_NAME && strcmp(t.base, "T") == 0 && one.kind == MKC_ARG_INT &&
         one.value == 1;
}

/* An argument of the one-input copy against the general code's: the same,
 * but T written as 1 and t0 as 0. */
static int same_for_one_input(const mkc_arg *one, const mkc_arg *any) {
  if (any->kind == MKC_ARG_NAME && strcmp(any->base, "T") == 0)
    return one->kind == MKC_ARG_INT && one->value == 1;
  if (any->kind == MKC_ARG_NAME && strcmp(any->base, "t0") == 0)
    return one->kind == MKC_ARG_INT && one->value == 0;
  return one->kind == any->kind && one->value == any->value && one->fvalue == any->fvalue &&
         one->row_bytes == any->row_bytes && strcmp(one->base, any->base) == 0;
}

/* `if (T == 1) { copy } else { code }`: the stage's calls are the general
 * code's; the copy must make the same calls with the same arguments, T and
 * t0 written as literals, or it is reported (the model would not see it). */
static void one_input_copy(body_walk *w, int stage, CXCursor copy, CXCursor code, unsigned line) {
  mkc_stage *s = &w->r->stages[stage];
  int first = s->ast.n_calls;
  mkc_clang.visitChildren(code, stage_statement, w);
  children ch = kids(copy);
  int n = s->ast.n_calls - first, same = ch.n == n;
  for (int i = 0; i < ch.n && same; i++) {
    mkc_call one;
    same = mkc_clang.getCursorKind(ch.c[i]) == MKC_CX_CallExpr;
    if (!same) break;
    read_call(ch.c[i], &one);
    const mkc_call *any = &s->ast.calls[first + i];
    same = !strcmp(one.name, any->name) && one.n_args == any->n_args;
    for (int a = 0; a < one.n_args && same; a++)
      same = same_for_one_input(&one.args[a], &any->args[a]);
  }
  if (!same) {
    char msg[300];
    snprintf(msg, sizeof msg,
             "line %u: the copy for one input is not the stage's calls with T = 1, t0 = 0", line);
    add_mismatch(w->r, stage + 1, msg);
  }
}

/* One statement of the kernel body: a template call, the sync that ends the
 * stage, a conditional stage's if, or something the model does not know
 * (reported). */
static int stage_statement(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  body_walk *w = data;
  unsigned offset = 0, line = 0;
  /* the rounds loop (templates/rounds.cuh) holds the step: its body's statements are the
   * stages'; its own parts and mkc_round_next's `if (...) return;` after them are not */
  if (mkc_clang.getCursorKind(c) == MKC_CX_ForStmt) {
    mkc_clang.visitChildren(c, conditional_part, data);
    return MKC_CX_Visit_Continue;
  }
  physical(mkc_clang.getCursorLocation(c), NULL, &line, NULL, &offset);
  int i = -1;
  while (i + 1 < w->n_marks && w->marks[i + 1].offset < offset) i++;
  if (i < 0) return MKC_CX_Visit_Continue; /* the prologue: step check, pos, T, smem */
  mkc_stage *s = &w->r->stages[i];
  unsigned end_line = 0;
  physical(mkc_clang.getRangeEnd(mkc_clang.getCursorExtent(c)), NULL, &end_line, NULL, NULL);
  if ((int)end_line > s->ast.last_line) s->ast.last_line = (int)end_line;
  unsigned u_end = text_line(mkc_clang.getRangeEnd(mkc_clang.getCursorExtent(c)));
  if ((int)u_end > s->ast.u_last_line) s->ast.u_last_line = (int)u_end;
  char msg[300];
  if (mkc_clang.getCursorKind(c) == MKC_CX_IfStmt) {
    children ch = kids(c);
    if (ch.n == 3 && one_input_test(ch.c[0]) &&
        mkc_clang.getCursorKind(ch.c[1]) == MKC_CX_CompoundStmt &&
        mkc_clang.getCursorKind(ch.c[2]) == MKC_CX_CompoundStmt) {
      one_input_copy(w, i, ch.c[1], ch.c[2], line);
      return MKC_CX_Visit_Continue;
    }
    mkc_clang.visitChildren(c, conditional_part, data);
    return MKC_CX_Visit_Continue;
  }
  if (mkc_clang.getCursorKind(c) != MKC_CX_CallExpr) {
    snprintf(msg, sizeof msg,
             "line %u: a statement that is not a call (the model knows only calls)", line);
    add_mismatch(w->r, i + 1, msg);
    return MKC_CX_Visit_Continue;
  }
  mkc_call call;
  read_call(c, &call);
  if (strcmp(s->ast.sync, "none") != 0) {
    snprintf(msg, sizeof msg, "line %u: %s after the stage's sync at line %d", line, call.name,
             s->ast.sync_line);
    add_mismatch(w->r, i + 1, msg);
  }
  if (strcmp(call.name, "mkc_grid_sync") == 0 || strcmp(call.name, "mkc_flow_arrive") == 0 ||
      strncmp(call.name, "mkc_wait", 8) == 0) {
    snprintf(s->ast.sync, sizeof s->ast.sync, "%s",
             call.name[4] == 'g'   ? "grid"
             : call.name[4] == 'f' ? "flow"
                                   : "counter");
    s->ast.sync_line = (int)line;
  } else if (s->ast.n_calls < MKC_INSPECT_MAX_CALLS) {
    s->ast.calls[s->ast.n_calls++] = call;
  } else {
    snprintf(msg, sizeof msg, "line %u: more than %d calls in one stage", line,
             MKC_INSPECT_MAX_CALLS);
    add_mismatch(w->r, i + 1, msg);
  }
  return MKC_CX_Visit_Continue;
}

static int read_stages(mkc_inspect_report *r, CXTranslationUnit tu, CXCursor body) {
  CXToken *tokens = NULL;
  unsigned n_tokens = 0;
  mkc_clang.tokenize(tu, mkc_clang.getCursorExtent(body), &tokens, &n_tokens);
  stage_mark *marks = calloc(n_tokens + 1, sizeof *marks);
  int n_marks = 0;
  for (unsigned i = 0; marks && i < n_tokens; i++) {
    if (mkc_clang.getTokenKind(tokens[i]) != MKC_CX_Token_Comment) continue;
    char *text = mkc_clang_take(mkc_clang.getTokenSpelling(tu, tokens[i]));
    if (strncmp(text, "/* stage ", 9) != 0) {
      free(text);
      continue;
    }
    CXSourceLocation at = mkc_clang.getRangeStart(mkc_clang.getTokenExtent(tu, tokens[i]));
    physical(at, NULL, &marks[n_marks].line, NULL, &marks[n_marks].offset);
    marks[n_marks].text_line = text_line(at);
    marks[n_marks++].text = text;
  }
  mkc_clang.disposeTokens(tu, tokens, n_tokens);
  if (!marks) return -1;

  r->n_stages = n_marks;
  r->stages = calloc((size_t)(n_marks ? n_marks : 1), sizeof *r->stages);
  if (!r->stages) return -1;
  for (int i = 0; i < n_marks; i++) {
    mkc_stage *s = &r->stages[i];
    char why[256];
    if (mkc_meta_stage(marks[i].text, &s->meta, why, sizeof why) != 0) {
      char msg[400];
      snprintf(msg, sizeof msg, "stage comment at line %u: %s", marks[i].line, why);
      add_mismatch(r, i + 1, msg);
    }
    s->meta.line = (int)marks[i].line;
    s->ast.first_line = s->ast.last_line = (int)marks[i].line;
    s->ast.u_first_line = s->ast.u_last_line = (int)marks[i].text_line;
    snprintf(s->ast.sync, sizeof s->ast.sync, "none");
    free(marks[i].text);
  }

  body_walk w = {r, marks, n_marks, 0};
  mkc_clang.visitChildren(body, stage_statement, &w);
  free(marks);
  return w.failed ? -1 : 0;
}

int mkc_ast_read(mkc_inspect_report *r) {
  char why[512];
  parse p;
  if (parse_open(r->path, r->unfolded.folded ? r->unfolded.text : NULL, 0, &p, why, sizeof why) !=
      0) {
    fprintf(stderr, "mkc: error: %s\n", why);
    return -1;
  }
  unfolded = &r->unfolded;
  int rc = -1;
  if (print_diagnostics(p.tu, r->path, r->source, MKC_CX_Diagnostic_Error, stderr) > 0) {
    fprintf(stderr, "mkc: error: %s does not parse as device-side CUDA: not an mkc kernel\n",
            r->path);
    goto done;
  }
  kernel_find kf = {0};
  mkc_clang.visitChildren(mkc_clang.getTranslationUnitCursor(p.tu), find_kernel, &kf);
  if (!kf.found) {
    fprintf(stderr,
            "%s:1: error: not an mkc kernel: no __global__ mkc_step is defined (%d other)\n",
            r->path, kf.n_global);
    goto done;
  }
  if (kf.n_global != 1) {
    char msg[128];
    snprintf(msg, sizeof msg, "%d __global__ functions; an mkc kernel has exactly one",
             kf.n_global);
    add_mismatch(r, 0, msg);
  }
  unsigned line = 0;
  physical(mkc_clang.getCursorLocation(kf.kernel), NULL, &line, NULL, NULL);
  r->kernel_line = (int)line;
  children ch = kids(kf.kernel);
  for (int i = 0; i < ch.n; i++)
    if (mkc_clang.getCursorKind(ch.c[i]) == MKC_CX_CompoundStmt) {
      rc = read_stages(r, p.tu, ch.c[i]);
      break;
    }
  if (rc != 0) fprintf(stderr, "%s:%u: error: mkc_step has no body\n", r->path, line);
done:
  parse_close(&p);
  unfolded = NULL;
  return rc;
}
