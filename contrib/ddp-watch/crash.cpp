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

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Lines with which srun or slurmstepd announce that they end the whole step: what dies after
// them was stopped, not failing on its own. A task's own line saying so is not one.
bool is_stop_notice(const Line& line, bool srun) {
  const std::string_view text = line.text;
  if (srun && is_srun_line(line)) {
    return contains(text, "Terminating StepId=") || contains(text, "Job step aborted");
  }
  return is_stepd_line(text) && contains(text, "*** STEP ") && contains(text, " CANCELLED ");
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

bool is_srun_line(const Line& line) {
  return line.task == -1 && line.text.starts_with("srun: ");
}

bool is_stepd_line(std::string_view text) {
  constexpr std::string_view k_stepd = "slurmstepd";
  if (!text.starts_with(k_stepd)) return false;
  text.remove_prefix(k_stepd.size());
  if (text.starts_with("-")) {
    const std::size_t colon = text.find(": ");
    // A node name: no blank in it.
    if (colon == std::string_view::npos || text.substr(0, colon).find(' ') != text.npos) {
      return false;
    }
    text.remove_prefix(colon);
  }
  return text.starts_with(": ");
}

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
  constexpr std::string_view k_srun_error = "srun: error: ";
  if (!text.starts_with(k_srun_error)) return std::nullopt;
  text.remove_prefix(k_srun_error.size());
  std::size_t colon = text.find(": task");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  TaskEnd end;
  end.node = std::string(text.substr(0, colon));
  text.remove_prefix(colon + 2);
  text.remove_prefix(text.starts_with("tasks ") ? 6 : text.starts_with("task ") ? 5 : 0);
  std::size_t list_end = text.find(": ");
  if (list_end == std::string_view::npos) return std::nullopt;
  auto tasks = parse_task_list(text.substr(0, list_end), k_max_tasks - 1);
  if (tasks && tasks->size() > static_cast<std::size_t>(k_max_tasks)) return std::nullopt;
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

void CrashReader::add(const Line& line) {
  std::string_view text = line.text;
  if (srun_ && is_srun_line(line)) {
    if (auto end = parse_task_end(text)) {
      if (task_ids_ + end->tasks.size() > static_cast<std::size_t>(k_max_tasks)) return;
      task_ids_ += end->tasks.size();
      end->after_stop = stopping_;
      facts_.ends.push_back(std::move(*end));
      return;
    }
  }
  if (is_stop_notice(line, srun_)) stopping_ = true;
  if (is_stepd_line(text) && (contains(text, "oom_kill event") || contains(text, "oom-kill"))) {
    facts_.oom_event = true;
  }
  if (line.task >= 0 && is_exception_line(text)) add_error(line.task, text);
  add_torchrun(line.task, text);
}

// Keeps the task's last exception line, cut to what a message shows.
void CrashReader::add_error(int task, std::string_view text) {
  text = text.substr(0, 512);
  auto it = std::find_if(facts_.errors.begin(), facts_.errors.end(),
                         [&](const auto& e) { return e.first == task; });
  if (it != facts_.errors.end()) {
    it->second = std::string(text);
  } else if (facts_.errors.size() < static_cast<std::size_t>(k_max_tasks)) {
    facts_.errors.emplace_back(task, std::string(text));
  }
}

void CrashReader::flush(Table& table) {
  const WorkerFailure& w = table.worker;
  if (table.in_worker && w.rank >= 0 && facts_.workers.size() < 65536) {
    auto same = [&](const WorkerFailure& o) { return o.rank == w.rank; };
    if (std::none_of(facts_.workers.begin(), facts_.workers.end(), same)) {
      facts_.workers.push_back(w);
    }
  }
  table.in_worker = false;
}

// torchrun's failure table, read per task (two agents may print theirs at once): "Failures:"
// or "Root Cause (first observed failure):" opens it, "[0]:" opens an entry, "  rank      : 3
// (local_rank: 1)" and the like fill it, a rule ("-----") closes the entry and "=====" the
// table.
void CrashReader::add_torchrun(int task, std::string_view text) {
  std::string_view t = trim(text);
  if (t == "Failures:" || t == "Root Cause (first observed failure):") {
    Table& table = tables_[task];
    flush(table);
    table.open = true;
    table.root_cause = t != "Failures:";
    return;
  }
  auto it = tables_.find(task);
  if (it == tables_.end() || !it->second.open) return;
  Table& table = it->second;
  if (t.size() >= 4 && t.front() == '[' && t.ends_with("]:") &&
      parse_int(t.substr(1, t.size() - 3))) {
    flush(table);
    table.worker = WorkerFailure{};
    table.worker.root_cause = table.root_cause;
    table.in_worker = true;
    return;
  }
  if (t.starts_with("=====") || t.starts_with("-----")) {
    flush(table);
    if (t.starts_with("=====")) tables_.erase(it);
    return;
  }
  if (!table.in_worker) return;
  std::size_t colon = t.find(':');
  if (colon == std::string_view::npos) return;
  std::string_view key = trim(t.substr(0, colon));
  std::string_view value = trim(t.substr(colon + 1));
  WorkerFailure& w = table.worker;
  if (key == "host") {
    w.host = std::string(value.substr(0, 256));
  } else if (key == "time") {
    w.time = std::string(value.substr(0, 64));
  } else if (key == "exitcode") {
    w.exit_code = parse_int(value.substr(0, value.find(' '))).value_or(0);
  } else if (key == "rank") {
    w.rank = parse_int(value.substr(0, value.find(' '))).value_or(-1);
    std::size_t local = value.find("local_rank: ");
    if (local != std::string_view::npos) {
      std::string_view l = value.substr(local + 12);
      w.local_rank = parse_int(l.substr(0, l.find(')'))).value_or(-1);
    }
  }
}

}  // namespace ddp::watch
