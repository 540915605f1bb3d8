// Slurm hostlist expressions ("node[001-004,7],gpu-a[1-2]x[3-4]") without expanding them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp {

// A parsed hostlist. Indexing decodes the n-th name on the fly, so a 10,000-node range costs
// the same as a 1-node one. Order is Slurm's: comma-separated terms left to right; within a
// term with several bracket groups the leftmost group varies slowest.
class Hostlist {
 public:
  // Parses `text` as Slurm writes it; an empty, unbalanced or otherwise malformed list is an error.
  static Result<Hostlist> parse(std::string_view text);
  // Validates `text` exactly like parse() and returns the number of names, allocating nothing.
  static Result<std::size_t> count(std::string_view text);

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

// `names` as one hostlist in Slurm's compressed notation, for a message: sorted naturally
// (node2 before node10), duplicates once, names that differ only in a trailing number joined
// in brackets, zero padding kept: {"node07", "node02", "node01", "node03"} -> "node[01-03,07]",
// {"login", "gpu10", "gpu9"} -> "gpu[9-10],login". Hostlist::parse() reads it back.
std::string format_hostlist(std::vector<std::string> names);

// Parses SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("2(x3),1") into one count per node.
Result<std::vector<unsigned>> parse_tasks_per_node(std::string_view text);

// What plan_step needs from a tasks-per-node list, read without expanding "8(x10000)".
struct TasksPerNodeSummary {
  std::size_t nodes = 0;          // entries after expanding repeats
  std::uint64_t tasks = 0;        // sum over all nodes
  unsigned on_node = 0;           // the count of node `node_id`; 0 when node_id >= nodes
  std::size_t first_crowded = 0;  // index of the first node with more than one task, or nodes
  unsigned most = 0;              // the largest count of any node
  std::uint64_t before = 0;       // tasks on the nodes listed before node `node_id`
};

// Validates `text` like parse_tasks_per_node() and summarizes it, allocating nothing.
Result<TasksPerNodeSummary> summarize_tasks_per_node(std::string_view text, std::size_t node_id);

}  // namespace ddp
