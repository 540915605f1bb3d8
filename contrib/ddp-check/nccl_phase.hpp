// The optional NCCL phase: one all-reduce over every rank after the TCP check. Built from
// nccl_phase.cpp when CMake finds CUDA and NCCL, else from nccl_stub.cpp, which says why not.
#pragma once

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

}  // namespace ddp::check
