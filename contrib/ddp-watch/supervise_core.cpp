#include "ddp-watch/supervise_core.hpp"

#include <algorithm>
#include <utility>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/evidence.hpp"
#include "ddp-watch/layout.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

OutputMode output_mode(const Options& o, const JobEnv& env) {
  OutputMode m;
  // Only srun's output is labelled: another command's "12: loss" is its own text.
  m.labels = is_srun(o.command);
  m.keep_labels = env.labelio || o.keep_labels;
  m.torchrun = o.launchers || launches_per_node(o.command);
  m.preflight = std::any_of(o.command.begin(), o.command.end(), [](const std::string& w) {
    return w == "ddp-check" || w.ends_with("/ddp-check");
  });
  m.heal = !o.heal.empty();
  if (m.preflight) m.run_tag = env.run_tag;
  return m;
}

// The stack helper: one task per node of the step (--nodes and --ntasks override the batch
// shell's SLURM_NNODES and SLURM_NTASKS, which count every node of the job: spares included,
// srun would warn that it cannot run the tasks on them), running this program with `what`.
std::vector<std::string> helper_argv(const std::string& job, const StepRow& step, std::size_t nodes,
                                     const std::string& self, const char* what) {
  return {"srun",
          "--overlap",
          "--jobid=" + job,
          "--nodelist=" + step.nodes,
          "--nodes=" + std::to_string(nodes),
          "--ntasks=" + std::to_string(nodes),
          "--ntasks-per-node=1",
          "--kill-on-bad-exit=0",
          "--time=1",
          self,
          what,
          step.id};
}

}  // namespace

std::chrono::milliseconds dump_delay(std::chrono::milliseconds froze, long grace_s) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const milliseconds most = std::min<milliseconds>(seconds(5), milliseconds(seconds(grace_s)) / 4);
  return std::min(std::max<milliseconds>(2 * froze, seconds(2)), most);
}

std::string stacks_message(std::size_t dumps, const std::string& path, bool written) {
  return "stacks of " + std::to_string(dumps) + " process(es): " + path +
         (written ? "" : " (could not be written: check --stacks and the directory's permissions)");
}

Supervisor::Supervisor(const Options& options, JobEnv env)
    : options_(options),
      env_(std::move(env)),
      schedule_(options.timeout_s, options.startup_s, options.grace_s, Clock::time_point{}),
      output_(output_mode(options, env_)) {
  if (!options.heartbeat.empty()) watched_.push_back(options.heartbeat);
  ranks_by_node_ = !env_.job_id.empty() && output_.mode().labels && !output_.mode().torchrun &&
                   numbers_ranks_by_node(options.command, env_.spank_ddp);
  head_by_layout_ = !env_.job_id.empty() && output_.mode().labels && output_.mode().preflight &&
                    output_.mode().heal;
  OutputFiles files = srun_output_files(options.command);
  for (std::string& f : files.plain) watched_.push_back(std::move(f));
  times_.resize(watched_.size());
  // srun's output goes to files whose names cannot be resolved and there is no heartbeat:
  // every run would read as a stall.
  if (!files.patterned.empty() && options.heartbeat.empty()) {
    refusal_ =
        "srun writes the step's output to " + ddp::text::quote(files.patterned.front()) +
        ", which ddp-watch cannot follow: drop -o/-e (ddp-watch forwards the output itself) or "
        "give --heartbeat FILE";
  }
}

std::optional<Outcome> Supervisor::refusal() const {
  if (refusal_.empty()) return std::nullopt;
  Outcome o;
  o.code = k_exit_usage;
  o.announce.push_back(refusal_);
  return o;
}

std::vector<std::string> Supervisor::command_env() const {
  // Built by push_back from empty: GCC 14 at -O2 reports a false -Warray-bounds for a vector
  // made from a one-element braced list and then grown (Debian 13's GCC 14.2).
  std::vector<std::string> env;
  env.reserve(4);
  env.push_back("PYTHONFAULTHANDLER=1");
  if (output_.mode().labels) env.push_back("SLURM_LABELIO=1");
  if (!options_.heartbeat.empty()) env.push_back("DDP_HEARTBEAT_FILE=" + options_.heartbeat);
  // ddp-check ends this run's suspect lines with it; a line without it is not this run's.
  if (!output_.mode().run_tag.empty())
    env.push_back(std::string(k_run_tag_env) + "=" + output_.mode().run_tag);
  return env;
}

void Supervisor::steps_before(const std::vector<StepRow>& rows) {
  for (const StepRow& s : rows) before_.push_back(s.id);
}

void Supervisor::started(Clock::time_point now) {
  schedule_ = Schedule(options_.timeout_s, options_.startup_s, options_.grace_s, now);
}

