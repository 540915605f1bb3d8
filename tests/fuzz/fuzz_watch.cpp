// libFuzzer: ddp-watch's parsers of a step's output, which any task can write: srun's labels,
// faulthandler dumps and the helper's markers, srun's task-end lines, torchrun's failure tables,
// squeue's step list and the command line's launcher and output files. Every input must give a
// verdict and a summary without a crash, and the readers must agree with each other.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/dump_plan.hpp"
#include "ddp-watch/options.hpp"
#include "ddp-watch/report.hpp"
#include "ddp-watch/schedule.hpp"
#include "ddp-watch/traceback.hpp"

namespace {

using namespace ddp::watch;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> words;
  for (std::size_t at = 0; at < line.size();) {
    std::size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) words.emplace_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// The step's output as the watcher reads it: labelled lines, split where a dump starts, fed to
// the crash reader and the dump filter; the helper's notices as the helper prints them.
struct Read {
  std::vector<Line> lines;
  std::vector<StepProcess> notices;
  std::vector<int> tasks;
  CrashFacts facts;
};

Read read(std::string_view text, bool srun, bool per_node) {
  Read r;
  CrashReader reader;
  reader.set_srun(srun);
  reader.set_task_is_rank(!per_node);
  DumpFilter filter;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(at, end - at);
    at = end + 1;
    if (StepProcess p; parse_dump_notice(raw, p)) {
      StepProcess back;
      if (!parse_dump_notice(dump_notice(p), back) || back.pid != p.pid || back.rank != p.rank ||
          back.task != p.task || back.node != p.node || back.role != p.role) {
        broken("a notice does not read back as itself");
      }
      r.notices.push_back(p);
    }
    for (Line& l : split_at_dump(split_label(raw))) {
      if (l.task >= 0 && r.tasks.size() < 4096) r.tasks.push_back(l.task);
      (void)filter.in_dump(l);
      reader.add(l);
      r.lines.push_back(std::move(l));
    }
  }
  r.facts = reader.facts();
  return r;
}

void check_command_line(std::string_view text) {
  const std::string_view first = text.substr(0, text.find('\n'));
  const std::vector<std::string> words = words_of(first);
  (void)launches_per_node(words);
  const OutputFiles files = srun_output_files(words);
  if (files.plain.size() + files.patterned.size() > words.size()) broken("more files than words");
  for (const StepRow& s : parse_steps(std::string(text), "12")) {
    if (!s.id.starts_with("12.")) broken("a step not of the job");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool srun = (data[0] & 1) != 0, per_node = (data[0] & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  Read r = read(text, srun, per_node);
  const std::vector<Dump> dumps = parse_dumps(r.lines);
  const StallReport report = stall_report(r.lines, r.facts, r.tasks, r.notices);
  if (report.dumps != dumps.size()) broken("the report counts other dumps than the parser");
  if (report.verdict.empty()) broken("an empty verdict");
  if (report.stacks.rfind("ddp-watch: verdict: ", 0) != 0) broken("stacks without the verdict");
  std::size_t ids = 0;
  for (const TaskEnd& e : r.facts.ends) ids += e.tasks.size();
  if (ids > static_cast<std::size_t>(k_max_tasks)) broken("more task ids than the bound");
  if (!srun && !r.facts.ends.empty()) broken("srun's lines read from a command that is not srun");
  const std::string summary = crash_summary(r.facts);
  if (r.facts.ends.empty() && (per_node ? r.facts.workers.empty() : true) && !summary.empty()) {
    broken("a summary without an ending");
  }
  check_command_line(text);
  return 0;
}
