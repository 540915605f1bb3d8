#!/usr/bin/env bats
# End to end on the embedded cluster: a job file from contrib/examples is rendered by ddpgen,
# submitted with the real sbatch, and trains the autoencoder with DDP on 3 nodes x 2 ranks
# through srun --ddp. Checks values from the training log and the checkpoint: 6 ranks, the
# loss going down, identical weights on every rank, a complete checkpoint. Then preemption,
# by `scontrol requeue` and by the warning signal the script traps, must resume from the last
# checkpoint without redoing an epoch, in one append-mode log; and a checkpoint must never be
# half-written, whatever moment its writer is killed.
#
# Needs: the cluster (cluster.sh up --plugin ...spank_ddp.so), Debian's python3-torch, and
# ddpgen ($DDPGEN, else build/gen/ddpgen, else ddpgen on PATH). Missing ones skip, visibly.

bats_require_minimum_version 1.5.0
load lib

k_examples=$REPO/contrib/examples
# The jobs run Debian's python3 and torchrun (python3-torch): a python3 earlier on the caller's
# PATH (pyenv, a virtualenv) would be another interpreter, without torch.
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup() {
  # Every node sees the same /tmp, so the job's log and checkpoints can live here.
  work=$(mktemp -d /tmp/ddp-e2e.XXXXXX)
}

teardown() {
  rm -rf "$work"
}

need_all() {
  skip_unless_cluster
  need_torch
  need_ddpgen
}

# render JOB_FILE ARGS_YAML: renders contrib/examples/JOB_FILE into $work/job.slurm, with the
# program, its checkpoints and its log moved to absolute paths under $work.
render() {
  "$DDPGEN" --profile local "$k_examples/$1" -o "$work/job.slurm" \
    --set "script=$k_examples/autoencoder.py" --set "args=$2" \
    --set "checkpoint.dir=$work/ckpt" --set "output=$work/job-%j.out"
}

# submit [ARGS...]: submits $work/job.slurm from $work, with ARGS as the batch script's own
# arguments; prints the job id.
submit() {
  (cd "$work" && cl env PATH="$k_job_path" sbatch --parsable job.slurm "$@")
}

# wait_done JOBID TIMEOUT: wait_job, and the job's log on stderr when it did not complete.
wait_done() {
  wait_job "$1" "$2" && return 0
  echo "--- log of job $1:" >&2
  cat "$work/job-$1.out" >&2 || true
  return 1
}

# The job's log with torchrun's "[defaultN]:" worker prefixes removed.
log_of() {
  sed -E 's/^\[default[0-9]+\]://' "$work/job-$1.out"
}

# wait_log JOBID REGEX [TIMEOUT]: waits until a line of the job's log matches.
wait_log() {
  local deadline=$((SECONDS + ${3:-90}))
  until [[ -f $work/job-$1.out ]] && log_of "$1" | grep -Eq -- "$2"; do
    if ((SECONDS >= deadline)); then
      echo "no line matching '$2' in job $1's log after ${3:-90}s; state $(job_state "$1")" >&2
      [[ -f $work/job-$1.out ]] && cat "$work/job-$1.out" >&2
      return 1
    fi
    sleep 0.5
  done
}

# Epoch numbers in the order their lines appear, one per line; a line that does not say
# world 6 gives "world=N" instead, which no expected sequence contains.
epochs_in() {
  awk '/^epoch [0-9]+\/[0-9]+ loss / { split($2, e, "/"); print ($6 == 6 ? e[1] : "world=" $6) }'
}

# Loss of the epoch lines, in order.
losses_in() {
  awk '/^epoch [0-9]+\/[0-9]+ loss / { print $4 }'
}

