// The edge of respawning (ddp-watch --spares): reads the job's nodes, gives each step its node
// list, decides after a step with respawn.hpp, logs, and keeps the respawns for the summary.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ddp-watch/options.hpp"
#include "ddp-watch/respawn.hpp"

namespace ddp::watch {

class Respawner {
 public:
  // Inactive without --spares.
  explicit Respawner(const Options& options);

  bool active() const { return active_; }
  // Why the step cannot start (the allocation has no room for the spares); "" when it can.
  const std::string& refusal() const { return refusal_; }
  // The command of the next step: srun with --nodelist=NODES right after it. Prints the line
  // of a respawn when this step is one and no check comes first, with the time since the
  // failed step's srun exited.
  std::vector<std::string> next_command();

  enum class Next {
    heal,     // hand heal_suspects() to the heal path (nothing failed, or a fall-back)
    respawn,  // start next_command() in place of the heal path
    fail,     // the fault follows the job: no heal path, the failure stands
  };
  // Whether the step next_command() just gave is a respawn and --respawn-check is set: the
  // check runs on its nodes first.
  bool check_due() const { return check_due_; }
  // The check of the new step's nodes: check_command() (respawn.hpp) on them.
  std::vector<std::string> check_command() const;
  // The check passed: the line of the respawn, whose step starts now.
  void check_passed();
  // Whether the check runs on every node of the job before the first step (--first-check).
  bool first_check_due() const { return first_check_due_; }
  // That check: check_command() on every node of the job. after() then decides on its outcome
  // which nodes the first step avoids.
  std::vector<std::string> first_check_command();

  // After a step or a respawn's check ended: decides, logs why it does not respawn when it
  // does not (after a failed check, the respawn's line saying so and what follows).
  // `ended`: when the step's srun exited, from which a respawn's time counts (a respawn's
  // check is no step: after it, the time still counts from the step before).
  Next after(bool failed, const std::vector<Suspect>& suspects,
             std::chrono::steady_clock::time_point ended);
  // The suspects for the heal path: every node named in this job's steps.
  const std::vector<Suspect>& heal_suspects() const { return heal_suspects_; }
  // The closing line, once the job's last step ended.
  void summary() const;

 private:
  // Prints the line of the respawn just done, its time taken now.
  void say_started();
  // The check on `nodes`.
  std::vector<std::string> check_on(const std::vector<std::string>& nodes) const;
  // after() for the check of every node before the first step.
  Next after_first_check(bool failed, const std::vector<Suspect>& suspects);

  const Options& options_;
  bool active_ = false;
  std::string refusal_;
  RespawnState state_;
  unsigned max_ = 0;
  std::vector<Suspect> heal_suspects_;
  std::vector<std::string> pending_;  // the nodes of the respawn to start, if one is due
  std::vector<Suspect> pending_named_;
  std::chrono::steady_clock::time_point ended_{};
  bool check_due_ = false;
  bool first_check_due_ = false;  // --first-check, until first_check_command()
  bool first_checking_ = false;   // that check runs; its outcome is the next after()'s
  bool pending_first_ = false;    // the respawn due is the first step's
};

}  // namespace ddp::watch
