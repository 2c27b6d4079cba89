#include "logit_bias.h"

#include <string.h>

#include "mkc_state.h"

int mkc_bias_add(int *ids, float *bias, int *n, int id, float b) {
  int at = 0;
  while (at < *n && ids[at] < id) at++;
  if (at < *n && ids[at] == id) {
    bias[at] += b;
    return 1;
  }
  if (*n == MKC_BIAS_CAP) return -1;
  memmove(ids + at + 1, ids + at, (size_t)(*n - at) * sizeof *ids);
  memmove(bias + at + 1, bias + at, (size_t)(*n - at) * sizeof *bias);
  ids[at] = id;
  bias[at] = b;
  (*n)++;
  return 0;
}
