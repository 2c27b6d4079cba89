/* A file name a client sends (llama-server's slot files: {"filename": NAME}),
 * checked before it is joined to a directory of the server's. */
#ifndef MKC_SERVE_FILE_NAME_H
#define MKC_SERVE_FILE_NAME_H

/* Whether name is one llama-server takes (its fs_validate_filename): 1..255
 * bytes of well-formed UTF-8 with no control characters, no path separator
 * or character Windows forbids (or their look-alikes: U+2215, U+2216,
 * U+FF0E), no U+FFFD or byte order mark, no leading or trailing space, no
 * trailing dot, no "..". Such a name stays inside the directory. */
int mkc_file_name_ok(const char *name);

#endif
