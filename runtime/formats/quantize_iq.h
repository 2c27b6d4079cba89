/* Encoders of the IQ1, IQ2 and IQ3 grid types, one 256-element block each (quantize_iq.c says how);
 * mkc_quantize (quantize.h) calls them with w NULL, quantize_fit.c with each element's weight
 * (an importance matrix's) for the weighted squared error. */
#ifndef MKC_QUANTIZE_IQ_H
#define MKC_QUANTIZE_IQ_H

#include <stdint.h>

void mkc_quantize_iq2_xxs(const float *x, const float *w, uint8_t *b);
void mkc_quantize_iq2_xs(const float *x, const float *w, uint8_t *b);
void mkc_quantize_iq2_s(const float *x, const float *w, uint8_t *b);
void mkc_quantize_iq3_xxs(const float *x, const float *w, uint8_t *b);
void mkc_quantize_iq3_s(const float *x, const float *w, uint8_t *b);
void mkc_quantize_iq1_s(const float *x, const float *w, uint8_t *b);
void mkc_quantize_iq1_m(const float *x, const float *w, uint8_t *b);

#endif
