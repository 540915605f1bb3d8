// The main of the fuzz targets built in the sanitizer build: libFuzzer's runtime there is the
// one without a main (every program that links a core links it, for the coverage callbacks),
// so each target starts libFuzzer's driver with its own input function.
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv,
                                   int (*callback)(const std::uint8_t*, std::size_t));

int main(int argc, char** argv) { return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput); }
