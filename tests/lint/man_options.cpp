// The man page of ddp-check or ddp-watch documents every option of the tool's table, and the
// table has every option the page documents (an ".It Fl -name" line). Usage:
// ddp_man_options check|watch PAGE; names each difference and exits 1.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "ddp-check/options.hpp"
#include "ddp-watch/options.hpp"

namespace {

// The long options of every ".It" line of the page: ".It Fl -help , Fl -version".
std::set<std::string> documented(std::istream& page) {
  std::set<std::string> out;
  for (std::string line; std::getline(page, line);) {
    if (!line.starts_with(".It ")) continue;
    std::istringstream words(line);
    std::string previous;
    for (std::string word; words >> word; previous = word) {
      if (previous == "Fl" && word.starts_with("-")) out.insert("-" + word);
    }
  }
  std::erase_if(out, [](const std::string& name) { return !name.starts_with("--"); });
  return out;
}

template <class Options>
std::set<std::string> table_names(std::span<const ddp::cli::Option<Options>> table) {
  std::set<std::string> out;
  for (std::string_view name : ddp::cli::names(ddp::cli::specs(table))) out.emplace(name);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string tool = argc == 3 ? argv[1] : "";
  if (tool != "check" && tool != "watch") {
    std::cerr << "usage: ddp_man_options check|watch PAGE\n";
    return 2;
  }
  std::ifstream page(argv[2]);
  if (!page) {
    std::cerr << argv[2] << ": cannot read\n";
    return 2;
  }
  const std::string program = "ddp-" + tool;
  const auto table = tool == "check" ? table_names(ddp::check::option_table())
                                     : table_names(ddp::watch::option_table());
  const auto man = documented(page);
  int differences = 0;
  for (const auto& name : table) {
    if (man.contains(name)) continue;
    std::cout << argv[2] << " does not document " << name << " (" << program
              << "'s option table has it)\n";
    ++differences;
  }
  for (const auto& name : man) {
    if (table.contains(name)) continue;
    std::cout << argv[2] << " documents " << name << ", which " << program
              << "'s option table lacks\n";
    ++differences;
  }
  if (differences > 0) return 1;
  std::cout << program << ": man page and option table agree on " << table.size() << " options\n";
  return 0;
}
