// The pairwise phase: one agent per node, rank 0's coordinator, the measurement of one pair.
//
// Agent -> rank 0 (pairs_port(MASTER_PORT)):  its registration, MUNGE-signed (pairs/protocol.hpp)
// rank 0 -> agent:  "serve TAG NONCE", "measure TAG ADDR PORT NONCE", "nccl-pair ..."
//                   (pairs/nccl_io.hpp), "done"
// agent -> rank 0:  "served TAG" or "not-served TAG", "result TAG GBITS RTT_US" or
//                   "result TAG - - WHY", "nccl-result ..."
// measuring agent -> peer, each data connection opens with "NONCE\n"; first connection: 'p'
// bytes echoed (round trips), then 'f' and a stream the peer times, answering "n GBITS";
// second connection: 'r', and the peer streams. A connection without the nonce is closed
// unread: whoever reaches a data port first holds nothing up and is never measured.
#include "ddp-check/pairs/tcp_io.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/pairs/agent_io.hpp"
#include "ddp-check/pairs/nccl_io.hpp"
#include "ddp-check/pairs/pairs.hpp"
#include "ddp-check/pairs/protocol.hpp"
#include "ddp-check/rendezvous/auth.hpp"
#include "ddp-check/rendezvous/suspects.hpp"
#include "libddp/sys/system.hpp"
#include "libddp/util/suspect.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

using namespace net;
constexpr int k_pings = 20;
// An agent's bound for one request, short of rank 0's wait for the round
// (k_pairs_round_margin_s), so that a healthy agent whose peer hangs still answers in time and
// the silence is the peer's.
constexpr double k_agent_margin_s = k_pairs_round_margin_s - 3;
// Connections that have not said their first line yet, at most; the oldest goes first.
constexpr std::size_t k_max_pending = 64;
// Refused registrations described in full; the others are counted.
constexpr std::size_t k_max_described = 8;

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

// A fresh nonce of k_nonce_chars lowercase hex digits.
std::string fresh_nonce() {
  if (auto hex = sys::random_hex(k_nonce_chars / 2)) return *hex;
  std::random_device rd;
  std::string out;
  char two[3];
  while (out.size() < k_nonce_chars) {
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(rd()) & 0xffu);
    out += two;
  }
  return out;
}

// Accepts connections on `lfd` until `until` and reads the first line of each, all at once
// (nothing beyond the line is taken from the socket): a connection that says
// nothing holds nothing up. `take(conn, peer, line)` gets each line; it may keep the
// connection (move it out) and returns true to end the wait. A line longer than `max_line`,
// or a connection that closes first, is dropped.
void first_lines(int lfd, std::size_t max_line, Clock::time_point until,
                 const std::function<bool(Fd&, const std::string&, const std::string&)>& take) {
  struct Pending {
    Fd fd;
    std::string peer;
    std::string line;
  };
  std::vector<Pending> pending;
  bool done = false;
  // Reads what `p` has sent; false when it is to be dropped (a line taken, too long, closed).
  // Bytes are looked at first (MSG_PEEK) and taken up to the newline only.
  auto read_from = [&](Pending& p) {
    char buf[4096];
    for (;;) {
      const ssize_t seen = recv(p.fd.fd, buf, sizeof buf, MSG_PEEK);
      if (seen <= 0) return seen < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
      const auto* nl =
          static_cast<const char*>(std::memchr(buf, '\n', static_cast<std::size_t>(seen)));
      const std::size_t want =
          nl ? static_cast<std::size_t>(nl - buf) + 1 : static_cast<std::size_t>(seen);
      if (recv(p.fd.fd, buf, want, 0) != static_cast<ssize_t>(want)) return false;
      p.line.append(buf, nl ? want - 1 : want);
      if (p.line.size() > max_line) return false;
      if (nl) {
        done = take(p.fd, p.peer, p.line);
        return false;
      }
    }
  };
  while (!done && Clock::now() < until) {
    std::vector<pollfd> fds{{lfd, POLLIN, 0}};
    for (const auto& p : pending) fds.push_back({p.fd.fd, POLLIN, 0});
    const int n = poll(fds.data(), fds.size(), poll_timeout(Clock::now(), until));
    if (n < 0 && errno != EINTR) return;
    if (n <= 0) continue;
    // Oldest first: who connected first is heard first.
    std::vector<bool> keep(pending.size(), true);
    for (std::size_t i = 0; i < pending.size() && !done; ++i) {
      if (fds[i + 1].revents != 0) keep[i] = read_from(pending[i]);
    }
    if (done) return;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if (keep[i] && kept++ != i) pending[kept - 1] = std::move(pending[i]);
    }
    pending.resize(kept);
    if (fds[0].revents == 0) continue;
    for (;;) {
      std::string peer;
      Fd c = accept_now(lfd, &peer);
      if (c.fd < 0) break;
      // What a peer sent with its connect is read at once: a flood of silent connections
      // accepted after it cannot push it out.
      Pending p{std::move(c), std::move(peer), ""};
      if (!read_from(p)) {
        if (done) return;
        continue;
      }
      if (pending.size() >= k_max_pending) pending.erase(pending.begin());
      pending.push_back(std::move(p));
    }
  }
}

