// The store's whole CUDA get path with byte keys against the same path with
// uint64 keys (issue 26's device goal), no gRPC: two CUDA stores of
// --items items each, one keyed by uint64 ids, one by --key_bytes-byte keys
// ("k:" and a zero-padded id), with --value_bytes values; then batches of
// --batch_keys keys in calls of --call_keys, uniform over the stored keys,
// through the get pipeline (submit, finish, the responses filled), as many
// in flight as its depth. The byte path's time includes hashing each key to
// its table key (XXH3): on the device, the pipeline's default, from the key
// bytes it uploads anyway; or on the host, on the submitting thread in the
// timed loop, or before it (as the server's front-end threads can), the
// pipeline then taking the calls' keys; and the device's comparison of
// every hit's record with its key. The requests themselves are packed
// beforehand, as the wire delivers them. Each rep runs the four kinds in a
// rotating order; medians of --reps after a warm-up rep.
#include <algorithm>
#include <array>
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
#include "server/get_stages.h"
#include "server/store.h"

ABSL_FLAG(double, items, 1e7, "items in each store");
ABSL_FLAG(uint32_t, key_bytes, 24, "length of the byte keys");
ABSL_FLAG(uint32_t, value_bytes, 8, "length of every value");
ABSL_FLAG(uint32_t, call_keys, 20, "keys per get call");
ABSL_FLAG(uint32_t, batch_keys, 16384, "keys per batch (the server's --max_batch_keys)");
ABSL_FLAG(uint32_t, batches, 200, "batches per timed run");
ABSL_FLAG(int, reps, 5, "timed reps (after one warm-up)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the keys asked for");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");
ABSL_FLAG(bool, stages, false,
          "time each batch's device stages with CUDA events (StoreOptions::time_get_stages) and report each kind's "
          "mean per batch, with the host's fill of the responses");

