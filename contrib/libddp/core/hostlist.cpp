// Slurm hostlist and tasks-per-node parsing. One scanner validates the text and reports terms,
// literals and ranges to a sink, so that counting and building the list share the same rules
// and the same error messages.
#include "libddp/core/hostlist.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "libddp/util/text.hpp"

namespace ddp {
namespace {

// Far more names than any cluster has; it keeps every product of range sizes below 2^24, so
// the mixed-radix arithmetic in at() cannot overflow.
constexpr std::size_t k_max_names = std::size_t{1} << 24;
// Numbers inside brackets: 18 digits always fit an unsigned long (64-bit on Linux).
constexpr std::size_t k_max_digits = 18;
// Tasks on one node; anything larger is garbage rather than a real step.
constexpr unsigned k_max_tasks_on_node = 1u << 20;

using Range = Hostlist::Range;

std::unexpected<Error> hostlist_error(std::string_view text, std::size_t pos,
                                      std::string_view what) {
  std::string message = "bad hostlist " + text::quote(text) + ": ";
  message += what;
  message += " (at offset ";
  text::append_uint(message, pos);
  message += ')';
  return fail(std::move(message));
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Finding the end of a plain name is the hot loop: a 10,000-name list is 100 KB that every
// node parses once per step launch (the plugin's Hostlist::parse of SLURM_STEP_NODELIST), and
// count(), which builds nothing, skips whole blocks of plain names (skip_plain_terms; ddp-watch
// counts a step's nodes with it, the plugin never takes that path). So bytes are classified a
// block at a time: `special` marks bytes that may not appear in a name (whitespace, control
// characters, DEL, ',', '[' or ']'; bytes >= 0x80 are allowed, for UTF-8 names), `comma` marks
// the commas among them. Byte i of the block is bit i * k_bits_per_byte + k_bit_in_byte.
// (std::popcount would be a libgcc call on baseline x86-64, so classify() counts commas too.)
struct BlockBits {
  std::uint64_t special = 0;
  std::uint64_t comma = 0;
  unsigned commas = 0;
};

#if defined(__SSE2__)
constexpr std::size_t k_block = 16;
constexpr unsigned k_bits_per_byte = 1;
constexpr unsigned k_bit_in_byte = 0;

[[gnu::always_inline]] inline BlockBits classify(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i comma = _mm_cmpeq_epi8(v, _mm_set1_epi8(','));
  // Unsigned v <= 0x20 is min(v, 0x20) == v; SSE2 has no unsigned byte compare.
  __m128i s = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x20)), v);
  s = _mm_or_si128(s, comma);
  s = _mm_or_si128(s, _mm_cmpeq_epi8(v, _mm_set1_epi8('[')));
  s = _mm_or_si128(s, _mm_cmpeq_epi8(v, _mm_set1_epi8(']')));
  s = _mm_or_si128(s, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
  // Commas are 0xff bytes in `comma`; summing (comma & 1) over the 16 bytes counts them.
  const __m128i sums = _mm_sad_epu8(_mm_and_si128(comma, _mm_set1_epi8(1)), _mm_setzero_si128());
  const auto commas = static_cast<unsigned>(_mm_cvtsi128_si32(sums) +
                                            _mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums)));
  return {static_cast<std::uint32_t>(_mm_movemask_epi8(s)),
          static_cast<std::uint32_t>(_mm_movemask_epi8(comma)), commas};
}
#else
constexpr std::size_t k_block = 8;
constexpr unsigned k_bits_per_byte = 8;
constexpr unsigned k_bit_in_byte = 7;

// Exact SWAR byte tests (Hacker's Delight 6-1): the high bit of each matching byte is set.
[[gnu::always_inline]] inline BlockBits classify(const char* p) {
  constexpr std::uint64_t k_ones = 0x0101010101010101ULL;
  constexpr std::uint64_t k_low7 = 0x7f7f7f7f7f7f7f7fULL;
  std::uint64_t word;
  std::memcpy(&word, p, sizeof word);
  auto zero_bytes = [](std::uint64_t v) { return ~(((v & k_low7) + k_low7) | v | k_low7); };
  auto equal = [&](std::uint8_t b) { return zero_bytes(word ^ (k_ones * b)); };
  const std::uint64_t below_0x21 = ~(((word & k_low7) + k_ones * (0x80 - 0x21)) | word | k_low7);
  const std::uint64_t comma = equal(',');
  // One bit per byte moved to bit 0 of each byte, then summed into the top byte.
  const auto commas = static_cast<unsigned>(((comma >> 7) * k_ones) >> 56);
  return {below_0x21 | comma | equal('[') | equal(']') | equal(0x7f), comma, commas};
}
#endif

