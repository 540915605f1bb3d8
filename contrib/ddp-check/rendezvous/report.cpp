#include "ddp-check/rendezvous/report.hpp"

#include <cstdio>
#include <set>

#include "libddp/core/tuning.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {

std::string who(const Identity& id) {
  return std::string(id.scope == Scope::ranks ? "rank " : "node ") + text::decimal(id.self.rank) +
         " (" + id.self.host + ")";
}

WorldReport judge(const Exchange& ex, const Hello& self, Scope scope) {
  WorldReport report = verify_world(ex.hellos, self, scope);
  if (ex.self_unreachable) report.faults.insert(report.faults.begin(), *ex.self_unreachable);
  if (report.ok()) return report;
  if (ex.refused_count > 0) {
    std::string fault = text::plural(ex.refused_count, "connection") +
                        " refused, not counted: " + ex.refused.front();
    if (ex.refused_count > 1) fault += "; ...";
    report.faults.push_back(fault);
  }
  if (ex.accept_trouble) report.faults.push_back("rank 0: " + *ex.accept_trouble);
  return report;
}

std::string failed_line(const WorldReport& report, const Identity& id) {
  return "FAILED: " + text::plural(report.faults.size(), "fault") + " found by " + who(id);
}

std::vector<std::string> refusal_lines(const Exchange& ex) {
  std::vector<std::string> lines;
  for (const auto& r : ex.refused) lines.push_back("REFUSED: " + r);
  if (ex.refused_count > ex.refused.size())
    lines.push_back("REFUSED: " + text::plural(ex.refused_count - ex.refused.size(),
                                               "more connection", "more connections"));
  return lines;
}

std::string env_text(const EnvList& env) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : env) parts.push_back(name + "=" + value);
  return text::join(parts, " ");
}

std::string ifname_advice(const std::vector<Hello>& hellos) {
  std::set<std::string> names;
  for (const auto& h : hellos) {
    if (h.ifname != "?") names.insert(h.ifname);
  }
  if (names.size() == 1) {
    return "socket_ifname=auto sets " + env_text(socket_ifname_environment(*names.begin()));
  }
  std::string advice = "nodes reach rank 0 through different interfaces:";
  for (const auto& n : names) advice += " " + exact_ifname(n);
  return advice + " (`auto` chooses per node)";
}

std::string topology_ifname_lines(const std::optional<std::string>& destination,
                                  const Result<EnvList>& exported,
                                  const Result<std::string>& by_kind) {
  std::string out;
  if (!destination) {
    out =
        "socket_ifname=auto follows the route to MASTER_ADDR: give --route-to HOST (or set "
        "MASTER_ADDR) to see what it sets on this node\n";
  } else if (exported) {
    out = "socket_ifname=auto sets " + env_text(*exported) + " (route to " +
          text::quote(*destination) + ")\n";
  } else {
    out = "socket_ifname=auto sets nothing for " + text::quote(*destination) +
          ", the step fails: " + exported.error().message + "\n";
  }
  out += "interface by kind, for NCCL_SOCKET_IFNAME by hand: ";
  out += by_kind ? *by_kind : "none (" + by_kind.error().message + ")";
  return out + "\n";
}

std::optional<std::string> nccl_skip_reason(bool nccl_option, Scope scope,
                                            const std::optional<std::string>& unavailable,
                                            const std::vector<Hello>& hellos) {
  if (!nccl_option) return "--no-nccl";
  if (scope != Scope::ranks) return "torchrun mode (a launcher is not a rank)";
  if (unavailable) return *unavailable;
  for (const auto& h : hellos) {
    if (!h.nccl_ready)
      return "rank " + text::decimal(h.rank) + " on " + h.host + " has no GPU or no NCCL";
  }
  return std::nullopt;
}

std::string ok_line(std::size_t processes, Scope scope, std::size_t nodes, std::string_view master,
                    double seconds) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.3f", seconds);
  return "ddp-check: OK: " +
         text::plural(processes, scope == Scope::ranks ? "rank" : "node launcher") + " on " +
         text::plural(nodes, "node") + " reached " + std::string(master) + " in " + elapsed + " s";
}

}  // namespace ddp::check
