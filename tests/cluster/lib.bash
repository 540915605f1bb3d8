# Helpers for the bats tests that run against the embedded cluster (`load lib` in a .bats file).
# The cluster is started by the cluster_up ctest fixture, or by hand: tests/cluster/cluster.sh up
#
#   REPO, CLUSTER                  the checkout's root and tests/cluster/cluster.sh
#   skip_unless_cluster            in setup(): skip with the reason when this machine cannot run
#                                  the cluster; fail when it could but the cluster is not up
#   cl CMD...                      CMD on the login host (cluster.sh run), bounded by $CL_TIMEOUT
#   cl_srun ARGS...                cl srun ARGS...
#   task_env SRUN_ARGS... -- VAR...  one line per task, "PROCID VALUE..." sorted by task id
#   job_state JOBID                the job's state (COMPLETED, RUNNING, ...)
#   wait_job JOBID [TIMEOUT]       wait until the job ends; fails unless it COMPLETED
#   wait_job_end JOBID [TIMEOUT]   wait until the job ends in any state; prints the state
#   need_torch                     skip, saying why, unless Debian's python3 has torch
#   need_ddpgen                    set DDPGEN ($DDPGEN, build/gen/ddpgen, PATH) or skip
#   slurm_layout SRUN_ARGS...      "HOST LOCALID PROCID" per task of a step without --ddp

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER=$REPO/tests/cluster/cluster.sh
# DDP_CLUSTER_ID selects one of several clusters side by side (cluster.sh); SUBNET is its
# 10.77.N prefix, so node0K has address $SUBNET.1K.
export DDP_CLUSTER_ID=${DDP_CLUSTER_ID:-0}
if ((DDP_CLUSTER_ID == 0)); then
  export DDP_CLUSTER_DIR=${DDP_CLUSTER_DIR:-/tmp/ddp-cluster}
else
  export DDP_CLUSTER_DIR=${DDP_CLUSTER_DIR:-/tmp/ddp-cluster-$DDP_CLUSTER_ID}
fi
# shellcheck disable=SC2034  # read by the bats files that load this one
SUBNET=10.77.$DDP_CLUSTER_ID
# Seconds one cluster command may take before it is stopped (a job that can never start would
# otherwise wait for resources until ctest's own timeout, with no hint of why).
: "${CL_TIMEOUT:=120}"

skip_unless_cluster() {
  local why
  if ! why=$("$CLUSTER" check 2>&1); then
    skip "cluster prerequisite missing: $why"
  fi
  if ! "$CLUSTER" status >/dev/null 2>&1; then
    echo "the embedded cluster is not up: start it with $CLUSTER up [--plugin build/spank/spank_ddp.so]" >&2
    return 1
  fi
}

cl() {
  timeout --kill-after=10 "$CL_TIMEOUT" "$CLUSTER" run "$@"
}

cl_srun() {
  cl srun "$@"
}