# check_checkpoint EPOCHS: the checkpoint loads, holds EPOCHS finished epochs and 6 ranks, and
# its loss history equals the log's (as printed, 6 decimals).
check_checkpoint() {
  local ckpt=$work/ckpt/autoencoder.pt
  [ -f "$ckpt" ]
  run /usr/bin/python3 -c '
import sys, torch
s = torch.load(sys.argv[1], map_location="cpu")
print(s["epoch"], s["world_size"], " ".join(f"{x:.6f}" for x in s["losses"]))' "$ckpt"
  echo "checkpoint: $output"
  [ "$status" -eq 0 ]
  [ "$output" = "$1 6 $(log_of "$2" | losses_in | tr '\n' ' ' | sed 's/ $//')" ]
}

# check_trained JOBID EPOCHS: the log of a job that ran once, start to finish.
check_trained() {
  local id=$1 epochs=$2 log
  log=$(log_of "$id")
  echo "$log"
  [ "$(grep -c '^start world 6 backend gloo device cpu ' <<<"$log")" -eq 1 ]
  grep -q "^ddpgen: job $id, restart 0$" <<<"$log"
  [ "$(grep -c '^resumed from' <<<"$log")" -eq 0 ]
  # Every epoch exactly once, in order, each over 6 ranks.
  [ "$(epochs_in <<<"$log" | tr '\n' ' ')" = "$(seq -s ' ' 1 "$epochs") " ]
  check_loss_drops "$log"
  [ "$(grep -c "^weights identical on 6 ranks$" <<<"$log")" -eq 1 ]
  check_checkpoint "$epochs" "$id"
}

# The last epoch's loss is at least 10 % below the first's.
check_loss_drops() {
  local first last
  first=$(losses_in <<<"$1" | head -n 1)
  last=$(losses_in <<<"$1" | tail -n 1)
  echo "loss: first $first, last $last"
  awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 0 && l < 0.9 * f) }'
}

# check_resumed JOBID EPOCHS AFTER: the log of a job preempted once after epoch AFTER was
# printed: two runs (restart 0 then 1) in one file; the second resumes from the checkpoint
# (epoch K >= AFTER) and prints only epochs K+1..EPOCHS; no epoch is printed twice; the first
# run never finished; the checkpoint holds all epochs.
check_resumed() {
  local id=$1 epochs=$2 after=$3 log first second resumed
  log=$(log_of "$id")
  echo "$log"
  [ "$(grep -c "^ddpgen: job $id, restart 0$" <<<"$log")" -eq 1 ]
  [ "$(grep -c "^ddpgen: job $id, restart 1$" <<<"$log")" -eq 1 ]
  # Everything before the second run's first line belongs to the first run.
  first=$(sed -n "1,/^ddpgen: job $id, restart 1$/p" <<<"$log")
  second=$(sed -n "/^ddpgen: job $id, restart 1$/,\$p" <<<"$log")
  grep -q '^start world 6 .* restart 0$' <<<"$first"
  grep -q '^start world 6 .* restart 1$' <<<"$second"
  [ "$(grep -c '^weights identical' <<<"$first")" -eq 0 ]
  [ "$(grep -c '^resumed from' <<<"$first")" -eq 0 ]
  # "batch N" when the job was stopped by the requeue notice, inside an epoch.
  [ "$(grep -Ec '^resumed from epoch [0-9]+( batch [0-9]+)?$' <<<"$second")" -eq 1 ]
  resumed=$(sed -En 's/^resumed from epoch ([0-9]+)( batch [0-9]+)?$/\1/p' <<<"$second")
  local run1 run2 last1
  run1=$(epochs_in <<<"$first" | tr '\n' ' ')
  run2=$(epochs_in <<<"$second" | tr '\n' ' ')
  echo "first run epochs: $run1; resumed from $resumed; second run epochs: $run2"
  last1=$(epochs_in <<<"$first" | tail -n 1)
  # The first run printed 1..last1 (at least AFTER) and was stopped before the end.
  [ "$run1" = "$(seq -s ' ' 1 "$last1") " ]
  ((last1 >= after && last1 < epochs))
  # The checkpoint it left holds every printed epoch (a line is printed after its save), and
  # at most one more (saved, then stopped before the line).
  ((resumed == last1 || resumed == last1 + 1))
  [ "$run2" = "$(seq -s ' ' $((resumed + 1)) "$epochs") " ]
  check_loss_drops "$log"
  [ "$(grep -c "^weights identical on 6 ranks$" <<<"$second")" -eq 1 ]
  [ "$(grep -c "^weights identical" <<<"$log")" -eq 1 ]
  [ "$(cl scontrol show job -o "$id" | grep -o 'Restarts=[0-9]*')" = Restarts=1 ]
  # The checkpoint's loss history: the first run's epochs up to K, then the second run's.
  check_checkpoint_epochs "$epochs"
}

