// The live-cluster core: scontrol's --oneliner records as plain values, a draft profile the
// strict reader accepts, and the differences between a profile and a cluster.
#include <gtest/gtest.h>

#include "gen/core/cluster.hpp"
#include "gen/core/profile.hpp"

namespace ddpgen {
namespace {

// As Slurm 22.05 prints them (abridged), for a cluster like Ibex: two node types in one
// partition, told apart by features.
const char* k_partitions =
    "PartitionName=batch AllowGroups=ALL Default=YES MaxNodes=8 MaxTime=2-00:00:00 MinNodes=0 "
    "Nodes=gpu[01-03] State=UP TotalCPUs=120\n"
    "PartitionName=gputest AllowGroups=ALL Default=NO MaxNodes=UNLIMITED MaxTime=00:30:00 "
    "MinNodes=0 Nodes=gpu[01-03] State=UP\n";
const char* k_nodes =
    "NodeName=gpu01 Arch=x86_64 CoresPerSocket=20 CPUAlloc=0 CPUTot=40 "
    "AvailableFeatures=v100,gpu_ai ActiveFeatures=v100,gpu_ai Gres=gpu:v100:4(S:0-1),nvme:3600 "
    "NodeAddr=gpu01 OS=Linux 6.1.0-18-amd64 #1 SMP Debian RealMemory=381952 TmpDisk=0 "
    "Partitions=batch,gputest State=IDLE\n"
    "NodeName=gpu02 CPUTot=40 AvailableFeatures=v100,gpu_ai Gres=gpu:v100:4 RealMemory=381952 "
    "Partitions=batch,gputest State=IDLE\n"
    "NodeName=gpu03 CPUTot=64 AvailableFeatures=a100 Gres=gpu:a100:8 RealMemory=1024000 "
    "Partitions=batch,gputest State=IDLE\n";

TEST(Cluster, ParsesPartitionsAndNodes) {
  auto facts = parse_cluster(k_partitions, k_nodes);
  ASSERT_TRUE(facts) << facts.error().to_string();
  ASSERT_EQ(facts->partitions.size(), 2u);
  EXPECT_EQ(facts->partitions[0].name, "batch");
  EXPECT_TRUE(facts->partitions[0].is_default);
  EXPECT_EQ(facts->partitions[0].max_nodes, 8);
  EXPECT_EQ(facts->partitions[0].max_time, 2 * 86400);
  EXPECT_EQ(facts->partitions[1].max_nodes, 0);  // UNLIMITED
  EXPECT_EQ(facts->partitions[1].max_time, 1800);
  ASSERT_EQ(facts->nodes.size(), 3u);
  EXPECT_EQ(facts->nodes[0].gpus(), 4);
  EXPECT_EQ(facts->nodes[0].gpu_type(), "v100");
  EXPECT_EQ(facts->nodes[0].cpus, 40);
  EXPECT_EQ(facts->nodes[0].features, (std::vector<std::string>{"v100", "gpu_ai"}));
  EXPECT_EQ(facts->nodes[2].gpus(), 8);
  EXPECT_EQ(facts->nodes_of("gputest").size(), 3u);
}

// A number no node has (scontrol garbled, or a hostile --live source) is unknown, never a crash.
TEST(Cluster, OversizedCountsReadAsUnknown) {
  auto facts = parse_cluster(
      "PartitionName=p MaxNodes=99999999999999999999999 MaxTime=00:30:00 Nodes=n1\n",
      "NodeName=n1 CPUTot=18446744073709551617 Gres=gpu:4 RealMemory=2K Partitions=p\n");
  ASSERT_TRUE(facts) << facts.error().to_string();
  EXPECT_EQ(facts->partitions[0].max_nodes, 0);
  EXPECT_EQ(facts->nodes[0].cpus, 0);
  EXPECT_EQ(facts->nodes[0].gpus(), 4);
}

TEST(Cluster, RefusesOutputThatIsNotScontrols) {
  auto facts = parse_cluster("hello world\n", "");
  ASSERT_FALSE(facts);
  EXPECT_EQ(facts.error().to_string(),
            "scontrol show partition:1:1: no PartitionName= in \"hello world\"");
}

Profile decoded(const std::string& yaml) {
  auto doc = read_profile_doc(yaml, "draft.yaml");
  EXPECT_TRUE(doc) << doc.error().to_string();
  auto profile = decode_profile(*doc, Profile{});
  EXPECT_TRUE(profile) << profile.error().to_string() << "\n" << yaml;
  return profile.value_or(Profile{});
}

TEST(Cluster, DraftIsAValidProfileThatAgreesWithItsCluster) {
  auto facts = parse_cluster(k_partitions, k_nodes);
  ASSERT_TRUE(facts);
  const std::string draft = draft_profile(*facts, "ibexlike");
  const Profile p = decoded(draft);
  // One entry per partition and node type; the types told apart by a feature.
  ASSERT_EQ(p.partitions.size(), 4u) << draft;
  EXPECT_EQ(p.node.gpus, 4);
  EXPECT_EQ(p.node.gpu_type, "v100");
  // The common type first, named by the feature that is its GPU type.
  EXPECT_EQ(p.partitions[0].name, "batch");
  EXPECT_EQ(p.partitions[0].max_time, 2 * 86400);
  EXPECT_EQ(p.partitions[0].max_nodes, 2);
  EXPECT_EQ(p.partitions[0].constraint, "v100");
  EXPECT_FALSE(p.partitions[0].node);
  EXPECT_EQ(p.partitions[1].constraint, "a100");
  ASSERT_TRUE(p.partitions[1].node);
  EXPECT_EQ(p.partitions[1].node->gpus, 8);
  EXPECT_EQ(p.partitions[1].node->memory_gb, 1000);
  EXPECT_EQ(p.partitions[2].name, "gputest");
  for (const auto& f : compare_with_cluster(p, *facts))
    EXPECT_FALSE(f.conflict) << f.where << ": " << f.message;
}

// Names are written so that they read back as text (a partition "&batch" is no YAML anchor, a
// feature "&big" neither, "no" no boolean) and counts within the profile's ranges: whatever
// scontrol reports, the draft loads.
TEST(Cluster, DraftOfAHostileClusterStillLoads) {
  auto facts = parse_cluster(
      "PartitionName=&batch Default=YES MaxNodes=UNLIMITED MinNodes=999999 MaxTime=00:30:00 "
      "Nodes=n[1-2]\n"
      "PartitionName=no Default=NO MaxNodes=4 MaxTime=00:30:00 Nodes=n[1-2]\n",
      "NodeName=n1 CPUTot=999999 AvailableFeatures=&big Gres=gpu:x:100 RealMemory=20000000000 "
      "Partitions=&batch,no\n"
      "NodeName=n2 CPUTot=8 AvailableFeatures=small Gres=gpu:x:1 RealMemory=1024 "
      "Partitions=&batch,no\n");
  ASSERT_TRUE(facts) << facts.error().to_string();
  const std::string draft = draft_profile(*facts, "hostile");
  const Profile p = decoded(draft);
  ASSERT_EQ(p.partitions.size(), 4u) << draft;
  EXPECT_EQ(p.partitions[0].name, "&batch");
  EXPECT_EQ(p.partitions[2].name, "no");
  EXPECT_EQ(p.partitions[0].min_nodes, 100000);
  bool big_seen = false;
  for (const auto& part : p.partitions) {
    if (part.constraint != "&big") continue;
    big_seen = true;
    const auto& node = part.node ? *part.node : p.node;
    EXPECT_EQ(node.gpus, 64);
    EXPECT_EQ(node.gpu_type, "x");
    EXPECT_EQ(node.cores, 100000);
    EXPECT_LE(node.memory_gb, 10000000);
  }
  EXPECT_TRUE(big_seen) << draft;
}

TEST(Cluster, ComparisonNamesEachConflict) {
  auto facts = parse_cluster(k_partitions, k_nodes);
  ASSERT_TRUE(facts);
  const Profile p = decoded(
      "ddp_plugin: true\n"
      "node: {gpus: 4, gpu_type: p100, cores: 40}\n"
      "partitions:\n"
      "  - {name: batch, max_nodes: 16, max_time: 3-00:00:00}\n"
      "  - {name: gpu, max_nodes: 2}\n");
  std::vector<std::string> lines;
  for (const auto& f : compare_with_cluster(p, *facts))
    lines.push_back((f.conflict ? "conflict " : "note ") + f.where + ": " + f.message);
  const std::vector<std::string> expected = {
      "conflict ddp_plugin: true in the profile, but srun here has no --ddp option",
      "conflict partitions[0] (batch): max_nodes 16 in the profile, MaxNodes=8 on the cluster",
      "conflict partitions[0] (batch): max_time 3-00:00:00 in the profile, MaxTime=2-00:00:00 on "
      "the cluster",
      "conflict partitions[0] (batch): gpu_type \"p100\" is no GPU GRES type of the nodes (have: "
      "a100, v100)",
      "conflict partitions[1] (gpu): no such partition on this cluster (have: batch, gputest)",
      "note partitions[0] (batch): max_nodes 16, but the partition has 3 node(s) here",
      "note partitions[0] (batch): node.gpus 4; the nodes have 8",
      "note partitions: the cluster's partition \"gputest\" is not in the profile",
  };
  EXPECT_EQ(lines, expected);
}

}  // namespace
}  // namespace ddpgen
