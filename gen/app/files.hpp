// Reading and writing whole files, with errors as ddpgen reports them.
#pragma once

#include <string>

#include "gen/core/model.hpp"  // ddpgen::Result, the project's ddp::Result

namespace ddpgen::app {

// Returns the contents of path: a regular file (a FIFO is refused without waiting for a writer,
// /dev/zero without reading it) of at most 4 MiB.
Result<std::string> read_file(const std::string& path);

// Writes text to path through a temporary file made by mkstemp in the same directory, synced,
// closed with its errors checked and renamed over path: a failure leaves path as it was and no
// temporary file behind, and a symlink at path is replaced, never followed. An existing file
// keeps its permission bits, less the write bits the umask withholds. A path that leads to a
// device, pipe or socket (/dev/stdout, /dev/null) is written into instead, with every error
// reported; a FIFO that no process reads is an error after at most a second, never a hang.
// With into_special false, whatever is at path is replaced by the rename, never written into
// (ddpgen submit: its script is a file, even if a symlink appeared at path meanwhile).
Result<void> write_file(const std::string& path, const std::string& text, bool into_special = true);

// Writes text to standard output; an error (a full disk, a closed pipe) is returned, not lost.
Result<void> write_stdout(const std::string& text);

}  // namespace ddpgen::app
