// The step's output as the watcher sees it: srun --label lines, task lists, rank ranges.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/text.hpp"

namespace ddp::watch {

// One line of the step's output. task is srun's task id from its --label prefix, or -1 for a
// line srun wrote itself ("srun: error: ...") or one without a label, or k_unknown_writer for
// an unlabelled line that is not srun's either (trust.hpp: on stdout, the rest of a cut line, a
// command that is not srun).
inline constexpr int k_unknown_writer = -2;
struct Line {
  int task = -1;
  std::string text;
};

// Splits "  3: text" (srun --label pads the id to the width of the largest) into {3, "text"}.
// A line without that prefix is returned whole with task -1.
Line split_label(std::string_view raw);

// Parses a Slurm task list as srun prints it ("3", "0-1", "0-2,5"); nothing when malformed or
// above max_task.
std::optional<std::vector<int>> parse_task_list(std::string_view text, int max_task = 1 << 20);

// Ranks as ranges, as ddp-check writes them: {0,1,2,3,5} -> "0-3,5" (ddp::text::format_ranges).
// A line as LineBuffer cuts it: `continued` when it does not start at a line's start (the
// rest of a line longer than k_max_line), which no writer can be proven from.
struct BufferedLine {
  std::string text;
  bool continued = false;
  bool operator==(const BufferedLine&) const = default;
};

// Cuts a stream's bytes into lines as they arrive. A line longer than k_max_line goes in
// pieces: a program that never ends its line must not cost memory without bound.
class LineBuffer {
 public:
  static constexpr std::size_t k_max_line = 65536;
  // The whole lines (without their newline) that `bytes` completes.
  std::vector<BufferedLine> add(std::string_view bytes);
  // The end of the stream: what is left of an unfinished line, if anything.
  std::optional<BufferedLine> finish();

 private:
  std::string pending_;
  bool continued_ = false;  // pending_ is the rest of a line already cut
};

inline std::string format_ranges(const std::vector<int>& numbers) {
  return ddp::text::format_ranges(std::vector<std::int64_t>(numbers.begin(), numbers.end()));
}

}  // namespace ddp::watch
