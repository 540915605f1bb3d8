#include "gen/core/schema.hpp"

#include <map>
#include <set>

#include "gen/core/job.hpp"
#include "gen/core/profile.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

// JSON fragments for the value kinds StrictReader reads. Any YAML scalar is a string to the
// reader, so an integer may also be written quoted and a string may look like a number.
const std::string k_scalar = R"({"type": ["string", "number", "boolean"]})";
const std::string k_boolean = R"({"enum": [true, false, "true", "false"]})";
const std::string k_strings = R"({"type": ["array", "null"], "items": )" + k_scalar + "}";
// A profile's list over its base's: the list itself, or {add: list} or {replace: list}.
std::string merge_list(const std::string& list) {
  return R"({"anyOf": [)" + list +
         R"(, {"type": "object", "additionalProperties": false, "minProperties": 1, )"
         R"("maxProperties": 1, "properties": {"add": )" +
         list + R"(, "replace": )" + list + "}}]}";
}
// StrictReader::lines() and words(): one string, or a list of them.
const std::string k_string_or_list =
    R"({"type": ["string", "array", "null"], "items": )" + k_scalar + "}";
const std::string k_env =
    R"({"type": ["object", "null"], "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}, )"
    R"("additionalProperties": )" +
    k_scalar + "}";
// duration::parse: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
const std::string k_time =
    R"({"type": ["string", "integer"], "pattern": "^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$"})";

// ddp::parse_seconds: 90, 90s, 5m, 1h30m, 2d.
const std::string k_duration =
    R"({"type": ["string", "integer"], "pattern": "^([0-9]+|([0-9]+[dhms])+)$"})";

// A share above 0 and below 1 such as 0.5 (the reader also takes 5e-1; editors need not).
const std::string k_share =
    R"({"type": ["number", "string"], "exclusiveMinimum": 0, "exclusiveMaximum": 1, )"
    R"("pattern": "^0*\\.[0-9]*[1-9][0-9]*$"})";

// A "@section|boolean" fragment: true, false or that mapping.
constexpr std::string_view k_or_boolean = "|boolean";

// The section a "@section..." fragment names.
std::string section_of(const std::string& fragment) {
  std::string name = fragment.substr(1);
  if (name.ends_with(k_or_boolean)) name.resize(name.size() - k_or_boolean.size());
  return name;
}

std::string integer(long min, long max) {
  return R"({"type": ["integer", "string"], "pattern": "^[0-9]{1,9}$", "minimum": )" +
         std::to_string(min) + R"(, "maximum": )" + std::to_string(max) + "}";
}

std::string choice(std::initializer_list<std::string_view> values) {
  std::string out = R"({"enum": [)";
  for (auto v : values) out += (out.back() == '[' ? "\"" : ", \"") + std::string(v) + "\"";
  return out + "]}";
}

// The runtimes a container may name (model.hpp's list).
std::string runtimes() {
  std::string out = R"({"enum": [)";
  for (const auto& r : container_runtime_names())
    out += (out.back() == '[' ? "\"" : ", \"") + r + "\"";
  return out + "]}";
}

std::string quoted(const std::string& text) {
  return "\"" + text + "\"";  // JSON: the keys are plain names
}

// A table: "section.key" -> fragment. A section is a mapping the reader decodes with one of
// its key tables; "@section" stands for a nested mapping built from that section.
using Types = std::map<std::string, std::string>;

