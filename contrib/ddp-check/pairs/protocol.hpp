// The control lines of the pairwise phase, their admission and bounds, and whether the NCCL
// pairs run. Pure: lines in, values out, so that tests drive them with tables.
//
// Agent -> rank 0:  "agent NODE DATAPORT JOB STEP MASTER_PORT AUTH CRED nccl" (it can run NCCL
//                   send/recv) or "... CRED no-nccl WHY": the registration, bound to the step
//                   and, with AUTH "munge", signed by a MUNGE credential CRED of everything on
//                   the line but CRED itself (agent_signed_part); CRED is "-" with AUTH "none"
// rank 0 -> agent:  "serve TAG NONCE" (take the two data connections that open with NONCE),
//                   "measure TAG ADDR PORT NONCE" (measure against that peer, opening each data
//                   connection with NONCE), "nccl-pair TAG RANK ID" (join the two-rank
//                   communicator ID, hex, as RANK), "done"
// agent -> rank 0:  "served TAG" or "not-served TAG", "result TAG GBITS RTT_US" or
//                   "result TAG - - WHY", "nccl-result TAG GBPS" or "nccl-result TAG - WHY"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-check/rendezvous/admit.hpp"
#include "ddp-check/rendezvous/hello.hpp"

namespace ddp::check {

// What an agent says when it registers.
struct AgentHello {
  std::string node;
  std::uint16_t port = 0;                       // where it takes its peers' TCP connections
  std::optional<std::string> nccl_unavailable;  // why it cannot run NCCL; nullopt: it can
  std::string job = "-";                        // the step it runs in (StepBinding's tokens)
  std::string step = "-";
  std::uint32_t master_port = 0;  // the MASTER_PORT of the check it registers with
  AuthMode auth = AuthMode::munge;
  std::string cred = "-";  // the MUNGE credential of agent_signed_part(); "-" with auth none
};

// The registration line, without its newline; a reason's line breaks become spaces, the node,
// job and step are wire_token()s.
std::string format_agent_hello(const AgentHello& hello);
// nullopt for anything but a well-formed registration (port 1-65535, a node name).
std::optional<AgentHello> parse_agent_hello(std::string_view line);
// What a registration's credential signs: the line without its CRED word ("" when the line
// has no CRED word where one belongs).
std::string agent_signed_part(std::string_view line);

// Why rank 0 refuses a registration that claims another job, step, MASTER_PORT, or comes
// without a credential when this check wants one; nullopt when the claim matches. The
// credential itself is judged by credential_refusal() (admit.hpp) on agent_signed_part().
std::optional<std::string> agent_binding_refusal(const AgentHello& hello, const StepBinding& own,
                                                 AuthMode mode);

// Why rank 0 refuses an agent that claims node `claimed` from an address at which the step
// expects the nodes `expected` (those whose ranks said hello from that address; `step`: every
// node of the step); nullopt when it may stand for that address's node. Names compare by
// same_node() (the part before the first dot). The claim must not name a node of the step
// that said hello from elsewhere: without that, an agent on one node's address could stand
// for another node, and the figures measured with it would be that node's. A name that is no
// node of the step is the address's node when the address has one: the agent names its node
// as Slurm does (SLURMD_NODENAME), the ranks' hellos by its host name, and a site's NodeName
// need not be the host's name (NodeHostname). Where several nodes share the address
// (loopback), the claim must name one of them.
std::optional<std::string> agent_name_refusal(std::string_view claimed,
                                              const std::vector<std::string>& expected,
                                              const std::vector<std::string>& step);

// The pairwise phase's port from MASTER_PORT: MASTER_PORT + 1, or MASTER_PORT - 1 for 65535 (a
// port never wraps to 0); an error for a MASTER_PORT outside 1-65535.
Result<std::uint16_t> pairs_port(std::uint32_t master_port);

// The largest figures an agent may report: beyond them a figure is absurd, refused like a
// malformed line (the agent is taken as not having answered). TCP in Gbit/s, NCCL in GB/s,
// round trips in microseconds.
inline constexpr double k_max_tcp_gbit_s = 10000;
inline constexpr double k_max_nccl_gb_s = 10000;
inline constexpr double k_max_rtt_us = 100e6;

// A finite figure in [0, max] written in full ("inf", "nan", "-1", "1e999" are nullopt).
std::optional<double> bounded_figure(std::string_view text, double max);

// A data connection's opening line: 32 lowercase hex digits, fresh for every pair.
inline constexpr std::size_t k_nonce_chars = 32;
bool valid_nonce(std::string_view nonce);

// Rank 0's TCP requests, and the agents' answers to them.
struct TcpServe {
  std::uint32_t tag = 0;
  std::string nonce;
};
struct TcpMeasure {
  std::uint32_t tag = 0;
  std::string addr;
  std::uint16_t port = 0;
  std::string nonce;
};
std::string format_serve(const TcpServe& request);
std::optional<TcpServe> parse_serve(std::string_view line);
std::string format_measure(const TcpMeasure& request);
std::optional<TcpMeasure> parse_measure(std::string_view line);

// A measuring side's answer: both figures, or why there are none.
struct TcpAnswer {
  std::uint32_t tag = 0;
  std::optional<double> gbit_s;
  std::optional<double> rtt_us;
  std::string why;  // when gbit_s is nullopt
};
// "result TAG GBITS RTT_US" or "result TAG - - WHY"; nullopt for anything else, a figure out
// of bounds (bounded_figure) included.
std::string format_tcp_answer(const TcpAnswer& answer);
std::optional<TcpAnswer> parse_tcp_answer(std::string_view line);
// The serving side's answer: "served TAG" (true) or "not-served TAG" (false); nullopt else.
std::optional<std::pair<std::uint32_t, bool>> parse_served(std::string_view line);

// Rank 0's request to one side of a pair. `tag` tells a late answer from the current one.
struct NcclPairRequest {
  std::uint32_t tag = 0;
  int rank = 0;  // 0 for the pair's first node, 1 for its second
  std::string id_hex;
};

// "nccl-pair TAG RANK ID" and back; nullopt unless RANK is 0 or 1 and ID is hex.
std::string format_nccl_request(const NcclPairRequest& request);
std::optional<NcclPairRequest> parse_nccl_request(std::string_view line);

// One side's answer: its GB/s, or why there is none.
struct NcclPairAnswer {
  std::uint32_t tag = 0;
  std::optional<double> gb_s;
  std::string why;  // when gb_s is nullopt
};

// "nccl-result TAG GBPS" or "nccl-result TAG - WHY" and back; nullopt for anything else.
std::string format_nccl_answer(const NcclPairAnswer& answer);
std::optional<NcclPairAnswer> parse_nccl_answer(std::string_view line);

// A registered agent's node and why it cannot run NCCL (nullopt: it can).
struct AgentNccl {
  std::string node;
  std::optional<std::string> unavailable;
};

// Why the NCCL pairs do not run, or nullopt when they do: --no-nccl, fewer than two registered
// nodes, or the reason of the nodes that cannot (alone when every node gives the same one,
// else each reason with the nodes it holds for: "no GPU visible on node03, node04").
std::optional<std::string> nccl_pairs_skip(bool nccl_option,
                                           const std::vector<AgentNccl>& registered);

}  // namespace ddp::check
