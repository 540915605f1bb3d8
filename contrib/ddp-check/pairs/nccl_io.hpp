// The NCCL send/recv rounds of --pairs, over the agents' control connections: rank 0 hands each
// pair a fresh NCCL id, both sides measure (nccl_sendrecv), the pair's figure is the slower
// side. A pair has its own two-rank communicator, so a pair that fails or hangs costs only its
// own figure, never the other pairs'.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-check/pairs/agent_io.hpp"
#include "ddp-check/pairs/pairs.hpp"

namespace ddp::check {

// Rank 0: runs `rounds` over the registered agents, calling `done` with the count of rounds
// finished after each; one result per pair, and one line per pair that could not be measured in
// `failures` ("node01 - node03: node01: WHY"). `silence[i]` is empty while node i's agent
// answers; a side that does not answer its round in time, or answers a figure rank 0 refuses
// (protocol.hpp's bounds), gets the reason there, and takes part in no later pair.
std::vector<PairResult> run_nccl_rounds(std::vector<std::optional<PairAgent>>& agents,
                                        std::vector<std::string>& silence,
                                        const std::vector<PairRound>& rounds,
                                        std::chrono::steady_clock::time_point deadline,
                                        std::vector<std::string>& failures,
                                        const std::function<void(std::size_t)>& done);

// An agent: the answer to a "nccl-pair" line, after measuring with `bytes` each way, bounded
// by k_nccl_pair_s and `deadline`.
std::string answer_nccl_request(std::string_view line, std::uint64_t bytes,
                                std::chrono::steady_clock::time_point deadline);

}  // namespace ddp::check
