/* mkc's version: in every kernel header, cache key and AOT manifest. */
#ifndef MKC_VERSION_H
#define MKC_VERSION_H

#define MKC_VERSION "0.1.0"

#endif
