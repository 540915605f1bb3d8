#include "ddp-watch/respawn_run.hpp"

#include <unistd.h>

#include <cstdlib>

#include "libddp/core/hostlist.hpp"

namespace ddp::watch {
namespace {

void say(const std::string& text) {
  std::string line = "ddp-watch: respawn: " + text + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::vector<std::string> job_nodes() {
  auto hosts = Hostlist::parse(env_or("SLURM_JOB_NODELIST", env_or("SLURM_NODELIST", "")));
  if (!hosts || hosts->size() > 100'000) return {};
  return hosts->expand();
}

}  // namespace

Respawner::Respawner(const Options& options) : options_(options) {
  if (options.spares <= 0) return;
  active_ = true;
  const auto spares = static_cast<unsigned>(options.spares);
  max_ = options.respawn_max >= 0 ? static_cast<unsigned>(options.respawn_max) : spares;
  state_.allocation = job_nodes();
  std::string why;
  auto first = first_step_nodes(state_.allocation, spares, why);
  if (!first) {
    refusal_ = state_.allocation.empty() ? "--spares needs a Slurm job (SLURM_JOB_NODELIST)" : why;
    return;
  }
  pending_ = *first;
  first_check_due_ = options.first_check;
}

std::vector<std::string> Respawner::next_command() {
  std::vector<std::string> command = options_.command;
  check_due_ = false;
  first_checking_ = false;  // the check of every node passed, or after() took its outcome
  if (!active_ || pending_.empty()) return command;
  if (!state_.step.empty()) {
    state_.done.push_back({pending_named_, state_.step, pending_});
    state_.done.back().first = pending_first_;
    // The program's notice that it runs again in the same job (it resumes from its checkpoint
    // as after a requeue); its first start is none, whichever nodes it has.
    if (!pending_first_) {
      setenv("DDP_RESPAWN_COUNT", std::to_string(state_.done.size()).c_str(), 1);
    }
    pending_first_ = false;
    check_due_ = !options_.respawn_check.empty();
    // With a check, the line waits for its outcome: a failed check starts no step there.
    if (!check_due_) say_started();
  }
  state_.step = pending_;
  command.insert(command.begin() + 1, "--nodelist=" + format_hostlist(pending_));
  pending_.clear();
  return command;
}

void Respawner::say_started() {
  RespawnDone& done = state_.done.back();
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ended_).count();
  say(respawn_line(done, state_.done.size(), max_));
}

void Respawner::check_passed() {
  if (!check_due_) return;
  check_due_ = false;
  state_.done.back().check = RespawnCheck::passed;
  say_started();
}

std::vector<std::string> Respawner::check_command() const {
  return check_on(state_.step);
}

std::vector<std::string> Respawner::first_check_command() {
  first_check_due_ = false;
  first_checking_ = true;
  return check_on(state_.allocation);
}

std::vector<std::string> Respawner::check_on(const std::vector<std::string>& nodes) const {
  return watch::check_command(options_, nodes);
}

Respawner::Next Respawner::after(bool failed, const std::vector<Suspect>& suspects,
                                 std::chrono::steady_clock::time_point ended) {
  heal_suspects_ = suspects;
  if (first_checking_) {
    ended_ = ended;
    return after_first_check(failed, suspects);
  }
  if (!active_ || state_.step.empty()) return Next::heal;
  // A respawn's failed check ends no step: the next respawn's time still counts from the
  // failed step's srun exit.
  if (!check_due_) ended_ = ended;
  RespawnDecision d = decide_respawn(state_, failed, suspects, max_);
  const bool check_failed = check_due_ && failed;
  if (check_failed) {
    check_due_ = false;
    state_.done.back().check = RespawnCheck::failed;
    say(check_failed_line(state_.done.back(), state_.done.size(), max_, d));
  }
  switch (d.action) {
    case RespawnAction::none:
      return Next::heal;
    case RespawnAction::respawn:
      pending_ = d.nodes;
      pending_named_ = d.named;
      return Next::respawn;
    case RespawnAction::fall_back:
      heal_suspects_ = d.named;
      if (!check_failed) say("not respawning: " + d.why + "; the heal path takes over");
      return Next::heal;
    case RespawnAction::fail:
      if (!check_failed) say(d.why);
      return Next::fail;
  }
  return Next::heal;
}

Respawner::Next Respawner::after_first_check(bool failed, const std::vector<Suspect>& suspects) {
  first_checking_ = false;
  const RespawnDecision d = decide_first_step(
      state_.allocation, static_cast<unsigned>(options_.spares), failed, suspects, max_);
  switch (d.action) {
    case RespawnAction::none:
      return Next::heal;
    case RespawnAction::respawn:
      // The first step's nodes become the step moved from; the respawn starts the first step.
      state_.step = pending_;
      pending_ = d.nodes;
      pending_named_ = d.named;
      pending_first_ = true;
      return Next::respawn;
    case RespawnAction::fall_back:
    case RespawnAction::fail:
      say("not avoiding the named nodes before the first step: " + d.why +
          "; the heal path takes over");
      return Next::heal;
  }
  return Next::heal;
}

void Respawner::summary() const {
  if (active_) say(respawn_summary(state_.done));
}

}  // namespace ddp::watch
