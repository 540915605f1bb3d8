#include "shell.hpp"

namespace ddpgen::shell {
namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_bare_safe(char c) {
  switch (c) {
    case '_':
    case '-':
    case '.':
    case '/':
    case ':':
    case '=':
    case ',':
    case '+':
    case '@':
    case '%':
      return true;
    default:
      return is_alnum(c);
  }
}

// Characters sbatch takes literally in an "#SBATCH --opt=value" line.
// '&' and '|' appear in constraints ("v100&gpu_ai"); sbatch, not bash, reads these lines.
bool is_sbatch_safe(char c) {
  return is_bare_safe(c) || c == '~' || c == '[' || c == ']' || c == '&' || c == '|';
}

bool is_name_start(char c) {
  return c == '_' || (is_alnum(c) && !(c >= '0' && c <= '9'));
}

}  // namespace

std::string quote(std::string_view text) {
  bool bare = !text.empty();
  for (char c : text) bare = bare && is_bare_safe(c);
  // A leading '=' or '%' is harmless in bash; '-' is left to the callers that check options.
  if (bare) return std::string(text);
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

std::string quote_allowing_vars(std::string_view text) {
  std::string out = "\"";
  int open_alternates = 0;  // inside ${NAME:+...}
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}' && open_alternates > 0) {
      --open_alternates;
      out += c;
      continue;
    }
    if (c == '$' && i + 2 < text.size() && text[i + 1] == '{' && is_name_start(text[i + 2])) {
      // ${NAME:+TEXT}: TEXT only when NAME is set, e.g. ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH},
      // so that an unset variable does not leave an empty path entry (the current directory).
      std::size_t end = i + 2;
      while (end < text.size() && (is_alnum(text[end]) || text[end] == '_')) ++end;
      if (text.substr(end, 2) == ":+") {
        out.append(text.substr(i, end + 2 - i));
        ++open_alternates;
        i = end + 1;
        continue;
      }
    }
    if (c == '$') {
      std::size_t end = i + 1;
      bool braced = end < text.size() && text[end] == '{';
      if (braced) ++end;
      std::size_t name_start = end;
      if (end < text.size() && is_name_start(text[end])) {
        while (end < text.size() && (is_alnum(text[end]) || text[end] == '_')) ++end;
      }
      bool named = end > name_start;
      if (named && (!braced || (end < text.size() && text[end] == '}'))) {
        if (braced) ++end;
        out.append(text.substr(i, end - i));
        i = end - 1;
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
  // An unclosed ${NAME:+ would swallow the closing quote: close it.
  out.append(static_cast<std::size_t>(open_alternates), '}');
  out += '"';
  return out;
}

std::optional<std::string> sbatch_value_problem(std::string_view text) {
  if (text.empty()) return "is empty";
  for (char c : text) {
    if (c == '\n') return "contains a newline, which would end the #SBATCH line";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "contains a control character";
    if (!is_sbatch_safe(c))
      return std::string("contains '") + c +
             "' (allowed: letters, digits and _ - . / : = , + @ % ~ [ ] & |)";
  }
  return std::nullopt;
}

bool is_env_name(std::string_view text) {
  if (text.empty() || !is_name_start(text[0])) return false;
  for (char c : text)
    if (!is_alnum(c) && c != '_') return false;
  return true;
}

std::string comment_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

}  // namespace ddpgen::shell