Outcome Supervisor::start_failed(const std::string& error) {
  Outcome o;
  o.code = k_exit_not_started;
  o.announce.push_back(error);
  return o;
}

std::vector<Write> Supervisor::lines(Stream stream, const std::vector<BufferedLine>& text) {
  std::vector<Write> out;
  const bool helper = stream == Stream::helper_out || stream == Stream::helper_err;
  const int fd = stream == Stream::out ? 1 : 2;
  for (const BufferedLine& t : text) {
    auto w = helper ? output_.helper_line(t.text)
                    : output_.line(t.text, fd, schedule_.is_stalled(), t.continued);
    for (Write& x : w) out.push_back(std::move(x));
  }
  return out;
}

std::vector<Write> Supervisor::on_output(Clock::time_point now, Stream stream,
                                         std::string_view bytes) {
  if (bytes.empty()) return {};
  schedule_.progress(now);
  seen_.written.clear();
  return lines(stream, buffers_[static_cast<int>(stream)].add(bytes));
}

std::vector<Write> Supervisor::on_end(Stream stream) {
  auto rest = buffers_[static_cast<int>(stream)].finish();
  if (!rest) return {};
  return lines(stream, {*rest});
}

void Supervisor::on_file_time(Clock::time_point now, std::size_t file, FileTime time) {
  if (file >= times_.size() || times_[file] == time) return;
  times_[file] = time;
  schedule_.progress(now);
  seen_.written.clear();
}

// Probes need a job and an srun step: outside Slurm the output reaches ddp-watch unbuffered.
bool Supervisor::probing() const {
  return !env_.job_id.empty() && output_.mode().labels;
}

// Whether the last probe was read after the last progress: a baseline for this silence.
bool Supervisor::baseline_fresh() const {
  return activity_ && activity_at_ >= schedule_.last_progress();
}

Action Supervisor::on_tick(Clock::time_point now) {
  Action a;
  const Due due = schedule_.due(now);
  if (probing() && !schedule_.is_stalled()) {
    if (due == Due::stall && !no_writes_ && baseline_fresh()) {
      comparing_ = true;
      a.act = Act::probe;
      return a;
    }
    // Half the limit into a silence: the baseline, once per silence.
    const auto half = std::chrono::seconds(schedule_.limit_s()) / 2;
    if (due == Due::nothing && now - schedule_.last_progress() >= half && !baseline_fresh() &&
        baseline_failed_ != schedule_.last_progress()) {
      comparing_ = false;
      a.act = Act::probe;
      return a;
    }
  }
  no_writes_ = false;
  switch (due) {
    case Due::stall:
      schedule_.stalled(now);  // the grace starts now, whatever the helper does
      a.act = Act::ask_stacks;
      a.message = stall_message(schedule_.limit_s(), !watched_.empty());
      break;
    case Due::kill:
      schedule_.killed();
      a.act = Act::kill;
      a.message = "the step still runs " + std::to_string(options_.grace_s) +
                  " s after the stack request: ending it";
      for (const StepRow& s : ours_) a.steps.push_back(s.id);
      break;
    case Due::nothing:
      if (layout_due(now)) a.act = Act::layout;
      break;
  }
  return a;
}

// Once the tasks run (one has printed) and until the layout is read or the tries are spent.
bool Supervisor::layout_due(Clock::time_point now) const {
  if (layout_read_ || now < layout_next_) return false;
  if (head_by_layout_) return layout_tries_ < k_preflight_layout_tries;
  return ranks_by_node_ && layout_tries_ < k_layout_tries && !output_.tasks().empty();
}

std::optional<std::vector<std::string>> Supervisor::layout_request(
    const std::vector<StepRow>& running, Clock::time_point now) {
  ++layout_tries_;
  layout_next_ = now + (head_by_layout_ ? k_preflight_layout_retry : k_layout_retry);
  find_ours(running);
  if (ours_.size() != 1) return std::nullopt;
  return std::vector<std::string>{"sattach", "--layout", ours_[0].id};
}

void Supervisor::on_layout(std::string_view output) {
  auto layout = parse_step_layout(output);
  if (!layout) return;
  layout_read_ = true;
  if (ranks_by_node_) output_.set_rank_of_task(ranks_by_node(*layout));
  // The preflight's rank 0: the first task on the first node of the step's node list, where
  // --ddp (tasks or torchrun mode) and ddpgen's setup put RANK 0 and MASTER_ADDR.
  if (head_by_layout_ && !layout->nodes.empty() && !layout->nodes.front().tasks.empty())
    output_.set_head_task(layout->nodes.front().tasks.front());
}

