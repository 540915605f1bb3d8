#include "ddp-watch/crash.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

using ddp::text::parse_int;
using ddp::text::trim;

struct SignalWords {
  int number;
  std::string_view name;
  std::string_view words;  // as strsignal() writes them, which srun prints
};

constexpr std::array<SignalWords, 12> k_signals = {{
    {1, "SIGHUP", "Hangup"},
    {2, "SIGINT", "Interrupt"},
    {3, "SIGQUIT", "Quit"},
    {4, "SIGILL", "Illegal instruction"},
    {6, "SIGABRT", "Aborted"},
    {7, "SIGBUS", "Bus error"},
    {8, "SIGFPE", "Floating point exception"},
    {9, "SIGKILL", "Killed"},
    {10, "SIGUSR1", "User defined signal 1"},
    {11, "SIGSEGV", "Segmentation fault"},
    {12, "SIGUSR2", "User defined signal 2"},
    {15, "SIGTERM", "Terminated"},
}};

// Lines with which srun or slurmstepd announce that they end the whole step: what dies after
// them was stopped, not failing on its own.
bool is_stop_notice(std::string_view text) {
  return text.find("Terminating StepId=") != std::string_view::npos ||
         text.find("Job step aborted") != std::string_view::npos ||
         (text.find("*** STEP ") != std::string_view::npos &&
          text.find(" CANCELLED ") != std::string_view::npos);
}

// "ValueError: bad batch", "torch.distributed.DistBackendError: ...": the last line of a
// Python traceback.
bool is_exception_line(std::string_view text) {
  std::string_view head = text.substr(0, text.find(':'));
  if (head.empty() || head.find(' ') != std::string_view::npos) return false;
  return head.ends_with("Error") || head.ends_with("Exception") || head.ends_with("Interrupt") ||
         head.ends_with("Exit") || head.ends_with("Failure");
}

}  // namespace

int signal_from_text(std::string_view text) {
  text = text.substr(0, text.find(" (core dumped)"));
  for (const SignalWords& s : k_signals) {
    if (text == s.words) return s.number;
  }
  return 0;
}

std::string signal_name(int signal) {
  for (const SignalWords& s : k_signals) {
    if (s.number == signal) return std::string(s.name);
  }
  return "signal " + std::to_string(signal);
}

std::optional<TaskEnd> parse_task_end(std::string_view text) {
  constexpr std::string_view k_prefix = "srun: error: ";
  if (!text.starts_with(k_prefix)) return std::nullopt;
  text.remove_prefix(k_prefix.size());
  std::size_t colon = text.find(": task");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  TaskEnd end;
  end.node = std::string(text.substr(0, colon));
  text.remove_prefix(colon + 2);
  text.remove_prefix(text.starts_with("tasks ") ? 6 : text.starts_with("task ") ? 5 : 0);
  std::size_t list_end = text.find(": ");
  if (list_end == std::string_view::npos) return std::nullopt;
  auto tasks = parse_task_list(text.substr(0, list_end));
  if (!tasks) return std::nullopt;
  end.tasks = std::move(*tasks);
  end.how = std::string(trim(text.substr(list_end + 2)));
  constexpr std::string_view k_exited = "Exited with exit code ";
  if (end.how.starts_with(k_exited)) {
    end.exit_code = parse_int(std::string_view(end.how).substr(k_exited.size())).value_or(-1);
  } else if (end.how.starts_with("Out Of Memory") || end.how.starts_with("Out of memory")) {
    end.oom = true;
    end.signal = 9;
  } else {
    end.signal = signal_from_text(end.how);
    if (end.signal == 0) return std::nullopt;
  }
  return end;
}

bool is_peer_error(std::string_view text) {
  constexpr std::array<std::string_view, 10> k_marks = {"Connection closed by peer",
                                                        "Connection reset by peer",
                                                        "Broken pipe",
                                                        "Socket Timeout",
                                                        "NCCL communicator was aborted",
                                                        "remote process exited",
                                                        "DistNetworkError",
                                                        "Connection refused",
                                                        "ECONNRESET",
                                                        "Timed out waiting for"};
  return std::any_of(k_marks.begin(), k_marks.end(),
                     [&](std::string_view m) { return text.find(m) != std::string_view::npos; });
}

void CrashReader::add(const Line& line) {
  std::string_view text = line.text;
  if (line.task < 0) {
    if (auto end = parse_task_end(text)) {
      end->after_stop = stopping_;
      facts_.ends.push_back(std::move(*end));
      return;
    }
  }
  if (is_stop_notice(text)) stopping_ = true;
  if (text.find("oom_kill event") != std::string_view::npos ||
      text.find("oom-kill") != std::string_view::npos) {
    facts_.oom_event = true;
  }
  if (line.task >= 0 && is_exception_line(text)) {
    auto it = std::find_if(facts_.errors.begin(), facts_.errors.end(),
                           [&](const auto& e) { return e.first == line.task; });
    if (it == facts_.errors.end())
      facts_.errors.emplace_back(line.task, std::string(text));
    else
      it->second = std::string(text);
  }
  add_torchrun(text);
}

// torchrun's failure table: "[0]:" opens an entry, "  rank      : 3 (local_rank: 1)" and the
// like fill it, a rule ("=====", "-----") closes it.
void CrashReader::add_torchrun(std::string_view text) {
  auto flush = [this] {
    if (in_worker_ && worker_.rank >= 0) {
      auto same = [&](const WorkerFailure& w) { return w.rank == worker_.rank; };
      if (std::none_of(facts_.workers.begin(), facts_.workers.end(), same)) {
        facts_.workers.push_back(worker_);
      }
    }
    in_worker_ = false;
  };
  std::string_view t = trim(text);
  if (t.size() >= 4 && t.front() == '[' && t.ends_with("]:") &&
      parse_int(t.substr(1, t.size() - 3))) {
    flush();
    worker_ = WorkerFailure{};
    in_worker_ = true;
    return;
  }
  if (t.starts_with("=====") || t.starts_with("-----")) flush();
  if (!in_worker_) return;
  std::size_t colon = t.find(':');
  if (colon == std::string_view::npos) return;
  std::string_view key = trim(t.substr(0, colon));
  std::string_view value = trim(t.substr(colon + 1));
  if (key == "host")
    worker_.host = std::string(value);
  else if (key == "time")
    worker_.time = std::string(value);
  else if (key == "exitcode")
    worker_.exit_code = parse_int(value.substr(0, value.find(' '))).value_or(0);
  else if (key == "rank") {
    worker_.rank = parse_int(value.substr(0, value.find(' '))).value_or(-1);
    std::size_t local = value.find("local_rank: ");
    if (local != std::string_view::npos) {
      std::string_view l = value.substr(local + 12);
      worker_.local_rank = parse_int(l.substr(0, l.find(')'))).value_or(-1);
    }
  }
}

}  // namespace ddp::watch
