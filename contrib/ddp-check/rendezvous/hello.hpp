// ddp-check's wire protocol: one hello line from every rank to rank 0, one verdict line back.
// Plain text so that a failing step can be debugged with `nc`; every line is bounded. A hello
// names its job step and ends with a MUNGE credential that signs everything before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libddp/util/result.hpp"

namespace ddp::check {

// What one process stands for: a rank (`srun --ddp`) or a node launcher (`--ddp=torchrun`).
enum class Scope { ranks, nodes };

// How a hello proves where it comes from: a MUNGE credential, or nothing (`--auth=none`).
enum class AuthMode { munge, none };

// The longest line either side sends or accepts, newline included: room for a credential that
// signs a hello of 20 values of k_max_value characters each.
inline constexpr std::size_t k_max_line = 16384;
// The longest value of a hello key; the credential may be longer (k_max_credential).
inline constexpr std::size_t k_max_value = 256;
inline constexpr std::size_t k_max_credential = 12288;
// First token of every line; a peer speaking anything else is rejected, not guessed at.
// Version 2 added the job step and the credential.
inline constexpr std::string_view k_protocol = "ddp-check/2";

// One process's view of the world, as its environment and its connection describe it.
struct Hello {
  std::uint32_t rank = 0;                  // RANK (ranks scope) or NODE_RANK (nodes scope)
  std::uint32_t world_size = 0;            // WORLD_SIZE (ranks) or NNODES (nodes)
  std::uint32_t local_rank = 0;            // LOCAL_RANK; 0 for a node launcher
  std::uint32_t local_world_size = 1;      // LOCAL_WORLD_SIZE; 1 for a node launcher
  std::optional<std::uint32_t> node_rank;  // NODE_RANK when set
  std::optional<std::uint32_t> nnodes;     // NNODES when set
  std::uint32_t nproc_per_node = 1;        // NPROC_PER_NODE (nodes scope)
  std::uint32_t pid = 0;
  std::string host;         // hostname (DDP_CHECK_HOSTNAME overrides it, for tests)
  std::string gpus;         // CUDA_VISIBLE_DEVICES list, "n=K" from SLURM_GPUS_ON_NODE, or "-"
  std::string ifname;       // local interface of the connection to rank 0, "?" if unknown
  std::string if_kind;      // infiniband, ethernet, ... of that interface, "?" if unknown
  std::string address;      // local address of that connection (getsockname)
  bool nccl_ready = false;  // built with NCCL and sees a GPU: may join the NCCL phase
  std::string job = "-";    // the job step the process runs in (see StepBinding), "-" if none
  std::string step = "-";
  std::string het = "-";
  std::uint32_t port = 0;  // the MASTER_PORT it is sent to: a hello is good for one rendezvous
  AuthMode auth = AuthMode::munge;
  std::string cred = "-";  // the MUNGE credential of hello_body(); "-" with AuthMode::none
};

// `value` as one word of a hello: text::printable() with spaces written \x20 too, "-" when
// empty, at most `max_chars` characters ("..." included).
std::string wire_token(std::string_view value, std::size_t max_chars = k_max_value);

// The hello line without the credential and the newline: what the credential signs. Values
// are written as wire_token()s.
std::string hello_body(const Hello& h);

// The hello line for `h`: hello_body(h), then ` cred=` and the credential, then a newline.
std::string format_hello(const Hello& h);

// Parses a hello line (without its newline). Unknown keys, missing keys, malformed numbers and
// bytes outside printable ASCII are errors naming the key, so a version mismatch is diagnosed
// rather than misread, and nothing a peer sends can reach a terminal unfiltered.
Result<Hello> parse_hello(std::string_view line);

// The part of a parsed hello line its credential signs: everything before " cred=".
std::string_view signed_part(std::string_view line);

// What rank 0 answers.
struct Verdict {
  enum class Kind { ok, fail, nccl } kind = Kind::ok;
  std::string text;  // fail: the diagnosis; nccl: the NCCL unique id in hex
};

// The verdict line, newline included; `text` is made text::printable() (one line) and bounded.
std::string format_verdict(const Verdict& v);

// Parses a verdict line (without its newline); the text comes back text::printable().
Result<Verdict> parse_verdict(std::string_view line);

// Accumulates bytes from a stream socket and hands out complete lines. A line longer than
// k_max_line poisons the buffer: garbage cannot make a peer allocate without bound.
class LineBuffer {
 public:
  // Appends received bytes; returns false once the buffer is poisoned.
  bool feed(std::string_view bytes);
  // The next complete line without its newline (and without a trailing '\r'), if any.
  std::optional<std::string> next_line();
  // True once a line exceeded k_max_line.
  bool overflowed() const { return overflowed_; }
  // Bytes held: complete lines not taken yet and the unterminated tail.
  std::size_t size() const { return data_.size(); }

 private:
  std::string data_;
  bool overflowed_ = false;
};

}  // namespace ddp::check
