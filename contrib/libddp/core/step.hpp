// Decisions that belong to one --ddp step, made from plain facts: the refusals (layout, RANK 0
// placement, port window, GPU binding), the address every node exports as MASTER_ADDR, the
// rank-0 node's checks, and the lines `srun -v` shows. The plugin gathers Slurm's and the
// node's facts, calls these, and applies what they return; nothing here touches Slurm or the OS.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/core/address.hpp"
#include "libddp/core/environment.hpp"
#include "libddp/core/port.hpp"
#include "libddp/util/result.hpp"

namespace ddp {

// port_range must lie below the kernel's ephemeral range (net.ipv4.ip_local_port_range): the
// kernel hands those ports to outgoing connections, so a listener there can find its port taken.
// nullopt (the range could not be read) is accepted.
Result<void> check_port_window(PortRange window, std::optional<PortRange> ephemeral);

// srun's check before launch: torchrun mode starts one launcher per node, so a step with more
// tasks than nodes is refused. The error says what to use instead.
Result<void> check_launcher_layout(Mode mode, std::uint64_t ntasks, std::uint64_t nnodes);

// tasks mode without plan.first_rank (no SLURM_STEP_TASKS_PER_NODE), where RANK is Slurm's task
// id: RANK 0 must then run on the step's first node, the node MASTER_ADDR names. `global_ids`
// are the global task ids Slurm placed on this node. Refused when this node is the first but
// holds no task 0, or holds task 0 but is not the first. A plan with first_rank always passes:
// its RANK 0 is on the first node by construction.
Result<void> check_rank0_placement(const StepPlan& plan, std::span<const std::uint32_t> global_ids);

// The line `srun -v --ddp` shows for a node whose RANKs differ from Slurm's task ids
// (SLURM_PROCID), as under Slurm 26.05's topology order: "ddp: node03: RANK 4-5 for SLURM_PROCID
// 0-1 (...)". nullopt when they are equal. `global_ids` are this node's, by local id.
std::optional<std::string> explain_ranks(std::string_view node, const StepPlan& plan,
                                         std::span<const std::uint32_t> global_ids);

// The address Slurm gives for `node` in SLURM_NODE_ALIASES ("n1:10.0.0.1:n1,n2:[fd00::2]:n2"),
// or nullopt when the node is not listed or the list is malformed.
std::optional<std::string> alias_address(std::string_view aliases, std::string_view node);

// What this node learned about the step's first node (the head).
struct HeadFacts {
  std::string head;         // the head as Slurm names it (first name of SLURM_STEP_NODELIST)
  std::string lookup_name;  // rewrite_host(head, policy): the name resolved or exported
  std::vector<IpAddress> resolved;           // the resolver's answer for lookup_name, any order
  std::optional<std::string> resolve_error;  // why resolution failed; unset when it succeeded
  bool name_unknown = false;                 // the resolver answered "no such name" (not a timeout)
  std::optional<std::string> slurm_address;  // Slurm's own address for the head, if it has one
  std::string slurm_origin;                  // where Slurm said it ("SLURM_NODE_ALIASES", ...)
};

// MASTER_ADDR and where it came from, in words for `srun -v`.
struct HeadAddress {
  std::string value;
  std::string origin;
};

// The MASTER_ADDR every node exports. addr=hostname: the rewritten name. addr=ip: the address
// choose_address() picks among what the name resolved to (a rule that ignores resolver order);
// when the resolver does not know the name and no rewriting applies, Slurm's own address for
// the head (SLURM_NODE_ALIASES, NodeAddr). Errors name the head, the name and the fix.
Result<HeadAddress> decide_head_address(const HeadFacts& facts, const AddressPolicy& policy);

// What the rank-0 node knows about itself.
struct Rank0Facts {
  std::vector<IpAddress> targets;         // MASTER_ADDR's addresses (resolved under hostname)
  std::vector<IpAddress> own;             // this node's addresses, loopback included
  std::optional<std::string> bind_error;  // a test bind of MASTER_PORT on a target failed
};

// On the node of RANK 0: MASTER_ADDR must name one of its own non-loopback addresses
// (check_addr) and MASTER_PORT must be free there (check_port); otherwise every rank would wait
// in init_process_group until PyTorch's timeout.
Result<void> check_rank0_node(const StepPlan& plan, const Rank0Facts& facts, bool check_addr,
                              bool check_port);

// The addresses to test on the rank-0 node: MASTER_ADDR itself under addr=ip; under
// addr=hostname what it resolves to there, loopback left out (other nodes cannot reach it).
Result<std::vector<IpAddress>> rank0_targets(std::string_view master_addr,
                                             std::span<const IpAddress> resolved);

// tasks mode with per-task GPU binding (--gpus-per-task, --gpu-bind=single:1, map_gpu): a task
// that sees fewer GPUs than its node has tasks cannot call torch.cuda.set_device(LOCAL_RANK),
// and NCCL loses peer-to-peer between tasks that cannot see each other's GPU. Judged against
// `most_ntasks`, the task count of the step's busiest node, so that every node of an uneven step
// (2 tasks here, 1 there) refuses alike and no rank is left waiting for the refused ones.
// Refused with the fix unless `keep` (DDP_GPU_BIND=task: the script uses the GPU Slurm bound,
// cuda:0). A task that sees no GPU (CPU-only, NoDevFiles) is never refused.
Result<void> check_gpu_binding(Mode mode, std::optional<std::string_view> task_cuda_visible,
                               std::uint32_t most_ntasks, bool keep);

// True when srun runs with -v or more: SRUN_DEBUG, which srun exports to every step, is its log
// level (3 = info by default, 4 = verbose).
bool srun_verbose(std::optional<std::string_view> srun_debug);

// The line `srun -v --ddp` shows for one node: the address and port chosen and where each came
// from ("ddp: node02: MASTER_ADDR=10.0.0.1 (...), MASTER_PORT=23456 (DDP_MASTER_PORT)").
std::string explain_choice(std::string_view node, const HeadAddress& address, const StepPlan& plan,
                           PortRange window);

}  // namespace ddp
