// The site profile's keys: one row each (doc/man/ddpgen-profile.5 has a paragraph for each; the
// lint.settings_man test holds the two together), with the value readers the rows need.
#include "gen/core/profile_keys.hpp"

#include <algorithm>
#include <cctype>
#include <concepts>

#include "gen/core/options.hpp"
#include "gen/core/profile.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

using settings::Kind;
using settings::Row;
using settings::Table;
using settings::Type;

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

const Table<NodeSpec>& node_table() {
  static const Table<NodeSpec> table = {
      settings::integer("gpus", &NodeSpec::gpus, 0, 64),
      settings::member("gpu_type", {Kind::string}, &NodeSpec::gpu_type, decode_gres_type),
      settings::integer("cores", &NodeSpec::cores, 0, 100000),
      settings::integer("memory_gb", &NodeSpec::memory_gb, 0, 10000000),
      settings::integer("local_disk_gb", &NodeSpec::local_disk_gb, 0, 10000000),
  };
  return table;
}

void check_partition(const StrictReader& r, const YAML::Node& node, const std::string& path,
                     const Partition& p) {
  if (auto problem = shell::sbatch_value_problem(p.name))
    r.reject(node, path, ddp::text::quote(path + ".name") + " " + *problem);
  if (!p.constraint.empty())
    if (auto problem = shell::sbatch_value_problem(p.constraint))
      r.reject(node, path, ddp::text::quote(path + ".constraint") + " " + *problem);
  if (!p.qos.empty())
    if (auto problem = shell::sbatch_value_problem(p.qos))
      r.reject(node, path, ddp::text::quote(path + ".qos") + " " + *problem);
}

const Table<Partition>& partition_table() {
  using namespace settings;
  static const Table<Partition> table = {
      required(string("name", &Partition::name)),
      string("description", &Partition::description),
      integer("min_nodes", &Partition::min_nodes, 1, 100000),
      integer("max_nodes", &Partition::max_nodes, 1, 100000),
      time("max_time", &Partition::max_time),
      integer("min_gpus", &Partition::min_gpus, 0, 1000000),
      integer("max_gpus", &Partition::max_gpus, 1, 1000000),
      boolean("test", &Partition::test),
      string("constraint", &Partition::constraint),
      string("qos", &Partition::qos),
      custom<Partition>(
          "node", Type::nested(Kind::section, "node"),
          [](Partition& p, const StrictReader& r, const YAML::Node& v, const std::string& kp) {
            NodeSpec spec;
            node_table().decode(spec, r, v, kp);
            p.node = spec;
          }),
      custom<Partition>(
          "sbatch", {Kind::strings},
          [](Partition& p, const StrictReader& r, const YAML::Node& v, const std::string& kp) {
            p.sbatch = options::decode(r, v, kp, options::Source::profile_sbatch);
          }),
      boolean("site_chooses", &Partition::site_chooses),
  };
  return table;
}

std::vector<Partition> decode_partitions(const StrictReader& r, const YAML::Node& value,
                                         const std::string& key) {
  if (!value.IsSequence() || value.size() == 0)
    r.reject(value, key, "\"partitions\" must be a non-empty list");
  std::vector<Partition> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string path = "partitions[" + std::to_string(i) + "]";
    Partition p;
    partition_table().decode(p, r, value[i], path);
    check_partition(r, value[i], path, p);
    out.push_back(p);
  }
  return out;
}

// Site variables may reference others ($NAME), so they are not single-quoted; what bash could
// read as code is refused here, where the message can point at the value.
void decode_site_env(Profile& p, const StrictReader& r, const YAML::Node& node,
                     const std::string&) {
  for (auto& [name, v] : r.env_map(node, "env")) {
    if (auto problem = shell::site_value_problem(v))
      r.reject(node[name], "env." + name, "\"env." + name + "\" " + *problem);
    std::erase_if(p.env, [&](const auto& e) { return e.first == name; });
    p.origin["env." + name] = profile_origin(r, node[name], "env." + name);
    p.env.emplace_back(name, v);
  }
}

