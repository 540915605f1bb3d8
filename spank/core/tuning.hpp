// Per-node and per-task tuning variables that follow from the node's network and CPUs:
// NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME (socket_ifname=auto) and OMP_NUM_THREADS. Pure: the
// plugin's system layer gathers addresses and CPU counts, these functions decide.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "address.hpp"
#include "envfile.hpp"
#include "result.hpp"

namespace ddp {

// One address configured on one interface of this node, as getifaddrs lists it.
struct InterfaceAddress {
  std::string name;  // "eth0", "ib0"
  IpAddress address;
};

// The NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME value that selects exactly `name` ("=ib0"): NCCL
// reads a bare name as a prefix, so "ib0" would also select ib0.8001.
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname
std::string exact_ifname(std::string_view name);

// The interface that holds `source`, the local address the kernel chose for the route to
// MASTER_ADDR (on the rank-0 node MASTER_ADDR itself). Loopback interfaces never qualify, since
// other nodes cannot reach them. The error names MASTER_ADDR and what this node has instead.
Result<std::string> interface_for_route(const IpAddress& source,
                                        std::span<const InterfaceAddress> interfaces,
                                        std::string_view master_addr);

// NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME, both set to exact_ifname(`interface_name`).
EnvList socket_ifname_environment(std::string_view interface_name);

// What decides OMP_NUM_THREADS for one task.
struct OmpInputs {
  std::optional<std::string_view> current;        // OMP_NUM_THREADS already in the task's env
  std::optional<std::string_view> cpus_per_task;  // SLURM_CPUS_PER_TASK (srun -c)
  std::optional<std::string_view> cpus_on_node;   // SLURM_CPUS_ON_NODE
  unsigned task_cpus = 0;                         // CPUs in the task's affinity mask, 0 if unknown
  unsigned step_cpus = 0;          // CPUs in slurmstepd's affinity mask (the step's), 0 if unknown
  std::uint32_t local_ntasks = 1;  // tasks of the step on this node
  std::uint32_t workers_per_task = 1;  // torchrun mode: the workers each launcher starts
};

// OMP_NUM_THREADS for one process, or nullopt to leave it alone: the user's value is kept;
// else SLURM_CPUS_PER_TASK divided among a launcher's workers; else the task's own CPUs when
// Slurm bound it to fewer than the step has; else the step's CPUs on this node (the smaller of
// the affinity mask and SLURM_CPUS_ON_NODE) shared by every process on the node. At least 1;
// nullopt when no CPU count is known at all.
std::optional<std::string> omp_num_threads(const OmpInputs& in);

}  // namespace ddp
