// The DDP environment of one task. plan_step() runs once per node and validates what Slurm
// says about the step; task_environment() runs at every task launch and only formats numbers.
#include "libddp/core/environment.hpp"

#include "libddp/core/hostlist.hpp"
#include "libddp/core/port.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddp {
namespace {

// More workers per node than any machine has GPUs or cores; larger values are typos.
constexpr std::uint32_t k_max_nproc_per_node = 4096;

std::unexpected<Error> prefixed(std::string_view variable, const Error& error) {
  std::string message(variable);
  message += ": ";
  message += error.message;
  return fail(std::move(message));
}

// The name of node `index` for an error message.
std::string node_name(const Hostlist& nodes, std::size_t index) {
  return index < nodes.size() ? nodes.at(index) : "#" + text::decimal(index);
}

std::unexpected<Error> crowded(std::uint64_t tasks, std::string_view where) {
  return fail(torchrun_refusal(tasks, where));
}

// Workers per node in torchrun mode: the user's override, else Slurm's GPU count, else the
// visible CUDA devices, else (CUDA_VISIBLE_DEVICES unset) the GPUs the driver lists, else 1
// (a CPU-only run).
Result<std::uint32_t> nproc_per_node(const NodeInputs& in) {
  if (in.nproc_override && !in.nproc_override->empty()) {
    auto value = text::parse_uint<std::uint32_t>(*in.nproc_override);
    if (!value || *value == 0 || *value > k_max_nproc_per_node)
      return fail("DDP_NPROC_PER_NODE=" + text::quote(*in.nproc_override) +
                  ": expected a positive integer (workers per node), at most 4096");
    return *value;
  }
  if (in.gpus_on_node) {
    auto gpus = text::parse_uint<std::uint32_t>(*in.gpus_on_node);
    if (gpus && *gpus > 0 && *gpus <= k_max_nproc_per_node) return *gpus;
  }
  if (const auto devices = count_devices(in.cuda_visible);
      devices > 0 && devices <= k_max_nproc_per_node)
    return devices;
  // An empty CUDA_VISIBLE_DEVICES hides every GPU on purpose: the driver's list does not count.
  if (!in.cuda_visible && in.gpus_detected && *in.gpus_detected > 0 &&
      *in.gpus_detected <= k_max_nproc_per_node)
    return *in.gpus_detected;
  return 1u;
}

// This node's id and task counts must fit the step Slurm describes.
Result<void> check_counts(const NodeInputs& in, std::size_t nnodes) {
  if (in.node_id >= nnodes)
    return fail("node id " + text::decimal(in.node_id) + " is outside the step's " +
                text::decimal(nnodes) +
                " nodes (SLURM_STEP_NODELIST=" + text::quote(in.step_nodelist) + ")");
  if (in.ntasks == 0 || in.local_ntasks == 0 || in.local_ntasks > in.ntasks)
    return fail("inconsistent task counts: " + text::decimal(in.local_ntasks) + " on this node, " +
                text::decimal(in.ntasks) + " in the step");
  return {};
}

// What the step's layout tells this node beyond its own task count.
struct LayoutFacts {
  std::uint32_t most_ntasks = 0;            // the task count of the step's busiest node
  std::optional<std::uint32_t> first_rank;  // tasks on the nodes listed before this one
};

// SLURM_STEP_TASKS_PER_NODE must agree with the node list and this node's count; torchrun mode
// refuses a node with more than one task (it would start several launchers there). Without the
// list, the busiest node is taken to be this one and the first rank is unknown.
Result<LayoutFacts> check_layout(const NodeInputs& in, const Hostlist& nodes) {
  const std::size_t nnodes = nodes.size();
  if (in.tasks_per_node.empty()) {
    if (in.mode == Mode::torchrun && in.local_ntasks > 1)
      return crowded(in.local_ntasks, "node " + node_name(nodes, in.node_id));
    if (in.mode == Mode::torchrun && in.ntasks > nnodes)
      return crowded(in.ntasks, text::decimal(nnodes) + " nodes");
    return LayoutFacts{in.local_ntasks, std::nullopt};
  }
  auto layout = summarize_tasks_per_node(in.tasks_per_node, in.node_id);
  if (!layout) return prefixed("SLURM_STEP_TASKS_PER_NODE", layout.error());
  const std::string tpn = "SLURM_STEP_TASKS_PER_NODE=" + text::quote(in.tasks_per_node);
  if (layout->nodes != nnodes)
    return fail(tpn + " lists " + text::decimal(layout->nodes) + " nodes but SLURM_STEP_NODELIST=" +
                text::quote(in.step_nodelist) + " has " + text::decimal(nnodes));
  if (layout->on_node != in.local_ntasks)
    return fail(tpn + " puts " + text::decimal(layout->on_node) + " tasks on node id " +
                text::decimal(in.node_id) + ", but this node runs " +
                text::decimal(in.local_ntasks));
  if (layout->tasks != in.ntasks)
    return fail(tpn + " sums to " + text::decimal(layout->tasks) + " tasks, but the step has " +
                text::decimal(in.ntasks));
  if (in.mode == Mode::torchrun && layout->first_crowded < layout->nodes) {
    auto counts = parse_tasks_per_node(in.tasks_per_node);
    const unsigned tasks = counts ? (*counts)[layout->first_crowded] : 0;
    return crowded(tasks, "node " + node_name(nodes, layout->first_crowded));
  }
  // Both at most the step's task count, which fits in 32 bits.
  return LayoutFacts{layout->most, static_cast<std::uint32_t>(layout->before)};
}

}  // namespace

