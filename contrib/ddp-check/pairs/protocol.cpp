// The NCCL lines of the pairwise phase and the decision to run the NCCL pairs.
#include "ddp-check/pairs/protocol.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "ddp-check/nccl/bandwidth.hpp"
#include "ddp-check/rendezvous/suspects.hpp"
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

// A word of a line: nonempty, printable ASCII without spaces (what wire_token() writes).
bool token(std::string_view word) {
  return !word.empty() && word.size() <= k_max_credential &&
         std::all_of(word.begin(), word.end(), [](char c) { return c > ' ' && c < 127; });
}

std::optional<std::uint32_t> tag_of(std::string_view word) {
  return text::parse_uint<std::uint32_t>(word);
}

// The words of a registration before its NCCL part: agent NODE DATAPORT JOB STEP MPORT AUTH
// CRED.
constexpr std::size_t k_agent_words = 8;
constexpr std::size_t k_cred_word = 7;

}  // namespace

std::optional<double> bounded_figure(std::string_view s, double max) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v) || !(v >= 0) || v > max)
    return std::nullopt;
  return v;
}

std::string format_agent_hello(const AgentHello& hello) {
  std::string line = "agent " + wire_token(hello.node, 64) + " " + text::decimal(hello.port) + " " +
                     wire_token(hello.job) + " " + wire_token(hello.step) + " " +
                     text::decimal(hello.master_port) + " " +
                     (hello.auth == AuthMode::munge ? "munge" : "none") + " " +
                     (hello.cred.empty() ? "-" : hello.cred);
  if (!hello.nccl_unavailable) return line + " nccl";
  return line + " no-nccl " + one_line(*hello.nccl_unavailable);
}

std::optional<AgentHello> parse_agent_hello(std::string_view line) {
  if (line.size() > k_max_line) return std::nullopt;
  const auto words = text::split(line, ' ');
  if (words.size() < k_agent_words + 1 || words[0] != "agent") return std::nullopt;
  for (std::size_t i = 1; i < k_agent_words; ++i) {
    if (!token(words[i])) return std::nullopt;
  }
  if (words[1].size() > 64 || words[3].size() > k_max_value || words[4].size() > k_max_value)
    return std::nullopt;
  auto port = text::parse_uint<std::uint16_t>(words[2]);
  auto master_port = text::parse_uint<std::uint16_t>(words[5]);
  if (!port || *port == 0 || !master_port || *master_port == 0) return std::nullopt;
  if (words[6] != "munge" && words[6] != "none") return std::nullopt;
  AgentHello hello;
  hello.node = std::string(words[1]);
  hello.port = *port;
  hello.job = std::string(words[3]);
  hello.step = std::string(words[4]);
  hello.master_port = *master_port;
  hello.auth = words[6] == "munge" ? AuthMode::munge : AuthMode::none;
  hello.cred = std::string(words[k_cred_word]);
  const std::string_view nccl = words[k_agent_words];
  if (nccl == "nccl" && words.size() == k_agent_words + 1) return hello;
  if (nccl != "no-nccl" || words.size() < k_agent_words + 2) return std::nullopt;
  hello.nccl_unavailable = rest_after(line, k_agent_words + 1);
  return hello;
}

std::string agent_signed_part(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() < k_agent_words + 1) return "";
  const auto begin = static_cast<std::size_t>(words[k_cred_word].data() - line.data());
  const std::size_t end = begin + words[k_cred_word].size();
  return std::string(line.substr(0, begin - 1)) + std::string(line.substr(end));
}

std::optional<std::string> agent_binding_refusal(const AgentHello& hello, const StepBinding& own,
                                                 AuthMode mode) {
  if (hello.job != own.job || hello.step != own.step) {
    return "its registration belongs to job " + hello.job + " step " + hello.step +
           ", this check is job " + own.job + " step " + own.step;
  }
  if (hello.master_port != own.port) {
    return "its registration names MASTER_PORT " + text::decimal(hello.master_port) +
           ", this check's is " + text::decimal(own.port);
  }
  if (mode == AuthMode::munge && hello.auth != AuthMode::munge) {
    return "its registration carries no MUNGE credential, and this check accepts only signed "
           "agents";
  }
  return std::nullopt;
}

