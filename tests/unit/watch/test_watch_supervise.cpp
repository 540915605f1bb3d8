// The supervisor's decisions, driven with events and clock readings as values: what is
// progress, when the startup allowance and the timeout end in a stall, the kill after the
// grace, how the stacks are asked for, the exit status, the requeue after a stall and the
// hand-off to healing.
#include <gtest/gtest.h>

#include "ddp-watch/supervise_core.hpp"
#include "fixtures.hpp"

using namespace ddp::watch;
using std::chrono::seconds;

namespace {

const Clock::time_point t0{};

Options options(std::vector<std::string> command = {"srun", "python", "train.py"}) {
  Options o;
  o.timeout_s = 20;
  o.startup_s = 60;
  o.grace_s = 10;
  o.command = std::move(command);
  return o;
}

// One thing that happens to a started supervisor, at t0 + at seconds.
struct Event {
  enum Kind { output, file, tick } kind;
  int at;
  FileTime time{};  // for `file`
};

// The actions of the ticks among `events`, as "12:ask_stacks" (nothing for none).
std::vector<std::string> acts(Supervisor& s, const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) {
    const auto now = t0 + seconds(e.at);
    if (e.kind == Event::output) s.on_output(now, Stream::out, "x");
    if (e.kind == Event::file) s.on_file_time(now, 0, e.time);
    if (e.kind != Event::tick) continue;
    Action a = s.on_tick(now);
    if (a.act == Act::ask_stacks) out.push_back(std::to_string(e.at) + ":ask_stacks");
    if (a.act == Act::kill) out.push_back(std::to_string(e.at) + ":kill");
  }
  return out;
}

JobEnv job(std::string id, std::string restarts = "", std::string array = "",
           std::string task = "") {
  return {std::move(id), std::move(array), std::move(task), std::move(restarts), false, "",
          std::nullopt};
}

}  // namespace

TEST(WatchSupervise, ProgressSilenceStartupAndKill) {
  using E = Event;
  struct Case {
    const char* name;
    long startup_s;
    std::vector<Event> events;
    std::vector<std::string> acts;
  };
  const Case cases[] = {
      {"the startup allowance holds until its end",
       60,
       {{E::tick, 59}, {E::tick, 60}},
       {"60:ask_stacks"}},
      {"no allowance: the timeout from the start",
       0,
       {{E::tick, 19}, {E::tick, 20}},
       {"20:ask_stacks"}},
      {"after the first byte, the timeout",
       60,
       {{E::output, 5}, {E::tick, 24}, {E::tick, 25}},
       {"25:ask_stacks"}},
      {"every byte restarts the clock",
       60,
       {{E::output, 5},
        {E::output, 20},
        {E::tick, 39},
        {E::output, 39},
        {E::tick, 58},
        {E::tick, 59}},
       {"59:ask_stacks"}},
      {"the kill when the grace is over, once",
       0,
       {{E::tick, 20}, {E::tick, 29}, {E::tick, 30}, {E::tick, 31}, {E::tick, 500}},
       {"20:ask_stacks", "30:kill"}},
      {"output during the grace does not postpone the kill",
       0,
       {{E::tick, 21}, {E::output, 25}, {E::output, 30}, {E::tick, 31}},
       {"21:ask_stacks", "31:kill"}},
      {"the grace counts from the tick that saw the stall",
       0,
       {{E::tick, 50}, {E::tick, 59}, {E::tick, 60}},
       {"50:ask_stacks", "60:kill"}},
  };
  for (const Case& c : cases) {
    Options o = options();
    o.startup_s = c.startup_s;
    Supervisor s(o, {});
    s.started(t0);
    EXPECT_EQ(acts(s, c.events), c.acts) << c.name;
  }
}

