/* Resources of the compiled kernel: NVRTC (runtime/backend/cuda/nvrtc.h) compiles the
 * emitted source for an arch, and runtime/backend/cuda/ptxas.c reads registers, spills,
 * stack, static shared memory and barriers from ptxas -v. The default arch
 * and GPU are those of the device libcuda finds, else sm_90 and h100. */
#include "backend/cuda/driver.h"
#include "inspect.h"
#include "backend/cuda/nvrtc.h"
#include "backend/cuda/ptxas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first GPU's compute capability and name, or -1 without a driver or GPU. */
static int device_query(int *major, int *minor, char *name, int name_size) {
  char why[256];
  CUdevice dev;
  int count = 0;
  if (mkc_cuda_load(why, sizeof why) != 0) return -1;
  if (mkc_cu.DeviceGetCount(&count) != 0 || count < 1 || mkc_cu.DeviceGet(&dev, 0) != 0) return -1;
  if (mkc_cu.DeviceGetAttribute(major, MKC_CU_ATTR_CC_MAJOR, dev) != 0 ||
      mkc_cu.DeviceGetAttribute(minor, MKC_CU_ATTR_CC_MINOR, dev) != 0 ||
      mkc_cu.DeviceGetName(name, name_size, dev) != 0)
    return -1;
  return 0;
}

const char *mkc_default_arch(char *buf, size_t size) {
  int major, minor;
  char name[128];
  if (device_query(&major, &minor, name, sizeof name) == 0)
    snprintf(buf, size, "sm_%d%d", major, minor);
  else
    snprintf(buf, size, "sm_90");
  return buf;
}

const char *mkc_default_gpu(void) {
  int major, minor;
  char name[128];
  if (device_query(&major, &minor, name, sizeof name) != 0) return "h100";
  if (strstr(name, "H200")) return "h200";
  if (strstr(name, "H100")) return strstr(name, "PCIe") ? "h100-pcie" : "h100";
  if (strstr(name, "A100")) return strstr(name, "40GB") ? "a100-40gb" : "a100";
  if (strstr(name, "L40S")) return "l40s";
  if (strstr(name, "A10")) return "a10";
  if (strstr(name, "4090")) return "rtx4090";
  return "h100";
}

void mkc_resources_get(const char *source, const char *name, const char *arch, mkc_resources *res) {
  memset(res, 0, sizeof *res);
  snprintf(res->arch, sizeof res->arch, "%s", arch);
  char why[512];
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    snprintf(res->why, sizeof res->why, "%s", why);
    return;
  }
  res->nvrtc_version = mkc_nvrtc_version(NULL, 0);
  mkc_nvrtc_output out;
  mkc_ptxas_info info;
  if (mkc_nvrtc_compile(source, name, arch, 0, &out) != 0) {
    snprintf(res->why, sizeof res->why, "NVRTC could not compile %s for %s (see above)", name,
             arch);
  } else if (mkc_ptxas_parse(out.log, "mkc_step", &info) != 0) {
    snprintf(res->why, sizeof res->why, "no mkc_step entry in the ptxas report");
  } else {
    res->available = 1;
    res->registers = info.registers;
    res->barriers = info.barriers;
    res->stack_bytes = info.stack_bytes;
    res->spill_store_bytes = info.spill_stores;
    res->spill_load_bytes = info.spill_loads;
    res->smem_static_bytes = info.smem_bytes;
    res->cmem_bytes = info.cmem0_bytes;
  }
  mkc_nvrtc_output_free(&out);
}
