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
  // Refinement's transaction (engine/cuda/refinement.h, --refinement_variants).
  struct RefinementVariant {
    std::string kernel;  // "warp" or "lanes"; --burst_variants: the InsertVariants' name
    double insert_build = 0, insert_burst = 0, erase_burst = 0;  // G/s
    uint64_t build_no_room = 0;
  };
  struct CellVariant {
    std::string name;
    double find50, find0, build;
  };
  struct Size {
    uint64_t keys = 0, buckets = 0;
    uint32_t slots_per_bucket = 0;
    double load = 0;
    double ceiling = 0, ceiling_with_values = 0;
    uint64_t build_no_room = 0;
    // After the build (engine/cuda/device_table.cuh, "Lines", "Cell groups"):
    // shares of the keys stored outside their home line, of the cells flagged
    // and of the spill bits set.
    double keys_outside_home_line = 0, cells_flagged = 0, spill_bits_set = 0;
    uint32_t spill_bits_per_line = 0, cells_per_bucket = 0;
    double insert_build = 0, insert_burst = 0, erase_burst = 0, baseline_build = 0;
    std::vector<Find> finds;
    std::vector<Variant> variants;
    std::vector<RefinementVariant> refinement_variants;
  };

  // GPU bulk build (engine/cuda/bulk_build.h): input pairs per second.
  struct Build {
    std::string name;     // input kind and grouping
    uint64_t inputs = 0;  // base pairs + burst writes
    uint64_t keys = 0;    // keys in the built table
    double load = 0;
    double ms = 0, gkeys = 0;  // G input pairs per second
    uint32_t rounds = 0;
    uint64_t cells_serial = 0;
    // One more run's phases (BulkBuildTimes), ms.
    double dedupe_ms = 0, group_ms = 0, first_mark_ms = 0, rounds_ms = 0, serial_ms = 0, place_ms = 0;
  };
  // One burst absorbed by each path, into a live table of `table_keys` keys
  // sized so that the burst brings it to the load target.
  struct Burst {
    double fraction = 0;
    uint64_t table_keys = 0, burst = 0;
    double load_before = 0, load_after = 0;
    double insert_ms = 0, rebuild_ms = 0, rebuild_alloc_ms = 0;
    uint64_t insert_no_room = 0;
    uint64_t rebuild_buckets = 0;
  };
  // Lookups on one stream while a rebuild runs on another, against idle.
  struct RebuildLookup {
    std::string setup;  // the streams' priorities
    uint64_t keys = 0, batch = 0;
    double idle_gops = 0, during_gops = 0;
    double rebuild_ms_alone = 0, rebuild_ms_during = 0;
    uint64_t batches_during = 0;
  };

  std::string device, commit, command, date;
  std::string sections;
  std::vector<Build> builds;
  std::vector<Burst> bursts;
  std::vector<RebuildLookup> rebuild_lookups;
  int sms = 0, l2_mb = 0, reps = 0;
  std::vector<Size> sizes;
  std::vector<CellVariant> cell_sweep;

  void print_size(const Size& s) const;
  void print_summary() const;
  void print_build_sections() const;
  bool write_json(const std::string& path) const;
};

}  // namespace gphkv::bench
