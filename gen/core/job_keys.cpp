// The job file's keys: one row each (doc/man/ddpgen-job.5 has a paragraph for each; the
// lint.settings_man test holds the two together). After a section's rows, its check applies the
// rules between its keys.
#include "gen/core/job_keys.hpp"

#include <algorithm>
#include <span>

#include "gen/core/job.hpp"
#include "gen/core/options.hpp"
#include "gen/core/references.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

using settings::Kind;
using settings::Table;
using settings::Type;

void check_container(const StrictReader& r, const YAML::Node& node, const Container& c) {
  if (c.image.empty()) r.reject(node, "container", "\"container.image\" is required");
}

void check_checkpoint(const StrictReader& r, const YAML::Node& node, const Checkpoint& c) {
  if (c.requeue_on_failure && !c.requeue)
    r.reject(
        node, "checkpoint",
        "\"checkpoint.requeue_on_failure\" needs \"checkpoint.requeue: true\" (the job must be "
        "requeueable)");
}

void check_watchdog(const StrictReader& r, const YAML::Node& node, const Watchdog& w) {
  if (w.timeout == 0) r.reject(node, "watchdog", "\"watchdog.timeout\" is required (e.g. 10m)");
}

void check_logs(const StrictReader& r, const YAML::Node& node, const Logs& l) {
  if (l.dir.empty()) r.reject(node, "logs", "\"logs.dir\" is required");
}

// The most array tasks one sweep renders: Slurm's MaxArraySize is 1001 unless raised.
constexpr long k_max_sweep = 100000;

// sweep.parameters: NAME: [values...], each NAME a variable name once upper-cased (the task sees
// SWEEP_<NAME>), each list non-empty.
std::vector<std::pair<std::string, std::vector<std::string>>> read_parameters(
    const StrictReader& r, const YAML::Node& node, const std::string& path) {
  if (!node.IsMap() || node.size() == 0)
    r.reject(node, path,
             ddp::text::quote(path) +
                 " must be a mapping of NAME: [values...], such as {lr: "
                 "[0.1, 0.01]}");
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::vector<std::string> seen;
  for (const auto& item : node) {
    const std::string name = item.first.IsScalar() ? item.first.Scalar() : "";
    if (!ddp::is_env_name(name))
      r.reject(item.first, path,
               ddp::text::quote(path) + ": " + ddp::text::quote(name) +
                   " is not a parameter name (expected [A-Za-z_][A-Za-z0-9_]*)");
    const std::string variable = refs::sweep_variable(name);
    if (std::ranges::find(seen, variable) != seen.end())
      r.reject(item.first, path,
               ddp::text::quote(path) + ": " + ddp::text::quote(name) +
                   " is a second parameter exported as " + variable);
    seen.push_back(variable);
    const std::string at = path + "." + name;
    if (!item.second.IsSequence() || item.second.size() == 0)
      r.reject(item.second, at, ddp::text::quote(at) + " must be a non-empty list of values");
    out.emplace_back(name, r.strings(item.second, at));
  }
  return out;
}

void check_sweep(const StrictReader& r, const YAML::Node& node, const Sweep& s) {
  if (s.parameters.empty()) r.reject(node, "sweep", "\"sweep.parameters\" is required");
  long n = 1;
  for (const auto& [name, list] : s.parameters) {
    n *= static_cast<long>(list.size());
    if (n > k_max_sweep)
      r.reject(node, "sweep",
               "\"sweep\" has more than " + std::to_string(k_max_sweep) +
                   " combinations; sweep fewer values at once");
  }
}

const Table<Logs>& logs_table() {
  static const Table<Logs> table = {
      settings::required(settings::string("dir", &Logs::dir)),
  };
  return table;
}

const Table<Sweep>& sweep_table() {
  static const Table<Sweep> table = {
      settings::required(
          settings::member("parameters", {Kind::lists}, &Sweep::parameters, read_parameters)),
      settings::integer("parallel", &Sweep::parallel, 1, k_max_sweep),
  };
  return table;
}

const Table<Container>& container_table() {
  static const Table<Container> table = {
      settings::required(settings::string("image", &Container::image)),
      settings::choice("runtime", &Container::runtime, container_runtime_names()),
      settings::strings("mounts", &Container::mounts),
      settings::string("workdir", &Container::workdir),
  };
  return table;
}

