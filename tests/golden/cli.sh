#!/bin/bash
# ddpgen's command line and output, checked on values. Usage: cli.sh DDPGEN
#   - options and the job file in any order give the same script; --set takes one KEY=VALUE;
#   - a command-line error names the argument and what is expected (exit 2);
#   - a failed write (full disk: /dev/full) exits non-zero; -o leaves nothing half-written and
#     no temporary file, keeps the old file when it fails, replaces a symlink instead of
#     writing through it, gives a new file the umask's mode and an old one its own mode, and
#     writes into a device or pipe (/dev/stdout, /dev/full) instead of replacing it.
#   - a job file that is a device or a FIFO is refused at once.
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

# validate takes the same options wherever they stand, before or after the subcommand.
for order in "validate --profile local --set nodes=3 job.yaml" "--profile local validate job.yaml --set nodes=3" \
  "--set nodes=3 job.yaml validate --profile local" "--profile local --set nodes=3 job.yaml validate"; do
  # shellcheck disable=SC2086  # the words of $order are the arguments
  if ! "$ddpgen" $order >out 2>err; then
    fail "ddpgen $order: $(cat err)"
  elif [[ -s out ]] || ! grep -q '^ddpgen: job.yaml: valid for profile "local"$' err; then
    fail "ddpgen $order: stdout $(wc -c <out) bytes, stderr: $(cat err)"
  fi
done
if "$ddpgen" --profile local --set nodes=99 validate job.yaml >out 2>err; then
  fail "validate ignored a --set before the subcommand"
fi

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
expect_usage_error 'two job files \("job.yaml" and "other.yaml"\)' job.yaml validate --profile local other.yaml
expect_usage_error '^ddpgen: error: --follow excludes --rank' logs 12 --rank 1 --follow
expect_usage_error '^ddpgen: error: --rank: Value -1 not in range 0 to 1000000' logs 12 --rank -1

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

# Replacing a file keeps its mode (a script the user made executable stays executable).
chmod 0750 dest/job.sbatch
"$ddpgen" --profile local job.yaml -o dest/job.sbatch
mode=$(stat -c %a dest/job.sbatch)
[[ $mode == 750 ]] || fail "-o over a 0750 file gave mode $mode"

# A device or a pipe at the target, directly or through a symlink (as /dev/stdout is one), is
# written into: it is never replaced by a regular file, and its write errors are reported.
mkdir special
ln -s /dev/full special/full.sbatch
status=0
"$ddpgen" --profile local job.yaml -o special/full.sbatch 2>err || status=$?
[[ $status -eq 1 ]] && grep -q 'full.sbatch: cannot write the script: No space left on device' err ||
  fail "-o to a link to /dev/full: status $status, $(cat err)"
[[ -L special/full.sbatch && -c /dev/full ]] || fail "-o replaced the link to /dev/full"
mkfifo special/pipe
timeout 20 cat special/pipe >from-pipe &  # bounded: a replaced pipe has no writer
reader=$!
"$ddpgen" --profile local job.yaml --set nodes=3 -o special/pipe 2>err || fail "-o to a pipe: $(cat err)"
wait "$reader" || fail "nothing was written into the pipe"
[[ -p special/pipe ]] || fail "-o replaced a pipe with a file"
cmp -s from-pipe reference.sbatch || fail "-o to a pipe: the reader got a different script"
[[ $(ls -A special | tr '\n' ' ') == "full.sbatch pipe " ]] || fail "left files: $(ls -A special)"

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

# A job file that is not a regular file: refused at once, never read without bound (/dev/zero)
# nor waited on (a FIFO nobody writes).
mkfifo job.fifo
for input in /dev/zero job.fifo; do
  status=0
  timeout 20 "$ddpgen" --profile local "$input" >out 2>err || status=$?
  if [[ $status -eq 124 ]]; then
    fail "job file $input: still reading after 20 s"
  elif [[ $status -eq 0 || -s out ]] ||
    [[ $(cat err) != "ddpgen: error: $input: cannot read: not a regular file (a pipe, a device or a socket); give the path of a file" ]]; then
    fail "job file $input: status $status, stderr: $(cat err)"
  fi
done
rm job.fifo

((fails == 0)) && echo "cli: all checks passed"
exit $((fails > 0))
