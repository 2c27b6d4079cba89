# Sourced by tests/gpu/bench.sh and tests/gpu/second.sh (device calls): with
# $budget (seconds) and $log_name set, the log in $OUT (else build/gpu-bench),
# the budget's clock, and the carried build (build/lib's libraries, the
# cubins tests/gpu/prime.sh compiled) put to use.
t_start=$(date +%s)
dest=${OUT:-build/gpu-bench}
mkdir -p "$dest"
log="$dest/$log_name"
say() { echo "$*" | tee -a "$log"; }
left() { echo $((budget - ($(date +%s) - t_start))); }
# limit MAX: MAX seconds, or what is left of the budget if less (at least 5).
limit() { local l; l=$(left); [ "$l" -lt "$1" ] && echo $((l > 5 ? l : 5)) || echo "$1"; }
# The carried folder (tests/gpu/pack.sh) back where the scripts look.
[ -d build/gpu-carry ] && cp -a build/gpu-carry/. build/
# tests/gpu/pack.sh's binaries and build/lib, in one archive
[ -f build/bins.tar.xz ] && tar -C build -xJf build/bins.tar.xz
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MKC_CACHE_DIR=$PWD/build/gpu-cache
[ -f build/gpu-cache.tar.xz ] && tar -C build -xJf build/gpu-cache.tar.xz