check_checkpoint_epochs() {
  run /usr/bin/python3 -c '
import sys, torch
s = torch.load(sys.argv[1], map_location="cpu")
print(s["epoch"], s["world_size"], len(s["losses"]))' "$work/ckpt/autoencoder.pt"
  echo "checkpoint: $output"
  [ "$status" -eq 0 ]
  [ "$output" = "$1 6 $1" ]
}

@test "srun launcher: ddpgen + sbatch train the autoencoder on 3 nodes x 2 ranks" {
  need_all
  render autoencoder-srun.yaml '[--epochs, "5"]'
  grep -q '^srun --ddp --ntasks-per-node=2 ' "$work/job.slurm"
  id=$(submit)
  wait_done "$id" 150
  check_trained "$id" 5
}

@test "torchrun launcher: ddpgen + sbatch train the autoencoder on 3 nodes x 2 workers; sbatch's script arguments reach it" {
  need_all
  render autoencoder-torchrun.yaml '[--epochs, "3"]'
  grep -q '^srun --ddp=torchrun --ntasks-per-node=1 ' "$work/job.slurm"
  grep -q '^  torchrun --nproc_per_node=2 ' "$work/job.slurm"
  # The batch script's own arguments follow the job file's: the last --epochs wins.
  id=$(submit --epochs 5)
  wait_done "$id" 150
  check_trained "$id" 5
}

@test "scontrol requeue mid-training: the job comes back, resumes from its checkpoint, completes" {
  slurm_side_covered_by "requeue.bats' job-array and max_restarts cases (a requeue of a running job, the step it ends, the restart count) and \"srun launcher\" here (the training step)"
  need_all
  render autoencoder-srun.yaml '[--epochs, "6", --epoch-sleep, "2"]'
  id=$(submit)
  wait_log "$id" '^epoch 2/6 ' 120
  [ "$(job_state "$id")" = RUNNING ]
  cl scontrol requeue "$id"
  wait_done "$id" 180
  check_resumed "$id" 6 2
  # Requeued by scontrol, not by the script's trap.
  [ "$(grep -c 'requeueing job' "$work/job-$id.out")" -eq 0 ]
}

@test "warning signal (SIGUSR1 to the batch shell): the script's trap requeues, the job resumes" {
  slurm_side_covered_by "requeue.bats' job-array and max_restarts cases (SIGUSR1 to the batch shell only, the trap's requeue, the restart count) and \"torchrun launcher\" here (the training step)"
  need_all
  render autoencoder-torchrun.yaml '[--epochs, "6", --epoch-sleep, "2"]'
  grep -q '^#SBATCH --signal=B:USR1@120$' "$work/job.slurm"
  id=$(submit)
  wait_log "$id" '^epoch 2/6 ' 120
  [ "$(job_state "$id")" = RUNNING ]
  # What Slurm does signal_time seconds before the limit (--signal=B:USR1): SIGUSR1 to the
  # batch shell only, not to the training processes.
  cl scancel --batch --signal=USR1 "$id"
  wait_done "$id" 180
  [ "$(grep -c "^ddpgen: SIGUSR1: requeueing job $id$" "$work/job-$id.out")" -eq 1 ]
  check_resumed "$id" 6 2
}

