// ddp-watch: runs a training step and watches it for stalls and crashes (see usage()).
#include <cstdio>
#include <string>
#include <vector>

#include "ddp-watch/dump_node.hpp"
#include "ddp-watch/heal_run.hpp"
#include "ddp-watch/options.hpp"
#include "ddp-watch/supervise.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto options = ddp::watch::parse_options(args);
  if (!options) {
    std::fprintf(stderr, "%s\n", options.error().message.c_str());
    return ddp::watch::k_exit_usage;
  }
  if (!options->dump_step.empty())
    return ddp::watch::dump_step_here(options->dump_step, options->dump_at_ms);
  if (!options->freeze_step.empty()) return ddp::watch::freeze_step_here(options->freeze_step);
  if (!options->probe_step.empty()) return ddp::watch::probe_step_here(options->probe_step);
  if (!options->heal_requeue.empty()) return ddp::watch::heal_requeue(options->heal_requeue);
  if (options->help) {
    std::fputs(ddp::watch::usage().c_str(), stdout);
    return 0;
  }
  if (options->version) {
    std::printf("ddp-watch %s\n", DDP_WATCH_VERSION);
    return 0;
  }
  return ddp::watch::supervise(*options);
}
