#include "ddp-watch/layout.hpp"

#include <set>
#include <utility>

#include "ddp-watch/options.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

using ddp::text::parse_uint;
using ddp::text::split;
using ddp::text::trim;

// "6 tasks, 3 nodes (node[01-03])": the task count.
std::optional<unsigned> header_tasks(std::string_view line) {
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos || !line.substr(space).starts_with(" tasks, ")) return {};
  return parse_uint<unsigned>(line.substr(0, space));
}

// "Node 0 (node01), 2 task(s): 2 3": its index, name and task ids.
std::optional<std::pair<unsigned, StepLayout::Node>> node_line(std::string_view line) {
  if (!line.starts_with("Node ")) return {};
  line.remove_prefix(5);
  const std::size_t open = line.find(" (");
  const std::size_t close = line.find("), ");
  const std::size_t colon = line.find(" task(s):");
  if (open == std::string_view::npos || close == std::string_view::npos ||
      colon == std::string_view::npos || close < open || colon < close)
    return {};
  auto index = parse_uint<unsigned>(line.substr(0, open));
  auto count = parse_uint<unsigned>(line.substr(close + 3, colon - close - 3));
  StepLayout::Node node{std::string(line.substr(open + 2, close - open - 2)), {}};
  if (!index || !count || node.name.empty()) return {};
  for (std::string_view word : split(trim(line.substr(colon + 9)), ' ')) {
    if (word.empty()) continue;
    auto id = parse_uint<unsigned>(word);
    if (!id || node.tasks.size() >= *count) return {};
    node.tasks.push_back(static_cast<int>(*id));
  }
  if (node.tasks.size() != *count) return {};
  return std::pair{*index, std::move(node)};
}

// The words of a launch that runs ddpgen's per-task setup in tasks mode.
bool runs_task_setup(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i + 1 < command.size(); ++i)
    if (command[i] == "ddpgen-task" && command[i + 1] == "tasks") return true;
  return false;
}

}  // namespace

std::optional<StepLayout> parse_step_layout(std::string_view text) {
  std::optional<unsigned> total;
  StepLayout layout;
  std::set<int> seen;
  for (std::string_view raw : split(text, '\n')) {
    const std::string_view line = trim(raw);
    if (line.empty() || line == "Job step layout:") continue;
    if (!total) {
      total = header_tasks(line);
      if (!total || *total > static_cast<unsigned>(k_max_layout_tasks)) return {};
      continue;
    }
    auto node = node_line(line);
    if (!node || node->first != layout.nodes.size()) return {};
    for (int id : node->second.tasks)
      if (static_cast<unsigned>(id) >= *total || !seen.insert(id).second) return {};
    layout.nodes.push_back(std::move(node->second));
  }
  if (!total || seen.size() != *total || layout.nodes.empty()) return {};
  return layout;
}

std::map<int, int> ranks_by_node(const StepLayout& layout) {
  std::map<int, int> ranks;
  int before = 0;
  for (const StepLayout::Node& node : layout.nodes) {
    for (std::size_t local = 0; local < node.tasks.size(); ++local)
      ranks[node.tasks[local]] = before + static_cast<int>(local);
    before += static_cast<int>(node.tasks.size());
  }
  return ranks;
}

bool numbers_ranks_by_node(const std::vector<std::string>& command,
                           std::optional<std::string_view> spank_ddp) {
  if (!is_srun(command)) return false;
  if (runs_task_setup(command)) return true;
  const std::string option = ddp_option(command);
  if (!option.empty()) return option == "--ddp" || option == "--ddp=tasks";
  if (!spank_ddp) return false;
  return spank_ddp->empty() || *spank_ddp == "(null)" || *spank_ddp == "tasks";
}

}  // namespace ddp::watch