# Kills a process that writes checkpoints in a loop at random moments, TRIALS times, and
# after each kill loads what the checkpoint path holds. MODE atomic uses autoencoder.py's
# save_atomic; MODE naive writes the path in place (torch.save(state, path)), the control
# that shows the check sees half-written files. Prints
# "MODE trials N corrupt C midsave M": C loads failed or held a mix of two saves; M kills left
# a temporary file behind (the kill landed inside save_atomic).
kill_writer() {
  /usr/bin/python3 - "$k_examples" "$1" "$2" "$work" <<'EOF'
import os, random, signal, sys, time
sys.path.insert(0, sys.argv[1])
import torch
torch.set_num_threads(1)
import autoencoder

mode, trials, directory = sys.argv[2], int(sys.argv[3]), sys.argv[4]
path = os.path.join(directory, autoencoder.k_checkpoint_name)
n = 1_000_000  # 4 MB a save

# Made once, so that the writer does nothing but save.
states = [{"epoch": i, "w": torch.full((n,), float(i))} for i in (1, 2, 3)]

def writer():
    for i in range(10**9):
        state = states[i % 3]
        if mode == "atomic":
            autoencoder.save_atomic(state, path)
        else:
            torch.save(state, path)

random.seed(4)
corrupt = midsave = 0
for _ in range(trials):
    if os.path.exists(path):
        os.unlink(path)
    pid = os.fork()
    if pid == 0:
        try:
            writer()
        finally:
            os._exit(0)
    time.sleep(random.uniform(0.02, 0.15))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    temporaries = [f for f in os.listdir(directory) if f.endswith(".tmp")]
    midsave += bool(temporaries)
    autoencoder.remove_stale_temporaries(path)
    if os.listdir(directory) not in ([], [autoencoder.k_checkpoint_name]):
        sys.exit(f"left behind: {os.listdir(directory)}")
    if not os.path.exists(path):
        continue  # killed before the first save finished: no checkpoint, which is fine
    try:
        s = torch.load(path)
        ok = s["epoch"] >= 1 and torch.equal(s["w"], torch.full((n,), float(s["epoch"])))
    except Exception:
        ok = False
    corrupt += not ok
print(f"{mode} trials {trials} corrupt {corrupt} midsave {midsave}")
EOF
}

@test "a checkpoint is never half-written: kill -9 of the writer at random moments" {
  only_on_this_machines_release
  need_torch
  run kill_writer atomic 30
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output =~ ^atomic\ trials\ 30\ corrupt\ 0\ midsave\ ([0-9]+)$ ]]
  # Most kills landed inside a save; none of them left a bad checkpoint.
  ((BASH_REMATCH[1] >= 10))
  # The control: writing the file in place leaves a half-written checkpoint behind most kills.
  run kill_writer naive 30
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output =~ ^naive\ trials\ 30\ corrupt\ ([0-9]+)\ midsave\ 0$ ]]
  ((BASH_REMATCH[1] >= 10))
}

# Trains one process (world 1, gloo on loopback) 4 epochs straight, and 2 epochs then a
# resumed run to 4, in the same Python; prints the resumed run's log, then whether the two
# checkpoints' loss histories and weights are equal.
straight_and_resumed() {
  /usr/bin/python3 - "$k_examples" "$work" <<'EOF'
import contextlib, io, os, sys
sys.path.insert(0, sys.argv[1])
import torch
import autoencoder

work = sys.argv[2]
os.environ.update(MASTER_ADDR="127.0.0.1", WORLD_SIZE="1", RANK="0", LOCAL_RANK="0")
for name in ("DDP_CHECKPOINT_DIR", "SLURM_RESTART_COUNT"):
    os.environ.pop(name, None)
port = 29500 + os.getpid() % 1000

def train(epochs, directory):
    global port
    port += 1  # a fresh rendezvous port for each run
    os.environ["MASTER_PORT"] = str(port)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = autoencoder.main(["--epochs", str(epochs), "--samples", "256",
                                   "--checkpoint-dir", os.path.join(work, directory)])
    if status != 0:
        sys.exit(out.getvalue())
    return out.getvalue()

train(4, "straight")
train(2, "resumed")
print(train(4, "resumed"), end="")
a = torch.load(os.path.join(work, "straight", "autoencoder.pt"))
b = torch.load(os.path.join(work, "resumed", "autoencoder.pt"))
print("losses", "same" if a["losses"] == b["losses"] else f"differ {a['losses']} {b['losses']}")
same = all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
print("weights", "same" if same else "differ")
EOF
}

