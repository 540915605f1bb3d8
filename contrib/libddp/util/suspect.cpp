// The suspect line and the names of the faults.
#include "libddp/util/suspect.hpp"

#include <algorithm>
#include <array>

#include "libddp/util/text.hpp"

namespace ddp {
namespace {

constexpr std::array<std::string_view, 7> k_fault_names = {
    "unreachable", "missing-rank", "slow", "fabric", "hang", "hardware-signal", "node-failure"};

constexpr std::string_view k_suspect_prefix = "ddp-check: suspect ";
constexpr std::string_view k_unauthenticated_prefix =
    "ddp-check: unauthenticated, not acted on: suspect ";

std::string run_tag_suffix(std::string_view tag) {
  return " [run " + std::string(tag) + "]";
}

// A value for the line: no line break, no tab.
std::string field(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

std::string_view fault_name(Fault fault) {
  return k_fault_names[static_cast<std::size_t>(fault)];
}

std::optional<Fault> parse_fault(std::string_view name) {
  for (std::size_t i = 0; i < k_fault_names.size(); ++i) {
    if (name == k_fault_names[i]) return static_cast<Fault>(i);
  }
  return std::nullopt;
}

bool valid_run_tag(std::string_view tag) {
  if (tag.size() < 8 || tag.size() > 64) return false;
  return std::all_of(tag.begin(), tag.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string suspect_line(const Suspect& suspect, const SuspectOrigin& origin) {
  std::string evidence = field(suspect.evidence);
  if (evidence.size() > k_max_evidence) evidence = evidence.substr(0, k_max_evidence - 3) + "...";
  const std::string body =
      field(suspect.node) + ": " + std::string(fault_name(suspect.fault)) + ": " + evidence;
  if (!origin.authenticated) return std::string(k_unauthenticated_prefix) + body;
  return std::string(k_suspect_prefix) + body +
         (origin.run_tag.empty() ? "" : run_tag_suffix(origin.run_tag));
}

std::optional<std::string_view> without_run_tag(std::string_view line, std::string_view tag) {
  const std::string suffix = run_tag_suffix(tag);
  if (tag.empty() || !line.ends_with(suffix)) return std::nullopt;
  line.remove_suffix(suffix.size());
  return line;
}

std::optional<Suspect> parse_suspect_line(std::string_view line) {
  const std::size_t at = line.find(k_suspect_prefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + k_suspect_prefix.size());
  const std::size_t colon = rest.find(": ");
  if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
  Suspect s;
  s.node = std::string(rest.substr(0, colon));
  if (s.node.find_first_of(" \t") != std::string::npos) return std::nullopt;
  rest.remove_prefix(colon + 2);
  const std::size_t colon2 = rest.find(": ");
  auto fault = parse_fault(rest.substr(0, colon2));
  if (!fault) return std::nullopt;
  s.fault = *fault;
  if (colon2 != std::string_view::npos)
    s.evidence = std::string(text::trim(rest.substr(colon2 + 2)));
  return s;
}

}  // namespace ddp
