#include "gen/core/shell.hpp"

#include "gen/core/references.hpp"

#include "libddp/util/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::shell {
namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

using ddp::shell::is_bare_safe;

// Characters sbatch takes literally in an "#SBATCH --opt=value" line.
// '&' and '|' appear in constraints ("v100&gpu_ai"); sbatch, not bash, reads these lines.
bool is_sbatch_safe(char c) {
  return is_bare_safe(c) || c == '~' || c == '[' || c == ']' || c == '&' || c == '|';
}

bool is_name_start(char c) {
  return c == '_' || (is_alnum(c) && !(c >= '0' && c <= '9'));
}

std::size_t name_end(std::string_view text, std::size_t at) {
  if (at >= text.size() || !is_name_start(text[at])) return at;
  while (at < text.size() && (is_alnum(text[at]) || text[at] == '_')) ++at;
  return at;
}

// The end of $NAME or ${NAME} starting at text[at] (a '$'), or at itself when there is none.
std::size_t reference_end(std::string_view text, std::size_t at) {
  const bool braced = text.substr(at + 1, 1) == "{";
  const std::size_t start = at + (braced ? 2 : 1);
  const std::size_t end = name_end(text, start);
  if (end == start) return at;
  if (!braced) return end;
  return text.substr(end, 1) == "}" ? end + 1 : at;
}

// One character of a value for a message, as text::printable shows it.
std::string shown(char c) {
  if (c == '\'') return "a quote (')";
  return "'" + ddp::text::printable(std::string_view(&c, 1)) + "'";
}

// ${NAME:+TEXT} at text[at]: where it ends (after its '}'), and what makes it unsafe. Inside,
// bash's parser of a double-quoted word treats quotes in ways that differ between its versions
// (a ' there can end the word), so only plain characters and references are allowed.
struct Alternate {
  std::size_t end = 0;
  std::optional<std::string> problem;
};

std::optional<Alternate> alternate_at(std::string_view text, std::size_t at) {
  if (text.substr(at, 2) != "${") return std::nullopt;
  const std::size_t name = name_end(text, at + 2);
  if (name == at + 2 || text.substr(name, 2) != ":+") return std::nullopt;
  const std::string head(text.substr(at, name + 2 - at));
  for (std::size_t i = name + 2; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '}') return Alternate{i + 1, std::nullopt};
    if (c == '$') {
      const std::size_t end = reference_end(text, i);
      if (end == i)
        return Alternate{i, "has a '$' inside " + head + "...} that starts no $NAME or ${NAME}"};
      i = end - 1;
    } else if (!is_bare_safe(c) && c != ' ') {
      return Alternate{i, "has " + shown(c) + " inside " + head +
                              "...} (allowed there: letters, digits, spaces, _ - . / : = , + @ % "
                              "and $NAME; put other text outside the braces)"};
    }
  }
  return Alternate{text.size(), "has " + head + " without its closing '}'"};
}

}  // namespace

std::string quote_expanding(std::string_view text) {
  // "$${" is the escape of a literal "${".
  bool has_reference = false, has_escape = false;
  for (std::size_t i = 0; i < text.size() && !has_reference; ++i) {
    if (text.substr(i, 3) == "$${") {
      has_escape = true;
      ++i;
      continue;
    }
    has_reference = refs::expanding_end(text, i) > i;
  }
  if (!has_reference && !has_escape) return ddp::shell::quote(text);
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (text.substr(i, 3) == "$${") {
      out += "\\${";
      i += 2;
      continue;
    }
    if (const std::size_t end = refs::expanding_end(text, i); end > i) {
      out.append(text.substr(i, end - i));
      i = end - 1;
    } else if (c == '$' || c == '`' || c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + '"';
}

std::string quote_allowing_vars(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '$') {
      if (std::size_t end = reference_end(text, i); end > i) {
        out.append(text.substr(i, end - i));
        i = end - 1;
        continue;
      }
      if (auto alt = alternate_at(text, i); alt && !alt->problem) {
        // Checked by site_value_problem(): only safe characters and references inside, none
        // of which changes how bash reads the double-quoted word.
        out.append(text.substr(i, alt->end - i));
        i = alt->end - 1;
        continue;
      }
      out += "\\$";
    } else if (c == '`' || c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::optional<std::string> site_value_problem(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || text.substr(i + 1, 1) != "{") continue;
    if (std::size_t end = reference_end(text, i); end > i) {
      i = end - 1;
      continue;
    }
    auto alt = alternate_at(text, i);
    if (!alt)
      return std::string("has \"${\" that starts neither ${NAME} nor ${NAME:+TEXT} (no other ") +
             "form expands; write the text without \"${\")";
    if (alt->problem) return alt->problem;
    i = alt->end - 1;
  }
  return std::nullopt;
}

std::optional<std::string> sbatch_value_problem(std::string_view text) {
  if (text.empty()) return "is empty";
  for (char c : text) {
    if (c == '\n') return "contains a newline, which would end the #SBATCH line";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "contains a control character";
    if (!is_sbatch_safe(c))
      return "contains " + shown(c) +
             " (allowed: letters, digits and _ - . / : = , + @ % ~ [ ] & |)";
  }
  return std::nullopt;
}

}  // namespace ddpgen::shell
