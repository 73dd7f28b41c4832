#include "bench/engine_bench_report.h"

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
  std::printf("  insert, 1%% burst into the full table: %.3f G/s\n", s.insert_burst);
  std::printf("  erase, 1%% burst: %.3f G/s\n", s.erase_burst);
  for (const Variant& v : s.variants) std::printf("  tuning: %-58s %.2f G/s\n", v.name.c_str(), v.find50);
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
  std::fprintf(f, "{\n  \"benchmark\": \"engine_bench\",\n  \"device\": %s,\n  \"sms\": %d,\n  \"l2_mb\": %d,\n",
               quote(device).c_str(), sms, l2_mb);
  std::fprintf(f, "  \"git_commit\": %s,\n  \"command\": %s,\n  \"date\": %s,\n  \"reps\": %d,\n",
               quote(commit).c_str(), quote(command).c_str(), quote(date).c_str(), reps);
  std::fprintf(f, "  \"units\": \"G operations per second; ratios are GPH over ceiling or baseline\",\n");
  std::fprintf(f, "  \"sizes\": [\n");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Size& s = sizes[i];
    std::fprintf(f, "    {\"keys\": %llu, \"buckets\": %llu, \"slots_per_bucket\": 16, \"load\": %.4f,\n",
                 static_cast<unsigned long long>(s.keys), static_cast<unsigned long long>(s.buckets), s.load);
    std::fprintf(f, "     \"gather_ceiling_128B\": %.4f, \"gather_ceiling_128B_plus_value_half\": %.4f,\n", s.ceiling,
                 s.ceiling_with_values);
    std::fprintf(f, "     \"build_no_room_keys\": %llu,\n", static_cast<unsigned long long>(s.build_no_room));
    std::fprintf(f, "     \"insert_build\": %.4f, \"insert_burst_1pct\": %.4f, \"erase_burst_1pct\": %.4f, \"baseline_build\": %.4f,\n",
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
    std::fprintf(f, "]}%s\n", i + 1 < sizes.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"cells_per_bucket_sweep\": [");
  for (size_t j = 0; j < cell_sweep.size(); ++j) {
    std::fprintf(f, "%s\n    {\"variant\": %s, \"find_50pct_uniform\": %.4f, \"find_0pct_uniform\": %.4f, \"build\": %.4f}",
                 j ? "," : "", quote(cell_sweep[j].name).c_str(), cell_sweep[j].find50, cell_sweep[j].find0,
                 cell_sweep[j].build);
  }
  std::fprintf(f, "\n  ]\n}\n");
  return std::fclose(f) == 0;
}

}  // namespace gphkv::bench
