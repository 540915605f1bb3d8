// ddpgen's shell and #SBATCH rules on top of the one quoter (libddp/util/shell.hpp): words
// with run-time references, site values that may expand, and checks for text that cannot be
// made safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ddpgen::shell {

// Returns text as one bash word in which only its ${NAME} references expand (refs::names());
// every other byte arrives as written. Without a reference it is quote(text).
std::string quote_expanding(std::string_view text);

// Returns text as a double-quoted bash word in which only $NAME, ${NAME} and ${NAME:+TEXT}
// expand; every other $, `, " and \ is escaped. For site-profile values such as
// "/tmp/$USER-cache". text must pass site_value_problem(); an unsafe ${NAME:+...} is written
// literally, never as code.
std::string quote_allowing_vars(std::string_view text);

// Returns why text cannot be a site-profile variable value: a "${" that is neither ${NAME} nor
// ${NAME:+TEXT}, or TEXT holding anything but letters, digits, spaces, _-./:=,+@% and $NAME
// references (a quote there would end bash's double-quoted word); nothing when it is safe.
std::optional<std::string> site_value_problem(std::string_view text);

// Returns why text cannot be an #SBATCH value (sbatch reads these lines itself, with its own
// quoting rules, so only a plain token is accepted), or nothing when it is safe.
std::optional<std::string> sbatch_value_problem(std::string_view text);

}  // namespace ddpgen::shell
