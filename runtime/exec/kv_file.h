/* A prompt's KV rows on disk (llama.cpp's --prompt-cache): the tokens a
 * session held and their rows as its backend stores them, so that a later
 * run whose prompt begins the same way reads them back instead of
 * recomputing them. The file:
 *
 *   "MKCKV\0v1"                 8 bytes
 *   model id                    u64: the model and kernel it was written for
 *   n_tokens                    u32
 *   n_rings                     u32: the model's sliding windows (0: none)
 *   n_bytes                     u64: the rows' bytes (snapshot.h's store)
 *   held_from                   n_rings i32: each window's first position
 *                               whose rows the file holds (its ring kept
 *                               only the last ones)
 *   tokens                      n_tokens i32
 *   rows                        n_bytes bytes
 *
 * little-endian; a file of another model, kernel layout or backend (the
 * reference executor stores doubles) is not used. */
#ifndef MKC_KV_FILE_H
#define MKC_KV_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

typedef struct mkc_kv_file {
  uint64_t model_id;
  int n_tokens;
  int n_rings;
  const unsigned char *held_from; /* in the parsed bytes: n_rings little-endian i32 */
  const unsigned char *tokens;    /* in the parsed bytes: n_tokens little-endian i32 */
  const unsigned char *rows;
  size_t n_bytes;
} mkc_kv_file;

/* Reads a file's bytes: 0, or -1 with why (not such a file, cut short, sizes
 * that do not add up). Points into data. */
int mkc_kv_file_parse(const void *data, size_t n, mkc_kv_file *f, char *why, size_t cap);

/* The file of n tokens and their rows (bytes of them) for model_id, each
 * sliding window's first position held in held_from[0..n_rings), written
 * through a temporary name (mkc_write_atomic). 0, or -1 after a message. */
int mkc_kv_file_write(const char *path, uint64_t model_id, const int *held_from, int n_rings,
                      const int *tokens, int n, const void *rows, size_t bytes);
/* Its bytes: the header, windows, tokens and rows. */
size_t mkc_kv_file_bytes(int n_rings, int n, size_t rows);
/* A parsed file's tokens in host order (one more slot for callers that count
 * past them); NULL when out of memory. */
int *mkc_kv_file_tokens(const mkc_kv_file *f);

/* Writes positions [0, n) of s to path (n past its pos: up to its pos), for
 * model_id (through a temporary name). 0, or -1 after a message. */
int mkc_kv_save(mkc_session *s, int n, uint64_t model_id, const char *path);

/* mkc_kv_save for a caller that answers someone (a server's slot file):
 * returns the tokens written, with the file's bytes in *written, or -1 with
 * why (a failed copy or write is also printed). */
int mkc_kv_write(mkc_session *s, int n, uint64_t model_id, const char *path, size_t *written,
                 char *why, size_t cap);

/* Reads path into s (at pos 0) as far as it begins prompt, at most
 * n_prompt - 1 tokens (the last is fed to choose the first token). Returns
 * the positions loaded: 0 when path is not there, or (after a warning) is
 * not such a file or another model's, or its sliding windows lack the rows
 * the prompt's shared start needs; -1 after a message when a copy failed. */
int mkc_kv_load(mkc_session *s, uint64_t model_id, const char *path, const int *prompt,
                int n_prompt);

/* Reads all of path into s (at pos 0; llama-server's slot restore): returns
 * its tokens' count, with the tokens in *tokens (malloc'd) and the file's
 * bytes in *bytes_read, or -1 with why (not there, not such a file, another
 * model's, a token outside the vocabulary, more rows than the context),
 * after which s's rows are not to be reused (llama-server clears the slot
 * too). */
int mkc_kv_read(mkc_session *s, uint64_t model_id, const char *path, int **tokens,
                size_t *bytes_read, char *why, size_t cap);

#endif
