/* GGUF: metadata of every type and F32/F16/BF16 tensors round-trip through
 * the writer and reader bit-exactly; Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K blocks
 * packed here from the format description dequantize to the values the
 * description gives; `mkc init` files load to exactly the seeded random
 * weights; each kind of broken file fails with its own message, names from
 * the file shown escaped; and a file cut or grown after it was opened fails
 * load_weights with one message, not SIGBUS. */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "codegen/host.h"
#include "cli/commands.h"
#include "formats/dequant.h"
#include "formats/gguf.h"
#include "formats/weights.h"
#include "util/files.h"

static uint8_t *slurp(const char *path, size_t *n) {
  *n = 0;
  return mkc_read_file(path, n);
}

static void spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(p, 1, n, f);
    fclose(f);
  }
}

static void set_le(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Offset of the first occurrence of s in the file, which the tests use to
 * find the length-prefixed key or tensor name they corrupt. */
static size_t find(const uint8_t *p, size_t n, const char *s) {
  size_t m = strlen(s);
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(p + i, s, m) == 0) return i;
  fprintf(stderr, "test bug: '%s' not in the file\n", s);
  exit(1);
}

static char *first_line(char *text) {
  text[strcspn(text, "\n")] = '\0';
  return text;
}

/* Half floats: every one of the 65536 patterns against the IEEE formula,
 * and rounding at ties, overflow and underflow. */
