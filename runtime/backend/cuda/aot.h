/* Ahead-of-time artifacts: a kernel compiled for a list of archs into a
 * folder of cubins, one PTX (for GPUs no cubin fits, JIT-compiled by the
 * driver) and manifest.json saying what is there. */
#ifndef MKC_AOT_H
#define MKC_AOT_H

#include <stddef.h>

#include "ptxas.h"

#define MKC_AOT_MAX_ARCHS 16

/* What an emitted kernel's header says about it (codegen/emit.lua writes it). */
typedef struct mkc_kernel_header {
  char version[32]; /* "mkc 0.1.0" */
  char graph[512];  /* graph file as given to gen */
  char preset[128];
  char graph_hash[17], templates_hash[17], options_hash[17];
  int draft_max, max_ctx, threads, max_blocks;
  char kv_dtype[8]; /* the KV cache's element type: bf16, f16, f32 */
  int ubatch;       /* inputs of a prompt chunk (0: draft_max + 1, a kernel from before) */
} mkc_kernel_header;

/* 0, or -1 when source does not start with an mkc kernel header. */
int mkc_kernel_header_parse(const char *source, mkc_kernel_header *h);

typedef struct mkc_aot_cubin {
  char arch[16];  /* sm_90 */
  char file[300]; /* name inside the folder */
  long size;
  mkc_ptxas_info ptxas;
} mkc_aot_cubin;

typedef struct mkc_manifest {
  char name[256]; /* the program name, <graph>.<preset>.cu */
  char mkc_version[32];
  int nvrtc_version;    /* major * 1000 + minor * 10 */
  char source_hash[17]; /* FNV-1a 64 of the kernel source */
  mkc_kernel_header header;
  int n_cubins;
  mkc_aot_cubin cubins[MKC_AOT_MAX_ARCHS];
  char ptx_arch[16]; /* compute_80 */
  char ptx_file[300];
} mkc_manifest;

/* Parses "sm_80,sm_90" into archs (each sm_N or sm_Na); -1 + message. */
int mkc_aot_parse_archs(const char *csv, char archs[][16], int *n);

/* Compiles the kernel at kernel_path for every arch into out_dir (created)
 * and writes out_dir/manifest.json. 0, or -1 after printing why. */
int mkc_aot_compile(const char *kernel_path, const char *archs_csv, const char *out_dir,
                    mkc_manifest *m);

int mkc_manifest_write(const char *dir, const mkc_manifest *m);
/* Reads and checks dir/manifest.json; -1 + "mkc: error: DIR/manifest.json: ..." */
int mkc_manifest_read(const char *dir, mkc_manifest *m);
/* The same for a manifest's len bytes of text, named path in messages. */
int mkc_manifest_parse(const char *path, const char *text, size_t len, mkc_manifest *m);

/* The image for a device of compute capability major.minor: a cubin index
 * (same major, minor <= the device's; the newest such), MKC_AOT_PTX when only
 * the PTX fits (its arch <= the device's), MKC_AOT_NONE otherwise. */
enum { MKC_AOT_PTX = -1, MKC_AOT_NONE = -2 };
int mkc_aot_pick(const mkc_manifest *m, int cc_major, int cc_minor);

/* The FNV-1a 64 hash of a source as 16 hex digits (out: 17 bytes). */
void mkc_source_hash(const char *source, char *out);

#endif
