#include "gen/core/profile.hpp"

#include <algorithm>
#include <cctype>
#include <concepts>
#include <set>

#include "gen/core/duration.hpp"
#include "gen/core/options.hpp"
#include "gen/core/shell.hpp"
#include "gen/core/yaml_strict.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {

const std::vector<std::string>& profile_node_keys() {
  static const std::vector<std::string> keys = {"gpus", "gpu_type", "cores", "memory_gb",
                                                "local_disk_gb"};
  return keys;
}
const std::vector<std::string>& profile_partition_keys() {
  static const std::vector<std::string> keys = {
      "name",     "description", "min_nodes",  "max_nodes", "max_time", "min_gpus",
      "max_gpus", "test",        "constraint", "node",      "sbatch",   "site_chooses"};
  return keys;
}
const std::vector<std::string>& profile_account_keys() {
  static const std::vector<std::string> keys = {"required", "hint"};
  return keys;
}
const std::vector<std::string>& profile_container_keys() {
  static const std::vector<std::string> keys = {"runtimes", "binds", "modules"};
  return keys;
}

namespace {

// A GRES type is written into "#SBATCH --gres=gpu:TYPE:N", where ':' or ',' would change the
// request and a newline would end the line (and with it every later #SBATCH).
std::string decode_gres_type(const StrictReader& r, const YAML::Node& node,
                             const std::string& path) {
  std::string type = r.string(node, path);
  for (char c : type)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      r.reject(node, path,
               ddp::text::quote(path) + ": " + ddp::text::quote(type) +
                   " is not a GRES type name (letters, digits, _ - . only, as in a100_3g.20gb)");
  return type;
}

NodeSpec decode_node(const StrictReader& r, const YAML::Node& node, const std::string& path,
                     NodeSpec spec) {
  for (const auto& [key, value] : r.entries(node, path, profile_node_keys())) {
    const std::string p = path + "." + key;
    if (key == "gpus") spec.gpus = r.integer(value, p, 0, 64);
    if (key == "gpu_type") spec.gpu_type = decode_gres_type(r, value, p);
    if (key == "cores") spec.cores = r.integer(value, p, 0, 100000);
    if (key == "memory_gb") spec.memory_gb = r.integer(value, p, 0, 10000000);
    if (key == "local_disk_gb") spec.local_disk_gb = r.integer(value, p, 0, 10000000);
  }
  return spec;
}

long decode_time(const StrictReader& r, const YAML::Node& node, const std::string& path) {
  const std::string text = r.string(node, path);
  auto seconds = duration::parse(text);
  if (!seconds)
    r.reject(node, path,
             ddp::text::quote(path) + ": malformed time " + ddp::text::quote(text) +
                 " (expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
  return *seconds;
}

Partition decode_partition(const StrictReader& r, const YAML::Node& node, const std::string& path) {
  Partition p;
  for (const auto& [key, value] : r.entries(node, path, profile_partition_keys())) {
    const std::string kp = path + "." + key;
    if (key == "name") p.name = r.string(value, kp);
    if (key == "description") p.description = r.string(value, kp);
    if (key == "min_nodes") p.min_nodes = r.integer(value, kp, 1, 100000);
    if (key == "max_nodes") p.max_nodes = r.integer(value, kp, 1, 100000);
    if (key == "max_time") p.max_time = decode_time(r, value, kp);
    if (key == "min_gpus") p.min_gpus = r.integer(value, kp, 0, 1000000);
    if (key == "max_gpus") p.max_gpus = r.integer(value, kp, 1, 1000000);
    if (key == "test") p.test = r.boolean(value, kp);
    if (key == "constraint") p.constraint = r.string(value, kp);
    if (key == "node") p.node = decode_node(r, value, kp, NodeSpec{});
    if (key == "sbatch") p.sbatch = options::decode(r, value, kp, options::Source::profile_sbatch);
    if (key == "site_chooses") p.site_chooses = r.boolean(value, kp);
  }
  if (auto problem = shell::sbatch_value_problem(p.name))
    r.reject(node, path, ddp::text::quote(path + ".name") + " " + *problem);
  if (!p.constraint.empty())
    if (auto problem = shell::sbatch_value_problem(p.constraint))
      r.reject(node, path, ddp::text::quote(path + ".constraint") + " " + *problem);
  return p;
}

std::string origin_of(const StrictReader& r, const YAML::Node& node, const std::string& path) {
  const Location at = r.where(node, path);
  return at.file + ":" + std::to_string(at.line);
}

// Site variables may reference others ($NAME), so they are not single-quoted; what bash could
// read as code is refused here, where the message can point at the value.
void decode_site_env(const StrictReader& r, const YAML::Node& node, Profile& p) {
  for (auto& [name, v] : r.env_map(node, "env")) {
    if (auto problem = shell::site_value_problem(v))
      r.reject(node[name], "env." + name, "\"env." + name + "\" " + *problem);
    std::erase_if(p.env, [&](const auto& e) { return e.first == name; });
    p.origin["env." + name] = origin_of(r, node[name], "env." + name);
    p.env.emplace_back(name, v);
  }
}

// Names of variables the site sets in every job; a job's values may reference them as ${NAME}.
std::vector<std::string> decode_variables(const StrictReader& r, const YAML::Node& node) {
  auto names = r.strings(node, "variables");
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!ddp::is_env_name(names[i]))
      r.reject(node[i], "variables",
               "\"variables\": " + ddp::text::quote(names[i]) +
                   " is not a variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
  return names;
}

void decode_port_range(const StrictReader& r, const YAML::Node& node, Profile& p) {
  // The plugin's parser: a profile accepts exactly what plugstack.conf's port_range= does.
  const std::string text = r.string(node, "port_range");
  auto range = ddp::parse_port_range(text);
  if (!range)
    r.reject(node, "port_range",
             "\"port_range\" must be LOW-HIGH within 1024-65535, e.g. 20000-30999; got " +
                 ddp::text::quote(text));
  p.port_first = range->first;
  p.port_last = range->last;
}

// A list over its base profile's list. A plain list may not silently drop a base's non-empty
// list (adding one sbatch option used to drop the base's --exclusive): {add: [...]} appends to
// it and {replace: [...]} says that it drops it.
template <class T, class Decode>
std::vector<T> merged(const StrictReader& r, const YAML::Node& value, const std::string& key,
                      std::vector<T> base, Profile& p, Decode decode) {
  const std::string here = origin_of(r, value, key);
  if (!value.IsMap()) {
    std::vector<T> list = decode(value);
    bool same = false;
    if constexpr (std::equality_comparable<T>) same = list == base;
    if (!base.empty() && !same)
      r.reject(value, key,
               ddp::text::quote(key) + " would drop the list of the profile this one extends (" +
                   p.origin[key] + "): write " + ddp::text::quote(key + ": {add: [...]}") +
                   " to add to it, or " + ddp::text::quote(key + ": {replace: [...]}") +
                   " to drop it");
    p.origin[key] = here;
    return list;
  }
  const auto entries = r.entries(value, key, {"add", "replace"});
  if (entries.size() != 1)
    r.reject(value, key, ddp::text::quote(key) + " takes one of add: or replace:");
  const auto& [mode, items] = entries.front();
  std::vector<T> list = decode(items);
  if (mode == "replace") {
    p.origin[key] = origin_of(r, items, key) + " (replaces the base's)";
    return list;
  }
  base.insert(base.end(), list.begin(), list.end());
  const std::string before = p.origin[key];
  p.origin[key] = (before.empty() ? "" : before + " + ") + origin_of(r, items, key);
  return base;
}

std::vector<std::string> decode_runtimes(const StrictReader& r, const YAML::Node& v,
                                         const std::string& kp) {
  std::vector<std::string> out;
  for (const auto& runtime : r.strings(v, kp)) {
    const auto& names = container_runtime_names();
    if (std::find(names.begin(), names.end(), runtime) == names.end())
      r.reject(v, kp,
               ddp::text::quote(kp) + ": unknown runtime " + ddp::text::quote(runtime) +
                   " (valid: " + ddp::text::join(names, ", ") + ")");
    out.push_back(runtime);
  }
  return out;
}

void decode_container(Profile& p, const StrictReader& r, const YAML::Node& value) {
  for (const auto& [k, v] : r.entries(value, "container", profile_container_keys())) {
    const std::string kp = "container." + k;
    auto strings = [&](const YAML::Node& n) { return r.strings(n, kp); };
    if (k == "runtimes")
      p.container_runtimes = merged(r, v, kp, p.container_runtimes, p,
                                    [&](const YAML::Node& n) { return decode_runtimes(r, n, kp); });
    if (k == "binds") p.container_binds = merged(r, v, kp, p.container_binds, p, strings);
    if (k == "modules") p.container_modules = merged(r, v, kp, p.container_modules, p, strings);
  }
}

std::vector<Partition> decode_partitions(const StrictReader& r, const YAML::Node& value) {
  if (!value.IsSequence() || value.size() == 0)
    r.reject(value, "partitions", "\"partitions\" must be a non-empty list");
  std::vector<Partition> out;
  for (std::size_t i = 0; i < value.size(); ++i)
    out.push_back(decode_partition(r, value[i], "partitions[" + std::to_string(i) + "]"));
  return out;
}

// The keys that hold lists, merged with the base's by merged().
void decode_lists(Profile& p, const StrictReader& r, const std::string& key,
                  const YAML::Node& value) {
  auto strings = [&](const YAML::Node& n) { return r.strings(n, key); };
  if (key == "notes") p.notes = merged(r, value, key, p.notes, p, strings);
  if (key == "sources") p.sources = merged(r, value, key, p.sources, p, strings);
  if (key == "modules") p.modules = merged(r, value, key, p.modules, p, strings);
  if (key == "module_use") p.module_use = merged(r, value, key, p.module_use, p, strings);
  if (key == "sbatch")
    p.sbatch = merged(r, value, key, p.sbatch, p, [&](const YAML::Node& n) {
      return options::decode(r, n, key, options::Source::profile_sbatch);
    });
  if (key == "partitions")
    p.partitions = merged(r, value, key, p.partitions, p,
                          [&](const YAML::Node& n) { return decode_partitions(r, n); });
  if (key == "variables")
    p.variables = merged(r, value, key, p.variables, p,
                         [&](const YAML::Node& n) { return decode_variables(r, n); });
  if (key == "container") decode_container(p, r, value);
}

void decode_into(Profile& p, const StrictReader& r, const YAML::Node& root) {
  for (const auto& [key, value] : r.entries(root, "", profile_keys())) {
    if (key == "extends") continue;
    decode_lists(p, r, key, value);
    static const std::set<std::string> by_part = {"notes",  "sources",    "modules",   "module_use",
                                                  "sbatch", "partitions", "variables", "env",
                                                  "node",   "account",    "container"};
    if (!by_part.contains(key)) p.origin[key] = origin_of(r, value, key);
    if (key == "description") p.description = r.string(value, key);
    if (key == "deprecated") p.deprecated = r.string(value, key);
    if (key == "abstract") p.abstract = r.boolean(value, key);
    if (key == "ddp_plugin") p.ddp_plugin = r.boolean(value, key);
    if (key == "fabric") p.fabric = r.choice(value, key, {"ib", "efa", "cxi", "socket"});
    if (key == "account") {
      for (const auto& [k, v] : r.entries(value, key, profile_account_keys())) {
        p.origin["account." + k] = origin_of(r, v, "account." + k);
        if (k == "required") p.account_required = r.boolean(v, "account.required");
        if (k == "hint") p.account_hint = r.string(v, "account.hint");
      }
    }
    if (key == "gpu_request") p.gpu_request = r.choice(value, key, {"gres", "gpus-per-node"});
    if (key == "gpu_vendor") p.gpu_vendor = r.choice(value, key, {"nvidia", "amd"});
    if (key == "node") {
      p.node = decode_node(r, value, key, p.node);
      for (const auto& [k, v] : r.entries(value, key, profile_node_keys()))
        p.origin["node." + k] = origin_of(r, v, "node." + k);
    }
    if (key == "cpus_per_gpu") p.cpus_per_gpu = r.integer(value, key, 0, 1024);
    if (key == "mem_per_gpu_gb") p.mem_per_gpu_gb = r.integer(value, key, 0, 100000);
    if (key == "module_purge") p.module_purge = r.boolean(value, key);
    if (key == "env") decode_site_env(r, value, p);
    if (key == "local_scratch") p.local_scratch = r.string(value, key);
    if (key == "python") p.python = r.command(value, key);
    if (key == "port_range") decode_port_range(r, value, p);
  }
}

}  // namespace

const std::vector<std::string>& profile_keys() {
  static const std::vector<std::string> keys = {
      "extends",      "description",    "deprecated",    "abstract",     "notes",      "sources",
      "ddp_plugin",   "account",        "gpu_request",   "gpu_vendor",   "node",       "partitions",
      "cpus_per_gpu", "mem_per_gpu_gb", "sbatch",        "module_purge", "module_use", "modules",
      "env",          "container",      "local_scratch", "python",       "port_range", "variables",
      "fabric"};
  return keys;
}

Result<ProfileDoc> read_profile_doc(const std::string& text, const std::string& file) {
  auto doc = parse_yaml(text, file);
  if (!doc) return std::unexpected(doc.error());
  ProfileDoc out{*doc, file, ""};
  try {
    StrictReader r(file);
    if (!out.root.IsMap()) r.reject(out.root, "", "a profile must be a mapping of keys");
    const YAML::Node& root = out.root;  // const: a lookup must not add the key
    if (root["extends"]) out.extends = r.string(root["extends"], "extends");
  } catch (const Error& error) {
    return std::unexpected(error);
  }
  return out;
}

Result<Profile> decode_profile(const ProfileDoc& doc, Profile base) {
  try {
    StrictReader r(doc.file);
    base.abstract = false;  // not inherited: a concrete profile may extend an abstract one
    decode_into(base, r, doc.root);
    if (base.partitions.empty() && !base.abstract)
      r.reject(doc.root, "", "a profile needs \"partitions\" (or extends one that has them)");
  } catch (const Error& error) {
    return std::unexpected(error);
  }
  return base;
}

}  // namespace ddpgen
