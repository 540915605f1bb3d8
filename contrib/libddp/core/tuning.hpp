// Per-node and per-task tuning variables that follow from the node's network and CPUs:
// NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME (socket_ifname=auto) and OMP_NUM_THREADS. Pure: the
// plugin's system layer gathers addresses and CPU counts, these functions decide.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "libddp/core/address.hpp"
#include "libddp/core/envfile.hpp"
#include "libddp/util/result.hpp"
#include "libddp/util/rules.hpp"  // OmpInputs, omp_num_threads: shared with ddp-check

namespace ddp {

// One address configured on one interface of this node, as getifaddrs lists it.
struct InterfaceAddress {
  std::string name;  // "eth0", "ib0"
  IpAddress address;
};

// The NCCL_SOCKET_IFNAME value that selects exactly `name` ("=ib0"): NCCL
// reads a bare name as a prefix, so "ib0" would also select ib0.8001.
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname
std::string exact_ifname(std::string_view name);

// The interface that holds `source`, the local address the kernel chose for the route to
// MASTER_ADDR (on the rank-0 node MASTER_ADDR itself). Loopback interfaces never qualify, since
// other nodes cannot reach them. The error names MASTER_ADDR and what this node has instead.
Result<std::string> interface_for_route(const IpAddress& source,
                                        std::span<const InterfaceAddress> interfaces,
                                        std::string_view master_addr);

// NCCL_SOCKET_IFNAME=exact_ifname(`interface_name`) ("=eth0") and
// GLOO_SOCKET_IFNAME=`interface_name`
// ("eth0": Gloo matches the name exactly and has no '=' syntax).
EnvList socket_ifname_environment(std::string_view interface_name);

}  // namespace ddp
