// The DDP environment of one task, composed from plain facts about the step and the task.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libddp/core/envfile.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/core/port.hpp"
#include "libddp/util/result.hpp"

namespace ddp {

// tasks: one rank per Slurm task; torchrun: one torchrun launcher per node.
enum class Mode { tasks, torchrun };

// Parses a --ddp value; an empty value means `default_mode`. The error text names --ddp and
// lists the valid modes: "--ddp=foo: unknown mode (valid: tasks, torchrun)".
Result<Mode> parse_mode(std::string_view value, Mode default_mode = Mode::tasks);
// "tasks" or "torchrun".
std::string_view mode_name(Mode mode);

// What every node of the step agrees on, computed once per node.
struct StepPlan {
  Mode mode = Mode::tasks;
  std::string master_addr;
  std::uint16_t master_port = 0;
  PortSource port_source = PortSource::derived;  // for `srun -v`
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::uint32_t nnodes = 0;     // nodes in the step
  std::uint32_t ntasks = 0;     // tasks in the step
  std::uint32_t node_rank = 0;  // this node's index in the step
  // The RANK of this node's first task (LOCAL_RANK 0): the tasks of the nodes listed before it
  // in SLURM_STEP_NODELIST, so that RANK 0 is on the step's first node (the one MASTER_ADDR
  // names) under any order Slurm numbers the tasks in (topology, cyclic, arbitrary). Unset when
  // Slurm gives no SLURM_STEP_TASKS_PER_NODE: RANK is then Slurm's task id, SLURM_PROCID.
  std::optional<std::uint32_t> first_rank;
  std::uint32_t local_ntasks = 0;    // tasks of the step on this node
  std::uint32_t most_ntasks = 0;     // tasks on the step's busiest node (local_ntasks if unknown)
  std::uint32_t nproc_per_node = 1;  // torchrun mode: workers per node
};

// Raw inputs for one node, as Slurm gives them (strings where Slurm gives strings).
struct NodeInputs {
  Mode mode = Mode::tasks;
  std::string_view step_nodelist;   // SLURM_STEP_NODELIST, as text for messages
  std::string_view tasks_per_node;  // SLURM_STEP_TASKS_PER_NODE
  std::uint32_t node_id = 0;        // S_JOB_NODEID
  std::uint32_t ntasks = 0;         // S_JOB_TOTAL_TASK_COUNT
  std::uint32_t local_ntasks = 0;   // S_JOB_LOCAL_TASK_COUNT
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::optional<std::string_view> user_port;       // DDP_MASTER_PORT
  std::optional<std::string_view> reserved_ports;  // SLURM_STEP_RESV_PORTS
  std::optional<std::string_view> nproc_override;  // DDP_NPROC_PER_NODE
  std::optional<std::string_view> gpus_on_node;    // SLURM_GPUS_ON_NODE
  std::optional<std::string_view> cuda_visible;    // CUDA_VISIBLE_DEVICES
  std::optional<std::uint32_t> gpus_detected;      // GPUs the node's driver lists, if looked up
};

// Validates the inputs and computes the step plan. `nodes` is SLURM_STEP_NODELIST, parsed once
// by the caller; `master_addr` the already-chosen address (or name) of its first node. Errors
// name the Slurm variable at fault; torchrun mode rejects steps with more than one task on a node.
Result<StepPlan> plan_step(const NodeInputs& in, const Hostlist& nodes,
                           std::string_view master_addr, PortRange port_window);

// Number of devices a CUDA_VISIBLE_DEVICES value lists; 0 for "", "NoDevFiles" and unset.
std::uint32_t count_devices(std::optional<std::string_view> cuda_visible);

// Facts of one task.
struct TaskInputs {
  std::uint32_t global_id = 0;  // S_TASK_GLOBAL_ID
  std::uint32_t local_id = 0;   // S_TASK_ID
};

// The RANK of one task in tasks mode: plan.first_rank + LOCAL_RANK, or Slurm's task id when
// the plan has no first_rank. Equal to SLURM_PROCID when Slurm numbers the tasks block by block
// in node-list order (block distribution without a topology order).
std::uint32_t task_rank(const StepPlan& plan, const TaskInputs& task);

// The variables to export for one task, in a fixed order. tasks mode: MASTER_ADDR,
// MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK, NNODES.
// torchrun mode: no RANK/LOCAL_RANK (torchrun sets them), plus NPROC_PER_NODE and PET_*.
EnvList task_environment(const StepPlan& plan, const TaskInputs& task);

}  // namespace ddp
