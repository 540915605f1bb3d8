#include "ddp-watch/trust.hpp"

#include "ddp-watch/crash.hpp"
#include "ddp-watch/evidence.hpp"

namespace ddp::watch {

Writer writer_of(const Line& line, int fd, bool whole, bool srun) {
  if (!srun) return Writer::unknown;
  if (line.task >= 0) return Writer::task;
  return fd == 2 && whole ? Writer::srun : Writer::unknown;
}

bool is_node_name(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::optional<Suspect> parse_check_suspect(std::string_view text, std::string_view run_tag) {
  constexpr std::string_view k_prefix = "ddp-check: suspect ";
  if (!text.starts_with(k_prefix)) return std::nullopt;
  if (!run_tag.empty()) {
    auto untagged = without_run_tag(text, run_tag);
    if (!untagged) return std::nullopt;
    text = *untagged;
  }
  text.remove_prefix(k_prefix.size());
  const std::size_t colon = text.find(": ");
  if (colon == std::string_view::npos || !is_node_name(text.substr(0, colon))) return std::nullopt;
  Suspect s;
  s.node = std::string(text.substr(0, colon));
  text.remove_prefix(colon + 2);
  const std::size_t colon2 = text.find(": ");
  if (colon2 == std::string_view::npos) return std::nullopt;
  auto fault = parse_fault(text.substr(0, colon2));
  if (!fault || *fault == Fault::hang || *fault == Fault::hardware_signal ||
      *fault == Fault::node_failure) {
    return std::nullopt;
  }
  s.fault = *fault;
  s.evidence = std::string(text.substr(colon2 + 2, k_max_evidence));
  if (s.evidence.empty()) return std::nullopt;
  return s;
}

void EvidenceGate::note(std::string text) {
  if (notes_.size() < 8) notes_.push_back(std::move(text));
}

void EvidenceGate::add(const Line& line, int fd, bool whole) {
  const Writer writer = writer_of(line, fd, whole, srun_);
  if (writer == Writer::srun) {
    std::string why;
    for (Suspect& s : srun_suspects(line.text, &why)) {
      // Past k_max_suspects distinct nodes from srun nothing more can be kept (suspects()).
      if (named_seen_.size() > k_max_suspects + k_max_check_lines) break;
      if (named_seen_.insert({-1, s.node}).second) named_.push_back({-1, std::move(s)});
    }
    if (!why.empty()) note(std::move(why));
    return;
  }
  if (preflight_ && writer == Writer::task && fd == 1 && line.task >= 0) {
    auto s = parse_check_suspect(line.text, run_tag_);
    if (!s || check_lines_ >= k_max_check_lines) return;
    if (named_seen_.insert({line.task, s->node}).second) {
      ++check_lines_;
      named_.push_back({line.task, std::move(*s)});
    }
  }
}

// The named nodes that count (srun's, and rank 0's task's), each once, in the order of the
// lines: at most k_max_suspects + 1, so that one more than the most says there were more.
std::vector<const Suspect*> EvidenceGate::counted() const {
  std::vector<const Suspect*> out;
  std::set<std::string_view> seen;
  for (const Named& n : named_) {
    if (n.task != -1 && n.task != head_task_) continue;
    if (!seen.insert(n.suspect.node).second) continue;
    out.push_back(&n.suspect);
    if (out.size() > k_max_suspects) break;
  }
  return out;
}

std::vector<Suspect> EvidenceGate::suspects() const {
  std::vector<Suspect> out;
  for (const Suspect* s : counted()) {
    if (out.size() == k_max_suspects) break;
    out.push_back(*s);
  }
  return out;
}

std::vector<std::string> EvidenceGate::notes() const {
  std::vector<std::string> out = notes_;
  if (counted().size() > k_max_suspects && out.size() < 8)
    out.push_back("more than " + std::to_string(k_max_suspects) +
                  " nodes named: the rest are not read as evidence");
  return out;
}

}  // namespace ddp::watch
