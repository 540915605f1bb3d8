// What ddpgen submit, status and logs --follow read from Slurm's clients and say about a job.
// The scontrol records are Slurm 22.05's, recorded on the embedded cluster (tests/cluster).
#include <gtest/gtest.h>

#include "gen/core/job_status.hpp"

namespace ddpgen {
namespace {

// Slurm 22.05's `scontrol show job --oneliner ID`, recorded on the embedded cluster: a job that
// waits for the nodes another holds (edited: the Reason the next scheduling pass gives in place
// of None, and its paths given a space), one running, the same ended with `exit 3`.
const char* k_pending =
    "JobId=3 JobName=long.sh UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901757 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=Resources "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "RunTime=00:00:00 TimeLimit=00:05:00 TimeMin=N/A SubmitTime=2026-11-25T20:38:10 "
    "EligibleTime=2026-11-25T20:38:10 AccrueTime=Unknown StartTime=Unknown EndTime=Unknown "
    "Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-25T20:38:10 "
    "Scheduler=Main Partition=debug AllocNode:Sid=localhost:25317 ReqNodeList=(null) "
    "ExcNodeList=(null) NodeList= NumNodes=3-3 NumCPUs=6 NumTasks=6 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=6,mem=3M,node=3,billing=6 Socks/Node=* "
    "NtasksPerN:B:S:C=2:0:*:* CoreSpec=* MinCPUsNode=2 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=YES Contiguous=0 Licenses=(null) "
    "Network=(null) Command=/tmp/ddp follow/long.sh WorkDir=/tmp/ddp follow StdErr=/tmp/ddp "
    "follow/job-3.out StdIn=/dev/null StdOut=/tmp/ddp follow/job-3.out Power= \n";
const char* k_running =
    "JobId=1 JobName=job.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) "
    "Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:02 "
    "TimeLimit=00:05:00 TimeMin=N/A SubmitTime=2026-11-25T20:37:55 "
    "EligibleTime=2026-11-25T20:37:55 AccrueTime=2026-11-25T20:37:55 "
    "StartTime=2026-11-25T20:37:56 EndTime=2026-11-25T20:42:56 Deadline=N/A SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-11-25T20:37:56 Scheduler=Main Partition=debug "
    "AllocNode:Sid=localhost:25317 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node[01-03] BatchHost=node01 NumNodes=3 NumCPUs=24 NumTasks=6 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=24,node=3,billing=24 Socks/Node=* NtasksPerN:B:S:C=2:0:*:* "
    "CoreSpec=* MinCPUsNode=2 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=YES Contiguous=0 Licenses=(null) Network=(null) "
    "Command=/tmp/ddp-follow-sample/job.sh WorkDir=/tmp/ddp-follow-sample "
    "StdErr=/tmp/ddp-follow-sample/job-1.out StdIn=/dev/null "
    "StdOut=/tmp/ddp-follow-sample/job-1.out Power= \n";
const char* k_failed =
    "JobId=1 JobName=job.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 "
    "RunTime=00:00:04 TimeLimit=00:05:00 TimeMin=N/A SubmitTime=2026-11-25T20:37:55 "
    "EligibleTime=2026-11-25T20:37:55 AccrueTime=2026-11-25T20:37:55 "
    "StartTime=2026-11-25T20:37:56 EndTime=2026-11-25T20:38:00 Deadline=N/A SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-11-25T20:37:56 Scheduler=Main Partition=debug "
    "AllocNode:Sid=localhost:25317 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node[01-03] BatchHost=node01 NumNodes=3 NumCPUs=24 NumTasks=6 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=24,node=3,billing=24 Socks/Node=* NtasksPerN:B:S:C=2:0:*:* "
    "CoreSpec=* MinCPUsNode=2 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=YES Contiguous=0 Licenses=(null) Network=(null) "
    "Command=/tmp/ddp-follow-sample/job.sh WorkDir=/tmp/ddp-follow-sample "
    "StdErr=/tmp/ddp-follow-sample/job-1.out StdIn=/dev/null "
    "StdOut=/tmp/ddp-follow-sample/job-1.out Power= \n";
// After `scontrol requeue` (recorded, abridged), with the exclusion ddp-watch --heal adds and a
// separate --error file.
const char* k_requeued =
    "JobId=1 JobName=job.sh JobState=PENDING Reason=BeginTime Dependency=(null) Requeue=1 "
    "Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:05:00 "
    "Partition=debug ReqNodeList=(null) ExcNodeList=node03 NodeList=(null) NumNodes=2 "
    "Command=/tmp/w/job.sh WorkDir=/tmp/w StdErr=/tmp/w/err-1.txt StdIn=/dev/null "
    "StdOut=/tmp/w/job-1.out Power= \n";

TEST(JobStatus, ReadsScontrolWhilePending) {
  auto s = parse_scontrol_job(k_pending, "3");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->id, "3");
  EXPECT_EQ(s->name, "long.sh");
  EXPECT_EQ(s->state, "PENDING");
  EXPECT_EQ(s->reason, "Resources");
  EXPECT_EQ(s->nodes, "");  // (null)
  EXPECT_EQ(s->excluded, "");
  EXPECT_EQ(s->restarts, 0);
  // Paths with a space stay whole.
  EXPECT_EQ(s->std_out, "/tmp/ddp follow/job-3.out");
  EXPECT_EQ(s->std_err, "/tmp/ddp follow/job-3.out");
  EXPECT_FALSE(s->from_accounting);
  EXPECT_EQ(state_line(*s), "job 3: PENDING (Resources)");
}

TEST(JobStatus, ReadsScontrolWhileRunningAndAtTheEnd) {
  auto s = parse_scontrol_job(k_running, "1");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->state, "RUNNING");
  EXPECT_EQ(s->reason, "");  // None
  EXPECT_EQ(s->nodes, "node[01-03]");
  EXPECT_EQ(s->excluded, "");
  EXPECT_EQ(s->elapsed, "00:00:02");
  EXPECT_EQ(s->std_out, "/tmp/ddp-follow-sample/job-1.out");
  EXPECT_EQ(state_line(*s), "job 1: RUNNING on node[01-03]");

