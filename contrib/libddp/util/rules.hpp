// Rules two programs must agree on, written once: what an environment variable name is (the
// plugin's env_file and ddpgen), the MASTER_PORT window and how a port range is read (plugin
// and ddpgen), OMP_NUM_THREADS (plugin and ddp-check --topology), and the
// refusal of a torchrun step with more tasks than nodes (srun and slurmstepd). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libddp/util/result.hpp"

namespace ddp {

// A variable name the shell and the environment agree on: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view name);

// An inclusive range of TCP ports.
struct PortRange {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  // Number of ports; meaningful only when first <= last.
  std::uint32_t size() const { return std::uint32_t{last} - first + 1; }
  // True when the two ranges share a port (port_range against the ephemeral range).
  bool overlaps(PortRange other) const { return first <= other.last && other.first <= last; }
  // True when `port` is inside the range.
  bool contains(std::uint16_t port) const { return first <= port && port <= last; }
};

// The default MASTER_PORT window: below Linux's ephemeral range (32768-60999), so a derived port
// does not collide with an outgoing connection's local port.
inline constexpr PortRange k_default_port_range{20000, 30999};

// A port 1..65535 written as decimal digits only; nullopt otherwise.
std::optional<std::uint16_t> parse_port(std::string_view text);

// Parses "LOW-HIGH" (1024 <= LOW <= HIGH <= 65535), strictly: "20000x-30999" is refused.
Result<PortRange> parse_port_range(std::string_view text);
// "LOW-HIGH", as parse_port_range() reads it and messages show it.
std::string format_port_range(PortRange range);

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

// The refusal of --ddp=torchrun when a node would run more than one launcher: "--ddp=torchrun
// starts one torchrun launcher per node, but this step has TASKS tasks on WHERE; use
// --ntasks-per-node=1 (torchrun starts the workers)". `where`: "node gpu03", "2 nodes".
std::string torchrun_refusal(std::uint64_t tasks, std::string_view where);

}  // namespace ddp
