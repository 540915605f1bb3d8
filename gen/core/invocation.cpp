#include "gen/core/invocation.hpp"

#include <charconv>

#include "libddp/util/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

// The preflight's bound in ddp-watch --heal: ddp-check's own, plus time to start the step.
constexpr long k_preflight_watch_margin = 30;

// "--name=VALUE" with a literal value, quoted when it needs it.
std::string literal(std::string_view name, std::string_view value) {
  return std::string(name) + "=" + ddp::shell::quote(value);
}

// "--name="CODE"": ddpgen's own shell text, expanding when the script runs.
std::string expanding(std::string_view name, std::string_view code) {
  return std::string(name) + "=\"" + std::string(code) + "\"";
}

std::string seconds_word(std::string_view name, const RunSeconds& s) {
  if (s.env.empty()) return literal(name, std::to_string(s.value + s.plus));
  const std::string fallback = "${" + s.env + ":-" + std::to_string(s.value) + "}";
  if (s.plus == 0) return expanding(name, fallback);
  return expanding(name, "$((" + fallback + " + " + std::to_string(s.plus) + "))");
}

// ddp-watch's healing options: a number and a file named by $SLURM_JOB_ID (the same in every
// run of the job, and this task's own in an array) in the submit directory, which the next
// run's batch host sees too.
// With post: lines the requeue waits for them (--heal-defer; the script then runs
// ddp-watch --heal-requeue on the same record).
void set_heal(WatchInvocation& w, const Heal& h, bool has_post) {
  w.heal = "$SLURM_SUBMIT_DIR/.ddp-heal.${SLURM_JOB_ID}";
  w.heal_max = h.max_requeues;
  w.heal_no_exclude = !h.exclude;
  w.heal_defer = has_post;
}

// ddp-check's command line in one double-quoted word, split at spaces by ddp-watch
// --respawn-check: every value is a number, the timeout's variable, or a fabric of the
// profile's choices, so no word holds a space or a quote.
std::string check_text(const CheckInvocation& c) {
  std::string text = "ddp-check --timeout=";
  text += c.timeout.env.empty() ? std::to_string(c.timeout.value)
                                : "${" + c.timeout.env + ":-" + std::to_string(c.timeout.value) + "}";
  if (!c.fabric.empty()) text += " --fabric=" + c.fabric;
  if (c.pairs) text += " --pairs";
  if (c.pairs_threshold) text += " --pairs-threshold=" + shortest(*c.pairs_threshold);
  return text;
}

// Without the plugin, the words of the per-task setup at the start of the training step's
// program, when they are exactly the preflight's: bash -c "$ddpgen_task_setup"'exec "$@"'
// ddpgen-task MODE N FIRST SIZE (the same arguments, and the step's tasks per node). The
// training's ddp-watch then runs the check under them (--check-wrapper), as the preflight step
// would. Not so for lightning and accelerate, whose code after the setup differs (it would run
// ddp-check as the training program); nor behind a per-rank log's tee or a container's command,
// which come first in the program (the preflight runs on the host, its output unsplit).
std::optional<long> setup_wrapper_words(const Plan& plan) {
  if (plan.plugin || !plan.wrapped || plan.batch_launch) return std::nullopt;
  if (plan.wrapper_exec != k_plain_exec || !plan.wrapper_args.empty()) return std::nullopt;
  if (!plan.rank_log_words.empty() || !plan.container_words.empty()) return std::nullopt;
  long words = 4;  // bash -c CODE ddpgen-task
  for (std::string_view w : ddp::text::split(task_setup_args(plan), ' '))
    if (!w.empty()) ++words;
  return words;
}

}  // namespace

std::optional<CheckInvocation> preflight_check(const Plan& plan) {
  if (!plan.preflight) return std::nullopt;
  const Preflight& p = *plan.preflight;
  return CheckInvocation{.timeout = {.value = p.timeout, .env = "DDP_CHECK_TIMEOUT", .plus = 0},
                         .fabric = plan.fabric,
                         .pairs = p.pairs,
                         .pairs_threshold = p.pairs ? p.pairs_threshold : std::nullopt};
}

bool preflight_step(const Plan& plan) {
  if (!plan.preflight) return false;
  const auto training = training_watch(plan);
  return !(training && training->first_check);
}

