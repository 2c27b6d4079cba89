/* The fake driver's memory: device allocations kept apart from host memory,
 * synchronous and queued copies, memset. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

API CUresult cuMemAlloc_v2(CUdeviceptr *dev, size_t bytes) {
  ENTER("cuMemAlloc_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemAlloc_v2");
  if (r || (r = sync_call("cuMemAlloc_v2", 0))) return r;
  if (bytes == 0) return E_INVALID_VALUE;
  if (drv.n_allocs == drv.cap_allocs) {
    int cap = drv.cap_allocs ? 2 * drv.cap_allocs : 16;
    alloc *a = realloc(drv.allocs, (size_t)cap * sizeof *a);
    if (!a) return E_OUT_OF_MEMORY;
    drv.allocs = a;
    drv.cap_allocs = cap;
  }
  unsigned char *host_mem = malloc(bytes);
  if (!host_mem) return E_OUT_OF_MEMORY;
  memset(host_mem, 0xA5, bytes); /* device memory starts as garbage */
  alloc *a = &drv.allocs[drv.n_allocs++];
  a->dev = drv.next_dev;
  a->size = bytes;
  a->host = host_mem;
  /* 2 MiB apart, with a gap, so one allocation never runs into the next. */
  drv.next_dev += ((bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1)) + (2u << 20);
  *dev = a->dev;
  return OK;
}

API CUresult cuMemFree_v2(CUdeviceptr dev) {
  ENTER("cuMemFree_v2", );
  CUresult r = need_ctx("cuMemFree_v2");
  if (r) return r;
  for (int i = 0; i < drv.n_allocs; i++)
    if (drv.allocs[i].dev == dev) {
      free(drv.allocs[i].host);
      drv.allocs[i] = drv.allocs[--drv.n_allocs];
      return OK;
    }
  misuse("cuMemFree_v2", "0x%llx is not the start of a live allocation", dev);
  return E_INVALID_VALUE;
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  ENTER("cuMemcpyHtoD_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyHtoD_v2");
  if (r || (r = sync_call("cuMemcpyHtoD_v2", dst))) return r;
  unsigned char *d = device_bytes("cuMemcpyHtoD_v2", dst, bytes);
  if (!d) return E_INVALID_VALUE;
  memcpy(d, src, bytes);
  return OK;
}

API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoH_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoH_v2");
  if (r || (r = sync_call("cuMemcpyDtoH_v2", src))) return r;
  unsigned char *s = device_bytes("cuMemcpyDtoH_v2", src, bytes);
  if (!s) return E_INVALID_VALUE;
  memcpy(dst, s, bytes);
  return OK;
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoD_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoD_v2");
  if (r || (r = sync_call("cuMemcpyDtoD_v2", dst)) || (r = sync_call("cuMemcpyDtoD_v2", src)))
    return r;
  unsigned char *d = device_bytes("cuMemcpyDtoD_v2", dst, bytes),
                *s = device_bytes("cuMemcpyDtoD_v2", src, bytes);
  if (!d || !s) return E_INVALID_VALUE;
  memmove(d, s, bytes);
  return OK;
}

API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  ENTER("cuMemsetD8_v2", " %zu", n);
  CUresult r = need_ctx("cuMemsetD8_v2");
  if (r || (r = sync_call("cuMemsetD8_v2", dst))) return r;
  unsigned char *d = device_bytes("cuMemsetD8_v2", dst, n);
  if (!d) return E_INVALID_VALUE;
  memset(d, value, n);
  return OK;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                                  struct CUstream_st *s) {
  ENTER("cuMemcpyHtoDAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyHtoDAsync_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyHtoDAsync_v2", dst, bytes)) return E_INVALID_VALUE;
  /* From pageable memory the driver stages the bytes before returning, so
   * the caller may reuse src at once: the op keeps a copy. */
  op o = {.kind = OP_HTOD, .dev = dst, .bytes = bytes, .data = (unsigned char *)src};
  return enqueue("cuMemcpyHtoDAsync_v2", s, &o);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, struct CUstream_st *s) {
  ENTER("cuMemcpyDtoHAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoHAsync_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyDtoHAsync_v2", src, bytes)) return E_INVALID_VALUE;
  /* Stricter than the driver, which finishes a copy to pageable memory
   * before returning: dst is written only at the synchronization. */
  op o = {.kind = OP_DTOH, .dev = src, .bytes = bytes, .host = dst};
  return enqueue("cuMemcpyDtoHAsync_v2", s, &o);
}
