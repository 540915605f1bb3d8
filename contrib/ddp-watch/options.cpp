#include "ddp-watch/options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>

#include "libddp/util/cli.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

// --respawn-check's words: split at spaces, no quoting (ddpgen gives simple words).
std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  for (std::string_view w : ddp::text::split(text, ' ')) {
    if (!w.empty()) words.emplace_back(w);
  }
  return words;
}

using ddp::text::quote;

using Row = cli::Option<Options>;
using Value = cli::Value;

long whole(const Value& v) {
  return static_cast<long>(v.number);
}

// Every option, once: name, value, usage text, and where it goes. --dump-step,
// --freeze-step and --probe-step are ddp-watch's own helper steps, never typed by a person.
constexpr Row k_table[] = {
    {{.name = "--timeout",
      .kind = cli::Kind::duration,
      .arg = "DURATION",
      .help = "no progress for this long is a stall: 90, 90s, 5m, 1h, 1h30m (required)"},
     [](Options& o, const Value& v) { o.timeout_s = whole(v); }},
    {{.name = "--startup",
      .kind = cli::Kind::duration,
      .arg = "DURATION",
      .help = "allowance before the first output or heartbeat (default: the timeout);\n"
              "Python imports and data loading may print nothing for minutes"},
     [](Options& o, const Value& v) { o.startup_s = whole(v); }},
    {{.name = "--grace",
      .kind = cli::Kind::duration,
      .arg = "DURATION",
      .help = "time the tasks get to print their stacks before they are killed (20s)"},
     [](Options& o, const Value& v) { o.grace_s = whole(v); }},
    {{.name = "--stacks",
      .kind = cli::Kind::file,
      .arg = "FILE",
      .help = "file for the full stacks (default ddp-watch-JOBID.stacks)"},
     [](Options& o, const Value& v) { o.stacks = std::string(v.text); }},
    {{.name = "--heartbeat",
      .kind = cli::Kind::file,
      .arg = "FILE",
      .help = "a file the program touches; its path is exported as DDP_HEARTBEAT_FILE"},
     [](Options& o, const Value& v) { o.heartbeat = std::string(v.text); }},
    {{.name = "--requeue-stalled",
      .kind = cli::Kind::number,
      .arg = "MAX",
      .help = "after a stall, requeue the job (scontrol requeue) while\n"
              "SLURM_RESTART_COUNT is below MAX; the exit status stays 124",
      .max = 1000},
     [](Options& o, const Value& v) { o.requeue_max = whole(v); }},
    {{.name = "--heal",
      .kind = cli::Kind::file,
      .arg = "FILE",
      .help = "self-healing: when the step fails or stalls, exclude the nodes it names\n"
              "(ddp-check's suspects, the culprit of a stall, SIGBUS, a node failure)\n"
              "and requeue the job; FILE records the runs (see doc/users.md, heal:)"},
     [](Options& o, const Value& v) { o.heal = std::string(v.text); }},
    {{.name = "--heal-max",
      .kind = cli::Kind::number,
      .arg = "N",
      .help = "requeues with --heal (3); a failure no node is blamed for gets one retry",
      .max = 1000},
     [](Options& o, const Value& v) { o.heal_max = whole(v); }},
    {{.name = "--heal-no-exclude",
      .help = "with --heal: requeue, but leave the named nodes in the job's reach"},
     [](Options& o, const Value&) { o.heal_exclude = false; }},
    {{.name = "--heal-defer",
      .help = "with --heal: keep the requeue in FILE, for --heal-requeue FILE later\n"
              "(the job script's post: lines run first)"},
     [](Options& o, const Value&) { o.heal_defer = true; }},
    {{.name = "--heal-requeue",
      .kind = cli::Kind::file,
      .arg = "FILE",
      .help = "carry out the requeue that --heal-defer kept in FILE, if any"},
     [](Options& o, const Value& v) { o.heal_requeue = std::string(v.text); }},
    {{.name = "--spares",
      .kind = cli::Kind::number,
      .arg = "K",
      .help = "with --heal: the step runs on all but K nodes of the job (srun --nodelist);\n"
              "a node it names is replaced by a spare in a new step, no requeue",
      .max = 1000},
     [](Options& o, const Value& v) { o.spares = whole(v); }},
    {{.name = "--respawn-max",
      .kind = cli::Kind::number,
      .arg = "M",
      .help = "with --spares: new steps at most (default K); then --heal requeues",
      .max = 1000},
     [](Options& o, const Value& v) { o.respawn_max = whole(v); }},
    {{.name = "--respawn-check",
      .kind = cli::Kind::file,
      .arg = "WORDS",
      .help = "with --spares: before a new step, run this check (words split at spaces,\n"
              "e.g. \"ddp-check --timeout=60\") on its nodes through srun --ddp\n"
              "or --check-wrapper"},
     [](Options& o, const Value& v) { o.respawn_check = split_words(v.text); }},
    {{.name = "--first-check",
      .help = "with --respawn-check: run the check on every node of the job before the\n"
              "first step too; the first step avoids up to K nodes it names, no requeue"},
     [](Options& o, const Value&) { o.first_check = true; }},
    {{.name = "--check-tasks-per-node",
      .kind = cli::Kind::number,
      .arg = "N",
      .help = "with --respawn-check: the checks' tasks per node (default 1); the\n"
              "preflight's, for a check of every rank's place as the step has them",
      .min = 1,
      .max = 1024},
     [](Options& o, const Value& v) { o.check_tasks_per_node = whole(v); }},
    {{.name = "--check-wrapper",
      .kind = cli::Kind::number,
      .arg = "N",
      .help = "with --respawn-check, in place of srun --ddp: the checks run under the\n"
              "first N words of the step's program, a per-task setup that exports the\n"
              "ranks and the address (ddpgen's without the plugin)",
      .min = 1,
      .max = 64},
     [](Options& o, const Value& v) { o.check_wrapper = whole(v); }},
    {{.name = "--launchers",
      .help = "the command's tasks are per-node launchers (torchrun or one like it,\n"
              "whatever its name): ranks are told by the workers' own RANK, never by\n"
              "task number"},
     [](Options& o, const Value&) { o.launchers = true; }},
    {{.name = "--keep-labels",
      .help = "keep srun's \"N: \" task labels in the forwarded output (COMMAND must\n"
              "be srun itself for its output to be labelled and attributed to ranks)"},
     [](Options& o, const Value&) { o.keep_labels = true; }},
    {{.name = "--help", .help = "this text", .alias = "-h", .usage_name = "-h, --help"},
     [](Options& o, const Value&) { o.help = true; }},
    {{.name = "--version", .help = "the version"},
     [](Options& o, const Value&) { o.version = true; }},
    {{.name = "--dump-step", .kind = cli::Kind::text, .shown = cli::Shown::nowhere},
     [](Options& o, const Value& v) { o.dump_step = std::string(v.text); }},
    {{.name = "--freeze-step", .kind = cli::Kind::text, .shown = cli::Shown::nowhere},
     [](Options& o, const Value& v) { o.freeze_step = std::string(v.text); }},
    {{.name = "--probe-step", .kind = cli::Kind::text, .shown = cli::Shown::nowhere},
     [](Options& o, const Value& v) { o.probe_step = std::string(v.text); }},
    {{.name = "--dump-at",
      .kind = cli::Kind::number,
      .max = 4'000'000'000'000,
      .shown = cli::Shown::nowhere},
     [](Options& o, const Value& v) { o.dump_at_ms = static_cast<long long>(v.number); }},
};

