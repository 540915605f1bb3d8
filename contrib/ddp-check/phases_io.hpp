// ddp-check's per-node phases beside the rendezvous: the fabric assertion (--fabric,
// --net-plugin) before it, and the pairwise test (--pairs) after it passed.
#pragma once

#include <string>
#include <vector>

#include "ddp-check/options.hpp"
#include "ddp-check/rendezvous/hello.hpp"

namespace ddp::check {

// This node's name as Slurm knows it (SLURMD_NODENAME), else `host`: what heal excludes.
std::string slurm_node_name(const std::string& host);

// Checks --fabric and --net-plugin on this node and prints the outcome (a suspect line when
// something is missing); 0, or 1 when it is missing. Nothing to do: 0, silently.
int check_fabric_here(const Options& o, const std::string& node);

// Rank 0: the pairwise phase over the nodes of `hellos` (one agent per host, table order).
int pairs_coordinator(const Options& o, const Identity& id, const std::vector<Hello>& hellos);
// Other processes: this node's agent when this process is its first (LOCAL_RANK 0 or a node
// launcher); others return 0 at once.
int pairs_agent(const Options& o, const Identity& id);

}  // namespace ddp::check
