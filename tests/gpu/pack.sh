#!/usr/bin/env bash
# The end of tests/gpu/prime.sh, also run alone: everything a device call needs
# from this build, in ONE folder, build/gpu-carry (a call carries 8 paths at
# most; the GPU run needs more). tests/gpu/session.sh puts it back in build/
# there. The device call: carry ["build/gpu-carry"].
set -eu
cd "$(dirname "$0")/../.."
bins=(mkc test_kernel test_spec test_kv_dtype test_snapshot test_window test_slots test_sched test_cp_ring test_t1_path test_wtypes test_embed)
for f in "${bins[@]/#/build/}" build/lib build/gpu-cache.tar.xz; do
  [ -e "$f" ] || { echo "pack: $f is missing (make; tests/gpu/prime.sh)"; exit 1; }
done
rm -rf build/gpu-carry
mkdir -p build/gpu-carry
cp -a "${bins[@]/#/build/}" build/lib build/gpu-cache.tar.xz build/gpu-carry/
# without their debug information: with it the folder passed a call's 64 MiB (2026-12-04, 73 MB)
strip --strip-debug "${bins[@]/#/build/gpu-carry/}"
echo "build/gpu-carry: $(du -sh build/gpu-carry | cut -f1) (${bins[*]}, lib, gpu-cache.tar.xz)"
