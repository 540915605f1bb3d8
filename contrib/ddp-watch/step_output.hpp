// What the watcher makes of each line the step and the stack helper print: what is forwarded to
// ddp-watch's own stdout or stderr, the facts for the crash summary, the lines kept for the
// stall's verdict, the nodes named for --heal. Pure: lines come in, writes go out.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/dump_plan.hpp"
#include "ddp-watch/output.hpp"
#include "ddp-watch/traceback.hpp"
#include "ddp-watch/trust.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

// Text for one of ddp-watch's own outputs (STDOUT_FILENO or STDERR_FILENO), newline included.
struct Write {
  int fd = 1;
  std::string text;
  bool operator==(const Write&) const = default;
};

// How the step's lines are read, fixed before the command starts.
struct OutputMode {
  bool labels = true;        // the command is srun: "N: " prefixes are task labels
  bool keep_labels = false;  // forward the labels (--keep-labels, or SLURM_LABELIO already set)
  bool torchrun = false;     // tasks are per-node launchers, not ranks
  bool preflight = false;    // the command is ddp-check: its suspect lines name nodes
  std::string run_tag;       // preflight: the tag its suspect lines must carry (trust.hpp)
  bool heal = false;         // --heal: gather the nodes named
};

class StepOutput {
 public:
  explicit StepOutput(const OutputMode& mode);
  // One line the command wrote to `fd`. `stalled`: the stacks were asked for, so the dumps go
  // to the stacks file and the lines are kept for the verdict, while the program's own lines
  // are still forwarded. `continued`: the rest of a cut line (LineBuffer), nobody's for sure.
  std::vector<Write> line(std::string_view raw, int fd, bool stalled, bool continued = false);
  // One line of the stack helper: its record of a process it signalled, or text for stderr.
  std::vector<Write> helper_line(std::string_view raw);

  const OutputMode& mode() const { return mode_; }
  // Each task id's RANK from Slurm's layout of the step, for the crash summary (layout.hpp).
  void set_rank_of_task(std::map<int, int> ranks) { reader_.set_rank_of_task(std::move(ranks)); }
  const CrashFacts& facts() const { return reader_.facts(); }
  const std::vector<Line>& captured() const { return captured_; }
  std::vector<int> tasks() const { return {tasks_.begin(), tasks_.end()}; }
  const std::vector<StepProcess>& notices() const { return notices_; }
  // The preflight's rank 0 is srun's task `task` (trust.hpp), from Slurm's layout of the step.
  void set_head_task(int task) { gate_.set_head_task(task); }
  // The nodes the output named, under trust.hpp's rules, and what was left unread.
  std::vector<Suspect> suspects() const { return gate_.suspects(); }
  std::vector<std::string> evidence_notes() const { return gate_.notes(); }

  // The most bytes of lines kept after the stack request: a step may print without end.
  static constexpr std::size_t k_max_captured = 64u << 20;

 private:
  Write forward(const Line& l, std::string_view raw, int fd) const;

  OutputMode mode_;
  CrashReader reader_;
  DumpFilter dumps_;
  std::set<int> tasks_;
  std::vector<Line> captured_;
  std::size_t captured_bytes_ = 0;
  std::vector<StepProcess> notices_;
  EvidenceGate gate_;
};

}  // namespace ddp::watch
