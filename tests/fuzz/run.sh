#!/usr/bin/env bash
# Builds the wire-format fuzzer (fuzz_wire.cpp: hellos, verdicts, the pairwise phase's control
# lines) with Debian's clang, libFuzzer, ASan and UBSan, and runs it for SECONDS from the
# checked-in corpus (tests/fuzz/corpus/wire, never modified: new inputs go to a scratch folder).
# A crash leaves its input in BUILD_DIR and fails.
# Usage: tests/fuzz/run.sh [SECONDS] [BUILD_DIR]    (default 25 s, a temporary folder)
set -euo pipefail

seconds=${1:-25}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out"

cxx=${DDP_FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null; then
  echo "SKIPPED: $cxx not found (Debian's clang: bash contrib/install-deps.sh)"
  exit 77
fi
src=$root/contrib/ddp-check
util=$root/contrib/libddp/util

flags=(-std=c++2b -g -O1 "-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=all
       -I "$here/compat" -I "$root/contrib")
if ! "$cxx" "${flags[@]}" "$here/fuzz_wire.cpp" "$src/rendezvous/hello.cpp" \
  "$src/rendezvous/admit.cpp" "$src/rendezvous/suspects.cpp" "$src/pairs/protocol.cpp" \
  "$src/nccl/bandwidth.cpp" "$util/suspect.cpp" "$util/text.cpp" -o "$out/fuzz_wire" \
  2>"$out/build.log"; then
  if grep -q 'libclang_rt.fuzzer\|cannot find.*fuzzer' "$out/build.log"; then
    echo "SKIPPED: clang's libFuzzer runtime is missing (libclang-rt-14-dev)"
    exit 77
  fi
  cat "$out/build.log"
  exit 1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$out"
# -max_len: room for a line of k_max_line bytes and a few more lines.
# -error_exitcode=1: libFuzzer's own default, 77, is ctest's "skipped" (SKIP_RETURN_CODE), and a
# crash it found would be reported as a skip.
rm -f "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*   # an earlier run's
status=0
"$out/fuzz_wire" -max_total_time="$seconds" -max_len=40000 -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -print_final_stats=1 "$scratch" "$here/corpus/wire" || status=$?
# CI keeps no build tree: the input that failed is printed, to be replayed with
# base64 -d >in && build/.../fuzz_wire in.
for found in "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*; do
  [[ -e $found ]] && { echo "input that failed ($found), base64:"; base64 "$found"; }
done
exit "$status"
