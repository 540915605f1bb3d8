// NCCL send/recv between the two nodes of a pair, through the CUDA runtime API (no device code,
// so no nvcc). Every wait polls against the deadline; a communicator that has not finished by
// then is aborted, and every buffer, stream and event is released on every path.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "ddp-check/nccl/bandwidth.hpp"
#include "ddp-check/nccl/nccl_io.hpp"

namespace ddp::check {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto k_poll = std::chrono::microseconds(200);

std::string cuda_error(const char* call, cudaError_t err) {
  return std::string(call) + ": " + cudaGetErrorString(err);
}

std::string nccl_error(const char* call, ncclResult_t rc, ncclComm_t comm) {
  std::string text = std::string(call) + ": " + ncclGetErrorString(rc);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}

// The CUDA side of one measurement. Declared before the communicator, so released after it:
// an aborted communicator's kernels have stopped using the buffers by then.
struct DeviceSide {
  void* send = nullptr;
  void* recv = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t begin = nullptr;
  cudaEvent_t end = nullptr;
  DeviceSide() = default;
  DeviceSide(const DeviceSide&) = delete;
  DeviceSide& operator=(const DeviceSide&) = delete;
  ~DeviceSide() {
    if (end != nullptr) cudaEventDestroy(end);
    if (begin != nullptr) cudaEventDestroy(begin);
    if (stream != nullptr) cudaStreamDestroy(stream);
    if (recv != nullptr) cudaFree(recv);
    if (send != nullptr) cudaFree(send);
  }
};

// A communicator that is aborted unless it was finalized and destroyed.
struct Communicator {
  ncclComm_t comm = nullptr;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() {
    if (comm != nullptr) ncclCommAbort(comm);
  }
};

// The node's first visible GPU (the agent is LOCAL_RANK 0's process or the node's launcher),
// two buffers of `bytes`, a stream and two timing events.
Result<void> prepare(DeviceSide& d, std::uint64_t bytes) {
  int count = 0;
  if (auto err = cudaGetDeviceCount(&count); err != cudaSuccess)
    return fail(cuda_error("cudaGetDeviceCount", err));
  if (count == 0) return fail("no GPU visible");
  if (auto err = cudaSetDevice(0); err != cudaSuccess)
    return fail(cuda_error("cudaSetDevice", err));
  if (auto err = cudaMalloc(&d.send, bytes); err != cudaSuccess)
    return fail(cuda_error("cudaMalloc", err));
  if (auto err = cudaMalloc(&d.recv, bytes); err != cudaSuccess)
    return fail(cuda_error("cudaMalloc", err));
  if (auto err = cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking); err != cudaSuccess)
    return fail(cuda_error("cudaStreamCreate", err));
  if (auto err = cudaMemsetAsync(d.send, 1, bytes, d.stream); err != cudaSuccess)
    return fail(cuda_error("cudaMemsetAsync", err));
  if (auto err = cudaEventCreate(&d.begin); err != cudaSuccess)
    return fail(cuda_error("cudaEventCreate", err));
  if (auto err = cudaEventCreate(&d.end); err != cudaSuccess)
    return fail(cuda_error("cudaEventCreate", err));
  return {};
}

// Waits until the non-blocking communicator has done what `call` started (`rc` is what it
// returned): success, its error, or a timeout at the deadline.
Result<void> settle(ncclComm_t comm, ncclResult_t rc, const char* call,
                    Clock::time_point deadline) {
  while (rc == ncclInProgress) {
    if (Clock::now() >= deadline) return fail(std::string(call) + ": timed out");
    std::this_thread::sleep_for(k_poll);
    if (ncclResult_t q = ncclCommGetAsyncError(comm, &rc); q != ncclSuccess) rc = q;
  }
  if (rc != ncclSuccess) return fail(nccl_error(call, rc, comm));
  return {};
}