// From `pos`, the start of a term, skips whole blocks made only of plain names and commas,
// counting the names ended by those commas in `skipped`. Returns the start of the first term
// not skipped. Anything unusual (brackets, an empty name, the last block) is left to the
// general scanner, so errors and their offsets do not depend on this shortcut.
std::size_t skip_plain_terms(std::string_view text, std::size_t pos, std::size_t& skipped) {
  constexpr unsigned k_bits = k_block * k_bits_per_byte;
  constexpr std::uint64_t k_first = std::uint64_t{1} << k_bit_in_byte;
  std::size_t resume = pos;
  bool term_starts_here = true;  // `pos` is a term start: a comma there would end an empty name
  while (pos + k_block <= text.size()) {
    const BlockBits bits = classify(text.data() + pos);
    if (bits.special != bits.comma) break;
    // Bit i of `after_comma`: byte i starts a term. A comma there ends an empty name.
    const std::uint64_t after_comma =
        (bits.comma << k_bits_per_byte) | (term_starts_here ? k_first : 0);
    if ((bits.comma & after_comma) != 0) break;
    if (bits.comma != 0) {
      skipped += bits.commas;
      const auto last = static_cast<std::size_t>(std::bit_width(bits.comma) - 1) / k_bits_per_byte;
      resume = pos + last + 1;
    }
    term_starts_here = ((bits.comma >> (k_bits - k_bits_per_byte)) & k_first) != 0;
    pos += k_block;
  }
  return resume;
}

// Answers "where does the name starting at `pos` end?", keeping the current block's bits so
// that a 10-byte name costs about one block classification.
class SpecialFinder {
 public:
  explicit SpecialFinder(std::string_view text) : text_(text) {}

  // The first byte at or after `pos` that cannot be part of a name, or text.size().
  std::size_t next(std::size_t pos) {
    while (pos < text_.size()) {
      const std::size_t block = pos - pos % k_block;
      if (block != block_) load(block);
      const std::uint64_t ahead = bits_ >> ((pos - block) * k_bits_per_byte);
      if (ahead != 0)
        return pos + static_cast<std::size_t>(std::countr_zero(ahead)) / k_bits_per_byte;
      pos = block + k_block;
    }
    return text_.size();
  }

 private:
  void load(std::size_t block) {
    block_ = block;
    const std::size_t available = text_.size() - block;
    if (available >= k_block) {
      bits_ = classify(text_.data() + block).special;
      return;
    }
    // Pad the last block with a name character so that bytes past the end never match.
    char tail[k_block];
    std::memset(tail, 'a', sizeof tail);
    std::memcpy(tail, text_.data() + block, available);
    bits_ = classify(tail).special;
  }

  std::string_view text_;
  std::size_t block_ = static_cast<std::size_t>(-1);
  std::uint64_t bits_ = 0;
};

// Reads the digits at `pos`; on success advances `pos` past them.
std::optional<std::string_view> take_digits(std::string_view text, std::size_t& pos) {
  std::size_t start = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  if (pos == start) return std::nullopt;
  return text.substr(start, pos - start);
}

// Reads "LO" or "LO-HI" at `pos`, inside the group opened at `open`; on success advances `pos`
// past it. Slurm keeps the width of the low bound: "[001-004]" gives 001..004, "[8-10]" 8..10.
Result<Range> scan_range(std::string_view text, std::size_t& pos, std::size_t open) {
  const std::size_t n = text.size();
  const std::size_t number_pos = pos;
  auto lo_text = take_digits(text, pos);
  if (!lo_text) {
    if (pos >= n) return hostlist_error(text, open, "'[' is never closed");
    if (text[pos] == ']' && pos == open + 1) return hostlist_error(text, open, "empty '[]'");
    if (text[pos] == '[') return hostlist_error(text, pos, "nested '['");
    return hostlist_error(text, pos, "expected a number in brackets");
  }
  if (lo_text->size() > k_max_digits) return hostlist_error(text, number_pos, "number too large");
  std::string_view hi_text = *lo_text;
  if (pos < n && text[pos] == '-') {
    ++pos;
    auto hi = take_digits(text, pos);
    if (!hi) return hostlist_error(text, pos, "expected a number after '-'");
    if (hi->size() > k_max_digits)
      return hostlist_error(text, pos - hi->size(), "number too large");
    hi_text = *hi;
  }
  Range range;
  range.first = *text::parse_uint<unsigned long>(*lo_text);
  range.last = *text::parse_uint<unsigned long>(hi_text);
  range.width =
      lo_text->size() > 1 && lo_text->front() == '0' ? static_cast<int>(lo_text->size()) : 0;
  if (range.first > range.last) {
    std::string what = "reversed range ";
    what.append(*lo_text).append("-").append(hi_text);
    return hostlist_error(text, number_pos, what);
  }
  return range;
}

