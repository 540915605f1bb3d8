// Strict YAML decoding: unknown keys are errors with a did-you-mean, types are checked, and every
// error carries the FILE:LINE:COL of the offending node (yaml-cpp counts from 0; we add 1).
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddpgen {

// The project's one error vocabulary (contrib/libddp/util/result.hpp), used here unqualified.
using ddp::Error;
using ddp::Location;
using ddp::Result;

// Reads typed values out of one YAML document. Every failure throws a ddp::Error (a decoder is
// deep recursion over typed reads, where an early exit keeps each read one line); the public
// decoders catch it and return Result, so no exception leaves the core. Values overridden on the
// command line (--set) report the override instead of a file position.
class StrictReader {
 public:
  // file: the name used in messages; overrides: key path -> label such as "--set nodes=3".
  StrictReader(std::string file, std::map<std::string, std::string> overrides = {});

  // Location of node, which was found at key path (dotted) in the document.
  Location where(const YAML::Node& node, const std::string& path) const;
  // Location of the document's start, for values that were not given at all.
  Location file_start() const { return {file_, 1, 1}; }

  // Throws a ddp::Error at node/path with message.
  [[noreturn]] void reject(const YAML::Node& node, const std::string& path,
                           const std::string& message) const;

  // Checks that node is a mapping whose keys are all in allowed, with no duplicates; returns
  // its entries in file order.
  std::vector<std::pair<std::string, YAML::Node>> entries(
      const YAML::Node& node, const std::string& path,
      const std::vector<std::string>& allowed) const;

  // Typed reads of a scalar (or sequence/mapping) found at path.
  std::string string(const YAML::Node& node, const std::string& path) const;
  long integer(const YAML::Node& node, const std::string& path, long min, long max) const;
  bool boolean(const YAML::Node& node, const std::string& path) const;
  std::vector<std::string> strings(const YAML::Node& node, const std::string& path) const;
  // An ordered string -> string mapping; keys must be environment variable names, none that
  // the generated script relies on (refs::reserved).
  std::vector<std::pair<std::string, std::string>> env_map(const YAML::Node& node,
                                                           const std::string& path) const;
  // A scalar that must be one of choices.
  std::string choice(const YAML::Node& node, const std::string& path,
                     std::initializer_list<std::string_view> choices) const;
  std::string choice(const YAML::Node& node, const std::string& path,
                     const std::vector<std::string>& choices) const;
  // Shell lines: one string (a "|" block holds several) or a list of strings, one per line.
  std::vector<std::string> lines(const YAML::Node& node, const std::string& path) const;
  // Words: a list, or one string split at spaces ("python3 -u" is two words).
  std::vector<std::string> words(const YAML::Node& node, const std::string& path) const;
  // A command's words (as words()): at least one, the first not starting with '-'.
  std::vector<std::string> command(const YAML::Node& node, const std::string& path) const;

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::map<std::string, std::string> overrides_;
};

// Parses text into a YAML document, with a located error on a syntax error.
Result<YAML::Node> parse_yaml(const std::string& text, const std::string& file);

}  // namespace ddpgen
