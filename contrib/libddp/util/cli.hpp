// One table of command-line options per program (git's parse-options, clang's Options.td):
// each row is a long name, the kind of value with its bounds or choices, the environment
// variable read when the option is not given, the help text and a setter into the program's
// Options struct. Parsing (--opt=value and --opt value), the usage text and did-you-mean for an
// unknown option all come from the table, so an option is declared once. Pure: the environment
// comes in through a lookup function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp::cli {

// What an option's value is, and how it is checked.
enum class Kind {
  flag,      // no value: --pairs
  number,    // a whole number from min to max (text::parse_unsigned), or one of `words`
  positive,  // a positive decimal, at most max when max > 0: ddp-check's seconds, GB/s
  share,     // a share, above 0 and below 1 (text::parse_share)
  duration,  // 90, 90s, 5m, 1h30m (ddp::parse_seconds), in seconds
  choice,    // one of `words`
  text,      // any text; not empty when `expect` says what was expected, checked by `check`
  file,      // a file name: neither empty nor "--" (a value that swallowed the separator)
  optional,  // a flag, or with a value: --opt=VALUE, or --opt VALUE when VALUE is no option
};

// Where a row appears: usage, did-you-mean and the man page lint, or only some of them.
enum class Shown {
  everywhere,
  not_in_usage,  // a known option that another row's usage line names (--version beside --help)
  nowhere,       // internal: parsed, never suggested or documented
};

// A value as the table read it, handed to the row's setter.
struct Value {
  std::string_view text;     // as given
  std::uint64_t number = 0;  // number, duration (seconds); choice and number's words: the index
  double decimal = 0;        // positive, share
  bool word = false;         // number: one of the row's words, not digits
  bool given = true;         // optional: false when the option came without a value
};

// One option, without the setter (which depends on the program's Options type).
struct Spec {
  std::string_view name;  // "--timeout"
  Kind kind = Kind::flag;
  std::string_view arg = {};   // the value's name in the usage text: "SECONDS", "ib|efa"
  std::string_view help = {};  // the usage text; '\n' starts a continuation line
  std::string_view env = {};   // the variable read when the option is not given
  std::uint64_t min = 0;       // number: the smallest
  std::uint64_t max = 0;       // number: the largest; positive: the largest, 0 for none
  std::span<const std::string_view> words = {};  // choice: the choices; number: words as well
  std::string_view expect = {};  // positive, share, text: what an error says was expected;
                                 // choice: the noun ("mode" in `unknown mode (valid: ...)`)
  Result<void> (*check)(std::string_view) = nullptr;  // text: validation; "NAME: " + message
  std::string_view alias = {};                        // a short name: "-h"
  std::string_view usage_name = {};                   // the usage's left column when not "NAME ARG"
  Shown shown = Shown::everywhere;
};

// A row of a program's table.
template <class Options>
struct Option {
  Spec spec;
  void (*set)(Options&, const Value&) = nullptr;
};

// How one program words its messages and where its options end.
struct Style {
  std::string_view prefix;  // before every message: "ddp-watch: "
  // The message for an unknown option `arg`; `near` is the closest name, or empty.
  std::string (*unknown)(std::string_view arg, std::string_view near) = nullptr;
  // The message for an option given last without its value.
  std::string (*missing)(std::string_view name) = nullptr;
  bool stop_at_operand = false;  // the first word that is not an option (or "--") ends them
  std::size_t usage_width = 24;  // the usage text's left column, after its two spaces
};

// Looks up one environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// Called with the row index and the value of each option read.
using Sink = std::function<void(std::size_t row, const Value& value)>;

// Reads the environment fallbacks of every row (a variable holding empty text counts as unset
// for text and file rows), then `args`. Returns the index of the first operand: args.size()
// without stop_at_operand, else the word after "--" or the first word that is no option.
Result<std::size_t> parse(std::span<const Spec* const> specs, const Style& style,
                          std::span<const std::string_view> args, const EnvLookup& env,
                          const Sink& sink);

// The option lines of a usage text: "  --timeout SECONDS   help", continuation lines indented.
std::string usage(std::span<const Spec* const> specs, const Style& style);

// The names a person may use (rows not Shown::nowhere), for did-you-mean and the man page lint.
std::vector<std::string_view> names(std::span<const Spec* const> specs);

// The specs of a program's table, in its order.
template <class Options>
std::vector<const Spec*> specs(std::span<const Option<Options>> table) {
  std::vector<const Spec*> out;
  out.reserve(table.size());
  for (const auto& row : table) out.push_back(&row.spec);
  return out;
}

// parse() into `out` through the rows' setters.
template <class Options>
Result<std::size_t> parse(std::span<const Option<Options>> table, const Style& style,
                          std::span<const std::string_view> args, const EnvLookup& env,
                          Options& out) {
  const auto rows = specs(table);
  return parse(rows, style, args, env,
               [&](std::size_t row, const Value& value) { table[row].set(out, value); });
}

}  // namespace ddp::cli
