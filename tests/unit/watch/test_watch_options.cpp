#include <gtest/gtest.h>

#include "ddp-watch/options.hpp"

using namespace ddp::watch;

TEST(WatchOptions, ParsesACommandLine) {
  auto o = parse_options({"--timeout", "5m", "--grace=10s", "--stacks", "s.txt", "--heartbeat=hb",
                          "--", "srun", "-l", "python3", "train.py"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->timeout_s, 300);
  EXPECT_EQ(o->grace_s, 10);
  EXPECT_EQ(o->stacks, "s.txt");
  EXPECT_EQ(o->heartbeat, "hb");
  EXPECT_EQ(o->command, (std::vector<std::string>{"srun", "-l", "python3", "train.py"}));
  // Without "--" the command starts at the first word that is not an option.
  auto bare = parse_options({"--timeout=1m", "srun", "--ddp", "python3"});
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->command.front(), "srun");
  EXPECT_EQ(bare->grace_s, 20);
}

TEST(WatchOptions, RejectsWithTheCulprit) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"srun", "x"}, "--timeout is required"},
      {{"--timeout", "5m"}, "no command to watch"},
      {{"--timeout"}, "--timeout needs a value"},
      {{"--timeout", "5q", "srun"}, "ddp-watch: --timeout \"5q\": expected a duration such as 90"},
      {{"--timeot", "5m", "srun"}, "unknown option \"--timeot\" (did you mean --timeout?)"},
      {{"--zzz", "srun"}, "unknown option \"--zzz\"; see ddp-watch --help"},
      {{"--stacks=", "--timeout=1m", "srun"}, "--stacks needs a file name"},
      {{"--stacks", "--", "--timeout=1m", "srun"}, "--stacks needs a file name"},
      {{"--heartbeat", "--", "srun"}, "--heartbeat needs a file name"},
  };
  for (const Case& c : cases) {
    auto r = parse_options(c.args);
    ASSERT_FALSE(r) << c.message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
}