const Table<Checkpoint>& checkpoint_table() {
  static const Table<Checkpoint> table = {
      settings::string("dir", &Checkpoint::dir),
      settings::boolean("requeue", &Checkpoint::requeue),
      settings::choice("signal", &Checkpoint::signal,
                       {"USR1", "USR2", "TERM", "INT", "HUP", "URG"}),
      settings::integer("signal_time", &Checkpoint::signal_time, 1, 65535),
      settings::integer("max_restarts", &Checkpoint::max_restarts, 0, 10000),
      settings::boolean("requeue_on_failure", &Checkpoint::requeue_on_failure),
  };
  return table;
}

const Table<Mail>& mail_table() {
  static const Table<Mail> table = {
      settings::string("user", &Mail::user),
      settings::string("type", &Mail::type),
  };
  return table;
}

// activate: exactly one of its keys, which says the kind.
settings::Row<Activate> activate_row(const std::string& name, Activate::Kind kind) {
  return settings::custom<Activate>(
      name, {Kind::string},
      [kind](Activate& a, const StrictReader& r, const YAML::Node& v, const std::string& path) {
        a.kind = kind;
        a.value = r.string(v, path);
        if (a.value.empty()) r.reject(v, path, "\"" + path + "\" is empty");
      });
}

const Table<Activate>& activate_table() {
  static const Table<Activate> table = {
      activate_row("conda", Activate::Kind::conda),
      activate_row("venv", Activate::Kind::venv),
      activate_row("source", Activate::Kind::source),
  };
  return table;
}

// The options torchrun and accelerate launch get from ddpgen: the job's layout, address and
// port. Both read options with argparse, which also takes a unique abbreviation.
constexpr std::string_view k_torchrun_owned[] = {
    "--nproc_per_node", "--nproc-per-node", "--nnodes",        "--node_rank",
    "--node-rank",      "--master_addr",    "--master-addr",   "--master_port",
    "--master-port",    "--rdzv_backend",   "--rdzv-backend",  "--rdzv_endpoint",
    "--rdzv-endpoint",  "--rdzv_id",        "--rdzv-id",       "--standalone"};
constexpr std::string_view k_accelerate_owned[] = {
    "--num_machines",      "--num-machines",      "--machine_rank", "--machine-rank",
    "--main_process_ip",   "--main-process-ip",   "--main_process_port",
    "--main-process-port", "--num_processes",     "--num-processes", "--config_file",
    "--config-file",       "--multi_gpu",         "--multi-gpu"};

// A launcher's own options: words handed to it as written (an option and its value may be two
// words, as argparse reads them), but for one ddpgen passes itself, in either spelling or as an
// abbreviation argparse reads as it.
settings::Row<Job> launcher_options(const std::string& name,
                                    std::vector<std::string> Job::*field,
                                    std::span<const std::string_view> owned,
                                    std::string advice) {
  return settings::custom<Job>(
      name, {Kind::strings},
      [=](Job& job, const StrictReader& r, const YAML::Node& v, const std::string& path) {
        auto list = r.strings(v, path);
        for (std::size_t i = 0; i < list.size(); ++i) {
          const std::string option = list[i].substr(0, list[i].find('='));
          if (!option.starts_with("--") || option.size() < 4) continue;
          for (std::string_view o : owned) {
            if (!o.starts_with(option)) continue;
            const std::string why =
                o == option ? ": ddpgen passes " + option
                            : ": argparse reads this abbreviation as " + std::string(o) +
                                  ", which ddpgen passes";
            r.reject(v[i], path, ddp::text::quote(path) + ": " + ddp::text::quote(list[i]) +
                                     why + "; " + advice);
          }
        }
        job.*field = std::move(list);
      });
}

const Table<Job>& accelerate_table() {
  static const Table<Job> table = {
      settings::string("config_file", &Job::accelerate_config),
      launcher_options("options", &Job::accelerate_options, k_accelerate_owned,
                       "the layout comes from \"nodes\" and \"procs_per_node\", the file "
                       "from \"accelerate.config_file\""),
  };
  return table;
}

