// ddp-check --pairs over TCP: after the rendezvous proved the world, one agent per node
// measures round-trip time and bandwidth against the peers rank 0 names, round by round
// (pairs.hpp); rank 0 judges and names the slow nodes. Agents register with a MUNGE credential
// as the ranks' hellos do (or bound to the step alone with --auth=none); a data connection
// opens with the pair's nonce, which rank 0 gives both sides over their control connections.
// Every wait is bounded by its round and by the deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddp-check/rendezvous/admit.hpp"
#include "ddp-check/rendezvous/session_io.hpp"

namespace ddp::check {

// What the pairwise phase needs to know; rank 0 fills in the nodes.
struct PairsSetup {
  std::string master_addr;
  std::uint16_t port = 0;  // rank 0's coordinator listens here (pairs_port(); 0: none)
  std::string port_error;  // why there is no port
  AuthConfig auth;         // how agents sign their registrations and rank 0 checks them
  StepBinding binding;     // the step (job, step, MASTER_PORT) registrations are bound to
  std::string node;        // this node's name as Slurm knows it (SLURMD_NODENAME, else host)
  std::string run_tag;     // DDP_CHECK_RUN_TAG: ends the suspect lines (suspect.hpp)
  bool coordinator = false;
  // Rank 0: the nodes, in table order, and the address each reached rank 0 from (agents are
  // admitted from these addresses only).
  std::vector<std::string> nodes;
  std::vector<std::string> addresses;
  double seconds = 0.5;  // per direction and pair
  double threshold = 0.5;
  std::uint32_t max_rounds = 0;                 // 0: every pair
  bool nccl = true;                             // --no-nccl clears it: no NCCL send/recv
  std::optional<std::string> nccl_unavailable;  // why this node cannot run NCCL send/recv
  std::uint64_t nccl_bytes = 64ull << 20;       // per pair, direction and iteration
  std::chrono::steady_clock::time_point deadline;
};

// Runs this process's part: every node's agent, and on rank 0 the coordinator beside it.
// Prints the tables and the verdicts (rank 0) and a suspect line per slow node; returns the
// exit status: 0, or 1 when a node is slow (over TCP or NCCL) or the phase could not finish.
int run_pairs(const PairsSetup& setup);

}  // namespace ddp::check
