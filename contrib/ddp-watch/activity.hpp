// Whether a silent step still writes. slurmstepd holds a task's unfinished line until a
// newline or 1 KiB, so a progress bar that redraws with carriage returns reaches srun, and
// ddp-watch, in bursts that can be further apart than the timeout. Before a silence is called a
// stall, a helper step (`ddp-watch --probe-step JOB.STEP`, one task per node) reads how many
// bytes each process of the step has written (/proc/PID/io, wchar: write() and its kin, to a
// pipe, a file or a socket); a process whose count grew between two probes wrote. Only writes
// that could still sit in slurmstepd's buffer count: a process that wrote more since srun last
// showed output than k_max_unseen wrote somewhere else (a log file, a metrics service, a
// checkpoint), which says nothing about the step's progress. Pure: the helper's lines come in,
// the counts and the comparison go out.
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

// The most bytes a process may have written since srun last showed output for its writes to
// count as progress. slurmstepd forwards a task's unfinished line once it holds 1 KiB, so a
// process that wrote more than that unseen wrote it somewhere other than the step's output;
// 4 KiB leaves room for a partial line on stdout and one on stderr, and for the bytes in
// flight between a write and srun's forwarding of it.
inline constexpr unsigned long long k_max_unseen = 4096;

// Adds to `seen` the count of each process of `probe` that it does not hold yet: the first
// count read of a process since srun last showed output, which its unseen writes are counted
// from.
void note_first_counts(Activity& seen, const Activity& probe);

// Whether a process present in both probes wrote between them, having written no more than
// k_max_unseen since its count in `seen` (one missing from `seen` is counted from `before`).
// A process that appeared or ended is not taken as writing: only a count that grew is.
bool wrote_unseen_between(const Activity& seen, const Activity& before, const Activity& after);

}  // namespace ddp::watch
