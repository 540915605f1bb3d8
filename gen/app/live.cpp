// The only code of ddpgen that runs other programs: Slurm's own clients, to read the cluster
// it runs on. No shell is involved: argv goes to execvp as it is.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <string_view>

#include "gen/app/commands.hpp"

extern char** environ;

namespace ddpgen::app {
namespace {

// Runs argv, returns its standard output; fails naming the command when it cannot start or
// exits non-zero (its stderr passes through to ours).
// argv arrives as views and is copied here, not as a braced list of std::string temporaries:
// with those, GCC 16 at -O2 reports -Wfree-nonheap-object on the list's destruction.
Result<std::string> capture(std::initializer_list<std::string_view> args_in) {
  std::vector<std::string> argv(args_in.begin(), args_in.end());
  const std::string label = argv[0] + (argv.size() > 1 ? " " + argv[1] : "");
  int fds[2];
  if (pipe(fds) != 0) return ddp::fail({label, 0, 0}, std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  std::array<char, 4096> buf;
  for (ssize_t n; rc == 0 && (n = read(fds[0], buf.data(), buf.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (rc != 0)
    return ddp::fail({label, 0, 0}, std::string("cannot run it: ") + std::strerror(rc) +
                                        " (run this on a node with Slurm's clients)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return ddp::fail({label, 0, 0}, "failed; is this a Slurm cluster's login node?");
  return out;
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

Result<int> report_live(const Profile& profile, const std::string& name) {
  auto facts = read_live_cluster();
  if (!facts) return std::unexpected(facts.error());
  int conflicts = 0;
  for (const auto& f : compare_with_cluster(profile, *facts)) {
    std::cerr << "ddpgen: live: " << (f.conflict ? "conflict: " : "note: ") << f.where << ": "
              << f.message << "\n";
    conflicts += f.conflict;
  }
  std::cerr << "ddpgen: live: profile \"" << name << "\" against this cluster: " << conflicts
            << " conflict(s)\n";
  return conflicts;
}

}  // namespace ddpgen::app
