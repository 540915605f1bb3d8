#include "libddp/util/cli.hpp"

#include <algorithm>

#include "libddp/util/seconds.hpp"
#include "libddp/util/text.hpp"

namespace ddp::cli {
namespace {

// `what "value": expect`, the form of every value error but the text kinds'.
std::string bad_value(std::string_view what, std::string_view text, std::string_view expect) {
  return std::string(what) + " " + text::quote(text, 40) + ": " + std::string(expect);
}

std::optional<std::size_t> index_of(std::span<const std::string_view> words,
                                    std::string_view text) {
  const auto it = std::find(words.begin(), words.end(), text);
  if (it == words.end()) return std::nullopt;
  return static_cast<std::size_t>(it - words.begin());
}

Result<Value> read_number(const Spec& s, std::string_view what, std::string_view text) {
  if (auto i = index_of(s.words, text)) return Value{.text = text, .number = *i, .word = true};
  auto n = text::parse_unsigned(text, s.min, s.max, what);
  if (!n) {
    if (s.words.empty()) return std::unexpected(std::move(n.error()));
    return fail(n.error().message + " (or " + text::join(s.words, ", ") + ")");
  }
  return Value{.text = text, .number = *n};
}

Result<Value> read_choice(const Spec& s, std::string_view what, std::string_view text) {
  if (auto i = index_of(s.words, text)) return Value{.text = text, .number = *i};
  return fail(bad_value(
      what, text,
      "unknown " + std::string(s.expect) + " (valid: " + text::join(s.words, ", ") + ")"));
}

Result<Value> read_text(const Spec& s, std::string_view what, std::string_view text) {
  if (s.kind == Kind::file && (text.empty() || text == "--"))
    return fail(std::string(what) + " needs a file name");
  if (text.empty() && !s.expect.empty())
    return fail(std::string(what) + ": " + std::string(s.expect));
  if (s.check) {
    if (auto r = s.check(text); !r) return fail(std::string(what) + ": " + r.error().message);
  }
  return Value{.text = text};
}

// The value of row `s` from `text`, named `what` (the option or the variable) in errors.
Result<Value> read_value(const Spec& s, std::string_view what, std::string_view text) {
  switch (s.kind) {
    case Kind::number:
      return read_number(s, what, text);
    case Kind::positive: {
      auto x = text::parse_positive(text);
      if (!x || (s.max > 0 && *x > static_cast<double>(s.max)))
        return fail(bad_value(what, text, s.expect));
      return Value{.text = text, .decimal = *x};
    }
    case Kind::share: {
      auto x = text::parse_share(text);
      if (!x) return fail(bad_value(what, text, s.expect));
      return Value{.text = text, .decimal = *x};
    }
    case Kind::duration: {
      auto seconds = parse_seconds(text, what);
      if (!seconds) return std::unexpected(std::move(seconds.error()));
      return Value{.text = text, .number = static_cast<std::uint64_t>(*seconds)};
    }
    case Kind::choice:
      return read_choice(s, what, text);
    case Kind::flag:
    case Kind::text:
    case Kind::file:
    case Kind::optional:
      break;
  }
  return read_text(s, what, text);
}

// Every message the table writes starts with the program's prefix.
std::unexpected<Error> failed(const Style& style, std::string message) {
  return fail(std::string(style.prefix) + message);
}

Result<void> read_env(std::span<const Spec* const> specs, const Style& style, const EnvLookup& env,
                      const Sink& sink) {
  for (std::size_t row = 0; row < specs.size(); ++row) {
    const Spec& s = *specs[row];
    if (s.env.empty()) continue;
    const auto text = env(s.env);
    if (!text) continue;
    if (text->empty() && (s.kind == Kind::text || s.kind == Kind::file)) continue;
    auto value = read_value(s, s.env, *text);
    if (!value) return failed(style, value.error().message);
    sink(row, *value);
  }
  return {};
}

// The row named `name` (its long name or alias), or nullopt.
std::optional<std::size_t> find(std::span<const Spec* const> specs, std::string_view name) {
  for (std::size_t row = 0; row < specs.size(); ++row) {
    if (specs[row]->name == name || (!specs[row]->alias.empty() && specs[row]->alias == name))
      return row;
  }
  return std::nullopt;
}

// One command-line word and its value, as parse() walks the arguments.
struct Cursor {
  std::span<const std::string_view> args;
  std::size_t i = 0;
  std::string_view name;
  std::optional<std::string_view> inline_value;
};

// The value of the option at `c` (inline or the next word), or nullopt for a flag.
Result<std::optional<Value>> take_value(const Spec& s, const Style& style, Cursor& c) {
  if (s.kind == Kind::flag) {
    if (c.inline_value) return failed(style, std::string(c.name) + " takes no value");
    return std::optional<Value>{};
  }
  std::optional<std::string_view> text = c.inline_value;
  if (!text && s.kind == Kind::optional) {
    if (c.i + 1 < c.args.size() && !c.args[c.i + 1].starts_with("-")) text = c.args[++c.i];
    if (!text) return std::optional<Value>{Value{.text = {}, .given = false}};
  }
  if (!text) {
    if (c.i + 1 >= c.args.size()) return failed(style, style.missing(c.name));
    text = c.args[++c.i];
  }
  auto value = read_value(s, c.name, *text);
  if (!value) return failed(style, value.error().message);
  return std::optional<Value>{*value};
}

std::unexpected<Error> unknown(std::span<const Spec* const> specs, const Style& style,
                               const Cursor& c) {
  const auto candidates = names(specs);
  return failed(style, style.unknown(c.args[c.i], text::did_you_mean(c.name, candidates)));
}

}  // namespace

Result<std::size_t> parse(std::span<const Spec* const> specs, const Style& style,
                          std::span<const std::string_view> args, const EnvLookup& env,
                          const Sink& sink) {
  if (auto r = read_env(specs, style, env, sink); !r) return std::unexpected(r.error());
  for (Cursor c{args, 0, {}, {}}; c.i < args.size(); ++c.i) {
    const std::string_view arg = args[c.i];
    if (style.stop_at_operand && arg == "--") return c.i + 1;
    if (style.stop_at_operand && !arg.starts_with("-")) return c.i;
    c.name = arg;
    c.inline_value.reset();
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      c.name = arg.substr(0, eq);
      c.inline_value = arg.substr(eq + 1);
    }
    const auto row = find(specs, c.name);
    if (!row) return unknown(specs, style, c);
    auto value = take_value(*specs[*row], style, c);
    if (!value) return std::unexpected(value.error());
    sink(*row, value->value_or(Value{.text = {}}));
  }
  return args.size();
}

std::string usage(std::span<const Spec* const> specs, const Style& style) {
  std::string out;
  const std::string indent(2 + style.usage_width, ' ');
  for (const Spec* s : specs) {
    if (s->shown != Shown::everywhere) continue;
    std::string left(s->usage_name.empty() ? s->name : s->usage_name);
    if (s->usage_name.empty() && !s->arg.empty()) left += " " + std::string(s->arg);
    out += "  " + left;
    if (!s->help.empty()) {
      out.append(left.size() + 2 <= style.usage_width ? style.usage_width - left.size() : 2, ' ');
      std::string_view help = s->help;
      for (std::size_t nl; (nl = help.find('\n')) != std::string_view::npos;) {
        out += std::string(help.substr(0, nl)) + "\n" + indent;
        help.remove_prefix(nl + 1);
      }
      out += help;
    }
    out += "\n";
  }
  return out;
}

std::vector<std::string_view> names(std::span<const Spec* const> specs) {
  std::vector<std::string_view> out;
  for (const Spec* s : specs) {
    if (s->shown != Shown::nowhere) out.push_back(s->name);
  }
  return out;
}

}  // namespace ddp::cli