void Supervisor::find_ours(const std::vector<StepRow>& running) {
  for (const StepRow& s : running) {
    if (std::find(before_.begin(), before_.end(), s.id) != before_.end()) continue;
    auto same = [&](const StepRow& o) { return o.id == s.id; };
    if (std::none_of(ours_.begin(), ours_.end(), same)) ours_.push_back(s);
  }
}

std::optional<Supervisor::ProbeRequest> Supervisor::probe_request(
    const std::vector<StepRow>& running, const std::string& self) {
  find_ours(running);
  if (ours_.size() != 1) return std::nullopt;
  auto nodes = Hostlist::count(ours_[0].nodes);
  if (!nodes) return std::nullopt;
  return ProbeRequest{helper_argv(env_.job_id, ours_[0], *nodes, self, "--probe-step"),
                      schedule_.helper_deadline()};
}

std::optional<std::string> Supervisor::on_probe(Clock::time_point now, std::string_view output) {
  std::optional<std::string> say;
  std::optional<Activity> probe = parse_probe(output);
  if (!probe) {
    // No answer: the stall is judged by the output alone, as without probes.
    if (comparing_) {
      no_writes_ = true;
    } else {
      baseline_failed_ = schedule_.last_progress();
    }
    activity_.reset();
    return say;
  }
  if (comparing_ && activity_) {
    if (wrote_unseen_between(seen_, *activity_, *probe)) {
      schedule_.activity(now);
      if (!said_activity_) {
        said_activity_ = true;
        say = "no output for " + std::to_string(schedule_.limit_s()) +
              " s, but the step's processes wrote since the last look (a line held back by "
              "slurmstepd, a progress bar): not a stall";
      }
    } else {
      no_writes_ = true;
    }
  }
  note_first_counts(seen_, *probe);
  activity_ = std::move(probe);
  activity_at_ = now;
  comparing_ = false;
  return say;
}

// srun does not forward SIGABRT: scancel signals the job's new steps. torchrun's workers share
// their launcher's output, and a worker still running on another node would leave its
// collective when its peer dies: the helper first stops every process of the one step on every
// node, then signals them one at a time.
StackRequest Supervisor::stack_request(const std::vector<StepRow>& running,
                                       const std::string& self) {
  find_ours(running);
  StackRequest r;
  for (const StepRow& s : ours_) r.steps.push_back(s.id);
  if (ours_.size() != 1) return r;
  auto nodes = Hostlist::count(ours_[0].nodes);
  if (!nodes) return r;
  const std::string& job = env_.job_id;
  r.helper = StackRequest::Helper{helper_argv(job, ours_[0], *nodes, self, "--freeze-step"),
                                  helper_argv(job, ours_[0], *nodes, self, "--dump-step"),
                                  schedule_.helper_deadline()};
  return r;
}

Outcome Supervisor::stall_outcome() const {
  Outcome o;
  o.code = k_exit_stall;
  o.stalled = true;
  o.report = stall_report(output_.captured(), output_.facts(), output_.tasks(), output_.notices());
  o.stacks_path = stacks_path(options_.stacks, env_.job_id);
  o.announce.push_back("verdict: " + o.report.verdict);
  if (options_.requeue_max >= 0) {
    o.requeue_target = requeue_target(env_.job_id, env_.array_job_id, env_.array_task_id);
    o.requeue = decide_requeue(o.requeue_target, env_.restart_count, options_.requeue_max);
  }
  if (output_.mode().heal) {
    o.heal = true;
    o.heal_failed = true;
    o.heal_suspects = output_.suspects();
    for (const std::string& n : output_.evidence_notes()) o.announce.push_back(n);
    o.heal_suspects.insert(o.heal_suspects.end(), o.report.suspects.begin(),
                           o.report.suspects.end());
  }
  return o;
}

Outcome Supervisor::on_exit(int code) const {
  if (schedule_.is_stalled()) return stall_outcome();
  Outcome o;
  o.code = code;
  std::vector<Suspect> suspects = output_.suspects();
  if (code != 0) {
    std::string summary = crash_summary(output_.facts());
    if (!summary.empty()) o.announce.push_back(std::move(summary));
    for (Suspect& s : crash_suspects(output_.facts())) suspects.push_back(std::move(s));
  }
  // A preflight that passed says nothing: the training step after it ends the job's output.
  if (output_.mode().heal && (code != 0 || !output_.mode().preflight)) {
    o.heal = true;
    o.heal_failed = code != 0;
    for (const std::string& n : output_.evidence_notes()) o.announce.push_back(n);
    o.heal_suspects = std::move(suspects);
  }
  return o;
}

}  // namespace ddp::watch
