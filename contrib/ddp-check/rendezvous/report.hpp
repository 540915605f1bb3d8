// What ddp-check's main prints, decided here: the verdict on what arrived and its FAILED line,
// the refusals, the interface advice under the table, --topology's socket_ifname lines, why the
// NCCL phase is skipped and the final OK line.
// Pure: main gathers the facts (hellos, the route, the NCCL probe) and prints these.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-check/options.hpp"
#include "ddp-check/rendezvous/hello.hpp"
#include "ddp-check/rendezvous/session_io.hpp"
#include "ddp-check/rendezvous/verify.hpp"
#include "ddp-check/topology/interfaces.hpp"
#include "libddp/core/envfile.hpp"
#include "libddp/util/result.hpp"

namespace ddp::check {

// "rank 3 (node02)" or "node 1 (node02)": this process in messages.
std::string who(const Identity& id);

// Rank 0's verdict on what arrived: the world's faults (verify_world), rank 0 unable to reach
// itself first, then why rank 0 may not have seen a rank (connections it refused, descriptors
// it ran out of).
WorldReport judge(const Exchange& ex, const Hello& self, Scope scope);

// "FAILED: 2 faults found by rank 0 (node01)".
std::string failed_line(const WorldReport& report, const Identity& id);

// "REFUSED: ..." for each refused connection described, then one line counting the rest.
std::vector<std::string> refusal_lines(const Exchange& ex);

// "NCCL_SOCKET_IFNAME==ib0 GLOO_SOCKET_IFNAME=ib0": variables as the plugin exports them.
std::string env_text(const EnvList& env);

// The footer under rank 0's table: what socket_ifname=auto exports, which is the interface each
// node reaches rank 0 through (the hellos' `if`), or that the nodes differ.
std::string ifname_advice(const std::vector<Hello>& hellos);

// --topology's lines about socket_ifname=auto. `destination` is what the route was computed
// for (--route-to, else MASTER_ADDR; nullopt when neither is known) and `exported` what the
// plugin's code (sys::socket_ifname_for) gives for it; `by_kind` is the best socket interface
// of the topology by kind, printed as a fallback for setting NCCL_SOCKET_IFNAME by hand.
std::string topology_ifname_lines(const std::optional<std::string>& destination,
                                  const Result<EnvList>& exported,
                                  const Result<std::string>& by_kind);

// Why rank 0 skips the NCCL phase, or nullopt to run it: --no-nccl, torchrun mode, this node
// cannot (`unavailable`, from the NCCL probe), or the first rank that has no GPU or no NCCL.
std::optional<std::string> nccl_skip_reason(bool nccl_option, Scope scope,
                                            const std::optional<std::string>& unavailable,
                                            const std::vector<Hello>& hellos);

// "ddp-check: OK: 6 ranks on 3 nodes reached 10.0.0.1:29500 in 0.060 s".
std::string ok_line(std::size_t processes, Scope scope, std::size_t nodes, std::string_view master,
                    double seconds);

}  // namespace ddp::check