// The data connection that opens with `nonce`, before `until`; fd -1 when none came.
Fd accept_peer(int data, const std::string& nonce, Clock::time_point until) {
  Fd found;
  first_lines(data, k_nonce_chars, until, [&](Fd& c, const std::string&, const std::string& l) {
    if (l != nonce) return false;
    found = std::move(c);
    return true;
  });
  return found;
}

// The peer's side of one measurement: echo the pings, time the forward stream, send back.
bool serve_peer(int data, const std::string& nonce, double seconds, Clock::time_point until) {
  Fd first = accept_peer(data, nonce, until);
  if (first.fd < 0) return false;
  char c = 0;
  while (wait_fd(first.fd, POLLIN, until) && recv(first.fd, &c, 1, 0) == 1 && c == 'p') {
    if (!send_all(first.fd, "p", until)) return false;
  }
  if (c != 'f') return false;
  auto forward = receive_rate(first.fd, until);
  send_all(first.fd, "n " + (forward ? fixed(*forward, "%.4f") : "-") + "\n", until);
  Fd second = accept_peer(data, nonce, until);
  if (second.fd < 0 || !wait_fd(second.fd, POLLIN, until) || recv(second.fd, &c, 1, 0) != 1 ||
      c != 'r') {
    return false;
  }
  return send_for(second.fd, seconds, until);
}

// A data connection to the peer of `m`, opened with the pair's nonce.
Fd open_data(const TcpMeasure& m, Clock::time_point until) {
  Fd c = connect_tcp(m.addr, m.port, std::min(until, Clock::now() + std::chrono::seconds(3)));
  if (c.fd >= 0 && !send_all(c.fd, m.nonce + "\n", until)) return Fd{};
  return c;
}

