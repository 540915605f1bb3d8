// The NCCL lines of the pairwise phase and the decision to run the NCCL pairs.
#include "ddp-check/pairs/protocol.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>

#include "ddp-check/nccl/bandwidth.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

// The words of `line` after its first `count` space-separated ones, as one string.
std::string rest_after(std::string_view line, std::size_t count) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < count && at != std::string_view::npos; ++i) {
    at = line.find(' ', at);
    if (at != std::string_view::npos) ++at;
  }
  return at == std::string_view::npos ? std::string() : std::string(line.substr(at));
}

// A reason on one line (a line break would end it on the wire), short enough for read_line().
std::string one_line(std::string s) {
  if (s.size() > 300) s = s.substr(0, 297) + "...";
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s.empty() ? "unknown" : s;
}

std::optional<double> rate(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !(v >= 0) || v > 1e9) return std::nullopt;
  return v;
}

}  // namespace

std::string format_agent_hello(const AgentHello& hello) {
  std::string line = "agent " + hello.node + " " + text::decimal(hello.port);
  if (!hello.nccl_unavailable) return line + " nccl";
  return line + " no-nccl " + one_line(*hello.nccl_unavailable);
}

std::optional<AgentHello> parse_agent_hello(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() < 4 || words[0] != "agent" || words[1].empty()) return std::nullopt;
  auto port = text::parse_uint<std::uint16_t>(words[2]);
  if (!port || *port == 0) return std::nullopt;
  AgentHello hello{std::string(words[1]), *port, std::nullopt};
  if (words[3] == "nccl" && words.size() == 4) return hello;
  if (words[3] != "no-nccl" || words.size() < 5) return std::nullopt;
  hello.nccl_unavailable = rest_after(line, 4);
  return hello;
}

std::string format_nccl_request(const NcclPairRequest& request) {
  return "nccl-pair " + text::decimal(request.tag) + " " +
         text::decimal(request.rank == 1 ? 1 : 0) + " " + request.id_hex;
}

std::optional<NcclPairRequest> parse_nccl_request(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() != 4 || words[0] != "nccl-pair") return std::nullopt;
  auto tag = text::parse_uint<std::uint32_t>(words[1]);
  if (!tag || (words[2] != "0" && words[2] != "1")) return std::nullopt;
  if (words[3].empty() || !from_hex(words[3])) return std::nullopt;
  return NcclPairRequest{*tag, words[2] == "1" ? 1 : 0, std::string(words[3])};
}

std::string format_nccl_answer(const NcclPairAnswer& answer) {
  std::string line = "nccl-result " + text::decimal(answer.tag) + " ";
  if (!answer.gb_s) return line + "- " + one_line(answer.why);
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.4f", *answer.gb_s);
  return line + figure;
}

std::optional<NcclPairAnswer> parse_nccl_answer(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() < 3 || words[0] != "nccl-result") return std::nullopt;
  auto tag = text::parse_uint<std::uint32_t>(words[1]);
  if (!tag) return std::nullopt;
  NcclPairAnswer answer{*tag, std::nullopt, ""};
  if (words[2] == "-") {
    answer.why = words.size() > 3 ? rest_after(line, 3) : "no reason given";
    return answer;
  }
  answer.gb_s = rate(words[2]);
  if (!answer.gb_s || words.size() != 3) return std::nullopt;
  return answer;
}

std::optional<std::string> nccl_pairs_skip(bool nccl_option,
                                           const std::vector<AgentNccl>& registered) {
  if (!nccl_option) return "--no-nccl";
  if (registered.size() < 2) return "fewer than 2 nodes joined the pairwise test";
  // Each reason with the nodes it holds for, in the order of the first node that gave it.
  std::vector<std::pair<std::string, std::vector<std::string>>> reasons;
  std::size_t unable = 0;
  for (const AgentNccl& a : registered) {
    if (!a.unavailable) continue;
    ++unable;
    auto at = std::find_if(reasons.begin(), reasons.end(),
                           [&](const auto& r) { return r.first == *a.unavailable; });
    if (at == reasons.end()) at = reasons.insert(reasons.end(), {*a.unavailable, {}});
    at->second.push_back(text::printable(a.node, 64));
  }
  if (reasons.empty()) return std::nullopt;
  if (reasons.size() == 1 && unable == registered.size()) return text::printable(reasons[0].first);
  std::vector<std::string> parts;
  for (const auto& [why, nodes] : reasons) {
    parts.push_back(text::printable(why) + " on " + text::join(nodes, ", "));
  }
  return text::join(parts, "; ");
}

}  // namespace ddp::check