const Table<Job>& torchrun_table() {
  static const Table<Job> table = {
      settings::command("command", &Job::torchrun_command),
      launcher_options("options", &Job::torchrun_options, k_torchrun_owned,
                       "the layout comes from \"nodes\" and \"procs_per_node\", the address "
                       "and port from the job's first node"),
  };
  return table;
}

const Table<Heal>& heal_table() {
  static const Table<Heal> table = {
      settings::boolean("exclude", &Heal::exclude),
      settings::integer("max_requeues", &Heal::max_requeues, 1, 100),
      settings::integer("max_respawns", &Heal::max_respawns, 0, 1000),
  };
  return table;
}

const Table<Preflight>& preflight_table() {
  static const Table<Preflight> table = {
      settings::duration("timeout", &Preflight::timeout, 1, 3600),
      settings::boolean("pairs", &Preflight::pairs),
      settings::share("pairs_threshold", &Preflight::pairs_threshold),
  };
  return table;
}

const Table<Watchdog>& watchdog_table() {
  static const Table<Watchdog> table = {
      settings::required(settings::duration("timeout", &Watchdog::timeout)),
      settings::duration("startup", &Watchdog::startup),
      settings::duration("grace", &Watchdog::grace),
      settings::boolean("heartbeat", &Watchdog::heartbeat),
      settings::custom<Watchdog>(
          "on_stall", Type::one_of(Kind::choice, {"fail", "requeue"}),
          [](Watchdog& w, const StrictReader& r, const YAML::Node& v, const std::string& p) {
            w.requeue = r.choice(v, p, {"fail", "requeue"}) == "requeue";
          }),
  };
  return table;
}

// activate: {conda: NAME_OR_PATH}, {venv: PATH} or {source: FILE}.
void set_activate(Job& job, const StrictReader& r, const YAML::Node& node, const std::string&) {
  const auto entries = r.entries(node, "activate", activate_table().names());
  if (entries.size() != 1)
    r.reject(node, "activate",
             "\"activate\" takes one of {conda: NAME_OR_PATH}, {venv: PATH} or {source: FILE}");
  const auto& [key, value] = entries.front();
  Activate a;
  activate_table().at(key).set(a, r, value, "activate." + key);
  job.activate = a;
}

// preflight: true or false, or a mapping of the check's settings, which turns it on.
void set_preflight(Job& job, const StrictReader& r, const YAML::Node& node, const std::string&) {
  const std::string expected =
      "\"preflight\" must be true, false or a mapping such as {pairs: true}, got ";
  if (node.IsScalar()) {
    const std::string text = r.string(node, "preflight");
    if (text == "true") job.preflight = Preflight{};
    if (text == "false") job.preflight = std::nullopt;
    if (text == "true" || text == "false") return;
    r.reject(node, "preflight", expected + ddp::text::quote(text));
  }
  if (!node.IsMap()) r.reject(node, "preflight", expected + "a list");
  Preflight p;
  preflight_table().decode(p, r, node, "preflight");
  if (p.pairs_threshold && !p.pairs)
    r.reject(node["pairs_threshold"], "preflight.pairs_threshold",
             "\"preflight.pairs_threshold\" needs \"preflight.pairs: true\"");
  job.preflight = p;
}

const std::vector<std::string>& launcher_names() {
  static const std::vector<std::string> names = {"torchrun",  "srun",    "accelerate",
                                                 "lightning", "fairseq", "none"};
  return names;
}

void set_launcher(Job& job, const StrictReader& r, const YAML::Node& v, const std::string& p) {
  const std::string name = r.choice(v, p, launcher_names());
  for (Launcher l : {Launcher::torchrun, Launcher::srun, Launcher::accelerate, Launcher::lightning,
                     Launcher::fairseq, Launcher::none})
    if (name == launcher_name(l)) job.launcher = l;
}

// sbatch, srun: extra options, each checked against what ddpgen computes (options.hpp).
settings::Row<Job> extra_options(const std::string& name, std::vector<std::string> Job::*field,
                                 options::Source source) {
  return settings::custom<Job>(
      name, {Kind::strings},
      [field, source](Job& job, const StrictReader& r, const YAML::Node& v, const std::string& p) {
        job.*field = options::decode(r, v, p, source);
      });
}

}  // namespace