// `unknown option "--timeot" (did you mean --timeout?); see ddp-watch --help`.
std::string unknown_option(std::string_view arg, std::string_view near) {
  return "unknown option " + quote(arg) +
         (near.empty() ? "" : " (did you mean " + std::string(near) + "?)") +
         "; see ddp-watch --help";
}

std::string missing_value(std::string_view name) {
  return std::string(name) + " needs a value";
}

constexpr cli::Style k_style{.prefix = "ddp-watch: ",
                             .unknown = unknown_option,
                             .missing = missing_value,
                             .stop_at_operand = true,
                             .usage_width = 21};

// Why --respawn-check cannot set up its ranks as given, if it cannot: under the plugin
// (srun --ddp) or under the step's own per-task setup (--check-wrapper), one of them.
std::optional<std::string> check_refusal(const Options& o) {
  const bool plugin = !ddp_option(o.command).empty();
  if (o.check_wrapper == 0) {
    if (plugin) return std::nullopt;
    return "ddp-watch: --respawn-check needs srun --ddp in the command (the check runs under "
           "the plugin, as the step does) or --check-wrapper N (under the first N words of "
           "the step's program, its per-task setup)";
  }
  if (plugin) {
    return "ddp-watch: --check-wrapper and srun --ddp both set up the check's ranks: give one";
  }
  const std::size_t words = o.command.size() - srun_program_at(o.command);
  if (words <= static_cast<std::size_t>(o.check_wrapper)) {
    return "ddp-watch: --check-wrapper " + std::to_string(o.check_wrapper) +
           ": the step's program after srun's options has " + std::to_string(words) +
           " word(s), none left for the program the wrapper runs";
  }
  return std::nullopt;
}

