/* The byte layouts of the scaled-integer block types (dequant.c reads them). */
#include "quantize_pack.h"

#include <string.h>

#include "dequant.h"

static void put_u16(uint8_t *p, uint16_t h) {
  p[0] = (uint8_t)h;
  p[1] = (uint8_t)(h >> 8);
}

/* The codes of a block of 32 into its nibbles (element i < 16 the low nibble of
 * byte i of q, i + 16 the high one) and, with qh (5-bit codes), their fifth
 * bits (bit i of the 4 little-endian bytes at qh). */
static void put_small(const int *code, uint8_t *qh, uint8_t *q) {
  uint32_t h = 0;
  for (int i = 0; i < 16; i++) q[i] = (uint8_t)((code[i] & 0xf) | (code[i + 16] & 0xf) << 4);
  for (int i = 0; i < 32; i++) h |= (uint32_t)(code[i] >> 4 & 1) << i;
  if (qh)
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> 8 * k);
}

/* Where element e = 128 n + 32 j + l of a Q2_K or Q3_K block keeps its low 2
 * bits: bits 2j, 2j + 1 of qs byte 32 n + l (dequant.c). */
static void put_pair(uint8_t *qs, int e, int code) {
  qs[32 * (e / 128) + e % 32] |= (uint8_t)((code & 3) << 2 * (e % 128 / 32));
}

/* Q4_K and Q5_K's first 16 bytes: f16 d, f16 dmin, then 6-bit scales and
 * mins (sub-blocks 0..3 in the low 6 bits of bytes 0..3 and 4..7, 4..7 split:
 * low nibbles in bytes 8..11, top 2 bits over the first ones). */
static void put_k_scales(const mkc_qblock *p, uint8_t *b) {
  put_u16(b, p->d);
  put_u16(b + 2, p->m);
  uint8_t *s = b + 4;
  for (int j = 0; j < 4; j++) {
    s[j] = (uint8_t)(p->sc[j] | (p->sc[j + 4] >> 4) << 6);
    s[j + 4] = (uint8_t)(p->mn[j] | (p->mn[j + 4] >> 4) << 6);
    s[j + 8] = (uint8_t)((p->sc[j + 4] & 0xf) | (p->mn[j + 4] & 0xf) << 4);
  }
}

int mkc_qblock_pack(uint32_t type, const mkc_qblock *p, uint8_t *b) {
  const int *code = p->code;
  switch (type) {
  case MKC_GGML_Q4_0:   /* f16 d, nibbles; x = d * (q - 8) */
  case MKC_GGML_IQ4_NL: /* f16 d, nibbles of level indices */
    put_u16(b, p->d);
    put_small(code, NULL, b + 2);
    return 0;
  case MKC_GGML_Q5_0: /* f16 d, fifth bits, nibbles; x = d * (q - 16) */
    put_u16(b, p->d);
    put_small(code, b + 2, b + 6);
    return 0;
  case MKC_GGML_Q4_1: /* f16 d, f16 m, nibbles; x = d * q + m */
  case MKC_GGML_Q5_1: /* with fifth bits before the nibbles */
    put_u16(b, p->d);
    put_u16(b + 2, p->m);
    put_small(code, type == MKC_GGML_Q5_1 ? b + 4 : NULL, type == MKC_GGML_Q5_1 ? b + 8 : b + 4);
    return 0;
  case MKC_GGML_Q4_K:   /* 16 bytes of scales, then each 64 elements' 32 bytes: */
    put_k_scales(p, b); /* low nibbles the first 32, high the second */
    memset(b + 16, 0, 128);
    for (int i = 0; i < 256; i++)
      b[16 + (i / 64) * 32 + i % 32] |= (uint8_t)(code[i] << (i / 32 % 2) * 4);
    return 0;
  case MKC_GGML_Q5_K: { /* the scales, 32 bytes of fifth bits (element 32j + l's in */
    uint8_t *qh = b + 16, *q = b + 48; /* byte l, bit j), the nibbles as Q4_K's */
    put_k_scales(p, b);
    memset(qh, 0, 32 + 128);
    for (int i = 0; i < 256; i++) {
      q[(i / 64) * 32 + i % 32] |= (uint8_t)((code[i] & 0xf) << (i / 32 % 2) * 4);
      qh[i % 32] |= (uint8_t)((code[i] >> 4) << i / 32);
    }
    return 0;
  }
  case MKC_GGML_Q2_K: /* 4-bit scale and min per sub-block of 16 (low and high */
    for (int s = 0; s < 16; s++) b[s] = (uint8_t)(p->sc[s] | p->mn[s] << 4); /* nibble) */
    memset(b + 16, 0, 64);
    for (int e = 0; e < 256; e++) put_pair(b + 16, e, code[e]);
    put_u16(b + 80, p->d);
    put_u16(b + 82, p->m);
    return 0;
  case MKC_GGML_Q3_K: /* third bits, pairs, 6-bit scales (+ 32), f16 d */
    memset(b, 0, 110);
    for (int s = 0; s < 16; s++) {
      int u = p->sc[s] + 32; /* the low 4 bits in a nibble, the top 2 in the last 4 bytes */
      b[96 + s % 8] |= (uint8_t)((u & 0xf) << 4 * (s / 8));
      b[104 + s % 4] |= (uint8_t)((u >> 4) << 2 * (s / 4));
    }
    for (int e = 0; e < 256; e++) {
      put_pair(b + 32, e, code[e]);
      b[e % 32] |= (uint8_t)((code[e] >> 2) << (4 * (e / 128) + e % 128 / 32));
    }
    put_u16(b + 108, p->d);
    return 0;
  case MKC_GGML_Q6_K:  /* ql[128], qh[64], int8 scales[16], f16 d: element half * 128 */
    memset(b, 0, 192); /* + 32k + l keeps its low 4 bits in ql byte half * 64 + l + */
    for (int j = 0; j < 16; j++) b[192 + j] = (uint8_t)(int8_t)p->sc[j]; /* 32 (k % 2) */
    put_u16(b + 208, p->d);         /* (low nibble for k < 2), the high 2 in qh byte half * 32 */
    for (int i = 0; i < 256; i++) { /* + l, bits 2k..2k+1 */
      int half = i / 128, k = i % 128 / 32, l = i % 32;
      b[half * 64 + l + 32 * (k % 2)] |= (uint8_t)((code[i] & 0xf) << 4 * (k / 2));
      b[128 + half * 32 + l] |= (uint8_t)((code[i] >> 4) << 2 * k);
    }
    return 0;
  case MKC_GGML_IQ4_XS: { /* f16 d, the scales' top 2 bits (u16), their low nibbles, */
    unsigned high = 0;    /* then each sub-block of 32's nibbles as IQ4_NL's */
    memset(b, 0, 8);
    put_u16(b, p->d);
    for (int j = 0; j < 8; j++) {
      int u = p->sc[j] + 32;
      b[4 + j / 2] |= (uint8_t)((u & 0xf) << 4 * (j % 2));
      high |= (unsigned)(u >> 4) << 2 * j;
      put_small(code + 32 * j, NULL, b + 8 + 16 * j);
    }
    put_u16(b + 2, (uint16_t)high);
    return 0;
  }
  }
  return -1;
}