// A new modification time of the heartbeat is progress, the same one again is not, and the one
// an earlier run left before the start is not.
TEST(WatchSupervise, HeartbeatModificationTimeIsProgress) {
  using E = Event;
  struct Case {
    const char* name;
    std::vector<Event> events;
    std::vector<std::string> acts;
  };
  const FileTime old{100, 5}, touched{130, 0}, nanos{130, 1};
  const Case cases[] = {
      {"unchanged since the start", {{E::file, 10, old}, {E::tick, 60}}, {"60:ask_stacks"}},
      {"touched: the timeout follows",
       {{E::file, 10, touched}, {E::tick, 29}, {E::tick, 30}},
       {"30:ask_stacks"}},
      {"touched again within the same second",
       {{E::file, 10, touched}, {E::file, 25, nanos}, {E::tick, 44}, {E::tick, 45}},
       {"45:ask_stacks"}},
      {"the same time twice is one progress",
       {{E::file, 10, touched}, {E::file, 25, touched}, {E::tick, 30}},
       {"30:ask_stacks"}},
  };
  for (const Case& c : cases) {
    Options o = options();
    o.heartbeat = "/tmp/hb";
    Supervisor s(o, {});
    ASSERT_EQ(s.watched(), (std::vector<std::string>{"/tmp/hb"}));
    s.on_file_time(t0 - seconds(5), 0, old);  // seen before the start: the earlier run's
    s.started(t0);
    EXPECT_EQ(acts(s, c.events), c.acts) << c.name;
  }
}

TEST(WatchSupervise, StallMessageSaysWhichLimitAndWhetherAFileIsWatched) {
  struct Case {
    std::vector<std::string> command;
    std::string heartbeat;
    bool output;
    std::string message;
  };
  const Case cases[] = {
      {{"srun", "python", "t.py"},
       "",
       false,
       "no progress for 60 s (no output): asking every task for its stack"},
      {{"srun", "python", "t.py"},
       "",
       true,
       "no progress for 20 s (no output): asking every task for its stack"},
      {{"srun", "python", "t.py"},
       "hb",
       true,
       "no progress for 20 s (no output, heartbeat unchanged): asking every task for its stack"},
      // srun -o FILE: that file is watched like the heartbeat.
      {{"srun", "-o", "out.txt", "python", "t.py"},
       "",
       false,
       "no progress for 60 s (no output, heartbeat unchanged): asking every task for its stack"},
  };
  for (const Case& c : cases) {
    Options o = options(c.command);
    o.heartbeat = c.heartbeat;
    Supervisor s(o, {});
    s.started(t0);
    if (c.output) s.on_output(t0, Stream::err, "step 1\n");
    Action a = s.on_tick(t0 + seconds(100));
    EXPECT_EQ(a.act, Act::ask_stacks);
    EXPECT_EQ(a.message, c.message);
  }
}

TEST(WatchSupervise, BeforeTheStart) {
  Options o = options({"srun", "-o", "out-%t.txt", "python", "t.py"});
  auto refused = Supervisor(o, {}).refusal();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, k_exit_usage);
  ASSERT_EQ(refused->announce.size(), 1u);
  EXPECT_EQ(refused->announce[0],
            "srun writes the step's output to \"out-%t.txt\", which ddp-watch cannot follow: drop "
            "-o/-e (ddp-watch forwards the output itself) or give --heartbeat FILE");
  o.heartbeat = "hb";  // then the heartbeat says it all
  EXPECT_FALSE(Supervisor(o, {}).refusal());

  Options plain = options();
  plain.heartbeat = "/run/hb";
  EXPECT_EQ(Supervisor(plain, {}).command_env(),
            (std::vector<std::string>{"PYTHONFAULTHANDLER=1", "SLURM_LABELIO=1",
                                      "DDP_HEARTBEAT_FILE=/run/hb"}));
  // Not srun: its output has no labels to ask for.
  EXPECT_EQ(Supervisor(options({"python", "t.py"}), {}).command_env(),
            (std::vector<std::string>{"PYTHONFAULTHANDLER=1"}));
  // The run's tag goes to a preflight (ddp-check) only: its suspect lines end with it.
  JobEnv tagged = job("42");
  tagged.run_tag = "0123456789abcdef";
  EXPECT_EQ(Supervisor(options({"srun", "/usr/bin/ddp-check"}), tagged).command_env(),
            (std::vector<std::string>{"PYTHONFAULTHANDLER=1", "SLURM_LABELIO=1",
                                      "DDP_CHECK_RUN_TAG=0123456789abcdef"}));
  EXPECT_EQ(Supervisor(options({"srun", "python", "t.py"}), tagged).command_env(),
            (std::vector<std::string>{"PYTHONFAULTHANDLER=1", "SLURM_LABELIO=1"}));

  Outcome failed = Supervisor::start_failed("cannot run \"nope\": No such file or directory");
  EXPECT_EQ(failed.code, 127);
  EXPECT_EQ(failed.announce,
            (std::vector<std::string>{"cannot run \"nope\": No such file or directory"}));
  EXPECT_FALSE(failed.stalled);
  EXPECT_FALSE(failed.heal);
  EXPECT_FALSE(failed.requeue);
}

