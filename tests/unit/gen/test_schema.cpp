// The JSON Schema is generated from the reader's key tables: every key the reader accepts is a
// property, and nothing else is.
#include <gtest/gtest.h>

#include "gen/core/job.hpp"
#include "gen/core/profile.hpp"
#include "gen/core/schema.hpp"

namespace ddpgen {
namespace {

TEST(Schema, JobSchemaHasEveryReaderKeyAndForbidsOthers) {
  auto schema = json_schema(SchemaKind::job);
  ASSERT_TRUE(schema) << schema.error().to_string();
  for (const auto& key : job_keys())
    EXPECT_NE(schema->find("\"" + key + "\": "), std::string::npos) << key;
  for (const auto& key : job_checkpoint_keys())
    EXPECT_NE(schema->find("\"" + key + "\": "), std::string::npos) << key;
  EXPECT_NE(schema->find(R"("additionalProperties": false)"), std::string::npos);
  EXPECT_NE(schema->find(R"("required": ["script"])"), std::string::npos);
}

TEST(Schema, ProfileSchemaHasEveryReaderKey) {
  auto schema = json_schema(SchemaKind::profile);
  ASSERT_TRUE(schema) << schema.error().to_string();
  for (const auto* table : {&profile_keys(), &profile_partition_keys(), &profile_node_keys(),
                            &profile_account_keys(), &profile_container_keys()})
    for (const auto& key : *table)
      EXPECT_NE(schema->find("\"" + key + "\": "), std::string::npos) << key;
}

TEST(Schema, JobKeyPathsAreDottedForNestedKeys) {
  const auto paths = job_key_paths();
  const std::vector<std::string> some = {"nodes",
                                         "checkpoint",
                                         "checkpoint.requeue",
                                         "container.image",
                                         "mail.type",
                                         "preflight",
                                         "watchdog.on_stall",
                                         "activate.conda",
                                         "accelerate.config_file",
                                         "accelerate.options",
                                         "torchrun.command",
                                         "heal.max_requeues",
                                         "preflight.pairs_threshold",
                                         "logs.dir",
                                         "sweep.parallel"};
  for (const auto& p : some) EXPECT_NE(std::ranges::find(paths, p), paths.end()) << p;
  EXPECT_EQ(paths.size(),
            job_keys().size() + job_container_keys().size() + job_checkpoint_keys().size() +
                job_mail_keys().size() + job_watchdog_keys().size() + job_activate_keys().size() +
                job_accelerate_keys().size() + job_torchrun_keys().size() +
                job_heal_keys().size() +
                job_preflight_keys().size() + job_logs_keys().size() + job_sweep_keys().size());
}

}  // namespace
}  // namespace ddpgen
