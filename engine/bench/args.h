// engine_bench's command line (the usage line in main.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gphkv/engine/table_options.h"

namespace gphkv::bench {

struct Args {
  std::vector<uint64_t> keys = {100000000ull, 1000000000ull};
  int reps = 7;
  double load = 0.8;  // the occupancy axis: the load factor tables are built to
  bool sweep = false;
  // --bulk_variants: the build section also measures the bulk build with
  // BulkBuildConfig::pair_records, between two runs of the default.
  bool bulk_variants = false;
  // --refinement_variants: the table section also measures inserts and
  // bursts with each Refinement kernel, interleaved (warp, lanes, warp, lanes).
  bool refinement_variants = false;
  // --burst_variants: the table section also measures inserts and bursts
  // with each of the insert path's variants (InsertVariants), interleaved
  // twice; rows in refinement_variants, named after the variant.
  bool burst_variants = false;
  std::string json;
  std::string sections = "table,build,burst,rebuild_lookup";
  // --shape=M/C: M slots per bucket and C cells per bucket for every table
  // the sections make (0: TableOptions' defaults), to set two layouts side
  // by side in one device run.
  uint32_t slots_per_bucket = 0;
  double cells_per_bucket = 0;
  engine::TableOptions table_options() const {
    engine::TableOptions o;
    if (slots_per_bucket != 0) o.slots_per_bucket = slots_per_bucket;
    if (cells_per_bucket != 0) o.cells_per_bucket = cells_per_bucket;
    return o;
  }
  bool has(const char* section) const {
    return ("," + sections + ",").find(std::string(",") + section + ",") != std::string::npos;
  }
};

// Exits with the usage line on an unknown argument.
Args parse_args(int argc, char** argv);

}  // namespace gphkv::bench
