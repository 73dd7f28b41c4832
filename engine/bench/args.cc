#include "engine/bench/args.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gphkv::bench {

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto val = [&](const char* name) -> const char* {
      const std::string p = std::string("--") + name + "=";
      return s.rfind(p, 0) == 0 ? s.c_str() + p.size() : nullptr;
    };
    if (const char* v = val("keys")) {
      a.keys.clear();
      std::string list = v;
      size_t at = 0;
      while (at <= list.size()) {
        size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        a.keys.push_back(static_cast<uint64_t>(std::stod(list.substr(at, end - at))));
        at = end + 1;
      }
    } else if (const char* v = val("reps")) {
      a.reps = std::max(1, std::atoi(v));
    } else if (const char* v = val("load")) {
      a.load = std::atof(v);
    } else if (const char* v = val("json")) {
      a.json = v;
    } else if (const char* v = val("sections")) {
      a.sections = v;
    } else if (const char* v = val("shape")) {
      const char* slash = std::strchr(v, '/');
      a.slots_per_bucket = static_cast<uint32_t>(std::atoi(v));
      a.cells_per_bucket = slash ? std::atof(slash + 1) : 0;
      if (a.slots_per_bucket == 0 || a.cells_per_bucket <= 0) {
        std::fprintf(stderr, "--shape wants M/C, e.g. --shape=8/8, got %s\n", v);
        std::exit(1);
      }
    } else if (s == "--sweep") {
      a.sweep = true;
    } else if (s == "--bulk_variants") {
      a.bulk_variants = true;
    } else if (s == "--refinement_variants") {
      a.refinement_variants = true;
    } else if (s == "--burst_variants") {
      a.burst_variants = true;
    } else {
      std::fprintf(stderr,
                   "usage: engine_bench [--keys=1e8,1e9] [--reps=7] [--load=0.8] [--sweep] [--json=PATH] "
                   "[--sections=table,build,burst,rebuild_lookup] [--shape=M/C] [--bulk_variants]\n"
                   "                    [--refinement_variants] [--burst_variants]\n");
      std::exit(1);
    }
  }
  return a;
}

}  // namespace gphkv::bench
