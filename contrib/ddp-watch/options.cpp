#include "ddp-watch/options.hpp"

#include <array>
#include <charconv>

#include "libddp/util/seconds.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

using ddp::text::quote;

constexpr std::array<std::string_view, 12> k_options = {
    "--requeue-stalled", "--timeout",     "--startup", "--grace",
    "--stacks",          "--heartbeat",   "--heal",    "--heal-max",
    "--heal-no-exclude", "--keep-labels", "--help",    "--version"};

// Reads the value of an option given as "--name=value" or "--name value".
Result<std::string> value_of(const std::vector<std::string>& args, std::size_t& i,
                             std::string_view name) {
  const std::string& arg = args[i];
  if (arg.size() > name.size() && arg[name.size()] == '=') return arg.substr(name.size() + 1);
  if (i + 1 >= args.size()) return fail("ddp-watch: " + std::string(name) + " needs a value");
  return args[++i];
}

bool is(const std::string& arg, std::string_view name) {
  return arg == name ||
         (arg.starts_with(name) && arg.size() > name.size() && arg[name.size()] == '=');
}

// The options as a whole: what is required, what conflicts, the defaults that follow others.
Result<Options> completed(Options o) {
  if (o.help || o.version || !o.dump_step.empty() || !o.freeze_step.empty()) return o;
  if (o.timeout_s == 0) return fail("ddp-watch: --timeout is required (for example --timeout 10m)");
  if (o.startup_s == 0) o.startup_s = o.timeout_s;
  if (!o.heal.empty() && o.requeue_max >= 0) {
    return fail(
        "ddp-watch: --heal and --requeue-stalled both requeue: give one (--heal-max N "
        "caps the requeues of --heal)");
  }
  if (o.command.empty()) {
    return fail("ddp-watch: no command to watch (ddp-watch --timeout 10m -- srun python train.py)");
  }
  return o;
}

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (!a.starts_with("-")) break;
    if (a == "-h" || a == "--help")
      o.help = true;
    else if (a == "--version")
      o.version = true;
    else if (a == "--keep-labels")
      o.keep_labels = true;
    else if (a == "--heal-no-exclude")
      o.heal_exclude = false;
    else if (is(a, "--timeout") || is(a, "--grace") || is(a, "--startup")) {
      std::string name = a.substr(0, a.find('='));
      auto text = value_of(args, i, name);
      if (!text) return std::unexpected(text.error());
      auto seconds = parse_seconds(*text, name);
      if (!seconds) return fail("ddp-watch: " + seconds.error().message);
      (name == "--timeout" ? o.timeout_s : name == "--grace" ? o.grace_s : o.startup_s) = *seconds;
    } else if (is(a, "--requeue-stalled") || is(a, "--heal-max")) {
      std::string name = a.substr(0, a.find('='));
      auto text = value_of(args, i, name);
      if (!text) return std::unexpected(text.error());
      auto max = ddp::text::parse_unsigned(*text, 0, 1000, name);
      if (!max) return fail("ddp-watch: " + max.error().message);
      (name == "--heal-max" ? o.heal_max : o.requeue_max) = static_cast<long>(*max);
    } else if (is(a, "--dump-step") || is(a, "--freeze-step")) {
      std::string name = a.substr(0, a.find('='));
      auto text = value_of(args, i, name);
      if (!text) return std::unexpected(text.error());
      (name == "--dump-step" ? o.dump_step : o.freeze_step) = *text;
    } else if (is(a, "--stacks") || is(a, "--heartbeat") || is(a, "--heal")) {
      std::string name = a.substr(0, a.find('='));
      auto text = value_of(args, i, name);
      if (!text) return std::unexpected(text.error());
      if (text->empty() || *text == "--") return fail("ddp-watch: " + name + " needs a file name");
      (name == "--stacks" ? o.stacks : name == "--heal" ? o.heal : o.heartbeat) = *text;
    } else {
      std::string near = ddp::text::did_you_mean(a.substr(0, a.find('=')), k_options);
      return fail("ddp-watch: unknown option " + quote(a) +
                  (near.empty() ? "" : " (did you mean " + near + "?)") + "; see ddp-watch --help");
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return completed(std::move(o));
}

