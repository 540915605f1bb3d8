#include "ddp-watch/activity.hpp"

#include "ddp-watch/trust.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {

namespace {
constexpr std::string_view k_prefix = "ddp-watch-probe: ";
}  // namespace

std::string probe_line(std::string_view node, long pid, unsigned long long wchar) {
  return std::string(k_prefix) + std::string(node) + " " + std::to_string(pid) + " " +
         std::to_string(wchar);
}

std::optional<Activity> parse_probe(std::string_view output) {
  Activity a;
  for (std::string_view line : text::split(output, '\n')) {
    if (!line.starts_with(k_prefix) || a.written.size() >= k_max_probed) continue;
    auto fields = text::split(line.substr(k_prefix.size()), ' ');
    if (fields.size() != 3 || !is_node_name(fields[0])) continue;
    auto pid = text::parse_uint<unsigned long>(fields[1]);
    auto wchar = text::parse_uint<unsigned long long>(fields[2]);
    if (!pid || !wchar) continue;
    a.written[std::string(fields[0]) + " " + std::string(fields[1])] = *wchar;
  }
  if (a.written.empty()) return std::nullopt;
  return a;
}

void note_first_counts(Activity& seen, const Activity& probe) {
  for (const auto& [key, count] : probe.written) {
    if (seen.written.size() >= k_max_probed) return;
    seen.written.emplace(key, count);
  }
}

bool wrote_unseen_between(const Activity& seen, const Activity& before, const Activity& after) {
  for (const auto& [key, count] : after.written) {
    auto it = before.written.find(key);
    if (it == before.written.end() || count <= it->second) continue;
    auto first = seen.written.find(key);
    const unsigned long long from = first != seen.written.end() ? first->second : it->second;
    // A count below its first (the pid reused by a new process) is counted from zero.
    const unsigned long long unseen = count >= from ? count - from : count;
    if (unseen <= k_max_unseen) return true;
  }
  return false;
}

}  // namespace ddp::watch
