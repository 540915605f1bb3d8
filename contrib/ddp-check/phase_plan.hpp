// Which phases a ddp-check process runs, in what order, and with what time budget: a table
// that main() executes. Pure: it takes the options and the process's role and returns values,
// so a unit test drives it with a table (tests/unit/check/test_phase_plan.cpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ddp-check/options.hpp"

namespace ddp::check {

// Rank 0 admits hellos for this share of --timeout and leaves the rest for its verdict to
// reach everyone before they give up.
inline constexpr double k_collect_share = 0.75;
// Each broadcast of a verdict (or of the NCCL id) waits at most this long for its lines to go
// out, and never past the check's deadline.
inline constexpr double k_verdict_send_s = 2;
// The watchdog (SIGALRM) fires this long after a phase's budget, rounded up to a second: the
// last defence against a wait outside poll() (name resolution, NCCL).
inline constexpr double k_watchdog_grace_s = 1;
// The same for the pairwise phase, whose NCCL rounds can overrun a round's bound a little.
inline constexpr double k_pairs_watchdog_grace_s = 5;

enum class Phase {
  fabric,      // --fabric/--net-plugin on this node (first process of a node), before the bound
  rendezvous,  // every rank says hello to rank 0 over TCP; rank 0 judges the world
  nccl,        // the NCCL all-reduce, or rank 0's word that it is skipped and why
  pairs,       // --pairs: one agent per node, rank 0 coordinates
};

// "fabric", "rendezvous", "nccl", "pairs".
std::string_view phase_name(Phase phase);

// Who this process is in the step.
struct Role {
  bool master = false;         // rank 0 (RANK 0, or NODE_RANK 0 for node launchers)
  bool first_on_node = false;  // LOCAL_RANK 0, or a node launcher: one per node
  bool nccl_here = false;      // --pairs' NCCL rounds can run on this node
  std::uint32_t nodes = 1;     // the step's nodes as this process knows them (NNODES, else
                               // WORLD_SIZE); rank 0 sizes the pairs on the nodes that came
};

// One phase and its bound.
struct PhaseStep {
  Phase phase = Phase::rendezvous;
  // How long the phase may take, in seconds; 0: unbounded (local reads before the watchdog is
  // armed). The rendezvous and the NCCL phase share one deadline, --timeout from the start.
  double budget_s = 0;
  // The watchdog armed as the phase starts, in whole seconds; 0: the one armed before stays.
  unsigned watchdog_s = 0;
  friend bool operator==(const PhaseStep&, const PhaseStep&) = default;
};

// The phases of one process, in order; each runs when the one before succeeded.
struct PhasePlan {
  std::vector<PhaseStep> steps;
  // Rank 0: how long after the start it admits hellos; other ranks wait until the deadline.
  double collect_s = 0;
  // How long each verdict broadcast may wait (k_verdict_send_s).
  double verdict_send_s = k_verdict_send_s;
};

// The time the pairwise phase may take for `nodes` nodes: the agents' registration
// (k_pairs_register_s), then per round its two directions of `seconds` and the round's margin
// (k_pairs_round_margin_s); with `nccl`, k_nccl_round_s per NCCL round.
double pairs_budget_s(std::uint32_t nodes, double seconds, std::uint32_t max_rounds, bool nccl);

// The pairwise phase's step for `nodes` nodes: its budget and the watchdog set again for it.
PhaseStep pairs_step(const Options& o, std::uint32_t nodes, bool nccl_here);

// The phases of a check run (not --help, --version or --topology, which run no phase).
PhasePlan plan_phases(const Options& o, const Role& role);

}  // namespace ddp::check