@test "a resumed run continues exactly: same losses and weights as one without a stop" {
  only_on_this_machines_release
  need_torch
  run straight_and_resumed
  echo "$output"
  [ "$status" -eq 0 ]
  # Only epochs 3 and 4 ran after the resume; model, optimizer state and data order were
  # restored, so the result is bit for bit the uninterrupted one.
  [ "$(grep -c '^resumed from epoch 2$' <<<"$output")" -eq 1 ]
  [ "$(grep -oE '^epoch [0-9]+/4' <<<"$output" | tr '\n' ' ')" = "epoch 3/4 epoch 4/4 " ]
  [ "$(tail -n 2 <<<"$output" | tr '\n' ' ')" = "losses same weights same " ]
}

@test "launcher none with env, pre and post: one program with head, port, hostfile; post sees its status" {
  need_all
  # The program stands in for a launcher that starts its own workers (DeepSpeed's, mpirun): it
  # prints what the script exported for it and fails with 3, which post: must see and the job
  # must end with. ${SLURM_JOB_ID} in args expands when the job runs; $MASTER_ADDR inside the
  # bash -c text is the program's own business and arrives literally.
  cat >"$work/none.yaml" <<'YAML'
name: none-e2e
nodes: 3
procs_per_node: 2
time: "00:05:00"
launcher: none
script: /bin/bash
args:
  - -c
  - 'echo "run $1 addr=$MASTER_ADDR port=$MASTER_PORT hosts=$DDP_HOSTS world=$WORLD_SIZE"; cat "$DDP_HOSTFILE"; exit 3'
  - none
  - "${SLURM_JOB_ID}"
env:
  MY_HOSTFILE: "${DDP_HOSTFILE}"
pre: 'echo "pre: job $SLURM_JOB_ID hostfile $MY_HOSTFILE $(wc -l < "$MY_HOSTFILE")"'
post: |
  echo "post: status $DDP_TRAIN_STATUS"
YAML
  "$DDPGEN" --profile local "$work/none.yaml" -o "$work/job.slurm" --set "output=$work/job-%j.out"
  local id state
  id=$(submit)
  state=$(wait_job_end "$id" 120)
  cat "$work/job-$id.out" >&2
  [ "$state" = FAILED ]
  cl scontrol show job -o "$id" | grep -q 'ExitCode=3:0'
  # An env value may name the hostfile: the script writes it before the env and pre: lines,
  # under a fresh name of mktemp's (never one another user could predict), and removes it when
  # the job ends.
  local hostfile
  hostfile=$(sed -n "s/^pre: job $id hostfile \(.*\) 3\$/\1/p" "$work/job-$id.out")
  [[ $hostfile =~ /ddpgen-hostfile\.[A-Za-z0-9]{10}$ ]]
  [ ! -e "$hostfile" ]
  grep -Eqx "run $id addr=node01 port=(2[0-9]{4}|30[0-9]{3}) hosts=node01,node02,node03 world=6" \
    "$work/job-$id.out"
  [ "$(grep -c -E '^node0[1-3] slots=2$' "$work/job-$id.out")" -eq 3 ]
  grep -qx "post: status 3" "$work/job-$id.out"
}
