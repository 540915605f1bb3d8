// ddp-check's and ddp-watch's command lines in the scripts ddpgen renders, as typed values:
// built from the Plan, turned into words by one function each, and parsed back with the tools'
// own option tables in a unit test (tests/unit/gen/test_invocation.cpp), so that ddpgen never
// writes a flag the tools do not read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gen/core/plan.hpp"

namespace ddpgen {

// Seconds on a rendered command line. With `env`, a variable that replaces `value` when the
// script runs ("${DDP_CHECK_TIMEOUT:-60}"); `plus` is added to either
// ("$((${DDP_CHECK_TIMEOUT:-60} + 30))").
struct RunSeconds {
  long value = 0;
  std::string env;
  long plus = 0;
};

// ddp-check in the preflight step.
struct CheckInvocation {
  RunSeconds timeout;                     // --timeout: DDP_CHECK_TIMEOUT, else preflight.timeout
  std::string fabric;                     // --fabric: the profile's fabric; empty for none
  bool pairs = false;                     // --pairs
  std::optional<double> pairs_threshold;  // --pairs-threshold; empty: ddp-check's own
};

// ddp-watch around the preflight or the training step. The file names are ddpgen's own shell
// text, named by $SLURM_JOB_ID, written in double quotes.
struct WatchInvocation {
  RunSeconds timeout;                    // --timeout
  std::optional<long> startup;           // --startup
  std::optional<long> grace;             // --grace
  std::optional<std::string> stacks;     // --stacks
  std::optional<std::string> heartbeat;  // --heartbeat
  std::optional<std::string> heal;       // --heal: the record of the job's runs
  std::optional<long> heal_max;          // --heal-max
  bool heal_no_exclude = false;          // --heal-no-exclude
  bool heal_defer = false;               // --heal-defer: the script's post: lines run first
  std::optional<long> spares;            // --spares: training only
  std::optional<long> respawn_max;       // --respawn-max
  std::optional<CheckInvocation> respawn_check;  // --respawn-check: the preflight, again
  bool first_check = false;  // --first-check: the preflight, as the check of every node
  std::optional<long> check_tasks_per_node;  // --check-tasks-per-node: the preflight's, above 1
  std::optional<long> check_wrapper;         // --check-wrapper: the setup's words, no plugin
  bool launchers = false;  // --launchers: torchrun.command names a launcher ddp-watch may not know
};

// What ddp-check and ddp-watch get in the script of `plan`; nothing where it has no such step.
// preflight_check is also the check the training's ddp-watch runs (--respawn-check), and with
// spares the preflight itself (--first-check): then it has no step of its own. That is so under
// the plugin, and without it where the training step's program starts with the preflight's
// per-task setup (--check-wrapper).
bool preflight_step(const Plan& plan);
std::optional<CheckInvocation> preflight_check(const Plan& plan);
std::optional<WatchInvocation> preflight_watch(const Plan& plan);  // heal: around the preflight
std::optional<WatchInvocation> training_watch(const Plan& plan);

// The options as shell words ("--timeout=60", "--fabric=ib"): literal values through
// ddp::shell::quote, ddpgen's shell text in double quotes.
std::vector<std::string> words(const CheckInvocation& check);
std::vector<std::string> words(const WatchInvocation& watch);

// `value` in the fewest digits that read back as the same double ("0.25").
std::string shortest(double value);

}  // namespace ddpgen
