// Network interface policy: what kind an interface is, which one NCCL and gloo should use when
// a site asks for `auto` (OMP_NUM_THREADS: the plugin's rule, rules.hpp). Pure: names and numbers
// in, values out.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp::check {

enum class NetKind { infiniband, efa, slingshot, ethernet, loopback, virtual_bridge, other };

// "infiniband", "efa", "slingshot", "ethernet", "loopback", "virtual", "other".
std::string_view kind_name(NetKind kind);

// The kind of an interface by its name: ib*/mlx* InfiniBand, efa*/rdmap* EFA, cxi*/hsn*
// Slingshot, lo loopback, docker/veth/virbr/... virtual, other network devices Ethernet.
// `rdma_device` marks an hwloc OpenFabrics device (mlx5_0, efa_0, cxi0): never Ethernet.
NetKind classify_interface(std::string_view name, bool rdma_device = false);

// One interface of a node, as hwloc (or getifaddrs) shows it.
struct NetInterface {
  std::string name;
  NetKind kind = NetKind::other;
  bool rdma_device = false;            // an OpenFabrics device (mlx5_0): no IP, not for sockets
  int numa_node = -1;                  // NUMA node it hangs off, -1 if unknown
  std::string pci_busid;               // "0000:0c:00.0", empty if not PCI
  std::vector<std::string> near_gpus;  // GPUs behind the same PCI switch, else the same NUMA node
};

// NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME value that matches exactly `name` ("=ib0"): NCCL
// takes a bare name as a prefix, so "ib0" would also select ib0.8001.
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname
std::string exact_ifname(std::string_view name);

// The interface for `auto`: the one that routes to MASTER_ADDR when known (`route_ifname`),
// else the best socket-capable one: IPoIB, then Slingshot, then Ethernet; loopback, virtual
// bridges and RDMA-only devices never. The error says that no interface qualifies.
Result<std::string> choose_socket_ifname(std::span<const NetInterface> interfaces,
                                         std::optional<std::string_view> route_ifname);

}  // namespace ddp::check
