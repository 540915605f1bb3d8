// Which nodes a failed check points at, for ddp-watch --heal: the step's nodes from which no
// hello arrived. Pure.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ddp-check/rendezvous/hello.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::check {

// The nodes of `step_nodes` (Slurm's names, in order) that no hello came from. A hello's host
// matches a node by its whole name or by the part before the first dot (a host name may be
// the node's fully qualified name).
std::vector<std::string> silent_nodes(const std::vector<std::string>& step_nodes,
                                      std::span<const Hello> hellos);

// What rank 0 names after a check in which ranks were missing: the silent nodes (missing-rank)
// when fewer than half of the step's nodes are silent; otherwise rank 0's own node `head`
// (unreachable): when most nodes cannot reach rank 0, the fault is more likely the head's.
std::vector<Suspect> world_suspects(const std::vector<std::string>& step_nodes,
                                    std::span<const Hello> hellos, const std::string& head);

}  // namespace ddp::check
