// NCCL/gloo interface decisions, from facts the plugin gathered (OMP_NUM_THREADS: rules.cpp).
#include "libddp/core/tuning.hpp"

#include <algorithm>

#include "libddp/util/text.hpp"

namespace ddp {
namespace {}  // namespace

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
  // Gloo compares GLOO_SOCKET_IFNAME with interface names exactly and knows no '=' prefix:
  // "=eth0" fails init_process_group with "Unable to find address for: =eth0".
  return {{"NCCL_SOCKET_IFNAME", exact_ifname(interface_name)},
          {"GLOO_SOCKET_IFNAME", std::string(interface_name)}};
}

}  // namespace ddp
