// The MUNGE edge of ddp-check: signs this process's hello and lets rank 0 decode the others'.
// libmunge talks to the node's munged over its UNIX socket; nothing else is contacted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ddp-check/rendezvous/admit.hpp"
#include "libddp/util/result.hpp"

namespace ddp::check::munge {

// A credential for `payload` that only `uid` may decode and that expires after `ttl_s`
// seconds. `socket` is munged's socket (nullopt: libmunge's default). The error names the
// socket and the fix.
Result<std::string> sign(std::string_view payload, std::uint32_t uid, unsigned ttl_s,
                         const std::optional<std::string>& socket);

// What MUNGE says of `cred`: the signer and the payload, or why it refuses (replayed, expired,
// forged, unreadable...). Every refusal is the peer's; munged being unreachable is rank 0's
// and says so.
Result<Credential> decode(std::string_view cred, const std::optional<std::string>& socket);

}  // namespace ddp::check::munge