// Why --spares, --respawn-max or --respawn-check cannot work as given, if they cannot.
std::optional<std::string> respawn_refusal(const Options& o) {
  if (o.spares == 0 && o.respawn_max >= 0) {
    return "ddp-watch: --respawn-max needs --spares (the nodes a new step can take)";
  }
  if (o.spares == 0 && !o.respawn_check.empty()) {
    return "ddp-watch: --respawn-check needs --spares (it checks the nodes of a new step)";
  }
  if (o.check_tasks_per_node != 0 && o.respawn_check.empty()) {
    return "ddp-watch: --check-tasks-per-node needs --respawn-check (the check it shapes)";
  }
  if (o.first_check && o.respawn_check.empty()) {
    return "ddp-watch: --first-check needs --respawn-check (the check it runs on every node)";
  }
  if (o.check_wrapper != 0 && o.respawn_check.empty()) {
    return "ddp-watch: --check-wrapper needs --respawn-check (the check it wraps)";
  }
  if (o.spares == 0) return std::nullopt;
  if (o.heal.empty()) {
    return "ddp-watch: --spares needs --heal (the heal path names the nodes to replace)";
  }
  if (!is_srun(o.command)) {
    return "ddp-watch: --spares needs the command to be srun, which takes the node list of "
           "each step (not " +
           quote(o.command.front()) + ")";
  }
  if (!o.respawn_check.empty()) return check_refusal(o);
  return std::nullopt;
}

// The options as a whole: what is required, what conflicts, the defaults that follow others.
Result<Options> completed(Options o) {
  if (o.help || o.version || !o.dump_step.empty() || !o.freeze_step.empty() ||
      !o.probe_step.empty() || !o.heal_requeue.empty()) {
    return o;
  }
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
  if (auto refused = respawn_refusal(o)) return fail(*refused);
  return o;
}

}  // namespace

std::span<const cli::Option<Options>> option_table() {
  return k_table;
}

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  const std::vector<std::string_view> words(args.begin(), args.end());
  const cli::EnvLookup no_env = [](std::string_view) { return std::optional<std::string>{}; };
  auto first = cli::parse(option_table(), k_style, words, no_env, o);
  if (!first) return std::unexpected(std::move(first.error()));
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(*first), args.end());
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

namespace {

// srun's options whose value may be the next word (`-n 4`, `--ntasks 4`); the program is the
// first word that is neither an option nor such a value.
constexpr std::array<std::string_view, 46> k_srun_valued = {"-A",
                                                            "-B",
                                                            "-c",
                                                            "-C",
                                                            "-D",
                                                            "-d",
                                                            "-e",
                                                            "-G",
                                                            "-i",
                                                            "-J",
                                                            "-L",
                                                            "-m",
                                                            "-n",
                                                            "-N",
                                                            "-o",
                                                            "-p",
                                                            "-q",
                                                            "-r",
                                                            "-S",
                                                            "-t",
                                                            "-T",
                                                            "-w",
                                                            "-W",
                                                            "-x",
                                                            "--account",
                                                            "--chdir",
                                                            "--constraint",
                                                            "--cpus-per-task",
                                                            "--dependency",
                                                            "--error",
                                                            "--exclude",
                                                            "--export",
                                                            "--gpus",
                                                            "--gres",
                                                            "--input",
                                                            "--job-name",
                                                            "--mem",
                                                            "--nodelist",
                                                            "--nodes",
                                                            "--ntasks",
                                                            "--ntasks-per-node",
                                                            "--output",
                                                            "--partition",
                                                            "--qos",
                                                            "--time",
                                                            "--jobid"};

std::string_view base_name(std::string_view w) {
  const std::size_t slash = w.rfind('/');
  return slash == std::string_view::npos ? w : w.substr(slash + 1);
}

bool is_shell(std::string_view base) {
  return base == "bash" || base == "sh" || base == "dash" || base == "zsh";
}

// Whether a NAME=value word (env's and a shell's assignments).
bool is_assignment(std::string_view w) {
  const std::size_t eq = w.find('=');
  return eq != std::string_view::npos && eq > 0 && w.substr(0, eq).find('-') == w.npos;
}

// Whether words[i...] start a per-node launcher: torchrun (torchrun_jsc, ft_launcher, tune
// run), accelerate launch, python -m torch.distributed.run (or .launch, torchrun_jsc,
// accelerate.commands.launch), also behind env, exec or `bash -c '...'`.
bool launcher_at(const std::vector<std::string>& words, std::size_t i, int depth = 0) {
  while (i < words.size() && (words[i] == "exec" || is_assignment(words[i]))) ++i;
  if (i >= words.size() || depth > 3) return false;
  const std::string_view base = base_name(words[i]);
  const auto next = [&](std::size_t k) { return i + k < words.size() ? words[i + k] : ""; };
  // torchrun and the launchers built on its arguments: JSC's torchrun_jsc, NVIDIA's
  // ft_launcher (fault tolerance), torchtune's `tune run`.
  if (base == "torchrun" || base == "torchrun_jsc" || base == "ft_launcher") return true;
  if (base == "tune") return next(1) == "run";
  if (base == "accelerate") return next(1) == "launch";
  if (base == "env") {
    std::size_t j = i + 1;
    while (j < words.size() && (words[j].starts_with("-") || is_assignment(words[j]))) ++j;
    return launcher_at(words, j, depth + 1);
  }
  if (is_shell(base) && next(1) == "-c") {
    const std::string text = next(2);
    std::vector<std::string> script;
    for (std::string_view w : ddp::text::split(text, ' ')) {
      if (!w.empty()) script.emplace_back(w);
    }
    return launcher_at(script, 0, depth + 1);
  }
  if (!base.starts_with("python")) return false;
  for (std::size_t j = i + 1; j + 1 < words.size() && words[j].starts_with("-"); ++j) {
    if (words[j] != "-m") continue;
    const std::string& module = words[j + 1];
    return module == "torch.distributed.run" || module == "torch.distributed.launch" ||
           module == "torchrun_jsc" || module == "accelerate.commands.launch";
  }
  return false;
}

}  // namespace

