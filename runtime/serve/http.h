/* HTTP/1.1 as mkc serve speaks it: one request per connection, its body
 * sized by Content-Length, and the answer whole (Content-Length) or as a
 * stream of server-sent events; the connection closes after each answer. */
#ifndef MKC_HTTP_H
#define MKC_HTTP_H

#include <stddef.h>

#define MKC_HTTP_HEAD_MAX (16 * 1024) /* a request's line and headers */

typedef struct mkc_http_req {
  char method[8];
  char path[256];    /* the target without its query */
  const char *query; /* what follows the target's '?', into the parsed buffer; NULL: none */
  size_t query_len;
  char origin[128]; /* the Origin header (a browser's page; its first 127 bytes), "" when none */
  const char *auth; /* the Authorization header's value, into the parsed buffer; NULL: none */
  size_t auth_len;
  const char *api_key; /* the x-api-key header's (Anthropic's clients send their key so) */
  size_t api_key_len;
  const char *body; /* into the parsed buffer */
  size_t body_len;
} mkc_http_req;

/* Reads a request from buf[0..n). Returns its whole size (head and body)
 * with *r filled; 0 when buf holds only its beginning so far; or minus the
 * HTTP status that refuses it (400 malformed, 411 a body without
 * Content-Length, 413 a body over max_body, 414 a long target, 431 a long
 * head, 501 a transfer encoding, 505 a version other than 1.0 and 1.1),
 * with why filled. Bare LF line ends are taken as CRLF. */
long mkc_http_parse(const char *buf, size_t n, size_t max_body, mkc_http_req *r, char *why,
                    size_t cap);

/* The query parameter name of r, percent-decoded ('+' a space) into out:
 * 1 when there (a bare name: ""), 0 when not, -1 when its value is not
 * well formed (a bad escape, a NUL) or longer than cap - 1. */
int mkc_http_query(const mkc_http_req *r, const char *name, char *out, size_t cap);

/* Whether r carries "Authorization: Bearer KEY" (the scheme's case aside) or
 * "x-api-key: KEY" for one of keys[0..n); each key is compared in time that
 * does not depend on where it differs. */
int mkc_http_bearer_ok(const mkc_http_req *r, const char *const *keys, int n);

/* Whether origin is a page served from this machine (http or https on
 * localhost, 127.0.0.1 or [::1], any port): the browsers' origins whose
 * requests the server allows, as ollama does by default. */
int mkc_http_local_origin(const char *origin);

/* Headers every answer on this connection carries after its own (CORS's
 * Access-Control-Allow-Origin; lines each ending in CRLF), or NULL: set per
 * connection, one at a time. */
void mkc_http_extra_headers(const char *lines);

/* The reason phrase of a status mkc sends ("Bad Request"; "" for another). */
const char *mkc_http_reason(int status);

/* Writes all of data to fd (no SIGPIPE): 0, or -1 when the peer is gone. */
int mkc_http_write(int fd, const void *data, size_t n);

/* Whether the client has closed its side (or the connection broke): it
 * will read no answer. A client that only half-closes counts as gone too,
 * as llama-server counts it. */
int mkc_http_peer_gone(int fd);

/* A whole answer: status line, Content-Type, Content-Length, Connection:
 * close, then body. 0 or -1 as mkc_http_write. */
int mkc_http_respond(int fd, int status, const char *content_type, const char *body, size_t n);

/* The head of a stream of content_type (no length: the stream ends when
 * the connection closes), then one server-sent event per call ("data:
 * <data>\n\n", text/event-stream) or one line (application/x-ndjson).
 * 0 or -1 as mkc_http_write. */
int mkc_http_stream_start(int fd, const char *content_type);
int mkc_http_event(int fd, const char *data);
/* A server-sent event with its name: "event: NAME\ndata: DATA\n\n" (Anthropic's stream). */
int mkc_http_named_event(int fd, const char *name, const char *data);
int mkc_http_line(int fd, const char *data);

#endif
