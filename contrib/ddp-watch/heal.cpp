// The healing decision, the suspect line and the record kept between runs.
#include "ddp-watch/heal.hpp"

#include <algorithm>
#include <set>

#include "libddp/core/hostlist.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

// A value for one field of the record or the suspect line: no tab, no line break.
std::string field(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The suspects of this run, one per node (the first evidence wins), only the run's own nodes;
// the others are said in one line, the first few by name.
std::vector<Suspect> distinct(const RunOutcome& outcome, std::vector<std::string>& log) {
  std::vector<Suspect> out;
  std::set<std::string> seen;
  const std::set<std::string> nodes(outcome.nodes.begin(), outcome.nodes.end());
  std::vector<std::string> ignored;
  std::size_t others = 0;
  for (const Suspect& s : outcome.suspects) {
    if (!seen.insert(s.node).second) continue;
    if (!nodes.empty() && !nodes.contains(s.node)) {
      if (ignored.size() < 8) {
        ignored.push_back(text::quote(s.node));
      } else {
        ++others;
      }
      continue;
    }
    out.push_back(s);
  }
  if (!ignored.empty()) {
    log.push_back("ignoring " + text::join(ignored, ", ") +
                  (others > 0 ? " and " + std::to_string(others) + " more" : "") + ": not " +
                  (ignored.size() + others == 1 ? "a node" : "nodes") + " of this run (" +
                  format_hostlist(outcome.nodes) + ")");
  }
  return out;
}

// Why excluding `count` more nodes is past the cap, or "".
std::string past_the_cap(const HealRecord& record, const RunOutcome& outcome, std::size_t count) {
  if (record.excluded.size() + count > k_max_excluded) {
    return "excluding " + std::to_string(count) + " more would make " +
           std::to_string(record.excluded.size() + count) + " across runs, more than " +
           std::to_string(k_max_excluded);
  }
  if (count == 0) return "";
  if (outcome.partition_nodes == 0) {
    return "the partition's size is unknown (" +
           (outcome.partition_unknown.empty() ? std::string("not asked")
                                              : outcome.partition_unknown) +
           "), so excluding " + std::to_string(count) +
           " more could leave the job pending for ever";
  }
  const std::size_t needed = outcome.nodes.size();
  const std::size_t after = outcome.excluded_before + count;
  if (after + needed > outcome.partition_nodes) {
    return "excluding " + std::to_string(count) + " more would leave " +
           std::to_string(outcome.partition_nodes > after ? outcome.partition_nodes - after : 0) +
           " of the partition's " + std::to_string(outcome.partition_nodes) + " nodes (" +
           std::to_string(outcome.excluded_before) + " excluded already) for a job of " +
           std::to_string(needed);
  }
  return "";
}

// Why the fault is not a node's, or "" when the suspects are to be believed.
std::string follows_the_job(const HealRecord& record, const RunOutcome& outcome,
                            const std::vector<Suspect>& suspects) {
  if (suspects.empty()) return "no node was named";
  if (!outcome.nodes.empty() && suspects.size() >= outcome.nodes.size()) {
    return "every node of the run was named";
  }
  for (const Suspect& s : suspects) {
    if (s.signature.empty()) continue;
    for (const Exclusion& e : record.excluded) {
      if (e.suspect.signature == s.signature && e.suspect.node != s.node) {
        return "it hung at " + s.signature + " on " + s.node + " as on " + e.suspect.node +
               " in run " + std::to_string(e.run) + ", a node since excluded";
      }
    }
  }
  return "";
}

// The value of `key` ("Name=") in scontrol's -o output, "" when absent: a whole field, at the
// start or after a blank (not "ReqExcNodeList=" for "ExcNodeList=").
std::string field_value(std::string_view show, std::string_view key) {
  for (std::size_t at = show.find(key); at != std::string_view::npos; at = show.find(key, at + 1)) {
    if (at > 0 && show[at - 1] != ' ' && show[at - 1] != '\n') continue;
    std::string_view value = show.substr(at + key.size());
    return std::string(value.substr(0, value.find_first_of(" \n")));
  }
  return "";
}

// More nodes than a partition can have: a TotalNodes past it is not believed.
constexpr std::size_t k_max_partition_nodes = 1'000'000;

std::string cap_text(const HealPolicy& policy) {
  return "heal.max_requeues: " + std::to_string(policy.max_requeues);
}

void decide_unblamed(HealDecision& d, const RunOutcome& outcome, const HealPolicy& policy,
                     const std::string& why) {
  if (d.record.unblamed == 0 && outcome.restarts < policy.max_requeues) {
    d.record.unblamed = 1;
    d.action = HealAction::requeue;
    d.log.push_back("not blaming a node: " + why +
                    "; requeueing once as it is, a second such failure ends the job");
    return;
  }
  d.action = HealAction::fail;
  if (d.record.unblamed > 0) {
    d.log.push_back("the fault follows the job: " + why + ", after a retry that failed too; " +
                    "it is the program's or its input's, not a node's: not requeueing");
  } else {
    d.log.push_back("not blaming a node: " + why + "; not requeueing: restarted " +
                    std::to_string(outcome.restarts) + " time(s), the cap (" + cap_text(policy) +
                    ")");
  }
}

}  // namespace

