#!/bin/bash
# Injection test: renders CASE_DIR/job.yaml, then EXECUTES the script with stub srun, module,
# scontrol, containers and launchers first on a PATH that holds nothing else but bash, mkdir,
# head, rm and touch. Hostile values try to run "touch pwned"; the test passes when no file
# "pwned" appears and the log of what ran equals CASE_DIR/expected.log exactly (the hostile
# strings arriving as literal arguments). Usage: inject.sh DDPGEN CASE_DIR
# CASE_DIR/show-env names variables the program stub logs; CASE_DIR/no-scontrol drops the
# scontrol stub (the script must then parse the node list itself); CASE_DIR/nodelist sets
# SLURM_STEP_NODELIST (default node[01-02]).
set -euo pipefail
ddpgen=$1 dir=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/run"
for tool in bash mkdir head touch rm; do ln -s "$(command -v "$tool")" "$work/bin/$tool"; done
ln -s "$here/injection/stubs/srun" "$work/bin/srun"
for c in apptainer singularity; do ln -s "$here/injection/stubs/container" "$work/bin/$c"; done
for p in torchrun python3 accelerate fairseq-train; do ln -s "$here/injection/stubs/program" "$work/bin/$p"; done
for l in module sbatch scontrol; do ln -s "$here/injection/stubs/logonly" "$work/bin/$l"; done
if [[ -f $dir/no-scontrol ]]; then rm "$work/bin/scontrol"; fi

(cd "$dir" && "$ddpgen" --profile "$(<profile)" job.yaml > "$work/job.sbatch")
export STUB_LOG=$work/log STUB_SHOW="" STUB_NODELIST="node[01-02]"
if [[ -f $dir/show-env ]]; then STUB_SHOW=$(<"$dir/show-env"); fi
if [[ -f $dir/nodelist ]]; then STUB_NODELIST=$(<"$dir/nodelist"); fi
: > "$STUB_LOG"
(cd "$work/run" && env -i PATH="$work/bin" HOME="$work/run" STUB_LOG="$STUB_LOG" \
   STUB_SHOW="$STUB_SHOW" STUB_NODELIST="$STUB_NODELIST" "$work/bin/bash" "$work/job.sbatch")
if [[ -e $work/run/pwned ]]; then
  echo "INJECTION: a hostile value ran as code (the file pwned exists)" >&2
  exit 1
fi
diff -u "$dir/expected.log" "$STUB_LOG"
