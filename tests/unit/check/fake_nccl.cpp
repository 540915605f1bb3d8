// A stand-in for ddp-check's NCCL edge (nccl/allreduce_io.cpp, nccl/sendrecv_io.cpp), linked
// into ddp-check-fake-nccl so that the cluster tests can drive the NCCL rounds of --pairs, their
// protocol, verdict and suspect lines, on machines without a GPU. It measures nothing:
//   DDP_FAKE_NCCL_UNAVAILABLE  why this node cannot run NCCL (unset: it can)
//   DDP_FAKE_NCCL_GBPS         this side's figure (default 20)
//   DDP_FAKE_NCCL_FAIL         this side fails with that message instead
//   DDP_FAKE_NCCL_DIR          where the two sides of a pair meet: each makes ID.RANK and waits
//                              for the other's, so a pair whose sides got different ids, the
//                              same rank, or were not asked at the same time fails.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "ddp-check/nccl/bandwidth.hpp"
#include "ddp-check/nccl/nccl_io.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Marks this side present and waits for the other until the deadline.
Result<void> meet(const std::string& dir, const std::string& id_hex, int rank,
                  std::chrono::steady_clock::time_point deadline) {
  // A file name holds 255 bytes: the id's first 32 random bytes name the pair.
  const std::string pair = dir + "/" + id_hex.substr(0, 64);
  const std::string mine = pair + "." + std::to_string(rank);
  const std::string theirs = pair + "." + std::to_string(1 - rank);
  const int fd = ::open(mine.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fail("fake: cannot mark rank " + std::to_string(rank) + " present in " + dir + ": " +
                std::strerror(errno));
  }
  ::close(fd);
  while (::access(theirs.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) return fail("fake: the peer never came");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {};
}

}  // namespace

std::optional<std::string> nccl_unavailable() {
  return env("DDP_FAKE_NCCL_UNAVAILABLE");
}

Result<std::string> nccl_new_id() {
  std::random_device random;
  std::vector<unsigned char> bytes(128);  // sizeof(ncclUniqueId)
  for (auto& b : bytes) b = static_cast<unsigned char>(random());
  return to_hex(bytes);
}

Result<NcclTiming> nccl_allreduce(const std::string&, int, int, int local_rank, std::uint64_t) {
  return NcclTiming{0.001, local_rank};
}

Result<double> nccl_sendrecv(const std::string& id_hex, int rank, std::uint64_t bytes,
                             std::chrono::steady_clock::time_point deadline) {
  auto raw = from_hex(id_hex);
  if (!raw || raw->size() != 128) return fail("malformed NCCL id from rank 0");
  if (rank != 0 && rank != 1) return fail("a pair has ranks 0 and 1 only");
  if (bytes == 0) return fail("fake: no bytes");
  if (auto dir = env("DDP_FAKE_NCCL_DIR")) {
    if (auto met = meet(*dir, id_hex, rank, deadline); !met) return std::unexpected(met.error());
  }
  if (auto why = env("DDP_FAKE_NCCL_FAIL")) return fail(*why);
  const auto gbps = env("DDP_FAKE_NCCL_GBPS");
  return gbps ? std::strtod(gbps->c_str(), nullptr) : 20.0;
}

}  // namespace ddp::check
