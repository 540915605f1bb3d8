// The control lines of the pairwise phase that carry NCCL, and whether the NCCL pairs run.
// Pure: lines in, values out, so that tests drive them with tables.
//
// Agent -> rank 0:  "agent NODE DATAPORT nccl" (it can run NCCL send/recv) or
//                   "agent NODE DATAPORT no-nccl WHY"
// rank 0 -> agent:  "nccl-pair TAG RANK ID" (join the two-rank communicator ID, hex, as RANK)
// agent -> rank 0:  "nccl-result TAG GBPS" or "nccl-result TAG - WHY"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::check {

// What an agent says when it registers.
struct AgentHello {
  std::string node;
  std::uint16_t port = 0;                       // where it takes its peers' TCP connections
  std::optional<std::string> nccl_unavailable;  // why it cannot run NCCL; nullopt: it can
};

// The registration line, without its newline; a reason's line breaks become spaces.
std::string format_agent_hello(const AgentHello& hello);
// nullopt for anything but a well-formed registration (port 1-65535, a node name).
std::optional<AgentHello> parse_agent_hello(std::string_view line);

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
