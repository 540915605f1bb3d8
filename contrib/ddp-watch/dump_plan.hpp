// Which processes of a step are asked for their stacks, in which order, and the lines that tie
// each dump to the process that printed it. Pure: the helper step gathers the processes (the
// step's slurmstepd lists them, /proc describes them) and passes them in.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace ddp::watch {

// What a process is to its step.
enum class Role {
  main,      // a rank's own process: the one whose stack is taken
  child,     // a process a rank started (a DataLoader worker, a subprocess): left frozen
  launcher,  // a process that started ranks (torchrun's agent, accelerate): dumped last
};

struct StepProcess {
  pid_t pid = 0;
  pid_t parent = 0;
  int task = -1;        // SLURM_PROCID
  int rank = -1;        // RANK, when the process has one
  std::string node;     // SLURMD_NODENAME
  bool python = false;  // its executable is a Python interpreter
  Role role = Role::main;
  pid_t owner = 0;  // for a child: the pid of the rank's process it belongs to
};

struct DumpPlan {
  std::vector<StepProcess> stop;      // SIGSTOP first: every process of the step on this node
  std::vector<StepProcess> dump;      // then SIGABRT one at a time: ranks by rank, launchers last
  std::vector<StepProcess> children;  // left stopped: they would dump into their rank's output
};

// Gives each process its role and plans the order. The processes of one rank (one RANK; without
// any RANK in the step, one task) share an environment: its DataLoader workers inherit it, and
// a shell that started it has it too. The rank's own process is the outermost Python among them
// (the outermost of all when none is Python). What descends from it is its child; any other
// process (torchrun's agent) is a launcher.
DumpPlan plan_dump(const std::vector<StepProcess>& processes);

// The line the helper prints on its own output for each process it signals, read back by the
// watcher to name ranks and nodes: "ddp-watch-dump: task 1 rank 3 pid 4242 node node02 main".
std::string dump_notice(const StepProcess& p);
// Parses dump_notice(); false for any other line.
bool parse_dump_notice(std::string_view line, StepProcess& out);

// The line the helper writes into a process's own stderr just before it signals it, so that
// the dump after it in that stream is attributed by pid, not by position: "ddp-watch-dump:
// pid 4242".
std::string dump_marker(pid_t pid);
// The pid of a dump_marker() line, 0 for any other line.
pid_t parse_dump_marker(std::string_view line);

// The processes of step JOB.STEP in `scontrol listpids JOB.STEP NODE`'s table (columns PID,
// JOBID, STEPID, LOCALID, GLOBALID): the step's slurmstepd names them from its process tracking,
// so neither a process's environment nor another job with the same id (a second cluster on
// the same machine, another slurmd on the node) can add one. Rows of any other step, and lines
// before the header (scontrol's messages), are left out; text without the header gives nothing.
std::vector<pid_t> parse_listpids(std::string_view table, std::string_view job,
                                  std::string_view step);

// "main", "child", "launcher".
std::string_view role_name(Role role);

}  // namespace ddp::watch
