// NCCL all-reduce timing through the CUDA runtime API; no device code, so no nvcc needed.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "ddp-check/nccl/bandwidth.hpp"
#include "ddp-check/nccl/nccl_io.hpp"

namespace ddp::check {
namespace {

constexpr int k_warmup = 5;
constexpr int k_iterations = 20;

std::string cuda_text(cudaError_t err) {
  return cudaGetErrorString(err);
}

}  // namespace

std::optional<std::string> nccl_unavailable() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice) return "no GPU visible";
  // Without a driver the runtime answers "driver version is insufficient", which sends people
  // looking for a driver upgrade on nodes that have no GPU at all.
  if (err == cudaErrorInsufficientDriver && ::access("/proc/driver/nvidia/version", F_OK) != 0)
    return "no NVIDIA driver on this node (/proc/driver/nvidia/version absent)";
  if (err != cudaSuccess) return "no usable GPU (" + cuda_text(err) + ")";
  if (count == 0) return "no GPU visible";
  return std::nullopt;
}

Result<std::string> nccl_new_id() {
  ncclUniqueId id;
  ncclResult_t rc = ncclGetUniqueId(&id);
  if (rc != ncclSuccess) return fail(std::string("ncclGetUniqueId: ") + ncclGetErrorString(rc));
  std::vector<unsigned char> bytes(sizeof id.internal);
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return to_hex(bytes);
}

Result<NcclTiming> nccl_allreduce(const std::string& id_hex, int rank, int world, int local_rank,
                                  std::uint64_t bytes) {
  ncclUniqueId id;
  auto raw = from_hex(id_hex);
  if (!raw || raw->size() != sizeof id.internal) return fail("malformed NCCL id from rank 0");
  std::memcpy(id.internal, raw->data(), raw->size());

  int count = 0;
  if (auto err = cudaGetDeviceCount(&count); err != cudaSuccess || count == 0) {
    return fail("no usable GPU: " + cuda_text(err));
  }
  NcclTiming timing;
  timing.device = local_rank % count;
  if (auto err = cudaSetDevice(timing.device); err != cudaSuccess) {
    return fail("cudaSetDevice(" + std::to_string(timing.device) + "): " + cuda_text(err));
  }
  const std::size_t elements = bytes / sizeof(float);
  float* buffer = nullptr;
  if (auto err = cudaMalloc(&buffer, elements * sizeof(float)); err != cudaSuccess) {
    return fail("cudaMalloc(" + std::to_string(bytes) + "): " + cuda_text(err));
  }
  cudaMemset(buffer, 0, elements * sizeof(float));
  cudaStream_t stream{};
  cudaStreamCreate(&stream);
  ncclComm_t comm{};
  Result<NcclTiming> result = timing;
  ncclResult_t rc = ncclCommInitRank(&comm, world, id, rank);
  if (rc != ncclSuccess) {
    result = fail(std::string("ncclCommInitRank: ") + ncclGetErrorString(rc));
  } else {
    cudaEvent_t begin{}, end{};
    cudaEventCreate(&begin);
    cudaEventCreate(&end);
    for (int i = 0; i < k_warmup + k_iterations && rc == ncclSuccess; ++i) {
      if (i == k_warmup) cudaEventRecord(begin, stream);
      rc = ncclAllReduce(buffer, buffer, elements, ncclFloat, ncclSum, comm, stream);
    }
    cudaEventRecord(end, stream);
    cudaError_t err = cudaStreamSynchronize(stream);
    float ms = 0;
    cudaEventElapsedTime(&ms, begin, end);
    if (rc != ncclSuccess) {
      result = fail(std::string("ncclAllReduce: ") + ncclGetErrorString(rc));
    } else if (err != cudaSuccess) {
      result = fail("all-reduce: " + cuda_text(err));
    } else {
      result->seconds = ms / 1e3 / k_iterations;
    }
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    ncclCommDestroy(comm);
  }
  cudaStreamDestroy(stream);
  cudaFree(buffer);
  return result;
}

}  // namespace ddp::check
