// libFuzzer target for ddp-check's wire format: whatever bytes a peer sends, split however the
// network splits them, the line buffer stays bounded, the parsers never crash, a parsed hello
// survives a round trip, and nothing that reaches a message or a terminal is unprintable.
// Built and run by tests/fuzz/run.sh (Debian's clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ddp-check/admit.hpp"
#include "ddp-check/hello.hpp"
#include "libddp/util/text.hpp"

namespace {

using namespace ddp::check;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

bool is_printable(std::string_view text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

// A parsed hello: formatting it again gives a line that parses to the same values, and what
// rank 0 would print about it is printable.
void check_hello(std::string_view line, const Hello& h) {
  require(signed_part(line).size() <= line.size());
  std::string again = format_hello(h);
  require(again.size() <= k_max_line && again.back() == '\n');
  again.pop_back();
  auto back = parse_hello(again);
  require(back.has_value());
  require(back->rank == h.rank && back->world_size == h.world_size && back->host == h.host &&
          back->job == h.job && back->step == h.step && back->port == h.port &&
          back->cred == h.cred && back->auth == h.auth);
  require(signed_part(again) == hello_body(h));
  const StepBinding own{"100", "0", "-", 29500};
  auto why = binding_refusal(h, own, AuthMode::munge);
  require(is_printable(describe_refusal("127.0.0.1", &h, why.value_or("admitted"))));
  ddp::Result<Credential> decoded = Credential{0, 0, std::string(signed_part(line))};
  require(!credential_refusal(decoded, signed_part(line), 0));
}

void check_line(std::string_view line) {
  require(line.size() < k_max_line);
  auto hello = parse_hello(line);
  if (hello) {
    check_hello(line, *hello);
  } else {
    require(is_printable(hello.error().message));
  }
  auto verdict = parse_verdict(line);
  if (verdict) {
    require(is_printable(verdict->text));
    require(format_verdict(*verdict).size() <= k_max_line);
  } else {
    require(is_printable(verdict.error().message));
  }
  require(is_printable(ddp::text::printable(line)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size the bytes arrive in, as recv() may cut them anywhere.
  const std::size_t chunk = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  LineBuffer buffer;
  std::size_t lines = 0;
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    if (!buffer.feed(bytes.substr(at, chunk))) break;
    while (auto line = buffer.next_line()) {
      check_line(*line);
      ++lines;
    }
  }
  require(lines <= bytes.size());
  return 0;
}