// Names of variables the site sets in every job; a job's values may reference them as ${NAME}.
std::vector<std::string> decode_variables(const StrictReader& r, const YAML::Node& node,
                                          const std::string& key) {
  auto names = r.strings(node, key);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!ddp::is_env_name(names[i]))
      r.reject(node[i], key,
               "\"variables\": " + ddp::text::quote(names[i]) +
                   " is not a variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
    else if (std::any_of(names[i].begin(), names[i].end(),
                         [](char c) { return c >= 'a' && c <= 'z'; }))
      r.reject(node[i], key,
               "\"variables\": " + ddp::text::quote(names[i]) +
                   " has lower-case letters: a site's variables are environment variables, "
                   "upper case ([A-Z_][A-Z0-9_]*); a script that reads a lower-case name it "
                   "never sets fails shellcheck");
  return names;
}

void decode_port_range(Profile& p, const StrictReader& r, const YAML::Node& node,
                       const std::string&) {
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

// A plain list that would silently drop its base's non-empty one is refused.
template <class T>
void refuse_dropping(const StrictReader& r, const YAML::Node& value, const std::string& key,
                     const std::vector<T>& list, const std::vector<T>& base, Profile& p) {
  bool same = false;
  if constexpr (std::equality_comparable<T>) same = list == base;
  if (!base.empty() && !same)
    r.reject(value, key,
             ddp::text::quote(key) + " would drop the list of the profile this one extends (" +
                 p.origin[key] + "): write " + ddp::text::quote(key + ": {add: [...]}") +
                 " to add to it, or " + ddp::text::quote(key + ": {replace: [...]}") +
                 " to drop it");
}

// A list over its base profile's list. A plain list may not silently drop a base's non-empty
// list (adding one sbatch option used to drop the base's --exclusive): {add: [...]} appends to
// it and {replace: [...]} says that it drops it.
template <class T, class Decode>
std::vector<T> merged(const StrictReader& r, const YAML::Node& value, const std::string& key,
                      std::vector<T> base, Profile& p, Decode decode) {
  if (!value.IsMap()) {
    std::vector<T> list = decode(r, value, key);
    refuse_dropping(r, value, key, list, base, p);
    p.origin[key] = profile_origin(r, value, key);
    return list;
  }
  const auto entries = r.entries(value, key, {"add", "replace"});
  if (entries.size() != 1)
    r.reject(value, key, ddp::text::quote(key) + " takes one of add: or replace:");
  const auto& [mode, items] = entries.front();
  std::vector<T> list = decode(r, items, key);
  if (mode == "replace") {
    p.origin[key] = profile_origin(r, items, key) + " (replaces the base's)";
    return list;
  }
  base.insert(base.end(), list.begin(), list.end());
  const std::string before = p.origin[key];
  p.origin[key] = (before.empty() ? "" : before + " + ") + profile_origin(r, items, key);
  return base;
}

// A row of a list merged over the base profile's (merged()), each part read by decode.
template <class T, class Decode>
Row<Profile> merged_list(const std::string& name, Type type, std::vector<T> Profile::*field,
                         Decode decode) {
  type.merged = true;
  return settings::custom<Profile>(name, type,
                                   [field, decode](Profile& p, const StrictReader& r,
                                                   const YAML::Node& v, const std::string& key) {
                                     p.*field = merged(r, v, key, p.*field, p, decode);
                                   });
}

Row<Profile> merged_strings(const std::string& name, std::vector<std::string> Profile::*field) {
  return merged_list(name, {Kind::strings}, field,
                     [](const StrictReader& r, const YAML::Node& n, const std::string& key) {
                       return r.strings(n, key);
                     });
}

std::vector<std::string> decode_sbatch(const StrictReader& r, const YAML::Node& n,
                                       const std::string& key) {
  return options::decode(r, n, key, options::Source::profile_sbatch);
}

const Table<Profile>& container_table() {
  static const Table<Profile> table = {
      merged_list("runtimes", Type::one_of(Kind::choices, container_runtime_names()),
                  &Profile::container_runtimes, decode_runtimes),
      merged_strings("binds", &Profile::container_binds),
      merged_strings("modules", &Profile::container_modules),
  };
  return table;
}

const Table<Profile>& account_table() {
  static const Table<Profile> table = {
      settings::boolean("required", &Profile::account_required),
      settings::string("hint", &Profile::account_hint),
  };
  return table;
}

// account: each key's origin is its own.
void set_account(Profile& p, const StrictReader& r, const YAML::Node& value,
                 const std::string& key) {
  for (const auto& [k, v] : r.entries(value, key, account_table().names())) {
    p.origin["account." + k] = profile_origin(r, v, "account." + k);
    account_table().at(k).set(p, r, v, "account." + k);
  }
}

// node: merged key by key over the base's, each key's origin its own.
void set_node(Profile& p, const StrictReader& r, const YAML::Node& value, const std::string& key) {
  node_table().decode(p.node, r, value, key);
  for (const auto& [k, v] : r.entries(value, key, node_table().names()))
    p.origin["node." + k] = profile_origin(r, v, "node." + k);
}

void set_container(Profile& p, const StrictReader& r, const YAML::Node& value,
                   const std::string& key) {
  container_table().decode(p, r, value, key);
}

// extends: read before the rest (read_profile_doc), to load the base first.
void set_nothing(Profile&, const StrictReader&, const YAML::Node&, const std::string&) {}

}  // namespace

