// Puts of byte keys against puts of uint64 keys, the store alone (no gRPC),
// on either backend: --items keys put into an empty store in runs of
// --run_keys (a fill, as a load or a recovery does), then --items puts that
// overwrite stored keys in the same runs. Byte keys ("k:" and a zero-padded
// id, --key_bytes long) come with their table keys made beforehand, as the
// front ends deliver them. Each rep makes fresh stores and runs the two kinds
// in alternating order; medians of --reps after a warm-up rep.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/bench_report.h"
#include "gphkv/engine/table.h"
#include "server/byte_key.h"
#include "server/store.h"

ABSL_FLAG(double, items, 1e6, "keys put into each store");
ABSL_FLAG(uint32_t, key_bytes, 24, "length of the byte keys");
ABSL_FLAG(uint32_t, value_bytes, 8, "length of every value");
ABSL_FLAG(uint32_t, run_keys, 16384, "keys per put run (one call)");
ABSL_FLAG(std::string, backend, "cpu", "cpu or cuda");
ABSL_FLAG(int, reps, 5, "timed reps (after one warm-up)");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");

namespace {

using gphkv::server::Call;
using gphkv::server::Store;
using Clock = std::chrono::steady_clock;
namespace v1 = gphkv::v1;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::unique_ptr<Store> make_store(uint64_t items) {
  gphkv::server::StoreOptions o;
  o.backend = absl::GetFlag(FLAGS_backend) == "cuda" ? gphkv::engine::Backend::kCuda : gphkv::engine::Backend::kCpu;
  o.initial_capacity = items;
  o.memory_limit_bytes = uint64_t{8} << 30;
  o.max_value_bytes = 1 << 16;
  auto s = Store::create(o);
  if (!s.ok()) {
    std::fprintf(stderr, "store: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

// The put calls of ids in `order`, one per --run_keys keys, packed beforehand.
struct Runs {
  struct Run {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> value_lengths, key_lengths;
    std::string values, key_bytes;
    v1::PutResponse response;
    Call call;
  };
  std::vector<Run> runs;
};

void pack(const std::vector<uint64_t>& order, bool bytes, Runs* out) {
  const uint32_t klen = absl::GetFlag(FLAGS_key_bytes), run_keys = absl::GetFlag(FLAGS_run_keys);
  const std::string value(absl::GetFlag(FLAGS_value_bytes), 'v');
  out->runs.resize((order.size() + run_keys - 1) / run_keys);
  for (size_t r = 0; r < out->runs.size(); ++r) {
    Runs::Run& run = out->runs[r];
    for (size_t i = r * run_keys; i < std::min<size_t>(order.size(), (r + 1) * run_keys); ++i) {
      run.values += value;
      run.value_lengths.push_back(static_cast<uint32_t>(value.size()));
      if (!bytes) {
        run.keys.push_back(order[i]);
        continue;
      }
      std::string k = "k:" + std::to_string(order[i]);
      if (k.size() < klen) k.insert(2, klen - k.size(), '0');
      run.key_bytes += k;
      run.key_lengths.push_back(static_cast<uint32_t>(k.size()));
      run.keys.push_back(gphkv::server::byte_key::table_key(k));
    }
  }
  for (Runs::Run& run : out->runs) {
    run.call.op = gphkv::server::PutOp{run.keys, run.value_lengths, run.values, &run.response,
                                       gphkv::server::ByteKeys{run.key_bytes, run.key_lengths}};
  }
}

// Seconds to apply every run.
double apply(Store& store, Runs& runs) {
  const auto t0 = Clock::now();
  std::vector<absl::Status> st;
  for (Runs::Run& run : runs.runs) {
    Call* calls[] = {&run.call};
    store.apply_puts(calls, &st);
    if (!st[0].ok()) {
      std::fprintf(stderr, "put: %s\n", st[0].ToString().c_str());
      std::exit(1);
    }
  }
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_backend) == "cuda" && gphkv::engine::cuda_device_count() == 0) {
    std::fprintf(stderr, "--backend=cuda needs a CUDA device\n");
    return 2;
  }
  const auto items = static_cast<uint64_t>(absl::GetFlag(FLAGS_items));
  std::vector<uint64_t> fill_order(items), overwrite_order(items);
  for (uint64_t i = 0; i < items; ++i) fill_order[i] = overwrite_order[i] = i;
  std::mt19937_64 rng(1);
  std::shuffle(overwrite_order.begin(), overwrite_order.end(), rng);
  Runs fill[2], overwrite[2];  // [0] uint64 keys, [1] byte keys
  for (int b = 0; b < 2; ++b) {
    pack(fill_order, b == 1, &fill[b]);
    pack(overwrite_order, b == 1, &overwrite[b]);
  }
  const char* names[] = {"uint64", "bytes"};
  std::vector<double> fill_rate[2], overwrite_rate[2];
  const int reps = absl::GetFlag(FLAGS_reps);
  for (int r = 0; r <= reps; ++r) {
    double f[2] = {}, o[2] = {};
    for (int j = 0; j < 2; ++j) {
      const int b = (r + j) % 2;
      auto store = make_store(items);
      f[b] = static_cast<double>(items) / apply(*store, fill[b]);
      o[b] = static_cast<double>(items) / apply(*store, overwrite[b]);
    }
    std::printf(
        "rep %d%s: fill uint64 %.2f M puts/s, bytes %.2f M (%.2fx); overwrite uint64 %.2f M, bytes %.2f M (%.2fx)\n", r,
        r == 0 ? " (warm-up)" : "", f[0] / 1e6, f[1] / 1e6, f[1] / f[0], o[0] / 1e6, o[1] / 1e6, o[1] / o[0]);
    if (r == 0) continue;
    for (int b = 0; b < 2; ++b) {
      fill_rate[b].push_back(f[b]);
      overwrite_rate[b].push_back(o[b]);
    }
  }
  double fm[2], om[2];
  for (int b = 0; b < 2; ++b) {
    fm[b] = gphkv::bench::median(fill_rate[b]);
    om[b] = gphkv::bench::median(overwrite_rate[b]);
  }
  std::printf(
      "median: fill uint64 %.2f M puts/s, bytes %.2f M (%.2fx); overwrite uint64 %.2f M, bytes %.2f M (%.2fx)\n",
      fm[0] / 1e6, fm[1] / 1e6, fm[1] / fm[0], om[0] / 1e6, om[1] / 1e6, om[1] / om[0]);
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    auto rec = gphkv::bench::run_record("byte_key_puts_bench", absl::GetFlag(FLAGS_backend), argc, argv);
    rec["items"] = items;
    rec["key_bytes"] = absl::GetFlag(FLAGS_key_bytes);
    rec["value_bytes"] = absl::GetFlag(FLAGS_value_bytes);
    rec["run_keys"] = absl::GetFlag(FLAGS_run_keys);
    for (int b = 0; b < 2; ++b) {
      rec["fill_puts_per_s"][names[b]] = fill_rate[b];
      rec["overwrite_puts_per_s"][names[b]] = overwrite_rate[b];
      rec["median_fill_puts_per_s"][names[b]] = fm[b];
      rec["median_overwrite_puts_per_s"][names[b]] = om[b];
    }
    rec["bytes_over_uint64"] = {{"fill", fm[1] / fm[0]}, {"overwrite", om[1] / om[0]}};
    if (!gphkv::bench::write_json(path, rec)) return 1;
  }
  return 0;
}