RequeueDecision decide_requeue(const std::string& job_id, const std::string& restart_count,
                               long max) {
  if (job_id.empty()) return {false, "not requeued: not inside a Slurm job"};
  auto restarts = ddp::text::parse_uint<unsigned long>(restart_count.empty() ? "0" : restart_count);
  if (!restarts) {
    return {false,
            "not requeued: SLURM_RESTART_COUNT=" + quote(restart_count) + " is not a number"};
  }
  const std::string cap = " (--requeue-stalled " + std::to_string(max) + ")";
  if (static_cast<long>(*restarts) >= max) {
    return {false, "not requeued: job " + job_id + " has been restarted " +
                       std::to_string(*restarts) + " time(s), the cap" + cap};
  }
  return {true, "requeueing job " + job_id + ": restart " + std::to_string(*restarts + 1) +
                    " of at most " + std::to_string(max)};
}

std::string requeue_target(const std::string& job_id, const std::string& array_job_id,
                           const std::string& array_task_id) {
  if (array_job_id.empty() || array_task_id.empty()) return job_id;
  return array_job_id + "_" + array_task_id;
}

bool is_srun(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  std::string_view w = command.front();
  return w == "srun" || w.ends_with("/srun");
}

bool launches_torchrun(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size(); ++i) {
    std::string_view w = command[i];
    std::string_view base = w.substr(w.rfind('/') == std::string_view::npos ? 0 : w.rfind('/') + 1);
    if (base == "torchrun") return true;
    if (w == "-m" && i + 1 < command.size() &&
        (command[i + 1] == "torch.distributed.run" ||
         command[i + 1] == "torch.distributed.launch")) {
      return true;
    }
  }
  return false;
}

std::string usage() {
  return R"(usage: ddp-watch --timeout DURATION [options] [--] COMMAND [ARGS...]

Runs COMMAND (usually srun ... python train.py) and watches it for progress: a line of output
from any task, or a new modification time of the heartbeat file. When there is none for
DURATION, every task's Python stack is dumped (SIGABRT; Python prints it with
PYTHONFAULTHANDLER=1, which ddp-watch exports), the ranks are told apart (waiting in a
collective or elsewhere), a verdict is printed, the step is ended and ddp-watch exits 124.
When COMMAND fails, a summary names the first failure apart from the ranks it took down.
Otherwise ddp-watch exits with COMMAND's status.

options:
  --timeout DURATION   no progress for this long is a stall: 90, 90s, 5m, 1h, 1h30m (required)
  --startup DURATION   allowance before the first output or heartbeat (default: the timeout);
                       Python imports and data loading may print nothing for minutes
  --grace DURATION     time the tasks get to print their stacks before they are killed (20s)
  --stacks FILE        file for the full stacks (default ddp-watch-JOBID.stacks)
  --heartbeat FILE     a file the program touches; its path is exported as DDP_HEARTBEAT_FILE
  --requeue-stalled MAX  after a stall, requeue the job (scontrol requeue) while
                       SLURM_RESTART_COUNT is below MAX; the exit status stays 124
  --heal FILE          self-healing: when the step fails or stalls, exclude the nodes it names
                       (ddp-check's suspects, the culprit of a stall, SIGBUS, a node failure)
                       and requeue the job; FILE records the runs (see doc/users.md, heal:)
  --heal-max N         requeues with --heal (3); a failure no node is blamed for gets one retry
  --heal-no-exclude    with --heal: requeue, but leave the named nodes in the job's reach
  --keep-labels        keep srun's "N: " task labels in the forwarded output (COMMAND must
                       be srun itself for its output to be labelled and attributed to ranks)
  -h, --help           this text
  --version            the version
)";
}

}  // namespace ddp::watch