std::string format_record(const HealRecord& record) {
  std::string out;
  if (!record.job.empty()) {
    out += "job\t" + field(record.job) + "\t" + std::to_string(record.written) + "\n";
  }
  out += "unblamed\t" + std::to_string(record.unblamed) + "\n";
  if (record.requeue) out += "requeue\t" + field(text::join(record.requeue_exclude, ",")) + "\n";
  for (const Exclusion& e : record.excluded) {
    out += "excluded\t" + std::to_string(e.run) + "\t" + field(e.suspect.node) + "\t" +
           std::string(fault_name(e.suspect.fault)) + "\t" + field(e.suspect.signature) + "\t" +
           field(e.suspect.evidence) + "\n";
  }
  return out;
}

Result<HealRecord> parse_record(std::string_view text) {
  HealRecord record;
  int number = 0;
  for (std::string_view line : text::split(text, '\n')) {
    ++number;
    if (line.empty()) continue;
    auto fields = text::split(line, '\t');
    auto bad = [&] {
      return fail("line " + std::to_string(number) +
                  ": not a heal record line: " + text::quote(line));
    };
    if (fields[0] == "job" && fields.size() == 3 && number == 1) {
      auto written = text::parse_uint<unsigned>(fields[2]);
      if (!written || fields[1].empty()) return bad();
      record.job = std::string(fields[1]);
      record.written = *written;
    } else if (fields[0] == "requeue" && fields.size() == 2) {
      record.requeue = true;
      for (std::string_view node : text::split(fields[1], ',')) {
        if (node.empty()) continue;
        if (record.requeue_exclude.size() >= k_max_excluded) return bad();
        record.requeue_exclude.emplace_back(node);
      }
    } else if (fields[0] == "unblamed" && fields.size() == 2) {
      auto n = text::parse_uint<unsigned>(fields[1]);
      if (!n) return bad();
      record.unblamed = *n;
    } else if (fields[0] == "excluded" && fields.size() == 6) {
      auto run = text::parse_uint<unsigned>(fields[1]);
      auto fault = parse_fault(fields[3]);
      if (!run || !fault || fields[2].empty()) return bad();
      record.excluded.push_back(
          {*run, {std::string(fields[2]), *fault, std::string(fields[5]), std::string(fields[4])}});
    } else {
      return bad();
    }
  }
  return record;
}

