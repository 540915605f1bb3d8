#include "gen/core/job.hpp"

#include "gen/core/duration.hpp"
#include "gen/core/options.hpp"
#include "gen/core/shell.hpp"
#include "gen/core/yaml_strict.hpp"
#include "libddp/util/seconds.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {

const std::vector<std::string>& job_container_keys() {
  static const std::vector<std::string> keys = {"image", "runtime", "mounts", "workdir"};
  return keys;
}
const std::vector<std::string>& job_checkpoint_keys() {
  static const std::vector<std::string> keys = {
      "dir", "requeue", "signal", "signal_time", "max_restarts", "requeue_on_failure"};
  return keys;
}
const std::vector<std::string>& job_mail_keys() {
  static const std::vector<std::string> keys = {"user", "type"};
  return keys;
}

const std::vector<std::string>& job_activate_keys() {
  static const std::vector<std::string> keys = {"conda", "venv", "source"};
  return keys;
}
const std::vector<std::string>& job_accelerate_keys() {
  static const std::vector<std::string> keys = {"config_file"};
  return keys;
}

const std::vector<std::string>& job_heal_keys() {
  static const std::vector<std::string> keys = {"exclude", "max_requeues"};
  return keys;
}

const std::vector<std::string>& job_preflight_keys() {
  static const std::vector<std::string> keys = {"timeout", "pairs", "pairs_threshold"};
  return keys;
}

const std::vector<std::string>& job_watchdog_keys() {
  static const std::vector<std::string> keys = {"timeout", "startup", "grace", "heartbeat",
                                                "on_stall"};
  return keys;
}