  auto end = parse_scontrol_job(k_failed, "1");
  ASSERT_TRUE(end) << end.error().to_string();
  EXPECT_TRUE(is_final_state(end->state));
  EXPECT_EQ(end->exit_code, "3:0");
  const FinalWord w = final_word(*end, "", true);
  EXPECT_EQ(w.exit_status, 3);
  EXPECT_EQ(w.line,
            "job 1: FAILED (NonZeroExitCode) on node[01-03], after 00:00:04, exit code 3:0");

  auto requeued = parse_scontrol_job(k_requeued, "1");
  ASSERT_TRUE(requeued) << requeued.error().to_string();
  EXPECT_EQ(requeued->restarts, 1);
  EXPECT_EQ(requeued->excluded, "node03");
  EXPECT_EQ(requeued->std_err, "/tmp/w/err-1.txt");
  EXPECT_EQ(job_changes(*s, *requeued),
            (std::vector<std::string>{"job 1: requeued (restart 1)", "job 1: PENDING (BeginTime)",
                                      "job 1: excludes node03"}));
}

// scontrol show job 7 of an array lists every task; 7_2 picks its own record.
TEST(JobStatus, PicksTheArrayTaskAsked) {
  const std::string text =
      "JobId=8 ArrayJobId=7 ArrayTaskId=1 JobName=a JobState=COMPLETED Reason=None ExitCode=0:0\n"
      "JobId=9 ArrayJobId=7 ArrayTaskId=2 JobName=a JobState=FAILED Reason=NonZeroExitCode "
      "ExitCode=3:0\n";
  auto s = parse_scontrol_job(text, "7_2");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->id, "7_2");
  EXPECT_EQ(s->state, "FAILED");
  auto first = parse_scontrol_job(text, "7");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, "7_1");
}

TEST(JobStatus, RefusesWhatIsNotAJobRecord) {
  auto s = parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n", "4");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("no JobId="), std::string::npos);
  EXPECT_TRUE(scontrol_says_no_such_job("slurm_load_jobs error: Invalid job id specified\n"));
  EXPECT_FALSE(scontrol_says_no_such_job(
      "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"));
}

// sacct -X -n -P -j ID -o JobID,JobName,State,ExitCode,Elapsed,NodeList
TEST(JobStatus, ReadsSacct) {
  auto s = parse_sacct_job("12|train|job|CANCELLED by 0|0:15|00:01:02|node[01-03]\n", "12");
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_TRUE(*s);
  EXPECT_EQ((*s)->name, "train|job");
  EXPECT_EQ((*s)->state, "CANCELLED");
  EXPECT_EQ((*s)->exit_code, "0:15");
  EXPECT_EQ((*s)->elapsed, "00:01:02");
  EXPECT_EQ((*s)->nodes, "node[01-03]");
  EXPECT_TRUE((*s)->from_accounting);

  auto pending = parse_sacct_job("13|x|PENDING|0:0|00:00:00|None assigned\n", "13");
  ASSERT_TRUE(pending && *pending);
  EXPECT_EQ((*pending)->nodes, "");

  auto none = parse_sacct_job("", "14");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_FALSE(parse_sacct_job("Slurm accounting storage is disabled\n", "14"));
}

