// A stand-in for an NCCL net plugin: a shared object that exports the symbol NCCL looks up.
struct FakeNet {
  const char* name;
};
extern "C" __attribute__((visibility("default"))) const FakeNet ncclNetPlugin_v8 = {"fake"};