// Reads the "[...]" group whose '[' is at `pos`, feeding its ranges to `sink`; on success
// advances `pos` past the ']' and returns the number of names the group stands for.
template <class Sink>
Result<std::size_t> scan_group(std::string_view text, std::size_t& pos, Sink& sink) {
  const std::size_t n = text.size();
  const std::size_t open = pos++;
  sink.begin_group();
  std::size_t group_count = 0;
  while (true) {
    const std::size_t number_pos = pos;
    auto range = scan_range(text, pos, open);
    if (!range) return std::unexpected(std::move(range.error()));
    const unsigned long span = range->last - range->first;
    if (span >= k_max_names || group_count + span + 1 > k_max_names)
      return hostlist_error(text, number_pos, "too many names");
    group_count += span + 1;
    sink.range(*range);
    if (pos >= n) return hostlist_error(text, open, "'[' is never closed");
    if (text[pos] == ']') break;
    if (text[pos] == '[') return hostlist_error(text, pos, "nested '['");
    if (text[pos] != ',') return hostlist_error(text, pos, "unexpected character in brackets");
    ++pos;
  }
  ++pos;  // the ']'
  sink.end_group(group_count);
  return group_count;
}

// Validates `text` and feeds it to `sink`. Returns the number of names.
//
// Sink interface: begin_term(), literal(string_view), begin_group(), range(Range),
// end_group(count), end_term(count). Calls arrive in text order, except that plain names are
// counted without calls while wants_next_term() is false.
template <class Sink>
Result<std::size_t> scan(std::string_view text, Sink& sink) {
  if (text.empty()) return fail("bad hostlist \"\": the list is empty");
  const std::size_t n = text.size();
  SpecialFinder finder(text);
  std::size_t total = 0;
  std::size_t pos = 0;
  while (true) {
    if (!sink.wants_next_term()) {
      std::size_t skipped = 0;
      pos = skip_plain_terms(text, pos, skipped);
      total += skipped;
      if (total > k_max_names) return hostlist_error(text, pos, "too many names");
    }
    const std::size_t term_start = pos;
    std::size_t term_count = 1;
    std::size_t literal_start = pos;
    sink.begin_term();
    while (pos < n && text[pos] != ',') {
      pos = finder.next(pos);
      if (pos == n) break;
      const char c = text[pos];
      if (c == ',') break;
      if (c == ']') return hostlist_error(text, pos, "']' without '['");
      if (c != '[') return hostlist_error(text, pos, "unexpected character");
      if (pos > literal_start) sink.literal(text.substr(literal_start, pos - literal_start));
      const std::size_t open = pos;
      auto group_count = scan_group(text, pos, sink);
      if (!group_count) return std::unexpected(std::move(group_count.error()));
      if (term_count > k_max_names / *group_count)
        return hostlist_error(text, open, "too many names");
      term_count *= *group_count;
      literal_start = pos;
    }
    if (pos == term_start) return hostlist_error(text, pos, "empty name");
    if (pos > literal_start) sink.literal(text.substr(literal_start, pos - literal_start));
    sink.end_term(term_count);
    total += term_count;
    if (total > k_max_names) return hostlist_error(text, term_start, "too many names");
    if (pos == n) return total;
    ++pos;  // the comma between terms
    if (pos == n) return hostlist_error(text, pos, "empty name");
  }
}

// Builds nothing: scan() alone validates and counts.
struct CountSink {
  bool wants_next_term() const { return false; }
  void begin_term() {}
  void literal(std::string_view) {}
  void begin_group() {}
  void range(const Range&) {}
  void end_group(std::size_t) {}
  void end_term(std::size_t) {}
};

// Builds Hostlist terms.
struct BuildSink {
  std::vector<Hostlist::Term>& terms;

  bool wants_next_term() const { return true; }
  void begin_term() { terms.emplace_back(); }
  void literal(std::string_view s) {
    terms.back().parts.push_back(Hostlist::Part{std::string(s), {}, 1});
  }
  void begin_group() { terms.back().parts.emplace_back(); }
  void range(const Range& r) { terms.back().parts.back().ranges.push_back(r); }
  void end_group(std::size_t count) { terms.back().parts.back().count = count; }
  void end_term(std::size_t count) { terms.back().count = count; }
};

