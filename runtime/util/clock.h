/* Wall time for measurements: a monotonic clock in seconds. */
#ifndef MKC_CLOCK_H
#define MKC_CLOCK_H

double mkc_seconds(void); /* CLOCK_MONOTONIC: differences only */

#endif
