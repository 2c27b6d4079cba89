/* The fake driver's memory: device allocations kept apart from host memory;
 * copies and memsets on the legacy NULL stream and on streams. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

API CUresult cuMemAlloc_v2(CUdeviceptr *dev, size_t bytes) {
  ENTER("cuMemAlloc_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemAlloc_v2");
  if (r || (r = sync_call("cuMemAlloc_v2", NULL))) return r;
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

/* The driver synchronizes before freeing: the legacy stream's queued work
 * runs first, so none of it outlives its memory. (Work left queued on a
 * stream of mkc's is mkc's to synchronize: run_op reports it if it is not.) */
API CUresult cuMemFree_v2(CUdeviceptr dev) {
  ENTER("cuMemFree_v2", );
  CUresult r = need_ctx("cuMemFree_v2");
  if (r) return r;
  for (int i = 0; i < drv.n_allocs; i++)
    if (drv.allocs[i].dev == dev) {
      if ((r = drain_legacy())) return r;
      free(drv.allocs[i].host);
      drv.allocs[i] = drv.allocs[--drv.n_allocs];
      return OK;
    }
  misuse("cuMemFree_v2", "0x%llx is not the start of a live allocation", dev);
  return E_INVALID_VALUE;
}

/* ---- on the legacy NULL stream (driver_stream.c): checked against queued
 * work of non-blocking streams, and queued; cuMemcpyDtoH alone waits ---- */

/* From pageable memory: the bytes are staged (the op keeps a copy) and the
 * call returns before the device has them. */
API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  ENTER("cuMemcpyHtoD_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyHtoD_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyHtoD_v2", dst, bytes)) return E_INVALID_VALUE;
  op o = {.kind = OP_HTOD,
          .call = "cuMemcpyHtoD_v2",
          .dev = dst,
          .bytes = bytes,
          .data = (unsigned char *)src};
  return legacy_call("cuMemcpyHtoD_v2", &o);
}

/* To pageable memory: returns once the copy, and so the legacy stream's
 * earlier work, is done. */
API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoH_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoH_v2");
  if (r) return r;
  unsigned char *s = device_bytes("cuMemcpyDtoH_v2", src, bytes);
  if (!s) return E_INVALID_VALUE;
  op o = {.kind = OP_DTOH, .call = "cuMemcpyDtoH_v2", .dev = src, .bytes = bytes, .host = dst};
  if ((r = sync_call("cuMemcpyDtoH_v2", &o)) || (r = drain_legacy())) return r;
  memcpy(dst, s, bytes);
  return OK;
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoD_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoD_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyDtoD_v2", dst, bytes) || !device_bytes("cuMemcpyDtoD_v2", src, bytes))
    return E_INVALID_VALUE;
  op o = {.kind = OP_DTOD, .call = "cuMemcpyDtoD_v2", .dev = dst, .src = src, .bytes = bytes};
  return legacy_call("cuMemcpyDtoD_v2", &o);
}

API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  ENTER("cuMemsetD8_v2", " %zu", n);
  CUresult r = need_ctx("cuMemsetD8_v2");
  if (r) return r;
  if (!device_bytes("cuMemsetD8_v2", dst, n)) return E_INVALID_VALUE;
  op o = {.kind = OP_MEMSET, .call = "cuMemsetD8_v2", .dev = dst, .bytes = n, .value = value};
  return legacy_call("cuMemsetD8_v2", &o);
}

/* ---- on a stream ---- */

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                                  struct CUstream_st *s) {
  ENTER("cuMemcpyHtoDAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyHtoDAsync_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyHtoDAsync_v2", dst, bytes)) return E_INVALID_VALUE;
  /* From pageable memory the driver stages the bytes before returning, so
   * the caller may reuse src at once: the op keeps a copy. */
  op o = {.kind = OP_HTOD,
          .call = "cuMemcpyHtoDAsync_v2",
          .dev = dst,
          .bytes = bytes,
          .data = (unsigned char *)src};
  return enqueue("cuMemcpyHtoDAsync_v2", s, &o);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, struct CUstream_st *s) {
  ENTER("cuMemcpyDtoHAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoHAsync_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyDtoHAsync_v2", src, bytes)) return E_INVALID_VALUE;
  /* Stricter than the driver, which finishes a copy to pageable memory
   * before returning: dst is written only at the synchronization. */
  op o = {.kind = OP_DTOH, .call = "cuMemcpyDtoHAsync_v2", .dev = src, .bytes = bytes, .host = dst};
  return enqueue("cuMemcpyDtoHAsync_v2", s, &o);
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                  struct CUstream_st *s) {
  ENTER("cuMemcpyDtoDAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoDAsync_v2");
  if (r) return r;
  if (!device_bytes("cuMemcpyDtoDAsync_v2", dst, bytes) ||
      !device_bytes("cuMemcpyDtoDAsync_v2", src, bytes))
    return E_INVALID_VALUE;
  op o = {.kind = OP_DTOD, .call = "cuMemcpyDtoDAsync_v2", .dev = dst, .src = src, .bytes = bytes};
  return enqueue("cuMemcpyDtoDAsync_v2", s, &o);
}

API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                             struct CUstream_st *s) {
  ENTER("cuMemsetD8Async", " %zu", n);
  CUresult r = need_ctx("cuMemsetD8Async");
  if (r) return r;
  if (!device_bytes("cuMemsetD8Async", dst, n)) return E_INVALID_VALUE;
  op o = {.kind = OP_MEMSET, .call = "cuMemsetD8Async", .dev = dst, .bytes = n, .value = value};
  return enqueue("cuMemsetD8Async", s, &o);
}
