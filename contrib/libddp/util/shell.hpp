// The one way to write a value into a shell script or a command line shown to a person: one
// bash word that expands to exactly the value and can never run as code.
#pragma once

#include <string>
#include <string_view>

namespace ddp::shell {

// `text` as one bash word that expands to exactly `text`: single quotes, with each ' written as
// '\''. Words made only of safe characters (letters, digits, and _-./:=,+@%) stay bare; the
// empty text is ''.
std::string quote(std::string_view text);

// True when quote() leaves `c` bare: letters, digits and _-./:=,+@%.
bool is_bare_safe(char c);

}  // namespace ddp::shell
