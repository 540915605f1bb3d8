#include "gen/core/settings.hpp"

#include "gen/core/duration.hpp"
#include "libddp/util/seconds.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::settings {
namespace {

// seconds in its largest whole unit: 1s, 90s, 5m, 1h, 2d.
std::string seconds_text(long seconds) {
  for (auto [unit, size] : {std::pair{'d', 86400L}, {'h', 3600L}, {'m', 60L}})
    if (seconds >= size && seconds % size == 0) return std::to_string(seconds / size) + unit;
  return std::to_string(seconds) + "s";
}

}  // namespace

Type Type::bounded(Kind kind, long min, long max) {
  Type type(kind);
  type.min = min;
  type.max = max;
  return type;
}

Type Type::one_of(Kind kind, std::vector<std::string> choices) {
  Type type(kind);
  type.choices = std::move(choices);
  return type;
}

Type Type::nested(Kind kind, std::string section, bool merged) {
  Type type(kind);
  type.section = std::move(section);
  type.merged = merged;
  return type;
}

std::string key_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::vector<std::string> key_paths(const Catalog& catalog, const std::string& top) {
  std::vector<std::string> out;
  for (const auto& field : catalog.at(top)) {
    out.push_back(field.name);
    const Kind kind = field.type.kind;
    if (kind != Kind::section && kind != Kind::section_or_boolean) continue;
    for (const auto& sub : catalog.at(field.type.section))
      out.push_back(field.name + "." + sub.name);
  }
  return out;
}

long read_duration(const StrictReader& r, const YAML::Node& node, const std::string& path, long min,
                   long max) {
  const std::string text = r.string(node, path);
  auto seconds = ddp::parse_seconds(text, ddp::text::quote(path));
  if (!seconds) r.reject(node, path, seconds.error().message);
  if (max > 0 && (*seconds < min || *seconds > max))
    r.reject(node, path,
             ddp::text::quote(path) + " must be from " + seconds_text(min) + " to " +
                 seconds_text(max) + ", got " + ddp::text::quote(text));
  return *seconds;
}

long read_time(const StrictReader& r, const YAML::Node& node, const std::string& path) {
  const std::string text = r.string(node, path);
  auto seconds = duration::parse(text);
  if (!seconds)
    r.reject(node, path,
             ddp::text::quote(path) + ": malformed time " + ddp::text::quote(text) +
                 " (expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
  return *seconds;
}

// A share of the median, as ddp-check --pairs-threshold reads it.
double read_share(const StrictReader& r, const YAML::Node& node, const std::string& path) {
  const std::string text = r.string(node, path);
  const auto share = ddp::text::parse_share(text);
  if (!share)
    r.reject(node, path,
             ddp::text::quote(path) +
                 " must be a share of the median, greater than 0 and less than 1 (e.g. 0.5), "
                 "got " +
                 ddp::text::quote(text));
  return *share;
}

}  // namespace ddpgen::settings
