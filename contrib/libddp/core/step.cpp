// Step decisions from plain facts. Every refusal names the culprit (a variable, a node, a
// setting) and the fix, because the user reads it in srun's output, far from the node.
#include "libddp/core/step.hpp"

#include <algorithm>

#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddp {
namespace {

std::string join_addresses(std::span<const IpAddress> addresses) {
  if (addresses.empty()) return "no address";
  std::vector<std::string> texts;
  for (const IpAddress& a : addresses) texts.push_back(a.to_string());
  return text::join(texts, ", ");
}

// Slurm's address for the head, used only when the resolver does not know the name at all:
// a slow or failing resolver is an error to fix, not a reason for nodes to pick differently.
Result<HeadAddress> slurm_head_address(const HeadFacts& facts, const AddressPolicy& policy) {
  auto address = IpAddress::parse(*facts.slurm_address);
  if (!address)
    return fail("cannot resolve " + text::quote(facts.lookup_name) + " (head node of this step) " +
                "and Slurm's address for it, " + text::quote(*facts.slurm_address) + " (" +
                facts.slurm_origin + "), is not an IP address; fix DNS or /etc/hosts");
  const IpAddress candidates[] = {*address};
  auto chosen = choose_address(candidates, policy, facts.head);
  if (!chosen) return fail(chosen.error().message + " (" + facts.slurm_origin + ")");
  return HeadAddress{chosen->to_string(), "Slurm's address for " + facts.head + " (" +
                                              facts.slurm_origin + "); the name does not resolve"};
}

// "4-7" for a run of consecutive ids, else "0,3,6" (the first 8, then "..."): a node's ids.
std::string format_ids(std::span<const std::uint32_t> ids) {
  bool run = true;
  for (std::size_t i = 1; i < ids.size(); ++i) run = run && ids[i] == ids[i - 1] + 1;
  if (run && ids.size() > 1) return text::decimal(ids.front()) + "-" + text::decimal(ids.back());
  constexpr std::size_t k_shown = 8;
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < ids.size() && i < k_shown; ++i)
    texts.push_back(text::decimal(ids[i]));
  return text::join(texts, ",") + (ids.size() > k_shown ? ",..." : "");
}

}  // namespace

Result<void> check_port_window(PortRange window, std::optional<PortRange> ephemeral) {
  if (!ephemeral || !window.overlaps(*ephemeral)) return {};
  return fail("port_range=" + format_port_range(window) +
              " overlaps this node's ephemeral port range " + format_port_range(*ephemeral) +
              " (net.ipv4.ip_local_port_range); choose a port_range below it in plugstack.conf");
}

Result<void> check_launcher_layout(Mode mode, std::uint64_t ntasks, std::uint64_t nnodes) {
  if (mode != Mode::torchrun || ntasks <= nnodes) return {};
  return fail(torchrun_refusal(ntasks, text::decimal(nnodes) + " nodes"));
}

Result<void> check_rank0_placement(const StepPlan& plan,
                                   std::span<const std::uint32_t> global_ids) {
  if (plan.mode != Mode::tasks || plan.first_rank) return {};
  const bool has_rank0 = std::find(global_ids.begin(), global_ids.end(), 0u) != global_ids.end();
  if (has_rank0 == (plan.node_rank == 0)) return {};
  const std::string where =
      has_rank0 ? "SLURM_PROCID 0 runs on step node " + text::decimal(plan.node_rank) +
                      ", not on the first node of SLURM_STEP_NODELIST (which MASTER_ADDR names)"
                : "the first node of SLURM_STEP_NODELIST (which MASTER_ADDR names) holds no "
                  "SLURM_PROCID 0";
  return fail(where +
              ", and SLURM_STEP_TASKS_PER_NODE is not in the step's environment, so RANK "
              "cannot be numbered by node; launch the step with srun, which sets it, and do not "
              "unset it");
}

std::optional<std::string> explain_ranks(std::string_view node, const StepPlan& plan,
                                         std::span<const std::uint32_t> global_ids) {
  if (plan.mode != Mode::tasks || !plan.first_rank || global_ids.empty()) return std::nullopt;
  std::vector<std::uint32_t> ranks;
  bool same = true;
  for (std::uint32_t local = 0; local < global_ids.size(); ++local) {
    ranks.push_back(task_rank(plan, TaskInputs{global_ids[local], local}));
    same = same && ranks.back() == global_ids[local];
  }
  if (same) return std::nullopt;
  return "ddp: " + std::string(node) + ": RANK " + format_ids(ranks) + " for SLURM_PROCID " +
         format_ids(global_ids) +
         " (ranks follow SLURM_STEP_NODELIST so that RANK 0 is on its first node, MASTER_ADDR; "
         "Slurm numbered its tasks in another order)";
}

std::optional<std::string> alias_address(std::string_view aliases, std::string_view node) {
  // Entries "NAME:ADDR:HOSTNAME", comma-separated; an IPv6 ADDR is in brackets. A comma inside
  // brackets belongs to no IPv6 address, so a plain split is exact.
  for (const std::string_view entry : text::split(aliases, ',')) {
    const std::size_t first = entry.find(':');
    if (first == std::string_view::npos || entry.substr(0, first) != node) continue;
    const std::string_view rest = entry.substr(first + 1);
    if (!rest.empty() && rest.front() == '[') {
      const std::size_t stop = rest.find(']');
      if (stop == std::string_view::npos) return std::nullopt;
      return std::string(rest.substr(1, stop - 1));
    }
    const std::size_t stop = rest.find(':');
    if (stop == std::string_view::npos || stop == 0) return std::nullopt;
    return std::string(rest.substr(0, stop));
  }
  return std::nullopt;
}