const Types& job_types() {
  static const Types types = {
      {"job.name", k_scalar},
      {"job.nodes", integer(1, 100000)},
      {"job.gpus_per_node", integer(0, 1024)},
      {"job.procs_per_node", integer(1, 1024)},
      {"job.time", k_time},
      {"job.launcher", choice({"torchrun", "srun", "accelerate", "lightning", "fairseq", "none"})},
      {"job.script", k_scalar},
      {"job.args", k_strings},
      {"job.account", k_scalar},
      {"job.partition", k_scalar},
      {"job.gpu_type", k_scalar},
      {"job.env", k_env},
      {"job.modules", k_strings},
      {"job.container", "@container"},
      {"job.checkpoint", "@checkpoint"},
      {"job.output", k_scalar},
      {"job.error", k_scalar},
      {"job.mail", "@mail"},
      {"job.preflight", "@preflight|boolean"},
      {"job.watchdog", "@watchdog"},
      {"job.heal", "@heal"},
      {"job.qos", k_scalar},
      {"job.constraint", k_scalar},
      {"job.sbatch", k_strings},
      {"job.srun", k_strings},
      {"job.activate", "@activate"},
      {"job.pre", k_string_or_list},
      {"job.post", k_string_or_list},
      {"job.task_prefix", k_string_or_list},
      {"job.python", k_string_or_list},
      {"job.accelerate", "@accelerate"},
      {"activate.conda", k_scalar},
      {"activate.venv", k_scalar},
      {"activate.source", k_scalar},
      {"accelerate.config_file", k_scalar},
      {"container.image", k_scalar},
      {"container.runtime", runtimes()},
      {"container.mounts", k_strings},
      {"container.workdir", k_scalar},
      {"checkpoint.dir", k_scalar},
      {"checkpoint.requeue", k_boolean},
      {"checkpoint.signal", choice({"USR1", "USR2", "TERM", "INT", "HUP", "URG"})},
      {"checkpoint.signal_time", integer(1, 65535)},
      {"checkpoint.max_restarts", integer(0, 10000)},
      {"checkpoint.requeue_on_failure", k_boolean},
      {"watchdog.timeout", k_duration},
      {"watchdog.startup", k_duration},
      {"watchdog.grace", k_duration},
      {"watchdog.heartbeat", k_boolean},
      {"watchdog.on_stall", choice({"fail", "requeue"})},
      {"preflight.timeout", k_duration},
      {"preflight.pairs", k_boolean},
      {"preflight.pairs_threshold", k_share},
      {"heal.exclude", k_boolean},
      {"heal.max_requeues", integer(1, 100)},
      {"mail.user", k_scalar},
      {"mail.type", k_scalar},
  };
  return types;
}

const Types& profile_types() {
  static const Types types = {
      {"profile.extends", k_scalar},
      {"profile.description", k_scalar},
      {"profile.deprecated", k_scalar},
      {"profile.abstract", k_boolean},
      {"profile.notes", merge_list(k_strings)},
      {"profile.sources", merge_list(k_strings)},
      {"profile.ddp_plugin", k_boolean},
      {"profile.account", "@account"},
      {"profile.gpu_request", choice({"gres", "gpus-per-node"})},
      {"profile.gpu_vendor", choice({"nvidia", "amd"})},
      {"profile.node", "@node"},
      {"profile.partitions", "@partition[]+"},
      {"profile.cpus_per_gpu", integer(0, 1024)},
      {"profile.mem_per_gpu_gb", integer(0, 100000)},
      {"profile.sbatch", merge_list(k_strings)},
      {"profile.module_purge", k_boolean},
      {"profile.module_use", merge_list(k_strings)},
      {"profile.modules", merge_list(k_strings)},
      {"profile.env", k_env},
      {"profile.container", "@container"},
      {"profile.local_scratch", k_scalar},
      {"profile.python", k_string_or_list},
      {"profile.fabric", choice({"ib", "efa", "cxi", "socket"})},
      {"profile.variables", merge_list(k_strings)},
      {"profile.port_range", R"({"type": "string", "pattern": "^[0-9]+-[0-9]+$"})"},
      {"account.required", k_boolean},
      {"account.hint", k_scalar},
      {"node.gpus", integer(0, 64)},
      {"node.gpu_type", k_scalar},
      {"node.cores", integer(0, 100000)},
      {"node.memory_gb", integer(0, 10000000)},
      {"node.local_disk_gb", integer(0, 10000000)},
      {"partition.name", k_scalar},
      {"partition.description", k_scalar},
      {"partition.min_nodes", integer(1, 100000)},
      {"partition.max_nodes", integer(1, 100000)},
      {"partition.max_time", k_time},
      {"partition.min_gpus", integer(0, 1000000)},
      {"partition.max_gpus", integer(1, 1000000)},
      {"partition.test", k_boolean},
      {"partition.constraint", k_scalar},
      {"partition.node", "@node"},
      {"partition.sbatch", k_strings},
      {"partition.site_chooses", k_boolean},
      {"container.runtimes",
       merge_list(R"({"type": ["array", "null"], "items": )" + runtimes() + "}")},
      {"container.binds", merge_list(k_strings)},
      {"container.modules", merge_list(k_strings)},
  };
  return types;
}

struct Section {
  const std::vector<std::string>& keys;
  std::vector<std::string> required;
};

using Sections = std::map<std::string, Section>;

