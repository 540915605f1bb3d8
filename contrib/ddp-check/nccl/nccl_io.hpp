// The optional NCCL phases: one all-reduce over every rank after the TCP check, and send/recv
// between two nodes for --pairs. Built from allreduce_io.cpp and sendrecv_io.cpp when CMake
// finds CUDA and NCCL, else from stub.cpp, which says why not.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "libddp/util/result.hpp"

namespace ddp::check {

// Why this process cannot join the NCCL phase (not built with NCCL, no GPU visible), or
// nullopt when it can.
std::optional<std::string> nccl_unavailable();

// A fresh ncclUniqueId in hex, for rank 0 to hand out.
Result<std::string> nccl_new_id();

// Timing of the all-reduce on this rank.
struct NcclTiming {
  double seconds = 0;  // mean over the timed iterations
  int device = 0;
};

// Joins the communicator `id_hex` as `rank` of `world` on GPU local_rank % device count, warms
// up, and times float all-reduces of `bytes`. Errors carry NCCL's or CUDA's message.
Result<NcclTiming> nccl_allreduce(const std::string& id_hex, int rank, int world, int local_rank,
                                  std::uint64_t bytes);

// Warm-ups and timed iterations of one pair's send/recv.
inline constexpr int k_pair_warmups = 2;
inline constexpr int k_pair_iterations = 8;

// Joins the two-rank communicator `id_hex` as `rank` (0 or 1) on this node's first visible GPU
// and times grouped ncclSend+ncclRecv of `bytes` each way with the other rank, after warm-ups;
// this side's GB/s. Nothing waits past `deadline`: the communicator is non-blocking and aborted
// there. Errors carry NCCL's or CUDA's message.
Result<double> nccl_sendrecv(const std::string& id_hex, int rank, std::uint64_t bytes,
                             std::chrono::steady_clock::time_point deadline);

}  // namespace ddp::check
