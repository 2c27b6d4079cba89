/* Files mkc keeps: the cache directory, whole-file reads, and writes that
 * readers never see half done (temp name + rename). */
#ifndef MKC_FILES_H
#define MKC_FILES_H

#include <stddef.h>
#include <stdio.h>

/* $MKC_CACHE_DIR/sub, else $XDG_CACHE_HOME/mkc/sub, else ~/.cache/mkc/sub,
 * created if missing. Returns 0, or -1 after printing why. */
int mkc_cache_dir(const char *sub, char *out, size_t cap);

/* $XDG_CACHE_HOME/mkc/sub, else ~/.cache/mkc/sub (not created): 0, -1 when
 * neither variable is set, -2 when the path does not fit cap. Prints nothing. */
int mkc_user_cache_path(const char *sub, char *out, size_t cap);

/* mkdir -p; path is modified in place and restored. 0 or -1 (errno set). */
int mkc_mkdir_p(char *path);

/* The whole file (plus a NUL, not counted in *size), or NULL with errno set. */
void *mkc_read_file(const char *path, size_t *size);

/* A temporary name beside path, unique in this process and among processes:
 * PATH.PID.N.tmp. 0, or -1 (errno ENAMETOOLONG) when it does not fit cap. */
int mkc_temp_path(const char *path, char *tmp, size_t cap);

/* A file written as a stream that readers never see half done: opened under
 * a temporary name beside path (its name into tmp), then committed (closed
 * and renamed over path) or abandoned (closed and removed). Open: the
 * stream, or NULL with errno set (tmp "" when no temporary name fits). Commit: 0, or -1 with errno
 * set (EIO for a stream error that set none), the temporary removed. */
FILE *mkc_atomic_open(const char *path, char *tmp, size_t cap);
int mkc_atomic_commit(FILE *f, const char *tmp, const char *path);
void mkc_atomic_abandon(FILE *f, const char *tmp);

/* Writes the parts to a temporary name (mkc_temp_path) and renames it over
 * path, so a reader sees the old file or the whole new one. 0, or -1 after
 * printing why; the _quiet form prints nothing and leaves errno set. */
int mkc_write_atomic(const char *path, const void *const *parts, const size_t *sizes, int n_parts);
int mkc_write_atomic_quiet(const char *path, const void *const *parts, const size_t *sizes,
                           int n_parts);

/* "mkc: error: WHAT: <message>" on stderr, WHAT being the file or source
 * at fault: the one format of every reader of outside data. Returns -1. */
__attribute__((format(printf, 2, 3))) int mkc_error_in(const char *what, const char *fmt, ...);

#endif
