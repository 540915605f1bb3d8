// Whether a silent step still writes. slurmstepd holds a task's unfinished line until a
// newline or 1 KiB, so a progress bar that redraws with carriage returns reaches srun, and
// ddp-watch, in bursts that can be further apart than the timeout. Before a silence is called a
// stall, a helper step (`ddp-watch --probe-step JOB.STEP`, one task per node) reads how many
// bytes each process of the step has written (/proc/PID/io, wchar: write() and its kin, to a
// pipe, a file or a socket); a process whose count grew between two probes wrote. Pure: the
// helper's lines come in, the counts and the comparison go out.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::watch {

// One process's count: "ddp-watch-probe: NODE PID WCHAR".
std::string probe_line(std::string_view node, long pid, unsigned long long wchar);

// The counts of one probe, by "NODE PID".
struct Activity {
  std::map<std::string, unsigned long long> written;
};

// The probe lines of the helper's output; nothing when there is none (no process found, the
// helper failed). Other lines are ignored; at most k_max_probed processes are read.
inline constexpr std::size_t k_max_probed = 65536;
std::optional<Activity> parse_probe(std::string_view output);

// Whether a process present in both probes wrote between them. A process that appeared or
// ended is not taken as writing: only a count that grew is.
bool wrote_between(const Activity& before, const Activity& after);

}  // namespace ddp::watch
