// Rank 0's view of one registered agent of the pairwise phase, shared by the TCP rounds
// (pairs/tcp_io.cpp) and the NCCL rounds (pairs/nccl_io.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/rendezvous/admit.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {

// One registered agent: its control connection and what it said when it registered.
struct PairAgent {
  net::Fd ctl;
  std::string buf;      // what was read from `ctl` beyond the last line
  std::string name;     // the node's name, as the agent's credential signs it
  std::string address;  // where it connected from: its peers measure against this address
  std::uint16_t port = 0;
  std::optional<std::string> nccl_unavailable;  // why it cannot run NCCL; nullopt: it can
};

// "node01 - node03", printable, for the lines about a pair that could not be measured.
inline std::string pair_name(const PairAgent& a, const PairAgent& b) {
  return peer_text(a.name, 64) + " - " + peer_text(b.name, 64);
}

}  // namespace ddp::check