const Sections& job_sections() {
  static const Sections sections = {
      {"job", {job_keys(), {"time", "script"}}},
      {"container", {job_container_keys(), {"image"}}},
      {"checkpoint", {job_checkpoint_keys(), {"dir"}}},
      {"mail", {job_mail_keys(), {}}},
      {"activate", {job_activate_keys(), {}}},
      {"accelerate", {job_accelerate_keys(), {}}},
      {"watchdog", {job_watchdog_keys(), {"timeout"}}},
      {"heal", {job_heal_keys(), {}}},
      {"preflight", {job_preflight_keys(), {}}},
  };
  return sections;
}

const Sections& profile_sections() {
  static const Sections sections = {
      {"profile", {profile_keys(), {}}},
      {"account", {profile_account_keys(), {}}},
      {"node", {profile_node_keys(), {}}},
      {"partition", {profile_partition_keys(), {"name"}}},
      {"container", {profile_container_keys(), {}}},
  };
  return sections;
}

struct Builder {
  const Types& types;
  const Sections& sections;
  std::set<std::string> used;

  // The schema of one mapping, indented by indent; fails on a key without a type.
  std::string object(const std::string& name, const std::string& indent) {
    const Section& section = sections.at(name);
    std::string out = "{\n" + indent + R"(  "type": "object", "additionalProperties": false,)";
    if (!section.required.empty()) {
      out += "\n" + indent + R"(  "required": [)";
      for (const auto& key : section.required)
        out += (key == section.required.front() ? "" : ", ") + quoted(key);
      out += "],";
    }
    out += "\n" + indent + R"(  "properties": {)";
    for (const auto& key : section.keys) {
      const std::string path = name + "." + key;
      auto it = types.find(path);
      if (it == types.end())
        throw Error{"key " + ddp::text::quote(path) + " has no JSON type in gen/core/schema.cpp",
                    {"schema", 0, 0}};
      used.insert(path);
      out += (key == section.keys.front() ? "\n" : ",\n") + indent + "    " + quoted(key) + ": " +
             value(it->second, indent + "    ");
    }
    return out + "\n" + indent + "  }\n" + indent + "}";
  }

  std::string value(const std::string& fragment, const std::string& indent) {
    if (!fragment.starts_with("@")) return fragment;
    if (fragment.ends_with(k_or_boolean))
      return R"({"anyOf": [)" + k_boolean + ", " + object(section_of(fragment), indent) + "]}";
    if (fragment.ends_with("[]+"))  // a list a profile may add to or replace (merge_list)
      return merge_list(value(fragment.substr(0, fragment.size() - 1), indent));
    if (fragment.ends_with("[]"))
      return R"({"type": "array", "minItems": 1, "items": )" +
             object(fragment.substr(1, fragment.size() - 3), indent) + "}";
    return object(fragment.substr(1), indent);
  }
};

std::string document(const std::string& title, const std::string& body) {
  return "{\n"
         R"(  "$schema": "https://json-schema.org/draft/2020-12/schema",)"
         "\n"
         R"(  "$id": "https://slurm-ddp.invalid/schema/)" +
         title + R"(.schema.json",)" + "\n" + R"(  "title": "slurm-ddp ddpgen )" + title +
         R"( file",)" + "\n" + R"(  "allOf": [)" + body + "]\n}\n";
}

}  // namespace

Result<std::string> json_schema(SchemaKind kind) {
  const bool job = kind == SchemaKind::job;
  Builder b{job ? job_types() : profile_types(), job ? job_sections() : profile_sections(), {}};
  std::string body;
  try {
    body = b.object(job ? "job" : "profile", "  ");
    for (const auto& [path, fragment] : b.types)
      if (!b.used.contains(path))
        throw Error{"gen/core/schema.cpp types " + ddp::text::quote(path) +
                        ", which the reader's key tables do not have",
                    {"schema", 0, 0}};
  } catch (const Error& error) {
    return std::unexpected(error);
  }
  // A concrete profile needs partitions, its own or inherited (decode_profile says the same).
  if (!job)
    body += R"(, {"anyOf": [{"required": ["partitions"]}, {"required": ["extends"]}, )"
            R"({"required": ["abstract"], "properties": {"abstract": {"enum": [true, "true"]}}}]})";
  return document(job ? "job" : "profile", body);
}

std::vector<std::string> job_key_paths() {
  std::vector<std::string> out;
  for (const auto& key : job_keys()) {
    out.push_back(key);
    const auto& types = job_types();
    auto it = types.find("job." + key);
    if (it == types.end() || !it->second.starts_with("@")) continue;
    for (const auto& sub : job_sections().at(section_of(it->second)).keys)
      out.push_back(key + "." + sub);
  }
  return out;
}

}  // namespace ddpgen
