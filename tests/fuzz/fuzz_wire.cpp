// libFuzzer target for ddp-check's wire format: whatever bytes a peer sends, split however the
// network splits them, the line buffer stays bounded, the parsers never crash, a parsed hello
// survives a round trip, and nothing that reaches a message or a terminal is unprintable.
// Built and run by tests/fuzz/run.sh (Debian's clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ddp-check/pairs/protocol.hpp"
#include "ddp-check/rendezvous/admit.hpp"
#include "ddp-check/rendezvous/hello.hpp"
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

// The pairwise phase's control lines: what parses formats back to a line that parses to the
// same values, and a reason never carries a line break onto the wire.
void check_pairs_line(std::string_view line) {
  if (auto hello = parse_agent_hello(line)) {
    const std::string again = format_agent_hello(*hello);
    require(again.find('\n') == std::string::npos);
    auto back = parse_agent_hello(again);
    require(back && back->node == hello->node && back->port == hello->port &&
            back->job == hello->job && back->step == hello->step &&
            back->master_port == hello->master_port && back->auth == hello->auth &&
            back->cred == hello->cred &&
            back->nccl_unavailable.has_value() == hello->nccl_unavailable.has_value());
    // What the credential signs is the line without the credential, never empty.
    const std::string signed_text = agent_signed_part(line);
    require(!signed_text.empty() && signed_text.size() < line.size());
    const StepBinding own{"100", "0", "-", 29500};
    auto why = agent_binding_refusal(*hello, own, AuthMode::munge);
    require(!why || is_printable(*why));
    std::vector<AgentNccl> registered{{hello->node, hello->nccl_unavailable}, {"node", {}}};
    auto skip = nccl_pairs_skip(true, registered);
    require(!skip || is_printable(*skip));
  }
  if (auto serve = parse_serve(line)) {
    auto back = parse_serve(format_serve(*serve));
    require(back && back->tag == serve->tag && back->nonce == serve->nonce);
  }
  if (auto measure = parse_measure(line)) {
    auto back = parse_measure(format_measure(*measure));
    require(back && back->tag == measure->tag && back->addr == measure->addr &&
            back->port == measure->port && back->nonce == measure->nonce);
  }
  if (auto answer = parse_tcp_answer(line)) {
    // A figure that parses is finite and within bounds, and formats back to one that parses.
    require(!answer->gbit_s || (*answer->gbit_s >= 0 && *answer->gbit_s <= k_max_tcp_gbit_s));
    require(!answer->rtt_us || (*answer->rtt_us >= 0 && *answer->rtt_us <= k_max_rtt_us));
    const std::string again = format_tcp_answer(*answer);
    require(again.find('\n') == std::string::npos);
    auto back = parse_tcp_answer(again);
    require(back && back->tag == answer->tag &&
            back->gbit_s.has_value() == answer->gbit_s.has_value());
  }
  if (auto served = parse_served(line)) require(served->first <= 0xffffffffu);
  // Nothing a peer sends is printed where it reads as a verdict.
  const std::string shown = peer_text(line);
  require(is_printable(shown) && shown.find("ddp-check:") == std::string::npos &&
          shown.find("DDP-CHECK:") == std::string::npos);
  if (auto request = parse_nccl_request(line)) {
    auto back = parse_nccl_request(format_nccl_request(*request));
    require(back && back->tag == request->tag && back->rank == request->rank &&
            back->id_hex == request->id_hex);
  }
  if (auto answer = parse_nccl_answer(line)) {
    const std::string again = format_nccl_answer(*answer);
    require(again.find('\n') == std::string::npos);
    auto back = parse_nccl_answer(again);
    require(back && back->tag == answer->tag && back->gb_s.has_value() == answer->gb_s.has_value());
    require(!answer->gb_s || (*answer->gb_s >= 0 && *answer->gb_s <= k_max_nccl_gb_s));
  }
}

void check_line(std::string_view line) {
  check_pairs_line(line);
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