std::optional<std::string> agent_name_refusal(std::string_view claimed,
                                              const std::vector<std::string>& expected,
                                              const std::vector<std::string>& step) {
  auto names = [&](const std::vector<std::string>& nodes) {
    return std::any_of(nodes.begin(), nodes.end(),
                       [&](const std::string& node) { return same_node(claimed, node); });
  };
  if (names(expected)) return std::nullopt;
  if (expected.empty()) return "the step has no node at its address";
  const bool one = expected.size() == 1;
  if (one && !names(step)) return std::nullopt;
  return "it claims node " + std::string(claimed) + ", but the step's node" + (one ? "" : "s") +
         " at its address " + (one ? "is " : "are ") + text::join(expected, ", ");
}

Result<std::uint16_t> pairs_port(std::uint32_t master_port) {
  if (master_port == 0 || master_port > 65535) {
    return fail("MASTER_PORT " + text::decimal(master_port) +
                " is outside 1-65535: the pairwise phase has no port");
  }
  return static_cast<std::uint16_t>(master_port < 65535 ? master_port + 1 : master_port - 1);
}

bool valid_nonce(std::string_view nonce) {
  return nonce.size() == k_nonce_chars && std::all_of(nonce.begin(), nonce.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string format_serve(const TcpServe& request) {
  return "serve " + text::decimal(request.tag) + " " + request.nonce;
}

std::optional<TcpServe> parse_serve(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() != 3 || words[0] != "serve") return std::nullopt;
  auto tag = tag_of(words[1]);
  if (!tag || !valid_nonce(words[2])) return std::nullopt;
  return TcpServe{*tag, std::string(words[2])};
}

std::string format_measure(const TcpMeasure& request) {
  return "measure " + text::decimal(request.tag) + " " + request.addr + " " +
         text::decimal(request.port) + " " + request.nonce;
}

std::optional<TcpMeasure> parse_measure(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() != 5 || words[0] != "measure") return std::nullopt;
  auto tag = tag_of(words[1]);
  auto port = text::parse_uint<std::uint16_t>(words[3]);
  if (!tag || !token(words[2]) || !port || *port == 0 || !valid_nonce(words[4]))
    return std::nullopt;
  return TcpMeasure{*tag, std::string(words[2]), *port, std::string(words[4])};
}

std::string format_tcp_answer(const TcpAnswer& answer) {
  std::string line = "result " + text::decimal(answer.tag) + " ";
  if (!answer.gbit_s || !answer.rtt_us) return line + "- - " + one_line(answer.why);
  char figures[64];
  std::snprintf(figures, sizeof figures, "%.4f %.1f", *answer.gbit_s, *answer.rtt_us);
  return line + figures;
}

std::optional<TcpAnswer> parse_tcp_answer(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() < 4 || words[0] != "result") return std::nullopt;
  auto tag = tag_of(words[1]);
  if (!tag) return std::nullopt;
  TcpAnswer answer{*tag, std::nullopt, std::nullopt, ""};
  if (words[2] == "-" && words[3] == "-") {
    answer.why = words.size() > 4 ? rest_after(line, 4) : "no reason given";
    return answer;
  }
  answer.gbit_s = bounded_figure(words[2], k_max_tcp_gbit_s);
  answer.rtt_us = bounded_figure(words[3], k_max_rtt_us);
  if (!answer.gbit_s || !answer.rtt_us || words.size() != 4) return std::nullopt;
  return answer;
}

std::optional<std::pair<std::uint32_t, bool>> parse_served(std::string_view line) {
  const auto words = text::split(line, ' ');
  if (words.size() != 2 || (words[0] != "served" && words[0] != "not-served")) return std::nullopt;
  auto tag = tag_of(words[1]);
  if (!tag) return std::nullopt;
  return std::pair(*tag, words[0] == "served");
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
  answer.gb_s = bounded_figure(words[2], k_max_nccl_gb_s);
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