namespace {

// Applies one "KEY=VALUE" to root; returns the key path and its label for error messages.
std::pair<std::string, std::string> apply_set(YAML::Node& root, const std::string& set) {
  const std::string label = "--set " + ddp::text::printable(set);
  const auto eq = set.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error{"expected KEY=VALUE, e.g. --set partition=gpu", {label, 0, 0}};
  const std::string path = set.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(set.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error{"value is not valid YAML: " + e.msg, {label, 0, 0}};
  }
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? dot : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  // node.reset() rebinds the handle; plain assignment would overwrite the tree.
  YAML::Node cur;
  cur.reset(root);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = cur[parts[i]];
    if (!next.IsMap()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node child = cur[parts[i]];
    cur.reset(child);
  }
  cur[parts.back()] = value;
  return {path, label};
}

Container decode_container(const StrictReader& r, const YAML::Node& node) {
  Container c;
  for (const auto& [key, value] : r.entries(node, "container", job_container_keys())) {
    const std::string path = "container." + key;
    if (key == "image") c.image = r.string(value, path);
    if (key == "runtime") c.runtime = r.choice(value, path, container_runtime_names());
    if (key == "mounts") c.mounts = r.strings(value, path);
    if (key == "workdir") c.workdir = r.string(value, path);
  }
  if (c.image.empty()) r.reject(node, "container", "\"container.image\" is required");
  return c;
}

Checkpoint decode_checkpoint(const StrictReader& r, const YAML::Node& node) {
  Checkpoint c;
  for (const auto& [key, value] : r.entries(node, "checkpoint", job_checkpoint_keys())) {
    const std::string path = "checkpoint." + key;
    if (key == "dir") c.dir = r.string(value, path);
    if (key == "requeue") c.requeue = r.boolean(value, path);
    if (key == "signal")
      c.signal = r.choice(value, path, {"USR1", "USR2", "TERM", "INT", "HUP", "URG"});
    if (key == "signal_time") c.signal_time = r.integer(value, path, 1, 65535);
    if (key == "max_restarts") c.max_restarts = r.integer(value, path, 0, 10000);
    if (key == "requeue_on_failure") c.requeue_on_failure = r.boolean(value, path);
  }
  if (c.dir.empty()) r.reject(node, "checkpoint", "\"checkpoint.dir\" is required");
  if (c.requeue_on_failure && !c.requeue)
    r.reject(
        node, "checkpoint",
        "\"checkpoint.requeue_on_failure\" needs \"checkpoint.requeue: true\" (the job must be "
        "requeueable)");
  return c;
}

long decode_seconds(const StrictReader& r, const YAML::Node& value, const std::string& path) {
  auto seconds = ddp::parse_seconds(r.string(value, path), ddp::text::quote(path));
  if (!seconds) r.reject(value, path, seconds.error().message);
  return *seconds;
}

Watchdog decode_watchdog(const StrictReader& r, const YAML::Node& node) {
  Watchdog w;
  for (const auto& [key, value] : r.entries(node, "watchdog", job_watchdog_keys())) {
    const std::string path = "watchdog." + key;
    if (key == "timeout") w.timeout = decode_seconds(r, value, path);
    if (key == "startup") w.startup = decode_seconds(r, value, path);
    if (key == "grace") w.grace = decode_seconds(r, value, path);
    if (key == "heartbeat") w.heartbeat = r.boolean(value, path);
    if (key == "on_stall") w.requeue = r.choice(value, path, {"fail", "requeue"}) == "requeue";
  }
  if (w.timeout == 0) r.reject(node, "watchdog", "\"watchdog.timeout\" is required (e.g. 10m)");
  return w;
}

Heal decode_heal(const StrictReader& r, const YAML::Node& node) {
  Heal h;
  for (const auto& [key, value] : r.entries(node, "heal", job_heal_keys())) {
    if (key == "exclude") h.exclude = r.boolean(value, "heal.exclude");
    if (key == "max_requeues") h.max_requeues = r.integer(value, "heal.max_requeues", 1, 100);
  }
  return h;
}

// preflight.pairs_threshold: a share of the median, as ddp-check --pairs-threshold reads it.
double decode_share(const StrictReader& r, const YAML::Node& value, const std::string& path) {
  const std::string text = r.string(value, path);
  const auto share = ddp::text::parse_share(text);
  if (!share)
    r.reject(value, path,
             ddp::text::quote(path) +
                 " must be a share of the median, greater than 0 and less than 1 (e.g. 0.5), "
                 "got " +
                 ddp::text::quote(text));
  return *share;
}

// preflight: true or false, or a mapping of the check's settings, which turns it on.
std::optional<Preflight> decode_preflight(const StrictReader& r, const YAML::Node& node) {
  const std::string expected =
      "\"preflight\" must be true, false or a mapping such as {pairs: true}, got ";
  if (node.IsScalar()) {
    const std::string text = r.string(node, "preflight");
    if (text == "true") return Preflight{};
    if (text == "false") return std::nullopt;
    r.reject(node, "preflight", expected + ddp::text::quote(text));
  }
  if (!node.IsMap()) r.reject(node, "preflight", expected + "a list");
  Preflight p;
  std::optional<YAML::Node> threshold;  // where pairs_threshold was given
  for (const auto& [key, value] : r.entries(node, "preflight", job_preflight_keys())) {
    const std::string path = "preflight." + key;
    if (key == "timeout") {
      p.timeout = decode_seconds(r, value, path);
      if (p.timeout < 1 || p.timeout > 3600)
        r.reject(value, path,
                 ddp::text::quote(path) + " must be from 1s to 1h, got " +
                     ddp::text::quote(r.string(value, path)));
    }
    if (key == "pairs") p.pairs = r.boolean(value, path);
    if (key == "pairs_threshold") {
      p.pairs_threshold = decode_share(r, value, path);
      threshold = value;
    }
  }
  if (threshold && !p.pairs)
    r.reject(*threshold, "preflight.pairs_threshold",
             "\"preflight.pairs_threshold\" needs \"preflight.pairs: true\"");
  return p;
}

Mail decode_mail(const StrictReader& r, const YAML::Node& node) {
  Mail m;
  for (const auto& [key, value] : r.entries(node, "mail", job_mail_keys())) {
    if (key == "user") m.user = r.string(value, "mail.user");
    if (key == "type") m.type = r.string(value, "mail.type");
  }
  return m;
}

Activate decode_activate(const StrictReader& r, const YAML::Node& node) {
  const auto entries = r.entries(node, "activate", job_activate_keys());
  if (entries.size() != 1)
    r.reject(node, "activate",
             "\"activate\" takes one of {conda: NAME_OR_PATH}, {venv: PATH} or {source: FILE}");
  const auto& [key, value] = entries.front();
  Activate a;
  a.kind = key == "conda"  ? Activate::Kind::conda
           : key == "venv" ? Activate::Kind::venv
                           : Activate::Kind::source;
  a.value = r.string(value, "activate." + key);
  if (a.value.empty()) r.reject(value, "activate." + key, "\"activate." + key + "\" is empty");
  return a;
}

std::string decode_accelerate(const StrictReader& r, const YAML::Node& node) {
  std::string config;
  for (const auto& [key, value] : r.entries(node, "accelerate", job_accelerate_keys()))
    if (key == "config_file") config = r.string(value, "accelerate.config_file");
  return config;
}

Launcher decode_launcher(const StrictReader& r, const YAML::Node& node) {
  const std::string name = r.choice(
      node, "launcher", {"torchrun", "srun", "accelerate", "lightning", "fairseq", "none"});
  if (name == "none") return Launcher::none;
  if (name == "srun") return Launcher::srun;
  if (name == "accelerate") return Launcher::accelerate;
  if (name == "lightning") return Launcher::lightning;
  if (name == "fairseq") return Launcher::fairseq;
  return Launcher::torchrun;
}

// The keys about the software and the launch around the program.
void decode_software(Job& job, const StrictReader& r, const std::string& key,
                     const YAML::Node& value) {
  if (key == "qos") job.qos = r.string(value, key);
  if (key == "constraint") job.constraint = r.string(value, key);
  if (key == "sbatch") job.sbatch = options::decode(r, value, key, options::Source::job_sbatch);
  if (key == "srun") job.srun = options::decode(r, value, key, options::Source::job_srun);
  if (key == "activate") job.activate = decode_activate(r, value);
  if (key == "pre") job.pre = r.lines(value, key);
  if (key == "post") job.post = r.lines(value, key);
  if (key == "task_prefix") job.task_prefix = r.words(value, key);
  if (key == "python") job.python = r.command(value, key);
  if (key == "accelerate") job.accelerate_config = decode_accelerate(r, value);
}

void decode_into(Job& job, const StrictReader& r, const YAML::Node& root) {
  bool has_time = false;
  for (const auto& [key, value] : r.entries(root, "", job_keys())) {
    job.where[key] = r.where(value, key);
    if (value.IsNull()) continue;  // "key:" with no value, or --set key= : as if not given
    if (key == "name") job.name = r.string(value, key);
    if (key == "nodes") job.nodes = r.integer(value, key, 1, 100000);
    if (key == "gpus_per_node") job.gpus_per_node = r.integer(value, key, 0, 1024);
    if (key == "procs_per_node") job.procs_per_node = r.integer(value, key, 1, 1024);
    if (key == "time") {
      const std::string text = r.string(value, key);
      auto seconds = duration::parse(text);
      if (!seconds)
        r.reject(value, key,
                 "\"time\": malformed time " + ddp::text::quote(text) +
                     " (expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
      job.time = *seconds;
      has_time = true;
    }
    if (key == "launcher") job.launcher = decode_launcher(r, value);
    if (key == "script") job.script = r.string(value, key);
    if (key == "args") job.args = r.strings(value, key);
    if (key == "account") job.account = r.string(value, key);
    if (key == "partition") job.partition = r.string(value, key);
    if (key == "gpu_type") job.gpu_type = r.string(value, key);
    if (key == "env") job.env = r.env_map(value, key);
    if (key == "modules") job.modules = r.strings(value, key);
    if (key == "container") job.container = decode_container(r, value);
    if (key == "checkpoint") job.checkpoint = decode_checkpoint(r, value);
    if (key == "watchdog") job.watchdog = decode_watchdog(r, value);
    if (key == "heal") job.heal = decode_heal(r, value);
    if (key == "output") job.output = r.string(value, key);
    if (key == "error") job.error = r.string(value, key);
    if (key == "mail") job.mail = decode_mail(r, value);
    if (key == "preflight") job.preflight = decode_preflight(r, value);
    decode_software(job, r, key, value);
  }
  if (!has_time) throw Error{"\"time\" is required (e.g. time: \"02:00:00\")", job.at("time")};
  if (job.script.empty())
    throw Error{"\"script\" is required (the program to run)", job.at("script")};
}

}  // namespace

const std::vector<std::string>& job_keys() {
  static const std::vector<std::string> keys = {
      "name",      "nodes",     "gpus_per_node", "procs_per_node", "time",     "launcher",
      "script",    "args",      "account",       "partition",      "gpu_type", "env",
      "modules",   "container", "checkpoint",    "output",         "error",    "mail",
      "preflight", "watchdog",  "qos",           "constraint",     "sbatch",   "srun",
      "activate",  "pre",       "post",          "task_prefix",    "python",   "accelerate",
      "heal"};
  return keys;
}

Result<Job> decode_job(const std::string& text, const std::string& file,
                       const std::vector<std::string>& sets) {
  auto doc = parse_yaml(text, file);
  if (!doc) return std::unexpected(doc.error());
  Job job;
  job.file = file;
  try {
    YAML::Node root = *doc;
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    std::map<std::string, std::string> overrides;
    for (const auto& set : sets) {
      if (!root.IsMap()) break;  // reported below, at the document
      auto [path, label] = apply_set(root, set);
      overrides[path] = label;
    }
    StrictReader reader(file, overrides);
    decode_into(job, reader, root);
  } catch (const Error& error) {
    return std::unexpected(error);
  }
  return job;
}

}  // namespace ddpgen
