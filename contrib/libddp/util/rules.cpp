#include "libddp/util/rules.hpp"

#include <algorithm>

#include "libddp/util/text.hpp"

namespace ddp {
namespace {

// Ports below 1024 need privileges the tasks do not have.
constexpr std::uint32_t k_min_unprivileged_port = 1024;
constexpr std::uint32_t k_max_port = 65535;
// More threads per process than any node has CPUs; larger values are garbage.
constexpr std::uint64_t k_max_threads = 1u << 16;

std::optional<std::uint64_t> positive(std::optional<std::string_view> value) {
  if (!value) return std::nullopt;
  auto number = text::parse_uint<std::uint64_t>(*value);
  if (!number || *number == 0 || *number > k_max_threads) return std::nullopt;
  return number;
}

}  // namespace

bool is_env_name(std::string_view name) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (name.empty() || !letter(name.front())) return false;
  for (char c : name)
    if (!letter(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  auto value = text::parse_uint<std::uint32_t>(text);
  if (!value || *value == 0 || *value > k_max_port) return std::nullopt;
  return static_cast<std::uint16_t>(*value);
}

Result<PortRange> parse_port_range(std::string_view text) {
  auto dash = text.find('-');
  std::optional<std::uint16_t> low, high;
  if (dash != std::string_view::npos) {
    low = parse_port(text.substr(0, dash));
    high = parse_port(text.substr(dash + 1));
  }
  if (!low || !high)
    return fail("bad port range " + text::quote(text) + ": expected LOW-HIGH, e.g. 20000-30999");
  if (*low < k_min_unprivileged_port || *low > *high)
    return fail("bad port range " + text::quote(text) +
                ": need 1024 <= LOW <= HIGH <= 65535, e.g. 20000-30999");
  return PortRange{*low, *high};
}

std::string format_port_range(PortRange range) {
  return text::decimal(range.first) + "-" + text::decimal(range.last);
}

std::optional<std::string> omp_num_threads(const OmpInputs& in) {
  if (in.current && !in.current->empty()) return std::nullopt;
  const std::uint64_t workers = std::max<std::uint32_t>(in.workers_per_task, 1);
  if (auto per_task = positive(in.cpus_per_task)) {
    return text::decimal(std::max<std::uint64_t>(*per_task / workers, 1));
  }
  // Bound to fewer CPUs than the step has on this node (task/affinity, --cpu-bind): those
  // CPUs are this task's alone.
  if (in.task_cpus > 0 && in.step_cpus > 0 && in.task_cpus < in.step_cpus) {
    return text::decimal(std::max<std::uint64_t>(in.task_cpus / workers, 1));
  }
  // Otherwise every process on the node shares the step's CPUs. The affinity mask can be wider
  // than the allocation (no cpuset cgroup) and SLURM_CPUS_ON_NODE wider than the machine (a
  // node configured with more CPUs than it has): the smaller of the two is what exists.
  std::uint64_t pool = in.step_cpus > 0 ? in.step_cpus : in.task_cpus;
  if (auto on_node = positive(in.cpus_on_node)) {
    pool = pool == 0 ? *on_node : std::min<std::uint64_t>(pool, *on_node);
  }
  if (pool == 0) return std::nullopt;
  const std::uint64_t sharers =
      std::uint64_t{std::max<std::uint32_t>(in.local_ntasks, 1)} * workers;
  return text::decimal(std::max<std::uint64_t>(pool / sharers, 1));
}

std::string torchrun_refusal(std::uint64_t tasks, std::string_view where) {
  std::string message = "--ddp=torchrun starts one torchrun launcher per node, but this step has ";
  text::append_uint(message, tasks);
  message += " tasks on ";
  message += where;
  message += "; use --ntasks-per-node=1 (torchrun starts the workers)";
  return message;
}

}  // namespace ddp
