// ddp-check: proves the DDP fabric of a step in seconds. Gathers inputs, asks the pure core
// for the phases to run (phase_plan.hpp), runs them in order, reports. Exit 0 healthy, 1 fault,
// 2 usage/environment.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-check/nccl/bandwidth.hpp"
#include "ddp-check/nccl/nccl_io.hpp"
#include "ddp-check/options.hpp"
#include "ddp-check/phase_plan.hpp"
#include "ddp-check/phases_io.hpp"
#include "ddp-check/rendezvous/admit.hpp"
#include "ddp-check/rendezvous/hello.hpp"
#include "ddp-check/rendezvous/report.hpp"
#include "ddp-check/rendezvous/session_io.hpp"
#include "ddp-check/rendezvous/suspects.hpp"
#include "ddp-check/rendezvous/verify.hpp"
#include "ddp-check/topology/hwloc_io.hpp"
#include "ddp-check/topology/interfaces.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/sys/system.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/suspect.hpp"
#include "libddp/util/text.hpp"

namespace {

using namespace ddp::check;
namespace sys = ddp::sys;
namespace text = ddp::text;
using ddp::omp_num_threads;
using ddp::OmpInputs;

constexpr int k_exit_ok = 0;
constexpr int k_exit_fault = 1;
constexpr int k_exit_usage = 2;

#ifndef DDP_CHECK_VERSION
#define DDP_CHECK_VERSION "unknown"
#endif

std::optional<std::string> getenv_lookup(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

void say(const std::string& line) {
  std::fprintf(stderr, "ddp-check: %s\n", line.c_str());
}

int show_topology(const Options& o) {
  auto topo = o.topology ? load_topology_xml(*o.topology) : load_live_topology();
  if (!topo) {
    say("error: " + topo.error().message);
    return k_exit_usage;
  }
  std::fputs(describe_topology(*topo).c_str(), stdout);
  // The plugin's own code on this node's routes: --route-to, else MASTER_ADDR when set.
  std::optional<std::string> destination = o.route_to;
  if (!destination) destination = getenv_lookup("MASTER_ADDR");
  ddp::Result<ddp::EnvList> exported = ddp::EnvList{};
  if (destination) exported = sys::socket_ifname_for(*destination, ddp::AddressPolicy{}, 5);
  std::fputs(topology_ifname_lines(destination, exported,
                                   choose_socket_ifname(topo->interfaces, std::nullopt))
                 .c_str(),
             stdout);
  if (!o.topology) {
    // The plugin's rule (rules.hpp), fed with what this process sees: its own CPUs stand for
    // the step's, as in the plugin when slurmstepd's mask is unknown.
    const auto current = getenv_lookup("OMP_NUM_THREADS");
    const auto cpus_per_task = getenv_lookup("SLURM_CPUS_PER_TASK");
    const auto cpus_on_node = getenv_lookup("SLURM_CPUS_ON_NODE");
    OmpInputs in;
    if (current) in.current = *current;
    if (cpus_per_task) in.cpus_per_task = *cpus_per_task;
    if (cpus_on_node) in.cpus_on_node = *cpus_on_node;
    in.task_cpus = sys::affinity_cpus();
    if (auto local = getenv_lookup("LOCAL_WORLD_SIZE")) {
      // --topology only reports: a malformed LOCAL_WORLD_SIZE counts as one task, not an error.
      in.local_ntasks = static_cast<std::uint32_t>(
          text::parse_unsigned(*local, 1, 0xffffffffull, "LOCAL_WORLD_SIZE").value_or(1));
    }
    auto omp = omp_num_threads(in);
    const bool kept = in.current && !in.current->empty();
    std::printf("OMP_NUM_THREADS: %s\n", omp    ? omp->c_str()
                                         : kept ? "already set, kept"
                                                : "unknown");
  }
  return k_exit_ok;
}

// How this process signs and checks hellos: --auth, and munged's socket from --munge-socket,
// else from slurm.conf's AuthInfo (where Slurm's own auth/munge finds it), else the default.
AuthConfig auth_config(const Options& o, const EnvLookup& env) {
  AuthConfig auth;
  auth.mode = o.auth;
  auth.uid = static_cast<std::uint32_t>(getuid());
  // The credential outlives the check by a little; MUNGE remembers it (replay) until then.
  auth.ttl_s = static_cast<unsigned>(std::ceil(o.timeout_s)) + 10;
  auth.munge_socket = o.munge_socket;
  if (!auth.munge_socket && auth.mode == AuthMode::munge) {
    auto conf = env("SLURM_CONF").value_or("/etc/slurm/slurm.conf");
    if (auto text = sys::read_file(conf)) auth.munge_socket = munge_socket_from_slurm_conf(*text);
  }
  return auth;
}

// Prints the connections rank 0 refused: none of them was counted, each is named.
void report_refusals(const Exchange& ex) {
  for (const auto& line : refusal_lines(ex)) say(line);
}

// What the phases of one run hand on to the next.
struct Run {
  Session& session;
  const Identity& id;
  const Options& o;
  const AuthConfig& auth;  // how hellos and pairwise agents are signed and checked
  const PhasePlan& plan;
  Clock::time_point start;
  Clock::time_point deadline;
  Exchange ex;                  // the rendezvous' outcome
  std::set<std::string> nodes;  // rank 0: the nodes that came
  bool finished = false;        // the verdict was final: no NCCL phase follows
  int fabric_rc = 0;            // the fabric phase's outcome, reported when the rest passed

  // A verdict broadcast's bound: k_verdict_send_s from now, never past the deadline.
  Clock::time_point send_until() const {
    return std::min(deadline,
                    Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(plan.verdict_send_s)));
  }
};

// Rank 0's NCCL phase: hands the unique id to the admitted ranks, all-reduces, judges.
int nccl_master(Run& r) {
  const Identity& id = r.id;
  const Options& o = r.o;
  auto nccl_id = nccl_new_id();
  if (!nccl_id) {
    r.session.broadcast({Verdict::Kind::fail, "rank 0: " + nccl_id.error().message},
                        r.send_until());
    say(who(id) + ": FAILED: " + nccl_id.error().message);
    return k_exit_fault;
  }
  r.session.broadcast({Verdict::Kind::nccl, *nccl_id}, r.send_until());
  auto timing = nccl_allreduce(*nccl_id, 0, static_cast<int>(id.self.world_size),
                               static_cast<int>(id.self.local_rank), o.nccl_bytes);
  const auto final_until = r.send_until();
  if (!timing) {
    r.session.broadcast({Verdict::Kind::fail, "NCCL phase on rank 0: " + timing.error().message},
                        final_until);
    say(who(id) + ": FAILED: NCCL phase: " + timing.error().message);
    return k_exit_fault;
  }
  auto bw = allreduce_bandwidth(o.nccl_bytes, timing->seconds, id.self.world_size);
  std::printf(
      "NCCL all-reduce: %llu bytes float sum, %u ranks, %.1f us, algbw %.2f GB/s, "
      "busbw %.2f GB/s\n",
      static_cast<unsigned long long>(o.nccl_bytes), id.self.world_size, timing->seconds * 1e6,
      bw.algbw_gbps, bw.busbw_gbps);
  if (o.nccl_min_busbw && bw.busbw_gbps < *o.nccl_min_busbw) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "NCCL all-reduce busbw %.2f GB/s is below the minimum %.2f GB/s", bw.busbw_gbps,
                  *o.nccl_min_busbw);
    r.session.broadcast({Verdict::Kind::fail, text}, final_until);
    say(std::string("FAULT: ") + text);
    return k_exit_fault;
  }
  r.session.broadcast({Verdict::Kind::ok, {}}, final_until);
  std::printf("ddp-check: OK: %zu ranks on %zu nodes, TCP and NCCL\n", r.ex.hellos.size(),
              r.nodes.size());
  return k_exit_ok;
}