std::optional<WatchInvocation> preflight_watch(const Plan& plan) {
  if (!preflight_step(plan) || !plan.heal) return std::nullopt;
  WatchInvocation w;
  w.timeout = {.value = plan.preflight->timeout,
               .env = "DDP_CHECK_TIMEOUT",
               .plus = k_preflight_watch_margin};
  set_heal(w, *plan.heal, !plan.post.empty());
  return w;
}

// ddp-watch's options around training: numbers, and file names made of $SLURM_JOB_ID only. The
// stacks and the heartbeat live in the job's working directory, which the batch host and every
// node see.
std::optional<WatchInvocation> training_watch(const Plan& plan) {
  if (!plan.watchdog) return std::nullopt;
  const Watchdog& d = *plan.watchdog;
  WatchInvocation w;
  w.timeout.value = d.timeout;
  if (d.startup > 0) w.startup = d.startup;
  w.grace = d.grace;
  w.stacks = "ddp-watch-${SLURM_JOB_ID}.stacks";
  if (d.heartbeat) w.heartbeat = "ddp-heartbeat-${SLURM_JOB_ID}";
  if (plan.heal) set_heal(w, *plan.heal, !plan.post.empty());
  w.launchers = plan.named_launcher;
  if (plan.heal && plan.spares > 0) {
    w.spares = plan.spares;
    w.respawn_max = plan.heal->max_respawns;
    // The preflight again on a respawn's nodes: it runs under srun --ddp, as the plugin's
    // preflight does, or without the plugin under the step's own per-task setup, as the
    // script's preflight does. It is also the preflight itself (--first-check): ddp-watch checks
    // every node of the job, the spares included, and the first step avoids the nodes it names
    // instead of a requeue.
    const std::optional<long> wrapper = setup_wrapper_words(plan);
    if (plan.preflight && (plan.plugin || wrapper)) {
      w.respawn_check = preflight_check(plan);
      w.first_check = true;
      if (plan.preflight_tasks_per_node > 1) w.check_tasks_per_node = plan.preflight_tasks_per_node;
      w.check_wrapper = wrapper;
    }
  }
  return w;
}

std::vector<std::string> words(const CheckInvocation& c) {
  std::vector<std::string> out{seconds_word("--timeout", c.timeout)};
  if (!c.fabric.empty()) out.push_back(literal("--fabric", c.fabric));
  if (c.pairs) out.emplace_back("--pairs");
  if (c.pairs_threshold) out.push_back(literal("--pairs-threshold", shortest(*c.pairs_threshold)));
  return out;
}

std::vector<std::string> words(const WatchInvocation& w) {
  std::vector<std::string> out{seconds_word("--timeout", w.timeout)};
  if (w.startup) out.push_back(literal("--startup", std::to_string(*w.startup)));
  if (w.grace) out.push_back(literal("--grace", std::to_string(*w.grace)));
  if (w.stacks) out.push_back(expanding("--stacks", *w.stacks));
  if (w.heartbeat) out.push_back(expanding("--heartbeat", *w.heartbeat));
  if (w.heal) out.push_back(expanding("--heal", *w.heal));
  if (w.heal_max) out.push_back(literal("--heal-max", std::to_string(*w.heal_max)));
  if (w.heal_no_exclude) out.emplace_back("--heal-no-exclude");
  if (w.heal_defer) out.emplace_back("--heal-defer");
  if (w.spares) out.push_back(literal("--spares", std::to_string(*w.spares)));
  if (w.respawn_max) out.push_back(literal("--respawn-max", std::to_string(*w.respawn_max)));
  if (w.respawn_check) out.push_back(expanding("--respawn-check", check_text(*w.respawn_check)));
  if (w.first_check) out.emplace_back("--first-check");
  if (w.check_tasks_per_node)
    out.push_back(literal("--check-tasks-per-node", std::to_string(*w.check_tasks_per_node)));
  if (w.check_wrapper) out.push_back(literal("--check-wrapper", std::to_string(*w.check_wrapper)));
  if (w.launchers) out.emplace_back("--launchers");
  return out;
}

std::string shortest(double value) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  (void)ec;  // 32 chars always fit the shortest form of a double
  return std::string(buf, end);
}

}  // namespace ddpgen