std::uint32_t count_devices(std::optional<std::string_view> cuda_visible) {
  // Slurm sets CUDA_VISIBLE_DEVICES=NoDevFiles when the job has GPUs but the node has no
  // device files for them; that is zero devices, not one named "NoDevFiles".
  if (!cuda_visible || cuda_visible->empty() || *cuda_visible == "NoDevFiles") return 0;
  std::uint32_t devices = 0;
  for (const std::string_view device : text::split(*cuda_visible, ','))
    if (!device.empty()) ++devices;
  return devices;
}

Result<Mode> parse_mode(std::string_view value, Mode default_mode) {
  if (value.empty()) return default_mode;
  if (value == "tasks") return Mode::tasks;
  if (value == "torchrun") return Mode::torchrun;
  return fail("--ddp=" + std::string(value) + ": unknown mode (valid: tasks, torchrun)");
}

std::string_view mode_name(Mode mode) {
  return mode == Mode::torchrun ? "torchrun" : "tasks";
}

Result<StepPlan> plan_step(const NodeInputs& in, const Hostlist& nodes,
                           std::string_view master_addr, PortRange port_window) {
  if (master_addr.empty()) return fail("no master address for the step (empty MASTER_ADDR)");
  if (auto counts = check_counts(in, nodes.size()); !counts) return std::unexpected(counts.error());
  auto layout = check_layout(in, nodes);
  if (!layout) return std::unexpected(std::move(layout.error()));

  PortInputs port_inputs;
  port_inputs.user_override = in.user_port;
  port_inputs.reserved = in.reserved_ports;
  port_inputs.job_id = in.job_id;
  port_inputs.step_id = in.step_id;
  auto port = choose_port(port_inputs, port_window);
  if (!port) return std::unexpected(std::move(port.error()));

  StepPlan plan;
  plan.mode = in.mode;
  plan.master_addr = master_addr;
  plan.master_port = port->port;
  plan.port_source = port->source;
  plan.job_id = in.job_id;
  plan.step_id = in.step_id;
  plan.nnodes = static_cast<std::uint32_t>(nodes.size());  // at most 2^24, see hostlist.cpp
  plan.ntasks = in.ntasks;
  plan.node_rank = in.node_id;
  plan.local_ntasks = in.local_ntasks;
  plan.most_ntasks = layout->most_ntasks;
  plan.first_rank = layout->first_rank;
  if (in.mode == Mode::torchrun) {
    auto nproc = nproc_per_node(in);
    if (!nproc) return std::unexpected(std::move(nproc.error()));
    plan.nproc_per_node = *nproc;
  }
  return plan;
}

std::uint32_t task_rank(const StepPlan& plan, const TaskInputs& task) {
  // Slurm's task ids follow its layout (tasks and step nodes in topology order by default from
  // Slurm 26.05 with a topology plugin), which no node can see beyond its own tasks; the node
  // list and the counts per node are the same on every node, so a rank derived from them puts
  // RANK 0 on the first node everywhere without the nodes talking to each other.
  return plan.first_rank ? *plan.first_rank + task.local_id : task.global_id;
}

EnvList task_environment(const StepPlan& plan, const TaskInputs& task) {
  EnvList env;
  const std::string port = text::decimal(plan.master_port);
  if (plan.mode == Mode::tasks) {
    env.reserve(9);
    env.emplace_back("MASTER_ADDR", plan.master_addr);
    env.emplace_back("MASTER_PORT", port);
    env.emplace_back("WORLD_SIZE", text::decimal(plan.ntasks));
    env.emplace_back("RANK", text::decimal(task_rank(plan, task)));
    env.emplace_back("LOCAL_RANK", text::decimal(task.local_id));
    env.emplace_back("LOCAL_WORLD_SIZE", text::decimal(plan.local_ntasks));
    env.emplace_back("NODE_RANK", text::decimal(plan.node_rank));
    env.emplace_back("GROUP_RANK", text::decimal(plan.node_rank));
    env.emplace_back("NNODES", text::decimal(plan.nnodes));
    return env;
  }
  // torchrun sets RANK and LOCAL_RANK for the workers it starts; exporting them here would
  // hand every worker the launcher's values. It reads its own options from PET_* variables.
  // https://pytorch.org/docs/stable/elastic/run.html
  const std::string nnodes = text::decimal(plan.nnodes);
  const std::string node_rank = text::decimal(plan.node_rank);
  const std::string nproc = text::decimal(plan.nproc_per_node);
  env.reserve(12);
  env.emplace_back("MASTER_ADDR", plan.master_addr);
  env.emplace_back("MASTER_PORT", port);
  env.emplace_back("NNODES", nnodes);
  env.emplace_back("NODE_RANK", node_rank);
  env.emplace_back("GROUP_RANK", node_rank);
  env.emplace_back("NPROC_PER_NODE", nproc);
  env.emplace_back("WORLD_SIZE", text::decimal(std::uint64_t{plan.nnodes} * plan.nproc_per_node));
  env.emplace_back("PET_NNODES", nnodes);
  env.emplace_back("PET_NODE_RANK", node_rank);
  env.emplace_back("PET_NPROC_PER_NODE", nproc);
  env.emplace_back("PET_MASTER_ADDR", plan.master_addr);
  env.emplace_back("PET_MASTER_PORT", port);
  return env;
}

}  // namespace ddp
