#!/usr/bin/env bash
# Runs one bats file against the embedded cluster, for ctest. Exits 77 (SKIP_RETURN_CODE) with
# the reason when this machine cannot run the cluster or bats is missing, so that ctest shows a
# skip instead of a pass made of skipped tests.
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
exec bats --tap --timing --print-output-on-failure "$@" "$file"
