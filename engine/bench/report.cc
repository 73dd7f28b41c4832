#include "engine/bench/report.h"

#include <cstdio>

namespace gphkv::bench {

void Report::print_size(const Size& s) const {
  std::printf("\n%llu keys, load %.3f: gather ceiling %.2f G/s (128 B per query)\n",
              static_cast<unsigned long long>(s.keys), s.load, s.ceiling);
  std::printf("  %-22s %10s %10s %12s %12s\n", "find", "GPH G/s", "base G/s", "GPH/ceiling", "GPH/base");
  for (const Find& f : s.finds) {
    char name[64];
    std::snprintf(name, sizeof name, "%3d%% hits, %s", f.hit_pct, f.zipf ? "zipf" : "uniform");
    std::printf("  %-22s %10.2f %10.2f %12.3f %12.2f\n", name, f.gph, f.baseline, f.gph / s.ceiling,
                f.gph / f.baseline);
  }
  std::printf("  insert, build to load %.2f: %.3f G/s, %llu keys kNoRoom   (baseline build %.3f G/s)\n", s.load,
              s.insert_build, static_cast<unsigned long long>(s.build_no_room), s.baseline_build);
  std::printf(
      "  after the build: %.4f of the keys outside their home line, %.4f of the cells flagged, %.4f of the spill "
      "bits set\n",
      s.keys_outside_home_line, s.cells_flagged, s.spill_bits_set);
  std::printf("  insert, 1%% burst into the full table: %.3f G/s\n", s.insert_burst);
  std::printf("  erase, 1%% burst: %.3f G/s\n", s.erase_burst);
  for (const Variant& v : s.variants) std::printf("  tuning: %-58s %.2f G/s\n", v.name.c_str(), v.find50);
  for (const RefinementVariant& v : s.refinement_variants) {
    std::printf("  refinement %-6s insert build %.3f G/s, 1%% bursts %.3f G/s, erase %.3f G/s\n", v.kernel.c_str(),
                v.insert_build, v.insert_burst, v.erase_burst);
  }
  std::fflush(stdout);
}

void Report::print_summary() const {
  std::printf("\nsummary (%s, commit %s, median of %d runs)\n", device.c_str(), commit.c_str(), reps);
  std::printf("%-12s %-22s %9s %9s %9s\n", "keys", "op", "G ops/s", "/ceiling", "/baseline");
  for (const Size& s : sizes) {
    for (const Find& f : s.finds) {
      char op[64];
      std::snprintf(op, sizeof op, "find %d%% %s", f.hit_pct, f.zipf ? "zipf" : "uniform");
      std::printf("%-12llu %-22s %9.2f %9.3f %9.2f\n", static_cast<unsigned long long>(s.keys), op, f.gph,
                  f.gph / s.ceiling, f.gph / f.baseline);
    }
    std::printf("%-12llu %-22s %9.3f\n", static_cast<unsigned long long>(s.keys), "insert build", s.insert_build);
    std::printf("%-12llu %-22s %9.3f\n", static_cast<unsigned long long>(s.keys), "insert 1% burst", s.insert_burst);
    std::printf("%-12llu %-22s %9.3f\n", static_cast<unsigned long long>(s.keys), "erase 1% burst", s.erase_burst);
  }
}

void Report::print_build_sections() const {
  if (!builds.empty()) {
    std::printf("\n%-46s %12s %12s %6s %9s %9s %7s %8s\n", "bulk build (GPU)", "inputs", "keys", "load", "ms", "G in/s",
                "rounds", "serial");
    for (const Build& b : builds) {
      std::printf("%-46s %12llu %12llu %6.3f %9.2f %9.3f %7u %8llu\n", b.name.c_str(),
                  static_cast<unsigned long long>(b.inputs), static_cast<unsigned long long>(b.keys), b.load, b.ms,
                  b.gkeys, b.rounds, static_cast<unsigned long long>(b.cells_serial));
      std::printf(
          "    phases (ms): dedupe %.2f, group %.2f, records+locate+first scan %.2f, rounds %.2f, serial %.2f, "
          "place %.2f\n",
          b.dedupe_ms, b.group_ms, b.first_mark_ms, b.rounds_ms, b.serial_ms, b.place_ms);
    }
  }
  if (!bursts.empty()) {
    std::printf("\n%-8s %11s %11s %12s %10s %10s %12s %14s %12s\n", "burst", "table keys", "burst keys", "load",
                "insert ms", "rebuild ms", "(+alloc ms)", "insert/rebuild", "ins. noRoom");
    for (const Burst& b : bursts) {
      char load[32];
      std::snprintf(load, sizeof load, "%.2f->%.2f", b.load_before, b.load_after);
      std::printf("%7.1f%% %11llu %11llu %12s %10.2f %10.2f %12.2f %14.2f %12llu\n", b.fraction * 100,
                  static_cast<unsigned long long>(b.table_keys), static_cast<unsigned long long>(b.burst), load,
                  b.insert_ms, b.rebuild_ms, b.rebuild_alloc_ms, b.insert_ms / b.rebuild_ms,
                  static_cast<unsigned long long>(b.insert_no_room));
    }
  }
  for (const RebuildLookup& r : rebuild_lookups) {
    std::printf(
        "\nlookups (50%% hits, batches of %llu, %s) on %llu keys: idle %.2f G/s, during a rebuild %.2f G/s "
        "(%.3f of idle); rebuild %.1f ms alone, %.1f ms with lookups (%llu batches during)\n",
        static_cast<unsigned long long>(r.batch), r.setup.c_str(), static_cast<unsigned long long>(r.keys), r.idle_gops,
        r.during_gops, r.during_gops / r.idle_gops, r.rebuild_ms_alone, r.rebuild_ms_during,
        static_cast<unsigned long long>(r.batches_during));
  }
  std::fflush(stdout);
}

namespace {
std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}
}  // namespace

