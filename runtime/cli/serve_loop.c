/* mkc serve's connections (serve.h): accepted and read without blocking,
 * so that requests arrive while others decode; each whole request is
 * routed, and between polls the slot scheduler, when there is one, takes a
 * step. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "interrupt.h"
#include "serve.h"
#include "serve/http.h"
#include "util/clock.h"

#define MAX_CONNS 64 /* connections being read; past them the backlog waits */
/* A request must arrive whole within this, and a client that reads nothing for this long is
 * gone: 30 s, or serve -to/--timeout (llama-server's) */
#define TIMEOUT_S 30

typedef struct conn {
  int fd;
  char *buf;
  size_t n, cap;
  double since; /* accepted, or the loop last free to read it */
} conn;

#define LINGER_S 0.2 /* how long an answered connection drains its client's bytes */

/* Reads and drops what fd has: 1 when the client has closed (or the
 * connection broke), 0 when it may send more. */
static int drained(int fd) {
  char sink[16384];
  for (int i = 0; i < 64; i++) {
    ssize_t got = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      return 1;
    if (got < 0) return 0;
  }
  return 0;
}

void mkc_serve_close(mkc_server *sv, int fd) {
  shutdown(fd, SHUT_WR);
  if (drained(fd) || sv->n_closing == MKC_SERVE_CLOSING_MAX) {
    close(fd);
    return;
  }
  sv->closing[sv->n_closing].fd = fd;
  sv->closing[sv->n_closing++].until = mkc_seconds() + LINGER_S;
}

/* The draining connections: those whose client closed or whose time is
 * up are closed (ready: their poll said readable). */
static void linger(mkc_server *sv, const struct pollfd *pf, double now) {
  for (int i = sv->n_closing - 1; i >= 0; i--) {
    int fd = sv->closing[i].fd;
    if ((pf && pf[i].revents && drained(fd)) || now >= sv->closing[i].until) {
      close(fd);
      sv->closing[i] = sv->closing[--sv->n_closing];
    }
  }
}

static void drop(conn *cs, int *n, int i) {
  free(cs[i].buf);
  cs[i] = cs[--*n];
}

/* Reads what conn c has; routes its request once whole (or refused). 1:
 * the connection is done with (c to drop), 0: more to read, or
 * MKC_SERVE_STOP. */
static int read_some(mkc_server *sv, conn *c) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 4096;
    char *b = realloc(c->buf, cap);
    if (!b) {
      mkc_respond_error(c->fd, 500, "out of memory");
      mkc_serve_close(sv, c->fd);
      return 1;
    }
    c->buf = b, c->cap = cap;
  }
  ssize_t got = recv(c->fd, c->buf + c->n, c->cap - c->n, MSG_DONTWAIT);
  if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (got <= 0) { /* the client went away before its request was whole */
    close(c->fd);
    return 1;
  }
  c->n += (size_t)got;
  char why[200];
  mkc_http_req req;
  long whole = mkc_http_parse(c->buf, c->n, MKC_SERVE_MAX_BODY, &req, why, sizeof why);
  if (whole == 0) return 0;
  int rc = MKC_SERVE_DONE;
  if (whole < 0) { /* refused before any route: the framing */
    int status = (int)-whole;
    mkc_respond_error(c->fd, status, why);
    fprintf(stderr, "mkc: refused a request: %d %s (%s)\n", status, mkc_http_reason(status), why);
  } else {
    rc = mkc_serve_route(sv, c->fd, &req);
  }
  if (rc != MKC_SERVE_KEPT) mkc_serve_close(sv, c->fd);
  return rc == MKC_SERVE_STOP ? MKC_SERVE_STOP : 1;
}

int mkc_serve_loop(mkc_server *sv, int listen_fd) {
  int timeout = sv->c->http_timeout ? sv->c->http_timeout : TIMEOUT_S;
  conn cs[MAX_CONNS];
  struct pollfd pf[1 + MAX_CONNS + MKC_SERVE_CLOSING_MAX];
  int n = 0, rc = 0;
  double accept_after = 0; /* out of descriptors: no accepting until then */
  fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK); /* accept until none wait */
  while (!mkc_interrupted && rc == 0) {
    int busy = sv->sched && mkc_sched_pending(sv->sched) > 0;
    int accepting = n < MAX_CONNS && mkc_seconds() >= accept_after;
    pf[0] = (struct pollfd){.fd = listen_fd, .events = accepting ? POLLIN : 0};
    for (int i = 0; i < n; i++) pf[1 + i] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
    int lingering = sv->n_closing; /* their entries follow the connections' */
    for (int i = 0; i < lingering; i++)
      pf[1 + n + i] = (struct pollfd){.fd = sv->closing[i].fd, .events = POLLIN};
    int wait_ms = busy ? 0 : lingering ? 50 : accepting ? 1000 : 250;
    int ready = poll(pf, (nfds_t)(1 + n + lingering), wait_ms);
    if (ready < 0 && errno != EINTR) {
      fprintf(stderr, "mkc: error: poll: %s\n", strerror(errno));
      rc = -1;
      break;
    }
    double now = mkc_seconds();
    linger(sv, ready > 0 ? pf + 1 + n : NULL, now); /* before the reads add to the list */
    /* a request answered whole meanwhile (one at a time): the time was not the others' to lose */
    int blocked = 0;
    for (int i = n - 1; ready > 0 && i >= 0 && !mkc_interrupted && rc == 0; i--) {
      if (!pf[1 + i].revents) continue;
      int done = read_some(sv, &cs[i]);
      blocked |= mkc_seconds() - now > 1;
      if (done == MKC_SERVE_STOP) rc = -1;
      if (done) drop(cs, &n, i);
    }
    if (blocked) {
      now = mkc_seconds();
      for (int i = 0; i < n; i++) cs[i].since = now;
    }
    for (int i = n - 1; i >= 0; i--)
      if (now - cs[i].since > timeout) {
        mkc_respond_error(cs[i].fd, 408, "the request did not arrive in time");
        mkc_serve_close(sv, cs[i].fd);
        drop(cs, &n, i);
      }
    /* every connection waiting, so that requests sent together are decoded together */
    while (rc == 0 && ready > 0 && (pf[0].revents & POLLIN) && n < MAX_CONNS) {
      int fd = accept(listen_fd, NULL, NULL); /* blocking: answers are written whole */
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          /* out of descriptors: the backlog waits a while for answers to free some */
          fprintf(stderr, "mkc: warning: accept: %s (the connections wait)\n", strerror(errno));
          accept_after = mkc_seconds() + 0.25;
        } else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN &&
                   errno != EWOULDBLOCK) {
          fprintf(stderr, "mkc: error: accept: %s\n", strerror(errno));
          rc = -1;
        }
        break;
      }
      struct timeval tv = {.tv_sec = timeout};
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      cs[n++] = (conn){.fd = fd, .since = mkc_seconds()};
    }
    if (rc == 0 && busy && mkc_serve_slots_step(sv) != 0) rc = -1;
  }
  for (int i = 0; i < n; i++) close(cs[i].fd), free(cs[i].buf);
  if (sv->sched) mkc_serve_slots_end_all(sv, rc ? "the server stopped" : "interrupted (Ctrl-C)");
  for (int i = 0; i < sv->n_closing; i++) close(sv->closing[i].fd);
  sv->n_closing = 0;
  /* Ctrl-C during an answer stops the server too: that is no failure */
  return mkc_interrupted ? 0 : rc;
}
