// A set of settings as one table: a row per key with its name, kind (bounds, choices), whether
// it is required, and the setter into the model struct. The strict reader decodes a mapping
// with its table; the key lists, the JSON schema, the --set key paths and the man-page lint
// read the same rows, so a new key is one row (gen/core/job_keys.cpp, profile_keys.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gen/core/model.hpp"
#include "gen/core/yaml_strict.hpp"

namespace ddpgen::settings {

enum class Kind {
  string,              // any scalar
  integer,             // within min..max
  boolean,             // true or false
  choice,              // one of choices
  duration,            // 90, 90s, 5m, 1h30m (within min..max seconds when max > 0)
  time,                // a Slurm time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
  share,               // above 0 and below 1, e.g. 0.5
  range,               // LOW-HIGH
  strings,             // a list of scalars
  choices,             // a list, each one of choices
  lines,               // shell lines: one string or a list
  words,               // words: one string split at spaces, or a list
  command,             // words, the first not an option
  env,                 // a mapping NAME -> value, NAME a variable name
  lists,               // a non-empty mapping NAME -> non-empty list of scalars
  section,             // a mapping decoded with the table named section
  section_or_boolean,  // true, false or that mapping
  sections,            // a non-empty list of such mappings
};

struct Type {
  Type(Kind k = Kind::string) : kind(k) {}  // NOLINT(google-explicit-constructor): {Kind::x}
  static Type bounded(Kind kind, long min, long max);
  static Type one_of(Kind kind, std::vector<std::string> choices);
  static Type nested(Kind kind, std::string section, bool merged = false);

  Kind kind = Kind::string;
  long min = 0;  // integer, duration
  long max = 0;
  std::vector<std::string> choices;  // choice, choices
  std::string section;               // section kinds: the nested table's name in its catalog
  bool merged = false;  // a profile list over its base's: itself, {add: ...} or {replace: ...}
};

// Decodes value, found at key path, into out.
template <class T>
using Setter =
    std::function<void(T& out, const StrictReader& r, const YAML::Node& value, const std::string&)>;

template <class T>
struct Row {
  std::string name;
  Type type;
  Setter<T> set;
  bool required = false;
};

// A row as the schema, the key paths and the man-page lint see it, without its setter.
struct Field {
  std::string name;
  Type type;
  bool required = false;
};
using Fields = std::vector<Field>;
// The tables of one file by name; the top level is named after the file ("job", "profile").
using Catalog = std::map<std::string, Fields>;

// path.key, or key at the top level (empty path).
std::string key_path(const std::string& path, const std::string& key);

template <class T>
class Table {
 public:
  Table(std::initializer_list<Row<T>> rows) : rows_(rows) {
    for (const auto& row : rows_) names_.push_back(row.name);
  }
  // The key names in the table's order: what the reader accepts and suggests from.
  const std::vector<std::string>& names() const { return names_; }
  // The row of key, which must be one of names().
  const Row<T>& at(const std::string& key) const {
    return *std::ranges::find(rows_, key, &Row<T>::name);
  }
  Fields fields() const {
    Fields out;
    for (const auto& row : rows_) out.push_back({row.name, row.type, row.required});
    return out;
  }
  // Decodes the mapping node found at path into out, key by key in file order; an unknown key
  // is an error with a did-you-mean (StrictReader::entries).
  void decode(T& out, const StrictReader& r, const YAML::Node& node,
              const std::string& path) const {
    for (const auto& [key, value] : r.entries(node, path, names_))
      at(key).set(out, r, value, key_path(path, key));
  }

