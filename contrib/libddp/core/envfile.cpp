// The site environment file. Values are literal because the plugin calls setenv() with them:
// there is no shell in between to strip quotes or expand "$VAR", and pretending otherwise
// would make the same file mean different things here and in a shell.
#include "libddp/core/envfile.hpp"

#include <string>

#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddp {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::unexpected<Error> line_error(std::string_view path, std::size_t line, std::string_view what) {
  std::string message(path);
  message += ':';
  text::append_uint(message, line);
  message += ": ";
  message += what;
  return fail(std::move(message));
}

}  // namespace

Result<EnvList> parse_env_file(std::string_view contents, std::string_view path) {
  EnvList list;
  std::size_t line_number = 0;
  std::size_t pos = 0;
  while (pos < contents.size()) {
    ++line_number;
    auto end = contents.find('\n', pos);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(pos, end - pos);
    pos = end + 1;
    // A file saved with CRLF endings would otherwise put '\r' at the end of every value.
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    if (line.find('\0') != std::string_view::npos)
      return line_error(path, line_number, "NUL byte in line");
    if (line.starts_with("export") && line.size() > 6 && is_blank(line[6])) {
      line.remove_prefix(6);
      while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    }
    const auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return line_error(path, line_number, "expected KEY=VALUE, got " + text::quote(line));
    const std::string_view key = line.substr(0, eq);
    if (!is_env_name(key))
      return line_error(
          path, line_number,
          "bad variable name " + text::quote(key) + " (expected [A-Za-z_][A-Za-z0-9_]*)");
    // A repeated key is almost always an edit that forgot the first one; say so.
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i].first == key)
        return line_error(path, line_number, std::string(key) + " is set twice in this file");
    }
    list.emplace_back(std::string(key), std::string(line.substr(eq + 1)));
  }
  return list;
}

}  // namespace ddp
