// Python's faulthandler dumps (PYTHONFAULTHANDLER=1, then SIGABRT), read back from the step's
// output: which function every thread of every task was in.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ddp-watch/output.hpp"

namespace ddp::watch {

// One line of a traceback: `File "train.py", line 57 in load_batch`.
struct Frame {
  std::string file;
  int line = 0;
  std::string function;
};

struct Thread {
  bool current = false;       // "Current thread": the one that took the signal
  std::vector<Frame> frames;  // innermost first, as faulthandler prints them
};

// One process's dump. A task may print several (torchrun: one per worker, then the agent's).
struct Dump {
  int task = -1;
  int pid = 0;         // from the helper's marker before it in the task's stream; 0 when unmarked
  std::string reason;  // "Aborted", "Segmentation fault", ...
  std::vector<Thread> threads;
  std::vector<std::string> text;  // the dump as printed, for the stacks file
};

// A line in which a dump's first line (or the helper's marker before it) follows other text of
// the same task (a progress bar's last redraw, written without a newline, then "Fatal Python
// error: ..."): that text and the dump's first line as two lines, so that every dump starts on
// a line of its own. Any other line comes back alone.
std::vector<Line> split_at_dump(Line line);

// Returns every dump found in `lines`, in the order they started. Lines of several tasks may
// interleave (srun --label keeps each line whole); lines that belong to no dump are skipped. A
// marker line (dump_marker()) gives the next dump of its task the marker's pid.
std::vector<Dump> parse_dumps(const std::vector<Line>& lines);

// Tells, line by line as the step prints them, which lines belong to a dump (its lines, and the
// helper's markers): those go to the stacks file. The others are the program's own output,
// which is forwarded also while the stacks are being taken.
class DumpFilter {
 public:
  // Whether `line` is part of a dump; the same rules as parse_dumps().
  bool in_dump(const Line& line);

 private:
  std::map<int, bool> open_;  // task -> a dump of it is being printed
};

// Returns the thread that runs the program: the one whose outermost frame is a module's body;
// else the last listed (faulthandler lists the newest thread first); null when there is none.
const Thread* main_thread(const Dump& dump);

}  // namespace ddp::watch