// The command's steps are those squeue lists at the stall that did not run before the start.
TEST(WatchSupervise, HowTheStacksAreAskedFor) {
  struct Case {
    const char* name;
    std::vector<StepRow> before, running;
    std::vector<std::string> steps;
    std::string helper_nodes;  // "" = no helper
  };
  const Case cases[] = {
      {"one step: the helper on each of its nodes",
       {{"7.0", "node01"}},
       {{"7.0", "node01"}, {"7.1", "node[01-03]"}},
       {"7.1"},
       "3"},
      {"two steps: scancel each", {}, {{"7.1", "node01"}, {"7.2", "node02"}}, {"7.1", "7.2"}, ""},
      {"no step (outside Slurm): the process group", {}, {}, {}, ""},
      {"a hostlist that does not parse: scancel", {}, {{"7.1", "node[03-01]"}}, {"7.1"}, ""},
  };
  for (const Case& c : cases) {
    Options o = options();
    o.grace_s = 20;
    Supervisor s(o, job("7"));
    s.steps_before(c.before);
    s.started(t0);
    ASSERT_EQ(s.on_tick(t0 + seconds(60)).act, Act::ask_stacks);
    StackRequest r = s.stack_request(c.running, "/opt/ddp-watch");
    EXPECT_EQ(r.steps, c.steps) << c.name;
    ASSERT_EQ(r.helper.has_value(), !c.helper_nodes.empty()) << c.name;
    if (r.helper) {
      const std::vector<std::string> freeze = {
          "srun",      "--overlap",      "--jobid=7",           "--nodelist=node[01-03]",
          "--nodes=3", "--ntasks=3",     "--ntasks-per-node=1", "--kill-on-bad-exit=0",
          "--time=1",  "/opt/ddp-watch", "--freeze-step",       "7.1"};
      EXPECT_EQ(r.helper->freeze, freeze);
      std::vector<std::string> dump = freeze;
      dump[10] = "--dump-step";
      EXPECT_EQ(r.helper->dump, dump);
      EXPECT_EQ(r.helper->deadline, seconds(10));  // half the grace
    }
    // The kill ends the same steps.
    Action kill = s.on_tick(t0 + seconds(80));
    EXPECT_EQ(kill.act, Act::kill) << c.name;
    EXPECT_EQ(kill.steps, c.steps) << c.name;
    EXPECT_EQ(kill.message, "the step still runs 20 s after the stack request: ending it");
  }
}

TEST(WatchSupervise, ExitStatus) {
  struct Case {
    const char* name;
    bool stall;
    int code;
    int expected;
  };
  const Case cases[] = {
      {"success", false, 0, 0},
      {"the command's own failure", false, 3, 3},
      {"killed by a signal", false, 128 + 9, 137},
      {"stalled and killed", true, 128 + 9, k_exit_stall},
      {"stalled, then exited 0 in the grace", true, 0, 124},
  };
  for (const Case& c : cases) {
    Supervisor s(options(), {});
    s.started(t0);
    if (c.stall) {
      ASSERT_EQ(s.on_tick(t0 + seconds(60)).act, Act::ask_stacks);
    }
    Outcome o = s.on_exit(c.code);
    EXPECT_EQ(o.code, c.expected) << c.name;
    EXPECT_EQ(o.stalled, c.stall) << c.name;
  }
}

TEST(WatchSupervise, CrashSummaryAfterAFailure) {
  Supervisor s(options(), {});
  s.started(t0);
  s.on_output(t0 + seconds(1), Stream::err, "srun: error: node02: task 3: Killed\n");
  Outcome o = s.on_exit(137);
  EXPECT_EQ(
      o.announce,
      (std::vector<std::string>{"first failure: rank 3 on node02, killed by SIGKILL (signal 9)"}));
  EXPECT_TRUE(s.on_exit(0).announce.empty());  // a success is not summarised
}