TEST(WatchOptions, RecognisesPerNodeLaunchers) {
  EXPECT_TRUE(launches_per_node({"srun", "--ddp=torchrun", "torchrun", "train.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "/usr/bin/torchrun", "train.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "python3", "-m", "torch.distributed.run", "t.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "-N", "2", "--ntasks", "2", "torchrun", "t.py"}));
  EXPECT_TRUE(launches_per_node({"torchrun", "--standalone", "t.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "env", "A=1", "torchrun", "t.py"}));
  // ddpgen's accelerate launcher: a shell that execs accelerate launch on each node.
  EXPECT_TRUE(launches_per_node({"srun", "--ddp=torchrun", "--ntasks-per-node=1", "bash", "-c",
                                 "exec accelerate launch --num_machines=\"$NNODES\" \"$@\"",
                                 "ddpgen-task", "train.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "--ddp=torchrun", "torchrun_jsc", "t.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "/opt/bin/ft_launcher", "t.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "tune", "run", "lora_finetune_distributed"}));
  EXPECT_TRUE(launches_per_node({"srun", "python3", "-m", "torchrun_jsc", "t.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "python3", "-m", "torch.distributed.launch", "t.py"}));
  EXPECT_FALSE(launches_per_node({"srun", "tune", "download", "model"}));
  EXPECT_TRUE(launches_per_node({"srun", "accelerate", "launch", "train.py"}));
  EXPECT_TRUE(launches_per_node({"srun", "python3", "-m", "accelerate.commands.launch", "t.py"}));
  EXPECT_FALSE(launches_per_node({"srun", "--ddp", "python3", "train.py"}));
  EXPECT_FALSE(launches_per_node({"srun", "--ddp=torchrun", "python3", "t.py"}));
  // An argument that ends in /torchrun is not the program.
  EXPECT_FALSE(launches_per_node({"srun", "python3", "train.py", "--out", "/runs/torchrun"}));
  EXPECT_FALSE(launches_per_node({"srun", "-o", "/logs/torchrun", "python3", "t.py"}));
  EXPECT_FALSE(launches_per_node({"srun", "accelerate", "config"}));
  EXPECT_FALSE(launches_per_node({"srun", "python3", "t.py", "-m", "torch.distributed.run"}));
  EXPECT_FALSE(launches_per_node({"srun", "bash", "-c", "python3 t.py /x/torchrun"}));
  EXPECT_FALSE(launches_per_node({}));
  EXPECT_FALSE(launches_per_node({"srun"}));
}

TEST(WatchOptions, SrunOutputToFiles) {
  auto none = srun_output_files({"srun", "-n", "2", "python3", "t.py", "-o", "x"});
  EXPECT_TRUE(none.plain.empty());
  EXPECT_TRUE(none.patterned.empty());
  auto plain = srun_output_files({"srun", "-o", "out.txt", "--error=err.txt", "-n", "2", "p"});
  EXPECT_EQ(plain.plain, (std::vector<std::string>{"out.txt", "err.txt"}));
  EXPECT_TRUE(plain.patterned.empty());
  auto patterned = srun_output_files({"srun", "--output", "out-%t.txt", "-eerr.txt", "p"});
  EXPECT_EQ(patterned.plain, (std::vector<std::string>{"err.txt"}));
  EXPECT_EQ(patterned.patterned, (std::vector<std::string>{"out-%t.txt"}));
  auto moved = srun_output_files({"srun", "-D", "/w", "-o", "o.txt", "-e", "/abs/e.txt", "p"});
  EXPECT_EQ(moved.plain, (std::vector<std::string>{"/abs/e.txt"}));
  EXPECT_EQ(moved.patterned, (std::vector<std::string>{"o.txt"}));
  EXPECT_TRUE(srun_output_files({"torchrun", "-o", "x"}).plain.empty());
  EXPECT_TRUE(srun_output_files({"srun", "--output=none", "p"}).plain.empty());
}

TEST(WatchOptions, RecognisesSrun) {
  EXPECT_TRUE(is_srun({"srun", "python3"}));
  EXPECT_TRUE(is_srun({"/usr/bin/srun"}));
  EXPECT_FALSE(is_srun({"torchrun", "t.py"}));
  EXPECT_FALSE(is_srun({"mysrun"}));
  EXPECT_FALSE(is_srun({}));
}

TEST(WatchOptions, RequeuesWithinTheCap) {
  auto o = parse_options({"--timeout=1m", "--requeue-stalled", "2", "srun"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->requeue_max, 2);
  EXPECT_EQ(parse_options({"--timeout=1m", "srun"})->requeue_max, -1);
  auto bad = parse_options({"--timeout=1m", "--requeue-stalled=x", "srun"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("ddp-watch: --requeue-stalled \"x\"", 0), 0u)
      << bad.error().message;

  struct Case {
    const char* job;
    const char* restarts;
    long max;
    bool requeue;
    const char* message;
  };
  const Case cases[] = {
      {"12", "", 2, true, "requeueing job 12: restart 1 of at most 2"},
      {"12", "1", 2, true, "requeueing job 12: restart 2 of at most 2"},
      {"12", "2", 2, false,
       "not requeued: job 12 has been restarted 2 time(s), the cap (--requeue-stalled 2)"},
      {"12", "0", 0, false,
       "not requeued: job 12 has been restarted 0 time(s), the cap (--requeue-stalled 0)"},
      {"", "0", 2, false, "not requeued: not inside a Slurm job"},
      {"12", "x", 2, false, "not requeued: SLURM_RESTART_COUNT=\"x\" is not a number"},
  };
  for (const Case& c : cases) {
    RequeueDecision d = decide_requeue(c.job, c.restarts, c.max);
    EXPECT_EQ(d.requeue, c.requeue) << c.message;
    EXPECT_EQ(d.message, c.message);
  }
}

TEST(WatchOptions, RequeueTargetIsTheArrayTaskAlone) {
  EXPECT_EQ(requeue_target("41", "", ""), "41");
  EXPECT_EQ(requeue_target("41", "40", "3"), "40_3");
  // The task whose own id is the array's: still this task only.
  EXPECT_EQ(requeue_target("40", "40", "0"), "40_0");
  EXPECT_EQ(requeue_target("41", "40", ""), "41");
}

TEST(WatchOptions, Heal) {
  auto o = parse_options(
      {"--timeout=1m", "--heal", "rec", "--heal-max=5", "--heal-no-exclude", "srun", "ddp-check"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->heal, "rec");
  EXPECT_EQ(o->heal_max, 5);
  EXPECT_FALSE(o->heal_exclude);
  auto d = parse_options({"--timeout=1m", "--heal=rec", "srun"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->heal_max, 3);
  EXPECT_TRUE(d->heal_exclude);
  EXPECT_EQ(parse_options({"--timeout=1m", "--heal", "--", "srun"}).error().message,
            "ddp-watch: --heal needs a file name");
  EXPECT_EQ(
      parse_options({"--timeout=1m", "--heal=r", "--requeue-stalled=1", "srun"}).error().message,
      "ddp-watch: --heal and --requeue-stalled both requeue: give one (--heal-max N caps "
      "the requeues of --heal)");
  EXPECT_EQ(parse_options({"--timeout=1m", "--heal-mx=1", "srun"}).error().message,
            "ddp-watch: unknown option \"--heal-mx=1\" (did you mean --heal-max?); see ddp-watch "
            "--help");
}

// The internal helper modes need no --timeout and no command.
TEST(WatchOptions, HelperModes) {
  auto probe = parse_options({"--probe-step", "12.0"});
  ASSERT_TRUE(probe) << probe.error().message;
  EXPECT_EQ(probe->probe_step, "12.0");
  auto dump = parse_options({"--dump-step=12.1"});
  ASSERT_TRUE(dump) << dump.error().message;
  EXPECT_EQ(dump->dump_step, "12.1");
  EXPECT_TRUE(dump->probe_step.empty());
  EXPECT_EQ(dump->dump_at_ms, 0);
  // The moment every node's helper starts signalling, as the watcher appends it.
  auto at = parse_options({"--dump-step", "12.1", "--dump-at=1795000000123"});
  ASSERT_TRUE(at) << at.error().message;
  EXPECT_EQ(at->dump_at_ms, 1795000000123LL);
  EXPECT_FALSE(parse_options({"--dump-step", "12.1", "--dump-at=soon"}));
}

// --heal-defer keeps the requeue; --heal-requeue FILE carries it out later, with no command.
TEST(WatchOptions, HealDeferAndRequeue) {
  auto defer = parse_options({"--timeout=1m", "--heal=rec", "--heal-defer", "srun", "true"});
  ASSERT_TRUE(defer) << defer.error().message;
  EXPECT_TRUE(defer->heal_defer);
  auto later = parse_options({"--heal-requeue", "rec"});
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_EQ(later->heal_requeue, "rec");
}
