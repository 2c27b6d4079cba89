/* Ctrl-C while decoding: the first SIGINT only raises a flag that the decode
 * loop reads before every step (mkc_decode_opts.interrupted), so run ends its
 * line and prints its stats and chat keeps its conversation. A second
 * SIGINT before the flag is cleared ends the process as SIGINT would. */
#ifndef MKC_INTERRUPT_H
#define MKC_INTERRUPT_H

#include <signal.h>

extern volatile sig_atomic_t mkc_interrupted;

/* Installs the handler (without SA_RESTART, so a blocking read returns
 * EINTR) and clears the flag. */
void mkc_interrupt_install(void);
/* The same handler for SIGTERM too: a server stopped by its service manager
 * ends its answer and closes as on Ctrl-C. */
void mkc_interrupt_install_term(void);

#endif
