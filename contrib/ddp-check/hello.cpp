// The hello and verdict lines: `ddp-check/2 hello key=value ... cred=C` and
// `ddp-check/2 ok|fail|nccl ...`.
#include "ddp-check/hello.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

bool printable_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f;
}

// The words of `line`, however many spaces are between them.
std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> words = text::split(line, ' ');
  std::erase(words, std::string_view{});
  return words;
}

// `s` shown in an error message: quoted, bounded, printable ASCII.
std::string shown(std::string_view s) {
  return text::quote(s, 60);
}

// The keys of a hello, in the order format_hello() writes them; `cred` must come last.
constexpr std::string_view k_keys[] = {
    "rank", "world", "local_rank", "local_world", "node_rank", "nnodes", "nproc",
    "pid",  "host",  "gpus",       "if",          "if_kind",   "addr",   "nccl",
    "job",  "step",  "het",        "port",        "auth",      "cred",
};
constexpr std::size_t k_key_count = std::size(k_keys);

std::optional<std::size_t> key_index(std::string_view key) {
  for (std::size_t i = 0; i < k_key_count; ++i) {
    if (k_keys[i] == key) return i;
  }
  return std::nullopt;
}

// Where the value of key number `index` goes: a number, an optional number, or text. Keys
// with none of them (nccl, auth) are handled by store().
std::uint32_t* number_field(Hello& h, std::size_t index) {
  std::uint32_t* fields[] = {&h.rank, &h.world_size, &h.local_rank,     &h.local_world_size,
                             nullptr, nullptr,       &h.nproc_per_node, &h.pid};
  if (index == 17) return &h.port;
  return index < std::size(fields) ? fields[index] : nullptr;
}
std::optional<std::uint32_t>* optional_field(Hello& h, std::size_t index) {
  return index == 4 ? &h.node_rank : index == 5 ? &h.nnodes : nullptr;
}
std::string* text_field(Hello& h, std::size_t index) {
  std::string* fields[] = {&h.host, &h.gpus, &h.ifname, &h.if_kind, &h.address,
                           nullptr, &h.job,  &h.step,   &h.het};
  if (index == k_key_count - 1) return &h.cred;
  return index >= 8 && index - 8 < std::size(fields) ? fields[index - 8] : nullptr;
}

// Stores `value` for key number `index`; false when the value is malformed.
bool store(Hello& h, std::size_t index, std::string_view value) {
  if (auto* field = number_field(h, index)) {
    auto n = text::parse_uint<std::uint32_t>(value);
    if (n) *field = *n;
    return n.has_value();
  }
  if (auto* field = optional_field(h, index)) {
    if (value == "-") return true;
    auto n = text::parse_uint<std::uint32_t>(value);
    if (n) *field = *n;
    return n.has_value();
  }
  if (auto* field = text_field(h, index)) {
    // format_hello writes an empty text as "-", so "key=" never comes from a real peer; taken
    // as "", it would read back as "-" and a peer's step "" would not be the step it signed.
    if (value.empty()) return false;
    *field = value;
    return true;
  }
  if (index == 13) {  // nccl
    h.nccl_ready = value == "1";
    return value == "0" || value == "1";
  }
  h.auth = value == "none" ? AuthMode::none : AuthMode::munge;  // auth
  return value == "none" || value == "munge";
}

// Checks one key=value word (number `position` among the keys) and stores it.
Result<void> parse_word(Hello& h, std::string_view word, std::vector<bool>& seen) {
  auto eq = word.find('=');
  if (eq == std::string_view::npos) return fail("hello: expected key=value, got " + shown(word));
  auto key = word.substr(0, eq);
  auto value = word.substr(eq + 1);
  auto index = key_index(key);
  if (!index) return fail("hello: unknown key " + shown(key));
  if (seen[*index]) return fail("hello: key " + shown(key) + " given twice");
  seen[*index] = true;
  const bool is_cred = *index == k_key_count - 1;
  if (value.size() > (is_cred ? k_max_credential : k_max_value))
    return fail("hello: value of " + shown(key) + " too long");
  if (!std::all_of(value.begin(), value.end(), printable_byte))
    return fail("hello: value of " + shown(key) + " is not printable ASCII");
  if (!store(h, *index, value))
    return fail("hello: bad value " + shown(value) + " for " + shown(key));
  return {};
}

}  // namespace

std::string wire_token(std::string_view value, std::size_t max_chars) {
  if (value.empty()) return "-";
  // Spaces separate the words of a line. A token of a parsed hello is its own token, so a hello
  // formatted again reads back the same.
  return text::printable(value, max_chars - 3, " ");
}

