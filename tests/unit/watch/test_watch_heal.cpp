// The healing decision, the record kept between runs, the suspect line and the excluded list.
#include <gtest/gtest.h>

#include "ddp-watch/heal.hpp"

using namespace ddp::watch;

namespace {

Suspect suspect(const std::string& node, ddp::Fault fault, const std::string& signature = "") {
  return {node, fault, "evidence of " + node, signature};
}

const std::vector<std::string> k_nodes = {"node01", "node02", "node03"};

}  // namespace

TEST(WatchHeal, SuspectLineRoundTrips) {
  Suspect s{"node03", ddp::Fault::unreachable, "cannot connect to 10.77.6.11:29500\t(timeout)", ""};
  const std::string line = ddp::suspect_line(s);
  EXPECT_EQ(line,
            "ddp-check: suspect node03: unreachable: cannot connect to 10.77.6.11:29500 (timeout)");
  auto back = ddp::parse_suspect_line("2: " + line);  // srun's label in front
  ASSERT_TRUE(back);
  EXPECT_EQ(back->node, "node03");
  EXPECT_EQ(back->fault, ddp::Fault::unreachable);
  EXPECT_EQ(back->evidence, "cannot connect to 10.77.6.11:29500 (timeout)");
  for (const char* other : {"ddp-check: suspect node03", "ddp-check: suspect : slow: x",
                            "ddp-check: suspect node03: flaky: x", "ddp-check: FAILED: x",
                            "ddp-check: suspect a b: slow: x"}) {
    EXPECT_FALSE(ddp::parse_suspect_line(other)) << other;
  }
  for (auto f :
       {ddp::Fault::unreachable, ddp::Fault::missing_rank, ddp::Fault::slow, ddp::Fault::fabric,
        ddp::Fault::hang, ddp::Fault::hardware_signal, ddp::Fault::node_failure}) {
    EXPECT_EQ(ddp::parse_fault(ddp::fault_name(f)), f);
  }
}

