#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the Debian packages the project needs, builds
# with warnings as errors, runs every ctest test (unit, golden, real-cluster), then rebuilds
# the unit-tested code with AddressSanitizer + UndefinedBehaviorSanitizer and runs it again.
# Root on Debian 12. DDP_SKIP_DEPS=1 skips the package step; DDP_SKIP_ASAN=1 the second build.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)

if [[ "${DDP_SKIP_DEPS:-0}" != 1 ]]; then
  bash "$root/contrib/install-deps.sh"
fi

echo "== build (warnings are errors)"
cmake -S "$root" -B "$root/build" -DDDP_WERROR=ON -DDDP_BUILD_BENCHMARKS=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$root/build" -j"$jobs"

echo "== ctest: unit, golden and real-cluster tests"
ctest --test-dir "$root/build" --output-on-failure --timeout 900

if [[ "${DDP_SKIP_ASAN:-0}" != 1 ]]; then
  # The cluster tests load the plugin into Debian's slurmstepd, which has no sanitizer runtime;
  # they run on the plain build above. Everything else runs again under the sanitizers.
  echo "== ASan + UBSan: unit and golden tests"
  cmake -S "$root" -B "$root/build-asan" -DDDP_WERROR=ON -DDDP_SANITIZE=ON \
    -DDDP_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug
  cmake --build "$root/build-asan" -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -LE cluster
fi
