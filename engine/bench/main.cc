// engine_bench: the GPH CUDA table against the device's random-gather ceiling
// and a bucketed linear-probing baseline, in one run. Prints a table and
// writes JSON (docs/gpu.md says how to run it on the device machine;
// scripts/perf-tables.py reads the JSON).
//
//   engine_bench [--keys=1e8,1e9] [--reps=7] [--load=0.8] [--sweep] [--json=PATH]
//                [--sections=table,build,burst,rebuild_lookup] [--shape=M/C] [--bulk_variants]
//                [--refinement_variants] [--burst_variants]
//
// Sections (sections.h, a file each): table (finds, inserts and erases
// against the ceiling and the baseline, per size), build (the GPU bulk
// build, per size), burst (a burst of 0.1% .. 100% of the table absorbed by
// the insert kernel and by a rebuild, at the first size), rebuild_lookup
// (lookups on one stream while a rebuild runs on another, against idle, at
// the first size). Lookups are measured along named axes (axes.h): key
// distribution, hit rate, and the table's occupancy (--load).
#include <cuda_runtime.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "engine/bench/context.h"
#include "engine/bench/sections.h"

#ifndef GPHKV_GIT_COMMIT
#define GPHKV_GIT_COMMIT "unknown"
#endif

int main(int argc, char** argv) {
  using namespace gphkv::bench;
  Context c;
  c.args = parse_args(argc, argv);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  c.sms = p.multiProcessorCount;
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c.report.device = p.name;
  c.report.sms = p.multiProcessorCount;
  c.report.l2_mb = p.l2CacheSize >> 20;
  c.report.commit = GPHKV_GIT_COMMIT;
  c.report.command = cmd;
  c.report.date = date;
  c.report.reps = c.args.reps;
  std::printf("engine_bench on %s (%d SMs, %d MB L2), commit %s, %s\n", p.name, p.multiProcessorCount,
              p.l2CacheSize >> 20, GPHKV_GIT_COMMIT, date);
  c.report.sections = c.args.sections;
  if (c.args.has("table")) {
    for (size_t i = 0; i < c.args.keys.size(); ++i) table_section(c, c.args.keys[i], c.args.sweep && i == 0);
    if (c.args.sweep) cells_per_bucket_sweep(c, c.args.keys[0]);
  }
  if (c.args.has("build")) bulk_build_section(c);
  if (c.args.has("burst")) burst_section(c, c.args.keys[0]);
  if (c.args.has("rebuild_lookup")) rebuild_lookup_section(c, c.args.keys[0]);
  if (!c.report.sizes.empty()) c.report.print_summary();
  c.report.print_build_sections();
  if (!c.args.json.empty()) {
    if (!c.report.write_json(c.args.json)) {
      std::fprintf(stderr, "cannot write %s\n", c.args.json.c_str());
      return 1;
    }
    std::printf("wrote %s\n", c.args.json.c_str());
  }
  return 0;
}
