// The pairwise phase: one agent per node, rank 0's coordinator, the measurement of one pair.
//
// Agent -> rank 0 (MASTER_PORT + 1):  "agent NODE DATAPORT nccl|no-nccl WHY" (pairs/protocol.hpp)
// rank 0 -> agent:  "serve" (take two connections on DATAPORT), "measure ADDR PORT" (measure
//                   against that peer), "nccl-pair ..." (pairs/nccl_io.hpp), "done"
// agent -> rank 0:  "served", "result GBITS RTT_US" or "result - - WHY", "nccl-result ..."
// measuring agent -> peer, first connection: 'p' bytes echoed (round trips), then 'f' and a
// stream the peer times, answering "n GBITS"; second connection: 'r', and the peer streams.
#include "ddp-check/pairs/tcp_io.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <thread>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/pairs/agent_io.hpp"
#include "ddp-check/pairs/nccl_io.hpp"
#include "ddp-check/pairs/pairs.hpp"
#include "ddp-check/pairs/protocol.hpp"
#include "libddp/util/suspect.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

using namespace net;
constexpr int k_pings = 20;

std::optional<double> number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !(v >= 0)) return std::nullopt;
  return v;
}

// `seconds` from now, or `deadline` when that comes first.
Clock::time_point within(double seconds, Clock::time_point deadline) {
  return std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(seconds)));
}

