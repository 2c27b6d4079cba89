/* See http.h. */
#include "http.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static long refuse(int status, char *why, size_t cap, const char *msg) {
  snprintf(why, cap, "%s", msg);
  return -status;
}

/* The end of the head: the offset just past its blank line, or 0. */
static size_t head_end(const char *buf, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (buf[i] != '\n') continue;
    if (i + 1 < n && buf[i + 1] == '\n') return i + 2;
    if (i + 2 < n && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
  }
  return 0;
}

/* A header's token characters (RFC 9110's tchar). */
static int tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

long mkc_http_parse(const char *buf, size_t n, size_t max_body, mkc_http_req *r, char *why,
                    size_t cap) {
  memset(r, 0, sizeof *r);
  why[0] = '\0';
  size_t head = head_end(buf, n < MKC_HTTP_HEAD_MAX ? n : MKC_HTTP_HEAD_MAX);
  if (!head) {
    if (n >= MKC_HTTP_HEAD_MAX) return refuse(431, why, cap, "the request's head is over 16 KiB");
    if (memchr(buf, '\0', n)) return refuse(400, why, cap, "a NUL byte in the request's head");
    return 0;
  }
  if (memchr(buf, '\0', head)) return refuse(400, why, cap, "a NUL byte in the request's head");
  /* the request line: METHOD SP TARGET SP HTTP/1.x */
  const char *p = buf, *eol = memchr(p, '\n', head);
  size_t line = (size_t)(eol - p) - (eol > p && eol[-1] == '\r');
  size_t m = 0;
  while (m < line && tchar(p[m])) m++;
  if (m == 0 || m >= line || p[m] != ' ') return refuse(400, why, cap, "a malformed request line");
  if (m >= sizeof r->method) return refuse(501, why, cap, "an unknown method");
  memcpy(r->method, p, m);
  const char *target = p + m + 1, *sp = memchr(target, ' ', line - m - 1);
  if (!sp || sp == target) return refuse(400, why, cap, "a malformed request line");
  size_t t_len = (size_t)(sp - target), path_len = strcspn(target, "? ");
  if (path_len > t_len) path_len = t_len;
  if (target[0] != '/') return refuse(400, why, cap, "the target is not a path");
  if (path_len >= sizeof r->path) return refuse(414, why, cap, "the target is over 255 bytes");
  memcpy(r->path, target, path_len);
  size_t v_len = line - (size_t)(sp + 1 - p);
  if (!(v_len == 8 && (memcmp(sp + 1, "HTTP/1.1", 8) == 0 || memcmp(sp + 1, "HTTP/1.0", 8) == 0)))
    return refuse(505, why, cap, "only HTTP/1.0 and HTTP/1.1 are spoken");
  for (size_t i = 0; i < t_len; i++)
    if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f)
      return refuse(400, why, cap, "a control character in the target");
  if (path_len < t_len && target[path_len] == '?')
    r->query = target + path_len + 1, r->query_len = t_len - path_len - 1;

  /* the headers: only the body's framing matters here */
  long length = -1;
  for (p = eol + 1; p < buf + head;) {
    const char *h = p;
    eol = memchr(p, '\n', (size_t)(buf + head - p));
    size_t len = (size_t)(eol - p) - (eol > p && eol[-1] == '\r');
    p = eol + 1;
    if (len == 0) break; /* the blank line */
    const char *colon = memchr(h, ':', len);
    size_t name = colon ? (size_t)(colon - h) : 0;
    for (size_t i = 0; i < name; i++)
      if (!tchar(h[i])) name = 0;
    if (!name) return refuse(400, why, cap, "a malformed header line");
    const char *v = colon + 1, *v_end = h + len;
    while (v < v_end && (*v == ' ' || *v == '\t')) v++;
    while (v_end > v && (v_end[-1] == ' ' || v_end[-1] == '\t')) v_end--;
    if (name == 6 && strncasecmp(h, "Origin", 6) == 0) {
      /* cut to its first 127 bytes: no origin of this machine is that long, so a cut one is
       * never taken for one, and an origin is never lost (an empty one is none) */
      size_t k =
          (size_t)(v_end - v) < sizeof r->origin ? (size_t)(v_end - v) : sizeof r->origin - 1;
      memcpy(r->origin, v, k);
      r->origin[k] = '\0';
    }
    if (name == 13 && strncasecmp(h, "Authorization", 13) == 0) {
      if (r->auth) return refuse(400, why, cap, "two Authorization headers");
      r->auth = v;
      r->auth_len = (size_t)(v_end - v);
    }
    if (name == 9 && strncasecmp(h, "x-api-key", 9) == 0) {
      if (r->api_key) return refuse(400, why, cap, "two x-api-key headers");
      r->api_key = v;
      r->api_key_len = (size_t)(v_end - v);
    }
    if (name == 17 && strncasecmp(h, "Transfer-Encoding", 17) == 0)
      return refuse(501, why, cap, "a transfer encoding (send the body with Content-Length)");
    if (name == 14 && strncasecmp(h, "Content-Length", 14) == 0) {
      long x = 0;
      if (v == v_end) return refuse(400, why, cap, "an empty Content-Length");
      for (const char *d = v; d < v_end; d++) {
        if (*d < '0' || *d > '9' || x > (1L << 40))
          return refuse(400, why, cap, "a bad Content-Length");
        x = x * 10 + (*d - '0');
      }
      if (length >= 0 && x != length)
        return refuse(400, why, cap, "two Content-Lengths that differ");
      length = x;
    }
  }
  int wants_body = strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0;
  if (length < 0) {
    if (wants_body) return refuse(411, why, cap, "a body needs a Content-Length");
    length = 0;
  }
  if ((size_t)length > max_body) {
    snprintf(why, cap, "the body is %ld bytes, over the %zu this server takes", length, max_body);
    return -413;
  }
  if (n - head < (size_t)length) return 0;
  r->body = buf + head;
  r->body_len = (size_t)length;
  return (long)(head + (size_t)length);
}