static void test_half(void) {
  int wrong = 0, round_trip = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    int exp = (h >> 10) & 31, mant = h & 0x3ff;
    double v = exp == 0 ? ldexp(mant, -24) : ldexp(1024 + mant, exp - 25);
    if (exp == 31) v = mant ? NAN : INFINITY;
    if (h & 0x8000) v = -v;
    float f = mkc_f16_to_float((uint16_t)h);
    if (exp == 31 && mant) {
      wrong += !isnan(f);
      round_trip += (mkc_float_to_f16(f) & 0x7e00) != 0x7e00; /* still NaN */
      continue;
    }
    wrong += (double)f != v || !signbit(f) != !signbit(v);
    round_trip += mkc_float_to_f16(f) != h;
  }
  CHECK_INT(wrong, 0, "f16 -> float: all 65536 patterns match the IEEE formula");
  CHECK_INT(round_trip, 0, "float -> f16 -> float round-trips every half");
  struct {
    double x;
    uint16_t h;
  } cases[] = {
      {1 + ldexp(1, -11), 0x3c00},     /* tie: to the even 1.0 */
      {1 + 3 * ldexp(1, -11), 0x3c02}, /* tie: to the even 1 + 2^-9 */
      {1 + ldexp(1.5, -11), 0x3c01},   /* above the tie */
      {65519, 0x7bff},
      {65520, 0x7c00}, /* rounds to inf */
      {1e10, 0x7c00},
      {-1e10, 0xfc00},
      {ldexp(1, -25), 0x0000},                 /* tie between 0 and 2^-24: to 0 */
      {ldexp(1.5, -25), 0x0001},               /* above it */
      {ldexp(3, -25), 0x0002},                 /* tie between 1 and 2 subnormal steps */
      {ldexp(1, -14) - ldexp(1, -26), 0x0400}, /* rounds up into the normals */
      {-0.0, 0x8000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK_INT(mkc_float_to_f16((float)cases[i].x), cases[i].h, "float -> f16 of %.10g", cases[i].x);
}

/* One value of every metadata type and arrays of every element type. */
static const char *const STRS[] = {"<s>", "", "two words", "h\xc3\xa9llo"};

static int write_metadata_file(const char *path) {
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  uint8_t u8 = 200, b = 1;
  int8_t i8 = -100;
  uint16_t u16 = 60000;
  int16_t i16 = -30000;
  int32_t i32 = -2000000000;
  uint64_t u64 = UINT64_MAX;
  int64_t i64 = INT64_MIN;
  double f64 = 1e300;
  const uint8_t a_u8[] = {1, 2, 255}, a_bool[] = {1, 0};
  const int8_t a_i8[] = {-128, 127};
  const uint16_t a_u16[] = {65535};
  const int16_t a_i16[] = {-32768, 5};
  const uint32_t a_u32[] = {7, 4000000000u};
  const int32_t a_i32[] = {-1, 0, 7};
  const float a_f32[] = {0.5f, -2.0f};
  const uint64_t a_u64[] = {UINT64_MAX, 3};
  const int64_t a_i64[] = {INT64_MIN, -1};
  const double a_f64[] = {-1e-300, 3.25};
  int bad = mkc_gguf_set_str(w, "general.architecture", "llama");
  bad |= mkc_gguf_set_u32(w, "general.alignment", 64);
  bad |= mkc_gguf_set(w, "t.u8", MKC_GGUF_UINT8, &u8);
  bad |= mkc_gguf_set(w, "t.i8", MKC_GGUF_INT8, &i8);
  bad |= mkc_gguf_set(w, "t.u16", MKC_GGUF_UINT16, &u16);
  bad |= mkc_gguf_set(w, "t.i16", MKC_GGUF_INT16, &i16);
  bad |= mkc_gguf_set_u32(w, "t.u32", 4000000000u);
  bad |= mkc_gguf_set(w, "t.i32", MKC_GGUF_INT32, &i32);
  bad |= mkc_gguf_set_f32(w, "t.f32", 0.15625f);
  bad |= mkc_gguf_set(w, "t.bool", MKC_GGUF_BOOL, &b);
  bad |= mkc_gguf_set_str(w, "t.string", "h\xc3\xa9llo w\xc3\xb6rld");
  bad |= mkc_gguf_set(w, "t.u64", MKC_GGUF_UINT64, &u64);
  bad |= mkc_gguf_set(w, "t.i64", MKC_GGUF_INT64, &i64);
  bad |= mkc_gguf_set(w, "t.f64", MKC_GGUF_FLOAT64, &f64);
  bad |= mkc_gguf_set_arr(w, "a.u8", MKC_GGUF_UINT8, a_u8, 3);
  bad |= mkc_gguf_set_arr(w, "a.i8", MKC_GGUF_INT8, a_i8, 2);
  bad |= mkc_gguf_set_arr(w, "a.u16", MKC_GGUF_UINT16, a_u16, 1);
  bad |= mkc_gguf_set_arr(w, "a.i16", MKC_GGUF_INT16, a_i16, 2);
  bad |= mkc_gguf_set_arr(w, "a.u32", MKC_GGUF_UINT32, a_u32, 2);
  bad |= mkc_gguf_set_arr(w, "a.i32", MKC_GGUF_INT32, a_i32, 3);
  bad |= mkc_gguf_set_arr(w, "a.f32", MKC_GGUF_FLOAT32, a_f32, 2);
  bad |= mkc_gguf_set_arr(w, "a.bool", MKC_GGUF_BOOL, a_bool, 2);
  bad |= mkc_gguf_set_arr(w, "a.str", MKC_GGUF_STRING, STRS, 4);
  bad |= mkc_gguf_set_arr(w, "a.u64", MKC_GGUF_UINT64, a_u64, 2);
  bad |= mkc_gguf_set_arr(w, "a.i64", MKC_GGUF_INT64, a_i64, 2);
  bad |= mkc_gguf_set_arr(w, "a.f64", MKC_GGUF_FLOAT64, a_f64, 2);
  bad |= mkc_gguf_set_arr(w, "a.empty", MKC_GGUF_UINT32, NULL, 0);
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  return bad;
}

static void test_metadata(void) {
  const char *path = tmp_path("meta.gguf");
  CHECK(write_metadata_file(path) == 0, "metadata: writer accepts every value type");
  mkc_gguf *f = mkc_gguf_open(path);
  if (!CHECK(f != NULL, "metadata: the file opens")) return;
  CHECK_INT(f->version, 3, "metadata: version 3");
  CHECK_INT(f->n_kv, 27, "metadata: 27 entries");
  CHECK_INT(f->alignment, 64, "metadata: general.alignment 64 is used");
  CHECK_INT(f->data_offset % 64, 0, "metadata: data section starts aligned");
  CHECK(strcmp(f->kv[0].key, "general.architecture") == 0 && strcmp(f->kv[26].key, "a.empty") == 0,
        "metadata: entries in file order");
  int64_t i = 0;
  uint32_t u = 0;
  double d = 0;
  int b = 0;
  const char *s = NULL;
  struct {
    const char *key;
    int64_t v;
  } ints[] = {{"t.u8", 200},       {"t.i8", -100},          {"t.u16", 60000},
              {"t.i16", -30000},   {"t.u32", 4000000000LL}, {"t.i32", -2000000000},
              {"t.i64", INT64_MIN}};
  for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
    CHECK(mkc_gguf_get_int(f, ints[k].key, &i) == 1 && i == ints[k].v, "metadata: %s = %lld",
          ints[k].key, (long long)ints[k].v);
  CHECK(mkc_gguf_get_u32(f, "t.u32", &u) == 1 && u == 4000000000u, "metadata: u32 getter");
  CHECK(mkc_gguf_get_u32(f, "t.u16", &u) == 1 && u == 60000, "metadata: u32 getter takes a u16");
  CHECK(mkc_gguf_get_float(f, "t.f32", &d) == 1 && d == 0.15625, "metadata: f32");
  CHECK(mkc_gguf_get_float(f, "t.f64", &d) == 1 && d == 1e300, "metadata: f64");
  CHECK(mkc_gguf_get_bool(f, "t.bool", &b) == 1 && b == 1, "metadata: bool");
  CHECK(mkc_gguf_get_str(f, "t.string", &s) == 1 && strcmp(s, "h\xc3\xa9llo w\xc3\xb6rld") == 0,
        "metadata: string (UTF-8)");
  CHECK((uint64_t)mkc_gguf_arr_int(mkc_gguf_find(f, "t.u64"), 0) == UINT64_MAX,
        "metadata: u64 max");
  CHECK(mkc_gguf_get_int(f, "nope", &i) == 0 && mkc_gguf_find(f, "nope") == NULL,
        "metadata: an absent key is 0 / NULL");

  const mkc_gguf_kv *a = NULL;
  CHECK(mkc_gguf_get_arr(f, "a.str", MKC_GGUF_STRING, &a) == 1 && a->n == 4, "array of 4 strings");
  int same = a != NULL;
  for (uint64_t k = 0; a && k < 4; k++) {
    mkc_gguf_str e = mkc_gguf_arr_str(a, k);
    same &= e.len == strlen(STRS[k]) && memcmp(e.s, STRS[k], e.len) == 0;
  }
  CHECK(same, "array of strings: every element, the empty one included");
  struct {
    const char *key;
    uint64_t n;
    int64_t first, last;
  } arrs[] = {{"a.u8", 3, 1, 255},     {"a.i8", 2, -128, 127},      {"a.u16", 1, 65535, 65535},
              {"a.i16", 2, -32768, 5}, {"a.u32", 2, 7, 4000000000}, {"a.i32", 3, -1, 7},
              {"a.bool", 2, 1, 0},     {"a.u64", 2, -1, 3},         {"a.i64", 2, INT64_MIN, -1}};
  for (size_t k = 0; k < sizeof arrs / sizeof *arrs; k++) {
    a = NULL;
    CHECK(mkc_gguf_get_arr(f, arrs[k].key, -1, &a) == 1 && a->n == arrs[k].n &&
              mkc_gguf_arr_int(a, 0) == arrs[k].first &&
              mkc_gguf_arr_int(a, a->n - 1) == arrs[k].last,
          "array %s: %llu elements, first and last", arrs[k].key, (unsigned long long)arrs[k].n);
  }
  CHECK(mkc_gguf_get_arr(f, "a.f32", MKC_GGUF_FLOAT32, &a) == 1 &&
            mkc_gguf_arr_float(a, 0) == 0.5 && mkc_gguf_arr_float(a, 1) == -2.0,
        "array of f32");
  CHECK(mkc_gguf_get_arr(f, "a.f64", MKC_GGUF_FLOAT64, &a) == 1 &&
            mkc_gguf_arr_float(a, 0) == -1e-300 && mkc_gguf_arr_float(a, 1) == 3.25,
        "array of f64");
  CHECK(mkc_gguf_get_arr(f, "a.empty", MKC_GGUF_UINT32, &a) == 1 && a->n == 0, "empty array");

  char buf[64];
  mkc_gguf_format_value(mkc_gguf_find(f, "a.str"), buf, sizeof buf);
  CHECK(strcmp(buf, "[4 x string]") == 0, "format: array (%s)", buf);
  mkc_gguf_format_value(mkc_gguf_find(f, "t.bool"), buf, sizeof buf);
  CHECK(strcmp(buf, "true") == 0, "format: bool (%s)", buf);
  mkc_gguf_format_value(mkc_gguf_find(f, "t.u64"), buf, sizeof buf);
  CHECK(strcmp(buf, "18446744073709551615") == 0, "format: u64 (%s)", buf);

  /* Wrong types and ranges: -1 and Expected/Actual. */
  check_stderr_begin();
  int rc = mkc_gguf_get_str(f, "t.u32", &s);
  char *msg = check_stderr_end();
  CHECK(rc == -1 && strstr(msg, "metadata 't.u32': Expected a string, Actual u32 4000000000"),
        "get_str on a u32");
  free(msg);
  check_stderr_begin();
  rc = mkc_gguf_get_u32(f, "t.i8", &u);
  msg = check_stderr_end();
  CHECK(rc == -1 &&
            strstr(msg, "metadata 't.i8': Expected an integer in 0..4294967295, Actual i8 -100"),
        "get_u32 on a negative i8");
  free(msg);
  check_stderr_begin();
  rc = mkc_gguf_get_int(f, "t.u64", &i);
  msg = check_stderr_end();
  CHECK(rc == -1 && strstr(msg, "Expected an integer, Actual u64 18446744073709551615"),
        "get_int on a u64 above INT64_MAX");
  free(msg);
  check_stderr_begin();
  rc = mkc_gguf_get_arr(f, "a.u8", MKC_GGUF_STRING, &a);
  msg = check_stderr_end();
  CHECK(rc == -1 &&
            strstr(msg, "metadata 'a.u8': Expected an array of string, Actual an array of u8"),
        "get_arr with the wrong element type");
  free(msg);
  mkc_gguf_close(f);
}

/* F32, F16 and BF16 are stored bit-exactly, aligned, with their dims. */
static void test_float_tensors(void) {
  const float f32[6] = {1.5f, -0.0f, INFINITY, 1e-40f /* subnormal */, NAN, -3.1415926f};
  struct {
    float x;
    uint16_t h;
  } halves[] = {{1.0f, 0x3c00},     {-2.0f, 0xc000}, {0.5f, 0x3800},     {65504.0f, 0x7bff},
                {0x1p-24f, 0x0001}, {-0.0f, 0x8000}, {INFINITY, 0x7c00}, {0.333251953125f, 0x3555}};
  float f16_src[8];
  for (int i = 0; i < 8; i++) f16_src[i] = halves[i].x;
  const uint16_t bf16[4] = {0x3f80, 0xffc1 /* NaN with payload */, 0x0001, 0x8000};
  const float big[2 * 3 * 4 * 5] = {0};
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int64_t ne_f32[2] = {3, 2}, ne_f16[1] = {8}, ne_bf16[2] = {2, 2}, ne_4d[4] = {2, 3, 4, 5};
  int bad = mkc_gguf_add_tensor(w, "f32", MKC_GGML_F32, 2, ne_f32, f32);
  bad |= mkc_gguf_add_tensor(w, "f16", MKC_GGML_F16, 1, ne_f16, f16_src);
  bad |= mkc_gguf_add_raw(w, "bf16", MKC_GGML_BF16, 2, ne_bf16, bf16);
  bad |= mkc_gguf_add_tensor(w, "four.dims", MKC_GGML_F32, 4, ne_4d, big);
  bad |= mkc_gguf_add_tensor(w, "bf16.from.f32", MKC_GGML_BF16, 2, ne_f32, f32);
  const char *path = tmp_path("float.gguf");
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  mkc_gguf *f = bad ? NULL : mkc_gguf_open(path);
  if (!CHECK(f != NULL, "float tensors: written and opened")) return;
  CHECK_INT(f->n_tensors, 5, "float tensors: 5 tensors");
  const mkc_gguf_tensor *t = mkc_gguf_find_tensor(f, "f32");
  CHECK(t && t->type == MKC_GGML_F32 && t->n_dims == 2 && t->ne[0] == 3 && t->ne[1] == 2 &&
            t->ne[2] == 1 && t->n_elems == 6 && t->n_bytes == 24,
        "f32: type, dims, sizes");
  CHECK(t && memcmp(t->data, f32, sizeof f32) == 0, "f32: bit-exact, NaN, inf, -0 and subnormal");
  int aligned = 1;
  for (uint64_t i = 0; i < f->n_tensors; i++)
    aligned &= f->tensors[i].offset % 32 == 0 &&
               (size_t)(f->tensors[i].data - f->base) == f->data_offset + f->tensors[i].offset;
  CHECK(aligned, "every tensor's data is at data_offset + its offset, a multiple of 32");
  t = mkc_gguf_find_tensor(f, "f16");
  int same = t != NULL;
  for (int i = 0; t && i < 8; i++)
    same &= (t->data[2 * i] | t->data[2 * i + 1] << 8) == halves[i].h;
  CHECK(same, "f16: stored as the exact half patterns");
  uint16_t out[8];
  same = t && mkc_dequant_bf16(t->type, t->data, 8, out) == 0;
  for (int i = 0; t && i < 8; i++) same &= out[i] == mkc_float_to_bf16(halves[i].x);
  CHECK(same, "f16 -> bf16");
  t = mkc_gguf_find_tensor(f, "bf16");
  CHECK(t && memcmp(t->data, bf16, sizeof bf16) == 0, "bf16: bit-exact, NaN payload kept");
  same =
      t && mkc_dequant_bf16(t->type, t->data, 4, out) == 0 && memcmp(out, bf16, sizeof bf16) == 0;
  CHECK(same, "bf16 -> bf16 is the identity");
  t = mkc_gguf_find_tensor(f, "bf16.from.f32");
  same = t && mkc_dequant_bf16(MKC_GGML_F32, f32, 6, out) == 0;
  for (int i = 0; t && i < 6; i++)
    same &=
        (t->data[2 * i] | t->data[2 * i + 1] << 8) == out[i] && out[i] == mkc_float_to_bf16(f32[i]);
  CHECK(same, "float -> BF16 tensor and F32 -> bf16 both round to nearest even");
  t = mkc_gguf_find_tensor(f, "four.dims");
  CHECK(t && t->n_dims == 4 && t->ne[0] == 2 && t->ne[3] == 5 && t->n_elems == 120,
        "4-D tensor dims");
  mkc_gguf_close(f);
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* Q4_K, packed from the description: 8 sub-blocks of 32, 6-bit scales and
 * mins (j < 4: low 6 bits of bytes j and j+4; j >= 4: low nibbles in byte
 * j+4, high 2 bits in the top of bytes j-4 and j), and 64-element chunks of
 * 32 bytes, the first sub-block in low nibbles. */
static void pack_q4_k(uint8_t *b, uint16_t d, uint16_t dmin, const int *sc, const int *mn,
                      const int *q) {
  memset(b, 0, 144);
  set_le(b, d, 2);
  set_le(b + 2, dmin, 2);
  uint8_t *s = b + 4, *qs = b + 16;
  for (int j = 0; j < 4; j++) {
    s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
    s[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
    s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
  }
  for (int i = 0; i < 256; i++) {
    int sub = i / 32;
    qs[(sub / 2) * 32 + i % 32] |= (uint8_t)(q[i] << (sub % 2 ? 4 : 0));
  }
}

/* Q6_K, packed from the description's loop: per half of 128, for l < 32,
 * y[l], y[l+32], y[l+64], y[l+96] take ql[l] low, ql[l+32] low, ql[l] high,
 * ql[l+32] high, and qh[l] bits 0-1, 2-3, 4-5, 6-7; 16 scales of 16. */
static void pack_q6_k(uint8_t *b, uint16_t d, const int8_t *sc, const int *q) {
  memset(b, 0, 210);
  for (int half = 0; half < 2; half++) {
    uint8_t *ql = b + 64 * half, *qh = b + 128 + 32 * half;
    const int *y = q + 128 * half;
    for (int l = 0; l < 32; l++) {
      ql[l] = (uint8_t)((y[l] & 15) | (y[l + 64] & 15) << 4);
      ql[l + 32] = (uint8_t)((y[l + 32] & 15) | (y[l + 96] & 15) << 4);
      qh[l] = (uint8_t)(y[l] >> 4 | (y[l + 32] >> 4) << 2 | (y[l + 64] >> 4) << 4 |
                        (y[l + 96] >> 4) << 6);
    }
  }
  memcpy(b + 192, sc, 16);
  set_le(b + 208, d, 2);
}

#define N_BLOCK_ROWS 2

/* Writes the blocks as a [2][n] tensor, reads it back through a file, and
 * compares the bf16 values with the expected floats. */
static void check_dequant(const char *label, uint32_t type, int cols, const uint8_t *blocks,
                          const double *expected) {
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int64_t ne[2] = {cols, N_BLOCK_ROWS};
  const char *path = tmp_path("quant.gguf");
  int bad = mkc_gguf_add_raw(w, label, type, 2, ne, blocks) || mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  mkc_gguf *f = bad ? NULL : mkc_gguf_open(path);
  const mkc_gguf_tensor *t = f ? mkc_gguf_find_tensor(f, label) : NULL;
  size_t n = (size_t)cols * N_BLOCK_ROWS;
  uint16_t *out = calloc(n, sizeof *out);
  int wrong = -1, first = -1;
  if (t && mkc_dequant_bf16(t->type, t->data, n, out) == 0) {
    wrong = 0;
    for (size_t i = 0; i < n; i++) {
      /* values, not bits: a negative scale times q = 0 gives -0 */
      if (mkc_bf16_to_float(out[i]) == mkc_bf16_to_float(mkc_float_to_bf16((float)expected[i])))
        continue;
      if (first < 0) first = (int)i;
      wrong++;
    }
  }
  CHECK(wrong == 0, "%s: %zu values from hand-packed blocks (%d wrong, first at %d: %g, want %g)",
        label, n, wrong, first, first >= 0 ? mkc_bf16_to_float(out[first]) : 0.0,
        first >= 0 ? expected[first] : 0.0);
  free(out);
  mkc_gguf_close(f);
}

static void test_quantized(void) {
  uint32_t seed = 12345;
  double want[2 * 256];
  /* Q8_0: d = 0.5, q = every int8 value in turn. */
  uint8_t q8[4 * 34];
  for (int blk = 0; blk < 4; blk++) {
    set_le(q8 + 34 * blk, 0x3800, 2); /* 0.5 */
    for (int i = 0; i < 32; i++) {
      int q = (blk * 32 + i) * 2 - 128;
      q8[34 * blk + 2 + i] = (uint8_t)(int8_t)q;
      want[blk * 32 + i] = 0.5 * q;
    }
  }
  check_dequant("q8_0", MKC_GGML_Q8_0, 64, q8, want);

  /* Q4_0 and Q4_1: d = 0.25 (and m = -1.5); element j < 16 is the low
   * nibble of byte j, element j + 16 the high nibble. */
  uint8_t q40[4 * 18], q41[4 * 20];
  for (int blk = 0; blk < 4; blk++) {
    set_le(q40 + 18 * blk, 0x3400, 2); /* 0.25 */
    set_le(q41 + 20 * blk, 0x3400, 2);
    set_le(q41 + 20 * blk + 2, 0xbe00, 2); /* -1.5 */
    for (int j = 0; j < 16; j++) {
      int lo = (j + blk) % 16, hi = 15 - j;
      q40[18 * blk + 2 + j] = (uint8_t)(lo | hi << 4);
      q41[20 * blk + 4 + j] = (uint8_t)(lo | hi << 4);
    }
  }
  for (int blk = 0; blk < 4; blk++)
    for (int j = 0; j < 16; j++) {
      want[32 * blk + j] = 0.25 * ((j + blk) % 16 - 8);
      want[32 * blk + j + 16] = 0.25 * (15 - j - 8);
    }
  check_dequant("q4_0", MKC_GGML_Q4_0, 64, q40, want);
  for (int blk = 0; blk < 4; blk++)
    for (int j = 0; j < 16; j++) {
      want[32 * blk + j] = 0.25 * ((j + blk) % 16) - 1.5;
      want[32 * blk + j + 16] = 0.25 * (15 - j) - 1.5;
    }
  check_dequant("q4_1", MKC_GGML_Q4_1, 64, q41, want);

  /* Q4_K: random 6-bit scales and mins, random nibbles; d = 2^-6, dmin =
   * 2^-5, so every value is exact in float. */
  uint8_t q4k[2 * 144];
  for (int blk = 0; blk < 2; blk++) {
    int sc[8], mn[8], q[256];
    for (int j = 0; j < 8; j++) sc[j] = (int)(lcg(&seed) >> 26), mn[j] = (int)(lcg(&seed) >> 26);
    sc[5] = 63, mn[6] = 63; /* the high bits of the split scales set */
    for (int i = 0; i < 256; i++) q[i] = (int)(lcg(&seed) >> 28);
    pack_q4_k(q4k + 144 * blk, 0x2400, 0x2800, sc, mn, q);
    for (int i = 0; i < 256; i++)
      want[256 * blk + i] = ldexp(sc[i / 32] * q[i], -6) - ldexp(mn[i / 32], -5);
  }
  check_dequant("q4_k", MKC_GGML_Q4_K, 256, q4k, want);

  /* Q6_K: random 6-bit quants and int8 scales, d = 2^-7. */
  uint8_t q6k[2 * 210];
  for (int blk = 0; blk < 2; blk++) {
    int8_t sc[16];
    int q[256];
    for (int j = 0; j < 16; j++) sc[j] = (int8_t)(lcg(&seed) >> 24);
    sc[3] = -128;
    for (int i = 0; i < 256; i++) q[i] = (int)(lcg(&seed) >> 26);
    q[0] = 63, q[255] = 0;
    pack_q6_k(q6k + 210 * blk, 0x2000, sc, q);
    for (int i = 0; i < 256; i++) want[256 * blk + i] = ldexp(sc[i / 16] * (q[i] - 32), -7);
  }
  check_dequant("q6_k", MKC_GGML_Q6_K, 256, q6k, want);

  /* Hand-computed spot values, independent of the packers above. */
  uint8_t b[210] = {0};
  uint16_t out[256];
  b[0] = 0x21, b[32] = 0x43, b[128] = 0xe4; /* ql[0], ql[32], qh[0] */
  b[192] = 1, b[194] = 2, b[196] = 3, b[198] = 4;
  set_le(b + 208, 0x3c00, 2); /* d = 1 */
  mkc_dequant_bf16(MKC_GGML_Q6_K, b, 256, out);
  CHECK(mkc_bf16_to_float(out[0]) == -31 && mkc_bf16_to_float(out[32]) == -26 &&
            mkc_bf16_to_float(out[64]) == 6 && mkc_bf16_to_float(out[96]) == 80,
        "q6_k: y[0] = -31, y[32] = -26, y[64] = 6, y[96] = 80 (%g %g %g %g)",
        mkc_bf16_to_float(out[0]), mkc_bf16_to_float(out[32]), mkc_bf16_to_float(out[64]),
        mkc_bf16_to_float(out[96]));
  memset(b, 0, 144);
  set_le(b, 0x3c00, 2);     /* d = 1 */
  set_le(b + 2, 0x3c00, 2); /* dmin = 1 */
  b[4 + 1] = 0xc5;          /* sub-block 1: scale 5; sub-block 5: scale high bits 3 */
  b[4 + 5] = 0x07;          /* sub-block 1: min 7 */
  b[4 + 9] = 0x42;          /* sub-block 5: scale low nibble 2, min 4 -> scale 50, min 4 */
  b[16 + 64] = 0x20;        /* y[160] = 2: chunk 2, high nibble */
  mkc_dequant_bf16(MKC_GGML_Q4_K, b, 256, out);
  CHECK(mkc_bf16_to_float(out[0]) == 0 && mkc_bf16_to_float(out[32]) == 5 * 0 - 7 &&
            mkc_bf16_to_float(out[160]) == 50 * 2 - 4,
        "q4_k: y[0] = 0, y[32] = -7, y[160] = 96 (%g %g %g)", mkc_bf16_to_float(out[0]),
        mkc_bf16_to_float(out[32]), mkc_bf16_to_float(out[160]));
  /* Q5_K: the same header, fifth bits at 16, nibbles at 48 */
  memset(b + 16, 0, 176 - 16);
  b[16 + 0] = 0x02;  /* qh[0] bit 1: y[32] gets 16 */
  b[16 + 3] = 0x20;  /* qh[3] bit 5: y[163] gets 16 */
  b[48 + 64] = 0x20; /* y[160] = 2: chunk 2, high nibble */
  b[48 + 67] = 0x10; /* y[163] = 1 + 16 */
  float y[256];
  mkc_dequant_f32(MKC_GGML_Q5_K, b, 256, y);
  CHECK(y[0] == 0 && y[32] == 5 * 16 - 7 && y[160] == 50 * 2 - 4 && y[163] == 50 * 17 - 4,
        "q5_k: y[0] = 0, y[32] = 73, y[160] = 96, y[163] = 846 (%g %g %g %g)", (double)y[0],
        (double)y[32], (double)y[160], (double)y[163]);
  CHECK(mkc_dequant_bf16(MKC_GGML_Q8_K, b, 256, out) == -1, "Q8_K is not readable: -1");
}

/* The writer's quantizers: exact for values on their grid, and within half
 * a step of anything else. */
static void test_quantizers(void) {
  enum { N = 128 };
  float grid8[N], grid4[N], noise[N];
  uint32_t seed = 99;
  for (int i = 0; i < N; i++) {
    grid8[i] = 0.125f * (float)((int)(lcg(&seed) % 255) - 127);
    grid4[i] = 0.5f * (float)((int)(lcg(&seed) % 16) - 8);
    noise[i] = (float)((int)(lcg(&seed) % 20001) - 10000) / 3000.0f;
  }
  for (int blk = 0; blk < N / 32; blk++) {
    grid8[32 * blk + 5] = blk % 2 ? 127 * 0.125f : -127 * 0.125f; /* d = 0.125 */
    grid4[32 * blk + 7] = -8 * 0.5f;                              /* d = 0.5 */
  }
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int64_t ne[2] = {64, 2};
  int bad = mkc_gguf_add_tensor(w, "grid8", MKC_GGML_Q8_0, 2, ne, grid8);
  bad |= mkc_gguf_add_tensor(w, "grid4", MKC_GGML_Q4_0, 2, ne, grid4);
  bad |= mkc_gguf_add_tensor(w, "noise8", MKC_GGML_Q8_0, 2, ne, noise);
  bad |= mkc_gguf_add_tensor(w, "noise4", MKC_GGML_Q4_0, 2, ne, noise);
  const char *path = tmp_path("quantizers.gguf");
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  mkc_gguf *f = bad ? NULL : mkc_gguf_open(path);
  if (!CHECK(f != NULL, "quantizers: Q8_0 and Q4_0 tensors written and opened")) return;
  const char *names[] = {"grid8", "grid4", "noise8", "noise4"};
  const float *src[] = {grid8, grid4, noise, noise};
  for (int k = 0; k < 4; k++) {
    const mkc_gguf_tensor *t = mkc_gguf_find_tensor(f, names[k]);
    uint16_t out[N];
    int wrong = t ? 0 : N;
    if (t) mkc_dequant_bf16(t->type, t->data, N, out);
    for (int blk = 0; t && blk < N / 32; blk++) {
      float amax = 0;
      for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(src[k][32 * blk + i]));
      double step = k % 2 ? amax / 8.0 : amax / 127.0;
      for (int i = 0; i < 32; i++) {
        double x = src[k][32 * blk + i], y = mkc_bf16_to_float(out[32 * blk + i]);
        /* half a step (Q4_0: a whole one, as +8 d clamps to 7 d), the f16
         * rounding of d times |q|, the bf16 rounding */
        double tol =
            k < 2 ? 0 : step * (k == 3 ? 1 : 0.5) + step * 128 * 0x1p-11 + fabs(y) * 0x1p-8;
        wrong += fabs(x - y) > tol;
      }
    }
    CHECK_INT(wrong, 0, "%s: %s", names[k],
              k < 2    ? "exact on the grid"
              : k == 2 ? "within half a step"
                       : "within a step");
  }
  mkc_gguf_close(f);
}

/* mkc init writes exactly the weights mkc_weights_random makes, and
 * mkc_gguf_load_weights reads them back to the bit. */
static void test_init_and_load(void) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  const char *path = tmp_path("tiny.gguf");
  char *argv[] = {"mkc", "init", graph, "--preset", "tiny", "--seed", "7", "-o", (char *)path};
  CHECK_INT(mkc_cmd_init(9, argv), 0, "mkc init --preset tiny --seed 7");
  mkc_gen_opts o = {.graph_path = graph, .preset = "tiny", .draft_max = 0, .max_ctx = 0};
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights want = {0}, other = {0}, got = {0};
  if (!CHECK(mkc_codegen(&o, &g, &src) == 0, "codegen tiny")) return;
  mkc_weights_random(&want, &g, 7);
  mkc_weights_random(&other, &g, 8);
  mkc_gguf *f = mkc_gguf_open(path);
  if (CHECK(f != NULL, "the init file opens")) {
    const char *s = NULL;
    uint32_t u = 0;
    double d = 0;
    CHECK(mkc_gguf_get_str(f, "general.architecture", &s) == 1 && strcmp(s, "llama") == 0,
          "general.architecture = llama");
    CHECK(mkc_gguf_get_str(f, "general.name", &s) == 1 && strcmp(s, "llama-tiny") == 0,
          "general.name = llama-tiny");
    struct {
      const char *key;
      uint32_t v;
    } sizes[] = {{"llama.block_count", 2},
                 {"llama.embedding_length", 64},
                 {"llama.feed_forward_length", 192},
                 {"llama.attention.head_count", 4},
                 {"llama.attention.head_count_kv", 2},
                 {"llama.context_length", 512},
                 {"llama.vocab_size", 256},
                 {"llama.rope.dimension_count", 16}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
      CHECK(mkc_gguf_get_u32(f, sizes[i].key, &u) == 1 && u == sizes[i].v, "%s = %u", sizes[i].key,
            sizes[i].v);
    CHECK(mkc_gguf_get_float(f, "llama.rope.freq_base", &d) == 1 && d == 10000,
          "llama.rope.freq_base = 10000");
    CHECK(mkc_gguf_get_float(f, "llama.attention.layer_norm_rms_epsilon", &d) == 1 &&
              d == (double)1e-5f,
          "llama.attention.layer_norm_rms_epsilon = 1e-5");
    int bf16 = 1;
    for (uint64_t i = 0; i < f->n_tensors; i++) bf16 &= f->tensors[i].type == MKC_GGML_BF16;
    CHECK(f->n_tensors == (uint64_t)g.n_weights && bf16, "%d tensors, all BF16", g.n_weights);
    const mkc_gguf_tensor *norm = mkc_gguf_find_tensor(f, "blk.0.attn_norm.weight");
    CHECK(norm && norm->n_dims == 1 && norm->ne[0] == 64, "norm vectors are 1-D");
    CHECK(mkc_gguf_load_weights(f, &g, &got) == 0, "load_weights");
    int same = got.n == want.n, differs = 0;
    for (int i = 0; same && i < got.n; i++) {
      const mkc_tensor *a = &got.t[i], *b = &want.t[i];
      size_t bytes = (size_t)a->rows * (size_t)a->cols * sizeof *a->data;
      same &= strcmp(a->name, b->name) == 0 && a->rows == b->rows && a->cols == b->cols &&
              memcmp(a->data, b->data, bytes) == 0;
      differs |= memcmp(a->data, other.t[i].data, bytes) != 0;
    }
    CHECK(same, "loaded weights equal mkc_weights_random(seed 7) bit for bit");
    CHECK(differs, "and differ from seed 8's (the comparison can fail)");
  }
  mkc_gguf_close(f);
  mkc_weights_free(&got);
  mkc_weights_free(&other);

  /* The file cut or grown after it was opened: load_weights fails with one
   * message, not SIGBUS. Cut where the tensor data starts, the first read
   * faults; cut in half, a check after a read sees it; grown, the check. */
  size_t size = 0;
  uint8_t *bytes = slurp(path, &size);
  const char *cut = tmp_path("cut.gguf");
  for (int c = 0; c < 3 && bytes; c++) {
    spit(cut, bytes, size);
    f = mkc_gguf_open(cut);
    if (!f) continue;
    size_t now = c == 0 ? (size_t)f->data_offset : c == 1 ? size / 2 : size + 1;
    check_stderr_begin();
    int rc = truncate(cut, (off_t)now) == 0 ? mkc_gguf_load_weights(f, &g, &got) : -2;
    char *msg = check_stderr_end(), expect[512];
    snprintf(expect, sizeof expect,
             "mkc: error: %s: truncated or changed while reading (%zu bytes when opened, %zu "
             "now)\n",
             cut, size, now);
    CHECK(rc == -1 && strcmp(msg, expect) == 0 && got.n == 0,
          "load_weights on a file %s after open: %s", c == 2 ? "grown" : "cut", expect);
    free(msg);
    mkc_gguf_close(f);
  }
  free(bytes);

  /* A file for the same graph with one weight quantized, one missing, one
   * transposed, or one of a type mkc does not read. */
  enum { QUANT, MISSING, TRANSPOSED, UNREADABLE, VECTOR_2D, N_CASES };
  const char *victim[N_CASES] = {"blk.0.ffn_up.weight", "blk.1.ffn_down.weight",
                                 "blk.0.attn_k.weight", "blk.0.attn_q.weight",
                                 "output_norm.weight"};
  static uint8_t zeros[64 * 64 / 32 * 36];
  for (int c = 0; c < N_CASES; c++) {
    mkc_gguf_writer *w = mkc_gguf_writer_new();
    int bad = 0;
    for (int i = 0; i < g.n_weights; i++) {
      const mkc_weight_info *info = &g.weights[i];
      const mkc_tensor *t = &want.t[i];
      int64_t ne[2] = {info->cols, info->rows};
      int hit = strcmp(info->name, victim[c]) == 0;
      uint32_t n_dims = info->rows == 1 ? 1 : 2;
      if (hit && c == MISSING) continue;
      if (hit && c == TRANSPOSED) ne[0] = info->rows, ne[1] = info->cols;
      if (hit && c == VECTOR_2D) n_dims = 2;
      if (hit && c == UNREADABLE) {
        bad |= mkc_gguf_add_raw(w, info->name, 9 /* Q8_1: no file holds it */, 2, ne, zeros);
      } else if (hit && c == QUANT) {
        size_t n = (size_t)info->rows * info->cols;
        float *x = malloc(n * sizeof *x);
        for (size_t k = 0; k < n; k++) x[k] = mkc_bf16_to_float(t->data[k]);
        bad |= mkc_gguf_add_tensor(w, info->name, MKC_GGML_Q8_0, 2, ne, x);
        free(x);
      } else {
        bad |= mkc_gguf_add_raw(w, info->name, MKC_GGML_BF16, n_dims, ne, t->data);
      }
    }
    const char *p = tmp_path("case.gguf");
    bad |= mkc_gguf_write(w, p);
    mkc_gguf_writer_free(w);
    f = bad ? NULL : mkc_gguf_open(p);
    check_stderr_begin();
    int rc = f ? mkc_gguf_load_weights(f, &g, &got) : -2;
    char *msg = first_line(check_stderr_end());
    char expect[512] = "";
    if (c == MISSING)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'blk.1.ffn_down.weight' is missing (the graph needs it as "
               "[64, 192])",
               p);
    if (c == TRANSPOSED)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'blk.0.attn_k.weight': Expected [32, 64], Actual [64, 32]",
               p);
    if (c == UNREADABLE)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'blk.0.attn_q.weight': type Q8_1 is not supported (mkc "
               "reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, "
               "Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, MXFP4, "
               "NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0)",
               p);
    if (c == QUANT || c == VECTOR_2D) {
      int close = rc == 0 && got.n == want.n;
      for (int i = 0; close && i < got.n; i++) {
        size_t n = (size_t)got.t[i].rows * got.t[i].cols;
        for (size_t k = 0; k < n; k++) {
          float a = mkc_bf16_to_float(got.t[i].data[k]), b = mkc_bf16_to_float(want.t[i].data[k]);
          close &= fabsf(a - b) <= (c == QUANT ? 0.02f * sqrtf(3.0f / 64) : 0.0f);
        }
      }
      CHECK(close, "load_weights: %s",
            c == QUANT ? "a Q8_0 tensor is dequantized (within 2%)"
                       : "a norm stored as ne {64, 1} loads as rows 1");
    } else {
      CHECK(rc == -1 && strcmp(msg, expect) == 0 && got.n == 0 && got.t == NULL,
            "load_weights fails: %s", expect);
    }
    free(msg);
    mkc_weights_free(&got);
    mkc_gguf_close(f);
  }
  mkc_weights_free(&want);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
}

/* The file the corruptions start from: a string, an alignment, two u32s, an
 * array of strings, an F32 matrix and a Q8_0 vector. */
static uint8_t *good_file(size_t *n) {
  const char *tokens[] = {"<s>", "a", "b"};
  float a[16] = {0}, b[32] = {0};
  int64_t ne_a[2] = {8, 2}, ne_b[1] = {32};
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int bad = mkc_gguf_set_str(w, "general.architecture", "llama");
  bad |= mkc_gguf_set_u32(w, "general.alignment", 32);
  bad |= mkc_gguf_set_u32(w, "test.k1", 1);
  bad |= mkc_gguf_set_u32(w, "test.k2", 2);
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.tokens", MKC_GGUF_STRING, tokens, 3);
  bad |= mkc_gguf_add_tensor(w, "a.weight", MKC_GGML_F32, 2, ne_a, a);
  bad |= mkc_gguf_add_tensor(w, "b.weight", MKC_GGML_Q8_0, 1, ne_b, b);
  const char *path = tmp_path("good.gguf");
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  return bad ? NULL : slurp(path, n);
}

/* Opening the bytes as a file and from memory both fail with want. */
static void expect_bad(const char *label, const uint8_t *p, size_t n, const char *want) {
  const char *path = tmp_path("bad.gguf");
  spit(path, p, n);
  check_stderr_begin();
  mkc_gguf *f = mkc_gguf_open(path);
  mkc_gguf *m = mkc_gguf_open_memory(p, n, "mem.gguf");
  char *msg = check_stderr_end();
  char both[2048];
  snprintf(both, sizeof both, "mkc: error: %s: %s\nmkc: error: mem.gguf: %s\n", path, want, want);
  CHECK(!f && !m && strcmp(msg, both) == 0, "%s: %s", label, want);
  mkc_gguf_close(f);
  mkc_gguf_close(m);
  free(msg);
}

/* A copy of good with bytes [at, at + bytes) set to v (little-endian). */
static void expect_patched(const char *label, const uint8_t *good, size_t n, size_t at, uint64_t v,
                           int bytes, const char *want) {
  uint8_t *p = malloc(n);
  memcpy(p, good, n);
  set_le(p + at, v, bytes);
  expect_bad(label, p, n, want);
  free(p);
}

/* Opens every buffer from memory; each rejection must print exactly one
 * "mkc: error: mem.gguf: " line. Returns the number opened. */
static int open_all(uint8_t **bufs, const size_t *sizes, int count, int *lines_ok) {
  int opened = 0, rejected = 0, lines = 0;
  check_capture = NULL;
  fflush(stderr);
  FILE *cap = tmpfile();
  int saved = dup(2);
  dup2(fileno(cap), 2);
  for (int i = 0; i < count; i++) {
    mkc_gguf *f = mkc_gguf_open_memory(bufs[i], sizes[i], "mem.gguf");
    if (!f) {
      rejected++;
      continue;
    }
    opened++;
    for (uint64_t k = 0; k < f->n_tensors; k++) { /* read every readable tensor's bytes */
      const mkc_gguf_tensor *t = &f->tensors[k];
      if (!mkc_ggml_type(t->type)->readable || t->n_elems > (1u << 16)) continue;
      uint16_t *out = malloc((t->n_elems ? t->n_elems : 1) * sizeof *out);
      mkc_dequant_bf16(t->type, t->data, t->n_elems, out);
      free(out);
    }
    mkc_gguf_close(f);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(cap);
  char line[4096];
  int prefixed = 1;
  while (fgets(line, sizeof line, cap)) {
    lines++;
    prefixed &= strncmp(line, "mkc: error: mem.gguf: ", 22) == 0;
  }
  fclose(cap);
  *lines_ok = prefixed && lines == rejected;
  return opened;
}

static void test_bad_files(void) {
  size_t n = 0;
  uint8_t *good = good_file(&n);
  mkc_gguf *g = good ? mkc_gguf_open_memory(good, n, "good.gguf") : NULL;
  if (!CHECK(g != NULL, "bad files: the good file opens")) return;
  size_t k = find(good, n, "general.architecture"), al = find(good, n, "general.alignment");
  size_t k2 = find(good, n, "test.k2"), tk = find(good, n, "tokenizer.ggml.tokens");
  size_t pa = find(good, n, "a.weight"), pb = find(good, n, "b.weight");
  uint64_t data_offset = g->data_offset, b_offset = mkc_gguf_find_tensor(g, "b.weight")->offset;
  mkc_gguf_close(g);
  char want[512];

  expect_patched("wrong magic", good, n, 0, 0x4c4d4747, 4,
                 "not a GGUF file: magic 47 47 4d 4c, expected 47 47 55 46 (\"GGUF\")");
  expect_patched("version 1", good, n, 4, 1, 4,
                 "unsupported GGUF version 1 (mkc reads versions 2 and 3)");
  expect_patched("version 4", good, n, 4, 4, 4,
                 "unsupported GGUF version 4 (mkc reads versions 2 and 3)");
  expect_patched("big-endian", good, n, 4, 0x03000000, 4,
                 "big-endian GGUF files are not supported (version field 0x03000000)");
  uint8_t *v2 = malloc(n);
  memcpy(v2, good, n);
  v2[4] = 2;
  g = mkc_gguf_open_memory(v2, n, "v2.gguf");
  CHECK(g && g->version == 2 && g->n_tensors == 2, "version 2 (same layout) opens");
  mkc_gguf_close(g);
  free(v2);

  expect_bad("empty file", good, 0, "truncated at offset 0: the header needs 4 bytes, 0 left");
  expect_bad("cut in the header", good, 10,
             "truncated at offset 8: the header needs 8 bytes, 2 left");
  snprintf(want, sizeof want, "truncated at offset %zu: tensor 'b.weight' needs 4 bytes, 2 left",
           pb + 20);
  expect_bad("cut in a tensor info", good, pb + 22, want);
  snprintf(want, sizeof want,
           "tensor 'b.weight': 34 bytes at data offset %llu run past the end of the file (the data "
           "section holds %llu bytes)",
           (unsigned long long)b_offset, (unsigned long long)(n - 40 - data_offset));
  expect_bad("cut in the tensor data", good, n - 40, want);

  snprintf(want, sizeof want,
           "tensor count 4611686018427387904 cannot fit in the %zu bytes after the header", n - 24);
  expect_patched("absurd tensor count", good, n, 8, 1ull << 62, 8, want);
  snprintf(want, sizeof want,
           "metadata count 18446744073709551615 cannot fit in the %zu bytes after the header",
           n - 24);
  expect_patched("absurd metadata count", good, n, 16, UINT64_MAX, 8, want);
  snprintf(want, sizeof want,
           "metadata entry 0: string length 9223372036854775808 at offset 24 is more than the %zu "
           "bytes left",
           n - 32);
  expect_patched("absurd key length", good, n, 24, 1ull << 63, 8, want);
  snprintf(want, sizeof want,
           "metadata 'general.architecture': string length 1000000 at offset %zu is more than the "
           "%zu bytes left",
           k + 24, n - (k + 32));
  expect_patched("absurd string length", good, n, k + 24, 1000000, 8, want);
  snprintf(want, sizeof want,
           "metadata 'tokenizer.ggml.tokens': 1099511627776 array elements of type string cannot "
           "fit in the %zu bytes left",
           n - (tk + 37));
  expect_patched("absurd array count", good, n, tk + 29, 1ull << 40, 8, want);

  snprintf(want, sizeof want,
           "tensor 'b.weight': 34 bytes at data offset 1099511627776 run past the end of the file "
           "(the data section holds %llu bytes)",
           (unsigned long long)(n - data_offset));
  expect_patched("tensor data out of bounds", good, n, pb + 24, 1ull << 40, 8, want);
  snprintf(
      want, sizeof want,
      "tensor 'b.weight': 34 bytes at data offset 18446744073709551584 run past the end of the "
      "file (the data section holds %llu bytes)",
      (unsigned long long)(n - data_offset));
  expect_patched("tensor offset + size overflows", good, n, pb + 24, UINT64_MAX - 31, 8, want);
  expect_patched("misaligned tensor offset", good, n, pb + 24, b_offset + 1, 8,
                 "tensor 'b.weight': data offset 65 is not a multiple of the alignment 32");

  expect_patched("duplicate tensor name", good, n, pb, 'a', 1, "duplicate tensor name 'a.weight'");
  expect_patched("duplicate metadata key", good, n, k2 + 6, '1', 1,
                 "duplicate metadata key 'test.k1'");
  expect_patched("unknown value type", good, n, k + 20, 13, 4,
                 "metadata 'general.architecture': unknown value type 13");
  expect_patched("unknown array element type", good, n, tk + 25, 99, 4,
                 "metadata 'tokenizer.ggml.tokens': unknown array element type 99");
  expect_patched("array of arrays", good, n, tk + 25, MKC_GGUF_ARRAY, 4,
                 "metadata 'tokenizer.ggml.tokens': arrays of arrays are not supported");
  expect_patched("unknown tensor type", good, n, pb + 20, 99, 4,
                 "tensor 'b.weight': unknown tensor type 99");
  expect_patched("removed tensor type (Q4_2)", good, n, pb + 20, 4, 4,
                 "tensor 'b.weight': unknown tensor type 4");

  /* Names and strings from the file are shown escaped: a tensor name of
   * controls, DEL, a backslash, a lone continuation byte; one with a C1
   * control (C2 9B, the 8-bit CSI), "é" (C3 A9, kept) and a stray FF; the
   * same in a string value. */
  uint8_t *p = malloc(n);
  memcpy(p, good, n);
  memcpy(p + pb,
         "\x1b[2J\x7f\\\x80"
         "z",
         8);
  set_le(p + pb + 20, 99, 4);
  expect_bad("a tensor name of control bytes", p, n,
             "tensor '\\x1b[2J\\x7f\\\\\\x80z': unknown tensor type 99");
  memcpy(p, good, n);
  memcpy(p + pb, "\xc2\x9b\xc3\xa9\x07\xff\x0a.", 8);
  set_le(p + pb + 20, 99, 4);
  expect_bad("a C1 control and ill-formed UTF-8 in a tensor name", p, n,
             "tensor '\\xc2\\x9b\xc3\xa9\\x07\\xff\\x0a.': unknown tensor type 99");
  memcpy(p, good, n);
  memcpy(p + k + 32, "\x1bll\x08m", 5); /* "llama" */
  g = mkc_gguf_open_memory(p, n, "esc.gguf");
  const mkc_gguf_kv *arch = g ? mkc_gguf_find(g, "general.architecture") : NULL;
  char value[64] = "";
  if (arch) mkc_gguf_format_value(arch, value, sizeof value);
  CHECK(strcmp(value, "\"\\x1bll\\x08m\"") == 0, "a string value is formatted escaped: %s", value);
  check_stderr_begin();
  uint32_t ignored;
  int typed = g ? mkc_gguf_get_u32(g, "general.architecture", &ignored) : 0;
  char *err = first_line(check_stderr_end());
  CHECK(typed == -1 && strcmp(err, "mkc: error: esc.gguf: metadata 'general.architecture': "
                                   "Expected an integer in 0..4294967295, Actual string "
                                   "\"\\x1bll\\x08m\"") == 0,
        "... and so in a type error: %s", err);
  free(err);
  mkc_gguf_close(g);

  memcpy(p, good, n);
  set_le(p + pa + 12, 1ull << 40, 8);
  set_le(p + pa + 20, 1ull << 40, 8);
  expect_bad("element count overflow", p, n,
             "tensor 'a.weight': ne {1099511627776, 1099511627776, 1, 1} overflows 64 bits");
  set_le(p + pa + 12, 1ull << 31, 8);
  set_le(p + pa + 20, 1ull << 31, 8);
  expect_bad("byte count overflow (2^62 F32)", p, n,
             "tensor 'a.weight': ne {2147483648, 2147483648, 1, 1} overflows 64 bits");
  free(p);
  expect_patched("negative dimension", good, n, pa + 12, 1ull << 63, 8,
                 "tensor 'a.weight': ne[0] = 9223372036854775808 is out of range");
  expect_patched("5 dimensions", good, n, pa + 8, 5, 4,
                 "tensor 'a.weight': 5 dimensions (mkc reads 1 to 4)");
  expect_patched("0 dimensions", good, n, pa + 8, 0, 4,
                 "tensor 'a.weight': 0 dimensions (mkc reads 1 to 4)");
  expect_patched("partial block", good, n, pb + 12, 16, 8,
                 "tensor 'b.weight': ne[0] = 16 is not a multiple of the Q8_0 block size 32");
  expect_patched("alignment not a power of two", good, n, al + 21, 48, 4,
                 "general.alignment: Expected a u32 power of two, Actual 48");
  expect_patched("alignment 0", good, n, al + 21, 0, 4,
                 "general.alignment: Expected a u32 power of two, Actual 0");
  expect_patched("alignment of the wrong type", good, n, al + 17, MKC_GGUF_INT32, 4,
                 "general.alignment: Expected a u32 power of two, Actual type i32");
  expect_patched("NUL in a key", good, n, 24 + 8 + 3, 0, 1,
                 "metadata entry 0: the key contains a NUL byte");
  expect_patched("NUL in a tensor name", good, n, pa + 1, 0, 1,
                 "tensor info 0: the name contains a NUL byte");

  check_stderr_begin();
  mkc_gguf *f = mkc_gguf_open(tmp_path("nope.gguf"));
  char *msg = first_line(check_stderr_end());
  snprintf(want, sizeof want, "mkc: error: %s: cannot open: No such file or directory",
           tmp_path("nope.gguf"));
  CHECK(!f && strcmp(msg, want) == 0, "missing file: %s", want);
  free(msg);
  check_stderr_begin();
  f = mkc_gguf_open(tmp_dir);
  msg = first_line(check_stderr_end());
  snprintf(want, sizeof want, "mkc: error: %s: not a regular file", tmp_dir);
  CHECK(!f && strcmp(msg, want) == 0, "a directory: %s", want);
  free(msg);

  /* An empty array last in a file without tensors: a getter must not read
   * its element 0 (the fuzzer found this read past the buffer). */
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  mkc_gguf_set_arr(w, "x.empty", MKC_GGUF_UINT32, NULL, 0);
  mkc_gguf_write(w, tmp_path("empty.gguf"));
  mkc_gguf_writer_free(w);
  size_t n_empty = 0;
  uint8_t *empty = slurp(tmp_path("empty.gguf"), &n_empty);
  uint8_t *exact = malloc(55); /* header 24, key 8 + 7, type 4, element type 4, count 8 */
  memcpy(exact, empty, 55);
  g = n_empty >= 55 ? mkc_gguf_open_memory(exact, 55, "empty.gguf") : NULL;
  uint32_t u = 0;
  check_stderr_begin();
  int rc = g ? mkc_gguf_get_u32(g, "x.empty", &u) : 0;
  msg = first_line(check_stderr_end());
  CHECK(rc == -1 && strcmp(msg, "mkc: error: empty.gguf: metadata 'x.empty': Expected an integer "
                                "in 0..4294967295, Actual an array of u32") == 0,
        "get_u32 on an empty array at the end of the file");
  free(msg);
  mkc_gguf_close(g);
  free(exact);
  free(empty);

  /* Every prefix that cuts into the last tensor's data fails with one
   * message (only the padding after it may go); random byte damage never
   * crashes (the sanitizer build and the fuzzer check memory too). */
  enum { N_MUTANTS = 3000 };
  uint8_t **bufs = malloc((n + N_MUTANTS) * sizeof *bufs);
  size_t *sizes = malloc((n + N_MUTANTS) * sizeof *sizes);
  for (size_t i = 0; i < n; i++) bufs[i] = good, sizes[i] = i;
  size_t data_end = data_offset + b_offset + 34;
  int lines_ok = 0, opened = open_all(bufs, sizes, (int)n, &lines_ok);
  CHECK(opened == (int)(n - data_end) && lines_ok,
        "the %zu prefixes shorter than %zu bytes are rejected, one message each", data_end,
        data_end);
  uint32_t seed = 2024;
  for (int i = 0; i < N_MUTANTS; i++) {
    bufs[i] = malloc(n);
    memcpy(bufs[i], good, n);
    sizes[i] = lcg(&seed) % 8 ? n : lcg(&seed) % n;
    for (int flips = 1 + (int)(lcg(&seed) % 4); flips > 0; flips--)
      bufs[i][lcg(&seed) % n] = (uint8_t)(lcg(&seed) >> 24);
  }
  opened = open_all(bufs, sizes, N_MUTANTS, &lines_ok);
  CHECK(lines_ok, "%d damaged files: %d open, every other one is rejected with one message",
        N_MUTANTS, opened);
  for (int i = 0; i < N_MUTANTS; i++) free(bufs[i]);
  free(bufs);
  free(sizes);
  free(good);
}

/* Experts' matrices: a 3-d NAME_exps tensor ne {cols, rows, experts} reads as the experts' rows
 * one after another; a 3-d tensor of another name does not; and a file with one tensor an expert
 * (blk.0.ffn_gate.E.weight, the first Mixtral GGUFs) is refused with the reason. */
static void test_experts(void) {
  mkc_weight_info info = {.name = "blk.0.ffn_gate_exps.weight",
                          .rows = 8,
                          .cols = 8,
                          .row_stride = 8,
                          .type = MKC_GGML_BF16};
  mkc_graph g = {.n_weights = 1, .weights = &info};
  uint16_t bits[2][4 * 8];
  for (int e = 0; e < 2; e++)
    for (int i = 0; i < 4 * 8; i++) bits[e][i] = mkc_float_to_bf16((float)(100 * e + i));
  static const char *const names[3] = {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_gate_x.weight",
                                       "blk.0.ffn_gate.0.weight"};
  for (int c = 0; c < 3; c++) {
    mkc_gguf_writer *w = mkc_gguf_writer_new();
    int64_t ne3[3] = {8, 4, 2}, ne2[2] = {8, 4};
    int bad =
        c < 2 ? mkc_gguf_add_raw(w, names[c], MKC_GGML_BF16, 3, ne3, bits)
              : mkc_gguf_add_raw(w, names[c], MKC_GGML_BF16, 2, ne2, bits[0]) |
                    mkc_gguf_add_raw(w, "blk.0.ffn_gate.1.weight", MKC_GGML_BF16, 2, ne2, bits[1]);
    if (c == 1) info.name = "blk.0.ffn_gate_x.weight";
    const char *path = tmp_path("experts.gguf");
    bad |= mkc_gguf_write(w, path);
    mkc_gguf_writer_free(w);
    mkc_gguf *f = bad ? NULL : mkc_gguf_open(path);
    mkc_weights got = {0};
    check_stderr_begin();
    int rc = f ? mkc_gguf_load_weights(f, &g, &got) : -2;
    char *msg = first_line(check_stderr_end());
    if (c == 0)
      CHECK(rc == 0 && got.n == 1 && memcmp(got.t[0].data, bits, sizeof bits) == 0,
            "a 3-d ffn_gate_exps (2 experts of 4 rows) reads as [8, 8]: expert 0's rows, then 1's");
    if (c == 1)
      CHECK(rc != 0 && msg && strstr(msg, "Expected [8, 8], Actual [2, 4, 8]"),
            "a 3-d tensor not named _exps: refused (%s)", msg ? msg : "no message");
    if (c == 2)
      CHECK(rc != 0 && msg &&
                strstr(msg, "the file keeps each expert's matrix on its own "
                            "(blk.N.ffn_gate.E.weight), as early Mixtral GGUFs did"),
            "one tensor an expert (blk.0.ffn_gate.0.weight): refused with the reason (%s)",
            msg ? msg : "no message");
    free(msg);
    mkc_weights_free(&got);
    if (f) mkc_gguf_close(f);
    info.name = "blk.0.ffn_gate_exps.weight";
  }
}

int main(void) {
  if (scratch_open("gguf") != 0) return 1;
  test_experts();
  test_half();
  test_metadata();
  test_float_tensors();
  test_quantized();
  test_quantizers();
  test_init_and_load();
  test_bad_files();
  scratch_close();
  return check_done();
}