namespace {

using gphkv::server::Call;
using gphkv::server::GetOp;
using gphkv::server::Store;
using Clock = std::chrono::steady_clock;
namespace v1 = gphkv::v1;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string byte_key_of(uint64_t id, uint32_t len) {
  std::string digits = std::to_string(id);
  std::string k = "k:";
  if (len > k.size() + digits.size()) k.append(len - k.size() - digits.size(), '0');
  return k + digits;
}

std::unique_ptr<Store> make_store(uint64_t items) {
  gphkv::server::StoreOptions o;
  o.backend = gphkv::engine::Backend::kCuda;
  o.time_get_stages = absl::GetFlag(FLAGS_stages);
  o.initial_capacity = items;
  o.memory_limit_bytes = uint64_t{96} << 30;
  o.max_value_bytes = 1 << 16;
  auto s = Store::create(o);
  if (!s.ok()) {
    std::fprintf(stderr, "store: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

// Fills the store with ids [0, items) in put runs of 64 Ki keys.
void fill(Store& store, uint64_t items, bool bytes) {
  const uint32_t klen = absl::GetFlag(FLAGS_key_bytes);
  const std::string value(absl::GetFlag(FLAGS_value_bytes), 'v');
  constexpr uint64_t kRun = 65536;
  for (uint64_t first = 0; first < items; first += kRun) {
    const uint64_t n = std::min(kRun, items - first);
    v1::PutResponse resp;
    std::vector<uint64_t> keys(n);
    std::vector<uint32_t> value_lengths(n, static_cast<uint32_t>(value.size()));
    std::string values, key_bytes;
    std::vector<uint32_t> key_lengths;
    for (uint64_t i = 0; i < n; ++i) {
      values += value;
      if (!bytes) {
        keys[i] = first + i;
        continue;
      }
      const std::string k = byte_key_of(first + i, klen);
      key_bytes += k;
      key_lengths.push_back(static_cast<uint32_t>(k.size()));
      keys[i] = gphkv::server::byte_key::table_key(k);
    }
    Call c;
    c.op = gphkv::server::PutOp{keys, value_lengths, values, &resp, {key_bytes, key_lengths}};
    Call* run[] = {&c};
    std::vector<absl::Status> st;
    store.apply_puts(run, &st);
    if (!st[0].ok()) {
      std::fprintf(stderr, "fill: %s\n", st[0].ToString().c_str());
      std::exit(1);
    }
  }
}

// One batch of get calls, packed as the wire would deliver them.
struct Batch {
  std::vector<uint64_t> ids;  // uint64 keys
  std::string key_bytes;      // byte keys, back to back
  std::vector<uint32_t> key_lengths;
  std::vector<Call> calls;
  std::vector<v1::GetResponse> responses;
};

std::vector<Batch> make_batches(uint64_t items, bool bytes, std::mt19937_64& rng) {
  const uint32_t call_keys = absl::GetFlag(FLAGS_call_keys), batch_keys = absl::GetFlag(FLAGS_batch_keys);
  const uint32_t calls = std::max<uint32_t>(1, batch_keys / call_keys);
  std::vector<Batch> out(absl::GetFlag(FLAGS_batches));
  for (Batch& b : out) {
    b.responses.resize(calls);
    b.calls.resize(calls);
    for (uint32_t i = 0; i < calls * call_keys; ++i) {
      const uint64_t id = rng() % items;
      b.ids.push_back(id);
      if (!bytes) continue;
      const std::string k = byte_key_of(id, absl::GetFlag(FLAGS_key_bytes));
      b.key_bytes += k;
      b.key_lengths.push_back(static_cast<uint32_t>(k.size()));
    }
    size_t byte_at = 0;
    for (uint32_t c = 0; c < calls; ++c) {
      GetOp op;
      op.response = &b.responses[c];
      if (!bytes) {
        op.keys = absl::MakeConstSpan(b.ids.data() + c * call_keys, call_keys);
      } else {
        const auto lengths = absl::MakeConstSpan(b.key_lengths.data() + c * call_keys, call_keys);
        size_t len = 0;
        for (uint32_t l : lengths) len += l;
        op.byte_keys = {std::string_view(b.key_bytes).substr(byte_at, len), lengths};
        byte_at += len;
        b.calls[c].table_keys.resize(call_keys);
        op.keys = b.calls[c].table_keys;
      }
      b.calls[c].op = op;
    }
  }
  return out;
}

// How a run's byte keys get their table keys.
enum class Hashing { kNone, kTimed, kBefore, kDevice };

// Runs every batch through the pipeline; returns keys per second. kTimed
// hashes each byte key in the timed loop, on the one thread that submits
// (the whole path on one core); kBefore hashes them before the clock starts,
// as the server's front-end threads can, in parallel, before a call
// reaches the executor. kDevice leaves the hashing to the device: the calls'
// table keys are zeroed first, so a run that read them would miss (and
// stop the bench).
// Where a kind's batches spent their time: the pipeline's stages
// (server/get_stages.h) and the bench's fill of the responses, summed.
struct StageSums {
  std::array<double, gphkv::server::kNumGetStages> seconds{};
  double fill_seconds = 0;
  uint64_t batches = 0;
};

double run(Store& store, std::vector<Batch>& batches, Hashing hashing, StageSums* sums) {
  const bool bytes = hashing != Hashing::kNone;
  auto hash = [](Call& c) {
    c.byte_keys().for_each(
        [&](size_t i, std::string_view k) { c.table_keys[i] = gphkv::server::byte_key::table_key(k); });
  };
  if (bytes) store.set_gpu_hashes_byte_keys(hashing == Hashing::kDevice);
  for (Batch& b : batches) {
    for (Call& c : b.calls) {
      if (hashing == Hashing::kBefore) hash(c);
      if (hashing == Hashing::kDevice) std::fill(c.table_keys.begin(), c.table_keys.end(), 0);
    }
  }
  const Clock::time_point t0 = Clock::now();
  uint64_t keys = 0, found = 0;
  auto finish = [&] {
    gphkv::server::GetStageTimes times;
    auto answers = store.finish_gets(&times);
    const Clock::time_point f0 = Clock::now();
    answers->fill(0, answers->calls().size());
    if (sums != nullptr) {
      for (int i = 0; i < gphkv::server::kNumGetStages; ++i) sums->seconds[i] += times.seconds[i];
      sums->fill_seconds += seconds_since(f0);
      ++sums->batches;
    }
    for (const absl::Status& s : answers->statuses()) {
      if (!s.ok()) {
        std::fprintf(stderr, "get: %s\n", s.ToString().c_str());
        std::exit(1);
      }
    }
    for (Call* c : answers->calls()) {
      for (bool f : c->get().response->found()) found += f;
    }
  };
  std::vector<Call*> run;
  for (Batch& b : batches) {
    run.clear();
    for (Call& c : b.calls) {
      c.get().response->Clear();
      if (hashing == Hashing::kTimed) hash(c);
      run.push_back(&c);
      keys += c.num_keys();
    }
    if (static_cast<int>(store.gets_in_flight()) >= store.pipeline_depth()) finish();
    if (absl::Status s = store.submit_gets(run); !s.ok()) {
      std::fprintf(stderr, "submit: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  while (store.gets_in_flight() > 0) finish();
  const double seconds = seconds_since(t0);
  if (found != keys) {
    std::fprintf(stderr, "%s: %llu of %llu keys found; every key asked for is stored\n", bytes ? "bytes" : "u64",
                 static_cast<unsigned long long>(found), static_cast<unsigned long long>(keys));
    std::exit(1);
  }
  return keys / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (gphkv::engine::cuda_device_count() == 0) {
    std::fprintf(stderr, "byte_key_gets_bench needs a CUDA device\n");
    return 2;
  }
  const auto items = static_cast<uint64_t>(absl::GetFlag(FLAGS_items));
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  auto u64_store = make_store(items);
  auto byte_store = make_store(items);
  Clock::time_point t0 = Clock::now();
  fill(*u64_store, items, false);
  const double fill_u64_s = seconds_since(t0);
  t0 = Clock::now();
  fill(*byte_store, items, true);
  const double fill_bytes_s = seconds_since(t0);
  std::printf("filled: %llu uint64 keys in %.1f s, %llu byte keys in %.1f s; value heaps %.2f / %.2f GB\n",
              static_cast<unsigned long long>(items), fill_u64_s, static_cast<unsigned long long>(items), fill_bytes_s,
              u64_store->value_heap_bytes() / 1e9, byte_store->value_heap_bytes() / 1e9);
  auto u64_batches = make_batches(items, false, rng);
  auto byte_batches = make_batches(items, true, rng);
  // Each rep runs the four kinds in a rotating order.
  constexpr int kKinds = 4;
  const char* names[kKinds] = {"uint64", "bytes_hash_timed", "bytes_hashed_before", "bytes_hashed_on_device"};
  const Hashing hashings[kKinds] = {Hashing::kNone, Hashing::kTimed, Hashing::kBefore, Hashing::kDevice};
  std::vector<double> rates[kKinds];
  StageSums stage_sums[kKinds];
  auto print = [](const char* what, const double* rate) {
    std::printf(
        "%s: uint64 %.1f M keys/s; bytes, hash timed %.1f M (%.2fx); bytes, hashed before %.1f M (%.2fx); bytes, "
        "hashed on the device %.1f M (%.2fx)\n",
        what, rate[0] / 1e6, rate[1] / 1e6, rate[1] / rate[0], rate[2] / 1e6, rate[2] / rate[0], rate[3] / 1e6,
        rate[3] / rate[0]);
  };
  const int reps = absl::GetFlag(FLAGS_reps);
  for (int r = 0; r <= reps; ++r) {
    double rate[kKinds] = {};
    for (int j = 0; j < kKinds; ++j) {
      const int k = (r + j) % kKinds;
      StageSums* sums = r > 0 ? &stage_sums[k] : nullptr;
      rate[k] =
          k == 0 ? run(*u64_store, u64_batches, hashings[k], sums) : run(*byte_store, byte_batches, hashings[k], sums);
    }
    const std::string what = "rep " + std::to_string(r) + (r == 0 ? " (warm-up)" : "");
    print(what.c_str(), rate);
    if (r == 0) continue;
    for (int k = 0; k < kKinds; ++k) rates[k].push_back(rate[k]);
  }
  double median[kKinds];
  for (int k = 0; k < kKinds; ++k) median[k] = gphkv::bench::median(rates[k]);
  print("median", median);
  // Each rep's ratio to the uint64 run of the same rep, then their median:
  // the uint64 rate drifts between reps (65-91 M keys/s in one call), which
  // the ratio of the medians takes in whole.
  std::vector<double> rep_ratios[kKinds];
  for (int k = 1; k < kKinds; ++k) {
    for (size_t r = 0; r < rates[k].size(); ++r) rep_ratios[k].push_back(rates[k][r] / rates[0][r]);
  }
  if (absl::GetFlag(FLAGS_stages)) {
    for (int k = 0; k < kKinds; ++k) {
      const StageSums& ss = stage_sums[k];
      const double per = ss.batches == 0 ? 0 : 1e6 / ss.batches;
      std::printf("%s, mean us per batch:", names[k]);
      for (int i = 0; i < gphkv::server::kNumGetStages; ++i) {
        std::printf(" %s %.1f", gphkv::server::get_stage_name(i), ss.seconds[i] * per);
      }
      std::printf(" fill %.1f\n", ss.fill_seconds * per);
    }
  }
  std::printf("median of each rep's ratio: hash timed %.2fx; hashed before %.2fx; hashed on the device %.2fx\n",
              gphkv::bench::median(rep_ratios[1]), gphkv::bench::median(rep_ratios[2]),
              gphkv::bench::median(rep_ratios[3]));
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    auto rec = gphkv::bench::run_record("byte_key_gets_bench", "cuda", argc, argv);
    rec["items"] = items;
    rec["key_bytes"] = absl::GetFlag(FLAGS_key_bytes);
    rec["value_bytes"] = absl::GetFlag(FLAGS_value_bytes);
    rec["call_keys"] = absl::GetFlag(FLAGS_call_keys);
    rec["batch_keys"] = absl::GetFlag(FLAGS_batch_keys);
    rec["value_heap_bytes"] = {{"uint64", u64_store->value_heap_bytes()}, {"bytes", byte_store->value_heap_bytes()}};
    rec["fill_seconds"] = {{"uint64", fill_u64_s}, {"bytes", fill_bytes_s}};
    for (int k = 0; k < kKinds; ++k) {
      rec["keys_per_s"][names[k]] = rates[k];
      rec["median_keys_per_s"][names[k]] = median[k];
      if (k > 0) {
        rec["over_uint64"][names[k]] = median[k] / median[0];
        rec["over_uint64_each_rep"][names[k]] = rep_ratios[k];
        rec["over_uint64_median_of_reps"][names[k]] = gphkv::bench::median(rep_ratios[k]);
      }
    }
    if (absl::GetFlag(FLAGS_stages)) {
      for (int k = 0; k < kKinds; ++k) {
        const StageSums& ss = stage_sums[k];
        const double per = ss.batches == 0 ? 0 : 1e6 / ss.batches;
        for (int i = 0; i < gphkv::server::kNumGetStages; ++i) {
          rec["stage_us_per_batch"][names[k]][gphkv::server::get_stage_name(i)] = ss.seconds[i] * per;
        }
        rec["stage_us_per_batch"][names[k]]["fill"] = ss.fill_seconds * per;
      }
    }
    if (!gphkv::bench::write_json(path, rec)) return 1;
  }
  return 0;
}