TEST(JobStatus, FinalStates) {
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                        "PREEMPTED", "BOOT_FAIL", "DEADLINE"})
    EXPECT_TRUE(is_final_state(s)) << s;
  for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD", "SUSPENDED",
                        "SPECIAL_EXIT", "CONFIGURING", ""})
    EXPECT_FALSE(is_final_state(s)) << s;
}

TEST(JobStatus, JobIdsAndSbatchOutput) {
  EXPECT_EQ(check_job_id("12").value_or(""), "12");
  EXPECT_EQ(check_job_id("12_3").value_or(""), "12_3");
  for (const char* bad : {"", "12_", "_3", "-1", "12;rm", "1 2", "12345678901", "abc"})
    EXPECT_FALSE(check_job_id(bad)) << bad;

  EXPECT_EQ(parse_sbatch_id("12\n").value_or(""), "12");
  EXPECT_EQ(parse_sbatch_id("12;cluster2\n").value_or(""), "12");
  EXPECT_EQ(parse_sbatch_id("sbatch: warning: can't honor --ntasks-per-node set to 2 ...\n37\n")
                .value_or(""),
            "37");
  EXPECT_FALSE(
      parse_sbatch_id("sbatch: error: Batch job submission failed: Invalid partition "
                      "name specified\n"));
}

TEST(JobStatus, ChangesAreSaidOnce) {
  JobStatus pending;
  pending.id = "4";
  pending.state = "PENDING";
  pending.reason = "Priority";
  EXPECT_EQ(job_changes(std::nullopt, pending),
            (std::vector<std::string>{"job 4: PENDING (Priority)"}));
  EXPECT_TRUE(job_changes(pending, pending).empty());

  JobStatus running = pending;
  running.state = "RUNNING";
  running.reason = "";
  running.nodes = "node[01-03]";
  running.elapsed = "00:00:02";
  EXPECT_EQ(job_changes(pending, running),
            (std::vector<std::string>{"job 4: RUNNING on node[01-03]"}));
  // Time passing is no change.
  JobStatus later = running;
  later.elapsed = "00:00:04";
  EXPECT_TRUE(job_changes(running, later).empty());

  // Requeued by heal without node03, waiting again.
  JobStatus requeued = pending;
  requeued.reason = "BeginTime";
  requeued.restarts = 1;
  requeued.excluded = "node03";
  EXPECT_EQ(job_changes(running, requeued),
            (std::vector<std::string>{"job 4: requeued (restart 1)", "job 4: PENDING (BeginTime)",
                                      "job 4: excludes node03"}));
  // Attached later: what happened before is summed up.
  EXPECT_EQ(job_changes(std::nullopt, requeued),
            (std::vector<std::string>{"job 4: PENDING (BeginTime)",
                                      "job 4: restarted 1 time so far", "job 4: excludes node03"}));
}

TEST(JobStatus, ClassifiesVerdictLines) {
  EXPECT_EQ(classify_line("ddp-watch: verdict: rank 4 on node03 at stall.py:41 in load_batch"),
            LineKind::verdict);
  EXPECT_EQ(classify_line("ddp-watch: first failure: rank 3 on node02, killed by SIGKILL"),
            LineKind::verdict);
  EXPECT_EQ(classify_line("ddp-watch: heal: excluding node03 (unreachable): srun: ..."),
            LineKind::verdict);
  EXPECT_EQ(classify_line("ddpgen: preflight: ddp-check found a fault in this allocation"),
            LineKind::verdict);
  EXPECT_EQ(classify_line("ddp-watch: no progress for 15 s (no output): asking every task"),
            LineKind::notice);
  EXPECT_EQ(classify_line("ddpgen: job 4, restart 0"), LineKind::notice);
  EXPECT_EQ(classify_line("[default0]:epoch 1/3 loss 0.5"), LineKind::plain);
  EXPECT_EQ(classify_line(" ddp-watch: verdict: indented is not ddp-watch's"), LineKind::plain);
}

