#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the Debian packages the project needs, builds
# with warnings as errors, runs every ctest test (unit, golden, packages, real-cluster), repeats
# the build and the tests for every other Slurm release asked for, and rebuilds the unit-tested
# code with AddressSanitizer + UndefinedBehaviorSanitizer and runs it again; the other releases
# and the sanitizers run in the background beside this machine's tests. ctest runs one test more
# than there are cores: the suites of one embedded cluster run one after another (a
# RESOURCE_LOCK per cluster id), and anything that must run alone says RUN_SERIAL.
# Root on Debian 12. DDP_SKIP_DEPS=1 skips the package step; DDP_SKIP_ASAN=1 the sanitizer build;
# DDP_SKIP_FUZZ=1 the libFuzzer run.
#
# Slurm releases: DDP_SLURM_RELEASES (default "22.05 24.11 26.05", every release this project
# supports; DDP_SLURM_RELEASES=22.05 narrows a quick local run to this machine's own). This
# machine's own Slurm (Debian 12's 22.05) is tested from build/: every test.
# Every other release is tested in its Debian userland (tests/cluster/userland.sh: a chroot under
# /tmp/ddp-userland, made on first use in a few minutes, about 2 GB, reused after): every
# product is configured and built there with its compiler and libraries into
# build-slurm-RELEASE/ (in the background, beside this machine's build), the unit tests of the step core and the plugin run there (label
# release), and the cluster suites whose outcome
# depends on the release (DDP_RELEASE_SUITES, below) run the cluster of that release
# (cluster.sh up --slurm RELEASE) with the plugin, ddp-check and ddpgen of that build, in the
# background on a cluster id of their own while the rest goes on; their output comes at the end. A release
# that Debian's archive no longer ships (unstable moves on) is reported as SKIPPED, never as
# passed. Prints the time of every stage at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
userland=$root/tests/cluster/userland.sh
read -r -a releases <<<"${DDP_SLURM_RELEASES:-22.05 24.11 26.05}"

