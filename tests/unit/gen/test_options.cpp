// The rules for a job's extra options and run-time references: which options ddpgen computes
// (and the key that sets each), ${NAME} references and their expansion, and sbatch's patterns.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gen/core/options.hpp"
#include "gen/core/references.hpp"
#include "gen/core/shell.hpp"

namespace ddpgen {
namespace {

using options::Source;

TEST(GenOptions, ComputedOptionsNameTheKeyToSet) {
  struct Case {
    const char* token;
    Source source;
    const char* in_message;  // nullptr: accepted
  };
  const Case cases[] = {
      {"--exclusive", Source::job_sbatch, nullptr},
      {"--mem=0", Source::job_sbatch, nullptr},
      {"--gres=nvme:100", Source::job_sbatch, nullptr},
      {"--nodes=1", Source::job_sbatch, "set the job key \"nodes\""},
      {"--gpus-per-node=2", Source::profile_sbatch, "set \"node.gpus\""},
      {"--nodes=1", Source::profile_sbatch, "which a profile cannot set"},
      {"--gres=gpu:a100:2,nvme:10", Source::job_sbatch, "gpus_per_node"},
      {"--qos=debug", Source::job_sbatch, "\"qos\""},
      {"--cpus-per-task=4", Source::job_sbatch, "\"cpus_per_task\""},
      {"-N", Source::job_sbatch, "long form"},
      {"--a b", Source::job_sbatch, "not one --option"},
      {"--comment=a;b", Source::job_sbatch, "#SBATCH"},
      {"--label", Source::job_srun, nullptr},
      {"--cpu-bind=v,mask_cpu=0x3", Source::job_srun, nullptr},
      {"--kill-on-bad-exit=1", Source::job_srun, nullptr},
      {"--kill-on-bad-exit=0", Source::job_srun, "always passes"},
      {"--ntasks=8", Source::job_srun, "procs_per_node"},
      {"--container-image=x", Source::job_srun, "container.image"},
      // --export keeps the script's environment only with ALL first, in any case and as any
      // abbreviation Slurm reads as it.
      {"--export=ALL,FOO=1", Source::job_sbatch, nullptr},
      {"--export=all", Source::job_srun, nullptr},
      {"--export-file=vars", Source::job_sbatch, nullptr},
      {"--export=NONE", Source::job_sbatch, "leave --export out"},
      {"--export=none", Source::job_sbatch, "leave --export out"},
      {"--export=Nil", Source::profile_sbatch, "leave --export out"},
      {"--export=FOO", Source::job_sbatch, "leave --export out"},
      {"--export=FOO,ALL", Source::job_srun, "leave --export out"},
      {"--expor=NONE", Source::job_sbatch, "an abbreviation of --export"},
      {"--exp=FOO", Source::job_srun, "an abbreviation of --export"},
      {"--cpus-per-g=4", Source::job_sbatch, "an abbreviation of --cpus-per-gpu"},
      {"--cpus-per-gpu=4", Source::job_srun, "\"cpus_per_task\""},
      {"--tres-per-t=gres/gpu:1", Source::job_sbatch, "\"gpus_per_node\""},
      {"--tres-per-task=gres/gpu:1", Source::job_srun, "\"gpus_per_node\""},
      {"--tres-per-task=cpu=2", Source::job_srun, nullptr},
      {"--tres-bind=gres/gpu:closest", Source::job_srun, nullptr},
      {"--gre=gpu:1", Source::job_sbatch, "an abbreviation of --gres"},
      {"--gre=gpu:1", Source::job_srun, "\"gpus_per_node\""},
      {"--gres-flags=enforce-binding", Source::job_sbatch, nullptr},
  };
  for (const auto& c : cases) {
    const auto problem = options::problem(c.token, c.source);
    if (!c.in_message) {
      EXPECT_FALSE(problem) << c.token << ": " << *problem;
    } else {
      ASSERT_TRUE(problem) << c.token;
      EXPECT_NE(problem->find(c.in_message), std::string::npos) << c.token << ": " << *problem;
    }
  }
}

TEST(GenReferences, OnlyKnownJobWideNamesExpand) {
  const std::vector<std::string> allowed = {"SLURM_JOB_ID", "USER", "RUN_DIR"};
  EXPECT_FALSE(refs::problem("/x/${SLURM_JOB_ID}/${USER}", allowed, "args[0]"));
  EXPECT_FALSE(refs::problem("$HOME ${X:-y} $ {} ${", allowed, "args[0]"));  // no references
  auto typo = refs::problem("${SLURM_JOBID_}", allowed, "args[0]");
  ASSERT_TRUE(typo);
  EXPECT_NE(typo->find("did you mean ${SLURM_JOB_ID}?"), std::string::npos) << *typo;
  auto per_task = refs::problem("${SLURM_PROCID}", allowed, "env.R");
  ASSERT_TRUE(per_task);
  EXPECT_NE(per_task->find("differs per task"), std::string::npos) << *per_task;
  EXPECT_EQ(refs::names("a${A}b${B_2}${}${1x}$C"), (std::vector<std::string>{"A", "B_2"}));
}

TEST(GenReferences, UnbracedKnownNamesAreNamedForAWarning) {
  const std::vector<std::string> allowed = {"SCRATCH", "USER"};
  EXPECT_EQ(refs::unbraced("$SCRATCH/img.sif:$USER $x ${USER} $1 $", allowed),
            (std::vector<std::string>{"SCRATCH", "USER"}));
  EXPECT_TRUE(refs::unbraced("${SCRATCH}/a $$ $HOME", allowed).empty());
  EXPECT_EQ(refs::unbraced_unknown("$SCRATCH/img.sif:$USER $x ${USER} $1 $ pytorch/$VER", allowed),
            (std::vector<std::string>{"x", "VER"}));
}

TEST(GenReferences, ADefaultTakesAnyVariableOfTheJobsEnvironmentAndPlainText) {
  const std::vector<std::string> allowed = {"SLURM_JOB_ID"};
  EXPECT_FALSE(refs::problem("--lr=${LR:-3e-4} ${EPOCHS:-} ${A:-a b/c}", allowed, "args[0]"));
  EXPECT_EQ(refs::names("${LR:-3e-4}${SLURM_JOB_ID}"),
            (std::vector<std::string>{"LR", "SLURM_JOB_ID"}));
  auto per_task = refs::problem("${RANK:-0}", allowed, "args[0]");
  ASSERT_TRUE(per_task);
  EXPECT_NE(per_task->find("differs per task"), std::string::npos) << *per_task;
  auto code = refs::problem("${LR:-$(id)}", allowed, "args[0]");
  ASSERT_TRUE(code);
  EXPECT_NE(code->find("put other text outside the braces"), std::string::npos) << *code;
}

TEST(GenReferences, ALeadingTildeIsTheHomeDirectory) {
  EXPECT_EQ(refs::home_tilde("~"), "${HOME}");
  EXPECT_EQ(refs::home_tilde("~/venv"), "${HOME}/venv");
  EXPECT_EQ(refs::home_tilde("~alice/venv"), "~alice/venv");
  EXPECT_EQ(refs::home_tilde("a/~/b"), "a/~/b");
  EXPECT_EQ(refs::home_tilde(""), "");
}

TEST(GenReferences, ExpandingWordsKeepEveryOtherByte) {
  // {value, the word ddpgen writes}
  const std::pair<const char*, const char*> cases[] = {
      {"plain", "plain"},
      {"it's $HOME", "'it'\\''s $HOME'"},
      {"/s/${USER}/$x`y`\"\\", "\"/s/${USER}/\\$x\\`y\\`\\\"\\\\\""},
      {"${A:-b}${B}", "\"${A:-b}${B}\""},
      {"--lr=${LR:-3e-4}", "\"--lr=${LR:-3e-4}\""},
      // A default that is not plain text is no reference: every byte stays literal.
      {"${A:-b;c}${B}", "\"\\${A:-b;c}${B}\""},
      {"${LR:-a;b}", "'${LR:-a;b}'"},
      {"${LR:-a\"b} ${X}", "\"\\${LR:-a\\\"b} ${X}\""},
      // $${ is a literal ${ (Hydra's and OmegaConf's ${key}); $$ alone stays as written.
      {"lr=$${optim.lr} $${lr}", "\"lr=\\${optim.lr} \\${lr}\""},
      {"$$", "'$$'"},
  };
  for (const auto& [value, word] : cases) EXPECT_EQ(shell::quote_expanding(value), word) << value;
  EXPECT_TRUE(refs::names("$${lr} $${HOME}").empty());
  EXPECT_FALSE(refs::problem("model.lr=$${lr}", {}, "args[0]"));
}

TEST(GenReferences, OutputFilesUseSbatchPatterns) {
  std::string out;
  EXPECT_FALSE(refs::filename_pattern(
      "logs/${SLURM_JOB_NAME}-${SLURM_JOB_ID}_${SLURM_ARRAY_TASK_ID}", &out));
  EXPECT_EQ(out, "logs/%x-%j_%a");
  auto home = refs::filename_pattern("${HOME}/x.out", &out);
  ASSERT_TRUE(home);
  EXPECT_NE(home->find("${HOME} cannot expand in an #SBATCH line"), std::string::npos);
}

// A sweep's output is opened by the script: sbatch's patterns become references, the sweep's
// own references stay, anything that cannot expand there is refused with the choices.
TEST(GenReferences, ScriptFilenameTurnsPatternsIntoReferences) {
  std::string out;
  const std::vector<std::string> sweep{"SWEEP_LR"};
  EXPECT_FALSE(refs::script_filename("runs/${SWEEP_LR}/%x-%j_%A.%a-%u%%.out", sweep, &out));
  EXPECT_EQ(out,
            "runs/${SWEEP_LR}/${SLURM_JOB_NAME}-${SLURM_JOB_ID}_${SLURM_ARRAY_JOB_ID}."
            "${SLURM_ARRAY_TASK_ID}-${USER}%.out");
  EXPECT_FALSE(refs::script_filename("${SLURM_ARRAY_TASK_ID}-${SWEEP_LR}", sweep, &out));
  EXPECT_EQ(out, "${SLURM_ARRAY_TASK_ID}-${SWEEP_LR}");
  auto node = refs::script_filename("runs/${SWEEP_LR}/%N.out", sweep, &out);
  ASSERT_TRUE(node);
  EXPECT_NE(node->find("\"%N\" cannot name a file the script opens itself"), std::string::npos);
  auto trailing = refs::script_filename("runs/${SWEEP_LR}/x%", sweep, &out);
  ASSERT_TRUE(trailing);
  EXPECT_NE(trailing->find("\"%\" cannot name"), std::string::npos);
  auto home = refs::script_filename("${HOME}/${SWEEP_LR}", sweep, &out);
  ASSERT_TRUE(home);
  EXPECT_NE(home->find("${HOME} cannot name the file"), std::string::npos);
  EXPECT_TRUE(refs::script_filename("${SWEEP_BS}.out", sweep, &out));
}

}  // namespace
}  // namespace ddpgen