TEST(WatchHeal, Decisions) {
  struct Case {
    const char* name;
    HealRecord record;
    RunOutcome outcome;
    HealPolicy policy;
    HealAction action;
    std::vector<std::string> exclude;
    std::vector<std::string> log;
  };
  using F = ddp::Fault;
  const HealRecord retried{{}, 1, "", 0, false, {}};
  const HealRecord hung_on_2{
      {{0, suspect("node02", F::hang, "train.py:57 in load_batch")}}, 0, "", 0, false, {}};
  const Case cases[] = {
      {"success", {}, {false, {}, k_nodes, 0, 0, 0, ""}, {true, 3}, HealAction::done, {}, {}},
      {"one unreachable node",
       {},
       {true, {suspect("node02", F::unreachable)}, k_nodes, 0, 16, 0, ""},
       {true, 3},
       HealAction::requeue,
       {"node02"},
       {"excluding node02 (unreachable): evidence of node02",
        "requeueing: restart 1 of at most 3 without node02"}},
      {"named twice, excluded once",
       {},
       {true,
        {suspect("node02", F::missing_rank), suspect("node02", F::unreachable),
         suspect("node03", F::slow)},
        k_nodes,
        1,
        16,
        0,
        ""},
       {true, 3},
       HealAction::requeue,
       {"node02", "node03"},
       {"excluding node02 (missing-rank): evidence of node02",
        "excluding node03 (slow): evidence of node03",
        "requeueing: restart 2 of at most 3 without node[02-03]"}},
      {"a host that is no node of the run",
       {},
       {true, {suspect("login", F::slow), suspect("node01", F::fabric)}, k_nodes, 0, 16, 0, ""},
       {true, 3},
       HealAction::requeue,
       {"node01"},
       {"ignoring \"login\": not a node of this run (node[01-03])",
        "excluding node01 (fabric): evidence of node01",
        "requeueing: restart 1 of at most 3 without node01"}},
      {"at the cap",
       {},
       {true, {suspect("node02", F::hardware_signal)}, k_nodes, 3, 0, 0, ""},
       {true, 3},
       HealAction::fail,
       {},
       {"named node02 (hardware-signal): evidence of node02",
        "not requeueing: restarted 3 time(s), the cap (heal.max_requeues: 3)"}},
      {"exclusion off",
       {},
       {true, {suspect("node02", F::node_failure)}, k_nodes, 0, 0, 0, ""},
       {false, 2},
       HealAction::requeue,
       {},
       {"named node02 (node-failure): evidence of node02",
        "requeueing: restart 1 of at most 2 on any nodes (heal.exclude is off)"}},
      {"nobody named: one retry",
       {},
       {true, {}, k_nodes, 0, 0, 0, ""},
       {true, 3},
       HealAction::requeue,
       {},
       {"not blaming a node: no node was named; requeueing once as it is, a second such "
        "failure ends the job"}},
      {"nobody named again: the fault follows the job",
       retried,
       {true, {}, k_nodes, 1, 0, 0, ""},
       {true, 3},
       HealAction::fail,
       {},
       {"the fault follows the job: no node was named, after a retry that failed too; it is "
        "the program's or its input's, not a node's: not requeueing"}},
      {"every node named",
       {},
       {true,
        {suspect("node01", F::hang), suspect("node02", F::hang), suspect("node03", F::hang)},
        k_nodes,
        0,
        0,
        0,
        ""},
       {true, 3},
       HealAction::requeue,
       {},
       {"not blaming a node: every node of the run was named; requeueing once as it is, a "
        "second such failure ends the job"}},
      {"the same hang on the next node",
       hung_on_2,
       {true,
        {suspect("node04", F::hang, "train.py:57 in load_batch")},
        {"node01", "node03", "node04"},
        1,
        0,
        0,
        ""},
       {true, 3},
       HealAction::requeue,
       {},
       {"not blaming a node: it hung at train.py:57 in load_batch on node04 as on node02 in "
        "run 0, a node since excluded; requeueing once as it is, a second such failure ends "
        "the job"}},
      {"a different hang on the next node",
       hung_on_2,
       {true,
        {suspect("node04", F::hang, "train.py:80 in step")},
        {"node01", "node03", "node04"},
        1,
        16,
        0,
        ""},
       {true, 3},
       HealAction::requeue,
       {"node04"},
       {"excluding node04 (hang): evidence of node04",
        "requeueing: restart 2 of at most 3 without node04"}},
      {"named again after an exclusion that did not take",
       hung_on_2,
       {true, {suspect("node02", F::unreachable)}, k_nodes, 1, 0, 0, ""},
       {true, 3},
       HealAction::requeue,
       {"node02"},
       {"excluding again node02 (unreachable): evidence of node02",
        "requeueing: restart 2 of at most 3 without node02"}},
      {"past the partition: the job would pend for ever",
       {},
       {true, {suspect("node02", F::slow)}, k_nodes, 0, 4, 1, ""},
       {true, 3},
       HealAction::fail,
       {},
       {"named node02 (slow): evidence of node02",
        "not requeueing: excluding 1 more would leave 2 of the partition's 4 nodes (1 excluded "
        "already) for a job of 3; the job ends, naming node02"}},
      {"partition's size unknown: no new exclusion, the job ends",
       {},
       {true,
        {suspect("node02", F::slow)},
        k_nodes,
        0,
        0,
        0,
        "scontrol show partition \"b\" gave no TotalNodes"},
       {true, 3},
       HealAction::fail,
       {},
       {"named node02 (slow): evidence of node02",
        "not requeueing: the partition's size is unknown (scontrol show partition \"b\" gave no "
        "TotalNodes), so excluding 1 more could leave the job pending for ever; the job ends, "
        "naming node02"}},
      {"partition's size not asked: unknown too",
       {},
       {true, {suspect("node02", F::slow)}, k_nodes, 0, 0, 0, ""},
       {true, 3},
       HealAction::fail,
       {},
       {"named node02 (slow): evidence of node02",
        "not requeueing: the partition's size is unknown (not asked), so excluding 1 more could "
        "leave the job pending for ever; the job ends, naming node02"}},
      {"within the partition",
       {},
       {true, {suspect("node02", F::slow)}, k_nodes, 0, 4, 0, ""},
       {true, 3},
       HealAction::requeue,
       {"node02"},
       {"excluding node02 (slow): evidence of node02",
        "requeueing: restart 1 of at most 3 without node02"}},
      {"named again: not counted twice",
       hung_on_2,
       {true, {suspect("node02", F::unreachable)}, k_nodes, 1, 4, 1, ""},
       {true, 3},
       HealAction::requeue,
       {"node02"},
       {"excluding again node02 (unreachable): evidence of node02",
        "requeueing: restart 2 of at most 3 without node02"}},
      {"a flood of names from outside the run: one line",
       {},
       {true,
        {suspect("n1", F::node_failure), suspect("n2", F::node_failure),
         suspect("n3", F::node_failure), suspect("n4", F::node_failure),
         suspect("n5", F::node_failure), suspect("n6", F::node_failure),
         suspect("n7", F::node_failure), suspect("n8", F::node_failure),
         suspect("n9", F::node_failure), suspect("n10", F::node_failure)},
        k_nodes,
        0,
        0,
        0,
        ""},
       {true, 3},
       HealAction::requeue,
       {},
       {"ignoring \"n1\", \"n2\", \"n3\", \"n4\", \"n5\", \"n6\", \"n7\", \"n8\" and 2 "
        "more: not nodes of this run (node[01-03])",
        "not blaming a node: no node was named; requeueing once as it is, a second such failure "
        "ends the job"}},
      {"nobody named, no requeue allowed",
       {},
       {true, {}, k_nodes, 0, 0, 0, ""},
       {true, 0},
       HealAction::fail,
       {},
       {"not blaming a node: no node was named; not requeueing: restarted 0 time(s), the cap "
        "(heal.max_requeues: 0)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HealDecision d = decide_heal(c.record, c.outcome, c.policy);
    EXPECT_EQ(d.action, c.action);
    EXPECT_EQ(d.exclude, c.exclude);
    EXPECT_EQ(d.log, c.log);
    const std::size_t again = std::string(c.name).starts_with("named again") ? 1 : 0;
    EXPECT_EQ(d.record.excluded.size(), c.record.excluded.size() + c.exclude.size() - again);
  }
}

// The partitions' size: the sum over every partition the job was submitted to, unknown when
// one cannot be read.
TEST(WatchHeal, PartitionSize) {
  EXPECT_EQ(partition_names("gpu"), (std::vector<std::string>{"gpu"}));
  EXPECT_EQ(partition_names("a,b,,a\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(partition_names("").empty());
  auto show = [](const std::string& name, const std::string& total) {
    return "PartitionName=" + name + " AllowGroups=ALL TotalCPUs=64 TotalNodes=" + total +
           " SelectTypeParameters=NONE\n";
  };
  struct Case {
    const char* name;
    std::vector<std::string> names, shows;
    std::size_t nodes;
    std::string unknown;
  };
  const Case cases[] = {
      {"one", {"gpu"}, {show("gpu", "12")}, 12, ""},
      {"two: the sum", {"a", "b"}, {show("a", "4"), show("b", "6")}, 10, ""},
      {"scontrol failed for one",
       {"a", "b"},
       {show("a", "4"), ""},
       0,
       "scontrol show partition \"b\" gave no TotalNodes"},
      {"no partition", {}, {}, 0, "the job names no partition (SLURM_JOB_PARTITION is empty)"},
      {"zero nodes",
       {"a"},
       {show("a", "0")},
       0,
       "scontrol show partition \"a\" gave no TotalNodes"},
      {"not a number",
       {"a"},
       {show("a", "4x")},
       0,
       "scontrol show partition \"a\" gave no TotalNodes"},
      {"only a field that ends in the key",
       {"a"},
       {"PartitionName=a MaxTotalNodes=9\n"},
       0,
       "scontrol show partition \"a\" gave no TotalNodes"},
      {"past any partition",
       {"a"},
       {show("a", "99999999")},
       0,
       "scontrol show partition \"a\" gave no TotalNodes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PartitionSize size = partition_size(c.names, c.shows);
    EXPECT_EQ(size.nodes, c.nodes);
    EXPECT_EQ(size.unknown, c.unknown);
  }
}

TEST(WatchHeal, RecordRoundTripsAndSummarises) {
  HealRecord r;
  r.unblamed = 1;
  r.excluded.push_back({0, {"node02", ddp::Fault::unreachable, "no route\tto 10.0.0.1", ""}});
  r.excluded.push_back({2, {"node04", ddp::Fault::hang, "rank 3 at a.py:5", "a.py:5 in f"}});
  const std::string text = format_record(r);
  EXPECT_EQ(text,
            "unblamed\t1\n"
            "excluded\t0\tnode02\tunreachable\t\tno route to 10.0.0.1\n"
            "excluded\t2\tnode04\thang\ta.py:5 in f\trank 3 at a.py:5\n");
  auto back = parse_record(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->unblamed, 1u);
  ASSERT_EQ(back->excluded.size(), 2u);
  EXPECT_EQ(back->excluded[1].run, 2u);
  EXPECT_EQ(back->excluded[1].suspect.signature, "a.py:5 in f");
  EXPECT_EQ(format_record(*back), text);
  EXPECT_EQ(excluded_summary(r),
            "excluded across runs: node02 (run 0, unreachable), node04 (run 2, hang)");
  EXPECT_EQ(excluded_summary({}), "excluded across runs: none");
  EXPECT_TRUE(parse_record(""));

  // The job that wrote it comes first.
  HealRecord j;
  j.job = "42";
  j.written = 1;
  EXPECT_EQ(format_record(j), "job\t42\t1\nunblamed\t0\n");
  auto jb = parse_record(format_record(j));
  ASSERT_TRUE(jb);
  EXPECT_EQ(jb->job, "42");
  EXPECT_EQ(jb->written, 1u);
  EXPECT_FALSE(parse_record("unblamed\t0\njob\t42\t1\n"));  // only as the first line
  // A requeue kept for --heal-requeue, with its nodes (none: requeue as it is).
  j.requeue = true;
  j.requeue_exclude = {"node02", "node03"};
  EXPECT_EQ(format_record(j), "job\t42\t1\nunblamed\t0\nrequeue\tnode02,node03\n");
  auto kept = parse_record(format_record(j));
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->requeue);
  EXPECT_EQ(kept->requeue_exclude, (std::vector<std::string>{"node02", "node03"}));
  auto plain = parse_record("requeue\t\n");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->requeue);
  EXPECT_TRUE(plain->requeue_exclude.empty());
  auto bad = parse_record("unblamed\t1\nexcluded\tx\tnode01\thang\t\t\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "line 2: not a heal record line: \"excluded\\x09x\\x09node01\\x09hang\\x09\\x09\"");
}

TEST(WatchHeal, MergesTheExcludedList) {
  EXPECT_EQ(merged_exclusion("(null)", {"node02"}), "node02");
  EXPECT_EQ(merged_exclusion("", {"node02", "node03"}), "node02,node03");
  EXPECT_EQ(merged_exclusion("node[05-06],node02", {"node02", "node03"}),
            "node[05-06],node02,node03");
  EXPECT_EQ(merged_exclusion("node01", {}), "node01");
}

TEST(WatchHeal, ReadsTheExcludedListOfScontrol) {
  EXPECT_EQ(exclusion_field("JobId=7 JobName=x ReqNodeList=(null) ExcNodeList=node[01-02] "
                            "NodeList=node03\n"),
            "node[01-02]");
  EXPECT_EQ(exclusion_field("JobId=7 ExcNodeList=(null)\n"), "(null)");
  EXPECT_EQ(exclusion_field("JobId=7 XExcNodeList=a"), "");
  EXPECT_EQ(exclusion_field(""), "");
}

// A record is read only by a later run of the job that wrote it.
TEST(WatchHeal, StaleRecords) {
  HealRecord r;
  r.job = "42";
  r.written = 0;
  EXPECT_EQ(stale_record(r, "42", 1), "");
  EXPECT_EQ(stale_record(r, "42", 0),
            "it was written by run 0, this is run 0: an earlier job with the same id");
  EXPECT_EQ(stale_record(r, "43", 1), "it is job 42's");
  r.written = 3;
  EXPECT_EQ(stale_record(r, "42", 2),
            "it was written by run 3, this is run 2: an earlier job with the same id");
  EXPECT_EQ(stale_record(HealRecord{}, "42", 1), "it names no job");
}
