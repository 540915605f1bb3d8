#include "gen/app/job_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

namespace ddpgen::app {
namespace {

// Bytes read per look at an output file, and the most of an existing output shown on attaching.
constexpr std::size_t k_chunk = 1 << 20;
// Where a sweep's script says that its output continues in another file: its first lines.
constexpr std::size_t k_head = 16 << 10;
constexpr int k_head_lines = 32;

}  // namespace

std::string read_more(OutputTail& t, std::vector<std::string>& notes) {
  const int fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  // Only a regular file: an output of /dev/null or a FIFO is nothing to show.
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    bool mid_line = false;
    if (!t.attached) {
      t.attached = true;
      if (static_cast<std::size_t>(st.st_size) > k_chunk) {
        t.offset = st.st_size - static_cast<off_t>(k_chunk);
        mid_line = true;
        notes.push_back("the first " + std::to_string(t.offset) + " bytes of " + t.path +
                        " are not shown (ddpgen logs prints them all)");
      }
    } else if (st.st_size < t.offset) {
      notes.push_back(t.path + " began again (the job runs again; Slurm truncated its output)");
      t.offset = 0;
      t.lines.rest();
    }
    out.resize(k_chunk);
    const ssize_t n = ::pread(fd, out.data(), out.size(), t.offset);
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    t.offset += static_cast<off_t>(out.size());
    // Started inside a line: shown from the next whole one.
    if (mid_line) out.erase(0, out.find('\n') == std::string::npos ? 0 : out.find('\n') + 1);
  }
  ::close(fd);
  return out;
}

std::optional<std::string> continued_in(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string head;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    head.resize(k_head);
    const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
    head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  std::size_t at = 0;
  for (int line = 0; line < k_head_lines && at < head.size(); ++line) {
    const std::size_t end = head.find('\n', at);
    if (end == std::string::npos) break;  // a line still being written
    const std::string_view text(head.data() + at, end - at);
    for (std::string_view lead : {"ddpgen: output continues in ", "ddpgen: errors continue in "})
      if (text.starts_with(lead) && text.size() > lead.size() && text[lead.size()] == '/')
        return std::string(text.substr(lead.size()));
    at = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string> output_files(const JobStatus& s) {
  std::vector<std::string> out;
  auto add = [&](const std::string& path) {
    if (!path.empty() && path != "/dev/null" && std::ranges::find(out, path) == out.end())
      out.push_back(path);
  };
  for (const auto& path : {s.std_out, s.std_err}) {
    add(path);
    if (!path.empty() && path != "/dev/null")
      if (auto next = continued_in(path)) add(*next);
  }
  return out;
}

std::string last_verdict_in(const JobStatus& s) {
  std::string verdict;
  for (const auto& path : output_files(s)) {
    OutputTail t{path};
    std::vector<std::string> ignored;
    for (const auto& line : t.lines.feed(read_more(t, ignored)))
      if (classify_line(line) == LineKind::verdict) verdict = line;
  }
  return verdict;
}

}  // namespace ddpgen::app
