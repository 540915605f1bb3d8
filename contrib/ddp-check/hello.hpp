// ddp-check's wire protocol: one hello line from every rank to rank 0, one verdict line back.
// Plain text so that a failing step can be debugged with `nc`; every line is bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "result.hpp"

namespace ddp::check {

// What one process stands for: a rank (`srun --ddp`) or a node launcher (`--ddp=torchrun`).
enum class Scope { ranks, nodes };

// The longest line either side sends or accepts, newline included.
inline constexpr std::size_t k_max_line = 2048;
// First token of every line; a peer speaking anything else is rejected, not guessed at.
inline constexpr std::string_view k_protocol = "ddp-check/1";

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
};

// The hello line for `h`, newline included. Values are made single tokens (spaces and control
// characters become '_') and cut so that the line never exceeds k_max_line.
std::string format_hello(const Hello& h);

// Parses a hello line (without its newline). Unknown keys, missing keys and malformed numbers
// are errors naming the key, so a version mismatch is diagnosed rather than misread.
Result<Hello> parse_hello(std::string_view line);

// What rank 0 answers.
struct Verdict {
  enum class Kind { ok, fail, nccl } kind = Kind::ok;
  std::string text;  // fail: the diagnosis; nccl: the NCCL unique id in hex
};

// The verdict line, newline included; `text` is flattened to one line and bounded.
std::string format_verdict(const Verdict& v);

// Parses a verdict line (without its newline).
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

 private:
  std::string data_;
  bool overflowed_ = false;
};

}  // namespace ddp::check
