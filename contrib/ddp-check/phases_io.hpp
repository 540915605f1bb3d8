// ddp-check's per-node phases beside the rendezvous, as main() runs them from the plan
// (phase_plan.hpp): the fabric assertion (--fabric, --net-plugin) before it, the pairwise test
// (--pairs) after it passed, and the watchdog that bounds them.
#pragma once

#include <string>
#include <vector>

#include "ddp-check/options.hpp"
#include "ddp-check/phase_plan.hpp"
#include "ddp-check/rendezvous/hello.hpp"
#include "ddp-check/rendezvous/session_io.hpp"

namespace ddp::check {

// This node's name as Slurm knows it (SLURMD_NODENAME), else `host`: what heal excludes.
std::string slurm_node_name(const std::string& host);

// Checks --fabric and --net-plugin on this node and prints the outcome (a suspect line when
// something is missing, ending with `run_tag` when there is one); 0, or 1 when it is missing.
// Nothing to do: 0, silently.
int check_fabric_here(const Options& o, const std::string& node, const std::string& run_tag);

// Arms the watchdog: SIGALRM in `seconds` ends the process with exit status 1 and a line
// saying that the check exceeded its deadline.
void arm_watchdog(unsigned seconds);

// Rank 0: the pairwise phase over the nodes of `hellos` (one agent per host, table order),
// bounded by pairs_step() for that many nodes.
int pairs_coordinator(const Options& o, const Identity& id, const AuthConfig& auth,
                      const std::vector<Hello>& hellos);
// This node's agent (the plan runs it on the first process of each node), bounded by `step`.
int pairs_agent(const Options& o, const Identity& id, const AuthConfig& auth,
                const PhaseStep& step);

}  // namespace ddp::check