// One grouped send and receive of `bytes` with `peer`, enqueued on the stream.
Result<void> exchange(const DeviceSide& d, ncclComm_t comm, int peer, std::uint64_t bytes,
                      Clock::time_point deadline) {
  ncclResult_t rc = ncclGroupStart();
  if (rc != ncclSuccess) return fail(nccl_error("ncclGroupStart", rc, comm));
  rc = ncclSend(d.send, bytes, ncclInt8, peer, comm, d.stream);
  if (rc == ncclSuccess || rc == ncclInProgress)
    rc = ncclRecv(d.recv, bytes, ncclInt8, peer, comm, d.stream);
  // The group is closed whatever happened inside it.
  const ncclResult_t ended = ncclGroupEnd();
  if (rc != ncclSuccess && rc != ncclInProgress)
    return fail(nccl_error("ncclSend/ncclRecv", rc, comm));
  return settle(comm, ended, "ncclGroupEnd", deadline);
}

// Polls `event` until the stream reached it, the communicator reports an error, or the deadline.
Result<void> wait_event(cudaEvent_t event, ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    const cudaError_t err = cudaEventQuery(event);
    if (err == cudaSuccess) return {};
    if (err != cudaErrorNotReady) return fail(cuda_error("send/recv", err));
    // A broken connection to the peer shows here, not on the stream.
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state != ncclSuccess &&
        state != ncclInProgress) {
      return fail(nccl_error("send/recv", state, comm));
    }
    if (Clock::now() >= deadline) return fail("send/recv: did not finish in time");
    std::this_thread::sleep_for(k_poll);
  }
}

// Warm-ups, then the timed iterations between two events; this side's GB/s.
Result<double> transfer(const DeviceSide& d, ncclComm_t comm, int peer, std::uint64_t bytes,
                        Clock::time_point deadline) {
  for (int i = 0; i < k_pair_warmups + k_pair_iterations; ++i) {
    if (i == k_pair_warmups) {
      if (auto err = cudaEventRecord(d.begin, d.stream); err != cudaSuccess)
        return fail(cuda_error("cudaEventRecord", err));
    }
    if (auto r = exchange(d, comm, peer, bytes, deadline); !r) return std::unexpected(r.error());
  }
  if (auto err = cudaEventRecord(d.end, d.stream); err != cudaSuccess)
    return fail(cuda_error("cudaEventRecord", err));
  if (auto r = wait_event(d.end, comm, deadline); !r) return std::unexpected(r.error());
  float ms = 0;
  if (auto err = cudaEventElapsedTime(&ms, d.begin, d.end); err != cudaSuccess)
    return fail(cuda_error("cudaEventElapsedTime", err));
  if (!(ms > 0)) return fail("send/recv: no time measured");
  return static_cast<double>(bytes) * k_pair_iterations / (ms / 1e3) / 1e9;
}

}  // namespace

Result<double> nccl_sendrecv(const std::string& id_hex, int rank, std::uint64_t bytes,
                             std::chrono::steady_clock::time_point deadline) {
  ncclUniqueId id;
  auto raw = from_hex(id_hex);
  if (!raw || raw->size() != sizeof id.internal) return fail("malformed NCCL id from rank 0");
  if (rank != 0 && rank != 1) return fail("a pair has ranks 0 and 1 only");
  std::memcpy(id.internal, raw->data(), raw->size());
  DeviceSide device;
  if (auto r = prepare(device, bytes); !r) return std::unexpected(r.error());
  Communicator c;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that neither init nor a group's end can block past the deadline
  const ncclResult_t init = ncclCommInitRankConfig(&c.comm, 2, id, rank, &config);
  if (auto r = settle(c.comm, init, "ncclCommInitRankConfig", deadline); !r)
    return std::unexpected(r.error());
  auto gb_s = transfer(device, c.comm, 1 - rank, bytes, deadline);
  if (!gb_s) return gb_s;  // the communicator is aborted on the way out
  if (auto r = settle(c.comm, ncclCommFinalize(c.comm), "ncclCommFinalize", deadline); !r)
    return std::unexpected(r.error());
  const ncclResult_t destroyed = ncclCommDestroy(c.comm);
  c.comm = nullptr;
  if (destroyed != ncclSuccess) return fail(nccl_error("ncclCommDestroy", destroyed, nullptr));
  return gb_s;
}

}  // namespace ddp::check
