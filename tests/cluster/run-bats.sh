#!/usr/bin/env bash
# Runs one bats file against the embedded cluster, for ctest. Exits 77 (SKIP_RETURN_CODE) with
# the reason when this machine cannot run the cluster or bats is missing, so that ctest shows a
# skip instead of a pass made of skipped tests. Prints "N passed, N failed, N skipped".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
file=${1:?usage: run-bats.sh FILE.bats [BATS_ARGS...]}
shift

if ! why=$("$here/cluster.sh" check 2>&1); then
  echo "SKIPPED $(basename "$file"): $why"
  exit 77
fi
if ! command -v bats >/dev/null 2>&1; then
  echo "SKIPPED $(basename "$file"): bats not found (install: bash contrib/install-deps.sh)"
  exit 77
fi
# A test skipped inside the file (torch, ddpgen or Lmod missing) is a bats "ok ... # skip": it
# is counted and named below, and a file whose tests all skipped exits 77, never as a pass.
tap=$(mktemp)
trap 'rm -f "$tap"' EXIT
rc=0
bats --tap --timing --print-output-on-failure "$@" "$file" | tee "$tap" || rc=$?
total=$(grep -cE '^(not )?ok [0-9]+' "$tap" || true)
failed=$(grep -cE '^not ok [0-9]+' "$tap" || true)
skipped=$(grep -E '^ok [0-9]+' "$tap" | grep -c ' # skip' || true)
echo "$(basename "$file"): $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
if ((skipped > 0)); then
  echo "skipped, with their reasons:"
  grep -E '^ok [0-9]+' "$tap" | grep ' # skip' | sed 's/^/  /'
fi
if ((rc == 0 && total > 0 && skipped == total)); then
  exit 77
fi
exit "$rc"
