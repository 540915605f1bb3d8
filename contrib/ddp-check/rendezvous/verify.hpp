// Rank 0's judgement: is the world that reached it complete and consistent? Pure: takes the
// hellos that arrived, returns the faults and the table, touches nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ddp-check/rendezvous/hello.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {

// The outcome of verify_world(). No faults means the world is healthy.
struct WorldReport {
  std::vector<std::string> faults;  // each names the fault, the ranks and the hosts involved
  bool ok() const { return faults.empty(); }
};

// Checks the hellos against the world rank 0 expects (`expected` is rank 0's own view of
// WORLD_SIZE/NNODES): sizes agree everywhere, ranks are unique and 0..N-1, every node has
// LOCAL_WORLD_SIZE ranks numbered 0..L-1, nodes are 0..NNODES-1 and one host each. Missing
// ranks are named with the node they belong to when other ranks of that node tell it.
WorldReport verify_world(std::span<const Hello> hellos, const Hello& expected, Scope scope);

// One table, a row per node: node, host, ranks, local ranks, GPUs, interface, address.
// In nodes scope the rank columns show the ranks each launcher will start (NPROC_PER_NODE).
std::string render_table(std::span<const Hello> hellos, Scope scope);

// "0-3,5,7,8" for a set of numbers in any order (duplicates shown once):
// ddp::text::format_ranges.
inline std::string format_ranges(const std::vector<std::uint32_t>& numbers) {
  return ddp::text::format_ranges(std::vector<std::int64_t>(numbers.begin(), numbers.end()));
}

// The diagnosis sent to every rank: the faults joined on one line.
std::string summarize(const WorldReport& report);

}  // namespace ddp::check