TEST(WatchSupervise, TheStallsReportAndStacksFile) {
  Supervisor s(options(), job("42"));
  s.started(t0);
  s.on_output(t0 + seconds(1), Stream::out, "0: step 1\n1: step 1\n");
  ASSERT_EQ(s.on_tick(t0 + seconds(30)).act, Act::ask_stacks);
  s.on_output(t0 + seconds(31), Stream::err, fixtures::waiting(0) + fixtures::waiting(1));
  s.on_output(t0 + seconds(32), Stream::err, "srun: error: node01: tasks 0-1: Aborted\n");
  Outcome o = s.on_exit(134);
  EXPECT_EQ(o.code, k_exit_stall);
  EXPECT_EQ(o.stacks_path, "ddp-watch-42.stacks");
  EXPECT_EQ(o.report.dumps, 2u);
  EXPECT_EQ(o.announce,
            (std::vector<std::string>{
                "verdict: every rank waits in the same place, ranks 0,1 on node01 wait in "
                "all_reduce at train.py:12 in <module>: no rank is elsewhere (suspect the "
                "network or a device)"}));
  EXPECT_EQ(stacks_message(2, "s.txt", true), "stacks of 2 process(es): s.txt");
  // The dump helpers' common start: twice the freeze, 2 to 5 s, a quarter of the grace at most.
  using std::chrono::milliseconds;
  EXPECT_EQ(dump_delay(milliseconds(300), 20), milliseconds(2000));
  EXPECT_EQ(dump_delay(milliseconds(1800), 20), milliseconds(3600));
  EXPECT_EQ(dump_delay(milliseconds(9000), 20), milliseconds(5000));
  EXPECT_EQ(dump_delay(milliseconds(9000), 5), milliseconds(1250));
  EXPECT_EQ(stacks_message(0, "/ro/s.txt", false),
            "stacks of 0 process(es): /ro/s.txt (could not be written: check --stacks and the "
            "directory's permissions)");
}

TEST(WatchSupervise, RequeueAfterAStall) {
  struct Case {
    const char* name;
    long requeue_max;
    JobEnv env;
    bool stall;
    bool decided;
    bool requeue;
    std::string target;
    std::string message;
  };
  const Case cases[] = {
      {"not asked for", -1, job("42"), true, false, false, "", ""},
      {"not after a crash", 2, job("42"), false, false, false, "", ""},
      {"the first restart", 2, job("42"), true, true, true, "42",
       "requeueing job 42: restart 1 of at most 2"},
      {"within the cap", 2, job("42", "1"), true, true, true, "42",
       "requeueing job 42: restart 2 of at most 2"},
      {"at the cap", 2, job("42", "2"), true, true, false, "42",
       "not requeued: job 42 has been restarted 2 time(s), the cap (--requeue-stalled 2)"},
      {"an array's task alone", 1, job("57", "", "50", "7"), true, true, true, "50_7",
       "requeueing job 50_7: restart 1 of at most 1"},
      {"outside a job", 1, {}, true, true, false, "", "not requeued: not inside a Slurm job"},
  };
  for (const Case& c : cases) {
    Options o = options();
    o.requeue_max = c.requeue_max;
    Supervisor s(o, c.env);
    s.started(t0);
    if (c.stall) {
      ASSERT_EQ(s.on_tick(t0 + seconds(60)).act, Act::ask_stacks);
    }
    Outcome out = s.on_exit(1);
    ASSERT_EQ(out.requeue.has_value(), c.decided) << c.name;
    if (!out.requeue) continue;
    EXPECT_EQ(out.requeue->requeue, c.requeue) << c.name;
    EXPECT_EQ(out.requeue->message, c.message) << c.name;
    EXPECT_EQ(out.requeue_target, c.target) << c.name;
  }
}

