// The DDP environment of one task. plan_step() runs once per node and validates what Slurm
// says about the step; task_environment() runs at every task launch and only formats numbers.
#include "environment.hpp"

#include "hostlist.hpp"
#include "port.hpp"
#include "rules.hpp"
#include "text.hpp"

namespace ddp {
namespace {

// More workers per node than any machine has GPUs or cores; larger values are typos.
constexpr std::uint32_t k_max_nproc_per_node = 4096;

std::string number(std::uint64_t value) {
  std::string s;
  text::append_uint(s, value);
  return s;
}

std::unexpected<Error> prefixed(std::string_view variable, const Error& error) {
  std::string message(variable);
  message += ": ";
  message += error.message;
  return fail(std::move(message));
}

// The name of node `index` for an error message; the list is known to be valid.
std::string node_name(std::string_view nodelist, std::size_t index) {
  auto list = Hostlist::parse(nodelist);
  return list && index < list->size() ? list->at(index) : "#" + number(index);
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
  // Slurm sets CUDA_VISIBLE_DEVICES=NoDevFiles when the job has GPUs but the node has no
  // device files for them; that is zero devices, not one named "NoDevFiles".
  if (in.cuda_visible && !in.cuda_visible->empty() && *in.cuda_visible != "NoDevFiles") {
    std::uint32_t devices = 0;
    std::size_t pos = 0;
    while (pos <= in.cuda_visible->size()) {
      auto comma = in.cuda_visible->find(',', pos);
      if (comma == std::string_view::npos) comma = in.cuda_visible->size();
      if (comma > pos) ++devices;
      pos = comma + 1;
    }
    if (devices > 0 && devices <= k_max_nproc_per_node) return devices;
  }
  // An empty CUDA_VISIBLE_DEVICES hides every GPU on purpose: the driver's list does not count.
  if (!in.cuda_visible && in.gpus_detected && *in.gpus_detected > 0 &&
      *in.gpus_detected <= k_max_nproc_per_node)
    return *in.gpus_detected;
  return 1u;
}

}  // namespace

Result<Mode> parse_mode(std::string_view value, std::string_view default_mode) {
  if (value.empty()) {
    if (default_mode.empty()) return Mode::tasks;
    auto fallback = parse_mode(default_mode, "");
    if (!fallback)
      return fail("default_mode=" + std::string(default_mode) +
                  ": unknown mode (valid: tasks, torchrun)");
    return fallback;
  }
  if (value == "tasks") return Mode::tasks;
  if (value == "torchrun") return Mode::torchrun;
  return fail("--ddp=" + std::string(value) + ": unknown mode (valid: tasks, torchrun)");
}

std::string_view mode_name(Mode mode) {
  return mode == Mode::torchrun ? "torchrun" : "tasks";
}

Result<std::string> head_host(std::string_view step_nodelist) {
  auto first = Hostlist::first(step_nodelist);
  if (!first) return prefixed("SLURM_STEP_NODELIST", first.error());
  return first;
}

Result<StepPlan> plan_step(const NodeInputs& in, std::string_view master_addr,
                           PortRange port_window) {
  // Counting validates the whole list without building it: this runs on every node of a
  // 10,000-node step, and the plan needs the size, not the names.
  auto nnodes = Hostlist::count(in.step_nodelist);
  if (!nnodes) return prefixed("SLURM_STEP_NODELIST", nnodes.error());
  if (master_addr.empty()) return fail("no master address for the step (empty MASTER_ADDR)");
  if (in.node_id >= *nnodes) {
    std::string message = "node id ";
    text::append_uint(message, in.node_id);
    message += " is outside the step's ";
    text::append_uint(message, *nnodes);
    message += " nodes (SLURM_STEP_NODELIST=" + text::quote(in.step_nodelist) + ")";
    return fail(std::move(message));
  }
  if (in.ntasks == 0 || in.local_ntasks == 0 || in.local_ntasks > in.ntasks) {
    std::string message = "inconsistent task counts: ";
    text::append_uint(message, in.local_ntasks);
    message += " on this node, ";
    text::append_uint(message, in.ntasks);
    message += " in the step";
    return fail(std::move(message));
  }

  if (!in.tasks_per_node.empty()) {
    auto layout = summarize_tasks_per_node(in.tasks_per_node, in.node_id);
    if (!layout) return prefixed("SLURM_STEP_TASKS_PER_NODE", layout.error());
    const std::string tpn = "SLURM_STEP_TASKS_PER_NODE=" + text::quote(in.tasks_per_node);
    if (layout->nodes != *nnodes) {
      std::string message = tpn + " lists ";
      text::append_uint(message, layout->nodes);
      message += " nodes but SLURM_STEP_NODELIST=" + text::quote(in.step_nodelist) + " has ";
      text::append_uint(message, *nnodes);
      return fail(std::move(message));
    }
    if (layout->on_node != in.local_ntasks) {
      std::string message = tpn + " puts ";
      text::append_uint(message, layout->on_node);
      message += " tasks on node id ";
      text::append_uint(message, in.node_id);
      message += ", but this node runs ";
      text::append_uint(message, in.local_ntasks);
      return fail(std::move(message));
    }
    if (layout->tasks != in.ntasks) {
      std::string message = tpn + " sums to ";
      text::append_uint(message, layout->tasks);
      message += " tasks, but the step has ";
      text::append_uint(message, in.ntasks);
      return fail(std::move(message));
    }
    if (in.mode == Mode::torchrun && layout->first_crowded < layout->nodes) {
      auto counts = parse_tasks_per_node(in.tasks_per_node);
      const unsigned tasks = counts ? (*counts)[layout->first_crowded] : 0;
      return crowded(tasks, "node " + node_name(in.step_nodelist, layout->first_crowded));
    }
  } else if (in.mode == Mode::torchrun) {
    if (in.local_ntasks > 1)
      return crowded(in.local_ntasks, "node " + node_name(in.step_nodelist, in.node_id));
    if (in.ntasks > *nnodes) return crowded(in.ntasks, number(*nnodes) + " nodes");
  }

  PortInputs port_inputs;
  port_inputs.user_override = in.user_port;
  port_inputs.reserved = in.reserved_ports;
  port_inputs.job_id = in.job_id;
  port_inputs.step_id = in.step_id;
  port_inputs.het_offset = in.het_offset;
  auto port = choose_port(port_inputs, port_window);
  if (!port) return std::unexpected(std::move(port.error()));

  StepPlan plan;
  plan.mode = in.mode;
  plan.master_addr = master_addr;
  plan.master_port = port->port;
  plan.nnodes = static_cast<std::uint32_t>(*nnodes);  // at most 2^24, see hostlist.cpp
  plan.ntasks = in.ntasks;
  plan.node_rank = in.node_id;
  plan.local_ntasks = in.local_ntasks;
  if (in.mode == Mode::torchrun) {
    auto nproc = nproc_per_node(in);
    if (!nproc) return std::unexpected(std::move(nproc.error()));
    plan.nproc_per_node = *nproc;
  }
  return plan;
}

EnvList task_environment(const StepPlan& plan, const TaskInputs& task) {
  EnvList env;
  const std::string port = number(plan.master_port);
  if (plan.mode == Mode::tasks) {
    env.reserve(9);
    env.emplace_back("MASTER_ADDR", plan.master_addr);
    env.emplace_back("MASTER_PORT", port);
    env.emplace_back("WORLD_SIZE", number(plan.ntasks));
    env.emplace_back("RANK", number(task.global_id));
    env.emplace_back("LOCAL_RANK", number(task.local_id));
    env.emplace_back("LOCAL_WORLD_SIZE", number(plan.local_ntasks));
    env.emplace_back("NODE_RANK", number(plan.node_rank));
    env.emplace_back("GROUP_RANK", number(plan.node_rank));
    env.emplace_back("NNODES", number(plan.nnodes));
    return env;
  }
  // torchrun sets RANK and LOCAL_RANK for the workers it starts; exporting them here would
  // hand every worker the launcher's values. It reads its own options from PET_* variables.
  // https://pytorch.org/docs/stable/elastic/run.html
  const std::string nnodes = number(plan.nnodes);
  const std::string node_rank = number(plan.node_rank);
  const std::string nproc = number(plan.nproc_per_node);
  env.reserve(12);
  env.emplace_back("MASTER_ADDR", plan.master_addr);
  env.emplace_back("MASTER_PORT", port);
  env.emplace_back("NNODES", nnodes);
  env.emplace_back("NODE_RANK", node_rank);
  env.emplace_back("GROUP_RANK", node_rank);
  env.emplace_back("NPROC_PER_NODE", nproc);
  env.emplace_back("WORLD_SIZE", number(std::uint64_t{plan.nnodes} * plan.nproc_per_node));
  env.emplace_back("PET_NNODES", nnodes);
  env.emplace_back("PET_NODE_RANK", node_rank);
  env.emplace_back("PET_NPROC_PER_NODE", nproc);
  env.emplace_back("PET_MASTER_ADDR", plan.master_addr);
  env.emplace_back("PET_MASTER_PORT", port);
  return env;
}

}  // namespace ddp
