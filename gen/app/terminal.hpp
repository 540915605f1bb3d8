// Where ddpgen shows a followed job: standard output, plain lines when piped; on a terminal,
// colour (unless NO_COLOR is set or TERM=dumb) and one status line at the bottom, redrawn in
// place under the lines above it.
#pragma once

#include <string>

#include "gen/core/job_status.hpp"

namespace ddpgen::app {

class Display {
 public:
  Display();

  // A line of the job's output, made printable; verdicts stand out.
  void output(const std::string& line, LineKind kind);

  // A line of ddpgen's own about the job ("job 4: RUNNING on node[01-03]"), coloured by state
  // and prefixed "ddpgen: ".
  void event(const std::string& line, const std::string& state);

  // Sets the status line (a terminal only) and draws it when it changed.
  void status(const std::string& text);

  // Removes the status line, before the last words.
  void clear_status();

 private:
  void put(const std::string& line, const char* colour);
  void draw_status();

  bool tty_;
  bool colour_ = false;
  std::string status_;
};

}  // namespace ddpgen::app
