// format_hostlist(): names -> one Slurm hostlist expression, the inverse of Hostlist::parse()
// for messages that would otherwise list hundreds of nodes one by one.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "libddp/core/hostlist.hpp"

namespace ddp {
namespace {

// Longer digit runs are not read as numbers (they would not fit); such a name stands alone.
constexpr std::size_t k_max_digits = 18;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A name split before its trailing digits: "node07" -> {"node", 7, "07"}.
struct Split {
  std::string_view prefix;
  unsigned long long number = 0;
  std::string_view digits;  // empty: no trailing number, the name stands alone
};

Split split_name(std::string_view name) {
  std::size_t start = name.size();
  while (start > 0 && is_digit(name[start - 1])) --start;
  std::string_view digits = name.substr(start);
  if (digits.empty() || digits.size() > k_max_digits) return {name, 0, {}};
  unsigned long long number = 0;
  for (char c : digits) number = number * 10 + static_cast<unsigned>(c - '0');
  return {name.substr(0, start), number, digits};
}

// The width a number is zero-padded to: its digit count when it starts with 0 ("07"), else 0.
std::size_t padding_of(std::string_view digits) {
  return digits.size() > 1 && digits.front() == '0' ? digits.size() : 0;
}

std::string padded(unsigned long long number, std::size_t width) {
  std::string text = std::to_string(number);
  if (text.size() < width) text.insert(0, width - text.size(), '0');
  return text;
}

// "01-03,07" for {1, 2, 3, 7} at width 2: every run of consecutive numbers as one range.
std::string ranges_text(const std::set<unsigned long long>& numbers, std::size_t width) {
  std::string out;
  for (auto it = numbers.begin(); it != numbers.end();) {
    auto last = it;
    while (std::next(last) != numbers.end() && *std::next(last) == *last + 1) ++last;
    if (!out.empty()) out += ',';
    out += padded(*it, width);
    if (last != it) out += '-' + padded(*last, width);
    it = std::next(last);
  }
  return out;
}

// a < b with runs of digits compared as numbers: "rack2-n" before "rack10-n".
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && is_digit(a[ei])) ++ei;
      while (ej < b.size() && is_digit(b[ej])) ++ej;
      // Without leading zeros, the longer run is the larger number; equal lengths compare as text.
      std::string_view x = a.substr(i, ei - i), y = b.substr(j, ej - j);
      std::string_view tx = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      std::string_view ty = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (tx.size() != ty.size()) return tx.size() < ty.size();
      if (tx != ty) return tx < ty;
      i = ei, j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// One piece of the result: a name standing alone, or a prefix with its numbers at one width.
struct Piece {
  std::string prefix;
  bool numbered = false;
  unsigned long long first = 0;
  std::size_t width = 0;
  std::string text;
};

// By prefix (naturally), a name alone before its numbered group, then first number, then width.
bool piece_less(const Piece& a, const Piece& b) {
  if (natural_less(a.prefix, b.prefix)) return true;
  if (natural_less(b.prefix, a.prefix)) return false;
  if (a.prefix != b.prefix) return a.prefix < b.prefix;  // "n01" and "n1": any fixed order
  return std::tie(a.numbered, a.first, a.width) < std::tie(b.numbered, b.first, b.width);
}

}  // namespace

std::string format_hostlist(std::vector<std::string> names) {
  std::vector<Split> splits;
  splits.reserve(names.size());
  std::set<std::pair<std::string_view, std::size_t>> paddings;  // prefix, width
  for (const std::string& name : names) {
    splits.push_back(split_name(name));
    if (std::size_t w = padding_of(splits.back().digits); w > 0) {
      paddings.emplace(splits.back().prefix, w);
    }
  }
  // A number without a leading zero joins its prefix's padded group when it has that many
  // digits ("10" beside "09"), as Slurm writes node[09-10].
  std::map<std::pair<std::string_view, std::size_t>, std::set<unsigned long long>> groups;
  std::set<std::string_view> alone;
  for (const Split& s : splits) {
    if (s.digits.empty()) {
      alone.insert(s.prefix);
      continue;
    }
    std::size_t width = padding_of(s.digits);
    if (width == 0 && paddings.contains({s.prefix, s.digits.size()})) width = s.digits.size();
    groups[{s.prefix, width}].insert(s.number);
  }
  std::vector<Piece> pieces;
  for (std::string_view name : alone)
    pieces.push_back({std::string(name), false, 0, 0, std::string(name)});
  for (const auto& [group, numbers] : groups) {
    const auto& [prefix, width] = group;
    std::string text(prefix);
    if (numbers.size() == 1) {
      text += padded(*numbers.begin(), width);
    } else {
      text += '[' + ranges_text(numbers, width) + ']';
    }
    pieces.push_back({std::string(prefix), true, *numbers.begin(), width, std::move(text)});
  }
  std::sort(pieces.begin(), pieces.end(), piece_less);
  std::string out;
  for (const Piece& piece : pieces) {
    if (!out.empty()) out += ',';
    out += piece.text;
  }
  return out;
}

}  // namespace ddp