// What goes to --heal: only with --heal; a preflight (ddp-check) that passed hands nothing
// over; suspect lines count only from ddp-check's rank 0; srun's own node failures (unlabelled,
// on its stderr) and the crash's nodes do, a task's copy of them does not.
TEST(WatchSupervise, HealHandOff) {
  const std::string suspect_line = "0: ddp-check: suspect node03: unreachable: no answer\n";
  const std::string node_failure = "srun: error: Node failure on node02\n";
  struct Case {
    const char* name;
    std::vector<std::string> command;
    std::string heal;
    Stream stream;
    std::string output;
    bool stall;
    int code;
    bool heal_out;
    bool failed;
    std::vector<std::string> nodes;
  };
  const std::vector<std::string> check = {"srun", "/usr/bin/ddp-check"};
  const std::vector<std::string> train = {"srun", "python", "t.py"};
  const Stream out = Stream::out;
  const Stream err = Stream::err;
  const Case cases[] = {
      {"no --heal", check, "", out, suspect_line, false, 1, false, false, {}},
      {"a preflight that passed", check, "rec", out, "", false, 0, false, false, {}},
      {"a preflight that failed",
       check,
       "rec",
       out,
       suspect_line,
       false,
       1,
       true,
       true,
       {"node03"}},
      {"another task's suspect line",
       check,
       "rec",
       out,
       "2: ddp-check: suspect node03: unreachable: no answer\n",
       false,
       1,
       true,
       true,
       {}},
      {"a training step that passed", train, "rec", out, "", false, 0, true, false, {}},
      {"a training program's suspect line",
       train,
       "rec",
       out,
       suspect_line,
       false,
       1,
       true,
       true,
       {}},
      {"srun's node failure", train, "rec", err, node_failure, false, 1, true, true, {"node02"}},
      {"a task's node failure line",
       train,
       "rec",
       err,
       "1: " + node_failure,
       false,
       1,
       true,
       true,
       {}},
      {"a stall", train, "rec", err, node_failure, true, 137, true, true, {"node02"}},
  };
  for (const Case& c : cases) {
    Options o = options(c.command);
    o.heal = c.heal;
    Supervisor s(o, job("42"));
    s.started(t0);
    s.on_output(t0 + seconds(1), c.stream, c.output);
    if (c.stall) {
      ASSERT_EQ(s.on_tick(t0 + seconds(60)).act, Act::ask_stacks);
    }
    Outcome outcome = s.on_exit(c.code);
    EXPECT_EQ(outcome.heal, c.heal_out) << c.name;
    EXPECT_EQ(outcome.heal_failed, c.failed) << c.name;
    std::vector<std::string> nodes;
    for (const ddp::Suspect& x : outcome.heal_suspects) nodes.push_back(x.node);
    EXPECT_EQ(nodes, c.nodes) << c.name;
  }
}

