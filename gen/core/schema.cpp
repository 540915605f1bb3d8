#include "gen/core/schema.hpp"

#include "gen/core/job_keys.hpp"
#include "gen/core/profile_keys.hpp"

namespace ddpgen {
namespace {

using settings::Kind;

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
// A sweep's parameters: NAME -> a non-empty list of values.
const std::string k_lists =
    R"({"type": "object", "minProperties": 1, )"
    R"("propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}, )"
    R"("additionalProperties": {"type": "array", "minItems": 1, "items": )" +
    k_scalar + "}}";
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

std::string integer(long min, long max) {
  return R"({"type": ["integer", "string"], "pattern": "^[0-9]{1,9}$", "minimum": )" +
         std::to_string(min) + R"(, "maximum": )" + std::to_string(max) + "}";
}

std::string choice(const std::vector<std::string>& values) {
  std::string out = R"({"enum": [)";
  for (const auto& v : values) out += (out.back() == '[' ? "\"" : ", \"") + v + "\"";
  return out + "]}";
}

std::string quoted(const std::string& text) {
  return "\"" + text + "\"";  // JSON: the keys are plain names
}

// The JSON of a value of type; a section's from its table in catalog.
struct Builder {
  const settings::Catalog& catalog;

  // The schema of one mapping, indented by indent.
  std::string object(const std::string& name, const std::string& indent) const {
    const settings::Fields& fields = catalog.at(name);
    std::string out = "{\n" + indent + R"(  "type": "object", "additionalProperties": false,)";
    std::string required;
    for (const auto& field : fields)
      if (field.required) required += (required.empty() ? "" : ", ") + quoted(field.name);
    if (!required.empty()) out += "\n" + indent + R"(  "required": [)" + required + "],";
    out += "\n" + indent + R"(  "properties": {)";
    for (const auto& field : fields)
      out += (&field == &fields.front() ? "\n" : ",\n") + indent + "    " + quoted(field.name) +
             ": " + value(field.type, indent + "    ");
    return out + "\n" + indent + "  }\n" + indent + "}";
  }

  std::string value(const settings::Type& type, const std::string& indent) const {
    const std::string list = item_list(type, indent);
    if (!list.empty()) return type.merged ? merge_list(list) : list;
    return scalar(type, indent);
  }

  // The list kinds, or empty for the others.
  std::string item_list(const settings::Type& type, const std::string& indent) const {
    switch (type.kind) {
      case Kind::strings:
        return k_strings;
      case Kind::choices:
        return R"({"type": ["array", "null"], "items": )" + choice(type.choices) + "}";
      case Kind::sections:
        return R"({"type": "array", "minItems": 1, "items": )" + object(type.section, indent) + "}";
      default:
        return "";
    }
  }

  std::string scalar(const settings::Type& type, const std::string& indent) const {
    switch (type.kind) {
      case Kind::integer:
        return integer(type.min, type.max);
      case Kind::boolean:
        return k_boolean;
      case Kind::choice:
        return choice(type.choices);
      case Kind::duration:
        return k_duration;
      case Kind::time:
        return k_time;
      case Kind::share:
        return k_share;
      case Kind::range:
        return R"({"type": "string", "pattern": "^[0-9]+-[0-9]+$"})";
      case Kind::lines:
      case Kind::words:
      case Kind::command:
        return k_string_or_list;
      case Kind::env:
        return k_env;
      case Kind::lists:
        return k_lists;
      case Kind::section:
        return object(type.section, indent);
      case Kind::section_or_boolean:
        return R"({"anyOf": [)" + k_boolean + ", " + object(type.section, indent) + "]}";
      default:
        return k_scalar;
    }
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
  const Builder b{job ? job_catalog() : profile_catalog()};
  std::string body = b.object(job ? "job" : "profile", "  ");
  // A concrete profile needs partitions, its own or inherited (decode_profile says the same).
  if (!job)
    body += R"(, {"anyOf": [{"required": ["partitions"]}, {"required": ["extends"]}, )"
            R"({"required": ["abstract"], "properties": {"abstract": {"enum": [true, "true"]}}}]})";
  return document(job ? "job" : "profile", body);
}

std::vector<std::string> job_key_paths() {
  return settings::key_paths(job_catalog(), "job");
}

}  // namespace ddpgen