// The `index`-th name of `term`: mixed-radix decode, leftmost group the most significant.
std::string decode(const Hostlist::Term& term, std::size_t index) {
  std::string name;
  name.reserve(32);
  std::size_t stride = term.count;
  for (const Hostlist::Part& part : term.parts) {
    if (part.ranges.empty()) {
      name += part.literal;
      continue;
    }
    stride /= part.count;
    std::size_t digit = index / stride;
    index %= stride;
    for (const Range& range : part.ranges) {
      const std::size_t size = range.last - range.first + 1;
      if (digit < size) {
        text::append_uint(name, range.first + digit, range.width);
        break;
      }
      digit -= size;
    }
  }
  return name;
}

std::unexpected<Error> tasks_error(std::string_view text, std::string_view what) {
  std::string message = "bad tasks-per-node list " + text::quote(text) + ": ";
  message += what;
  return fail(std::move(message));
}

// Validates "2(x3),1" and calls visit(count, repeat) for each entry.
template <class Visit>
Result<std::size_t> scan_tasks(std::string_view text, Visit&& visit) {
  if (text.empty()) return tasks_error(text, "the list is empty");
  std::size_t nodes = 0;
  std::size_t pos = 0;
  while (true) {
    auto count_text = take_digits(text, pos);
    if (!count_text) return tasks_error(text, "expected a task count");
    auto count = text::parse_uint<unsigned>(*count_text);
    if (!count || *count > k_max_tasks_on_node) return tasks_error(text, "task count too large");
    if (*count == 0) return tasks_error(text, "a node with 0 tasks");
    std::size_t repeat = 1;
    if (pos < text.size() && text[pos] == '(') {
      if (text.substr(pos, 2) != "(x") return tasks_error(text, "expected \"(xN)\"");
      pos += 2;
      auto repeat_text = take_digits(text, pos);
      if (!repeat_text || pos >= text.size() || text[pos] != ')')
        return tasks_error(text, "expected \"(xN)\"");
      ++pos;
      auto parsed = text::parse_uint<std::size_t>(*repeat_text);
      if (!parsed || *parsed > k_max_names) return tasks_error(text, "too many nodes");
      if (*parsed == 0) return tasks_error(text, "a repeat of 0");
      repeat = *parsed;
    }
    nodes += repeat;
    if (nodes > k_max_names) return tasks_error(text, "too many nodes");
    visit(*count, repeat);
    if (pos == text.size()) return nodes;
    if (text[pos] != ',') return tasks_error(text, "unexpected character");
    ++pos;
  }
}

}  // namespace

Result<Hostlist> Hostlist::parse(std::string_view text) {
  Hostlist list;
  // Commas bound the number of terms; one reservation instead of log2(10,000) regrowths.
  list.terms_.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1);
  BuildSink sink{list.terms_};
  auto size = scan(text, sink);
  if (!size) return std::unexpected(std::move(size.error()));
  list.size_ = *size;
  return list;
}

Result<std::size_t> Hostlist::count(std::string_view text) {
  CountSink sink;
  return scan(text, sink);
}

std::string Hostlist::at(std::size_t i) const {
  for (const Term& term : terms_) {
    if (i < term.count) return decode(term, i);
    i -= term.count;
  }
  return {};  // i >= size(): a precondition violation, answered with an empty name
}

Result<std::vector<unsigned>> parse_tasks_per_node(std::string_view text) {
  std::vector<unsigned> counts;
  auto nodes = scan_tasks(text, [&](unsigned count, std::size_t repeat) {
    counts.insert(counts.end(), repeat, count);
  });
  if (!nodes) return std::unexpected(std::move(nodes.error()));
  return counts;
}

Result<TasksPerNodeSummary> summarize_tasks_per_node(std::string_view text, std::size_t node_id) {
  TasksPerNodeSummary summary;
  summary.first_crowded = static_cast<std::size_t>(-1);
  auto nodes = scan_tasks(text, [&](unsigned count, std::size_t repeat) {
    if (node_id >= summary.nodes && node_id - summary.nodes < repeat) summary.on_node = count;
    if (node_id >= summary.nodes)
      summary.before +=
          std::uint64_t{count} * std::min<std::size_t>(repeat, node_id - summary.nodes);
    if (count > 1 && summary.first_crowded == static_cast<std::size_t>(-1))
      summary.first_crowded = summary.nodes;
    summary.nodes += repeat;
    summary.tasks += std::uint64_t{count} * repeat;
    summary.most = std::max(summary.most, count);
  });
  if (!nodes) return std::unexpected(std::move(nodes.error()));
  if (summary.first_crowded == static_cast<std::size_t>(-1)) summary.first_crowded = summary.nodes;
  return summary;
}

std::vector<std::string> Hostlist::expand() const {
  std::vector<std::string> names;
  names.reserve(size_);
  for (const Term& term : terms_)
    for (std::size_t j = 0; j < term.count; ++j) names.push_back(decode(term, j));
  return names;
}

}  // namespace ddp
