// NCCL/gloo interface and OMP_NUM_THREADS decisions, from facts the plugin gathered.
#include "tuning.hpp"

#include <algorithm>

#include "text.hpp"

namespace ddp {
namespace {

// More threads per process than any node has CPUs; larger values are garbage.
constexpr std::uint64_t k_max_threads = 1u << 16;

std::optional<std::uint64_t> positive(std::optional<std::string_view> text) {
  if (!text) return std::nullopt;
  auto value = text::parse_uint<std::uint64_t>(*text);
  if (!value || *value == 0 || *value > k_max_threads) return std::nullopt;
  return value;
}

std::string number(std::uint64_t value) {
  std::string s;
  text::append_uint(s, value);
  return s;
}

}  // namespace

std::string exact_ifname(std::string_view name) {
  std::string out = "=";
  out += name;
  return out;
}

Result<std::string> interface_for_route(const IpAddress& source,
                                        std::span<const InterfaceAddress> interfaces,
                                        std::string_view master_addr) {
  std::string loopback_holder;
  for (const InterfaceAddress& i : interfaces) {
    if (!(i.address == source)) continue;
    if (source.is_loopback() || i.name == "lo") {
      if (loopback_holder.empty()) loopback_holder = i.name;
      continue;
    }
    return i.name;
  }
  std::string prefix = "socket_ifname=auto: the route to MASTER_ADDR=" + std::string(master_addr);
  if (!loopback_holder.empty() || source.is_loopback()) {
    return fail(prefix + " leaves through the loopback interface" +
                (loopback_holder.empty() ? std::string() : " " + loopback_holder) +
                ", which other nodes cannot reach; make the head node's name resolve to a "
                "routable address (addr=ip, networks=CIDR)");
  }
  std::string listed;
  for (const InterfaceAddress& i : interfaces) {
    if (i.address.is_loopback()) continue;
    listed += (listed.empty() ? "" : ", ") + i.name + " " + i.address.to_string();
  }
  return fail(prefix + " uses source address " + source.to_string() +
              ", which no interface of this node holds (interfaces: " +
              (listed.empty() ? "none" : listed) + ")");
}

EnvList socket_ifname_environment(std::string_view interface_name) {
  const std::string value = exact_ifname(interface_name);
  return {{"NCCL_SOCKET_IFNAME", value}, {"GLOO_SOCKET_IFNAME", value}};
}

std::optional<std::string> omp_num_threads(const OmpInputs& in) {
  if (in.current && !in.current->empty()) return std::nullopt;
  const std::uint64_t workers = std::max<std::uint32_t>(in.workers_per_task, 1);
  if (auto per_task = positive(in.cpus_per_task)) {
    return number(std::max<std::uint64_t>(*per_task / workers, 1));
  }
  // Bound to fewer CPUs than the step has on this node (task/affinity, --cpu-bind): those
  // CPUs are this task's alone.
  if (in.task_cpus > 0 && in.step_cpus > 0 && in.task_cpus < in.step_cpus) {
    return number(std::max<std::uint64_t>(in.task_cpus / workers, 1));
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
  return number(std::max<std::uint64_t>(pool / sharers, 1));
}

}  // namespace ddp
