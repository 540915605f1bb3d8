#include "yaml_strict.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "shell.hpp"

namespace ddpgen {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

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
      return "\"" + node.Scalar() + "\"";
  }
}

}  // namespace

std::string did_you_mean(std::string_view key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    std::size_t d = edit_distance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

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

void StrictReader::fail(const YAML::Node& node, const std::string& path,
                        const std::string& message) const {
  throw DecodeFailure{{where(node, path), message}};
}

std::vector<std::pair<std::string, YAML::Node>> StrictReader::entries(
    const YAML::Node& node, const std::string& path,
    const std::vector<std::string>& allowed) const {
  const std::string what = path.empty() ? "the document" : "\"" + path + "\"";
  if (!node.IsMap()) fail(node, path, what + " must be a mapping of keys, got " + kind_name(node));
  std::vector<std::pair<std::string, YAML::Node>> out;
  std::set<std::string> seen;
  for (const auto& item : node) {
    if (!item.first.IsScalar()) fail(item.first, path, "keys must be plain names");
    const std::string key = item.first.Scalar();
    const std::string full = join_path(path, key);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string message = "unknown key \"" + shell::comment_safe(full) + "\"";
      std::string close = did_you_mean(key, allowed);
      if (!close.empty()) message += " (did you mean \"" + join_path(path, close) + "\"?)";
      fail(item.first, full, message);
    }
    if (!seen.insert(key).second) fail(item.first, full, "duplicate key \"" + full + "\"");
    out.emplace_back(key, item.second);
  }
  return out;
}

std::string StrictReader::string(const YAML::Node& node, const std::string& path) const {
  if (!node.IsScalar())
    fail(node, path, "\"" + path + "\" must be a single value, got " + kind_name(node));
  const std::string& value = node.Scalar();
  // Tabs and newlines are fine in quoted words; other control characters are refused: they
  // cannot be passed through every layer (bash, sbatch, logs) unchanged.
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", u);
      fail(node, path, "\"" + path + "\" contains a control character (" + hex + ")");
    }
  }
  return value;
}

long StrictReader::integer(const YAML::Node& node, const std::string& path, long min,
                           long max) const {
  const std::string text = string(node, path);
  long value = 0;
  bool ok = !text.empty() && text.size() <= 9;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (ok) value = std::stol(text);
  if (!ok || value < min || value > max)
    fail(node, path,
         "\"" + path + "\" must be an integer from " + std::to_string(min) + " to " +
             std::to_string(max) + ", got \"" + shell::comment_safe(text) + "\"");
  return value;
}

bool StrictReader::boolean(const YAML::Node& node, const std::string& path) const {
  const std::string text = string(node, path);
  if (text == "true") return true;
  if (text == "false") return false;
  fail(node, path,
       "\"" + path + "\" must be true or false, got \"" + shell::comment_safe(text) + "\"");
}

std::vector<std::string> StrictReader::strings(const YAML::Node& node,
                                               const std::string& path) const {
  if (node.IsNull()) return {};
  if (!node.IsSequence())
    fail(node, path, "\"" + path + "\" must be a list, got " + kind_name(node));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i)
    out.push_back(string(node[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

std::vector<std::pair<std::string, std::string>> StrictReader::env_map(
    const YAML::Node& node, const std::string& path) const {
  if (node.IsNull()) return {};
  if (!node.IsMap())
    fail(node, path, "\"" + path + "\" must be a mapping of NAME: value, got " + kind_name(node));
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  for (const auto& item : node) {
    const std::string key = item.first.IsScalar() ? item.first.Scalar() : "";
    if (!shell::is_env_name(key))
      fail(item.first, path,
           "\"" + path + "\": \"" + shell::comment_safe(key) +
               "\" is not a variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
    if (!seen.insert(key).second) fail(item.first, path, "duplicate variable \"" + key + "\"");
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
  fail(node, path,
       "\"" + path + "\": unknown value \"" + shell::comment_safe(text) + "\" (valid: " + valid +
           ")");
}

Result<YAML::Node> parse_yaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Location where{file, 1, 1};
    if (!e.mark.is_null()) where = {file, e.mark.line + 1, e.mark.column + 1};
    return std::unexpected(Error{where, "YAML syntax error: " + e.msg});
  }
}

}  // namespace ddpgen
