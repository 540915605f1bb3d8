// Not a test: a fixture. A stand-in for an NCCL net plugin, a shared object that exports the
// symbol NCCL looks up; test_fabric.cpp loads it (DDP_FAKE_NET_PLUGIN) and asserts on the result.
struct FakeNet {
  const char* name;
};
extern "C" __attribute__((visibility("default"))) const FakeNet ncclNetPlugin_v8 = {"fake"};
