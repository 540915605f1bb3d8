// The hello and verdict lines: `ddp-check/2 hello key=value ... cred=C` and
// `ddp-check/2 ok|fail|nccl ...`.
#include "ddp-check/rendezvous/hello.hpp"

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

// The wire format of a hello, described once: each key, in the order hello_body() writes them,
// and the member of Hello its value is (a number, a number or "-", a token, a 0/1 flag, or the
// auth mode). `cred` must come last: it signs everything before it.
struct Field {
  std::string_view key;
  std::uint32_t Hello::*number = nullptr;
  std::optional<std::uint32_t> Hello::*optional = nullptr;
  std::string Hello::*text = nullptr;
  bool Hello::*flag = nullptr;
  bool auth = false;  // "munge" or "none": Hello::auth
};
constexpr Field k_fields[] = {
    {.key = "rank", .number = &Hello::rank},
    {.key = "world", .number = &Hello::world_size},
    {.key = "local_rank", .number = &Hello::local_rank},
    {.key = "local_world", .number = &Hello::local_world_size},
    {.key = "node_rank", .optional = &Hello::node_rank},
    {.key = "nnodes", .optional = &Hello::nnodes},
    {.key = "nproc", .number = &Hello::nproc_per_node},
    {.key = "pid", .number = &Hello::pid},
    {.key = "host", .text = &Hello::host},
    {.key = "gpus", .text = &Hello::gpus},
    {.key = "if", .text = &Hello::ifname},
    {.key = "if_kind", .text = &Hello::if_kind},
    {.key = "addr", .text = &Hello::address},
    {.key = "nccl", .flag = &Hello::nccl_ready},
    {.key = "job", .text = &Hello::job},
    {.key = "step", .text = &Hello::step},
    {.key = "het", .text = &Hello::het},
    {.key = "port", .number = &Hello::port},
    {.key = "auth", .auth = true},
    {.key = "cred", .text = &Hello::cred},
};
constexpr std::size_t k_key_count = std::size(k_fields);
constexpr const Field& k_cred = k_fields[k_key_count - 1];

std::optional<std::size_t> key_index(std::string_view key) {
  for (std::size_t i = 0; i < k_key_count; ++i) {
    if (k_fields[i].key == key) return i;
  }
  return std::nullopt;
}

// The value of field `f` in `h`, as the wire carries it (before wire_token()).
std::string value_of(const Hello& h, const Field& f) {
  if (f.number) return text::decimal(h.*f.number);
  if (f.optional) return h.*f.optional ? text::decimal(*(h.*f.optional)) : "-";
  if (f.text) return h.*f.text;
  if (f.flag) return h.*f.flag ? "1" : "0";
  return h.auth == AuthMode::none ? "none" : "munge";
}

// Stores `value` for field `f`; false when the value is malformed.
bool store(Hello& h, const Field& f, std::string_view value) {
  if (f.number || (f.optional && value != "-")) {
    auto n = text::parse_uint<std::uint32_t>(value);
    if (n && f.number) h.*f.number = *n;
    if (n && f.optional) h.*f.optional = *n;
    return n.has_value();
  }
  if (f.optional) return true;  // "-": not set
  if (f.text) {
    // format_hello writes an empty text as "-", so "key=" never comes from a real peer; taken
    // as "", it would read back as "-" and a peer's step "" would not be the step it signed.
    if (value.empty()) return false;
    h.*f.text = value;
    return true;
  }
  if (f.flag) {
    h.*f.flag = value == "1";
    return value == "0" || value == "1";
  }
  h.auth = value == "none" ? AuthMode::none : AuthMode::munge;
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
  const Field& field = k_fields[*index];
  const bool is_cred = &field == &k_cred;
  if (value.size() > (is_cred ? k_max_credential : k_max_value))
    return fail("hello: value of " + shown(key) + " too long");
  if (!std::all_of(value.begin(), value.end(), printable_byte))
    return fail("hello: value of " + shown(key) + " is not printable ASCII");
  if (!store(h, field, value))
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
  line += " hello";
  for (const Field& f : k_fields) {
    if (&f == &k_cred) break;
    line += ' ';
    line += f.key;
    line += '=';
    line += wire_token(value_of(h, f));
  }
  return line;  // 19 keys of at most k_max_value characters: the credential still fits
}

std::string format_hello(const Hello& h) {
  return hello_body(h) + " " + std::string(k_cred.key) + "=" +
         wire_token(h.cred, k_max_credential) + "\n";
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
    if (!seen[i]) return fail("hello: missing key " + shown(k_fields[i].key));
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
