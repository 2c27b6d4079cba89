/* libclang through dlopen: only the entry points mkc uses (runtime/inspect/libclang.h). */
#include "libclang.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/dl.h"

mkc_clang_api mkc_clang;
static void *clang_dl;

#define INSTALL_HINT                                                                               \
  "install it with `apt-get install libclang1-19` (Debian/Ubuntu), or point MKC_LIBCLANG at a "    \
  "libclang.so of LLVM 17 or later"

static void *open_first(char *why, size_t why_size) {
  const char *env = getenv("MKC_LIBCLANG");
  if (env && *env) {
    /* An explicit choice is the only one tried: a wrong path must not pass unseen. */
    void *dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
      snprintf(why, why_size, "libclang not found: MKC_LIBCLANG=%s: %s; " INSTALL_HINT, env,
               dlerror());
    return dl;
  }
  static const char *const names[] = {
      "libclang-19.so.1", "libclang.so.1",    "libclang-20.so.1",
      "libclang-18.so.1", "libclang-17.so.1", "/usr/lib/llvm-19/lib/libclang.so.1",
      "libclang.so",
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (dl) return dl;
  }
  snprintf(why, why_size,
           "libclang not found (tried libclang-19.so.1, libclang.so.1, libclang-{20,18,17}.so.1, "
           "$MKC_LIBCLANG); " INSTALL_HINT);
  return NULL;
}

int mkc_clang_load(char *why, size_t why_size) {
  if (clang_dl) return 0;
  void *dl = open_first(why, why_size);
  if (!dl) return -1;
  const mkc_dl_sym syms[] = {
#define SYM(field) {(void **)&mkc_clang.field, "clang_" #field}
      SYM(getCString),
      SYM(disposeString),
      SYM(createIndex),
      SYM(disposeIndex),
      SYM(parseTranslationUnit2),
      SYM(disposeTranslationUnit),
      SYM(getNumDiagnostics),
      SYM(getDiagnostic),
      SYM(disposeDiagnostic),
      SYM(getDiagnosticSeverity),
      SYM(getDiagnosticSpelling),
      SYM(getDiagnosticOption),
      SYM(getDiagnosticLocation),
      SYM(getTranslationUnitCursor),
      SYM(visitChildren),
      SYM(getCursorKind),
      SYM(getCursorSpelling),
      SYM(getCursorExtent),
      SYM(getCursorLocation),
      SYM(getCursorReferenced),
      SYM(getCursorDefinition),
      SYM(isCursorDefinition),
      SYM(Cursor_getNumArguments),
      SYM(Cursor_getArgument),
      SYM(getCursorBinaryOperatorKind),
      SYM(Cursor_Evaluate),
      SYM(EvalResult_getKind),
      SYM(EvalResult_getAsLongLong),
      SYM(EvalResult_getAsDouble),
      SYM(EvalResult_dispose),
      SYM(getRangeStart),
      SYM(getRangeEnd),
      SYM(getExpansionLocation),
      SYM(getPresumedLocation),
      SYM(getFileName),
      SYM(tokenize),
      SYM(disposeTokens),
      SYM(getTokenKind),
      SYM(getTokenSpelling),
      SYM(getTokenExtent),
      SYM(getClangVersion),
#undef SYM
  };
  const char *missing = mkc_dl_resolve(dl, syms, sizeof syms / sizeof *syms);
  if (missing) {
    snprintf(why, why_size, "this libclang has no %s (LLVM 17 or later is needed); " INSTALL_HINT,
             missing);
    dlclose(dl);
    memset(&mkc_clang, 0, sizeof mkc_clang);
    return -1;
  }
  clang_dl = dl;
  return 0;
}

char *mkc_clang_take(CXString s) {
  const char *c = mkc_clang.getCString(s);
  char *copy = strdup(c ? c : "");
  mkc_clang.disposeString(s);
  return copy;
}
