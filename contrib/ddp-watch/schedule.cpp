#include "ddp-watch/schedule.hpp"

#include <algorithm>
#include <sstream>

namespace ddp::watch {

Schedule::Schedule(long timeout_s, long startup_s, long grace_s, Clock::time_point start)
    : timeout_s_(timeout_s),
      startup_s_(startup_s > 0 ? startup_s : timeout_s),
      grace_s_(grace_s),
      last_progress_(start) {}

void Schedule::progress(Clock::time_point now) {
  progressed_ = true;
  last_progress_ = now;
}

Due Schedule::due(Clock::time_point now) const {
  if (!stalled_) {
    return now - last_progress_ >= std::chrono::seconds(limit_s()) ? Due::stall : Due::nothing;
  }
  return !killed_ && now >= kill_at_ ? Due::kill : Due::nothing;
}

void Schedule::stalled(Clock::time_point now) {
  stalled_ = true;
  kill_at_ = now + std::chrono::seconds(grace_s_);
}

std::chrono::seconds Schedule::helper_deadline() const {
  return std::chrono::seconds(std::clamp(grace_s_ / 2, 2L, 30L));
}

std::string stall_message(long seconds, bool heartbeat) {
  return "no progress for " + std::to_string(seconds) + " s (no output" +
         (heartbeat ? ", heartbeat unchanged" : "") + "): asking every task for its stack";
}

std::vector<std::string> new_steps(const std::vector<std::string>& before,
                                   const std::vector<std::string>& now) {
  std::vector<std::string> out;
  for (const std::string& s : now) {
    if (std::find(before.begin(), before.end(), s) == before.end()) out.push_back(s);
  }
  return out;
}

std::vector<StepRow> parse_steps(const std::string& squeue_output, const std::string& job_id) {
  std::vector<StepRow> steps;
  std::istringstream in(squeue_output);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    StepRow s;
    if (!(fields >> s.id >> s.nodes)) continue;
    const std::size_t dot = s.id.rfind('.');
    if (dot == std::string::npos || dot + 1 == s.id.size()) continue;
    const std::string step = s.id.substr(dot + 1);
    // The batch shell (this process's own) and the extern step are not the program.
    if (step == "batch" || step == "extern" || step == "interactive") continue;
    if (step.find_first_not_of("0123456789") != std::string::npos) continue;
    s.id = (job_id.empty() ? s.id.substr(0, dot) : job_id) + "." + step;
    steps.push_back(std::move(s));
  }
  return steps;
}

std::string stacks_path(const std::string& option, const std::string& job_id) {
  if (!option.empty()) return option;
  return "ddp-watch-" + (job_id.empty() ? std::string("local") : job_id) + ".stacks";
}

}  // namespace ddp::watch
