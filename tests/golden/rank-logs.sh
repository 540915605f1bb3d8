#!/bin/bash
# Process test of the per-rank log files (logs: dir) with one task per process: a task writes
# the file of its RANK, not of its SLURM_PROCID, which Slurm 26.05 numbers in topology order on a
# site with a topology plugin (doc/admins.md, "Sites with a topology plugin"). Renders the srun
# launcher with the plugin and without it, then EXECUTES each script as one task of its training
# step: srun is a stub that drops its options and runs the rest, in the environment Slurm 26.05
# gives task 0 of a 3 x 2 step on such a site, where task 0 runs on node03, the list's last node:
# RANK 4 (with the plugin, the value --ddp exports; without it, the per-task setup's).
# Usage: rank-logs.sh DDPGEN
set -euo pipefail
ddpgen=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
cat > "$work/bin/srun" << 'EOF'
#!/bin/bash
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
exec "$@"
EOF
cat > "$work/bin/python3" << 'EOF'
#!/bin/bash
echo "task $SLURM_PROCID rank ${RANK:-unset} on $SLURMD_NODENAME"
EOF
chmod +x "$work/bin/srun" "$work/bin/python3"
sed 's/^ddp_plugin: true$/ddp_plugin: false/' "$here/../../site-profiles/local.yaml" > "$work/no-plugin.yaml"
printf '%s\n' 'name: rank-logs' 'nodes: 3' 'procs_per_node: 2' 'time: "00:10:00"' 'launcher: srun' \
  'script: train.py' > "$work/job.yaml"
failures=0

# check NAME PROFILE [VAR=VALUE...]: renders with PROFILE, runs the script as task 0 on node03
# with the variables, and expects rank-4.log alone, holding the task's line.
check() {
  local name=$1 profile=$2
  shift 2
  local logs=$work/logs-$name
  "$ddpgen" --profile "$profile" "$work/job.yaml" -o "$work/$name.sbatch" --set "logs.dir=$logs"
  (cd "$work" && env PATH="$work/bin:$PATH" SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_PROCID=0 \
    SLURM_LOCALID=0 SLURM_NODEID=2 SLURMD_NODENAME=node03 SLURM_STEP_NODELIST='node[01-03]' \
    SLURM_STEP_TASKS_PER_NODE='2(x3)' SLURM_STEP_NUM_TASKS=6 SLURM_STEP_NUM_NODES=3 "$@" \
    bash "$work/$name.sbatch") > "$work/$name.out" 2>&1 || {
    echo "FAIL: $name: the script failed:" >&2
    cat "$work/$name.out" >&2
    failures=$((failures + 1))
    return
  }
  # The tee's awk may still be writing when the script returns.
  local tries=0
  until [[ -s $logs/rank-4.log ]] || ((tries++ >= 50)); do sleep 0.1; done
  local files
  files=$(cd "$logs" && ls)
  if [[ $files != rank-4.log || $(< "$logs/rank-4.log") != "task 0 rank 4 on node03" ]]; then
    echo "FAIL: $name: expected rank-4.log alone with \"task 0 rank 4 on node03\"; found: $files" >&2
    head -n 5 "$logs"/* >&2 || true
    failures=$((failures + 1))
    return
  fi
  echo "ok: $name: task 0 on node03 writes rank-4.log"
}

check plugin local RANK=4
check no-plugin "$work/no-plugin.yaml"
exit $((failures > 0))
