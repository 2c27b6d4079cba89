/* gpt-oss's tools as its template writes them into the developer turn: a
 * TypeScript namespace "functions" with one type per function, its
 * parameters' JSON schema written as TypeScript types (the template's
 * render_typescript_type macro, quirks and all: a nested object's members
 * each open with a newline and 16 spaces, a oneOf never becomes "any"). */
#ifndef MKC_HARMONY_TOOLS_H
#define MKC_HARMONY_TOOLS_H

#include "util/buf.h"

/* "## functions\n\nnamespace functions {\n\n" ... "} // namespace
 * functions" for tools[0..n), each an OpenAI tool as JSON text. A tool
 * without a description gets an empty comment (the template fails there). */
void mkc_harmony_tools(mkc_buf *b, const char *const *tools, int n);

#endif
