#include "ddp-watch/step_output.hpp"

#include "ddp-watch/evidence.hpp"

namespace ddp::watch {

StepOutput::StepOutput(const OutputMode& mode)
    : mode_(mode), gate_(mode.preflight, mode.labels, mode.run_tag) {
  reader_.set_task_is_rank(!mode.torchrun);
  reader_.set_srun(mode.labels);
}

// One line of the step as written out: with its label when asked to keep them.
Write StepOutput::forward(const Line& l, std::string_view raw, int fd) const {
  if (l.task < 0 || mode_.keep_labels) {
    return {fd, std::string(raw.empty() ? std::string_view(l.text) : raw) + "\n"};
  }
  return {fd, l.text + "\n"};
}

std::vector<Write> StepOutput::line(std::string_view raw, int fd, bool stalled, bool continued) {
  std::vector<Write> out;
  Line whole = mode_.labels ? split_label(raw) : Line{-1, std::string(raw)};
  // An unlabelled line that is not provably srun's is read as nobody's (trust.hpp).
  if (whole.task == -1 && writer_of(whole, fd, !continued, mode_.labels) != Writer::srun) {
    whole.task = k_unknown_writer;
  }
  if (whole.task >= 0) tasks_.insert(whole.task);
  if (!stalled || whole.task < 0) out.push_back(forward(whole, raw, fd));
  bool first = !continued;
  for (Line& l : split_at_dump(std::move(whole))) {
    // After the stack request the dumps go to the stacks file, not into the job's output;
    // what else the tasks print meanwhile is forwarded as before.
    if (stalled && l.task >= 0 && !dumps_.in_dump(l)) {
      out.push_back(
          forward(l, mode_.keep_labels ? std::to_string(l.task) + ": " + l.text : "", fd));
    }
    reader_.add(l);
    // Suspect lines from the start of the line only: a dump split out of it is not one.
    if (mode_.heal) gate_.add(l, fd, first);
    first = false;
    if (stalled && captured_bytes_ < k_max_captured) {
      captured_bytes_ += l.text.size() + 16;
      captured_.push_back(std::move(l));
    }
  }
  return out;
}

std::vector<Write> StepOutput::helper_line(std::string_view raw) {
  StepProcess p;
  if (parse_dump_notice(raw, p)) {
    notices_.push_back(p);
    return {};
  }
  return {{2, std::string(raw) + "\n"}};
}

}  // namespace ddp::watch
