#!/bin/bash
# Process test of the values a generated script reads when it runs: environment values never
# reach bash arithmetic as code, launcher none's hostfile is never a name another user can
# plant, a failing pre: line says so, sbatch --export=NONE does not reach the training step,
# and an accelerate config of one process per node is refused. Renders golden cases, then
# EXECUTES the scripts with logging stubs on a PATH of their own and hostile environments.
# Usage: runtime-values.sh DDPGEN
set -euo pipefail
ddpgen=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/run" "$work/tmp"
for tool in bash mkdir head touch rm cat mktemp printf sed; do
  if command -v "$tool" > /dev/null && [[ $(type -t "$tool") == file ]]; then
    ln -s "$(command -v "$tool")" "$work/bin/$tool"
  fi
done
# A stub for each program the scripts start: it logs its name and arguments; scontrol also
# expands the node list; deepspeed logs the hostfile it is given.
cat > "$work/bin/stub" << 'EOF'
#!/bin/bash
{ echo "${0##*/}"; printf '  [%s]\n' "$@"; } >> "$STUB_LOG"
case ${0##*/} in srun | ddp-watch) echo "  SLURM_EXPORT_ENV=${SLURM_EXPORT_ENV-<unset>}" >> "$STUB_LOG" ;; esac
if [[ ${0##*/} == scontrol && $1 == show ]]; then printf 'node01\nnode02\n'; fi
if [[ ${0##*/} == deepspeed ]]; then printf '  hostfile: %s\n' "$(< "$2")" >> "$STUB_LOG"; fi
exit 0
EOF
chmod +x "$work/bin/stub"
for p in srun ddp-check ddp-watch scontrol conda deepspeed python3; do
  ln -s stub "$work/bin/$p"
done
export STUB_LOG=$work/log
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

render() { (cd "$here/$1" && "$ddpgen" --profile "$(< profile)" job.yaml) > "$work/$1.sbatch"; }

# run CASE VAR=VALUE...: runs the rendered case in $work/run with only these variables; the
# status is in $status, stderr in $work/err.
run() {
  local case=$1
  shift
  : > "$STUB_LOG"
  rm -f "$work/run/pwned"
  status=0
  (cd "$work/run" && timeout 20 env -i PATH="$work/bin" HOME="$work/run" STUB_LOG="$STUB_LOG" "$@" \
    "$work/bin/bash" "$work/$case.sbatch") > /dev/null 2> "$work/err" || status=$?
  if [[ -e $work/run/pwned ]]; then fail "$case $*: a value ran as code (pwned exists)"; fi
  if [[ $status -eq 124 ]]; then fail "$case $*: still running after 20 s"; fi
}

expect_refused() {
  local what=$1 message=$2
  if [[ $status -eq 0 ]]; then fail "$what: the script went on (status 0)"; fi
  if ! grep -qF -- "$message" "$work/err"; then
    fail "$what: stderr lacks \"$message\":"
    cat "$work/err" >&2
  fi
  if grep -qE '^(ddp-watch|srun|deepspeed)$' "$STUB_LOG"; then fail "$what: a step started"; fi
}

# The heal preflight adds a margin to DDP_CHECK_TIMEOUT in bash arithmetic.
render local-srun-heal
slurm=(SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='node[01-02]'
       SLURM_SUBMIT_DIR="$work/run")
hostile='a[$(touch pwned)]'
run local-srun-heal "${slurm[@]}" DDP_CHECK_TIMEOUT="$hostile"
expect_refused "DDP_CHECK_TIMEOUT=$hostile" 'DDP_CHECK_TIMEOUT is "a[$(touch pwned)]", not a whole number of seconds; preflight not started'
run local-srun-heal "${slurm[@]}" DDP_CHECK_TIMEOUT=2m
expect_refused "DDP_CHECK_TIMEOUT=2m" 'DDP_CHECK_TIMEOUT is "2m", not a whole number of seconds'
run local-srun-heal "${slurm[@]}" DDP_CHECK_TIMEOUT=90
if ! grep -qxF '  [--timeout=120]' "$STUB_LOG" || ! grep -qxF '  [--timeout=90]' "$STUB_LOG"; then
  fail "DDP_CHECK_TIMEOUT=90: ddp-watch --timeout=120 and ddp-check --timeout=90 not both run"
  cat "$STUB_LOG" >&2
fi

# launcher none: Slurm's numbers in arithmetic; the hostfile.
render local-none-hostfile
run local-none-hostfile "${slurm[@]/SLURM_JOB_NUM_NODES=2/SLURM_JOB_NUM_NODES=$hostile}"
expect_refused "SLURM_JOB_NUM_NODES=$hostile" 'is "a[$(touch pwned)]", not a number; not starting'
# Another user's link and FIFO at the name earlier releases used: neither is opened.
echo mine > "$work/victim"
ln -s "$work/victim" "$work/tmp/ddpgen-hostfile.7"
mkfifo "$work/tmp/ddpgen-hostfile.8"
for id in 7 8; do
  run local-none-hostfile "${slurm[@]/SLURM_JOB_ID=7/SLURM_JOB_ID=$id}" TMPDIR="$work/tmp"
  if [[ $status -ne 0 ]]; then fail "launcher none, job $id: status $status: $(< "$work/err")"; fi
  if ! grep -qxF '  hostfile: node01 slots=2' "$STUB_LOG" ||
     ! grep -qxF 'node02 slots=2' "$STUB_LOG"; then
    fail "launcher none, job $id: deepspeed did not get the hostfile:"
    cat "$STUB_LOG" >&2
  fi
done
if [[ $(< "$work/victim") != mine ]]; then fail "the hostfile was written through another user's link"; fi
leftover=$(cd "$work/tmp" && echo ddpgen-hostfile.*)
if [[ $leftover != "ddpgen-hostfile.7 ddpgen-hostfile.8" ]]; then
  fail "the hostfiles were not removed at the end of the job: $leftover"
fi

# A failing pre: line ends the job before training, with a line saying so.
mkdir "$work/pre"
printf 'time: "10"\nscript: train.py\npre: ["true", "false", "echo after"]\n' > "$work/pre/job.yaml"
(cd "$work/pre" && "$ddpgen" --profile local job.yaml) > "$work/pre.sbatch"
run pre
expect_refused "a failing pre: line" 'ddpgen: a pre: line failed (status 1); training not started'

# Submitted with sbatch --export=NONE, the batch shell has SLURM_EXPORT_ENV=NONE, which srun
# would read as its own --export: the step would start without the job's environment.
run local-srun-heal "${slurm[@]}" SLURM_EXPORT_ENV=NONE
if ! grep -qxF '  SLURM_EXPORT_ENV=<unset>' "$STUB_LOG" || grep -q 'SLURM_EXPORT_ENV=NONE' "$STUB_LOG"; then
  fail "sbatch --export=NONE: srun still sees SLURM_EXPORT_ENV=NONE:"
  cat "$STUB_LOG" >&2
fi

# accelerate.config_file with a single-process distributed type (MULTI_CPU, NO) would start one
# process per node, each taking rank 0, and DEEPSPEED on two nodes without the standard launcher
# DeepSpeed's pdsh launcher on each: refused before any step. Others start the step.
mkdir "$work/acc"
printf 'nodes: 2\ntime: "10"\nlauncher: accelerate\nscript: train.py\naccelerate: {config_file: acc.yaml}\n' \
  > "$work/acc/job.yaml"
(cd "$work/acc" && "$ddpgen" --profile local job.yaml) > "$work/acc.sbatch"
for config in 'distributed_type: MULTI_CPU' "distributed_type: 'NO'" '{"distributed_type": "MULTI_CPU", "num_machines": 2}'; do
  printf '%s\n' "$config" > "$work/run/acc.yaml"
  run acc "${slurm[@]}"
  expect_refused "accelerate config $config" 'ddpgen: accelerate.config_file "acc.yaml" has distributed_type'
done
printf 'deepspeed_config:\n  zero_stage: 3\ndistributed_type: DEEPSPEED\n' > "$work/run/acc.yaml"
run acc "${slurm[@]}"
expect_refused "accelerate config DEEPSPEED without a launcher" 'with deepspeed_multinode_launcher pdsh'
for config in 'distributed_type: MULTI_GPU' \
  $'deepspeed_config:\n  deepspeed_multinode_launcher: standard\ndistributed_type: DEEPSPEED'; do
  printf 'compute_environment: LOCAL_MACHINE\n%s\n' "$config" > "$work/run/acc.yaml"
  run acc "${slurm[@]}"
  if [[ $status -ne 0 ]] || ! grep -qxF srun "$STUB_LOG"; then
    fail "accelerate config $config: the step did not start (status $status): $(< "$work/err")"
  fi
done
rm "$work/run/acc.yaml"

if [[ $failures -gt 0 ]]; then exit 1; fi
echo "runtime values: all checks passed"
