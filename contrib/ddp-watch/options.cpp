#include "options.hpp"

#include <charconv>

namespace ddp::watch {
namespace {

std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

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

}  // namespace

Result<long> parse_duration(std::string_view text, std::string_view what) {
  const std::string original(text);
  auto bad = [&] {
    return fail("ddp-watch: " + std::string(what) + "=" + quoted(original) +
                ": expected a duration such as 90, 90s, 5m, 1h or 1h30m");
  };
  if (text.empty()) return bad();
  long total = 0;
  while (!text.empty()) {
    long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end == text.data() || value < 0 || value > 10'000'000) return bad();
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    long unit = 1;
    if (!text.empty()) {
      char u = text.front();
      unit = u == 's' ? 1 : u == 'm' ? 60 : u == 'h' ? 3600 : u == 'd' ? 86400 : 0;
      if (unit == 0) return bad();
      text.remove_prefix(1);
    } else if (total != 0) {
      return bad();  // "1h30": a unit is needed after the first number
    }
    total += value * unit;
  }
  if (total <= 0) return bad();
  return total;
}

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
    else if (is(a, "--timeout") || is(a, "--grace") || is(a, "--startup")) {
      std::string name = a.substr(0, a.find('='));
      auto text = value_of(args, i, name);
      if (!text) return std::unexpected(text.error());
      auto seconds = parse_duration(*text, name);
      if (!seconds) return std::unexpected(seconds.error());
      (name == "--timeout" ? o.timeout_s : name == "--grace" ? o.grace_s : o.startup_s) = *seconds;
    } else if (is(a, "--dump-step")) {
      auto text = value_of(args, i, "--dump-step");
      if (!text) return std::unexpected(text.error());
      o.dump_step = *text;
    } else if (is(a, "--stacks") || is(a, "--heartbeat")) {
      std::string name = a.substr(0, a.find('='));
      auto text = value_of(args, i, name);
      if (!text) return std::unexpected(text.error());
      if (text->empty()) return fail("ddp-watch: " + name + " needs a file name");
      (name == "--stacks" ? o.stacks : o.heartbeat) = *text;
    } else {
      return fail("ddp-watch: unknown option " + quoted(a) + " (see ddp-watch --help)");
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (o.help || o.version || !o.dump_step.empty()) return o;
  if (o.timeout_s == 0) return fail("ddp-watch: --timeout is required (for example --timeout 10m)");
  if (o.startup_s == 0) o.startup_s = o.timeout_s;
  if (o.command.empty()) {
    return fail("ddp-watch: no command to watch (ddp-watch --timeout 10m -- srun python train.py)");
  }
  return o;
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
  --keep-labels        keep srun's "N: " task labels in the forwarded output (COMMAND must
                       be srun itself for its output to be labelled and attributed to ranks)
  -h, --help           this text
  --version            the version
)";
}

}  // namespace ddp::watch