const Table<Profile>& profile_table() {
  using namespace settings;
  static const Table<Profile> table = {
      custom<Profile>("extends", {Kind::string}, set_nothing),
      string("description", &Profile::description),
      string("deprecated", &Profile::deprecated),
      boolean("abstract", &Profile::abstract),
      merged_strings("notes", &Profile::notes),
      merged_strings("sources", &Profile::sources),
      boolean("ddp_plugin", &Profile::ddp_plugin),
      custom<Profile>("account", Type::nested(Kind::section, "account"), set_account),
      choice("gpu_request", &Profile::gpu_request, {"gres", "gpus-per-node"}),
      choice("gpu_vendor", &Profile::gpu_vendor, {"nvidia", "amd"}),
      custom<Profile>("node", Type::nested(Kind::section, "node"), set_node),
      merged_list("partitions", Type::nested(Kind::sections, "partition"), &Profile::partitions,
                  decode_partitions),
      integer("cpus_per_gpu", &Profile::cpus_per_gpu, 0, 1024),
      integer("mem_per_gpu_gb", &Profile::mem_per_gpu_gb, 0, 100000),
      merged_list("sbatch", {Kind::strings}, &Profile::sbatch, decode_sbatch),
      boolean("module_purge", &Profile::module_purge),
      merged_strings("module_use", &Profile::module_use),
      merged_strings("modules", &Profile::modules),
      custom<Profile>("env", {Kind::env}, decode_site_env),
      custom<Profile>("container", Type::nested(Kind::section, "container"), set_container),
      string("local_scratch", &Profile::local_scratch),
      command("python", &Profile::python),
      custom<Profile>("port_range", {Kind::range}, decode_port_range),
      merged_list("variables", {Kind::strings}, &Profile::variables, decode_variables),
      choice("fabric", &Profile::fabric, {"ib", "efa", "cxi", "socket"}),
  };
  return table;
}

const settings::Catalog& profile_catalog() {
  static const settings::Catalog catalog = {
      {"profile", profile_table().fields()},     {"account", account_table().fields()},
      {"node", node_table().fields()},           {"partition", partition_table().fields()},
      {"container", container_table().fields()},
  };
  return catalog;
}

std::string profile_origin(const StrictReader& r, const YAML::Node& node, const std::string& path) {
  const Location at = r.where(node, path);
  return at.file + ":" + std::to_string(at.line);
}

bool origin_by_part(const Type& type) {
  return type.merged || type.kind == Kind::env || type.kind == Kind::section;
}

// The key lists of profile.hpp, from the tables.
const std::vector<std::string>& profile_keys() {
  return profile_table().names();
}
const std::vector<std::string>& profile_node_keys() {
  return node_table().names();
}
const std::vector<std::string>& profile_partition_keys() {
  return partition_table().names();
}
const std::vector<std::string>& profile_account_keys() {
  return account_table().names();
}
const std::vector<std::string>& profile_container_keys() {
  return container_table().names();
}

}  // namespace ddpgen
