#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the Debian packages the project needs, builds
# with warnings as errors, runs every ctest test (unit, golden, packages, real-cluster), repeats
# the build and the tests for every other Slurm release asked for, then rebuilds the unit-tested
# code with AddressSanitizer + UndefinedBehaviorSanitizer and runs it again.
# Root on Debian 12. DDP_SKIP_DEPS=1 skips the package step; DDP_SKIP_ASAN=1 the sanitizer build;
# DDP_SKIP_FUZZ=1 the libFuzzer run.
#
# Slurm releases: DDP_SLURM_RELEASES (default "22.05": this machine's own Slurm; the whole
# matrix is DDP_SLURM_RELEASES="22.05 24.11 26.05", which makes each other release's userland on
# first use, several minutes and about 2 GB each). This machine's own Slurm (Debian 12's 22.05)
# is tested from build/.
# Every other release is tested in its Debian userland (tests/cluster/userland.sh: a chroot under
# /tmp/ddp-userland, made on first use, reused after): the whole project is configured and built
# there with its compiler and libraries into build-slurm-RELEASE/, the unit and golden tests run
# there, and the cluster tests run the cluster of that release (cluster.sh up --slurm RELEASE)
# with the plugin, ddp-check and ddpgen of that build. Prints the time of every stage at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
userland=$root/tests/cluster/userland.sh
read -r -a releases <<<"${DDP_SLURM_RELEASES:-22.05}"

timings=()
stage_start=0
stage() {
  stage_end
  stage_name=$1 stage_start=$SECONDS
  echo "== $1"
}
stage_end() {
  if [[ -n ${stage_name:-} ]]; then timings+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$stage_name")"); fi
  stage_name=""
}
report() {
  local rc=$?
  stage_end
  echo "== stage times (total $((SECONDS))s$( ((rc == 0)) || echo ", FAILED rc=$rc")):"
  printf '%s\n' "${timings[@]}"
}
trap report EXIT

if [[ "${DDP_SKIP_DEPS:-0}" != 1 ]]; then
  stage "install dependencies"
  bash "$root/contrib/install-deps.sh"
fi

# What runs on a release other than this machine's, after its whole-project -Werror build:
# DDP_RELEASE_SUITES="all" runs every unit, golden and cluster test of that build; the default
# runs the cluster suites whose outcome depends on the Slurm release (the plugin's environment
# and refusals, ddp-check, the end-to-end training with both launchers and requeue), and every
# unit and golden test but the 10,000-node simulation, which is arithmetic of the core alone and
# runs on this machine's build and under the sanitizers (about two minutes a release on 2 cores).
release_suites=${DDP_RELEASE_SUITES:-plugin check e2e}
if [[ $release_suites == all ]]; then
  release_unit_filter=() release_cluster_filter=(-L cluster)
else
  release_unit_filter=(-E '^Scale[.]')
  # The cluster_up/cluster_down fixture comes with any of them.
  release_cluster_filter=(-L cluster -R "^cluster_(${release_suites// /|})\$")
fi

host=$("$userland" host)
others=() host_tested=0
for release in "${releases[@]}"; do
  "$userland" suite "$release" >/dev/null   # an unknown release stops here, naming the valid ones
  if [[ $release == "$host" ]]; then host_tested=1; else others+=("$release"); fi
done

# Making a missing userland is mostly downloading and unpacking: it runs beside the host's build
# and tests, and each release's stage waits for its own.
declare -A making=()
for release in "${others[@]}"; do
  if ! "$userland" root "$release" >/dev/null 2>&1; then
    echo "== making Slurm $release's userland in the background (log: /tmp/ddp-userland-$release.out)"
    "$userland" ensure "$release" >"/tmp/ddp-userland-$release.out" 2>&1 &
    making[$release]=$!
  fi
done

stage "build (warnings are errors; this machine's Slurm $host)"
cmake -S "$root" -B "$root/build" -DDDP_WERROR=ON -DDDP_BUILD_BENCHMARKS=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDDP_SITES_CLUSTER_ID="${DDP_SITES_CLUSTER_ID:-5}"
cmake --build "$root/build" -j"$jobs"

if ((host_tested)); then
  stage "ctest: unit, golden and real-cluster tests (Slurm $host)"
  ctest --test-dir "$root/build" --output-on-failure --timeout 900
else
  stage "ctest: unit and golden tests (Slurm $host not in DDP_SLURM_RELEASES)"
  ctest --test-dir "$root/build" --output-on-failure --timeout 900 -LE cluster
fi

for release in "${others[@]}"; do
  dir=$root/build-slurm-$release
  stage "Slurm $release: userland"
  if [[ -n ${making[$release]:-} ]]; then
    wait "${making[$release]}" || { cat "/tmp/ddp-userland-$release.out" >&2; exit 1; }
    cat "/tmp/ddp-userland-$release.out"
  fi
  "$userland" ensure "$release"
  stage "Slurm $release: build in its userland (warnings are errors)"
  "$userland" exec "$release" cmake -S "$root" -B "$dir" -DDDP_WERROR=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDP_CLUSTER_SLURM="$release"
  "$userland" exec "$release" cmake --build "$dir" -j"$jobs"
  stage "Slurm $release: unit and golden tests in its userland"
  "$userland" exec "$release" ctest --test-dir "$dir" --output-on-failure --timeout 900 -LE cluster \
    "${release_unit_filter[@]}"
  # ctest runs here, not in the userland: the cluster needs this machine's namespaces, and
  # cluster.sh enters the userland for every daemon and command itself.
  stage "Slurm $release: real-cluster tests ($release_suites)"
  ctest --test-dir "$dir" --output-on-failure --timeout 900 --no-tests=error "${release_cluster_filter[@]}"
done

if [[ "${DDP_SKIP_ASAN:-0}" != 1 ]]; then
  # The cluster tests load the plugin into Debian's slurmstepd, which has no sanitizer runtime;
  # they run on the plain build above. Everything else runs again under the sanitizers.
  stage "ASan + UBSan: unit and golden tests"
  cmake -S "$root" -B "$root/build-asan" -DDDP_WERROR=ON -DDDP_SANITIZE=ON \
    -DDDP_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug
  cmake --build "$root/build-asan" -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -LE cluster
fi

if [[ "${DDP_SKIP_FUZZ:-0}" != 1 ]]; then
  # The parsers of what users and admins write, under libFuzzer + ASan + UBSan, 20 s each from
  # the checked-in corpus (tests/fuzz/corpus). Only the core is built: clang-16, no Slurm.
  stage "libFuzzer: hostlist, tasks per node, plugstack arguments, env_file"
  cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_CXX_COMPILER=clang++-16 -DDDP_WERROR=ON \
    -DDDP_BUILD_FUZZERS=ON -DDDP_SANITIZE=ON -DDDP_BUILD_TESTS=OFF -DDDP_BUILD_PLUGIN=OFF \
    -DDDP_BUILD_CHECK=OFF -DDDP_BUILD_GEN=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$root/build-fuzz" -j"$jobs"
  ctest --test-dir "$root/build-fuzz" --output-on-failure -L fuzz
fi
