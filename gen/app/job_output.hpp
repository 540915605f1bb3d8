// A job's output files as a follower reads them: which they are, and what is new in them since
// the last read. The job's output is its own; nothing here interprets it (gen/core does).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "gen/core/job_status.hpp"

namespace ddpgen::app {

// One output file of a job, read from where the last read stopped.
struct OutputTail {
  explicit OutputTail(std::string file) : path(std::move(file)) {}
  std::string path;
  off_t offset = 0;
  bool attached = false;  // the first read (which may skip an old output's beginning) is done
  LineSplitter lines;
};

// Reads what t.path holds beyond t.offset, at most 1 MiB; on the first read of a larger file,
// its last MiB only. Adds to notes what the reader should know (the start skipped; the file
// began again, as Slurm truncates it when a requeued job runs again). A file that is not there
// yet, or is not a regular file (/dev/null, a FIFO), gives nothing.
std::string read_more(OutputTail& t, std::vector<std::string>& notes);

// The file a sweep's script sends a stream on to, once the sweep's values name it: the path of
// its line "ddpgen: output continues in PATH" (or "errors continue in") among the first lines
// of sbatch's own file at `path`; nothing when there is none.
std::optional<std::string> continued_in(const std::string& path);

// The output files of s: StdOut, then the file it continues in (a sweep's), and StdErr and its
// continuation when they are other files; never /dev/null.
std::vector<std::string> output_files(const JobStatus& s);

// The last verdict line (classify_line) in the last MiB of each of s's output files, or "".
std::string last_verdict_in(const JobStatus& s);

}  // namespace ddpgen::app
