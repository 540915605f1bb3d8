// All-reduce bandwidth as nccl-tests reports it, and the NCCL unique id on the wire. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::check {

// Algorithm and bus bandwidth in GB/s (1e9 bytes/s). busbw = algbw * 2(n-1)/n: the factor
// nccl-tests applies to all-reduce so that the figure compares with the link speed.
// https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
struct Bandwidth {
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

// Bandwidth of an all-reduce of `bytes` per rank taking `seconds` among `ranks` ranks.
Bandwidth allreduce_bandwidth(std::uint64_t bytes, double seconds, std::uint32_t ranks);

// Lower-case hex of `bytes`, and back; nullopt for odd length or a non-hex digit.
std::string to_hex(const std::vector<unsigned char>& bytes);
std::optional<std::vector<unsigned char>> from_hex(std::string_view hex);

}  // namespace ddp::check