Result<HeadAddress> decide_head_address(const HeadFacts& facts, const AddressPolicy& policy) {
  if (policy.mode == AddrMode::hostname)
    return HeadAddress{facts.lookup_name, "the head node's name (addr=hostname)"};
  if (!facts.resolve_error) {
    auto chosen = choose_address(facts.resolved, policy, facts.lookup_name);
    if (!chosen) return fail(chosen.error().message);
    return HeadAddress{chosen->to_string(), facts.lookup_name + " resolved to " +
                                                join_addresses(facts.resolved) + "; " +
                                                std::string(k_address_rule)};
  }
  // host_suffix/host_domain name another interface than Slurm's address: never substitute it.
  if (facts.name_unknown && facts.slurm_address && facts.lookup_name == facts.head)
    return slurm_head_address(facts, policy);
  std::string message = *facts.resolve_error + " (head node of this step)";
  if (facts.name_unknown)
    message += "; fix DNS or /etc/hosts, or give the node an address in slurm.conf (NodeAddr=)";
  return fail(std::move(message));
}

Result<std::vector<IpAddress>> rank0_targets(std::string_view master_addr,
                                             std::span<const IpAddress> resolved) {
  if (auto literal = IpAddress::parse(master_addr)) return std::vector<IpAddress>{*literal};
  std::vector<IpAddress> targets;
  for (const IpAddress& a : resolved)
    if (!a.is_loopback()) targets.push_back(a);
  if (targets.empty())
    return fail("MASTER_ADDR=" + std::string(master_addr) +
                " resolves only to loopback addresses on the rank-0 node; other nodes cannot "
                "reach it: fix /etc/hosts or DNS, or set addr=ip with networks=CIDR");
  return targets;
}

Result<void> check_rank0_node(const StepPlan& plan, const Rank0Facts& facts, bool check_addr,
                              bool check_port) {
  auto is_own = [&](const IpAddress& a) {
    return std::find(facts.own.begin(), facts.own.end(), a) != facts.own.end();
  };
  if (check_addr && std::none_of(facts.targets.begin(), facts.targets.end(), is_own)) {
    std::vector<IpAddress> listed;
    for (const IpAddress& a : facts.own)
      if (!a.is_loopback()) listed.push_back(a);
    return fail("MASTER_ADDR=" + plan.master_addr + " is not an address of the rank-0 node " +
                "(its addresses: " + join_addresses(listed) +
                "); set host_suffix=, host_domain= or networks= in plugstack.conf so that the "
                "head node's name resolves to one of them");
  }
  if (check_port && facts.bind_error)
    return fail("MASTER_PORT=" + text::decimal(plan.master_port) +
                " is not free on the rank-0 node (" + *facts.bind_error +
                "); set DDP_MASTER_PORT=PORT, or ask the site for MpiParams=ports= and use "
                "srun --resv-ports");
  return {};
}

Result<void> check_gpu_binding(Mode mode, std::optional<std::string_view> task_cuda_visible,
                               std::uint32_t most_ntasks, bool keep) {
  const std::uint32_t seen = count_devices(task_cuda_visible);
  if (keep || mode != Mode::tasks || seen == 0 || seen >= most_ntasks) return {};
  return fail("each task sees " + text::plural(seen, "GPU") +
              " (CUDA_VISIBLE_DEVICES=" + std::string(*task_cuda_visible) +
              ") but the step runs up to " + text::decimal(most_ntasks) +
              " tasks per node: torch.cuda.set_device(LOCAL_RANK) fails and NCCL loses "
              "peer-to-peer; use --gpus-per-node=N (or --gres=gpu:N) without --gpus-per-task and "
              "with --gpu-bind=none, or export DDP_GPU_BIND=task if the script uses cuda:0");
}

bool srun_verbose(std::optional<std::string_view> srun_debug) {
  // Slurm's LOG_LEVEL_VERBOSE; srun -v raises SRUN_DEBUG from LOG_LEVEL_INFO (3) to it.
  constexpr unsigned k_log_level_verbose = 4;
  if (!srun_debug) return false;
  auto level = text::parse_uint<unsigned>(*srun_debug);
  return level && *level >= k_log_level_verbose;
}

std::string explain_choice(std::string_view node, const HeadAddress& address, const StepPlan& plan,
                           PortRange window) {
  std::string port_origin;
  switch (plan.port_source) {
    case PortSource::user:
      port_origin = "DDP_MASTER_PORT";
      break;
    case PortSource::reserved:
      port_origin = "first of Slurm's reserved ports, SLURM_STEP_RESV_PORTS";
      break;
    case PortSource::derived:
      port_origin = "derived from job " + text::decimal(plan.job_id) + " step " +
                    text::decimal(plan.step_id) + " in port_range=" + format_port_range(window);
      break;
  }
  return "ddp: " + std::string(node) + ": MASTER_ADDR=" + address.value + " (" + address.origin +
         "), MASTER_PORT=" + text::decimal(plan.master_port) + " (" + port_origin + ")";
}

}  // namespace ddp
