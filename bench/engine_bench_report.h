// What engine_bench measured: printed as a table and written as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gphkv::bench {

struct Report {
  struct Find {
    int hit_pct;
    bool zipf;
    double gph, baseline;  // G finds/s
  };
  struct Variant {
    std::string name;
    double find50;  // G finds/s, 50% hits, uniform
  };
  struct CellVariant {
    std::string name;
    double find50, find0, build;
  };
  struct Size {
    uint64_t keys = 0, buckets = 0;
    double load = 0;
    double ceiling = 0, ceiling_with_values = 0;
    uint64_t build_no_room = 0;
    double insert_build = 0, insert_burst = 0, erase_burst = 0, baseline_build = 0;
    std::vector<Find> finds;
    std::vector<Variant> variants;
  };

  std::string device, commit, command, date;
  int sms = 0, l2_mb = 0, reps = 0;
  std::vector<Size> sizes;
  std::vector<CellVariant> cell_sweep;

  void print_size(const Size& s) const;
  void print_summary() const;
  bool write_json(const std::string& path) const;
};

}  // namespace gphkv::bench
