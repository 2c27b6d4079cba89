/* See swa_pattern.h. */
#include "swa_pattern.h"

#include <stdio.h>

int mkc_swa_period(const unsigned char *local, int n, int *bad) {
  int period = 0;
  for (int l = 0; l < n && !period; l++)
    if (!local[l]) period = l + 1;
  *bad = -1;
  for (int l = 0; l < n && *bad < 0; l++)
    if (!local[l] != !(period == 0 || l % period < period - 1)) *bad = l;
  return period;
}

void mkc_swa_describe(int period, char *buf, size_t cap) {
  if (period == 0)
    snprintf(buf, cap, "every layer local");
  else if (period == 1)
    snprintf(buf, cap, "every layer global");
  else
    snprintf(buf, cap, "%d local : 1 global", period - 1);
}
