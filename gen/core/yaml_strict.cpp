#include "gen/core/yaml_strict.hpp"

#include <algorithm>
#include <set>

#include "gen/core/references.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return ddp::text::quote(node.Scalar());
  }
}

}  // namespace

StrictReader::StrictReader(std::string file, std::map<std::string, std::string> overrides)
    : file_(std::move(file)), overrides_(std::move(overrides)) {}

Location StrictReader::where(const YAML::Node& node, const std::string& path) const {
  // An override of "checkpoint" also covers "checkpoint.dir".
  for (const auto& [key, label] : overrides_) {
    if (path == key || path.starts_with(key + ".")) return {label, 0, 0};
  }
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return file_start();
  return {file_, mark.line + 1, mark.column + 1};
}

void StrictReader::reject(const YAML::Node& node, const std::string& path,
                          const std::string& message) const {
  throw Error{message, where(node, path)};
}

std::vector<std::pair<std::string, YAML::Node>> StrictReader::entries(
    const YAML::Node& node, const std::string& path,
    const std::vector<std::string>& allowed) const {
  const std::string what = path.empty() ? "the document" : ddp::text::quote(path);
  if (!node.IsMap())
    reject(node, path, what + " must be a mapping of keys, got " + kind_name(node));
  std::vector<std::pair<std::string, YAML::Node>> out;
  std::set<std::string> seen;
  for (const auto& item : node) {
    if (!item.first.IsScalar()) reject(item.first, path, "keys must be plain names");
    const std::string key = item.first.Scalar();
    const std::string full = join_path(path, key);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string message = "unknown key " + ddp::text::quote(full);
      std::string close = ddp::text::did_you_mean(key, allowed);
      if (!close.empty())
        message += " (did you mean " + ddp::text::quote(join_path(path, close)) + "?)";
      reject(item.first, full, message);
    }
    if (!seen.insert(key).second)
      reject(item.first, full, "duplicate key " + ddp::text::quote(full));
    out.emplace_back(key, item.second);
  }
  return out;
}

std::string StrictReader::string(const YAML::Node& node, const std::string& path) const {
  if (!node.IsScalar())
    reject(node, path, ddp::text::quote(path) + " must be a single value, got " + kind_name(node));
  const std::string& value = node.Scalar();
  // Tabs and newlines are fine in quoted words; other control characters are refused: they
  // cannot be passed through every layer (bash, sbatch, logs) unchanged.
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f)
      reject(node, path,
             ddp::text::quote(path) + " contains a control character (" +
                 ddp::text::printable(std::string_view(&c, 1)) + ")");
  }
  return value;
}

long StrictReader::integer(const YAML::Node& node, const std::string& path, long min,
                           long max) const {
  const std::string text = string(node, path);
  // At most 9 digits: any such number fits a long, larger ones are refused as out of range.
  const auto number = text.size() <= 9 ? ddp::text::parse_uint<std::uint32_t>(text) : std::nullopt;
  const long value = number ? static_cast<long>(*number) : 0;
  if (!number || value < min || value > max)
    reject(node, path,
           ddp::text::quote(path) + " must be an integer from " + std::to_string(min) + " to " +
               std::to_string(max) + ", got " + ddp::text::quote(text));
  return value;
}

bool StrictReader::boolean(const YAML::Node& node, const std::string& path) const {
  const std::string text = string(node, path);
  if (text == "true") return true;
  if (text == "false") return false;
  reject(node, path,
         ddp::text::quote(path) + " must be true or false, got " + ddp::text::quote(text));
}

std::vector<std::string> StrictReader::strings(const YAML::Node& node,
                                               const std::string& path) const {
  if (node.IsNull()) return {};
  if (!node.IsSequence())
    reject(node, path, ddp::text::quote(path) + " must be a list, got " + kind_name(node));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i)
    out.push_back(string(node[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

std::vector<std::pair<std::string, std::string>> StrictReader::env_map(
    const YAML::Node& node, const std::string& path) const {
  if (node.IsNull()) return {};
  if (!node.IsMap())
    reject(node, path,
           ddp::text::quote(path) + " must be a mapping of NAME: value, got " + kind_name(node));
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  for (const auto& item : node) {
    const std::string key = item.first.IsScalar() ? item.first.Scalar() : "";
    if (!ddp::is_env_name(key))
      reject(item.first, path,
             ddp::text::quote(path) + ": " + ddp::text::quote(key) +
                 " is not a variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
    if (!seen.insert(key).second)
      reject(item.first, path, "duplicate variable " + ddp::text::quote(key));
    if (auto why = refs::reserved(key))
      reject(item.first, path, ddp::text::quote(path + "." + key) + " cannot be set: " + *why);
    out.emplace_back(key, string(item.second, path + "." + key));
  }
  return out;
}

std::string StrictReader::choice(const YAML::Node& node, const std::string& path,
                                 std::initializer_list<std::string_view> choices) const {
  const std::string text = string(node, path);
  std::string valid;
  for (auto c : choices) {
    if (text == c) return text;
    valid += (valid.empty() ? "" : ", ") + std::string(c);
  }
  reject(node, path,
         ddp::text::quote(path) + ": unknown value " + ddp::text::quote(text) +
             " (valid: " + valid + ")");
}

std::string StrictReader::choice(const YAML::Node& node, const std::string& path,
                                 const std::vector<std::string>& choices) const {
  const std::string text = string(node, path);
  if (std::find(choices.begin(), choices.end(), text) != choices.end()) return text;
  reject(node, path,
         ddp::text::quote(path) + ": unknown value " + ddp::text::quote(text) +
             " (valid: " + ddp::text::join(choices, ", ") + ")");
}

std::vector<std::string> StrictReader::lines(const YAML::Node& node,
                                             const std::string& path) const {
  // A "|" block ends with a newline, which the script's own line end already gives.
  auto out = node.IsScalar() ? std::vector<std::string>{string(node, path)} : strings(node, path);
  for (auto& line : out)
    while (line.ends_with('\n')) line.pop_back();
  return out;
}

std::vector<std::string> StrictReader::words(const YAML::Node& node,
                                             const std::string& path) const {
  if (!node.IsScalar()) return strings(node, path);
  std::vector<std::string> out;
  const std::string text = string(node, path);  // split() returns views into it
  for (auto word : ddp::text::split(text, ' '))
    if (!word.empty()) out.emplace_back(word);
  return out;
}

std::vector<std::string> StrictReader::command(const YAML::Node& node,
                                               const std::string& path) const {
  auto out = words(node, path);
  if (out.empty() || out.front().empty() || out.front().starts_with("-"))
    reject(node, path,
           ddp::text::quote(path) +
               " must name a program first (e.g. python3 or \"python3 -u\"), not be " +
               "empty or start with '-'");
  return out;
}

Result<YAML::Node> parse_yaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Location where{file, 1, 1};
    if (!e.mark.is_null()) where = {file, e.mark.line + 1, e.mark.column + 1};
    // yaml-cpp quotes the offending character raw; a control character must not reach a terminal.
    return ddp::fail(where, "YAML syntax error: " + ddp::text::printable(e.msg));
  }
}

}  // namespace ddpgen