 private:
  std::vector<Row<T>> rows_;
  std::vector<std::string> names_;
};

// Key paths of a catalog's top level (named top), with a dotted path for each key of a nested
// section ("checkpoint.requeue"), in table order: what --set accepts, for completion.
std::vector<std::string> key_paths(const Catalog& catalog, const std::string& top);

// The value readers of the kinds StrictReader does not read itself; each rejects a bad value
// naming path.
long read_duration(const StrictReader& r, const YAML::Node& node, const std::string& path,
                   long min = 0, long max = 0);
long read_time(const StrictReader& r, const YAML::Node& node, const std::string& path);
double read_share(const StrictReader& r, const YAML::Node& node, const std::string& path);

// Rows from a member pointer and a reader of the value.
template <class T, class F, class Read>
Row<T> member(std::string name, Type type, F T::*field, Read read) {
  return {std::move(name), std::move(type),
          [field, read](T& out, const StrictReader& r, const YAML::Node& value,
                        const std::string& path) { out.*field = read(r, value, path); }};
}

template <class T, class F>
Row<T> string(std::string name, F T::*field) {
  return member(std::move(name), {Kind::string}, field,
                [](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return r.string(v, p);
                });
}

template <class T, class F>
Row<T> integer(std::string name, F T::*field, long min, long max) {
  return member(std::move(name), Type::bounded(Kind::integer, min, max), field,
                [min, max](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return r.integer(v, p, min, max);
                });
}

template <class T>
Row<T> boolean(std::string name, bool T::*field) {
  return member(std::move(name), {Kind::boolean}, field,
                [](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return r.boolean(v, p);
                });
}

template <class T>
Row<T> choice(std::string name, std::string T::*field, std::vector<std::string> choices) {
  return member(std::move(name), Type::one_of(Kind::choice, choices), field,
                [choices](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return r.choice(v, p, choices);
                });
}

template <class T>
Row<T> duration(std::string name, long T::*field, long min = 0, long max = 0) {
  return member(std::move(name), Type::bounded(Kind::duration, min, max), field,
                [min, max](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return read_duration(r, v, p, min, max);
                });
}

template <class T>
Row<T> time(std::string name, long T::*field) {
  return member(std::move(name), {Kind::time}, field, read_time);
}

template <class T, class F>
Row<T> share(std::string name, F T::*field) {
  return member(std::move(name), {Kind::share}, field, read_share);
}

// A row read by one of StrictReader's list reads (strings, lines, words, command).
using ListRead = std::vector<std::string> (StrictReader::*)(const YAML::Node&,
                                                            const std::string&) const;
template <class T>
Row<T> list(std::string name, Kind kind, std::vector<std::string> T::*field, ListRead read) {
  return member(std::move(name), kind, field,
                [read](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return (r.*read)(v, p);
                });
}
template <class T>
Row<T> strings(std::string name, std::vector<std::string> T::*field) {
  return list(std::move(name), Kind::strings, field, &StrictReader::strings);
}
template <class T>
Row<T> lines(std::string name, std::vector<std::string> T::*field) {
  return list(std::move(name), Kind::lines, field, &StrictReader::lines);
}
template <class T>
Row<T> words(std::string name, std::vector<std::string> T::*field) {
  return list(std::move(name), Kind::words, field, &StrictReader::words);
}
template <class T>
Row<T> command(std::string name, std::vector<std::string> T::*field) {
  return list(std::move(name), Kind::command, field, &StrictReader::command);
}

template <class T>
Row<T> env(std::string name, EnvList T::*field) {
  return member(std::move(name), {Kind::env}, field,
                [](const StrictReader& r, const YAML::Node& v, const std::string& p) {
                  return r.env_map(v, p);
                });
}

// A nested mapping decoded with table, then checked as a whole by check(r, node, value) (the
// rules between its keys); the row's key names the section in its catalog.
template <class T, class S, class Check>
Row<T> section(std::string name, std::optional<S> T::*field, const Table<S>& table, Check check) {
  Type type = Type::nested(Kind::section, name);
  return {std::move(name), std::move(type),
          [field, &table, check](T& out, const StrictReader& r, const YAML::Node& value,
                                 const std::string& path) {
            S decoded;
            table.decode(decoded, r, value, path);
            check(r, value, decoded);
            out.*field = std::move(decoded);
          }};
}

// No rule between the keys of a section.
inline constexpr auto k_no_check = [](const StrictReader&, const YAML::Node&, const auto&) {};

// A row with any setter.
template <class T>
Row<T> custom(std::string name, Type type, Setter<T> set) {
  return {std::move(name), std::move(type), std::move(set)};
}

// row, required: the schema says so (the check itself is the decoder's, with its own message).
template <class T>
Row<T> required(Row<T> row) {
  row.required = true;
  return row;
}

}  // namespace ddpgen::settings
