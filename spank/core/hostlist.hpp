// Slurm hostlist expressions ("node[001-004,7],gpu-a[1-2]x[3-4]") without expanding them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace ddp {

// A parsed hostlist. Indexing decodes the n-th name on the fly, so a 10,000-node range costs
// the same as a 1-node one. Order is Slurm's: comma-separated terms left to right; within a
// term with several bracket groups the leftmost group varies slowest.
class Hostlist {
 public:
  // Parses `text` as Slurm writes it; an empty, unbalanced or otherwise malformed list is an error.
  static Result<Hostlist> parse(std::string_view text);

  // Number of names in the list (duplicates counted).
  std::size_t size() const { return size_; }
  // The i-th name; requires i < size().
  std::string at(std::size_t i) const;
  // Every name, in order.
  std::vector<std::string> expand() const;

  // Implementation detail, public only so that the parser can build it.
  struct Range {
    unsigned long first = 0;
    unsigned long last = 0;
    int width = 0;  // zero-padded width, 0 for none
  };
  struct Part {  // literal text, or (when ranges is non-empty) one bracket group
    std::string literal;
    std::vector<Range> ranges;
    std::size_t count = 1;
  };
  struct Term {
    std::vector<Part> parts;
    std::size_t count = 1;
  };

 private:
  std::vector<Term> terms_;
  std::size_t size_ = 0;
};

// Parses SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("2(x3),1") into one count per node.
Result<std::vector<unsigned>> parse_tasks_per_node(std::string_view text);

}  // namespace ddp