/* Whether given[0..len) is one of keys[0..n), in time that does not depend on where it
 * differs. */
static int key_ok(const char *given, size_t len, const char *const *keys, int n) {
  int ok = 0;
  if (!given || len == 0) return 0;
  for (int k = 0; k < n; k++) {
    size_t key_len = strlen(keys[k]);
    unsigned char diff = key_len != len;
    for (size_t i = 0; i < key_len; i++)
      diff |= (unsigned char)(keys[k][i] ^ given[i < len ? i : 0]);
    ok |= diff == 0;
  }
  return ok;
}

int mkc_http_bearer_ok(const mkc_http_req *r, const char *const *keys, int n) {
  int bearer = r->auth && r->auth_len >= 7 && strncasecmp(r->auth, "Bearer ", 7) == 0;
  return (bearer && key_ok(r->auth + 7, r->auth_len - 7, keys, n)) ||
         key_ok(r->api_key, r->api_key_len, keys, n);
}

int mkc_http_local_origin(const char *origin) {
  static const char *const HOSTS[] = {"localhost", "127.0.0.1", "[::1]"};
  const char *h = strncmp(origin, "http://", 7) == 0    ? origin + 7
                  : strncmp(origin, "https://", 8) == 0 ? origin + 8
                                                        : NULL;
  for (size_t i = 0; h && i < sizeof HOSTS / sizeof *HOSTS; i++) {
    size_t n = strlen(HOSTS[i]);
    if (strncmp(h, HOSTS[i], n) != 0) continue;
    const char *port = h + n;
    if (!*port) return 1;
    if (*port++ != ':' || !*port || strlen(port) > 5) continue;
    while (*port >= '0' && *port <= '9') port++;
    if (!*port) return 1;
  }
  return 0;
}

