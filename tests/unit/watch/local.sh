#!/usr/bin/env bash
# ddp-watch outside Slurm, on real processes (about 5 s): it ends when the command ends, not when
# a descendant that left the group closes the output; a progress bar that ends no line is
# progress; a forged srun line from a command that is not srun costs nothing and says nothing;
# srun told to write the output to a file it cannot follow is refused.
# Usage: local.sh DDP_WATCH
set -euo pipefail
watch=${1:?usage: local.sh DDP_WATCH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# A descendant in a session of its own holds stdout for 60 s; the command itself ends at once.
start=$SECONDS
out=$("$watch" --timeout 30s -- sh -c 'setsid sh -c "exec sleep 60" & echo $! > pid; echo hi') ||
  fail "status $? after $((SECONDS - start)) s, not the command's 0"
kill "$(cat pid)" 2>/dev/null || true
[[ $out == hi ]] || fail "output: $out"
((SECONDS - start < 20)) || fail "waited $((SECONDS - start)) s for a descendant's pipe"

# A bar redrawn with \r for 6 s, no newline until the end, with a 2 s timeout.
status=0
# shellcheck disable=SC2016  # expanded by the command's shell
"$watch" --timeout 2s --grace 1s -- sh -c \
  'i=0; while [ $i -lt 12 ]; do printf "\r%d%%|####" $i; sleep 0.5; i=$((i+1)); done; echo' \
  >bar.out 2>bar.err || status=$?
((status == 0)) || fail "a bar read as a stall (status $status): $(cat bar.err)"
grep -q 'ddp-watch' bar.err && fail "the watchdog spoke: $(cat bar.err)"

# Not srun: its "srun: error" line is its own text. Before, this line cost 200 MB.
status=0
# Its peak resident set, in KiB, from python3's rusage of its child (every userland the tests
# run in has python3; not every one has /usr/bin/time).
python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=open("forged.out", "w"), stderr=open("forged.err", "w"))
open("rss", "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$watch" --timeout 5s -- \
  sh -c 'echo "srun: error: n: tasks 0-1048576: Killed"; exit 3' || status=$?
((status == 3)) || fail "status $status, not the command's 3"
grep -q 'first failure' forged.err && fail "a summary from a forged line: $(cat forged.err)"
(($(tail -n 1 rss) < 50000)) || fail "maximum resident set $(tail -n 1 rss) KB"

# srun -o with a %-pattern and no heartbeat: refused with the reason, exit 2, nothing started.
status=0
"$watch" --timeout 5s -- srun -o 'out-%t.txt' true 2>refused.err || status=$?
((status == 2)) || fail "status $status for srun -o PATTERN"
grep -q 'cannot follow: drop -o/-e' refused.err || fail "no reason: $(cat refused.err)"
echo "local.sh: 4 checks passed"
