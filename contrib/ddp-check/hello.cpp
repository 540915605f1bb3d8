// The hello and verdict lines: `ddp-check/1 hello key=value ...` and `ddp-check/1 ok|fail|nccl`.
#include "hello.hpp"

#include <string>
#include <vector>

#include "text.hpp"

namespace ddp::check {
namespace {

constexpr std::size_t k_max_value = 256;

// One whitespace-free token: spaces and control characters become '_', long values are cut.
std::string token(std::string_view value) {
  if (value.empty()) return "-";
  std::string out;
  out.reserve(value.size() < k_max_value ? value.size() : k_max_value);
  for (char c : value.substr(0, k_max_value)) {
    auto u = static_cast<unsigned char>(c);
    out += (u <= 0x20 || u == 0x7f) ? '_' : c;
  }
  return out;
}

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// `s` shown in an error message: printable, bounded.
std::string shown(std::string_view s) {
  std::string out = "\"" + token(s.substr(0, 60));
  if (s.size() > 60) out += "...";
  return out + "\"";
}

}  // namespace

std::string format_hello(const Hello& h) {
  std::string line{k_protocol};
  auto add = [&line](std::string_view key, std::string_view value) {
    line += ' ';
    line += key;
    line += '=';
    line += token(value);
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
  line += '\n';
  return line;  // 14 keys of at most k_max_value characters stay far below k_max_line
}

Result<Hello> parse_hello(std::string_view line) {
  auto words = split_spaces(line);
  if (words.size() < 2 || words[0] != k_protocol || words[1] != "hello") {
    return fail("not a ddp-check/1 hello: " + shown(line));
  }
  Hello h;
  unsigned seen = 0;
  struct Key {
    std::string_view name;
    unsigned bit;
  };
  static constexpr Key k_keys[] = {
      {"rank", 1u << 0},        {"world", 1u << 1},     {"local_rank", 1u << 2},
      {"local_world", 1u << 3}, {"node_rank", 1u << 4}, {"nnodes", 1u << 5},
      {"nproc", 1u << 6},       {"pid", 1u << 7},       {"host", 1u << 8},
      {"gpus", 1u << 9},        {"if", 1u << 10},       {"if_kind", 1u << 11},
      {"addr", 1u << 12},       {"nccl", 1u << 13},
  };
  constexpr unsigned k_all = (1u << 14) - 1;
  for (std::size_t i = 2; i < words.size(); ++i) {
    auto eq = words[i].find('=');
    if (eq == std::string_view::npos)
      return fail("hello: expected key=value, got " + shown(words[i]));
    auto key = words[i].substr(0, eq);
    auto value = words[i].substr(eq + 1);
    unsigned bit = 0;
    for (const auto& k : k_keys) {
      if (k.name == key) bit = k.bit;
    }
    if (bit == 0) return fail("hello: unknown key " + shown(key));
    if (seen & bit) return fail("hello: key " + shown(key) + " given twice");
    seen |= bit;
    if (value.size() > k_max_value) return fail("hello: value of " + shown(key) + " too long");

    auto number = [&](std::uint32_t& out) -> bool {
      auto n = text::parse_uint<std::uint32_t>(value);
      if (n) out = *n;
      return n.has_value();
    };
    auto optional_number = [&](std::optional<std::uint32_t>& out) -> bool {
      if (value == "-") return true;
      auto n = text::parse_uint<std::uint32_t>(value);
      if (n) out = *n;
      return n.has_value();
    };
    bool ok = true;
    if (key == "rank")
      ok = number(h.rank);
    else if (key == "world")
      ok = number(h.world_size);
    else if (key == "local_rank")
      ok = number(h.local_rank);
    else if (key == "local_world")
      ok = number(h.local_world_size);
    else if (key == "node_rank")
      ok = optional_number(h.node_rank);
    else if (key == "nnodes")
      ok = optional_number(h.nnodes);
    else if (key == "nproc")
      ok = number(h.nproc_per_node);
    else if (key == "pid")
      ok = number(h.pid);
    else if (key == "host")
      h.host = value;
    else if (key == "gpus")
      h.gpus = value;
    else if (key == "if")
      h.ifname = value;
    else if (key == "if_kind")
      h.if_kind = value;
    else if (key == "addr")
      h.address = value;
    else if (key == "nccl") {
      ok = value == "0" || value == "1";
      h.nccl_ready = value == "1";
    }
    if (!ok) return fail("hello: bad value " + shown(value) + " for " + shown(key));
  }
  if (seen != k_all) {
    for (const auto& k : k_keys) {
      if (!(seen & k.bit)) return fail("hello: missing key " + shown(k.name));
    }
  }
  return h;
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
    const std::size_t room = k_max_line - line.size() - 5;
    std::string_view text = v.text;
    bool cut = text.size() > room;
    for (char c : text.substr(0, room)) {
      auto u = static_cast<unsigned char>(c);
      line += (u < 0x20 || u == 0x7f) ? ' ' : c;
    }
    if (cut) line += "...";
  }
  line += '\n';
  return line;
}

Result<Verdict> parse_verdict(std::string_view line) {
  std::string prefix{k_protocol};
  if (!line.starts_with(prefix + " ")) return fail("not a ddp-check/1 verdict: " + shown(line));
  auto rest = line.substr(prefix.size() + 1);
  if (rest == "ok") return Verdict{Verdict::Kind::ok, {}};
  if (rest.starts_with("fail ")) return Verdict{Verdict::Kind::fail, std::string(rest.substr(5))};
  if (rest.starts_with("nccl ")) return Verdict{Verdict::Kind::nccl, std::string(rest.substr(5))};
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
