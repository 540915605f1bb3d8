// Respawn in the allocation: a job that holds spare nodes (ddpgen's spares:, ddp-watch
// --spares) trains on some of its nodes; when a step fails and the heal path names a node,
// a new step starts in the same job on the healthy nodes plus a spare instead of a requeue.
// Pure: the allocation, the step's nodes, the suspects and the respawns so far come in as
// values; the decision, the node list and the lines to log go out (respawn_run.cpp acts).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ddp-watch/options.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

using ddp::Suspect;

// Whether the nodes of a respawn were checked before its step (--respawn-check), and how
// that went: a respawn whose check failed started no step on them.
enum class RespawnCheck { none, passed, failed };

// One respawn: what was named, the nodes before and after, the check of the new nodes, and
// ddp-watch's own part of the time: from the failed step's srun exit to the new step's srun
// start (a check in between included; the new step's own start-up not).
struct RespawnDone {
  std::vector<Suspect> named;
  std::vector<std::string> from;
  std::vector<std::string> to;
  double seconds = 0;
  RespawnCheck check = RespawnCheck::none;
  // Before the job's first step (--first-check): `named` are what the check of every node of
  // the job found, `from` the nodes the first step would have had; `seconds` counts from that
  // check's end.
  bool first = false;
};

// What ddp-watch knows across the steps of one job.
struct RespawnState {
  std::vector<std::string> allocation;  // the job's nodes, in Slurm's order
  std::vector<std::string> step;        // the nodes of the step that just ended
  std::vector<RespawnDone> done;        // the respawns so far, oldest first
};

enum class RespawnAction {
  none,       // the step did not fail: nothing to do
  respawn,    // start a new step on `nodes`
  fall_back,  // leave it to the heal path (exclude and requeue), with `named` as its suspects
  fail,       // the fault follows the job to new nodes: end the job, no requeue
};

struct RespawnDecision {
  RespawnAction action = RespawnAction::none;
  std::vector<std::string> nodes;  // respawn: the new step's nodes
  std::vector<Suspect> named;      // respawn: this step's suspects; fall_back: every node named
  std::string why;                 // fall_back, fail: the reason, one line
};

// The first `count` nodes of `allocation` that are not in `avoid`, in the allocation's order;
// nullopt when there are fewer.
std::optional<std::vector<std::string>> choose_nodes(const std::vector<std::string>& allocation,
                                                     std::size_t count,
                                                     const std::vector<std::string>& avoid);

// The nodes of the step's first run: the first `train` nodes of the allocation. `spares` is
// the allocation's size minus the step's nodes; nullopt with the reason as the error line
// when the allocation is too small.
std::optional<std::vector<std::string>> first_step_nodes(const std::vector<std::string>& allocation,
                                                         unsigned spares, std::string& why);

// Decides after the check of every node of the job before its first step (--first-check).
// `failed`: the check failed; `suspects`: the nodes it named (duplicates allowed). The first
// step avoids the named nodes (a respawn, counted against `max_respawns`) when at most
// `spares` of the job's nodes are named and a respawn is allowed; otherwise falls back: the
// heal path excludes and requeues, as after a failed preflight.
RespawnDecision decide_first_step(const std::vector<std::string>& allocation, unsigned spares,
                                  bool failed, const std::vector<Suspect>& suspects,
                                  unsigned max_respawns);

// Decides after a step ended. `failed`: it failed or stalled; `suspects`: the nodes the heal
// path named (duplicates allowed). Respawns when a node of the step is named, not every node
// of it, fewer than `max_respawns` respawns are done and the healthy nodes plus unnamed spares
// make a full step; the fault follows the job (fail) when a named fault, with its signature,
// is the one an earlier respawn moved away from, now on another node (not one the check of
// every node found before the first step); otherwise falls back.
RespawnDecision decide_respawn(const RespawnState& state, bool failed,
                               const std::vector<Suspect>& suspects, unsigned max_respawns);

// The check of `nodes` (--respawn-check): the command's srun on them, --check-tasks-per-node
// tasks on each (1 by default), killed at the first bad exit, under check_setup() (the
// command's --ddp option or, with --check-wrapper, the first words of its program), then the
// check's words. None of the step's other srun options: the check is the preflight's.
std::vector<std::string> check_command(const Options& options,
                                       const std::vector<std::string>& nodes);

// The line of a respawn whose step starts: "respawn 1 of at most 1: node02
// (hardware-signal): EVIDENCE; node[01-03] -> node[01,03-04]; the new step started 2.30 s
// after the failed one's srun exited" (", its nodes checked in between" after a check).
std::string respawn_line(const RespawnDone& done, std::size_t number, unsigned max_respawns);

// The line of a respawn whose check failed: no step started on its nodes, and `next` (decided
// on the check's own outcome) says what ddp-watch does instead: another respawn, the heal
// path, or the end of the job.
std::string check_failed_line(const RespawnDone& done, std::size_t number, unsigned max_respawns,
                              const RespawnDecision& next);

// The closing line: "respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04]
// started after 2.30 s", "... -> node[01,03-04] check failed, not started", or "respawns:
// none".
std::string respawn_summary(const std::vector<RespawnDone>& done);

}  // namespace ddp::watch
