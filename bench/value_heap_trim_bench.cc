// What a shrink's value-heap trim holds the executor for, whole and in the
// server's bounded steps (ValueHeap::trim_step): the host heap by default,
// the device heap with --heap=device in a CUDA build (the same bookkeeping on
// the host, plus the move kernels and a cudaFree per chunk given back).
//
// The heap as a soak leaves it: --live TaoBench-like values (half TAO
// objects, half associations, as value_heap_bench's churn), then a random
// --release share released. Each repetition builds that heap twice from the
// same seed: one trim() at once, and one trim in steps of --step_values
// values. Printed: the median over --reps of the whole trim's seconds, the
// stepped trim's total seconds, step count, longest step and median step,
// and the bytes given back and copied. --json writes them with the command,
// commit and CPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/bench_report.h"
#include "loadgen/size_distribution.h"
#include "server/host_value_heap.h"
#ifdef GPHKV_HAVE_CUDA
#include "server/cuda/device_value_heap.h"
#endif

ABSL_FLAG(uint64_t, live, 4000000, "values stored before the releases (the soak's 4 M keys)");
ABSL_FLAG(double, release, 0.15, "share of the values released at random before the trim");
ABSL_FLAG(uint64_t, step_values, 4096, "values a step may move (the server's kTrimStepValues)");
ABSL_FLAG(uint32_t, max_value_bytes, 1 << 20, "the largest value (the server's default --max_value_bytes)");
ABSL_FLAG(std::string, heap, "host", "host, or device (CUDA builds, device 0)");
ABSL_FLAG(int, reps, 3, "repetitions; medians are reported");
ABSL_FLAG(uint64_t, seed, 1, "seed of the sizes and of the releases");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");

namespace {

using Clock = std::chrono::steady_clock;
using gphkv::server::ExtentValueHeap;
using gphkv::server::HostValueHeap;

[[noreturn]] void fail(const absl::Status& s) {
  std::fprintf(stderr, "value_heap_trim_bench: %s\n", s.ToString().c_str());
  std::exit(1);
}

std::unique_ptr<ExtentValueHeap> new_heap() {
  const uint32_t max_value = absl::GetFlag(FLAGS_max_value_bytes);
  const std::string kind = absl::GetFlag(FLAGS_heap);
  if (kind == "host") {
    auto heap = HostValueHeap::create(max_value);
    if (!heap.ok()) fail(heap.status());
    return std::move(*heap);
  }
#ifdef GPHKV_HAVE_CUDA
  if (kind == "device") {
    auto heap = gphkv::server::DeviceValueHeap::create(max_value, 0);
    if (!heap.ok()) fail(heap.status());
    return std::move(*heap);
  }
#endif
  fail(absl::InvalidArgumentError("--heap=" + kind + ": host, or device in a CUDA build"));
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The heap of one repetition: --live values stored, --release of them released.
std::unique_ptr<ExtentValueHeap> make_heap(uint64_t seed) {
  std::unique_ptr<ExtentValueHeap> heap = new_heap();
  std::mt19937_64 rng(seed);
  auto object = gphkv::loadgen::ParseSizeDistribution("tao-object");
  auto association = gphkv::loadgen::ParseSizeDistribution("tao-association");
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<gphkv::server::ValueHandle> handles;
  std::vector<uint32_t> lengths(64);
  for (uint64_t n = 0; n < absl::GetFlag(FLAGS_live); n += lengths.size()) {
    for (auto& len : lengths) len = (rng() % 2 == 0 ? *object : *association)->Quantile(u(rng));
    if (absl::Status s = heap->allocate_slots(lengths, &handles); !s.ok()) fail(s);
  }
  const double share = absl::GetFlag(FLAGS_release);
  for (auto h : handles) {
    if (u(rng) < share) heap->release(h);
  }
  return heap;
}

struct Rep {
  double whole_s = 0, stepped_s = 0, longest_step_s = 0, median_step_s = 0;
  uint64_t steps = 0, released = 0, moved = 0, reserved = 0;
};

Rep run_rep(uint64_t seed) {
  Rep r;
  {
    auto heap = make_heap(seed);
    const Clock::time_point t0 = Clock::now();
    auto released = heap->trim();
    r.whole_s = seconds_since(t0);
    if (!released.ok()) fail(released.status());
  }
  auto heap = make_heap(seed);
  r.reserved = heap->reserved_bytes();
  std::vector<double> steps;
  heap->begin_trim();
  const Clock::time_point t0 = Clock::now();
  for (bool done = false; !done;) {
    const Clock::time_point s0 = Clock::now();
    auto step = heap->trim_step(absl::GetFlag(FLAGS_step_values));
    steps.push_back(seconds_since(s0));
    if (!step.ok()) fail(step.status());
    r.released += step->released_bytes;
    done = step->done;
  }
  r.stepped_s = seconds_since(t0);
  r.steps = steps.size();
  r.longest_step_s = *std::max_element(steps.begin(), steps.end());
  r.median_step_s = median(steps);
  r.moved = heap->moved_bytes();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::vector<Rep> reps;
  for (int i = 0; i < absl::GetFlag(FLAGS_reps); ++i) reps.push_back(run_rep(absl::GetFlag(FLAGS_seed)));
  auto med = [&](double Rep::*field) {
    std::vector<double> v;
    for (const Rep& r : reps) v.push_back(r.*field);
    return median(v);
  };
  const Rep& last = reps.back();  // same seed: the same heap, the same bytes
  std::printf(
      "trim of %llu TaoBench-like values with %.0f%% released: %.0f MB reserved, %.1f MB given back, %.1f MB "
      "copied; medians of %d\n",
      static_cast<unsigned long long>(absl::GetFlag(FLAGS_live)), 100 * absl::GetFlag(FLAGS_release),
      last.reserved / 1e6, last.released / 1e6, last.moved / 1e6, absl::GetFlag(FLAGS_reps));
  std::printf(
      "| whole trim (s) | in steps of %llu values: total (s) | steps | longest step (ms) | median step (ms) |\n",
      static_cast<unsigned long long>(absl::GetFlag(FLAGS_step_values)));
  std::printf("|---:|---:|---:|---:|---:|\n| %.3f | %.3f | %llu | %.2f | %.2f |\n", med(&Rep::whole_s),
              med(&Rep::stepped_s), static_cast<unsigned long long>(last.steps), 1e3 * med(&Rep::longest_step_s),
              1e3 * med(&Rep::median_step_s));
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    auto record = gphkv::bench::run_record("value_heap_trim_bench", gphkv::bench::cpu_model(), argc, argv);
    record["heap"] = absl::GetFlag(FLAGS_heap);
    record["live"] = absl::GetFlag(FLAGS_live);
    record["release"] = absl::GetFlag(FLAGS_release);
    record["step_values"] = absl::GetFlag(FLAGS_step_values);
    record["reserved_bytes"] = last.reserved;
    record["released_bytes"] = last.released;
    record["moved_bytes"] = last.moved;
    record["steps"] = last.steps;
    record["whole_trim_s"] = med(&Rep::whole_s);
    record["stepped_trim_s"] = med(&Rep::stepped_s);
    record["longest_step_s"] = med(&Rep::longest_step_s);
    record["median_step_s"] = med(&Rep::median_step_s);
    if (!gphkv::bench::write_json(path, record)) return 1;
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}
