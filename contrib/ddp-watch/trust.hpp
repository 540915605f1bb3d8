// What ddp-watch believes before it acts. Every fact that leads to an exclusion or a requeue
// comes from a writer that the job's program and other users cannot impersonate:
//   - srun's own lines: with --label (ddp-watch sets SLURM_LABELIO), srun puts "N: " in front
//     of every piece of a task's output and ends each piece with a newline (Slurm's
//     write_labelled_message: slurmstepd forwards a task's bytes in messages of at most
//     SLURM_IO_MAX_MSG_LEN, 1 KiB, and srun labels each one, a partial line included). A task
//     cannot make an unlabelled line appear: carriage returns stay inside its labelled line, an
//     overlong line comes as several labelled ones. srun writes its own messages, unlabelled,
//     to its stderr. So an unlabelled line on srun's stderr, read from its start, is srun's;
//     any other line is a task's, or of unknown writer when the command is not srun.
//   - ddp-check's suspect lines, exactly as it writes them ("ddp-check: suspect NODE: FAULT:
//     EVIDENCE [run TAG]" from the start of the line, a node name of letters, digits, '.', '-'
//     and '_'), on stdout, from the task that is rank 0 (which judges the authenticated
//     hellos), in the preflight step only: the training step's and the other tasks' lines are
//     text. Rank 0 is the first task on the first node of the step's node list, which Slurm's
//     layout of the step (sattach --layout) names: task 0 until it is read, and on every
//     release before 26.05; Slurm 26.05 at a site with a topology plugin may give task 0 to
//     another node (topology order), and then only the layout's task counts. TAG is the
//     fresh tag ddp-watch gave this run of the step (DDP_CHECK_RUN_TAG): a line of an earlier
//     run, echoed by the step (a setup command printing an old log), is text too. Under
//     --auth=none ddp-check writes its suspects in another form, which is never acted on.
//   - Slurm's records, asked by the edge (scontrol), never read from the output.
// A torchrun failure table, a traceback or "srun: error: ..." printed by a task is quoted in
// the crash summary but never leads to an action. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddp-watch/output.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

// Who wrote a line of the step's output, as far as it can be known.
enum class Writer {
  task,     // a task's line (srun's label in front)
  srun,     // srun's own line: unlabelled, on its stderr, read from the start of a line
  unknown,  // unlabelled but not provably srun's: the command is not srun, stdout, or the rest
            // of a line cut by ddp-watch's line buffer
};

// The writer of `line` (split_label's result) that arrived on `fd`; `whole`: the line was read
// from its start. `srun`: the command is srun, so labels mean tasks.
Writer writer_of(const Line& line, int fd, bool whole, bool srun);

// Whether `name` can be a Slurm node name: 1 to 255 of [A-Za-z0-9._-].
bool is_node_name(std::string_view name);

// ddp-check's suspect line, exactly: "ddp-check: suspect NODE: FAULT: EVIDENCE" from the first
// byte, NODE a node name, FAULT one ddp-check names (not hang, hardware-signal or node-failure,
// which only ddp-watch itself finds), and, when `run_tag` is not empty, " [run RUN_TAG]" at
// the end (not part of the evidence). Nothing for any other text.
std::optional<Suspect> parse_check_suspect(std::string_view text, std::string_view run_tag = {});

// The most node names one of srun's lines may expand to: a longer hostlist is not read, and
// the note says so (expanding "n[000000-099999]" would cost seconds and megabytes).
inline constexpr std::size_t k_max_named = 1024;
// The most distinct nodes gathered from one command's output.
inline constexpr std::size_t k_max_suspects = 1024;

// What the step's output names, gathered line by line under the rules above.
class EvidenceGate {
 public:
  // preflight: the command is ddp-check (its suspect lines count); srun: the command is srun;
  // run_tag: the tag this run's suspect lines must end with ("": none is asked for).
  EvidenceGate(bool preflight, bool srun, std::string run_tag = {})
      : preflight_(preflight), srun_(srun), run_tag_(std::move(run_tag)) {}
  // One line of the command's output (split_label's result) from `fd`, `whole` as above.
  void add(const Line& line, int fd, bool whole);
  // The srun task id of the preflight's rank 0, from Slurm's layout of the step; 0 until then.
  // Lines already read count by it too: suspects() decides when asked.
  void set_head_task(int task) { head_task_ = task; }
  // The nodes named, the first evidence for each, in the order of the lines.
  std::vector<Suspect> suspects() const;
  // What was left unread and why ("srun named 100000 nodes in one line, ..."); one line each.
  std::vector<std::string> notes() const;

  // The most suspect lines kept from the preflight's tasks before rank 0 is known: each task
  // may name every node once, and a step's rank 0 names at most k_max_suspects.
  static constexpr std::size_t k_max_check_lines = 4 * 1024;

 private:
  // A named node and who named it: srun (task -1) or a preflight task's suspect line.
  struct Named {
    int task = -1;
    Suspect suspect;
  };
  void note(std::string text);
  std::vector<const Suspect*> counted() const;
  bool preflight_;
  bool srun_;
  std::string run_tag_;
  int head_task_ = 0;
  std::vector<Named> named_;
  std::set<std::pair<int, std::string>> named_seen_;  // (task, node): each once
  std::size_t check_lines_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace ddp::watch
