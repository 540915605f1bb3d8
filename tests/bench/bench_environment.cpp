// What one task launch costs in the core on a 10,000-node x 8-task step.
//
// BM_TaskEnvironment measures, per iteration, exactly what the plugin does for one task on
// the LAST node of the step (node id 9999, local task 7, so index decoding cannot stop early):
//   Hostlist::parse(SLURM_STEP_NODELIST)        -- validates the whole list, once per node
//   plan_step(inputs, nodes, name 0, window)    -- validates "8(x10000)", picks the port
//   task_environment(plan, {79999, 7})          -- formats the 9 variables
// Name resolution (getaddrinfo) and setenv are outside the core and not measured.
// BM_HostlistParse measures Hostlist::parse alone, building the whole list.
// Arguments: 0 = compressed "node[00001-10000]", 1 = the same names fully expanded.
#include <benchmark/benchmark.h>

#include <string>

#include "libddp/core/environment.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/core/port.hpp"

namespace {

constexpr std::uint32_t k_nodes = 10'000;
constexpr std::uint32_t k_tasks_per_node = 8;

const std::string& nodelist(std::int64_t kind) {
  static const std::string compressed = "node[00001-10000]";
  static const std::string expanded = [] {
    std::string list;
    for (std::uint32_t i = 1; i <= k_nodes; ++i) {
      if (i > 1) list += ',';
      std::string digits = std::to_string(i);
      list += "node" + std::string(5 - digits.size(), '0') + digits;
    }
    return list;
  }();
  return kind == 0 ? compressed : expanded;
}

void BM_TaskEnvironment(benchmark::State& state) {
  const std::string& list = nodelist(state.range(0));
  ddp::NodeInputs in;
  in.mode = ddp::Mode::tasks;
  in.step_nodelist = list;
  in.tasks_per_node = "8(x10000)";
  in.node_id = k_nodes - 1;
  in.ntasks = k_nodes * k_tasks_per_node;
  in.local_ntasks = k_tasks_per_node;
  in.job_id = 918273;
  in.step_id = 2;
  const ddp::PortRange window{20000, 30999};
  const ddp::TaskInputs task{k_nodes * k_tasks_per_node - 1, k_tasks_per_node - 1};
  for (auto _ : state) {
    // The plugin parses the step's node list once per node and plans from it.
    auto nodes = ddp::Hostlist::parse(in.step_nodelist);
    auto plan = ddp::plan_step(in, *nodes, nodes->at(0), window);
    auto env = ddp::task_environment(*plan, task);
    benchmark::DoNotOptimize(env.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(state.range(0) == 0 ? "compressed" : "expanded");
}
BENCHMARK(BM_TaskEnvironment)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_HostlistParse(benchmark::State& state) {
  const std::string& list = nodelist(state.range(0));
  for (auto _ : state) {
    auto parsed = ddp::Hostlist::parse(list);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetLabel(state.range(0) == 0 ? "compressed" : "expanded");
}
BENCHMARK(BM_HostlistParse)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_HostlistAtLast(benchmark::State& state) {
  auto parsed = ddp::Hostlist::parse(nodelist(state.range(0)));
  for (auto _ : state) {
    auto name = parsed->at(k_nodes - 1);
    benchmark::DoNotOptimize(name);
  }
  state.SetLabel(state.range(0) == 0 ? "compressed" : "expanded");
}
BENCHMARK(BM_HostlistAtLast)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
