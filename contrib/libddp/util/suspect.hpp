// The line with which a program names a node it blames, and the faults it can name: ddp-check
// prints it, ddp-watch reads it back from the output it watches. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

// Why a node is suspected.
enum class Fault {
  unreachable,      // it could not reach rank 0, or rank 0 not it
  missing_rank,     // a rank of it never said hello
  slow,             // its pairwise bandwidth is below the threshold
  fabric,           // the declared network is missing or down on it
  hang,             // its ranks were elsewhere while the others waited in a collective
  hardware_signal,  // a rank on it died of SIGBUS (a memory or device error, not the program)
  node_failure,     // Slurm reported the node failed
};

// "unreachable", "missing-rank", ... as written in the log and the record; parse_fault reads it.
std::string_view fault_name(Fault fault);
std::optional<Fault> parse_fault(std::string_view name);

// One named node and the evidence against it. `signature` is where the program was (the frame
// of a hang, without the node): the same signature on another node after an exclusion means
// the fault follows the program, not a node.
struct Suspect {
  std::string node;
  Fault fault = Fault::unreachable;
  std::string evidence;
  std::string signature;
};

// The variable in which ddp-watch gives the preflight step the tag of its run; ddp-check ends
// its suspect lines with it, and ddp-watch acts only on lines that carry its current tag, so
// that an old log echoed by the step is not taken for this run's verdict.
inline constexpr std::string_view k_run_tag_env = "DDP_CHECK_RUN_TAG";
// Whether `tag` can be a run tag: 8 to 64 lowercase hex digits.
bool valid_run_tag(std::string_view tag);

// The most characters of evidence a suspect line carries: with the longest node name and the
// run tag the line stays within the 1 KiB that srun forwards as one labelled piece, so that
// the tag is never cut off into a piece of its own.
inline constexpr std::size_t k_max_evidence = 512;

// How ddp-check vouches for a suspect line.
struct SuspectOrigin {
  // False under --auth=none: nobody proved who said hello, so the line is written in a form
  // ddp-watch never acts on.
  bool authenticated = true;
  std::string run_tag;  // k_run_tag_env's value, "" when unset
};

// The line ddp-check prints for a node it blames, and ddp-watch reads back from the output:
// "ddp-check: suspect NODE: FAULT: EVIDENCE", then " [run TAG]" when `origin` has a run tag
// (EVIDENCE cut to k_max_evidence characters, "..." ending a cut one);
// "ddp-check: unauthenticated, not acted on: suspect NODE: FAULT: EVIDENCE" when it is not
// authenticated.
std::string suspect_line(const Suspect& suspect, const SuspectOrigin& origin = {});
std::optional<Suspect> parse_suspect_line(std::string_view line);
// `line` without the " [run TAG]" that ends it, or nullopt when it does not end so.
std::optional<std::string_view> without_run_tag(std::string_view line, std::string_view tag);

}  // namespace ddp
