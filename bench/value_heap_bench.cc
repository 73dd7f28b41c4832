// The value heap against the allocators it was chosen over
// (bench/value_heap_candidates.h), in host memory, bookkeeping only:
//  - churn of TaoBench-like value sizes (half TAO objects: generalized
//    Pareto 1 B .. 64 KiB, ETC pool; half associations: 8 .. 158 B) at
//    --live values: ns per allocation and per release, and bytes reserved per
//    live value byte once the churn has run;
//  - the reuse cases under a --memory-like cap: fill with one size,
//    release a random half, refill with another; the share of the freed bytes
//    taken back, and the bytes compaction copied for it.
// Printed as tables; --json writes them with the command, commit and CPU.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/bench_report.h"
#include "bench/value_heap_candidates.h"
#include "loadgen/size_distribution.h"

ABSL_FLAG(uint64_t, live, 200000, "values live during the churn");
ABSL_FLAG(uint64_t, churn, 2000000, "values released and allocated anew during the churn");
ABSL_FLAG(uint64_t, cap_mib, 96, "the cap of the reuse cases, MiB (the issue's --memory=96MiB)");
ABSL_FLAG(uint32_t, max_value_bytes, 1 << 20, "the largest value (the server's default --max_value_bytes)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the sizes and of the releases");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");

