/* Planted bugs for tests/test_fuzz_replay.sh: a fuzz target that replay.c
 * must catch. MKC_PLANT picks the bug: "overread" reads one byte past any
 * input but the seed ("abcdefgh"), "field" aborts when bytes 4..7 hold the
 * little-endian 0xffffffff, a value only a mutant writes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *plant = getenv("MKC_PLANT");
  volatile uint8_t sink;
  if (!plant) return 0;
  if (!strcmp(plant, "overread") && size && (size != 8 || memcmp(data, "abcdefgh", 8)))
    sink = data[size];
  if (!strcmp(plant, "field") && size >= 8 && data[4] == 0xff && data[5] == 0xff &&
      data[6] == 0xff && data[7] == 0xff)
    abort();
  (void)sink;
  return 0;
}
