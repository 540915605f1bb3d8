// The nodes a stall or a crash points at, for healing (heal.hpp). Pure: takes what the verdict
// and the crash summary were made from, returns the suspects with their evidence.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/verdict.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

// The nodes of the ranks that were elsewhere, or printed no stack, while others waited in a
// collective; none when no rank waited (the program hangs everywhere: not a node's fault) or
// when every rank waited (nothing tells which node). A hang's signature is where it was.
std::vector<Suspect> stall_suspects(const std::vector<Process>& processes,
                                    const std::vector<int>& silent, const Layout& layout);

// The nodes whose ranks died of a hardware-class signal (SIGBUS) first, not as collateral, as
// srun reports it ("srun: error: node02: task 1: Bus error"). torchrun's failure table is a
// task's output, which the program can print too: it names no node here (trust.hpp).
std::vector<Suspect> crash_suspects(const CrashFacts& facts);

// The nodes srun names in "srun: error: Node failure on node[02-03]" (node-failure) and
// "srun: error: Task launch for StepId=7.0 failed on node node03: Communication connection
// failure" (unreachable: its slurmstepd could not reach srun); none for other text. A list of
// more than k_max_named nodes (trust.hpp) is not expanded: none, and `note` says why.
std::vector<Suspect> srun_suspects(std::string_view text, std::string* note = nullptr);

}  // namespace ddp::watch
