// The per-node phases beside the rendezvous: the fabric assertion, the pairwise phase's agent
// and coordinator set-up, the watchdog.
#include "ddp-check/phases_io.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "ddp-check/fabric/fabric.hpp"
#include "ddp-check/fabric/probe_io.hpp"
#include "ddp-check/nccl/nccl_io.hpp"
#include "ddp-check/pairs/protocol.hpp"
#include "ddp-check/pairs/tcp_io.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::check {
namespace {

// The pairwise phase's bound replaces the check's: the watchdog is set again for it.
std::chrono::steady_clock::time_point pairs_deadline(const PhaseStep& step) {
  arm_watchdog(step.watchdog_s);
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(step.budget_s));
}

// The last line of defence for the bound: name resolution and NCCL can block outside poll().
void on_alarm(int) {
  static constexpr char k_msg[] =
      "ddp-check: FAILED: the check exceeded its deadline (blocked in name resolution or NCCL)\n";
  ssize_t ignored = write(STDERR_FILENO, k_msg, sizeof k_msg - 1);
  (void)ignored;
  _exit(1);
}

PairsSetup base_setup(const Options& o, const Identity& id, const AuthConfig& auth) {
  PairsSetup s;
  s.master_addr = id.master_addr;
  if (auto port = pairs_port(id.master_port)) {
    s.port = *port;
  } else {
    s.port_error = port.error().message;
  }
  s.auth = auth;
  s.binding = {id.self.job, id.self.step, id.self.het, id.master_port};
  s.node = slurm_node_name(id.self.host);
  s.run_tag = id.run_tag;
  s.seconds = o.pairs_seconds;
  s.threshold = o.pairs_threshold;
  s.max_rounds = o.pairs_rounds;
  s.nccl = o.nccl;
  if (o.nccl) s.nccl_unavailable = nccl_unavailable();
  s.nccl_bytes = o.pairs_bytes;
  return s;
}

}  // namespace

void arm_watchdog(unsigned seconds) {
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  alarm(seconds);
}

std::string slurm_node_name(const std::string& host) {
  const char* name = std::getenv("SLURMD_NODENAME");
  return name != nullptr && *name != '\0' ? std::string(name) : host;
}

int check_fabric_here(const Options& o, const std::string& node, const std::string& run_tag) {
  int rc = 0;
  // What this process read of its own node: no peer's word, authenticated or not.
  const SuspectOrigin origin{true, run_tag};
  if (o.fabric) {
    auto fabric = parse_fabric(*o.fabric);
    FabricCheck c = check_fabric(*fabric, read_fabric_facts(o.sysfs_root));
    if (c.ok) {
      std::printf("ddp-check: fabric %s on %s: %s\n", o.fabric->c_str(), node.c_str(),
                  c.found.c_str());
    } else {
      std::printf(
          "%s\n",
          suspect_line({node, Fault::fabric, *o.fabric + ": " + c.missing, ""}, origin).c_str());
      rc = 1;
    }
  }
  if (o.net_plugin) {
    auto loaded = load_net_plugin(*o.net_plugin);
    if (loaded) {
      std::printf("ddp-check: NCCL net plugin on %s: %s\n", node.c_str(), loaded->c_str());
    } else {
      std::printf("%s\n",
                  suspect_line({node, Fault::fabric, loaded.error().message, ""}, origin).c_str());
      rc = 1;
    }
  }
  std::fflush(stdout);
  return rc;
}

int pairs_coordinator(const Options& o, const Identity& id, const AuthConfig& auth,
                      const std::vector<Hello>& hellos) {
  PairsSetup s = base_setup(o, id, auth);
  s.coordinator = true;
  // In the table's order: by node, then rank.
  std::vector<Hello> sorted = hellos;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Hello& a, const Hello& b) {
    return std::pair(a.node_rank.value_or(a.rank), a.rank) <
           std::pair(b.node_rank.value_or(b.rank), b.rank);
  });
  std::set<std::string> seen;
  for (const Hello& h : sorted) {
    if (!seen.insert(h.host).second) continue;
    s.nodes.push_back(h.host);
    s.addresses.push_back(h.address);
  }
  // Sized on the nodes that came, with the plan's rule (phase_plan.hpp).
  const auto nodes = static_cast<std::uint32_t>(s.nodes.size());
  s.deadline = pairs_deadline(pairs_step(o, nodes, !s.nccl_unavailable.has_value()));
  return run_pairs(s);
}

int pairs_agent(const Options& o, const Identity& id, const AuthConfig& auth,
                const PhaseStep& step) {
  PairsSetup s = base_setup(o, id, auth);
  s.deadline = pairs_deadline(step);
  return run_pairs(s);
}

}  // namespace ddp::check
