#!/bin/bash
# Per-task setup when the --ddp plugin is not installed: what the plugin would export, computed
# in each task. ddpgen puts this file, single-quoted, into the script; each task of the
# training step runs it with bash -c, followed by code that execs the command ("$@"), and with
#   ddpgen-task MODE NPROC PORT_FIRST PORT_SIZE COMMAND...
# as the arguments of bash -c ($0, $1, ...).
# MODE is tasks (one task per process: RANK, LOCAL_RANK, WORLD_SIZE) or torchrun (one launcher
# per node: NNODES, NODE_RANK and the PET_* defaults of torchrun); NPROC is the processes per node.
# It runs in the task, not in the batch shell: $SLURM_PROCID and the other per-task variables
# differ per task (accelerate#2816).
#   MASTER_ADDR: the first host of the node list of this step, read from the list itself: not with
#     scontrol, which without a slurm.conf (containers, configless Slurm) waits and then prints
#     nothing. A list that gives no plain host name stops the task with a message.
#   MASTER_PORT: $DDP_MASTER_PORT if set, else the first port Slurm reserved (srun --resv-ports),
#     else PORT_FIRST + (job id + 8 x step id) mod PORT_SIZE: the same on every node, different
#     for concurrent steps of one job, and below the Linux ephemeral port range.
#   RANK: the tasks of the nodes before this one in the node list ($SLURM_STEP_TASKS_PER_NODE,
#     "2(x3),1"), plus $SLURM_LOCALID, as the --ddp plugin numbers them: RANK 0 is on the first
#     node, MASTER_ADDR, whatever order Slurm numbered its tasks in ($SLURM_PROCID follows the
#     topology from Slurm 26.05 on a site with a topology plugin, and may put task 0 elsewhere).
#     Under block distribution in node-list order RANK equals $SLURM_PROCID.
# This file holds no single quote: it is written between single quotes.
set -e
ddpgen_mode=$1 ddpgen_nproc=$2 ddpgen_port_first=$3 ddpgen_port_size=$4
shift 4
nodes=${SLURM_STEP_NODELIST:-$SLURM_JOB_NODELIST}
rest=$nodes
MASTER_ADDR=
while [ -n "$rest" ]; do
  case $rest in
    ,*) break ;;
    \[*)
      rest=${rest#?}
      MASTER_ADDR=$MASTER_ADDR${rest%%[],-]*}
      case $rest in *]*) rest=${rest#*]} ;; *) MASTER_ADDR=; break ;; esac ;;
    *)
      part=${rest%%[[,]*}
      MASTER_ADDR=$MASTER_ADDR$part
      rest=${rest#"$part"} ;;
  esac
done
case $MASTER_ADDR in
  "" | *[!A-Za-z0-9._-]*)
    echo "ddpgen: no head node in the node list \"$nodes\" (SLURM_STEP_NODELIST or SLURM_JOB_NODELIST); not training" >&2
    exit 1 ;;
esac
if [ -n "${DDP_MASTER_PORT:-}" ]; then
  MASTER_PORT=$DDP_MASTER_PORT
elif [ -n "${SLURM_STEP_RESV_PORTS:-}" ]; then
  MASTER_PORT=${SLURM_STEP_RESV_PORTS%%[-,]*}
else
  MASTER_PORT=$((ddpgen_port_first + (SLURM_JOB_ID + 8 * ${SLURM_STEP_ID:-0}) % ddpgen_port_size))
fi
NNODES=${SLURM_STEP_NUM_NODES:-$SLURM_NNODES}
NODE_RANK=$SLURM_NODEID
export MASTER_ADDR MASTER_PORT NNODES NODE_RANK GROUP_RANK=$SLURM_NODEID
if [ "$ddpgen_mode" = tasks ]; then
  ddpgen_counts=${SLURM_STEP_TASKS_PER_NODE:-$SLURM_TASKS_PER_NODE} ddpgen_node=0
  RANK=$SLURM_LOCALID
  for ddpgen_entry in ${ddpgen_counts//,/ }; do
    ddpgen_count=${ddpgen_entry%%"(x"*} ddpgen_times=1
    case $ddpgen_entry in
      *"(x"*")") ddpgen_times=${ddpgen_entry#*"(x"} ddpgen_times=${ddpgen_times%")"} ;;
    esac
    case $ddpgen_count,$ddpgen_times in ,* | *, | *[!0-9,]*) RANK=; break ;; esac
    if [ $((ddpgen_node + ddpgen_times)) -gt "$SLURM_NODEID" ]; then
      RANK=$((RANK + ddpgen_count * (SLURM_NODEID - ddpgen_node))) ddpgen_node=$((SLURM_NODEID + 1))
      break
    fi
    RANK=$((RANK + ddpgen_count * ddpgen_times)) ddpgen_node=$((ddpgen_node + ddpgen_times))
  done
  if [ -z "$RANK" ] || [ "$ddpgen_node" -le "$SLURM_NODEID" ]; then
    echo "ddpgen: cannot number the ranks by node from SLURM_STEP_TASKS_PER_NODE=\"$ddpgen_counts\" and SLURM_NODEID=$SLURM_NODEID; not training" >&2
    exit 1
  fi
  export WORLD_SIZE=${SLURM_STEP_NUM_TASKS:-$SLURM_NTASKS} RANK
  export LOCAL_RANK=$SLURM_LOCALID LOCAL_WORLD_SIZE=$ddpgen_nproc
else
  export NPROC_PER_NODE=$ddpgen_nproc WORLD_SIZE=$((NNODES * ddpgen_nproc))
  export PET_NNODES=$NNODES PET_NODE_RANK=$NODE_RANK PET_NPROC_PER_NODE=$NPROC_PER_NODE
  export PET_MASTER_ADDR=$MASTER_ADDR PET_MASTER_PORT=$MASTER_PORT
fi
unset ddpgen_mode ddpgen_nproc ddpgen_port_first ddpgen_port_size nodes rest part ddpgen_counts \
  ddpgen_node ddpgen_entry ddpgen_count ddpgen_times
