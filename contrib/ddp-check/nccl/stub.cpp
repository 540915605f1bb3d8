// Built without CUDA/NCCL: the NCCL phase is skipped with a reason, never silently.
#include "ddp-check/nccl/nccl_io.hpp"

namespace ddp::check {

std::optional<std::string> nccl_unavailable() {
  return "ddp-check was built without NCCL (configure with CUDA and NCCL to enable it)";
}

Result<std::string> nccl_new_id() {
  return fail("built without NCCL");
}

Result<NcclTiming> nccl_allreduce(const std::string&, int, int, int, std::uint64_t) {
  return fail("built without NCCL");
}

Result<double> nccl_sendrecv(const std::string&, int, std::uint64_t,
                             std::chrono::steady_clock::time_point) {
  return fail("built without NCCL");
}

}  // namespace ddp::check
