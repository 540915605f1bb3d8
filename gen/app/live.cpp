// The only code of ddpgen that runs other programs: Slurm's own clients, to read the cluster
// it runs on, through the one runner (libddp/sys/exec.hpp): no shell, argv as it is, and a
// deadline, so that a controller that does not answer cannot hang ddpgen.
#include <chrono>
#include <initializer_list>
#include <iostream>
#include <string_view>

#include "gen/app/commands.hpp"
#include "libddp/sys/exec.hpp"

namespace ddpgen::app {
namespace {

// How long one Slurm client may take: scontrol waits for an unreachable controller for
// MessageTimeout (10 s by default) several times over.
constexpr std::chrono::seconds k_client_deadline{60};

// Runs argv, returns its standard output; fails naming the command when it cannot start, exits
// non-zero or passes the deadline (its stderr passes through to ours).
// argv arrives as views and is copied here, not as a braced list of std::string temporaries:
// with those, GCC 16 at -O2 reports -Wfree-nonheap-object on the list's destruction.
Result<std::string> capture(std::initializer_list<std::string_view> args_in) {
  std::vector<std::string> argv(args_in.begin(), args_in.end());
  const std::string label = argv[0] + (argv.size() > 1 ? " " + argv[1] : "");
  ddp::sys::RunOptions options;
  options.deadline = k_client_deadline;
  auto ran = ddp::sys::run(argv, options);
  if (!ran) {
    return ddp::fail({label, 0, 0},
                     ran.error().message + " (run this on a node with Slurm's clients)");
  }
  if (ran->status != 0)
    return ddp::fail({label, 0, 0}, "failed; is this a Slurm cluster's login node?");
  return std::move(ran->out);
}

}  // namespace

Result<ClusterFacts> read_live_cluster() {
  auto partitions = capture({"scontrol", "show", "partition", "--oneliner"});
  if (!partitions) return std::unexpected(partitions.error());
  auto nodes = capture({"scontrol", "show", "node", "--oneliner"});
  if (!nodes) return std::unexpected(nodes.error());
  auto facts = parse_cluster(*partitions, *nodes);
  if (!facts) return facts;
  // SPANK options appear in srun --help when plugstack.conf loads the plugin.
  auto help = capture({"srun", "--help"});
  facts->ddp_plugin = help && help->find("--ddp") != std::string::npos;
  return facts;
}

Result<int> report_live(const Profile& profile, const std::string& name, bool conflicts_only) {
  auto facts = read_live_cluster();
  if (!facts) return std::unexpected(facts.error());
  int conflicts = 0;
  for (const auto& f : compare_with_cluster(profile, *facts)) {
    if (!f.conflict && conflicts_only) continue;
    std::cerr << "ddpgen: live: " << (f.conflict ? "conflict: " : "note: ") << f.where << ": "
              << f.message << "\n";
    conflicts += f.conflict;
  }
  if (conflicts > 0 || !conflicts_only)
    std::cerr << "ddpgen: live: profile \"" << name << "\" against this cluster: " << conflicts
              << " conflict(s)\n";
  return conflicts;
}

}  // namespace ddpgen::app