std::string hello_body(const Hello& h) {
  std::string line{k_protocol};
  auto add = [&line](std::string_view key, std::string_view value) {
    line += ' ';
    line += key;
    line += '=';
    line += wire_token(value);
  };
  auto add_num = [&add](std::string_view key, std::uint64_t value) {
    add(key, std::to_string(value));
  };
  line += " hello";
  add_num("rank", h.rank);
  add_num("world", h.world_size);
  add_num("local_rank", h.local_rank);
  add_num("local_world", h.local_world_size);
  add("node_rank", h.node_rank ? std::to_string(*h.node_rank) : "-");
  add("nnodes", h.nnodes ? std::to_string(*h.nnodes) : "-");
  add_num("nproc", h.nproc_per_node);
  add_num("pid", h.pid);
  add("host", h.host);
  add("gpus", h.gpus);
  add("if", h.ifname);
  add("if_kind", h.if_kind);
  add("addr", h.address);
  add("nccl", h.nccl_ready ? "1" : "0");
  add("job", h.job);
  add("step", h.step);
  add("het", h.het);
  add_num("port", h.port);
  add("auth", h.auth == AuthMode::none ? "none" : "munge");
  return line;  // 19 keys of at most k_max_value characters: the credential still fits
}

std::string format_hello(const Hello& h) {
  return hello_body(h) + " cred=" + wire_token(h.cred, k_max_credential) + "\n";
}

Result<Hello> parse_hello(std::string_view line) {
  auto words = split_spaces(line);
  if (words.size() < 2 || words[0] != k_protocol || words[1] != "hello") {
    return fail("not a " + std::string(k_protocol) + " hello: " + shown(line));
  }
  Hello h;
  std::vector<bool> seen(k_key_count, false);
  for (std::size_t i = 2; i < words.size(); ++i) {
    if (seen.back()) return fail("hello: " + shown(words[i]) + " after the credential");
    if (auto ok = parse_word(h, words[i], seen); !ok) return std::unexpected(ok.error());
  }
  for (std::size_t i = 0; i < k_key_count; ++i) {
    if (!seen[i]) return fail("hello: missing key " + shown(k_keys[i]));
  }
  return h;
}

std::string_view signed_part(std::string_view line) {
  auto at = line.find(" cred=");
  return at == std::string_view::npos ? line : line.substr(0, at);
}

std::string format_verdict(const Verdict& v) {
  std::string line{k_protocol};
  switch (v.kind) {
    case Verdict::Kind::ok:
      line += " ok";
      break;
    case Verdict::Kind::fail:
      line += " fail ";
      break;
    case Verdict::Kind::nccl:
      line += " nccl ";
      break;
  }
  if (v.kind != Verdict::Kind::ok) {
    // Room for the tag, the "..." marker and the newline.
    line += text::printable(v.text, k_max_line - line.size() - 5);
  }
  line += '\n';
  return line;
}

Result<Verdict> parse_verdict(std::string_view line) {
  std::string prefix{k_protocol};
  if (!line.starts_with(prefix + " ")) return fail("not a " + prefix + " verdict: " + shown(line));
  auto rest = line.substr(prefix.size() + 1);
  if (rest == "ok") return Verdict{Verdict::Kind::ok, {}};
  if (rest.starts_with("fail "))
    return Verdict{Verdict::Kind::fail, text::printable(rest.substr(5), k_max_line)};
  if (rest.starts_with("nccl "))
    return Verdict{Verdict::Kind::nccl, text::printable(rest.substr(5), k_max_line)};
  return fail("unknown verdict: " + shown(rest));
}

bool LineBuffer::feed(std::string_view bytes) {
  if (overflowed_) return false;
  data_.append(bytes);
  // Only the unterminated tail can grow without bound; complete lines are taken promptly.
  auto last_newline = data_.rfind('\n');
  std::size_t tail =
      last_newline == std::string::npos ? data_.size() : data_.size() - last_newline - 1;
  if (tail > k_max_line) {
    overflowed_ = true;
    data_.clear();
    return false;
  }
  return true;
}

std::optional<std::string> LineBuffer::next_line() {
  auto newline = data_.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  if (newline + 1 > k_max_line) {
    overflowed_ = true;
    data_.clear();
    return std::nullopt;
  }
  std::string line = data_.substr(0, newline);
  data_.erase(0, newline + 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace ddp::check
