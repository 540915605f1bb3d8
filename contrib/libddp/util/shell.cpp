#include "libddp/util/shell.hpp"

namespace ddp::shell {

bool is_bare_safe(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
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
      return false;
  }
}

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

}  // namespace ddp::shell
