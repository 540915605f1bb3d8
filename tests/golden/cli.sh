#!/bin/bash
# ddpgen's command line and output, checked on values. Usage: cli.sh DDPGEN
#   - options and the job file in any order give the same script; --set takes one KEY=VALUE;
#   - a command-line error names the argument and what is expected (exit 2);
#   - a failed write (full disk: /dev/full) exits non-zero; -o leaves nothing half-written and
#     no temporary file, keeps the old file when it fails, replaces a symlink instead of
#     writing through it, and gives the file the umask's mode.
set -euo pipefail
ddpgen=$1
case_dir=$(cd "$(dirname "$0")/local-srun" && pwd)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cd "$tmp"
cp "$case_dir/job.yaml" job.yaml
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

"$ddpgen" --profile local job.yaml --set nodes=3 >reference.sbatch
grep -q '^#SBATCH --nodes=3$' reference.sbatch || fail "--set nodes=3 not applied"
for order in "--profile local --set nodes=3 job.yaml" "--set nodes=3 --profile local job.yaml" \
  "job.yaml --set nodes=3 --profile local" "--set=nodes=3 job.yaml --profile=local" \
  "--set nodes=2 --set nodes=3 --profile local job.yaml"; do
  # shellcheck disable=SC2086  # the words of $order are the arguments
  if ! "$ddpgen" $order >out.sbatch 2>err; then
    fail "ddpgen $order: $(cat err)"
  elif ! cmp -s reference.sbatch out.sbatch; then
    fail "ddpgen $order: a different script"
  fi
done

# expect_usage_error ERROR_REGEX ARGS...: exit 2, nothing on stdout, the message matches.
expect_usage_error() {
  local want=$1 status=0
  shift
  "$ddpgen" "$@" >out 2>err || status=$?
  if [[ $status -ne 2 || -s out ]] || ! grep -Eq -- "$want" err; then
    fail "ddpgen $*: status $status, stderr: $(cat err); expected status 2 and /$want/"
  fi
}
expect_usage_error '^ddpgen: error: --set: expected KEY=VALUE.*got "nodes"' --profile local --set nodes job.yaml
expect_usage_error '^ddpgen: error: --set: 1 required KEY=VALUE missing' --profile local job.yaml --set
expect_usage_error '^ddpgen: error: --profile NAME\|PATH is required' job.yaml
expect_usage_error '^ddpgen: error: no job file' --profile local
expect_usage_error 'not expected: other.yaml \(give one job file' --profile local job.yaml other.yaml
expect_usage_error 'not expected: --frob' --profile local job.yaml --frob

# Standard output that cannot be written.
status=0
"$ddpgen" --profile local job.yaml >/dev/full 2>err || status=$?
[[ $status -eq 1 ]] && grep -q 'cannot write the script: No space left on device' err ||
  fail "stdout to /dev/full: status $status, $(cat err)"

# -o: the file is complete and nothing else is left in the directory.
mkdir dest
"$ddpgen" --profile local job.yaml -o dest/job.sbatch
cmp -s dest/job.sbatch <("$ddpgen" --profile local job.yaml) || fail "-o wrote a different script"
[[ $(ls -A dest) == job.sbatch ]] || fail "-o left other files: $(ls -A dest)"
mode=$(stat -c %a dest/job.sbatch)
[[ $mode == "$(printf '%o' $((0666 & ~$(umask))))" ]] || fail "-o gave mode $mode"

# A failed render leaves the old file as it was.
echo old >dest/job.sbatch
"$ddpgen" --profile local job.yaml --set nodes=99 -o dest/job.sbatch 2>/dev/null && fail "nodes=99 accepted"
[[ $(cat dest/job.sbatch) == old && $(ls -A dest) == job.sbatch ]] || fail "a failed render touched -o"

# A symlink at the target is replaced, not followed (the predictable temporary name of old
# releases could be a symlink planted by someone else).
echo precious >precious
ln -s ../precious dest/link.sbatch
"$ddpgen" --profile local job.yaml -o dest/link.sbatch
[[ $(cat precious) == precious && ! -L dest/link.sbatch ]] || fail "-o wrote through a symlink"
ln -s ../precious dest/.job.sbatch.ddpgen-tmp
"$ddpgen" --profile local job.yaml -o dest/job.sbatch
[[ $(cat precious) == precious ]] || fail "-o wrote through dest/.job.sbatch.ddpgen-tmp"

# A directory where the file cannot be created: an error naming it, nothing left.
if [[ $(id -u) -ne 0 ]]; then
  mkdir ro && chmod a-w ro
  "$ddpgen" --profile local job.yaml -o ro/job.sbatch 2>err && fail "wrote into a read-only directory"
  grep -q 'ro/job.sbatch: cannot create a file in ro' err || fail "read-only: $(cat err)"
fi
"$ddpgen" --profile local job.yaml -o dest 2>err && fail "-o onto a directory succeeded"
[[ $(ls -A dest | tr '\n' ' ') == ".job.sbatch.ddpgen-tmp job.sbatch link.sbatch " ]] ||
  fail "left a temporary file: $(ls -A dest)"

((fails == 0)) && echo "cli: all checks passed"
exit $((fails > 0))