// A silence in a job's srun step is probed before it is called a stall: half the limit in, the
// helper reads what each process of the step wrote (the baseline); when the stall falls due it
// reads again, and a count that grew holds the stall off. No write, a probe that fails, or no
// job: the stall, on time.
TEST(WatchSupervise, ProbesASilenceBeforeTheStall) {
  const std::vector<StepRow> running = {{"42.0", "node[01-02]"}};
  auto probe = [](unsigned long long wchar) {
    return "ddp-watch-probe: node01 100 " + std::to_string(wchar) +
           "\nddp-watch-probe: node02 200 7\n";
  };
  Options o = options();
  Supervisor s(o, job("42"));
  s.steps_before({});
  s.started(t0);
  s.on_output(t0 + seconds(1), Stream::out, "0: x\n");
  EXPECT_EQ(s.on_tick(t0 + seconds(10)).act, Act::none);
  ASSERT_EQ(s.on_tick(t0 + seconds(11)).act, Act::probe);  // the baseline, half the timeout in
  auto r = s.probe_request(running, "/bin/ddp-watch");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->argv, (std::vector<std::string>{
                         "srun", "--overlap", "--jobid=42", "--nodelist=node[01-02]", "--nodes=2",
                         "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=0", "--time=1",
                         "/bin/ddp-watch", "--probe-step", "42.0"}));
  EXPECT_FALSE(s.on_probe(t0 + seconds(12), probe(500)));
  EXPECT_EQ(s.on_tick(t0 + seconds(13)).act, Act::none);
  ASSERT_EQ(s.on_tick(t0 + seconds(21)).act, Act::probe);  // the stall is due: compared
  EXPECT_EQ(s.on_probe(t0 + seconds(22), probe(640)),
            "no output for 20 s, but the step's processes wrote since the last look (a line held "
            "back by slurmstepd, a progress bar): not a stall");
  EXPECT_EQ(s.on_tick(t0 + seconds(23)).act, Act::none);
  EXPECT_FALSE(s.is_stalled());
  // The next look a timeout later: written again, said once only; then nothing written.
  ASSERT_EQ(s.on_tick(t0 + seconds(42)).act, Act::probe);
  EXPECT_FALSE(s.on_probe(t0 + seconds(42), probe(700)));
  ASSERT_EQ(s.on_tick(t0 + seconds(62)).act, Act::probe);
  EXPECT_FALSE(s.on_probe(t0 + seconds(63), probe(700)));
  EXPECT_EQ(s.on_tick(t0 + seconds(63)).act, Act::ask_stacks);
  EXPECT_EQ(s.on_tick(t0 + seconds(73)).act, Act::kill);

  // Output after the baseline makes it old: the next baseline is half a timeout after it.
  Supervisor late(o, job("42"));
  late.started(t0);
  late.on_output(t0 + seconds(1), Stream::out, "0: x\n");
  ASSERT_EQ(late.on_tick(t0 + seconds(11)).act, Act::probe);
  late.on_probe(t0 + seconds(11), probe(5));
  late.on_output(t0 + seconds(15), Stream::out, "0: y\n");
  EXPECT_EQ(late.on_tick(t0 + seconds(24)).act, Act::none);
  EXPECT_EQ(late.on_tick(t0 + seconds(25)).act, Act::probe);

  // A baseline probe that failed is not retried in that silence: the stall comes on time.
  Supervisor failed(o, job("42"));
  failed.started(t0);
  failed.on_output(t0 + seconds(1), Stream::out, "0: x\n");
  ASSERT_EQ(failed.on_tick(t0 + seconds(11)).act, Act::probe);
  EXPECT_FALSE(failed.on_probe(t0 + seconds(11), "srun: error: Unable to create step\n"));
  EXPECT_EQ(failed.on_tick(t0 + seconds(12)).act, Act::none);
  EXPECT_EQ(failed.on_tick(t0 + seconds(21)).act, Act::ask_stacks);

  // A comparison that fails: the stall.
  Supervisor lost(o, job("42"));
  lost.started(t0);
  lost.on_output(t0 + seconds(1), Stream::out, "0: x\n");
  ASSERT_EQ(lost.on_tick(t0 + seconds(11)).act, Act::probe);
  lost.on_probe(t0 + seconds(11), probe(5));
  ASSERT_EQ(lost.on_tick(t0 + seconds(21)).act, Act::probe);
  lost.on_probe(t0 + seconds(21), "");
  EXPECT_EQ(lost.on_tick(t0 + seconds(21)).act, Act::ask_stacks);

  // Outside a job, or a command that is not srun: no probe.
  Supervisor outside(o, job(""));
  outside.started(t0);
  outside.on_output(t0 + seconds(1), Stream::out, "x\n");
  EXPECT_EQ(outside.on_tick(t0 + seconds(11)).act, Act::none);
  EXPECT_EQ(outside.on_tick(t0 + seconds(21)).act, Act::ask_stacks);
  Options plain = options({"python", "train.py"});
  Supervisor not_srun(plain, job("42"));
  not_srun.started(t0);
  EXPECT_EQ(not_srun.on_tick(t0 + seconds(59)).act, Act::none);
  EXPECT_EQ(not_srun.on_tick(t0 + seconds(60)).act, Act::ask_stacks);
}

TEST(WatchSupervise, ProbeLines) {
  EXPECT_EQ(probe_line("node01", 4242, 12345), "ddp-watch-probe: node01 4242 12345");
  auto a = parse_probe(
      "srun: x\nddp-watch-probe: node01 1 10\nddp-watch-probe: bad/n 2 3\n"
      "0: ddp-watch-probe: node02 3 4\nddp-watch-probe: node02 4 x\n");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->written, (std::map<std::string, unsigned long long>{{"node01 1", 10}}));
  EXPECT_FALSE(parse_probe(""));
  Activity before{{{"n 1", 10}, {"n 2", 5}}};
  const Activity none;
  EXPECT_FALSE(wrote_unseen_between(none, before, {{{"n 1", 10}, {"n 3", 99}}}));  // new: not
  EXPECT_FALSE(wrote_unseen_between(none, before, {{{"n 1", 10}}}));               // one ended: not
  EXPECT_TRUE(wrote_unseen_between(none, before, {{{"n 1", 10}, {"n 2", 6}}}));
  // Counted from the first count since the last output: up to k_max_unseen bytes, not more.
  const Activity first{{{"n 2", 1}}};
  EXPECT_TRUE(wrote_unseen_between(first, before, {{{"n 2", 1 + k_max_unseen}}}));
  EXPECT_FALSE(wrote_unseen_between(first, before, {{{"n 2", 2 + k_max_unseen}}}));
  // Without a first count, from `before`.
  EXPECT_TRUE(wrote_unseen_between(none, before, {{{"n 2", 5 + k_max_unseen}}}));
  EXPECT_FALSE(wrote_unseen_between(none, before, {{{"n 2", 6 + k_max_unseen}}}));
  // A count below the first (the pid taken by a new process): counted from zero.
  const Activity reused{{{"n 2", 100000}}};
  EXPECT_TRUE(wrote_unseen_between(reused, before, {{{"n 2", 6}}}));
  EXPECT_FALSE(wrote_unseen_between(reused, {{{"n 2", 5}}}, {{{"n 2", 5000}}}));
  // One process within the bound is enough; a first count is kept, not overwritten.
  EXPECT_TRUE(wrote_unseen_between(first, before, {{{"n 1", 10 + 100000}, {"n 2", 7}}}));
  Activity seen = first;
  note_first_counts(seen, {{{"n 1", 10}, {"n 2", 9}}});
  EXPECT_EQ(seen.written, (std::map<std::string, unsigned long long>{{"n 1", 10}, {"n 2", 1}}));
}

