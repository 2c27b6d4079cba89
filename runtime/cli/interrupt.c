/* See interrupt.h. */
#include "interrupt.h"

#include <string.h>

volatile sig_atomic_t mkc_interrupted;

/* A second Ctrl-C before the loop has stopped (a long step) ends mkc. */
static void on_sigint(int sig) {
  if (mkc_interrupted) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
  mkc_interrupted = 1;
}

static void install(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
  mkc_interrupted = 0;
}

void mkc_interrupt_install(void) { install(SIGINT); }

void mkc_interrupt_install_term(void) {
  install(SIGINT);
  install(SIGTERM);
}
