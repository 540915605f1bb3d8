// Step output as srun --label printed it on the embedded cluster (torch 1.13, Python 3.11),
// shortened, for the tests of the traceback parser, the verdict and the crash summary.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "ddp-watch/output.hpp"

namespace fixtures {

inline std::vector<ddp::watch::Line> lines(const std::string& text) {
  std::vector<ddp::watch::Line> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(ddp::watch::split_label(l));
  return out;
}

// The dump of a rank waiting in all_reduce (TASK: srun's label).
inline std::string waiting(int task) {
  std::string t = std::to_string(task) + ": ";
  return t + "Fatal Python error: Aborted\n" + t + "\n" + t +
         "Current thread 0x00007f8d99f59040 (most recent call first):\n" + t +
         "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line "
         "1541 in all_reduce\n" +
         t + "  File \"/work/train.py\", line 12 in <module>\n" + t + "\n" + t +
         "Extension modules: torch._C, numpy.core._multiarray_umath (total: 2)\n";
}

// Rank 4 stuck in its data loading, printed interleaved with rank 2's dump and srun's lines.
inline const std::string k_stall =
    "2: Fatal Python error: Aborted\n"
    "2: \n"
    "4: Fatal Python error: Aborted\n"
    "4: \n"
    "2: Current thread 0x00007fa3f89a7040 (most recent call first):\n"
    "2:   File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541 "
    "in all_reduce\n"
    "4: Thread 0x00007fde00001000 (most recent call first):\n"
    "4:   File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "4:   File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
    "4: \n"
    "4: Current thread 0x00007fde1b2e8040 (most recent call first):\n"
    "4:   File \"/work/train.py\", line 8 in load_batch\n"
    "4:   File \"/work/train.py\", line 11 in <module>\n"
    "4: \n"
    "2:   File \"/work/train.py\", line 12 in <module>\n"
    "2: \n"
    "4: Extension modules: torch._C (total: 1)\n"
    "2: Extension modules: torch._C (total: 1)\n";

inline const std::string k_stall_ends =
    "srun: error: node03: tasks 4-5: Aborted\n"
    "srun: error: node02: tasks 2-3: Aborted\n"
    "srun: error: node01: tasks 0-1: Aborted (core dumped)\n";

}  // namespace fixtures