// The suspect lines of a world with silent nodes (suspects.hpp), for ddp-watch --heal; in the
// form ddp-watch never acts on when `origin` is not authenticated.
void print_suspects(const std::vector<Hello>& hellos, const std::string& head,
                    const ddp::SuspectOrigin& origin) {
  auto list = getenv_lookup("SLURM_STEP_NODELIST");
  auto nodes = list ? ddp::Hostlist::parse(*list) : ddp::Result<ddp::Hostlist>(ddp::fail(""));
  if (!nodes || nodes->size() > 100'000) return;
  const WorldSuspects named = world_suspects(nodes->expand(), hellos, head);
  for (const auto& s : named.suspects) std::printf("%s\n", ddp::suspect_line(s, origin).c_str());
  if (!named.none_why.empty())
    std::printf("ddp-check: no node named: %s\n", named.none_why.c_str());
  std::fflush(stdout);
}

// Rank 0's rendezvous: admits hellos for the plan's share of the bound, judges the world.
int rendezvous_master(Run& r) {
  const Identity& id = r.id;
  r.ex = r.session.run(r.start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(r.plan.collect_s)));
  if (r.ex.local_fault) {
    say(who(id) + ": FAILED: " + *r.ex.local_fault);
    return k_exit_fault;
  }
  const WorldReport report = judge(r.ex, r.session.self(), id.scope);
  for (const auto& h : r.ex.hellos)
    r.nodes.insert(h.node_rank ? std::to_string(*h.node_rank) : h.host);
  if (!r.ex.hellos.empty()) std::fputs(render_table(r.ex.hellos, id.scope).c_str(), stdout);
  std::fflush(stdout);
  report_refusals(r.ex);
  if (!report.ok()) {
    for (const auto& f : report.faults) say("FAULT: " + f);
    print_suspects(r.ex.hellos, slurm_node_name(id.self.host),
                   {r.auth.mode == AuthMode::munge, id.run_tag});
    r.session.broadcast({Verdict::Kind::fail, summarize(report)}, r.send_until());
    say(failed_line(report, id));
    return k_exit_fault;
  }
  std::printf("%s\n", ifname_advice(r.ex.hellos).c_str());
  return k_exit_ok;
}