namespace {

using gphkv::bench::Allocator;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Churn {
  std::string allocator;
  double alloc_ns = 0, release_ns = 0;
  double reserved_per_live_byte = 0;
};

// Releases a random 1% of the live values and allocates as many new ones,
// in batches of 64, until --churn values were replaced.
Churn run_churn(Allocator& a, std::mt19937_64& rng) {
  auto object = gphkv::loadgen::ParseSizeDistribution("tao-object");
  auto association = gphkv::loadgen::ParseSizeDistribution("tao-association");
  std::uniform_real_distribution<double> u(0, 1);
  auto draw = [&] { return (rng() % 2 == 0 ? *object : *association)->Quantile(u(rng)); };
  std::vector<uint64_t> handles;
  std::vector<uint32_t> lengths;  // parallel to handles
  uint64_t live_bytes = 0;
  // Allocates `batch` (drawn beforehand: only the allocator is timed).
  auto add = [&](const std::vector<uint32_t>& batch) {
    for (size_t at = 0; at < batch.size(); at += 64) {
      const size_t n = std::min<size_t>(64, batch.size() - at);
      a.allocate(absl::MakeConstSpan(batch.data() + at, n), &handles);  // no limit: never refused
    }
    for (uint32_t len : batch) live_bytes += len;
    lengths.insert(lengths.end(), batch.begin(), batch.end());
  };
  auto draw_batch = [&](uint64_t n) {
    std::vector<uint32_t> batch(n);
    for (auto& len : batch) len = draw();
    return batch;
  };
  const uint64_t live = absl::GetFlag(FLAGS_live);
  add(draw_batch(live));
  double alloc_s = 0, release_s = 0;
  const uint64_t step = std::max<uint64_t>(64, live / 100);
  uint64_t replaced = 0;
  while (replaced < absl::GetFlag(FLAGS_churn)) {
    std::vector<uint64_t> victims;
    for (uint64_t i = 0; i < step; ++i) {
      const size_t j = rng() % handles.size();
      victims.push_back(handles[j]);
      live_bytes -= lengths[j];
      handles[j] = handles.back();
      lengths[j] = lengths.back();
      handles.pop_back();
      lengths.pop_back();
    }
    const std::vector<uint32_t> batch = draw_batch(step);
    Clock::time_point t0 = Clock::now();
    for (uint64_t h : victims) a.release(h);
    release_s += seconds_since(t0);
    t0 = Clock::now();
    add(batch);
    alloc_s += seconds_since(t0);
    replaced += step;
  }
  Churn c;
  c.allocator = a.name();
  c.alloc_ns = 1e9 * alloc_s / replaced;
  c.release_ns = 1e9 * release_s / replaced;
  c.reserved_per_live_byte = static_cast<double>(a.reserved_bytes()) / static_cast<double>(live_bytes);
  return c;
}

struct Reuse {
  std::string allocator;
  uint32_t first, second;
  int batch;
  uint64_t freed = 0, refilled = 0, moved = 0;
};

// Fills the cap with values of `first` bytes, releases a random half, then
// allocates batches of `batch` values of `second` bytes until one is refused.
Reuse run_reuse(Allocator& a, uint32_t first, uint32_t second, int batch, std::mt19937_64& rng) {
  Reuse r{a.name(), first, second, batch};
  a.set_limit(absl::GetFlag(FLAGS_cap_mib) << 20);
  std::vector<uint64_t> handles;
  while (a.allocate({&first, 1}, &handles)) {
  }
  for (uint64_t h : handles) {
    if (rng() % 2 == 0) {
      a.release(h);
      r.freed += first;
    }
  }
  const std::vector<uint32_t> lengths(batch, second);
  std::vector<uint64_t> more;
  while (a.allocate(lengths, &more)) r.refilled += uint64_t{second} * batch;
  r.moved = a.moved_bytes();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const uint32_t max_value = absl::GetFlag(FLAGS_max_value_bytes);
  std::vector<Churn> churns;
  std::vector<Reuse> reuses;
  {
    std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
    for (auto& a : gphkv::bench::make_candidates(max_value)) churns.push_back(run_churn(*a, rng));
  }
  struct Case {
    uint32_t first, second;
    int batch;
  };
  for (const Case& c : {Case{60000, 12000, 16}, Case{12000, 60000, 1}, Case{100, 5000, 64}, Case{5000, 100, 64}}) {
    for (size_t i = 0; i < gphkv::bench::make_candidates(max_value).size(); ++i) {
      std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
      auto a = std::move(gphkv::bench::make_candidates(max_value)[i]);
      reuses.push_back(run_reuse(*a, c.first, c.second, c.batch, rng));
    }
  }

  std::printf(
      "churn: %llu live TaoBench-like values (half objects 1 B..64 KiB, half associations 8..158 B), "
      "%llu replaced\n",
      static_cast<unsigned long long>(absl::GetFlag(FLAGS_live)),
      static_cast<unsigned long long>(absl::GetFlag(FLAGS_churn)));
  std::printf("| allocator | ns per allocation | ns per release | reserved / live bytes |\n|---|---:|---:|---:|\n");
  for (const Churn& c : churns) {
    std::printf("| %s | %.0f | %.0f | %.3f |\n", c.allocator.c_str(), c.alloc_ns, c.release_ns,
                c.reserved_per_live_byte);
  }
  std::printf("\nreuse under a %llu MiB cap: fill with one size, release a random half, refill with another\n",
              static_cast<unsigned long long>(absl::GetFlag(FLAGS_cap_mib)));
  std::printf(
      "| allocator | first -> second (batch) | freed MB | taken back | copied MB |\n|---|---|---:|---:|---:|\n");
  for (const Reuse& r : reuses) {
    std::printf("| %s | %u -> %u (%d) | %.1f | %.1f%% | %.1f |\n", r.allocator.c_str(), r.first, r.second, r.batch,
                r.freed / 1e6, r.freed == 0 ? 0.0 : 100.0 * r.refilled / r.freed, r.moved / 1e6);
  }

  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    auto record = gphkv::bench::run_record("value_heap_bench", gphkv::bench::cpu_model(), argc, argv);
    record["live"] = absl::GetFlag(FLAGS_live);
    record["churn"] = absl::GetFlag(FLAGS_churn);
    record["cap_mib"] = absl::GetFlag(FLAGS_cap_mib);
    record["max_value_bytes"] = max_value;
    for (const Churn& c : churns) {
      record["churn_results"].push_back({{"allocator", c.allocator},
                                         {"alloc_ns", c.alloc_ns},
                                         {"release_ns", c.release_ns},
                                         {"reserved_per_live_byte", c.reserved_per_live_byte}});
    }
    for (const Reuse& r : reuses) {
      record["reuse_results"].push_back({{"allocator", r.allocator},
                                         {"first", r.first},
                                         {"second", r.second},
                                         {"batch", r.batch},
                                         {"freed", r.freed},
                                         {"refilled", r.refilled},
                                         {"moved", r.moved}});
    }
    if (!gphkv::bench::write_json(path, record)) return 1;
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}