OutputFiles srun_output_files(const std::vector<std::string>& command) {
  OutputFiles files;
  if (!is_srun(command)) return files;
  bool moved = false;  // -D/--chdir: a relative name is not relative to here
  std::vector<std::string> names;
  for (std::size_t i = 1; i < command.size() && command[i].starts_with("-"); ++i) {
    const std::string& w = command[i];
    if (w == "--") break;
    const auto value = [&]() { return i + 1 < command.size() ? command[++i] : std::string(); };
    if (w == "-o" || w == "-e" || w == "--output" || w == "--error") {
      names.push_back(value());
    } else if (w.starts_with("--output=") || w.starts_with("--error=")) {
      names.push_back(w.substr(w.find('=') + 1));
    } else if ((w.starts_with("-o") || w.starts_with("-e")) && w.size() > 2) {
      names.push_back(w.substr(2));
    } else if (w == "-D" || w == "--chdir" || w.starts_with("--chdir=") || w.starts_with("-D")) {
      moved = true;
      if (w == "-D" || w == "--chdir") value();
    } else if (std::find(k_srun_valued.begin(), k_srun_valued.end(), w) != k_srun_valued.end()) {
      value();
    }
  }
  for (std::string& n : names) {
    if (n.empty() || n == "none") continue;
    const bool resolvable = n.find('%') == std::string::npos && (!moved || n.starts_with("/"));
    (resolvable ? files.plain : files.patterned).push_back(std::move(n));
  }
  return files;
}

std::string ddp_option(const std::vector<std::string>& command) {
  if (!is_srun(command)) return {};
  for (std::size_t i = 1; i < command.size() && command[i].starts_with("-"); ++i) {
    const std::string& w = command[i];
    if (w == "--") break;
    if (w == "--ddp" || w.starts_with("--ddp=")) return w;
    if (std::find(k_srun_valued.begin(), k_srun_valued.end(), w) != k_srun_valued.end()) ++i;
  }
  return {};
}

std::size_t srun_program_at(const std::vector<std::string>& command) {
  if (!is_srun(command)) return 0;
  std::size_t i = 1;
  while (i < command.size() && command[i].starts_with("-")) {
    const std::string& w = command[i];
    if (w == "--") return i + 1;
    const bool valued =
        std::find(k_srun_valued.begin(), k_srun_valued.end(), w) != k_srun_valued.end();
    i += valued ? 2 : 1;
  }
  return std::min(i, command.size());
}

bool launches_per_node(const std::vector<std::string>& command) {
  return launcher_at(command, srun_program_at(command));
}

std::vector<std::string> check_setup(const Options& options) {
  if (options.check_wrapper <= 0) return {ddp_option(options.command)};
  const auto at = static_cast<std::ptrdiff_t>(srun_program_at(options.command));
  const auto end =
      std::min(at + options.check_wrapper, static_cast<std::ptrdiff_t>(options.command.size()));
  return {options.command.begin() + at, options.command.begin() + end};
}

std::string usage() {
  return R"(usage: ddp-watch --timeout DURATION [options] [--] COMMAND [ARGS...]

Runs COMMAND (usually srun ... python train.py) and watches it for progress: any output
from any task, or a new modification time of the heartbeat file. When there is none for
DURATION, every task's Python stack is dumped (SIGABRT; Python prints it with
PYTHONFAULTHANDLER=1, which ddp-watch exports), the ranks are told apart (waiting in a
collective or elsewhere), a verdict is printed, the step is ended and ddp-watch exits 124.
When COMMAND fails, a summary names the first failure apart from the ranks it took down.
Otherwise ddp-watch exits with COMMAND's status.

options:
)" + cli::usage(cli::specs(option_table()), k_style);
}

}  // namespace ddp::watch
