// libFuzzer: SLURM_STEP_TASKS_PER_NODE ("2(x3),1"). The allocation-free summary must agree
// with the full parse whenever the full parse is small enough to build; a broken agreement
// prints which one and aborts, which libFuzzer reports as a crash with the input saved.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string_view>

#include "libddp/core/hostlist.hpp"

namespace {

void require(bool holds, const char* invariant) {
  if (holds) return;
  std::fprintf(stderr, "fuzz_tasks_per_node: invariant broken: %s\n", invariant);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte picks the node whose count the summary reports.
  const std::size_t node_id = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto summary = ddp::summarize_tasks_per_node(text, node_id);
  if (!summary) {
    require(!summary.error().message.empty(), "a refused list says why");
    require(!ddp::parse_tasks_per_node(text), "the full parse refuses what the summary refuses");
    return 0;
  }
  if (summary->nodes > 4096) return 0;  // too large to expand on every input
  auto counts = ddp::parse_tasks_per_node(text);
  require(counts.has_value(), "the full parse accepts what the summary accepts");
  require(counts->size() == summary->nodes, "both count the same nodes");
  const std::uint64_t total = std::accumulate(counts->begin(), counts->end(), std::uint64_t{0});
  require(total == summary->tasks, "both count the same tasks");
  const unsigned on_node = node_id < counts->size() ? (*counts)[node_id] : 0;
  require(on_node == summary->on_node, "both give the same count for the chosen node");
  const unsigned most = counts->empty() ? 0 : *std::max_element(counts->begin(), counts->end());
  require(most == summary->most, "both give the same largest count");
  return 0;
}
