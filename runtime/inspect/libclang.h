/* libclang, loaded at run time (like NVRTC): mkc builds without it, and only
 * `mkc inspect` needs it. The few clang-c types and entry points mkc uses
 * are declared here with libclang's documented C layout (clang-c/Index.h,
 * stable ABI since LLVM 3.x; clang_getCursorBinaryOperatorKind since 17). */
#ifndef MKC_LIBCLANG_H
#define MKC_LIBCLANG_H

#include <stddef.h>

typedef void *CXIndex;
typedef struct CXTranslationUnitImpl *CXTranslationUnit;
typedef void *CXDiagnostic;
typedef void *CXFile;
typedef void *CXEvalResult;
typedef void *CXClientData;

typedef struct {
  const void *data;
  unsigned private_flags;
} CXString;

typedef struct {
  int kind; /* enum CXCursorKind */
  int xdata;
  const void *data[3];
} CXCursor;

typedef struct {
  const void *ptr_data[2];
  unsigned int_data;
} CXSourceLocation;

typedef struct {
  const void *ptr_data[2];
  unsigned begin_int_data;
  unsigned end_int_data;
} CXSourceRange;

typedef struct {
  unsigned int_data[4];
  void *ptr_data;
} CXToken;

struct CXUnsavedFile {
  const char *Filename;
  const char *Contents;
  unsigned long Length;
};

/* The enum values mkc reads (clang-c/Index.h, CXDiagnostic.h). */
enum {
  MKC_CX_UnexposedDecl = 1,
  MKC_CX_FunctionDecl = 8,
  MKC_CX_VarDecl = 9,
  MKC_CX_ParmDecl = 10,
  MKC_CX_LinkageSpec = 23,
  MKC_CX_UnexposedExpr = 100,
  MKC_CX_DeclRefExpr = 101,
  MKC_CX_MemberRefExpr = 102,
  MKC_CX_CallExpr = 103,
  MKC_CX_IntegerLiteral = 106,
  MKC_CX_FloatingLiteral = 107,
  MKC_CX_ParenExpr = 111,
  MKC_CX_UnaryOperator = 112,
  MKC_CX_BinaryOperator = 114,
  MKC_CX_CStyleCastExpr = 117,
  MKC_CX_CompoundStmt = 202,
  MKC_CX_IfStmt = 205,
  MKC_CX_ForStmt = 209,
  MKC_CX_DeclStmt = 231,
  MKC_CX_CUDAGlobalAttr = 414,
  MKC_CX_BinaryOperator_Add = 6,
  MKC_CX_BinaryOperator_EQ = 15,
  MKC_CX_Eval_Int = 1,
  MKC_CX_Eval_Float = 2,
  MKC_CX_Token_Comment = 4,
  MKC_CX_Diagnostic_Warning = 2,
  MKC_CX_Diagnostic_Error = 3,
  MKC_CX_Visit_Break = 0,
  MKC_CX_Visit_Continue = 1,
  MKC_CX_Visit_Recurse = 2,
};

typedef int (*mkc_cx_visitor)(CXCursor cursor, CXCursor parent, CXClientData data);

/* The entry points, filled by mkc_clang_load: one member each, deliberately alike. */
typedef struct mkc_clang_api {
  const char *(*getCString)(CXString);
  void (*disposeString)(CXString);
  CXIndex (*createIndex)(int, int);
  void (*disposeIndex)(CXIndex);
  int (*parseTranslationUnit2)(CXIndex, const char *, const char *const *, int,
                               struct CXUnsavedFile *, unsigned, unsigned, CXTranslationUnit *);
  void (*disposeTranslationUnit)(CXTranslationUnit);
  unsigned (*getNumDiagnostics)(CXTranslationUnit);
  CXDiagnostic (*getDiagnostic)(CXTranslationUnit, unsigned);
  void (*disposeDiagnostic)(CXDiagnostic);
  int (*getDiagnosticSeverity)(CXDiagnostic);
  CXString (*getDiagnosticSpelling)(CXDiagnostic);
  CXString (*getDiagnosticOption)(CXDiagnostic, CXString *);
  CXSourceLocation (*getDiagnosticLocation)(CXDiagnostic);
  CXCursor (*getTranslationUnitCursor)(CXTranslationUnit);
  unsigned (*visitChildren)(CXCursor, mkc_cx_visitor, CXClientData);
  int (*getCursorKind)(CXCursor);
  CXString (*getCursorSpelling)(CXCursor);
  CXSourceRange (*getCursorExtent)(CXCursor);
  CXSourceLocation (*getCursorLocation)(CXCursor);
  CXCursor (*getCursorReferenced)(CXCursor);
  CXCursor (*getCursorDefinition)(CXCursor);
  unsigned (*isCursorDefinition)(CXCursor);
  int (*Cursor_getNumArguments)(CXCursor);
  CXCursor (*Cursor_getArgument)(CXCursor, unsigned);
  int (*getCursorBinaryOperatorKind)(CXCursor);
  CXEvalResult (*Cursor_Evaluate)(CXCursor);
  int (*EvalResult_getKind)(CXEvalResult);
  long long (*EvalResult_getAsLongLong)(CXEvalResult);
  double (*EvalResult_getAsDouble)(CXEvalResult);
  void (*EvalResult_dispose)(CXEvalResult);
  CXSourceLocation (*getRangeStart)(CXSourceRange);
  CXSourceLocation (*getRangeEnd)(CXSourceRange);
  void (*getExpansionLocation)(CXSourceLocation, CXFile *, unsigned *, unsigned *, unsigned *);
  void (*getPresumedLocation)(CXSourceLocation, CXString *, unsigned *, unsigned *);
  CXString (*getFileName)(CXFile);
  void (*tokenize)(CXTranslationUnit, CXSourceRange, CXToken **, unsigned *);
  void (*disposeTokens)(CXTranslationUnit, CXToken *, unsigned);
  int (*getTokenKind)(CXToken);
  CXString (*getTokenSpelling)(CXTranslationUnit, CXToken);
  CXSourceRange (*getTokenExtent)(CXTranslationUnit, CXToken);
  CXString (*getClangVersion)(void);
} mkc_clang_api;

extern mkc_clang_api mkc_clang;

/* Loads libclang ($MKC_LIBCLANG alone when set, else libclang-19.so.1,
 * libclang.so.1, ...). Returns 0, or -1 with the reason and how to install
 * it in why. */
int mkc_clang_load(char *why, size_t why_size);

/* A CXString as a malloc'd C string (freed by the caller); disposes s. */
char *mkc_clang_take(CXString s);

#endif
