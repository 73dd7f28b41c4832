// engine_bench's command line (the usage line in main.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gphkv::bench {

struct Args {
  std::vector<uint64_t> keys = {100000000ull, 1000000000ull};
  int reps = 7;
  double load = 0.8;  // the occupancy axis: the load factor tables are built to
  bool sweep = false;
  std::string json;
  std::string sections = "table,build,burst,rebuild_lookup";
  bool has(const char* section) const {
    return ("," + sections + ",").find(std::string(",") + section + ",") != std::string::npos;
  }
};

// Exits with the usage line on an unknown argument.
Args parse_args(int argc, char** argv);

}  // namespace gphkv::bench
