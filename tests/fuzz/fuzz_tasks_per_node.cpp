// libFuzzer: SLURM_STEP_TASKS_PER_NODE ("2(x3),1"). The allocation-free summary must agree
// with the full parse whenever the full parse is small enough to build.
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>

#include "hostlist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte picks the node whose count the summary reports.
  const std::size_t node_id = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto summary = ddp::summarize_tasks_per_node(text, node_id);
  if (!summary || summary->nodes > 4096) {
    if (!summary && summary.error().message.empty()) __builtin_trap();
    return 0;
  }
  auto counts = ddp::parse_tasks_per_node(text);
  if (!counts || counts->size() != summary->nodes) __builtin_trap();
  const std::uint64_t total = std::accumulate(counts->begin(), counts->end(), std::uint64_t{0});
  if (total != summary->tasks) __builtin_trap();
  const unsigned on_node = node_id < counts->size() ? (*counts)[node_id] : 0;
  if (on_node != summary->on_node) __builtin_trap();
  return 0;
}