# Prints "PROCID VALUE..." for every task of `srun SRUN_ARGS`, sorted by task id; VAR "hostname"
# prints the task's host name, an unset variable prints "<unset>". Values must not hold spaces.
task_env() {
  local srun_args=()
  while (($#)) && [[ $1 != -- ]]; do srun_args+=("$1"); shift; done
  (($#)) || { echo "task_env: usage: task_env SRUN_ARGS... -- VAR..." >&2; return 2; }
  shift
  # shellcheck disable=SC2016  # expanded by the task's shell
  cl srun "${srun_args[@]}" bash -c '
    printf %s "$SLURM_PROCID"
    for v in "$@"; do
      if [[ $v == hostname ]]; then printf " %s" "$(hostname)"
      elif [[ -v $v ]]; then printf " %s" "${!v}"
      else printf " <unset>"; fi
    done
    echo' task_env "$@" | sort -n
}

job_state() {
  local line
  line=$(cl scontrol show job -o "$1") || return 1
  [[ $line =~ JobState=([A-Z_]+) ]] && echo "${BASH_REMATCH[1]}"
}

wait_job_end() {
  local id=$1 timeout=${2:-120} state deadline
  deadline=$((SECONDS + timeout))
  while :; do
    state=$(job_state "$id") || state=""
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | \
      BOOT_FAIL | DEADLINE) echo "$state"; return 0 ;;
    esac
    if ((SECONDS >= deadline)); then
      echo "wait_job: job $id still ${state:-unknown} after ${timeout}s" >&2
      cl scontrol show job "$id" >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

wait_job() {
  local state
  state=$(wait_job_end "$@") || return 1
  if [[ $state != COMPLETED ]]; then
    echo "wait_job: job $1 ended $state, not COMPLETED" >&2
    cl scontrol show job "$1" >&2 || true
    return 1
  fi
}

# The ranks that printed a correct result of contrib/examples/allreduce.py in a world of $1
# (master matching $2, any by default), read from stdin: sorted, distinct, space-separated.
# Matched, not counted by line: torchrun's tee can write two workers' lines as one.
allreduce_ranks() {
  grep -oE "rank=[0-9]+ world=$1 local_rank=[0-9]+ host=[^ ]+ master=${2:-[^ ]+} allreduce_sum=15 expected=15" |
    sed -E 's/^rank=([0-9]+) .*/\1/' | sort -nu | paste -sd ' '
}

# How many times a slurmd of the cluster crashed and was started again (cluster.sh
# supervise_slurmd: Slurm 22.05's slurmd now and then corrupts its heap when several steps are
# launched on a node at once, with or without any plugin).
slurmd_crashes() {
  if [[ -e $DDP_CLUSTER_DIR/log/crashes ]]; then wc -l <"$DDP_CLUSTER_DIR/log/crashes"; else echo 0; fi
}

# bats `run "$@"`, and once more when a slurmd crashed meanwhile: a step launched on that node
# then fails for a reason that is Slurm's, so the test asks again of a whole cluster, with the
# same assertions. For tests that launch several steps on a node at once. Said on fd 3.
run_again_after_slurmd_crash() {
  local before
  before=$(slurmd_crashes)
  run "$@"
  if (($(slurmd_crashes) > before)); then
    echo "# $(tail -n 1 "$DDP_CLUSTER_DIR/log/crashes"); running the command again" >&3
    sleep 2   # the restarted slurmd registers with slurmctld
    run "$@"
  fi
}

# Torch where the tasks run: the userland of the cluster's Slurm release (DDP_SLURM_RELEASE, set
# by ctest for a build-slurm-RELEASE/ build), else this machine. An import costs about 2 CPU
# seconds (Debian's torch loads some 300 shared libraries), and the suites ask before most
# tests: the first import that works since the cluster came up leaves a mark in its run
# directory (cleared by `cluster.sh up`), which the later ones take as the answer.
need_torch() {
  local mark=$DDP_CLUSTER_DIR/run/torch-imports-${DDP_SLURM_RELEASE:-host}
  [[ ! -e $mark ]] || return 0
  if [[ -n ${DDP_SLURM_RELEASE:-} ]]; then
    "$REPO/tests/cluster/userland.sh" exec "$DDP_SLURM_RELEASE" /usr/bin/python3 -c 'import torch' \
      2>/dev/null || skip "python3-torch missing in Slurm $DDP_SLURM_RELEASE's userland (tests/cluster/userland.sh)"
  else
    /usr/bin/python3 -c 'import torch' 2>/dev/null ||
      skip "Debian's python3-torch is not installed (bash contrib/install-deps.sh)"
  fi
  if [[ -d ${mark%/*} ]]; then : >"$mark"; fi
}

# For a case that tests/package/installed.sh runs against the installed packages
# (DDP_INSTALLED_RUN=1) and that adds nothing there but time: what it checks of the installed
# files (their paths, the packaged build) other cases of that run check. It skips there, saying
# which; the same case ran against the build tree.
covered_for_the_installed_files_by() {  # CASES
  [[ -z ${DDP_INSTALLED_RUN:-} ]] ||
    skip "against the installed packages: covered by $1, on the same installed files; this case ran against the build tree"
}

# For a test that runs only this machine's python3 and no Slurm command (the example's own
# checkpoint code): on another release's cluster it would repeat, byte for byte, the run of
# this machine's suite, so it skips there, saying so.
only_on_this_machines_release() {
  [[ -z ${DDP_SLURM_RELEASE:-} ]] ||
    skip "runs this machine's python3 without Slurm: the same test on this machine's release covers it"
}

# For a case that meets Slurm only in ways other cases meet it on every release (the same kinds
# of steps, signals, requeues and srun lines), and adds what ddp-watch, ddpgen or the program
# decide: on another release's cluster it runs with DDP_RELEASE_CASES=all, and otherwise skips,
# naming the cases that carry its Slurm side there. Each such case imports torch in 6 to 12
# processes, 3 to 5 CPU seconds each in the newer userlands. Every case runs on this machine's
# release. --unless-topology: the case also runs at a topology site (DDP_CLUSTER_TOPOLOGY), where
# the layout it computes ranks from is the release's own.
slurm_side_covered_by() {  # CASES [--unless-topology]: where the release's run meets Slurm so
  [[ -z ${DDP_SLURM_RELEASE:-} || ${DDP_RELEASE_CASES:-} == all ]] && return 0
  [[ ${2:-} == --unless-topology && -n ${DDP_CLUSTER_TOPOLOGY:-} ]] && return 0
  skip "on Slurm $DDP_SLURM_RELEASE, its Slurm side is covered by $1 (DDP_RELEASE_CASES=all runs it)"
}

need_ddpgen() {
  if [[ -n ${DDPGEN:-} ]]; then
    [[ -x $DDPGEN ]] || skip "DDPGEN=$DDPGEN is not an executable"
  elif [[ -x $REPO/build/gen/ddpgen ]]; then
    DDPGEN=$REPO/build/gen/ddpgen
  elif ! DDPGEN=$(command -v ddpgen); then
    skip "ddpgen not built (cmake --build build) and not on PATH; or set DDPGEN"
  fi
}

# slurm_layout SRUN_ARGS...: "HOST LOCALID PROCID" for each task of a step of that shape without
# --ddp, sorted by host and local id: where Slurm puts its task ids on this cluster (node after
# node in name order; in topology order on a Slurm 26.05 site with a topology plugin), which
# --ddp leaves as they are. RANK, by contrast, follows the node list: the line's place in this
# output, counted from 0 (doc/admins.md, "Sites with a topology plugin").
slurm_layout() {
  # shellcheck disable=SC2016  # expanded by the task's shell
  cl srun "$@" bash -c 'echo "$(hostname) $SLURM_LOCALID $SLURM_PROCID"' | sort -k1,1 -k2,2n
}

# netns NODE: the network namespace of cluster node NODE (cluster.sh's names).
netns() {
  if ((DDP_CLUSTER_ID == 0)); then echo "ddpc-$1"; else echo "ddpc$DDP_CLUSTER_ID-$1"; fi
}

# cluster_restart NODES LOG [ARGS...]: cluster.sh up with NODES nodes, the same Slurm, the plugin
# copied to $BATS_FILE_TMPDIR/spank_ddp.so, and ARGS (--topology tree); without a --topology among
# them, the fixture's (DDP_CLUSTER_TOPOLOGY, set by ctest from the CMake variable of that name),
# so that a suite that restarts the cluster leaves the kind of site it found; --topology= for
# none. Every descriptor above 2 is closed first: the daemons it starts outlive the bats file,
# and bats waits for whoever holds one of its own.
cluster_restart() {
  local nodes=$1 log=$2
  shift 2
  local arg
  for arg in "$@"; do [[ $arg == --topology* ]] && break; done
  if [[ ${arg:-} != --topology* && -n ${DDP_CLUSTER_TOPOLOGY:-} ]]; then
    set -- "$@" --topology "$DDP_CLUSTER_TOPOLOGY"
  fi
  # shellcheck disable=SC2016  # expanded by the inner shell
  bash -c 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; ((fd > 2)) && eval "exec $fd>&-"; done
           exec "$@"' restart "$CLUSTER" up --nodes "$nodes" \
    ${DDP_SLURM_RELEASE:+--slurm "$DDP_SLURM_RELEASE"} --plugin "$BATS_FILE_TMPDIR/spank_ddp.so" \
    "$@" </dev/null >"$log" 2>&1
}

# compare_checkpoints A B: two checkpoints of the example autoencoder, as
# "epochs EA EB losses same|differ weights same|differ" (weights: torch.equal on every tensor).
compare_checkpoints() {
  /usr/bin/python3 -c '
import sys, torch
a, b = (torch.load(p, map_location="cpu") for p in sys.argv[1:])
print("epochs", a["epoch"], b["epoch"], "losses", "same" if a["losses"] == b["losses"] else "differ",
      "weights", "same" if all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"]) else "differ")
' "$1" "$2"
}
