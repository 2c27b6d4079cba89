/* The ref backend: the reference executor (reference.h) behind the backend
 * interface (backend/backend.h), stepped by the kernel's accept rule so the
 * decode loop above it is the same for every backend. */
#ifndef MKC_REF_BACKEND_H
#define MKC_REF_BACKEND_H

#include "backend/backend.h"
#include "codegen/graph.h"
#include "formats/weights.h"
#include "reference.h"

/* g and w must outlive it. NULL + message on failure. */
mkc_backend *mkc_ref_backend_open(const mkc_graph *g, const mkc_weights *w);

/* b's reference executor; NULL when b is another backend. */
mkc_ref *mkc_ref_backend_executor(mkc_backend *b);

#endif
