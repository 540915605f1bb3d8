// Interface kinds and the `auto` choice for NCCL_SOCKET_IFNAME.
#include "ddp-check/topology/interfaces.hpp"

#include <algorithm>
#include <array>

#include "libddp/core/tuning.hpp"

namespace ddp::check {

std::string_view kind_name(NetKind kind) {
  switch (kind) {
    case NetKind::infiniband:
      return "infiniband";
    case NetKind::efa:
      return "efa";
    case NetKind::slingshot:
      return "slingshot";
    case NetKind::ethernet:
      return "ethernet";
    case NetKind::loopback:
      return "loopback";
    case NetKind::virtual_bridge:
      return "virtual";
    case NetKind::other:
      return "other";
  }
  return "other";
}

NetKind classify_interface(std::string_view name, bool rdma_device) {
  auto starts = [name](std::string_view prefix) { return name.starts_with(prefix); };
  if (name == "lo") return NetKind::loopback;
  if (starts("ib") || starts("mlx") || starts("hfi") || starts("qib")) return NetKind::infiniband;
  if (starts("efa") || starts("rdmap")) return NetKind::efa;
  if (starts("cxi") || starts("hsn")) return NetKind::slingshot;
  static constexpr std::array<std::string_view, 11> k_virtual = {
      "docker", "veth", "virbr", "br-", "cni", "flannel", "cali", "tun", "tap", "vxlan", "lxc"};
  for (auto prefix : k_virtual) {
    if (starts(prefix)) return NetKind::virtual_bridge;
  }
  return rdma_device ? NetKind::other : NetKind::ethernet;
}

// One definition with the plugin's socket_ifname=auto, so the table's advice and the plugin agree.
std::string exact_ifname(std::string_view name) {
  return ddp::exact_ifname(name);
}

Result<std::string> choose_socket_ifname(std::span<const NetInterface> interfaces,
                                         std::optional<std::string_view> route_ifname) {
  if (route_ifname && !route_ifname->empty()) return exact_ifname(*route_ifname);
  auto rank = [](const NetInterface& i) {
    if (i.rdma_device) return 99;
    switch (i.kind) {
      case NetKind::infiniband:
        return 0;
      case NetKind::slingshot:
        return 1;
      case NetKind::ethernet:
        return 2;
      case NetKind::efa:
        return 3;  // EFA has no IP; an efa netdev would be unusual
      default:
        return 99;
    }
  };
  const NetInterface* best = nullptr;
  for (const auto& i : interfaces) {
    if (rank(i) == 99) continue;
    // Lowest rank wins; within a kind the first name in order (ib0 before ib1).
    if (!best || rank(i) < rank(*best) || (rank(i) == rank(*best) && i.name < best->name)) {
      best = &i;
    }
  }
  if (!best)
    return fail("no network interface for sockets (only loopback, virtual or RDMA devices)");
  return exact_ifname(best->name);
}

}  // namespace ddp::check
