#include "gen/core/job.hpp"

#include "gen/core/job_keys.hpp"
#include "gen/core/yaml_strict.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {

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

// The top level: "key:" with no value (or --set key=) is as if not given. script is required,
// with its own advice.
void decode_into(Job& job, const StrictReader& r, const YAML::Node& root) {
  const auto& table = job_table();
  for (const auto& [key, value] : r.entries(root, "", table.names())) {
    job.where[key] = r.where(value, key);
    if (!value.IsNull()) table.at(key).set(job, r, value, key);
  }
  if (job.script.empty())
    throw Error{"\"script\" is required (the program to run)", job.at("script")};
}

}  // namespace

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