std::string fixed(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The peer's side of one measurement: echo the pings, time the forward stream, send back.
bool serve_peer(int data, double seconds, Clock::time_point deadline) {
  Fd first = accept_until(data, deadline);
  if (first.fd < 0) return false;
  char c = 0;
  while (wait_fd(first.fd, POLLIN, deadline) && recv(first.fd, &c, 1, 0) == 1 && c == 'p') {
    if (!send_all(first.fd, "p", deadline)) return false;
  }
  if (c != 'f') return false;
  auto forward = receive_rate(first.fd, deadline);
  send_all(first.fd, "n " + (forward ? fixed(*forward, "%.4f") : "-") + "\n", deadline);
  Fd second = accept_until(data, deadline);
  if (second.fd < 0 || !wait_fd(second.fd, POLLIN, deadline) || recv(second.fd, &c, 1, 0) != 1 ||
      c != 'r') {
    return false;
  }
  return send_for(second.fd, seconds, deadline);
}

// The measuring side: "result GBITS RTT_US", the slower direction, or "result - - WHY".
std::string measure(const std::string& addr, std::uint16_t port, double seconds,
                    Clock::time_point deadline) {
  Fd first = connect_tcp(addr, port, std::min(deadline, Clock::now() + std::chrono::seconds(3)));
  if (first.fd < 0) return "result - - cannot connect to " + addr;
  std::vector<double> rtts;
  char c = 0;
  for (int i = 0; i < k_pings; ++i) {
    const auto t0 = Clock::now();
    if (!send_all(first.fd, "p", deadline) || !wait_fd(first.fd, POLLIN, deadline) ||
        recv(first.fd, &c, 1, 0) != 1) {
      return "result - - no answer to a round trip from " + addr;
    }
    rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(rtts.begin(), rtts.end());
  if (!send_all(first.fd, "f", deadline) || !send_for(first.fd, seconds, deadline)) {
    return "result - - the stream to " + addr + " broke";
  }
  std::string buf;
  auto reply = read_line(first.fd, buf, deadline);
  auto forward =
      reply && reply->starts_with("n ") ? number(std::string_view(*reply).substr(2)) : std::nullopt;
  Fd second = connect_tcp(addr, port, std::min(deadline, Clock::now() + std::chrono::seconds(3)));
  if (second.fd < 0 || !send_all(second.fd, "r", deadline)) {
    return "result - - cannot connect to " + addr + " again";
  }
  auto reverse = receive_rate(second.fd, deadline);
  if (!forward || !reverse) return "result - - no stream measured with " + addr;
  return "result " + fixed(std::min(*forward, *reverse), "%.4f") + " " +
         fixed(rtts[rtts.size() / 2], "%.1f");
}

// This node's agent: registers with rank 0, then does what it is told until "done".
int agent(const PairsSetup& s) {
  Fd data = listen_any(0);
  if (data.fd < 0) return 1;
  Fd ctl = connect_tcp(s.master_addr, s.port, s.deadline);
  const AgentHello hello{s.node, port_of(data.fd),
                         s.nccl ? s.nccl_unavailable : std::optional<std::string>("--no-nccl")};
  if (ctl.fd < 0 || !send_all(ctl.fd, format_agent_hello(hello) + "\n", s.deadline)) {
    std::fprintf(stderr, "ddp-check: pairs: %s cannot reach rank 0 at %s:%u\n", s.node.c_str(),
                 s.master_addr.c_str(), s.port);
    return 1;
  }
  std::string buf;
  while (auto line = read_line(ctl.fd, buf, s.deadline)) {
    if (*line == "done") return 0;
    std::string answer;
    if (*line == "serve") {
      answer = serve_peer(data.fd, s.seconds, s.deadline) ? "served" : "not served";
    } else if (line->starts_with("measure ")) {
      auto words = text::split(*line, ' ');
      auto port = words.size() == 3 ? text::parse_uint<std::uint16_t>(words[2]) : std::nullopt;
      answer = port ? measure(std::string(words[1]), *port, s.seconds, s.deadline)
                    : "result - - bad request";
    } else if (line->starts_with("nccl-pair ")) {
      answer = answer_nccl_request(*line, s.nccl_bytes, s.deadline);
    }
    if (!send_all(ctl.fd, answer + "\n", s.deadline)) return 1;
  }
  return 1;
}

// Accepts agents from the admitted addresses until every node has one or the deadline.
std::vector<std::optional<PairAgent>> register_agents(int lfd, const PairsSetup& s,
                                                      Clock::time_point until) {
  std::vector<std::optional<PairAgent>> agents(s.nodes.size());
  std::size_t missing = agents.size();
  while (missing > 0) {
    std::string peer;
    Fd c = accept_until(lfd, until, &peer);
    if (c.fd < 0) break;
    auto at = std::find(s.addresses.begin(), s.addresses.end(), peer);
    if (at == s.addresses.end()) continue;  // not a node of this step: not admitted
    const auto index = static_cast<std::size_t>(at - s.addresses.begin());
    PairAgent a{std::move(c), "", "", peer, 0, std::nullopt};
    auto line = read_line(a.ctl.fd, a.buf, until);
    auto hello = line ? parse_agent_hello(*line) : std::nullopt;
    if (!hello || agents[index]) continue;
    a.name = hello->node;
    a.port = hello->port;
    a.nccl_unavailable = hello->nccl_unavailable;
    agents[index] = std::move(a);
    --missing;
  }
  return agents;
}

// Why a measuring side's answer (`line`, split into `words`) carries no bandwidth.
std::string unmeasured_why(const std::optional<std::string>& line,
                           const std::vector<std::string_view>& words) {
  if (!line) return "no answer in time";
  if (words.size() > 3 && words[0] == "result")
    return line->substr(static_cast<std::size_t>(words[3].data() - line->data()));
  return "malformed answer " + text::quote(*line, 60);
}

// One round: every pair at once; the results of its measuring sides, and a line in `failures`
// for each pair that could not be measured ("node01 - node03: WHY").
void run_round(std::vector<std::optional<PairAgent>>& agents, const PairRound& round,
               const PairsSetup& s, std::vector<PairResult>& results,
               std::vector<std::string>& failures) {
  const auto until = within(2 * s.seconds + k_pairs_round_margin_s, s.deadline);
  std::vector<NodePair> started;
  for (const NodePair& p : round) {
    auto& a = agents[p.first];
    auto& b = agents[p.second];
    if (!a || !b) {
      results.push_back({p, std::nullopt, std::nullopt});
      continue;
    }
    send_all(b->ctl.fd, "serve\n", until);
    send_all(a->ctl.fd, "measure " + b->address + " " + std::to_string(b->port) + "\n", until);
    started.push_back(p);
  }
  for (const NodePair& p : started) {
    auto line = read_line(agents[p.first]->ctl.fd, agents[p.first]->buf, until);
    auto words = line ? text::split(*line, ' ') : std::vector<std::string_view>{};
    PairResult r{p, std::nullopt, std::nullopt};
    if (words.size() >= 3 && words[0] == "result") {
      r.bandwidth = number(words[1]);
      r.rtt_us = number(words[2]);
    }
    if (!r.bandwidth) {
      failures.push_back(pair_name(*agents[p.first], *agents[p.second]) + ": " +
                         text::printable(unmeasured_why(line, words), 200));
    }
    results.push_back(r);
    read_line(agents[p.second]->ctl.fd, agents[p.second]->buf, until);  // "served"
  }
}

// Prints `line` at once: stdout is a pipe to srun, and a watchdog counts lines as progress.
void print_progress(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Prints one measurement's table and verdict line; the verdict.
PairVerdict show(const std::vector<std::string>& names, const std::vector<PairResult>& results,
                 double threshold, const PairMetric& metric) {
  const PairVerdict v = judge_pairs(static_cast<std::uint32_t>(names.size()), results, threshold);
  std::fputs(render_pair_table(names, results, v, metric).c_str(), stdout);
  std::printf("pairs: %s%s\n", metric.name.empty() ? "" : (metric.name + ": ").c_str(),
              describe_pairs(names, v, threshold, metric).c_str());
  return v;
}

// The NCCL rounds, their table, verdict and the pairs not measured; the verdict. `unmeasured`
// is set when a pair could not be measured.
PairVerdict nccl_pairs(std::vector<std::optional<PairAgent>>& agents,
                       const std::vector<std::string>& names, const std::vector<PairRound>& rounds,
                       const PairsSetup& s, bool& unmeasured) {
  std::vector<std::string> failures;
  const auto results = run_nccl_rounds(agents, rounds, s.deadline, failures, [&](std::size_t i) {
    print_progress(round_done(nccl_metric(), i, rounds.size()));
  });
  const PairVerdict v = show(names, results, s.threshold, nccl_metric());
  for (const auto& f : failures) std::printf("pairs: NCCL send/recv not measured: %s\n", f.c_str());
  const bool nothing = std::none_of(results.begin(), results.end(),
                                    [](const PairResult& r) { return r.bandwidth.has_value(); });
  if (nothing && !results.empty()) std::printf("pairs: NCCL send/recv: no pair measured\n");
  unmeasured = !failures.empty() || (nothing && !results.empty());
  return v;
}

// The suspect lines: nodes that did not join, nodes slow over TCP or NCCL; the exit status.
int print_suspects(const std::vector<std::optional<PairAgent>>& agents,
                   const std::vector<std::string>& names, const PairsSetup& s,
                   const std::vector<std::pair<PairVerdict, PairMetric>>& verdicts) {
  int rc = 0;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    if (agents[i]) continue;
    std::printf("%s\n", suspect_line({names[i], Fault::unreachable,
                                      "did not join the pairwise test from " + s.addresses[i], ""})
                            .c_str());
    rc = 1;
  }
  for (const auto& [v, metric] : verdicts) {
    for (std::uint32_t i : v.slow) {
      if (!agents[i]) continue;
      std::printf("%s\n",
                  suspect_line({names[i], Fault::slow, slow_evidence(v, i, metric), ""}).c_str());
      rc = 1;
    }
  }
  return rc;
}

// The nodes that registered and whether each can run NCCL.
std::vector<AgentNccl> registered(const std::vector<std::optional<PairAgent>>& agents) {
  std::vector<AgentNccl> out;
  for (const auto& a : agents) {
    if (a) out.push_back({a->name, a->nccl_unavailable});
  }
  return out;
}

// Rank 0: the schedule, the tables, the verdicts and the suspects; the exit status.
int coordinate(int lfd, const PairsSetup& s) {
  auto agents = register_agents(lfd, s, within(k_pairs_register_s, s.deadline));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    // What an agent calls itself reaches the terminal and the suspect lines: printable only.
    names.push_back(text::printable(agents[i] ? agents[i]->name : s.nodes[i], 64));
  }
  const auto n = static_cast<std::uint32_t>(agents.size());
  const auto rounds = pair_rounds(n, s.max_rounds);
  const auto nccl_skip = nccl_pairs_skip(s.nccl, registered(agents));
  std::printf("%s\n", pairs_header(n, rounds.size(), pair_rounds(n).size(), s.seconds, s.nccl_bytes,
                                   nccl_skip)
                          .c_str());
  std::fflush(stdout);
  std::vector<PairResult> tcp;
  std::vector<std::string> tcp_failures;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    run_round(agents, rounds[i], s, tcp, tcp_failures);
    print_progress(round_done(tcp_metric(), i + 1, rounds.size()));
  }
  std::vector<std::pair<PairVerdict, PairMetric>> verdicts;
  verdicts.emplace_back(show(names, tcp, s.threshold, tcp_metric()), tcp_metric());
  for (const auto& f : tcp_failures) std::printf("pairs: not measured: %s\n", f.c_str());
  // Two nodes that cannot exchange data fail the phase even when neither can be blamed alone:
  // a collective over both would hang.
  const bool tcp_unmeasured = !tcp_failures.empty();
  bool nccl_unmeasured = false;
  if (!nccl_skip) {
    std::fflush(stdout);
    verdicts.emplace_back(nccl_pairs(agents, names, rounds, s, nccl_unmeasured), nccl_metric());
  }
  for (auto& a : agents) {
    if (a) send_all(a->ctl.fd, "done\n", s.deadline);
  }
  const int rc =
      print_suspects(agents, names, s, verdicts) != 0 || tcp_unmeasured || nccl_unmeasured ? 1 : 0;
  std::printf(rc == 0 ? "ddp-check: pairs: OK\n" : "ddp-check: pairs: FAILED\n");
  std::fflush(stdout);
  return rc;
}

}  // namespace

int run_pairs(const PairsSetup& setup) {
  if (!setup.coordinator) return agent(setup);
  // The listener is bound before any agent is told anything; agents retry until then.
  Fd lfd = listen_any(setup.port);
  if (lfd.fd < 0) {
    std::fprintf(stderr, "ddp-check: pairs: rank 0 cannot listen on port %u\n", setup.port);
    return 1;
  }
  int agent_rc = 1;
  std::thread own([&] { agent_rc = agent(setup); });
  const int rc = coordinate(lfd.fd, setup);
  own.join();
  return rc != 0 ? rc : agent_rc;
}

}  // namespace ddp::check
