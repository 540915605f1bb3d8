// nccl-tests' bandwidth arithmetic and hex coding.
#include "ddp-check/nccl/bandwidth.hpp"

namespace ddp::check {

Bandwidth allreduce_bandwidth(std::uint64_t bytes, double seconds, std::uint32_t ranks) {
  if (seconds <= 0 || ranks == 0) return {};
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double factor = 2.0 * (ranks - 1) / ranks;
  return {algbw, algbw * factor};
}

std::string to_hex(const std::vector<unsigned char>& bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += k_digits[b >> 4];
    out += k_digits[b & 0xf];
  }
  return out;
}

std::optional<std::vector<unsigned char>> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<unsigned char> out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<unsigned char>(hi * 16 + lo));
  }
  return out;
}

}  // namespace ddp::check