// Rank 0's NCCL phase, or its word that the phase is skipped and why.
int nccl_phase_master(Run& r) {
  const Identity& id = r.id;
  if (auto skip = nccl_skip_reason(r.o.nccl, id.scope, nccl_unavailable(), r.ex.hellos)) {
    std::printf("NCCL phase skipped: %s\n", skip->c_str());
    r.session.broadcast({Verdict::Kind::ok, {}}, r.send_until());
    const double seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
    std::printf("%s\n", ok_line(r.ex.hellos.size(), id.scope, r.nodes.size(),
                                id.master_addr + ":" + std::to_string(id.master_port), seconds)
                            .c_str());
    return k_exit_ok;
  }
  return nccl_master(r);
}

// A worker's reading of rank 0's verdict.
// What came over the connection to rank 0 (whoever listened on MASTER_PORT) is a peer's text:
// it goes through peer_text() so that it never reads as a verdict of this process.
int verdict_of(const Identity& id, const Exchange& e) {
  if (e.local_fault) {
    say(who(id) + ": FAILED: " + peer_text(*e.local_fault, k_max_line));
    return k_exit_fault;
  }
  if (e.verdict->kind == Verdict::Kind::fail) {
    say(who(id) + ": FAILED (verdict of rank 0): " + peer_text(e.verdict->text, k_max_line));
    return k_exit_fault;
  }
  return k_exit_ok;
}

// Other ranks' rendezvous: hello, then rank 0's verdict (final, or a request for NCCL).
int rendezvous_worker(Run& r) {
  r.ex = r.session.run(Clock::time_point::max());
  const int rc = verdict_of(r.id, r.ex);
  r.finished = rc != k_exit_ok || r.ex.verdict->kind == Verdict::Kind::ok;
  return rc;
}

// Other ranks' NCCL phase when rank 0 asked for it: all-reduce, then the final verdict.
int nccl_phase_worker(Run& r) {
  const Identity& id = r.id;
  if (r.finished) return k_exit_ok;
  auto timing = nccl_allreduce(r.ex.verdict->text, static_cast<int>(id.self.rank),
                               static_cast<int>(id.self.world_size),
                               static_cast<int>(id.self.local_rank), r.o.nccl_bytes);
  if (!timing) say(who(id) + ": NCCL phase: " + timing.error().message);
  Exchange final_ex = r.session.await_verdict();
  int rc = verdict_of(id, final_ex);
  if (rc == k_exit_ok && final_ex.verdict->kind != Verdict::Kind::ok) {
    say(who(id) + ": FAILED: unexpected second NCCL request from rank 0");
    return k_exit_fault;
  }
  if (!timing) return k_exit_fault;
  return rc;
}

// One phase of the plan.
int run_phase(Run& r, const PhaseStep& step) {
  // The pairs arm theirs as they set their deadline: rank 0 sizes it on the nodes that came.
  if (step.watchdog_s != 0 && step.phase != Phase::pairs) arm_watchdog(step.watchdog_s);
  const bool master = r.id.is_master();
  switch (step.phase) {
    case Phase::fabric:  // reported, and the check goes on
      r.fabric_rc = check_fabric_here(r.o, slurm_node_name(r.id.self.host), r.id.run_tag);
      return k_exit_ok;
    case Phase::rendezvous:
      return master ? rendezvous_master(r) : rendezvous_worker(r);
    case Phase::nccl:
      return master ? nccl_phase_master(r) : nccl_phase_worker(r);
    case Phase::pairs:
      return master ? pairs_coordinator(r.o, r.id, r.auth, r.ex.hellos)
                    : pairs_agent(r.o, r.id, r.auth, step);
  }
  return k_exit_fault;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = Clock::now();
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto options = parse_options(args, getenv_lookup);
  if (!options) {
    say("error: " + options.error().message);
    return k_exit_usage;
  }
  if (options->help) {
    std::fputs(usage().c_str(), stdout);
    return k_exit_ok;
  }
  if (options->version) {
    std::printf("ddp-check %s\n", DDP_CHECK_VERSION);
    return k_exit_ok;
  }
  if (options->topology || options->topology_live) return show_topology(*options);

  auto identity = read_identity(getenv_lookup, options->scope, sys::hostname());
  if (!identity) {
    say("error: " + identity.error().message);
    return k_exit_usage;
  }
  identity->self.pid = static_cast<std::uint32_t>(getpid());
  identity->self.nccl_ready =
      options->nccl && identity->scope == Scope::ranks && !nccl_unavailable().has_value();
  Role role;
  role.master = identity->is_master();
  role.first_on_node = identity->scope == Scope::nodes || identity->self.local_rank == 0;
  role.nccl_here = options->nccl && !nccl_unavailable().has_value();
  role.nodes = identity->self.nnodes ? *identity->self.nnodes : identity->self.world_size;
  const PhasePlan plan = plan_phases(*options, role);

  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options->timeout_s));
  const AuthConfig auth = auth_config(*options, getenv_lookup);
  Session session(*identity, auth, deadline);
  Run run{session, *identity, *options, auth, plan, start, deadline, {}, {}};
  for (const PhaseStep& step : plan.steps) {
    if (const int rc = run_phase(run, step); rc != k_exit_ok) return rc;
  }
  return run.fabric_rc;
}
