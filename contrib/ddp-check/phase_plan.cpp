// The phase order of a ddp-check process and the budget of each phase, from the named bounds.
#include "ddp-check/phase_plan.hpp"

#include <cmath>

#include "ddp-check/pairs/pairs.hpp"

namespace ddp::check {
namespace {

unsigned watchdog_after(double budget_s, double grace_s) {
  return static_cast<unsigned>(std::ceil(budget_s) + grace_s);
}

}  // namespace

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::fabric:
      return "fabric";
    case Phase::rendezvous:
      return "rendezvous";
    case Phase::nccl:
      return "nccl";
    case Phase::pairs:
      return "pairs";
  }
  return "?";
}

double pairs_budget_s(std::uint32_t nodes, double seconds, std::uint32_t max_rounds, bool nccl) {
  const auto rounds = static_cast<double>(pair_rounds(nodes, max_rounds).size());
  return k_pairs_register_s + rounds * (2 * seconds + k_pairs_round_margin_s) +
         (nccl ? rounds * k_nccl_round_s : 0);
}

PhaseStep pairs_step(const Options& o, std::uint32_t nodes, bool nccl_here) {
  const double budget = pairs_budget_s(nodes, o.pairs_seconds, o.pairs_rounds, o.nccl && nccl_here);
  return {Phase::pairs, budget, watchdog_after(budget, k_pairs_watchdog_grace_s)};
}

PhasePlan plan_phases(const Options& o, const Role& role) {
  PhasePlan plan;
  // Every node says whether its fabric is there (one process per node), and the check goes on.
  if (role.first_on_node && (o.fabric || o.net_plugin)) plan.steps.push_back({Phase::fabric, 0, 0});
  plan.steps.push_back(
      {Phase::rendezvous, o.timeout_s, watchdog_after(o.timeout_s, k_watchdog_grace_s)});
  plan.steps.push_back({Phase::nccl, o.timeout_s, 0});
  // Rank 0 coordinates (its node's agent runs beside it); elsewhere one agent per node.
  if (o.pairs && (role.master || role.first_on_node)) {
    plan.steps.push_back(pairs_step(o, role.nodes, role.nccl_here));
  }
  plan.collect_s = role.master ? o.timeout_s * k_collect_share : o.timeout_s;
  return plan;
}

}  // namespace ddp::check