static const char *extra_headers = "";

static int hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Decodes a query's key or value (percent escapes, '+' a space) into out:
 * its length, or -1 (a bad escape, a NUL, longer than cap - 1). */
static long query_decode(const char *s, size_t n, char *out, size_t cap) {
  size_t o = 0;
  if (cap == 0) return -1;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      if (i + 2 >= n || hex_digit(s[i + 1]) < 0 || hex_digit(s[i + 2]) < 0) return -1;
      c = hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]);
      i += 2;
      if (c == 0) return -1;
    }
    if (o + 1 >= cap) return -1;
    out[o++] = (char)c;
  }
  out[o] = '\0';
  return (long)o;
}

int mkc_http_query(const mkc_http_req *r, const char *name, char *out, size_t cap) {
  const char *q = r->query, *end = q ? q + r->query_len : NULL;
  char key[64];
  while (q && q < end) {
    const char *amp = memchr(q, '&', (size_t)(end - q)), *stop = amp ? amp : end;
    const char *eq = memchr(q, '=', (size_t)(stop - q));
    long k = query_decode(q, (size_t)((eq ? eq : stop) - q), key, sizeof key);
    if (k >= 0 && strcmp(key, name) == 0) {
      if (!eq) return cap ? (out[0] = '\0', 1) : -1;
      if (query_decode(eq + 1, (size_t)(stop - eq - 1), out, cap) >= 0) return 1;
      if (cap) out[0] = '\0';
      return -1;
    }
    q = amp ? amp + 1 : end;
  }
  return 0;
}

void mkc_http_extra_headers(const char *lines) { extra_headers = lines ? lines : ""; }

const char *mkc_http_reason(int status) {
  static const struct {
    int status;
    const char *reason;
  } R[] = {{200, "OK"},
           {204, "No Content"},
           {401, "Unauthorized"},
           {403, "Forbidden"},
           {400, "Bad Request"},
           {404, "Not Found"},
           {405, "Method Not Allowed"},
           {408, "Request Timeout"},
           {411, "Length Required"},
           {413, "Content Too Large"},
           {414, "URI Too Long"},
           {431, "Request Header Fields Too Large"},
           {500, "Internal Server Error"},
           {501, "Not Implemented"},
           {503, "Service Unavailable"},
           {505, "HTTP Version Not Supported"}};
  for (size_t i = 0; i < sizeof R / sizeof *R; i++)
    if (R[i].status == status) return R[i].reason;
  return "";
}

int mkc_http_write(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int mkc_http_peer_gone(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

int mkc_http_respond(int fd, int status, const char *content_type, const char *body, size_t n) {
  char head[1024];
  int h = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n%s\r\n",
                   status, mkc_http_reason(status), content_type, n, extra_headers);
  return mkc_http_write(fd, head, (size_t)h) || mkc_http_write(fd, body, n) ? -1 : 0;
}

int mkc_http_stream_start(int fd, const char *content_type) {
  char head[1024];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nCache-Control: no-cache\r\n"
                   "Connection: close\r\n%s\r\n",
                   content_type, extra_headers);
  return mkc_http_write(fd, head, (size_t)n);
}

int mkc_http_line(int fd, const char *data) {
  return mkc_http_write(fd, data, strlen(data)) || mkc_http_write(fd, "\n", 1) ? -1 : 0;
}

int mkc_http_named_event(int fd, const char *name, const char *data) {
  return mkc_http_write(fd, "event: ", 7) || mkc_http_write(fd, name, strlen(name)) ||
                 mkc_http_write(fd, "\n", 1) || mkc_http_event(fd, data)
             ? -1
             : 0;
}

int mkc_http_event(int fd, const char *data) {
  return mkc_http_write(fd, "data: ", 6) || mkc_http_write(fd, data, strlen(data)) ||
                 mkc_http_write(fd, "\n\n", 2)
             ? -1
             : 0;
}
