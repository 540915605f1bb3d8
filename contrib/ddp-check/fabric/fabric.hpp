// The fabric assertion: is the network a site declared (InfiniBand, EFA, CXI or plain sockets)
// present and active on this node, and can NCCL load the net plugin it needs? Pure: the facts
// come in as values (fabric/probe_io.hpp reads them from sysfs), the verdict goes out as text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp::check {

// The networks a profile's `fabric:` names.
enum class Fabric { ib, efa, cxi, socket };

// "ib", "efa", "cxi" or "socket"; an error naming the valid values otherwise.
Result<Fabric> parse_fabric(std::string_view name);
// The name parse_fabric reads.
std::string_view fabric_name(Fabric fabric);

// One port of an RDMA device (/sys/class/infiniband/DEV/ports/N).
struct RdmaPort {
  std::string device;      // mlx5_0, rdmap16s27
  std::string port;        // "1"
  std::string state;       // the state file: "4: ACTIVE"
  std::string link_layer;  // "InfiniBand", "Ethernet" (RoCE)
  std::string driver;      // the device's kernel driver: "mlx5_core", "efa"
};

// A network interface and its operstate ("up", "down"), /sys/class/net/NAME/operstate.
struct Link {
  std::string name;
  std::string operstate;
};

// What sysfs says about this node's networks.
struct FabricFacts {
  std::vector<RdmaPort> rdma_ports;
  std::vector<std::string> cxi_devices;  // /sys/class/cxi/cxiN
  std::vector<Link> cxi_links;           // the Ethernet side of the CXI devices (hsnN)
  std::vector<Link> links;               // every interface but loopback
};

// The verdict for one node.
struct FabricCheck {
  bool ok = false;
  std::string found;    // what satisfied the check: "mlx5_0 port 1 ACTIVE (InfiniBand)"
  std::string missing;  // what is missing and where it was looked for; empty when ok
};

// Whether `facts` show `fabric` present and active: ib, an RDMA port in state ACTIVE whose
// driver is not efa and whose link layer is InfiniBand (an ACTIVE RoCE port does not count); efa,
// an ACTIVE port of an efa device; cxi, a CXI device (and, when sysfs lists its Ethernet side, one
// of those links up); socket, a non-loopback interface up.
FabricCheck check_fabric(Fabric fabric, const FabricFacts& facts);

// The files NCCL dlopen()s for NCCL_NET_PLUGIN=`name`, in its order: NAME itself, then
// libnccl-net-NAME.so (NCCL before 2.19 tries only the second); libnccl-net.so when empty.
std::vector<std::string> net_plugin_files(std::string_view name);

// The symbols an NCCL net plugin exports, newest interface first (ncclNetPlugin_v10 .. v2).
std::vector<std::string> net_plugin_symbols();

}  // namespace ddp::check
