// Rank 0's admission of a hello: does it come from this job step, from this job's user, and is
// it signed? Pure: MUNGE's answer comes in as a value, so a table drives every refusal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ddp-check/options.hpp"
#include "ddp-check/rendezvous/hello.hpp"
#include "libddp/util/result.hpp"

namespace ddp::check {

// What binds a hello to one step: the job (a heterogeneous job's leader id, so that a step
// spanning components is one step) and the step id. "-" where the variable is unset
// (outside Slurm); the het component is informational and signed, never a binding.
struct StepBinding {
  std::string job = "-";
  std::string step = "-";
  std::string het = "-";
  std::uint32_t port = 0;  // MASTER_PORT
};

// Reads SLURM_HET_JOB_ID (else SLURM_JOB_ID), SLURM_STEP_ID and SLURM_HET_JOB_COMPONENT.
// Values are made single printable tokens, as the hello carries them.
StepBinding read_binding(const EnvLookup& env);

// A credential as MUNGE decoded it: who signed it and what it signs.
struct Credential {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string payload;
};

// Why rank 0 refuses a hello that claims another step, port or authentication mode, or
// nullopt when the claim matches. Cheap: runs before MUNGE is asked.
std::optional<std::string> binding_refusal(const Hello& hello, const StepBinding& own,
                                           AuthMode mode);

// Why rank 0 refuses a hello whose credential MUNGE decoded to `decoded` (or refused to
// decode), or nullopt when it signs exactly `signed_part` for the user `own_uid`.
std::optional<std::string> credential_refusal(const Result<Credential>& decoded,
                                              std::string_view signed_part, std::uint32_t own_uid);

// Text that came from a peer (or is derived from what a peer sent), made safe to print where
// a reader of the output could take it for a verdict: text::printable() (one line, at most
// `max_chars`), and every "ddp-check:" in it, in any case, written "ddp-check\x3a", so that no
// peer can make rank 0 print anything ddp-watch reads as a suspect line ("ddp-check: suspect
// NODE: ..."), nor its own verdicts, wherever in a line it lands.
std::string peer_text(std::string_view s, std::size_t max_chars = 300);

// The line rank 0 prints for a refused connection: who (address, and what the hello claims
// when it parsed) and why.
std::string describe_refusal(std::string_view peer, const Hello* claimed, std::string_view why);

// The munged socket Slurm's auth/munge uses, from slurm.conf's AuthInfo=socket=PATH (the
// last AuthInfo line wins, as in Slurm); nullopt when slurm.conf names none.
std::optional<std::string> munge_socket_from_slurm_conf(std::string_view conf_text);

}  // namespace ddp::check
