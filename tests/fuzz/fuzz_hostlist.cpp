// libFuzzer: Slurm hostlist expressions (SLURM_STEP_NODELIST). parse() and count() must agree
// on every input, and indexing must stay inside the list.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libddp/core/hostlist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto list = ddp::Hostlist::parse(text);
  auto count = ddp::Hostlist::count(text);
  if (list.has_value() != count.has_value()) __builtin_trap();
  if (!list) return 0;
  if (list->size() != *count || list->size() == 0) __builtin_trap();
  // Decoding the last name walks every bracket group; huge ranges must not be expanded.
  (void)list->at(list->size() - 1);
  if (list->size() <= 64) (void)list->expand();
  return 0;
}