// Writes count as progress only while slurmstepd could still hold them (at most k_max_unseen
// bytes per process since srun last showed output). A 40-byte bar redrawn every second reaches
// srun in 1 KiB pieces, 26 s apart, longer than the 20 s timeout: never a stall. A rank that
// hangs while another process of the step writes 100 KiB to a file between two probes: the
// stall, on time. A slow writer (100 bytes a second to a file): held off until its unseen
// writes pass the bound. A hung step that writes nothing: the stall, on time.
TEST(WatchSupervise, ProbedWritesCountOnlyWhileSrunCouldHoldThem) {
  // Runs the supervisor from t0 + 1 s (the first output) to t0 + `until` s, one tick a second;
  // `wchar(t)` gives the counts a probe at t reads, `shown(t)` whether srun showed output at t.
  // Returns the second of the stall (0: none).
  auto run = [](auto wchar, auto shown, int until) {
    Supervisor s(options(), job("42"));
    s.steps_before({});
    s.started(t0);
    s.on_output(t0 + seconds(1), Stream::out, "0: x\n");
    for (int t = 2; t <= until; ++t) {
      if (shown(t)) s.on_output(t0 + seconds(t), Stream::out, "0: \r 42%|####");
      Action a = s.on_tick(t0 + seconds(t));
      if (a.act == Act::probe) {
        s.on_probe(t0 + seconds(t), wchar(t));
        a = s.on_tick(t0 + seconds(t));
      }
      if (a.act == Act::ask_stacks) return t;
    }
    return 0;
  };
  auto line = [](int pid, unsigned long long wchar) {
    return "ddp-watch-probe: node01 " + std::to_string(pid) + " " + std::to_string(wchar) + "\n";
  };
  auto never = [](int) { return false; };

  // The bar: 40 bytes a second, shown each time 1 KiB has piled up (every 26 s).
  auto bar = [&](int t) { return line(100, 1000 + 40ULL * static_cast<unsigned>(t)); };
  auto flushed = [](int t) { return t % 26 == 0; };
  EXPECT_EQ(run(bar, flushed, 300), 0);

  // A hung rank (100) beside a writer (300) of 100 KiB every 10 s, nothing shown: the stall
  // at the first comparison, 20 s after the last output.
  auto writer = [&](int t) {
    return line(100, 5000) + line(300, 102400ULL * static_cast<unsigned>(t / 10));
  };
  EXPECT_EQ(run(writer, never, 300), 21);

  // A slow writer: 1000 bytes since its first count at 11 s are unseen at 21 s, 3000 at 41 s
  // (still within the bound), 5000 at 61 s: the stall then.
  auto slow = [&](int t) { return line(100, 5000) + line(300, 100ULL * static_cast<unsigned>(t)); };
  EXPECT_EQ(run(slow, never, 300), 61);
  // The same writer beside output every 30 s, longer apart than the timeout: each output
  // starts the count again (1000 bytes unseen at each comparison), never a stall.
  auto every_30 = [](int t) { return t % 30 == 0; };
  EXPECT_EQ(run(slow, every_30, 300), 0);

  // A hung step: nothing written, nothing shown.
  auto hung = [&](int) { return line(100, 5000) + line(200, 7); };
  EXPECT_EQ(run(hung, never, 300), 21);
}
