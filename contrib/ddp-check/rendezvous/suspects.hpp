// Which nodes a failed check points at, for ddp-watch --heal: the step's nodes from which no
// hello arrived. Pure.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-check/rendezvous/hello.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::check {

// Whether `a` and `b` name the same node: equal up to the first dot (a host name may be the
// node's fully qualified name, Slurm's name the short one).
bool same_node(std::string_view a, std::string_view b);

// The nodes of `step_nodes` (Slurm's names, in order) that no hello came from. A hello's host
// matches a node by its whole name or by the part before the first dot (a host name may be
// the node's fully qualified name).
std::vector<std::string> silent_nodes(const std::vector<std::string>& step_nodes,
                                      std::span<const Hello> hellos);

// What rank 0 names after a check in which ranks were missing, and why it names nobody.
struct WorldSuspects {
  std::vector<Suspect> suspects;
  std::string none_why;  // when nobody is named although nodes were silent: why not
};

// The silent nodes (missing-rank) when fewer than half of the step's nodes are silent; rank
// 0's own node `head` (unreachable) when more than half are: when most nodes cannot reach rank
// 0, the fault is more likely the head's. Exactly half: nobody, and `none_why` says so (in a
// two-node step, one silent node tells nothing of which side failed).
WorldSuspects world_suspects(const std::vector<std::string>& step_nodes,
                             std::span<const Hello> hellos, const std::string& head);

}  // namespace ddp::check
