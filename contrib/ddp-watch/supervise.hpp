// The watch loop: runs the command, forwards its output, sees progress, acts on a stall.
#pragma once

#include "ddp-watch/options.hpp"

namespace ddp::watch {

// Runs options.command under watch and returns ddp-watch's exit status: the command's own,
// k_exit_stall after a stall, 127 when it could not start.
int supervise(const Options& options);

}  // namespace ddp::watch
