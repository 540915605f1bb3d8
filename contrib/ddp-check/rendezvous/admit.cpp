// Admission of hellos by rank 0: the step binding, the credential, the refusal messages.
#include "ddp-check/rendezvous/admit.hpp"

#include <string>

#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

std::string step_text(std::string_view job, std::string_view step) {
  if (job == "-") return "no Slurm job";
  return "job " + std::string(job) + " step " + std::string(step);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// socket=PATH from one AuthInfo value ("socket=/run/munge/munge.socket.2,cred_expire=10").
std::optional<std::string> socket_option(std::string_view value) {
  for (std::string_view field : text::split(value, ',')) {
    const std::string_view item = text::trim(field);
    if (auto eq = item.find('=');
        eq != std::string_view::npos && iequals(item.substr(0, eq), "socket"))
      return std::string(text::trim(item.substr(eq + 1)));
  }
  return std::nullopt;
}

}  // namespace

StepBinding read_binding(const EnvLookup& env) {
  auto value = [&env](std::string_view name) -> std::string {
    return wire_token(env(name).value_or(""));  // the token hello_body() makes of it
  };
  StepBinding b;
  b.job = value("SLURM_HET_JOB_ID");
  if (b.job == "-") b.job = value("SLURM_JOB_ID");
  b.step = value("SLURM_STEP_ID");
  b.het = value("SLURM_HET_JOB_COMPONENT");
  return b;
}

std::optional<std::string> binding_refusal(const Hello& hello, const StepBinding& own,
                                           AuthMode mode) {
  if (hello.job != own.job || hello.step != own.step) {
    return "it belongs to " + step_text(hello.job, hello.step) + ", this check is " +
           step_text(own.job, own.step);
  }
  if (hello.port != own.port) {
    return "it was sent to MASTER_PORT " + std::to_string(hello.port) + ", this check listens on " +
           std::to_string(own.port);
  }
  if (mode == AuthMode::munge && hello.auth != AuthMode::munge) {
    return "it carries no MUNGE credential (its ddp-check runs with --auth=none), and this "
           "check accepts only MUNGE-signed hellos";
  }
  return std::nullopt;
}

std::optional<std::string> credential_refusal(const Result<Credential>& decoded,
                                              std::string_view signed_part, std::uint32_t own_uid) {
  if (!decoded) return "MUNGE refused its credential: " + decoded.error().message;
  if (decoded->uid != own_uid) {
    return "its credential is of uid " + std::to_string(decoded->uid) + ", this job runs as uid " +
           std::to_string(own_uid);
  }
  if (decoded->payload != signed_part) {
    return "its credential signs another hello (the line was altered or the credential copied)";
  }
  return std::nullopt;
}

std::string peer_text(std::string_view s, std::size_t max_chars) {
  std::string out = text::printable(s, max_chars);
  static constexpr std::string_view k_own = "ddp-check:";
  for (std::size_t at = 0; at + k_own.size() <= out.size();) {
    if (!iequals(std::string_view(out).substr(at, k_own.size()), k_own)) {
      ++at;
      continue;
    }
    out.replace(at + k_own.size() - 1, 1, "\\x3a");
    at += k_own.size() + 3;
  }
  return out;
}

std::string describe_refusal(std::string_view peer, const Hello* claimed, std::string_view why) {
  std::string text = std::string(claimed ? "refused a hello from " : "refused a connection from ") +
                     peer_text(peer, 64);
  if (claimed) {
    text += " (claims RANK " + std::to_string(claimed->rank) + " of " +
            std::to_string(claimed->world_size) + " on " + peer_text(claimed->host, k_max_value) +
            ", pid " + std::to_string(claimed->pid) + ")";
  }
  return text + ": " + peer_text(why, k_max_line);
}

std::optional<std::string> munge_socket_from_slurm_conf(std::string_view conf_text) {
  std::optional<std::string> found;
  for (std::string_view line : text::split(conf_text, '\n')) {
    line = text::trim(line.substr(0, line.find('#')));
    auto eq = line.find('=');
    if (eq == std::string_view::npos || !iequals(text::trim(line.substr(0, eq)), "AuthInfo"))
      continue;
    if (auto socket = socket_option(text::trim(line.substr(eq + 1)))) found = socket;
  }
  return found;
}

}  // namespace ddp::check
