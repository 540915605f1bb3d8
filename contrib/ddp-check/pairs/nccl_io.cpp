// The NCCL send/recv rounds of --pairs: rank 0's side and the agent's answer.
#include "ddp-check/pairs/nccl_io.hpp"

#include <algorithm>

#include "ddp-check/nccl/nccl_io.hpp"
#include "ddp-check/pairs/protocol.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

using net::Clock;

Clock::time_point after(double seconds, Clock::time_point deadline) {
  return std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(seconds)));
}

// The answer tagged `tag` from `agent` before `until`. Late lines (an answer to an earlier
// request, a TCP round's answer that came after its round) are passed over; nullopt, and
// `why`, when none came or the line was refused (malformed, a figure out of bounds).
std::optional<NcclPairAnswer> await_answer(PairAgent& agent, std::uint32_t tag,
                                           Clock::time_point until, std::string& why) {
  while (auto line = net::read_line(agent.ctl.fd, agent.buf, until)) {
    if (!line->starts_with("nccl-result ")) continue;
    auto answer = parse_nccl_answer(*line);
    if (!answer) {
      why = "answered what rank 0 refuses (a malformed or out-of-bounds figure)";
      return std::nullopt;
    }
    if (answer->tag == tag) return *answer;
  }
  why = "did not answer in time";
  return std::nullopt;
}

// Sends a fresh NCCL id to both sides of a pair, as ranks 0 and 1; why not, when it could not.
std::optional<std::string> start_pair(PairAgent& a, PairAgent& b, std::uint32_t tag,
                                      Clock::time_point until) {
  auto id = nccl_new_id();
  if (!id) return "rank 0: " + id.error().message;
  if (!net::send_all(a.ctl.fd, format_nccl_request({tag, 0, *id}) + "\n", until) ||
      !net::send_all(b.ctl.fd, format_nccl_request({tag, 1, *id}) + "\n", until)) {
    return "rank 0 could not send the request";
  }
  return std::nullopt;
}

// Reads both sides' answers to `tag`; the pair's figure is the slower side. A side that does
// not answer is silent, and the pair counts for neither.
void collect_pair(PairAgent& a, PairAgent& b, const NodePair& p, std::uint32_t tag,
                  Clock::time_point until, const std::string& where, PairResult& r,
                  std::vector<std::string>& silence, std::vector<std::string>& failures) {
  std::string why_a, why_b;
  const auto first = await_answer(a, tag, until, why_a);
  const auto second = await_answer(b, tag, until, why_b);
  if (!first) silence[p.first] = why_a + where;
  if (!second) silence[p.second] = why_b + where;
  if (!first || !second) return;
  if (first->gb_s && second->gb_s) {
    r.bandwidth = std::min(*first->gb_s, *second->gb_s);
    return;
  }
  std::vector<std::string> why;
  if (!first->gb_s) why.push_back(peer_text(a.name, 64) + ": " + peer_text(first->why, 300));
  if (!second->gb_s) why.push_back(peer_text(b.name, 64) + ": " + peer_text(second->why, 300));
  failures.push_back(pair_name(a, b) + ": " + text::join(why, "; "));
}

}  // namespace

std::vector<PairResult> run_nccl_rounds(std::vector<std::optional<PairAgent>>& agents,
                                        std::vector<std::string>& silence,
                                        const std::vector<PairRound>& rounds,
                                        Clock::time_point deadline,
                                        std::vector<std::string>& failures,
                                        const std::function<void(std::size_t)>& done) {
  std::vector<PairResult> results;
  std::uint32_t tag = 0;
  std::size_t finished = 0;
  for (const PairRound& round : rounds) {
    const auto until = after(k_nccl_round_s, deadline);
    // Every pair of the round is started before any answer is awaited: they run at once.
    std::vector<std::pair<std::size_t, std::uint32_t>> started;  // result index, tag
    for (const NodePair& p : round) {
      results.push_back({p, std::nullopt, std::nullopt});
      auto& a = agents[p.first];
      auto& b = agents[p.second];
      // A node that did not join or fell silent: no figure, and none against its partner.
      if (!a || !b || !silence[p.first].empty() || !silence[p.second].empty()) continue;
      if (auto why = start_pair(*a, *b, ++tag, until)) {
        failures.push_back(pair_name(*a, *b) + ": " + *why);
      } else {
        started.emplace_back(results.size() - 1, tag);
      }
    }
    const std::string where = " (NCCL round " + text::decimal(finished + 1) + ")";
    for (const auto& [index, pair_tag] : started) {
      const NodePair p = results[index].pair;
      collect_pair(*agents[p.first], *agents[p.second], p, pair_tag, until, where, results[index],
                   silence, failures);
    }
    done(++finished);
  }
  return results;
}

std::string answer_nccl_request(std::string_view line, std::uint64_t bytes,
                                Clock::time_point deadline) {
  auto request = parse_nccl_request(line);
  if (!request) return format_nccl_answer({0, std::nullopt, "malformed request"});
  auto gb_s = nccl_sendrecv(request->id_hex, request->rank, bytes, after(k_nccl_pair_s, deadline));
  if (!gb_s) return format_nccl_answer({request->tag, std::nullopt, gb_s.error().message});
  return format_nccl_answer({request->tag, *gb_s, ""});
}

}  // namespace ddp::check
