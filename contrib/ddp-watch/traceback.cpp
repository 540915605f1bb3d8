#include "ddp-watch/traceback.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string_view>

#include "ddp-watch/dump_plan.hpp"

namespace ddp::watch {
namespace {

constexpr std::string_view k_fatal = "Fatal Python error: ";
constexpr std::string_view k_marker = "ddp-watch-dump: pid ";

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}

// `  File "F", line N in FUNC` -> Frame; nothing for any other line.
std::optional<Frame> parse_frame(std::string_view s) {
  constexpr std::string_view k_file = "  File \"";
  if (!starts_with(s, k_file)) return std::nullopt;
  s.remove_prefix(k_file.size());
  // The file name may itself hold quotes; the last `", line ` ends it.
  std::size_t end = s.rfind("\", line ");
  if (end == std::string_view::npos) return std::nullopt;
  Frame f;
  f.file = std::string(s.substr(0, end));
  std::string_view rest = s.substr(end + 8);
  auto [num_end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), f.line);
  if (ec != std::errc{}) return std::nullopt;
  rest.remove_prefix(static_cast<std::size_t>(num_end - rest.data()));
  if (starts_with(rest, " in ")) f.function = std::string(rest.substr(4));
  return f;
}

// Whether `s` opens a thread's stack: "Thread 0x... (most recent call first):", "Current
// thread 0x...", or "Stack (most recent call first):" (a dump of one thread only).
std::optional<bool> thread_header(std::string_view s) {
  if (!s.ends_with("(most recent call first):")) return std::nullopt;
  if (starts_with(s, "Current thread ")) return true;
  if (starts_with(s, "Thread ") || starts_with(s, "Stack ")) return false;
  return std::nullopt;
}

// Adds one line of task `task` to its open dump, if it has one.
void add_line(Dump& dump, std::string_view text) {
  dump.text.emplace_back(text);
  if (auto current = thread_header(text)) {
    dump.threads.push_back(Thread{*current, {}});
  } else if (auto frame = parse_frame(text); frame && !dump.threads.empty()) {
    dump.threads.back().frames.push_back(std::move(*frame));
  }
}

// Whether a line goes on with an open dump: blank, indented (a frame) or a thread's header.
bool continues_dump(std::string_view text) {
  return text.empty() || starts_with(text, "  ") || thread_header(text).has_value();
}

}  // namespace

bool DumpFilter::in_dump(const Line& line) {
  const std::string_view text = line.text;
  if (parse_dump_marker(text) != 0) {
    open_.erase(line.task);
    return true;
  }
  if (starts_with(text, k_fatal)) {
    open_[line.task] = true;
    return true;
  }
  auto it = open_.find(line.task);
  if (it == open_.end()) return false;
  if (continues_dump(text)) return true;
  open_.erase(it);
  return starts_with(text, "Extension modules:");
}

std::vector<Line> split_at_dump(Line line) {
  const std::size_t at = std::min(line.text.find(k_fatal), line.text.find(k_marker));
  if (at == std::string::npos || at == 0) return {std::move(line)};
  Line dump{line.task, line.text.substr(at)};
  line.text.resize(at);
  return {std::move(line), std::move(dump)};
}

std::vector<Dump> parse_dumps(const std::vector<Line>& lines) {
  std::vector<Dump> dumps;
  std::map<int, std::size_t> open;  // task -> index of its dump still being printed
  std::map<int, pid_t> marked;      // task -> pid of the marker its next dump follows
  for (const Line& line : lines) {
    std::string_view text = line.text;
    if (pid_t pid = parse_dump_marker(text); pid != 0) {
      marked[line.task] = pid;
      open.erase(line.task);
      continue;
    }
    if (starts_with(text, k_fatal)) {
      open[line.task] = dumps.size();
      Dump d;
      d.task = line.task;
      if (auto m = marked.find(line.task); m != marked.end()) {
        d.pid = m->second;
        marked.erase(m);
      }
      d.reason = std::string(text.substr(k_fatal.size()));
      d.text.emplace_back(text);
      dumps.push_back(std::move(d));
      continue;
    }
    auto it = open.find(line.task);
    if (it == open.end()) continue;
    Dump& dump = dumps[it->second];
    if (continues_dump(text)) {
      add_line(dump, text);
    } else {
      // "Extension modules: ..." ends a dump (Python 3.10+); so does any other output.
      if (starts_with(text, "Extension modules:")) dump.text.emplace_back(text);
      open.erase(it);
    }
  }
  return dumps;
}

const Thread* main_thread(const Dump& dump) {
  for (const Thread& t : dump.threads) {
    if (!t.frames.empty() && t.frames.back().function == "<module>") return &t;
  }
  return dump.threads.empty() ? nullptr : &dump.threads.back();
}

}  // namespace ddp::watch
