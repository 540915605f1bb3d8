#include "gen/app/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "libddp/util/text.hpp"

namespace ddpgen::app {

Display::Display() : tty_(::isatty(STDOUT_FILENO) == 1) {
  const char* term = std::getenv("TERM");
  colour_ = tty_ && std::getenv("NO_COLOR") == nullptr &&
            !(term != nullptr && std::string_view(term) == "dumb");
}

void Display::output(const std::string& line, LineKind kind) {
  const char* colour = kind == LineKind::verdict  ? "\033[1;31m"
                       : kind == LineKind::notice ? "\033[33m"
                                                  : nullptr;
  put(ddp::text::printable(line), colour);
}

void Display::event(const std::string& line, const std::string& state) {
  const char* colour = state == "COMPLETED"    ? "\033[1;32m"
                       : is_final_state(state) ? "\033[1;31m"
                       : state == "PENDING"    ? "\033[33m"
                                               : "\033[1;36m";
  put("ddpgen: " + line, colour);
}

void Display::status(const std::string& text) {
  if (!tty_ || text == status_) return;
  status_ = text;
  draw_status();
}

void Display::clear_status() {
  if (tty_ && !status_.empty()) std::cout << "\r\033[K" << std::flush;
  status_.clear();
}

void Display::put(const std::string& line, const char* colour) {
  if (tty_ && !status_.empty()) std::cout << "\r\033[K";
  if (colour_ && colour != nullptr)
    std::cout << colour << line << "\033[0m\n";
  else
    std::cout << line << "\n";
  draw_status();
}

// One line, cut to the terminal's width so that it never wraps (a wrapped line cannot be
// redrawn in place).
void Display::draw_status() {
  if (!tty_ || status_.empty()) {
    std::cout << std::flush;
    return;
  }
  winsize ws{};
  std::size_t width =
      ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
  const std::string text = status_.substr(0, width);
  std::cout << "\r\033[K" << (colour_ ? "\033[7m" + text + "\033[0m" : text) << std::flush;
}

}  // namespace ddpgen::app
