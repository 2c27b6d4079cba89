#!/usr/bin/env bash
# The end of tests/gpu/prime.sh, also run alone: everything a device call needs
# from this build, in ONE folder, build/gpu-carry (a call carries 8 paths at
# most; the GPU run needs more). tests/gpu/session.sh puts it back in build/
# there. The device call: carry ["build/gpu-carry"].
set -eu
cd "$(dirname "$0")/../.."
bins=(mkc test_kernel test_spec test_kv_dtype test_snapshot test_window test_slots test_sched test_cp_ring test_t1_path test_wtypes test_embed test_kv_file test_slot_rows)
# the flow probe (tests/gpu/probe_flow.cu), where this machine has nvcc
if command -v nvcc >/dev/null && make -s build/probe_flow; then
  bins+=(probe_flow)
else
  echo "pack: no build/probe_flow (no nvcc here): the GPU run skips the probe"
fi
for f in "${bins[@]/#/build/}" build/lib build/gpu-cache.tar.xz; do
  [ -e "$f" ] || { echo "pack: $f is missing (make; tests/gpu/prime.sh)"; exit 1; }
done
rm -rf build/gpu-carry
mkdir -p build/gpu-carry
cp -a build/gpu-cache.tar.xz build/gpu-carry/
# The binaries share most of their code: one xz archive of them all is a fraction of their size
# (loose, the 12 took 10.5 MB and the carry went past 64 MiB on 2026-12-04); session.sh unpacks it.
# (Their debug information is stripped first: 73 MB loose on 2026-12-04.)
rm -rf build/gpu-prime/bins && mkdir -p build/gpu-prime/bins
cp -a "${bins[@]/#/build/}" build/lib build/gpu-prime/bins/
strip --strip-debug "${bins[@]/#/build/gpu-prime/bins/}"
# build/lib (liblua, libcjson) goes in the archive too: xz takes it from 0.31 MB to about 0.1,
# room the carry had not left (2026-12-06: 0.11 MB under the 64 MiB a call carries)
tar -C build/gpu-prime/bins -cf - "${bins[@]}" lib | xz -T2 -9 >build/gpu-carry/bins.tar.xz
rm -rf build/gpu-prime/bins
echo "build/gpu-carry: $(du -sh build/gpu-carry | cut -f1) (${bins[*]} and lib in bins.tar.xz, gpu-cache.tar.xz)"
