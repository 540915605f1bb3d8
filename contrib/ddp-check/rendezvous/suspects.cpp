#include "ddp-check/rendezvous/suspects.hpp"

#include <set>

namespace ddp::check {
namespace {

std::string short_name(const std::string& name) {
  return name.substr(0, name.find('.'));
}

}  // namespace

bool same_node(std::string_view a, std::string_view b) {
  return a.substr(0, a.find('.')) == b.substr(0, b.find('.'));
}

std::vector<std::string> silent_nodes(const std::vector<std::string>& step_nodes,
                                      std::span<const Hello> hellos) {
  std::set<std::string> heard;
  for (const Hello& h : hellos) {
    heard.insert(h.host);
    heard.insert(short_name(h.host));
  }
  std::vector<std::string> out;
  for (const std::string& node : step_nodes) {
    if (!heard.contains(node) && !heard.contains(short_name(node))) out.push_back(node);
  }
  return out;
}

WorldSuspects world_suspects(const std::vector<std::string>& step_nodes,
                             std::span<const Hello> hellos, const std::string& head) {
  const std::vector<std::string> silent = silent_nodes(step_nodes, hellos);
  if (silent.empty()) return {};
  const std::string of = std::to_string(silent.size()) + " of the step's " +
                         std::to_string(step_nodes.size()) + " nodes sent rank 0 on " + head +
                         " no hello";
  if (step_nodes.size() > 1 && silent.size() * 2 == step_nodes.size()) {
    return {{},
            of + ": with as many silent nodes as answering ones, the fault may lie on either "
                 "side"};
  }
  if (step_nodes.size() > 1 && silent.size() * 2 > step_nodes.size()) {
    return {{{head, Fault::unreachable, of, ""}}, ""};
  }
  WorldSuspects out;
  for (const std::string& node : silent) {
    out.suspects.push_back(
        {node, Fault::missing_rank, "no rank on " + node + " reached rank 0 on " + head, ""});
  }
  return out;
}

}  // namespace ddp::check