// The measuring side: both figures (the slower direction), or why not.
TcpAnswer measure(const TcpMeasure& m, double seconds, Clock::time_point until) {
  TcpAnswer out{m.tag, std::nullopt, std::nullopt, ""};
  const std::string& addr = m.addr;
  Fd first = open_data(m, until);
  if (first.fd < 0) return out.why = "cannot connect to " + addr, out;
  std::vector<double> rtts;
  char c = 0;
  for (int i = 0; i < k_pings; ++i) {
    const auto t0 = Clock::now();
    if (!send_all(first.fd, "p", until) || !wait_fd(first.fd, POLLIN, until) ||
        recv(first.fd, &c, 1, 0) != 1) {
      return out.why = "no answer to a round trip from " + addr, out;
    }
    rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(rtts.begin(), rtts.end());
  if (!send_all(first.fd, "f", until) || !send_for(first.fd, seconds, until)) {
    return out.why = "the stream to " + addr + " broke", out;
  }
  std::string buf;
  auto reply = read_line(first.fd, buf, until);
  auto forward = reply && reply->starts_with("n ")
                     ? bounded_figure(std::string_view(*reply).substr(2), k_max_tcp_gbit_s)
                     : std::nullopt;
  Fd second = open_data(m, until);
  if (second.fd < 0 || !send_all(second.fd, "r", until)) {
    return out.why = "cannot connect to " + addr + " again", out;
  }
  auto reverse = receive_rate(second.fd, until);
  if (!forward || !reverse) return out.why = "no stream measured with " + addr, out;
  out.gbit_s = std::min({*forward, *reverse, k_max_tcp_gbit_s});
  out.rtt_us = std::min(rtts[rtts.size() / 2], k_max_rtt_us);
  return out;
}

// This node's registration line, signed when the check authenticates.
Result<std::string> registration(const PairsSetup& s, std::uint16_t data_port) {
  AgentHello hello{s.node, data_port,
                   s.nccl ? s.nccl_unavailable : std::optional<std::string>("--no-nccl")};
  hello.job = s.binding.job;
  hello.step = s.binding.step;
  hello.master_port = s.binding.port;
  hello.auth = s.auth.mode;
  const std::string unsigned_line = format_agent_hello(hello);
  if (s.auth.mode == AuthMode::none) return unsigned_line;
  auto cred =
      munge::sign(agent_signed_part(unsigned_line), s.auth.uid, s.auth.ttl_s, s.auth.munge_socket);
  if (!cred) return std::unexpected(cred.error());
  hello.cred = *cred;
  return format_agent_hello(hello);
}

// This node's agent: registers with rank 0, then does what it is told until "done". Each
// request is bounded by its round, never by the phase alone.
int agent(const PairsSetup& s) {
  Fd data = listen_any(0);
  if (data.fd < 0) return 1;
  auto line = registration(s, port_of(data.fd));
  if (!line) {
    std::fprintf(stderr, "ddp-check: pairs: %s: %s\n", s.node.c_str(),
                 line.error().message.c_str());
    return 1;
  }
  Fd ctl = connect_tcp(s.master_addr, s.port, s.deadline);
  if (ctl.fd < 0 || !send_all(ctl.fd, *line + "\n", s.deadline)) {
    std::fprintf(stderr, "ddp-check: pairs: %s cannot reach rank 0 at %s:%u\n", s.node.c_str(),
                 s.master_addr.c_str(), s.port);
    return 1;
  }
  std::string buf;
  while (auto request = read_line(ctl.fd, buf, s.deadline)) {
    if (*request == "done") return 0;
    const auto until = within(2 * s.seconds + k_agent_margin_s, s.deadline);
    std::string answer;
    if (auto serve = parse_serve(*request)) {
      answer = std::string(serve_peer(data.fd, serve->nonce, s.seconds, until) ? "served "
                                                                               : "not-served ") +
               text::decimal(serve->tag);
    } else if (auto m = parse_measure(*request)) {
      answer = format_tcp_answer(measure(*m, s.seconds, until));
    } else if (request->starts_with("nccl-pair ")) {
      answer = answer_nccl_request(*request, s.nccl_bytes, s.deadline);
    } else {
      continue;  // nothing rank 0 sends: no answer
    }
    if (!send_all(ctl.fd, answer + "\n", s.deadline)) return 1;
  }
  return 1;
}

// Rank 0's registrations: who came, and what was refused.
struct Registrations {
  std::vector<std::optional<PairAgent>> agents;
  std::vector<std::string> refused;  // the first k_max_described, described
  std::size_t refused_count = 0;
};

// Why rank 0 refuses the registration `line` from a peer at whose address the step expects
// the nodes `expected`, or nullopt when it admits it into `at` (the index of the node whose
// address the peer's is). The node's name is the one the credential signs, and one of
// `expected`.
std::optional<std::string> admit_agent(const PairsSetup& s, const Registrations& r,
                                       const std::string& line, std::size_t at,
                                       const std::vector<std::string>& expected,
                                       std::optional<AgentHello>& hello) {
  hello = parse_agent_hello(line);
  if (!hello) return std::string("not a registration of this version of ddp-check");
  if (auto why = agent_binding_refusal(*hello, s.binding, s.auth.mode)) return why;
  if (s.auth.mode == AuthMode::munge) {
    const std::string signed_text = agent_signed_part(line);
    if (auto why = credential_refusal(munge::decode(hello->cred, s.auth.munge_socket), signed_text,
                                      s.auth.uid))
      return why;
  }
  if (auto why = agent_name_refusal(hello->node, expected, s.nodes)) return why;
  for (const auto& a : r.agents) {
    if (a && same_node(a->name, hello->node)) return "node " + hello->node + " registered already";
  }
  if (r.agents[at]) return "an agent from this address registered already";
  return std::nullopt;
}

// Accepts agents until every node has one or `until`; each from a node's address, with a
// registration bound to this step and, unless --auth=none, a valid credential of this user.
Registrations register_agents(int lfd, const PairsSetup& s, Clock::time_point until) {
  Registrations r;
  r.agents.resize(s.nodes.size());
  std::size_t missing = r.agents.size();
  auto refuse = [&](const std::string& peer, const std::optional<AgentHello>& hello,
                    const std::string& why) {
    ++r.refused_count;
    if (r.refused.size() >= k_max_described) return;
    r.refused.push_back("refused a pairwise agent from " + peer_text(peer, 64) +
                        (hello ? " (claims node " + peer_text(hello->node, 64) + ")" : "") + ": " +
                        peer_text(why));
  };
  if (missing == 0) return r;
  first_lines(lfd, k_max_line, until, [&](Fd& c, const std::string& peer, const std::string& l) {
    auto at = std::find(s.addresses.begin(), s.addresses.end(), peer);
    std::optional<AgentHello> hello;
    if (at == s.addresses.end()) {
      refuse(peer, std::nullopt, "not the address of a node of this step");
      return false;
    }
    // The same address may stand for several nodes (loopback in tests): the node of that
    // address with the name the registration gives; admit_agent() refuses any other name.
    std::size_t index = static_cast<std::size_t>(at - s.addresses.begin());
    std::vector<std::string> expected;
    const auto claimed = parse_agent_hello(l);
    bool found = false;
    for (std::size_t k = 0; k < s.addresses.size(); ++k) {
      if (s.addresses[k] != peer) continue;
      expected.push_back(s.nodes[k]);
      if (!found && claimed && same_node(s.nodes[k], claimed->node)) {
        index = k;
        found = true;
      }
    }
    if (auto why = admit_agent(s, r, l, index, expected, hello)) {
      refuse(peer, hello, *why);
      return false;
    }
    r.agents[index] =
        PairAgent{std::move(c), "", hello->node, peer, hello->port, hello->nccl_unavailable};
    return --missing == 0;
  });
  return r;
}

// Why a node is silent: empty while it is not.
using Silence = std::vector<std::string>;

std::uint32_t tag_of(const TcpAnswer& a) {
  return a.tag;
}
std::uint32_t tag_of(const std::pair<std::uint32_t, bool>& a) {
  return a.first;
}

// The answer parsed by `parse` with tag `tag` from `agent` before `until`: earlier answers
// (stale tags) are passed over; a line that names the answer's kind but does not parse (a
// figure out of bounds, inf, NaN) is refused, as no answer. `why` says why there is none.
template <class Parse>
auto await_tagged(PairAgent& agent, std::string_view kind, std::uint32_t tag,
                  Clock::time_point until, Parse parse, std::string& why)
    -> decltype(parse(std::string_view())) {
  while (auto line = read_line(agent.ctl.fd, agent.buf, until)) {
    auto answer = parse(*line);
    if (!answer) {
      if (!line->starts_with(kind)) continue;  // a late line of another kind
      why = "answered what rank 0 refuses (a malformed or out-of-bounds figure)";
      return std::nullopt;
    }
    if (tag_of(*answer) == tag) return answer;
  }
  why = "did not answer in time";
  return std::nullopt;
}

// Why a measuring side's answer carries no bandwidth.
std::string unmeasured_why(const TcpAnswer& answer) {
  return peer_text(answer.why, 200);
}

// One round: every pair at once; the results of its measuring sides, and a line in `failures`
// for each pair that could not be measured ("node01 - node03: WHY"). A side that does not
// answer in the round, or answers what rank 0 refuses, becomes silent (`silence`): its pair
// counts for neither side, and it takes part in no later round.
void run_round(std::vector<std::optional<PairAgent>>& agents, Silence& silence,
               const PairRound& round, std::size_t round_no, const PairsSetup& s,
               std::uint32_t& tag, std::vector<PairResult>& results,
               std::vector<std::string>& failures) {
  const auto until = within(2 * s.seconds + k_pairs_round_margin_s, s.deadline);
  const std::string where = " (TCP round " + text::decimal(round_no) + ")";
  struct Started {
    std::size_t index;
    std::uint32_t tag;
  };
  std::vector<Started> started;
  for (const NodePair& p : round) {
    results.push_back({p, std::nullopt, std::nullopt});
    auto& a = agents[p.first];
    auto& b = agents[p.second];
    if (!a || !b || !silence[p.first].empty() || !silence[p.second].empty()) continue;
    const std::string nonce = fresh_nonce();
    ++tag;
    if (!send_all(b->ctl.fd, format_serve({tag, nonce}) + "\n", until)) {
      silence[p.second] = "rank 0 could not send it its request" + where;
      continue;
    }
    if (!send_all(a->ctl.fd, format_measure({tag, b->address, b->port, nonce}) + "\n", until)) {
      silence[p.first] = "rank 0 could not send it its request" + where;
      continue;
    }
    started.push_back({results.size() - 1, tag});
  }
  for (const Started& st : started) {
    PairResult& r = results[st.index];
    PairAgent& a = *agents[r.pair.first];
    PairAgent& b = *agents[r.pair.second];
    std::string why_a, why_b;
    auto answer = await_tagged(a, "result", st.tag, until, parse_tcp_answer, why_a);
    auto served = await_tagged(b, "served", st.tag, until, parse_served, why_b);
    if (!answer) silence[r.pair.first] = why_a + where;
    if (!served) silence[r.pair.second] = why_b + where;
    if (!answer || !served) continue;
    r.bandwidth = answer->gbit_s;
    r.rtt_us = answer->rtt_us;
    if (!r.bandwidth) failures.push_back(pair_name(a, b) + ": " + unmeasured_why(*answer));
  }
}

// Prints `line` at once: stdout is a pipe to srun, and a watchdog counts lines as progress.
void print_progress(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Prints one measurement's table and verdict line; the verdict.
PairVerdict show(const std::vector<std::string>& names, const std::vector<PairResult>& results,
                 const Silence& silence, double threshold, const PairMetric& metric) {
  std::vector<bool> silent;
  for (const auto& why : silence) silent.push_back(!why.empty());
  const PairVerdict v =
      judge_pairs(static_cast<std::uint32_t>(names.size()), results, threshold, silent);
  std::fputs(render_pair_table(names, results, v, metric).c_str(), stdout);
  std::printf("pairs: %s%s\n", metric.name.empty() ? "" : (metric.name + ": ").c_str(),
              describe_pairs(names, v, threshold, metric).c_str());
  return v;
}

// The NCCL rounds, their table, verdict and the pairs not measured; the verdict. `unmeasured`
// is set when a pair could not be measured.
PairVerdict nccl_pairs(std::vector<std::optional<PairAgent>>& agents, Silence& silence,
                       const std::vector<std::string>& names, const std::vector<PairRound>& rounds,
                       const PairsSetup& s, bool& unmeasured) {
  std::vector<std::string> failures;
  const auto results = run_nccl_rounds(
      agents, silence, rounds, s.deadline, failures,
      [&](std::size_t i) { print_progress(round_done(nccl_metric(), i, rounds.size())); });
  const PairVerdict v = show(names, results, silence, s.threshold, nccl_metric());
  for (const auto& f : failures) std::printf("pairs: NCCL send/recv not measured: %s\n", f.c_str());
  const bool nothing = std::none_of(results.begin(), results.end(),
                                    [](const PairResult& r) { return r.bandwidth.has_value(); });
  if (nothing && !results.empty()) std::printf("pairs: NCCL send/recv: no pair measured\n");
  unmeasured = !failures.empty() || (nothing && !results.empty());
  return v;
}

// The suspect lines: nodes that did not join, nodes whose agent fell silent, nodes slow over
// TCP or NCCL; the exit status. A silent node is named as silent, never its partners.
int print_suspects(const std::vector<std::optional<PairAgent>>& agents, const Silence& silence,
                   const std::vector<std::string>& names, const PairsSetup& s,
                   const std::vector<std::pair<PairVerdict, PairMetric>>& verdicts) {
  int rc = 0;
  // Under --auth=none nobody proved which node an agent is: the lines are for people only.
  const SuspectOrigin origin{s.auth.mode == AuthMode::munge, s.run_tag};
  for (std::size_t i = 0; i < agents.size(); ++i) {
    std::string evidence;
    if (!agents[i]) {
      evidence = "did not join the pairwise test from " + peer_text(s.addresses[i], 64);
    } else if (!silence[i].empty()) {
      evidence = "its pairwise agent " + silence[i];
    } else {
      continue;
    }
    std::printf("%s\n", suspect_line({names[i], Fault::unreachable, evidence, ""}, origin).c_str());
    rc = 1;
  }
  for (const auto& [v, metric] : verdicts) {
    for (std::uint32_t i : v.slow) {
      if (!agents[i] || !silence[i].empty()) continue;
      std::printf(
          "%s\n",
          suspect_line({names[i], Fault::slow, slow_evidence(v, i, metric), ""}, origin).c_str());
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
  Registrations reg = register_agents(lfd, s, within(k_pairs_register_s, s.deadline));
  for (const auto& line : reg.refused)
    std::fprintf(stderr, "ddp-check: pairs: REFUSED: %s\n", line.c_str());
  if (reg.refused_count > reg.refused.size())
    std::fprintf(stderr, "ddp-check: pairs: REFUSED: %s\n",
                 text::plural(reg.refused_count - reg.refused.size(), "more registration").c_str());
  auto& agents = reg.agents;
  Silence silence(agents.size());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    // The name the agent's credential signs (with --auth=none, the one it gave), printable.
    names.push_back(peer_text(agents[i] ? agents[i]->name : s.nodes[i], 64));
  }
  const auto n = static_cast<std::uint32_t>(agents.size());
  const auto rounds = pair_rounds(n, s.max_rounds);
  const auto nccl_skip = nccl_pairs_skip(s.nccl, registered(agents));
  std::printf("%s\n", pairs_header(n, rounds.size(), pair_rounds(n).size(), s.seconds, s.nccl_bytes,
                                   nccl_skip ? std::optional(peer_text(*nccl_skip)) : std::nullopt)
                          .c_str());
  std::fflush(stdout);
  std::vector<PairResult> tcp;
  std::vector<std::string> tcp_failures;
  std::uint32_t tag = 0;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    run_round(agents, silence, rounds[i], i + 1, s, tag, tcp, tcp_failures);
    print_progress(round_done(tcp_metric(), i + 1, rounds.size()));
  }
  std::vector<std::pair<PairVerdict, PairMetric>> verdicts;
  verdicts.emplace_back(show(names, tcp, silence, s.threshold, tcp_metric()), tcp_metric());
  for (const auto& f : tcp_failures) std::printf("pairs: not measured: %s\n", f.c_str());
  // Two nodes that cannot exchange data fail the phase even when neither can be blamed alone:
  // a collective over both would hang.
  const bool tcp_unmeasured = !tcp_failures.empty();
  bool nccl_unmeasured = false;
  if (!nccl_skip) {
    std::fflush(stdout);
    verdicts.emplace_back(nccl_pairs(agents, silence, names, rounds, s, nccl_unmeasured),
                          nccl_metric());
  }
  for (std::size_t i = 0; i < agents.size(); ++i) {
    if (agents[i] && !silence[i].empty())
      std::printf("pairs: %s %s\n", names[i].c_str(), silence[i].c_str());
  }
  for (auto& a : agents) {
    if (a) send_all(a->ctl.fd, "done\n", within(1, s.deadline));
  }
  const int rc =
      print_suspects(agents, silence, names, s, verdicts) != 0 || tcp_unmeasured || nccl_unmeasured
          ? 1
          : 0;
  std::printf(rc == 0 ? "ddp-check: pairs: OK\n" : "ddp-check: pairs: FAILED\n");
  std::fflush(stdout);
  return rc;
}

}  // namespace

int run_pairs(const PairsSetup& setup) {
  if (setup.port == 0) {
    std::fprintf(stderr, "ddp-check: pairs: %s\n", setup.port_error.c_str());
    return 1;
  }
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