HealDecision decide_heal(const HealRecord& record, const RunOutcome& outcome,
                         const HealPolicy& policy) {
  HealDecision d;
  d.record = record;
  if (!outcome.failed) return d;
  const std::vector<Suspect> suspects = distinct(outcome, d.log);
  const std::string why = follows_the_job(record, outcome, suspects);
  if (!why.empty()) {
    decide_unblamed(d, outcome, policy, why);
    return d;
  }
  const bool requeue = outcome.restarts < policy.max_requeues;
  if (requeue && policy.exclude) {
    std::size_t fresh = 0;
    for (const Suspect& s : suspects) {
      fresh += std::none_of(record.excluded.begin(), record.excluded.end(),
                            [&](const Exclusion& e) { return e.suspect.node == s.node; });
    }
    const std::string cap = past_the_cap(record, outcome, fresh);
    if (!cap.empty()) {
      std::vector<std::string> named;
      for (const Suspect& s : suspects) {
        d.log.push_back("named " + s.node + " (" + std::string(fault_name(s.fault)) +
                        "): " + s.evidence);
        named.push_back(s.node);
      }
      d.action = HealAction::fail;
      d.log.push_back("not requeueing: " + cap + "; the job ends, naming " +
                      format_hostlist(named));
      return d;
    }
  }
  for (const Suspect& s : suspects) {
    const std::string head = s.node + " (" + std::string(fault_name(s.fault)) + "): " + s.evidence;
    if (!policy.exclude || !requeue) {
      d.log.push_back("named " + head);
      continue;
    }
    // Named again although excluded before: that exclusion did not take; it is asked again.
    const bool again = std::any_of(record.excluded.begin(), record.excluded.end(),
                                   [&](const Exclusion& e) { return e.suspect.node == s.node; });
    d.log.push_back((again ? "excluding again " : "excluding ") + head);
    d.exclude.push_back(s.node);
    if (!again) d.record.excluded.push_back({outcome.restarts, s});
  }
  if (!requeue) {
    d.action = HealAction::fail;
    d.log.push_back("not requeueing: restarted " + std::to_string(outcome.restarts) +
                    " time(s), the cap (" + cap_text(policy) + ")");
    return d;
  }
  d.action = HealAction::requeue;
  d.log.push_back("requeueing: restart " + std::to_string(outcome.restarts + 1) + " of at most " +
                  std::to_string(policy.max_requeues) +
                  (d.exclude.empty() ? " on any nodes (heal.exclude is off)"
                                     : " without " + format_hostlist(d.exclude)));
  return d;
}

std::string stale_record(const HealRecord& record, std::string_view job, unsigned restarts) {
  if (record.job.empty()) return "it names no job";
  if (record.job != job) return "it is job " + record.job + "'s";
  if (restarts == 0 || record.written >= restarts) {
    return "it was written by run " + std::to_string(record.written) + ", this is run " +
           std::to_string(restarts) + ": an earlier job with the same id";
  }
  return "";
}

std::string excluded_summary(const HealRecord& record) {
  if (record.excluded.empty()) return "excluded across runs: none";
  std::vector<std::string> parts;
  for (const Exclusion& e : record.excluded) {
    parts.push_back(e.suspect.node + " (run " + std::to_string(e.run) + ", " +
                    std::string(fault_name(e.suspect.fault)) + ")");
  }
  return "excluded across runs: " + text::join(parts, ", ");
}

std::vector<std::string> partition_names(std::string_view list) {
  std::vector<std::string> names;
  for (std::string_view name : text::split(text::trim(list), ',')) {
    if (!name.empty() && !contains(names, std::string(name))) names.emplace_back(name);
  }
  return names;
}

PartitionSize partition_size(const std::vector<std::string>& names,
                             const std::vector<std::string>& shows) {
  PartitionSize size;
  if (names.empty()) {
    size.unknown = "the job names no partition (SLURM_JOB_PARTITION is empty)";
    return size;
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string value =
        i < shows.size() ? field_value(shows[i], "TotalNodes=") : std::string();
    auto nodes = text::parse_uint<std::size_t>(value);
    if (!nodes || *nodes == 0 || *nodes > k_max_partition_nodes) {
      size = {0, "scontrol show partition " + text::quote(names[i]) + " gave no TotalNodes"};
      return size;
    }
    size.nodes += *nodes;
  }
  return size;
}

std::string merged_exclusion(std::string_view current, const std::vector<std::string>& add) {
  std::string list{text::trim(current)};
  if (list == "(null)") list.clear();
  std::vector<std::string> items;
  for (std::string_view item : text::split(list, ',')) {
    if (!item.empty()) items.emplace_back(item);
  }
  std::string out = list;
  for (const std::string& node : add) {
    if (contains(items, node)) continue;
    items.push_back(node);
    out += (out.empty() ? "" : ",") + node;
  }
  return out;
}

std::string exclusion_field(std::string_view show_job) {
  return field_value(show_job, "ExcNodeList=");
}

}  // namespace ddp::watch