const Table<Job>& job_table() {
  using namespace settings;
  static const Table<Job> table = {
      string("name", &Job::name),
      integer("nodes", &Job::nodes, 1, 100000),
      integer("spares", &Job::spares, 0, 1000),
      integer("gpus_per_node", &Job::gpus_per_node, 0, 1024),
      integer("procs_per_node", &Job::procs_per_node, 1, 1024),
      integer("cpus_per_task", &Job::cpus_per_task, 1, 4096),
      time("time", &Job::time),
      custom<Job>("launcher", Type::one_of(Kind::choice, launcher_names()), set_launcher),
      required(string("script", &Job::script)),
      strings("args", &Job::args),
      string("account", &Job::account),
      string("partition", &Job::partition),
      string("gpu_type", &Job::gpu_type),
      env("env", &Job::env),
      strings("modules", &Job::modules),
      section("container", &Job::container, container_table(), check_container),
      section("checkpoint", &Job::checkpoint, checkpoint_table(), check_checkpoint),
      string("output", &Job::output),
      string("error", &Job::error),
      section("mail", &Job::mail, mail_table(), k_no_check),
      custom<Job>("preflight", Type::nested(Kind::section_or_boolean, "preflight"), set_preflight),
      section("watchdog", &Job::watchdog, watchdog_table(), check_watchdog),
      string("qos", &Job::qos),
      string("constraint", &Job::constraint),
      extra_options("sbatch", &Job::sbatch, options::Source::job_sbatch),
      extra_options("srun", &Job::srun, options::Source::job_srun),
      custom<Job>("activate", Type::nested(Kind::section, "activate"), set_activate),
      lines("pre", &Job::pre),
      lines("post", &Job::post),
      words("task_prefix", &Job::task_prefix),
      command("python", &Job::python),
      custom<Job>("accelerate", Type::nested(Kind::section, "accelerate"),
                  [](Job& job, const StrictReader& r, const YAML::Node& v, const std::string& p) {
                    accelerate_table().decode(job, r, v, p);
                  }),
      custom<Job>("torchrun", Type::nested(Kind::section, "torchrun"),
                  [](Job& job, const StrictReader& r, const YAML::Node& v, const std::string& p) {
                    torchrun_table().decode(job, r, v, p);
                  }),
      section("heal", &Job::heal, heal_table(), k_no_check),
      section("logs", &Job::logs, logs_table(), check_logs),
      section("sweep", &Job::sweep, sweep_table(), check_sweep),
  };
  return table;
}

const settings::Catalog& job_catalog() {
  static const settings::Catalog catalog = {
      {"job", job_table().fields()},
      {"container", container_table().fields()},
      {"checkpoint", checkpoint_table().fields()},
      {"mail", mail_table().fields()},
      {"activate", activate_table().fields()},
      {"accelerate", accelerate_table().fields()},
      {"torchrun", torchrun_table().fields()},
      {"watchdog", watchdog_table().fields()},
      {"heal", heal_table().fields()},
      {"preflight", preflight_table().fields()},
      {"logs", logs_table().fields()},
      {"sweep", sweep_table().fields()},
  };
  return catalog;
}

// The key lists of job.hpp, from the tables.
const std::vector<std::string>& job_keys() {
  return job_table().names();
}
const std::vector<std::string>& job_container_keys() {
  return container_table().names();
}
const std::vector<std::string>& job_checkpoint_keys() {
  return checkpoint_table().names();
}
const std::vector<std::string>& job_mail_keys() {
  return mail_table().names();
}
const std::vector<std::string>& job_activate_keys() {
  return activate_table().names();
}
const std::vector<std::string>& job_accelerate_keys() {
  return accelerate_table().names();
}
const std::vector<std::string>& job_torchrun_keys() {
  return torchrun_table().names();
}
const std::vector<std::string>& job_heal_keys() {
  return heal_table().names();
}
const std::vector<std::string>& job_preflight_keys() {
  return preflight_table().names();
}
const std::vector<std::string>& job_watchdog_keys() {
  return watchdog_table().names();
}

const std::vector<std::string>& job_logs_keys() {
  return logs_table().names();
}
const std::vector<std::string>& job_sweep_keys() {
  return sweep_table().names();
}

}  // namespace ddpgen