bool Report::write_json(const std::string& path) const {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  // A run without the table section is labelled apart, so that readers of the
  // table figures (scripts/perf-tables.py picks the newest "engine_bench") skip it.
  std::fprintf(f, "{\n  \"benchmark\": \"%s\",\n  \"device\": %s,\n  \"sms\": %d,\n  \"l2_mb\": %d,\n",
               sizes.empty() ? "engine_bench_build" : "engine_bench", quote(device).c_str(), sms, l2_mb);
  std::fprintf(f, "  \"git_commit\": %s,\n  \"command\": %s,\n  \"date\": %s,\n  \"reps\": %d,\n",
               quote(commit).c_str(), quote(command).c_str(), quote(date).c_str(), reps);
  std::fprintf(f, "  \"units\": \"G operations per second; ratios are GPH over ceiling or baseline\",\n");
  std::fprintf(f, "  \"sizes\": [\n");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Size& s = sizes[i];
    std::fprintf(f, "    {\"keys\": %llu, \"buckets\": %llu, \"slots_per_bucket\": %u, \"load\": %.4f,\n",
                 static_cast<unsigned long long>(s.keys), static_cast<unsigned long long>(s.buckets),
                 s.slots_per_bucket, s.load);
    std::fprintf(f, "     \"gather_ceiling_128B\": %.4f, \"gather_ceiling_128B_plus_value_half\": %.4f,\n", s.ceiling,
                 s.ceiling_with_values);
    std::fprintf(f,
                 "     \"build_no_room_keys\": %llu, \"cells_per_bucket\": %u, \"keys_outside_home_line\": %.4f, "
                 "\"cells_flagged\": %.4f, \"spill_bits_per_line\": %u, \"spill_bits_set\": %.4f,\n",
                 static_cast<unsigned long long>(s.build_no_room), s.cells_per_bucket, s.keys_outside_home_line,
                 s.cells_flagged, s.spill_bits_per_line, s.spill_bits_set);
    std::fprintf(f,
                 "     \"insert_build\": %.4f, \"insert_burst_1pct\": %.4f, \"erase_burst_1pct\": %.4f, "
                 "\"baseline_build\": %.4f,\n",
                 s.insert_build, s.insert_burst, s.erase_burst, s.baseline_build);
    std::fprintf(f, "     \"find\": [\n");
    for (size_t j = 0; j < s.finds.size(); ++j) {
      const Find& x = s.finds[j];
      std::fprintf(f,
                   "       {\"hit_pct\": %d, \"distribution\": \"%s\", \"gph\": %.4f, \"baseline\": %.4f, "
                   "\"gph_over_ceiling\": %.4f, \"gph_over_baseline\": %.4f}%s\n",
                   x.hit_pct, x.zipf ? "zipf" : "uniform", x.gph, x.baseline, x.gph / s.ceiling, x.gph / x.baseline,
                   j + 1 < s.finds.size() ? "," : "");
    }
    std::fprintf(f, "     ],\n     \"lookup_shape_sweep\": [");
    for (size_t j = 0; j < s.variants.size(); ++j) {
      std::fprintf(f, "%s{\"variant\": %s, \"gops\": %.4f}", j ? ", " : "", quote(s.variants[j].name).c_str(),
                   s.variants[j].find50);
    }
    std::fprintf(f, "],\n     \"refinement_variants\": [");
    for (size_t j = 0; j < s.refinement_variants.size(); ++j) {
      const RefinementVariant& v = s.refinement_variants[j];
      std::fprintf(f,
                   "%s{\"kernel\": %s, \"insert_build\": %.4f, \"insert_burst_1pct\": %.4f, \"erase_burst_1pct\": "
                   "%.4f, \"build_no_room_keys\": %llu}",
                   j ? ", " : "", quote(v.kernel).c_str(), v.insert_build, v.insert_burst, v.erase_burst,
                   static_cast<unsigned long long>(v.build_no_room));
    }
    std::fprintf(f, "]}%s\n", i + 1 < sizes.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"cells_per_bucket_sweep\": [");
  for (size_t j = 0; j < cell_sweep.size(); ++j) {
    std::fprintf(
        f, "%s\n    {\"variant\": %s, \"find_50pct_uniform\": %.4f, \"find_0pct_uniform\": %.4f, \"build\": %.4f}",
        j ? "," : "", quote(cell_sweep[j].name).c_str(), cell_sweep[j].find50, cell_sweep[j].find0,
        cell_sweep[j].build);
  }
  std::fprintf(f, "\n  ],\n  \"sections\": %s,\n  \"bulk_build\": [", quote(sections).c_str());
  for (size_t j = 0; j < builds.size(); ++j) {
    const Build& b = builds[j];
    std::fprintf(f,
                 "%s\n    {\"variant\": %s, \"inputs\": %llu, \"keys\": %llu, \"load\": %.4f, \"ms\": %.3f, "
                 "\"g_inputs_per_s\": %.4f, \"parallel_rounds\": %u, \"cells_serial\": %llu, "
                 "\"phases_ms\": {\"dedupe\": %.3f, \"group\": %.3f, \"records_locate_first_scan\": %.3f, "
                 "\"rounds\": %.3f, \"serial\": %.3f, \"place\": %.3f}}",
                 j ? "," : "", quote(b.name).c_str(), static_cast<unsigned long long>(b.inputs),
                 static_cast<unsigned long long>(b.keys), b.load, b.ms, b.gkeys, b.rounds,
                 static_cast<unsigned long long>(b.cells_serial), b.dedupe_ms, b.group_ms, b.first_mark_ms, b.rounds_ms,
                 b.serial_ms, b.place_ms);
  }
  std::fprintf(f, "\n  ],\n  \"burst_absorb\": [");
  for (size_t j = 0; j < bursts.size(); ++j) {
    const Burst& b = bursts[j];
    std::fprintf(f,
                 "%s\n    {\"fraction\": %.4f, \"table_keys\": %llu, \"burst_keys\": %llu, \"load_before\": %.4f, "
                 "\"load_after\": %.4f, \"insert_ms\": %.3f, \"rebuild_ms\": %.3f, \"rebuild_alloc_ms\": %.3f, "
                 "\"insert_over_rebuild\": %.4f, \"insert_no_room\": %llu, \"rebuild_buckets\": %llu}",
                 j ? "," : "", b.fraction, static_cast<unsigned long long>(b.table_keys),
                 static_cast<unsigned long long>(b.burst), b.load_before, b.load_after, b.insert_ms, b.rebuild_ms,
                 b.rebuild_alloc_ms, b.insert_ms / b.rebuild_ms, static_cast<unsigned long long>(b.insert_no_room),
                 static_cast<unsigned long long>(b.rebuild_buckets));
  }
  std::fprintf(f, "\n  ],\n  \"lookup_during_rebuild\": [");
  for (size_t j = 0; j < rebuild_lookups.size(); ++j) {
    const RebuildLookup& r = rebuild_lookups[j];
    std::fprintf(f,
                 "%s\n    {\"setup\": %s, \"keys\": %llu, \"batch\": %llu, \"idle_gops\": %.4f, \"during_gops\": %.4f, "
                 "\"during_over_idle\": %.4f, \"rebuild_ms_alone\": %.3f, \"rebuild_ms_during\": %.3f, "
                 "\"batches_during\": %llu}",
                 j ? "," : "", quote(r.setup).c_str(), static_cast<unsigned long long>(r.keys),
                 static_cast<unsigned long long>(r.batch), r.idle_gops, r.during_gops, r.during_gops / r.idle_gops,
                 r.rebuild_ms_alone, r.rebuild_ms_during, static_cast<unsigned long long>(r.batches_during));
  }
  std::fprintf(f, "\n  ]\n}\n");
  return std::fclose(f) == 0;
}

}  // namespace gphkv::bench