timings=() skipped=()
declare -A preparing=()
stage_start=0 stage_busy=0
# The machine's busy CPU time so far, in hundredths of a second (/proc/stat's first line: user,
# nice, system, idle, iowait, irq, softirq, steal). A stage's share of it says whether the stage
# waited (cluster timeouts) or computed, and the total whether the run is bound by its cores.
busy_cs() {
  local _cpu user nice system _idle _iowait irq softirq steal
  read -r _cpu user nice system _idle _iowait irq softirq steal _ </proc/stat
  echo $((user + nice + system + irq + softirq + steal))
}
run_busy=$(busy_cs)
stage() {
  stage_end
  stage_name=$1 stage_start=$SECONDS stage_busy=$(busy_cs)
  echo "== $1"
}
# Each line: the stage's wall seconds, then the CPU seconds the whole machine was busy meanwhile
# (the releases in the background included).
stage_end() {
  if [[ -n ${stage_name:-} ]]; then
    timings+=("$(printf '%5ds %6s  %s' $((SECONDS - stage_start)) \
      "($((($(busy_cs) - stage_busy) / 100)))" "$stage_name")")
  fi
  stage_name=""
}
report() {
  local rc=$?
  stage_end
  # A failure before the end leaves the background jobs (releases, sanitizers) running: stop them.
  local pid
  for pid in "${preparing[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  [[ -z ${run_dir:-} ]] || rm -rf "$run_dir"
  echo "== stage times (total $((SECONDS))s, $((($(busy_cs) - run_busy) / 100)) CPU-s of $((SECONDS * jobs)) on $jobs cores$( ((rc == 0)) || echo ", FAILED rc=$rc")); wall s (busy CPU-s):"
  printf '%s\n' "${timings[@]}"
  if ((${#skipped[@]})); then echo "== SKIPPED Slurm releases: ${skipped[*]}"; fi
}
trap report EXIT

if [[ "${DDP_SKIP_DEPS:-0}" != 1 ]]; then
  stage "install dependencies"
  bash "$root/contrib/install-deps.sh"
fi

# What runs on a release other than this machine's, after the -Werror build of every product
# and of what the release's tests run (target ddp_release_build): DDP_RELEASE_SUITES="all"
# builds and runs every unit, golden and cluster test of that build; the default runs the
# cluster suites whose outcome depends on the Slurm release (the plugin's environment and
# refusals, the fail-safe of plugstack.conf's required/optional and a failing step, ddp-check,
# the end-to-end training with both launchers, requeue: the notice, arrays, the restart cap, a
# crashed run; the watchdog: scontrol's and srun's view of a stalled or crashed step),
# Apptainer around the tasks (only unstable's userland ships it: the others skip it, saying
# so), healing (scontrol's ExcNodeList and requeue, srun's reports of failed tasks), a respawn
# in the allocation (a new step on chosen nodes of the job), a topology site (26.05 numbers
# tasks in topology order), and the unit tests labelled release (the step core and the plugin
# under Slurm's headers) but the 10,000-node simulation, which is arithmetic of the core alone
# and runs on this machine's build and under the sanitizers. ddpgen, ddp-check's and
# ddp-watch's cores do not read Slurm's headers: their unit and golden tests run here only.
release_suites=${DDP_RELEASE_SUITES:-plugin failsafe check e2e requeue watchdog apptainer heal respawn topology}
# Within those suites, a case that meets Slurm only as other cases of the release's run do, and
# adds what ddp-watch, ddpgen or the program decide (another launcher, another fault on the
# same kind of step), runs on this machine's release and skips on the others, naming the cases
# that carry its Slurm side there (slurm_side_covered_by in tests/cluster/lib.bash): 19 cases,
# about a third of each release's cluster time, almost all of it torch imports.
# DDP_RELEASE_CASES=all runs them too; DDP_RELEASE_SUITES=all implies it.
if [[ $release_suites == all ]]; then export DDP_RELEASE_CASES=all; fi
# The kind of site each release's cluster is (cluster.sh up --topology KIND, through the CMake
# variable DDP_CLUSTER_TOPOLOGY), as RELEASE=KIND words; a release not named is a plain site.
# Slurm 26.05 numbers a step's tasks in topology order at a site with a topology plugin, which
# is how most GPU clusters are set up: every suite of 26.05 runs at a topology/tree site whose
# switch order contradicts the node names, so task 0 is not on the first node of the step. This
# machine's release (name order) is the plain site. DDP_RELEASE_TOPOLOGIES="" runs every release
# at a plain site.
release_topologies=${DDP_RELEASE_TOPOLOGIES-26.05=tree}
release_topology() {  # RELEASE: its kind of site, or nothing
  local word
  for word in $release_topologies; do
    [[ ${word%%=*} != "$1" ]] || { echo "${word#*=}"; return; }
  done
}
if [[ $release_suites == all ]]; then
  release_target=() release_unit_filter=(-LE cluster) release_cluster_filter=(-L cluster)
else
  release_target=(--target ddp_release_build)
  release_unit_filter=(-L release -E '^Scale[.]')
  # The cluster_up/cluster_down fixture comes with any of them.
  release_cluster_filter=(-L cluster -R "^cluster_(${release_suites// /|})\$")
fi

# Line tables (-g1) instead of full debug information: the code and the warnings are those of
# -g (GCC's debug level never changes what it generates), backtraces and the sanitizers' reports
# still name file and line, and each file compiles in about two thirds of the time
# (gen/core/job_keys.cpp at -O2: 6.7 s against 10.6 s; under ASan at -O0: 8.6 s against 11.0 s).
# The packages (package.build) keep their own distributions' flags.
relwithdebinfo=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# The other releases' builds are there for their compilers' and headers' warnings (as errors)
# and for their cluster suites, which wait on Slurm and training programs, not on our code: -Og,
# which keeps the flow analysis that -Wmaybe-uninitialized and its kin need and compiles in 56 %
# of -O2's CPU time (24.11's build: 141 CPU-s against 252). This machine's build, whose
# suites and benchmarks run what ships, stays at -O2.
release_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG")
# Unity builds: each target's sources compile in batches of 8 as one translation unit, so the
# standard library, fmt, yaml-cpp and GoogleTest headers are parsed once per batch instead of
# once per source. A clean build of build/ takes half the CPU (371 CPU-s against 767). Sources
# whose file-local names clash compile apart (ddp_compile_apart in their CMakeLists.txt). The
# Debian package's build (package.build) is not a unity build, so every product source still
# compiles on its own once, which is where a missing #include shows.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)

host=$("$userland" host)
others=() host_tested=0
for release in "${releases[@]}"; do
  "$userland" suite "$release" >/dev/null   # an unknown release stops here, naming the valid ones
  if [[ $release == "$host" ]]; then host_tested=1; else others+=("$release"); fi
done

# Each other release runs whole in the background, from the start: its userland (made on first
# use: mostly downloading and unpacking), its build, its unit tests in the userland, then its
# cluster suites on an embedded cluster of its own (ids 1, 2, ...), while this machine's release
# is built and tested. The build runs at this machine's build's priority: built at the lowest,
# it waited for CPU until this machine's cluster suites were nearly done (1050 s of a 1390-s
# ctest), and its own suites, a third of an hour, came after. Its suites start when this
# machine's build is done (wait_for_host_build). Each step's seconds
# go to /tmp/ddp-release-RELEASE.times, its output to /tmp/ddp-release-RELEASE.out (the
# cluster suites' to /tmp/ddp-cluster-tests-RELEASE.out); the end of this script reports them.
# Exit status 3 from userland.sh: the Debian suite no longer ships that release.
# children_cs VAR: sets VAR to the CPU time, in hundredths of a second, of this shell's children
# that have ended (bash's `times`, second line: user and system as 0m1.602s). `times` runs in
# this shell, not in a $(...), whose subshell starts from zero; its lines go through $times_file,
# a mktemp file of background_job's.
children_cs() {
  times >"$times_file"
  printf -v "$1" '%s' "$(awk -F'[ ms]+' 'NR == 2 { printf "%d", ($1 * 60 + $2 + $3 * 60 + $4) * 100 }' "$times_file")"
}
# A background step's CPU-s are its own processes': a cluster suite's jobs run under the
# cluster's daemons, which are not its children, and are counted in the machine's total only.
background_step() {  # NAME COMMAND...: runs COMMAND, appends "SECONDS (CPU-s) LABEL: NAME" to $step_times
  local name=$1 start=$SECONDS rc=0 cpu0 cpu1
  shift
  children_cs cpu0
  "$@" || rc=$?
  children_cs cpu1
  printf '%5ds %6s  %s: %s%s\n' $((SECONDS - start)) "($(((cpu1 - cpu0) / 100)))" \
    "$step_label" "$name" "$( ((rc == 0)) || echo " (FAILED rc=$rc)")" >>"$step_times"
  return "$rc"
}
release_build() {
  echo "== build of the products and the release's tests against Slurm $release (warnings are errors)"
  "$userland" exec "$release" cmake -S "$root" -B "$dir" -DDDP_WERROR=ON \
    "${release_flags[@]}" "${unity[@]}" -DDDP_CLUSTER_SLURM="$release" \
    -DDDP_CLUSTER_TOPOLOGY="$(release_topology "$release")" &&
    "$userland" exec "$release" cmake --build "$dir" -j"$jobs" "${release_target[@]}"
}
release_units() {
  "$userland" exec "$release" ctest --test-dir "$dir" --output-on-failure --timeout 900 -j"$jobs" \
    --no-tests=error "${release_unit_filter[@]}"
}
site_kind() {  # RELEASE: how the stage lines name its kind of site
  local kind
  kind=$(release_topology "$1")
  if [[ -n $kind ]]; then echo "a topology/$kind site"; else echo "a plain site"; fi
}
release_clusters() {
  echo "== real-cluster tests ($release_suites) on cluster id $id, $(site_kind "$release") (log: /tmp/ddp-cluster-tests-$release.out)"
  DDP_CLUSTER_ID=$id ctest --test-dir "$dir" --output-on-failure --timeout 900 --no-tests=error \
    "${release_cluster_filter[@]}" >"/tmp/ddp-cluster-tests-$release.out" 2>&1
}
# This machine's build heads the run's longest path (its ctest follows), so a release's cluster
# suites, whose jobs run at the same priority, start only when it is done: started as soon as
# their release was built, they held it to 576 s instead of about 330. The script creates
# $host_built when the build is done; a failed build ends the script, which stops the releases.
wait_for_host_build() {
  until [[ -e $host_built ]]; do sleep 2; done
}
release_steps() {  # RELEASE ID
  local release=$1 id=$2 dir=$root/build-slurm-$1
  background_step "userland" "$userland" ensure "$release" &&
    background_step "build (products, cluster programs, unit tests labelled release)" release_build &&
    background_step "unit tests in its userland" release_units &&
    background_step "waiting for this machine's build" wait_for_host_build &&
    background_step "real-cluster tests ($release_suites) at $(site_kind "$release")" release_clusters
}
# The sanitizer build and the fuzzers need nothing of the tests above, so they run in the
# background beside them, from here on, like the other releases, as two jobs: a cluster suite
# mostly waits on timeouts and schedulers, and the compiles fill that time. The sanitizer build
# runs at a lower CPU priority (nice 10, the package build's), so that the clusters' timeouts
# keep their margins; at the lowest (19) it got no CPU until the clusters were done, and its
# tests and the fuzzers came after everything else (306 s). The fuzz build runs at the lowest,
# on the CPU the others leave idle: started after the sanitizers' tests, it and the fuzzers
# were the whole 92-s tail after this machine's ctest. Output: /tmp/ddp-sanitizers.out and
# /tmp/ddp-fuzzers.out, reported at the end with the seconds of each step.
sanitized() {
  # The cluster tests load the plugin into Debian's slurmstepd, which has no sanitizer runtime;
  # they run on the plain build. Everything else runs again under the sanitizers, and ddpgen's
  # and ddp-watch's fuzz targets run here, built from this build's cores (one instrumented
  # compile of each core, not two).
  echo "== ASan + UBSan: unit and golden tests, the ddpgen and ddp-watch fuzz targets"
  cmake -S "$root" -B "$root/build-asan" -DDDP_WERROR=ON -DDDP_SANITIZE=ON \
    -DDDP_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 "${unity[@]}" &&
    nice -n 10 cmake --build "$root/build-asan" -j"$jobs" &&
    # What the sanitizers cannot add to is left to the plain build: the lints read sources, and
    # bash -n and shellcheck read scripts that are byte for byte the ones the plain ddpgen
    # rendered (the render tests here still run the sanitized ddpgen on every case). So is the
    # unit test that renders every golden case again to read its ddp-check and ddp-watch lines
    # with the tools' tables (27 CPU-s here): the render tests here render the same cases.
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir "$root/build-asan" --output-on-failure -j"$jobs" -LE cluster \
      -E '^(lint[.]|(golden|corpus)[.](bash-n|shellcheck)[.]|Invocation[.]GoldenScriptsParseWithTheToolsTables$)'
}
fuzzed() {
  # The parsers of what users and admins write, under libFuzzer + ASan + UBSan, 10 s each from
  # the checked-in corpus (tests/fuzz/corpus). Only the core is built: clang-16, no Slurm.
  echo "== libFuzzer: hostlist, tasks per node, plugstack arguments, env_file"
  cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_CXX_COMPILER=clang++-16 -DDDP_WERROR=ON \
    -DDDP_BUILD_FUZZERS=ON -DDDP_SANITIZE=ON -DDDP_BUILD_TESTS=OFF -DDDP_BUILD_PLUGIN=OFF \
    -DDDP_BUILD_CHECK=OFF -DDDP_BUILD_GEN=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "${unity[@]}" &&
    nice -n 19 cmake --build "$root/build-fuzz" -j"$jobs" &&
    ctest --test-dir "$root/build-fuzz" --output-on-failure -j"$jobs" -L fuzz
}
sanitizer_steps() {
  [[ "${DDP_SKIP_ASAN:-0}" == 1 ]] ||
    background_step "ASan + UBSan: unit and golden tests, the ddpgen and ddp-watch fuzz targets" \
      sanitized
}
fuzzer_steps() {
  [[ "${DDP_SKIP_FUZZ:-0}" == 1 ]] ||
    background_step "libFuzzer: hostlist, tasks per node, plugstack arguments, env_file" fuzzed
}

# start_background NAME LABEL FUNCTION ARGS...: FUNCTION in the background, in a process group
# of its own (report() stops it whole), its output in /tmp/ddp-NAME.out, its background_steps'
# seconds in /tmp/ddp-NAME.times under LABEL; reap_background and show_background collect them.
background_job() {  # NAME LABEL FUNCTION ARGS...
  local step_times=/tmp/ddp-$1.times step_label=$2 times_file rc=0
  shift 2
  times_file=$(mktemp)
  : >"$step_times"
  "$@" || rc=$?
  rm -f "$times_file"
  return "$rc"
}
start_background() {
  set -m
  background_job "$@" >"/tmp/ddp-$1.out" 2>&1 &
  preparing[$1]=$!
  set +m
}
reap_background() {  # NAME: waits for it; sets rc to its exit status
  rc=0
  wait "${preparing[$1]}" || rc=$?
  unset "preparing[$1]"
}
show_background() {  # NAME [MORE_OUTPUT]: prints its output (and MORE_OUTPUT if it exists), adds its times
  cat "/tmp/ddp-$1.out"
  [[ -z ${2:-} || ! -f $2 ]] || cat "$2"
  mapfile -t -O "${#timings[@]}" timings <"/tmp/ddp-$1.times"
}
run_dir=$(mktemp -d /tmp/ddp-run.XXXXXX)   # private: the marker below is made inside it
host_built=$run_dir/host-built
release_id=0
for release in "${others[@]}"; do
  release_id=$((release_id + 1))
  echo "== Slurm $release in the background: userland, build, unit tests, cluster suites on cluster id $release_id (log: /tmp/ddp-release-$release.out)"
  start_background "release-$release" "Slurm $release" release_steps "$release" "$release_id"
done

stage "build (warnings are errors; this machine's Slurm $host)"
cmake -S "$root" -B "$root/build" -DDDP_WERROR=ON -DDDP_BUILD_BENCHMARKS=ON \
  "${relwithdebinfo[@]}" "${unity[@]}" \
  -DDDP_SITES_CLUSTER_ID="${DDP_SITES_CLUSTER_ID:-5}"
cmake --build "$root/build" -j"$jobs"
: >"$host_built"

echo "== ASan + UBSan and libFuzzer in the background (logs: /tmp/ddp-sanitizers.out, /tmp/ddp-fuzzers.out)"
start_background sanitizers sanitizers sanitizer_steps
start_background fuzzers sanitizers fuzzer_steps

if ((host_tested)); then
  stage "ctest: unit, golden and real-cluster tests (Slurm $host)"
  # One test more than cores: the cluster suites run in two lanes (tests/cluster/CMakeLists.txt)
  # that mostly wait, and the unit tests and the package build take the third place.
  ctest --test-dir "$root/build" --output-on-failure --timeout 900 -j"$((jobs + 1))"
else
  stage "ctest: unit and golden tests (Slurm $host not in DDP_SLURM_RELEASES)"
  ctest --test-dir "$root/build" --output-on-failure --timeout 900 -j"$jobs" -LE cluster
fi

stage "sanitizers: waiting for them (ASan + UBSan, libFuzzer in the background)"
for job in sanitizers fuzzers; do
  reap_background "$job"
  show_background "$job"
  ((rc == 0)) || { echo "$job: failed (above)" >&2; exit "$rc"; }
done

# The other releases, started at the beginning: each one's output, its steps' own times, its
# verdict.
for release in "${others[@]}"; do
  [[ -n ${preparing[release-$release]:-} ]] || continue
  stage "Slurm $release: waiting for it (userland, build, unit and cluster tests in the background)"
  reap_background "release-$release"
  # 3: Debian's archive no longer ships this release (unstable moves on to each new one). That
  # is news about the archive, not about this checkout: the release is reported as skipped, with
  # the reason, in the stage times, never as passed.
  if ((rc == 3)); then
    tail -n 3 "/tmp/ddp-release-$release.out"
    stage_name="Slurm $release: SKIPPED, Debian $("$userland" suite "$release") no longer ships it (above)"
    skipped+=("$release")
    continue
  fi
  show_background "release-$release" "/tmp/ddp-cluster-tests-$release.out"
  ((rc == 0)) || { echo "Slurm $release: failed (above)" >&2; exit "$rc"; }
done