TEST(JobStatus, SplitsGrowingOutputIntoLines) {
  LineSplitter split;
  EXPECT_TRUE(split.feed("epo").empty());
  EXPECT_EQ(split.feed("ch 1\nepoch 2\nep"), (std::vector<std::string>{"epoch 1", "epoch 2"}));
  // A progress bar redrawn with \r shows its last state; CRLF ends a line like LF.
  EXPECT_EQ(split.feed("och 3\r\n 10%\r 50%\r100%\n"),
            (std::vector<std::string>{"epoch 3", "100%"}));
  EXPECT_EQ(split.feed("tail"), std::vector<std::string>{});
  EXPECT_EQ(split.rest(), "tail");
  EXPECT_EQ(split.rest(), "");
  // A line without end is shown in pieces, not held back for ever.
  auto pieces = split.feed(std::string(200 * 1024, 'x'));
  EXPECT_EQ(pieces.size(), 3u);
  EXPECT_EQ(split.rest().size(), 200u * 1024 - 3 * 64 * 1024);
}

TEST(JobStatus, FinalWordAndExitStatus) {
  JobStatus done;
  done.id = "4";
  done.state = "COMPLETED";
  done.nodes = "node[01-03]";
  done.elapsed = "00:00:09";
  done.exit_code = "0:0";
  auto w = final_word(done, "", true);
  EXPECT_EQ(w.exit_status, 0);
  EXPECT_EQ(w.line, "job 4: COMPLETED on node[01-03], after 00:00:09, exit code 0:0");

  JobStatus failed = done;
  failed.state = "FAILED";
  failed.reason = "NonZeroExitCode";
  failed.exit_code = "124:0";
  w = final_word(failed, "ddp-watch: verdict: rank 4 on node03 at stall.py:41 in load_batch", true);
  EXPECT_EQ(w.exit_status, 124);
  EXPECT_EQ(w.line,
            "job 4: FAILED (NonZeroExitCode) on node[01-03], after 00:00:09, exit code 124:0; last "
            "verdict: ddp-watch: verdict: rank 4 on node03 at stall.py:41 in load_batch");

  JobStatus cancelled = done;
  cancelled.state = "CANCELLED";
  cancelled.exit_code = "0:15";
  cancelled.from_accounting = true;
  w = final_word(cancelled, "", true);
  EXPECT_EQ(w.exit_status, 128 + 15);
  EXPECT_NE(w.line.find("(from sacct)"), std::string::npos);

  JobStatus timeout = done;
  timeout.state = "TIMEOUT";
  timeout.exit_code = "0:0";
  EXPECT_EQ(final_word(timeout, "", true).exit_status, 1);

  JobStatus gone = done;
  gone.state = "RUNNING";
  w = final_word(gone, "", false);
  EXPECT_EQ(w.exit_status, 1);
  EXPECT_NE(w.line.find("final state unknown; last seen RUNNING after 00:00:09"),
            std::string::npos);
}

TEST(JobStatus, WhereTheScriptGoes) {
  EXPECT_EQ(script_path_for("train.yaml"), "train.slurm");
  EXPECT_EQ(script_path_for("runs/train.yml"), "runs/train.slurm");
  EXPECT_EQ(script_path_for("runs/job"), "runs/job.slurm");
  EXPECT_EQ(script_path_for("runs/.yaml"), "runs/.yaml.slurm");

  const std::string ours =
      "#!/bin/bash\n# Generated by ddpgen 0.1.0 from the job file \"runs/train.yaml\" with the "
      "site profile \"local\".\n#SBATCH --nodes=2\n";
  const std::string newer = ours + "#SBATCH --time=10:00\n";
  EXPECT_EQ(script_write(std::nullopt, ours, "train.yaml"), ScriptWrite::create);
  EXPECT_EQ(script_write(ours, ours, "train.yaml"), ScriptWrite::keep);
  // An earlier render of a job file of the same name, from wherever it was given.
  EXPECT_EQ(script_write(ours, newer, "/home/me/runs/train.yaml"), ScriptWrite::replace);
  // Another job's script, or the user's own, is never overwritten.
  EXPECT_EQ(script_write(ours, newer, "eval.yaml"), ScriptWrite::refuse);
  EXPECT_EQ(script_write("#!/bin/bash\n#SBATCH -N 2\nsrun python train.py\n", ours, "train.yaml"),
            ScriptWrite::refuse);
  EXPECT_EQ(script_write("", ours, "train.yaml"), ScriptWrite::refuse);
}

}  // namespace
}  // namespace ddpgen
