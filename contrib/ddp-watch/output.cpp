#include "ddp-watch/output.hpp"

#include <algorithm>

#include "libddp/util/text.hpp"

namespace ddp::watch {

using ddp::text::parse_int;

Line split_label(std::string_view raw) {
  std::size_t i = raw.find_first_not_of(' ');
  std::size_t digits_end = raw.find_first_not_of("0123456789", i);
  // Digits, then ": " (srun writes "3: " even before an empty line's end).
  if (i == std::string_view::npos || digits_end == i || digits_end == std::string_view::npos ||
      raw[digits_end] != ':' || digits_end - i > 7) {
    return Line{-1, std::string(raw)};
  }
  auto task = parse_int(raw.substr(i, digits_end - i));
  std::size_t text_at = digits_end + 1;
  if (text_at < raw.size() && raw[text_at] == ' ') ++text_at;
  return Line{task.value_or(-1), std::string(raw.substr(text_at))};
}

std::optional<std::vector<int>> parse_task_list(std::string_view text, int max_task) {
  std::vector<int> out;
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view term = text.substr(0, comma);
    std::size_t dash = term.find('-');
    auto first = parse_int(term.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : parse_int(term.substr(dash + 1));
    if (!first || !last || *first > *last || *last > max_task) return std::nullopt;
    for (int t = *first; t <= *last; ++t) out.push_back(t);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::vector<BufferedLine> LineBuffer::add(std::string_view bytes) {
  std::vector<BufferedLine> lines;
  // Only the new bytes are searched: a line arriving a byte at a time costs linear time.
  std::size_t start = 0;
  std::size_t from = pending_.size();
  pending_.append(bytes);
  for (std::size_t nl; (nl = pending_.find('\n', from)) != std::string::npos;
       start = from = nl + 1) {
    lines.push_back({pending_.substr(start, nl - start), continued_});
    continued_ = false;
  }
  pending_.erase(0, start);
  if (pending_.size() > k_max_line) {
    lines.push_back({std::move(pending_), continued_});
    pending_.clear();
    continued_ = true;
  }
  return lines;
}

std::optional<BufferedLine> LineBuffer::finish() {
  if (pending_.empty()) return std::nullopt;
  BufferedLine rest{std::move(pending_), continued_};
  pending_.clear();
  continued_ = false;
  return rest;
}

}  // namespace ddp::watch
