#include "libddp/util/result.hpp"

#include "libddp/util/text.hpp"

namespace ddp {

std::string Error::to_string() const {
  std::string text;
  if (where.file.empty()) {
    text = message;
  } else if (where.line <= 0) {
    text = where.file + ": " + message;
  } else {
    text = where.file + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
           ": " + message;
  }
  return text::printable(text);
}

}  // namespace ddp
