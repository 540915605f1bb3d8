// Reading and writing whole files, with errors as ddpgen reports them.
#pragma once

#include <string>

#include "../core/model.hpp"  // ddpgen::Result, the project's ddp::Result

namespace ddpgen::app {

// Returns the contents of path.
Result<std::string> read_file(const std::string& path);

// Writes text to path through a temporary file in the same directory and a rename, so that a
// failed write never leaves half a script.
Result<void> write_file(const std::string& path, const std::string& text);

}  // namespace ddpgen::app
