/* The figures ptxas -v reports for one kernel: what the register file, spills
 * and shared memory cost. */
#ifndef MKC_PTXAS_H
#define MKC_PTXAS_H

typedef struct mkc_ptxas_info {
  char arch[16];    /* the arch ptxas compiled for, e.g. sm_90 */
  int registers;    /* per thread */
  int barriers;     /* named barriers used */
  int stack_bytes;  /* stack frame per thread */
  int spill_stores; /* bytes */
  int spill_loads;  /* bytes */
  int smem_bytes;   /* static shared memory (dynamic comes from the plan) */
  int cmem0_bytes;  /* constant bank 0: kernel parameters */
  /* The functions the kernel calls (__noinline__; since 2026-11-28 mkc's kernels call none on
   * the GPU), which ptxas reports apart: how many, their spills summed, their largest stack
   * frame. */
  int called_functions, called_spill_stores, called_spill_loads, called_stack_bytes;
} mkc_ptxas_info;

/* Parses the report's block for `kernel`. Returns 0, or -1 when the log has
 * no "Compiling entry function 'kernel'" block with a "Used N registers" line. */
int mkc_ptxas_parse(const char *log, const char *kernel, mkc_ptxas_info *info);

#endif
