#include "gen/core/profile_show.hpp"

#include <yaml-cpp/yaml.h>

#include "gen/core/duration.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

// One YAML value in flow style, quoted where YAML needs it.
template <class T>
std::string flow(const T& value) {
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

std::string node_flow(const NodeSpec& n) {
  YAML::Emitter out;
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "gpus" << YAML::Value << n.gpus << YAML::Key
      << "gpu_type" << YAML::Value << n.gpu_type << YAML::Key << "cores" << YAML::Value << n.cores
      << YAML::Key << "memory_gb" << YAML::Value << n.memory_gb << YAML::Key << "local_disk_gb"
      << YAML::Value << n.local_disk_gb << YAML::EndMap;
  return out.c_str();
}

std::string partition_flow(const Partition& p) {
  YAML::Emitter out;
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name;
  if (!p.description.empty()) out << YAML::Key << "description" << YAML::Value << p.description;
  out << YAML::Key << "min_nodes" << YAML::Value << p.min_nodes;
  if (p.max_nodes > 0) out << YAML::Key << "max_nodes" << YAML::Value << p.max_nodes;
  if (p.max_time > 0) out << YAML::Key << "max_time" << YAML::Value << duration::format(p.max_time);
  if (p.min_gpus > 0) out << YAML::Key << "min_gpus" << YAML::Value << p.min_gpus;
  if (p.max_gpus > 0) out << YAML::Key << "max_gpus" << YAML::Value << p.max_gpus;
  if (p.test) out << YAML::Key << "test" << YAML::Value << true;
  if (!p.constraint.empty()) out << YAML::Key << "constraint" << YAML::Value << p.constraint;
  if (!p.sbatch.empty()) out << YAML::Key << "sbatch" << YAML::Value << p.sbatch;
  if (p.site_chooses) out << YAML::Key << "site_chooses" << YAML::Value << true;
  out << YAML::EndMap;
  std::string text = out.c_str();
  if (p.node) text.insert(text.size() - 1, ", node: " + node_flow(*p.node));
  return text;
}

class Writer {
 public:
  explicit Writer(const Profile& p) : p_(p) {}
  // "key: value  # origin", when key was set somewhere in the chain.
  // origin_key ending in '.': the first origin of a key under it ("node." for node.gpus).
  void line(const std::string& key, const std::string& value, const std::string& origin_key = "") {
    const std::string want = origin_key.empty() ? key : origin_key;
    auto it = p_.origin.lower_bound(want);
    const bool found = it != p_.origin.end() &&
                       (it->first == want || (want.ends_with('.') && it->first.starts_with(want)));
    out_ += key + ": " + value + (found ? "  # " + it->second : "  # default") + "\n";
  }
  std::string& text() { return out_; }

 private:
  const Profile& p_;
  std::string out_;
};

void write_lists(Writer& w, const Profile& p) {
  w.line("notes", flow(p.notes));
  w.line("sources", flow(p.sources));
  w.line("sbatch", flow(p.sbatch));
  w.line("module_purge", p.module_purge ? "true" : "false");
  w.line("module_use", flow(p.module_use));
  w.line("modules", flow(p.modules));
  w.line("variables", flow(p.variables));
  w.text() += p.env.empty() ? "env: {}\n" : "env:\n";
  for (const auto& [name, value] : p.env) {
    const auto it = p.origin.find("env." + name);
    w.text() += "  " + name + ": " + flow(value) + "  # " +
                (it == p.origin.end() ? "?" : it->second) + "\n";
  }
  w.text() += "container:\n";
  w.line("  runtimes", flow(p.container_runtimes), "container.runtimes");
  w.line("  binds", flow(p.container_binds), "container.binds");
  w.line("  modules", flow(p.container_modules), "container.modules");
}

}  // namespace

std::string show_profile(const Profile& p, const std::vector<std::string>& files) {
  Writer w(p);
  w.text() = "# The effective profile " + ddp::text::quote(p.name) + " from " +
             ddp::text::join(files, " < ") +
             " (each value's origin after its #; \"default\": ddpgen's own).\n";
  w.line("description", flow(p.description));
  if (!p.deprecated.empty()) w.line("deprecated", flow(p.deprecated));
  w.line("ddp_plugin", p.ddp_plugin ? "true" : "false");
  w.line("account",
         "{required: " + std::string(p.account_required ? "true" : "false") +
             ", hint: " + flow(p.account_hint) + "}",
         "account.");
  w.line("gpu_request", p.gpu_request);
  w.line("gpu_vendor", p.gpu_vendor);
  w.line("node", node_flow(p.node), "node.");
  w.text() += "partitions:";
  const auto it = p.origin.find("partitions");
  w.text() += "  # " + (it == p.origin.end() ? std::string("none") : it->second) + "\n";
  for (const auto& part : p.partitions) w.text() += "  - " + partition_flow(part) + "\n";
  w.line("cpus_per_gpu", std::to_string(p.cpus_per_gpu));
  w.line("mem_per_gpu_gb", std::to_string(p.mem_per_gpu_gb));
  write_lists(w, p);
  w.line("local_scratch", flow(p.local_scratch));
  w.line("python", flow(p.python));
  w.line("port_range", std::to_string(p.port_first) + "-" + std::to_string(p.port_last));
  return w.text();
}

}  // namespace ddpgen
