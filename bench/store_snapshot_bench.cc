// The store's side of the data directory, at --keys pairs of --value_bytes
// (docs/durability.md, "Snapshots while serving" and "Recovery"):
//
//  - list: StoreExport::start, the key list a snapshot starts from: the one
//    stall of the executor per snapshot (a pass over the whole table);
//  - chunk: one chunk of the export (a find and a gather of
//    StoreExport::kChunkKeys keys), what a batch pays while a snapshot runs;
//  - snapshot: the whole export written as a snapshot, start to durable;
//  - recover: a fresh store (the server's defaults: a first table for 2^20
//    keys that grows) recovered from that directory, the path a restart takes.
//
// --keep leaves the directory for gphkv-server to start on, which times the
// whole restart, process to SERVING (scripts/durability-bench.sh).
//
// --backend=cuda runs the same on the device (table and value heap there).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "bench/bench_report.h"
#include "server/snapshot_export.h"
#include "server/store.h"
#include "server/store_durability.h"
#include "server/store_recovery.h"

ABSL_FLAG(std::string, dir, "/tmp", "where the data directory is made (the disk under test)");
ABSL_FLAG(std::string, backend, "cpu", "cpu or cuda");
ABSL_FLAG(uint64_t, keys, 1'000'000, "pairs in the store");
ABSL_FLAG(uint32_t, value_bytes, 100, "bytes per value");
ABSL_FLAG(std::string, json, "", "write the results as JSON to this file");
ABSL_FLAG(bool, recover, true, "time the recovery into a fresh store (in this process)");
ABSL_FLAG(bool, keep, false,
          "leave the data directory DIR/store_snapshot_bench (one snapshot, an empty log) for a server restart to "
          "time: scripts/durability-bench.sh");

namespace {

namespace server = gphkv::server;
namespace durability = gphkv::server::durability;
using Clock = std::chrono::steady_clock;

void check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "store_snapshot_bench: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::unique_ptr<server::Store> make_store(uint64_t initial_capacity) {
  server::StoreOptions o;
  o.backend = absl::GetFlag(FLAGS_backend) == "cuda" ? gphkv::engine::Backend::kCuda : gphkv::engine::Backend::kCpu;
  o.initial_capacity = initial_capacity;
  const uint64_t keys = absl::GetFlag(FLAGS_keys);
  // Room for the table at a rebuild's peak (two tables) and the values.
  o.memory_limit_bytes =
      std::max<uint64_t>(uint64_t{1} << 30, keys * (4 * 16 + 2 * (absl::GetFlag(FLAGS_value_bytes) + 16)));
  auto s = server::Store::create(o);
  check(s.status(), "store");
  return std::move(*s);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("store_snapshot_bench: a snapshot's stall and chunks, and a restart's recovery");
  absl::ParseCommandLine(argc, argv);
  const uint64_t n = absl::GetFlag(FLAGS_keys);
  const uint32_t vb = absl::GetFlag(FLAGS_value_bytes);
  const std::string path = absl::GetFlag(FLAGS_dir) + "/store_snapshot_bench";
  std::filesystem::remove_all(path);
  auto record = gphkv::bench::run_record(
      "store_snapshot_bench",
      absl::GetFlag(FLAGS_backend) == "cuda" ? gphkv::engine::cuda_device_name(0) : gphkv::bench::cpu_model(), argc,
      argv);

  // A store of n pairs, sized for them (no growth while filling).
  auto store = make_store(n);
  std::mt19937_64 rng(1);
  std::string value(vb, 'v');
  {
    std::vector<uint64_t> keys;
    std::vector<std::string_view> values;
    const auto t0 = Clock::now();
    for (uint64_t done = 0; done < n;) {
      keys.clear();
      values.clear();
      for (; keys.size() < 65536 && done < n; ++done) {
        keys.push_back(rng());
        values.push_back(value);
      }
      check(store->put_pairs(keys, values), "fill");
    }
    check(store->finish_rebuild(), "fill");
    std::printf("filled %lu keys x %u B in %.2f s\n", static_cast<unsigned long>(store->keys()), vb, seconds_since(t0));
  }

  // The key list three ways, interleaved, median of 5 each: the whole slot
  // array exported as pairs and their keys copied out (the list before
  // Table::export_keys), the keys alone into a new vector (a server's first
  // snapshot), and into the vector of the list before (every later one).
  std::vector<double> via_pairs_ms, fresh_ms, reused_ms;
  std::vector<uint64_t> reused;
  const gphkv::engine::Table& table = store->table().serving_table();
  for (int rep = 0; rep < 5; ++rep) {
    auto t = Clock::now();
    {
      auto pairs = table.export_pairs();
      check(pairs.status(), "export_pairs");
      std::vector<uint64_t> keys;
      keys.reserve(pairs->size());
      for (const gphkv::engine::KeyValue& kv : *pairs) keys.push_back(kv.key);
    }
    via_pairs_ms.push_back(seconds_since(t) * 1e3);
    t = Clock::now();
    {
      std::vector<uint64_t> fresh;
      check(table.export_keys(&fresh), "export_keys");
    }
    fresh_ms.push_back(seconds_since(t) * 1e3);
    t = Clock::now();
    check(table.export_keys(&reused), "export_keys");
    reused_ms.push_back(seconds_since(t) * 1e3);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "key list, median of 5: via export_pairs %.2f ms, export_keys into a new vector %.2f ms, into the "
      "last list's vector %.2f ms (%.1fx faster than via pairs)\n",
      median(via_pairs_ms), median(fresh_ms), median(reused_ms), median(via_pairs_ms) / median(reused_ms));
  record["list_via_pairs_ms"] = median(via_pairs_ms);
  record["list_keys_fresh_ms"] = median(fresh_ms);
  record["list_keys_reused_ms"] = median(reused_ms);

  // The list: the executor's one stall per snapshot.
  auto t0 = Clock::now();
  auto listed = server::StoreExport::start(*store);
  check(listed.status(), "list");
  const double list_seconds = seconds_since(t0);
  // The chunks: what a batch pays while a snapshot is exported.
  std::vector<double> chunk_ms;
  durability::PairChunk chunk, byte_pairs;
  uint64_t bytes = 0;
  while (!listed->done()) {
    t0 = Clock::now();
    check(listed->next_chunk(*store, &chunk, &byte_pairs), "chunk");
    chunk_ms.push_back(seconds_since(t0) * 1e3);
    bytes += chunk.bytes.size();
  }
  std::sort(chunk_ms.begin(), chunk_ms.end());
  const double chunk_p50 = chunk_ms[chunk_ms.size() / 2], chunk_max = chunk_ms.back();
  std::printf(
      "list: %.3f s for %lu keys (the stall); %zu chunks of %zu keys: p50 %.3f ms, max %.3f ms, %lu value bytes\n",
      list_seconds, static_cast<unsigned long>(listed->keys()), chunk_ms.size(), server::StoreExport::kChunkKeys,
      chunk_p50, chunk_max, static_cast<unsigned long>(bytes));

  // The snapshot, start to durable, on this thread: the export and the writing
  // take turns here, where the server overlaps them (the writer's thread).
  server::DataDirConfig config;
  config.dir = path;
  config.options.log.fsync = durability::FsyncPolicy::kAlways;
  double snapshot_seconds = 0;
  uint64_t snapshot_bytes = 0;
  {
    server::StoreRecovery nothing(*store);  // the directory is new: recovery adds nothing
    auto dir = durability::DataDir::open(path, config.options, nothing);
    check(dir.status(), "open");
    // One batch, so the snapshot covers batch 1.
    durability::WriteBatch batch;
    const uint64_t key = 42;
    const uint32_t length = vb;
    batch.add_puts({&key, 1}, {&length, 1}, value);
    check((*dir)->append(batch).status(), "append");
    t0 = Clock::now();
    auto keys = server::StoreExport::start(*store);
    check(keys.status(), "list");
    server::StorePairSource source(*store, std::move(*keys));
    check((*dir)->snapshot(source), "snapshot");
    snapshot_seconds = seconds_since(t0);
    snapshot_bytes = (*dir)->state().snapshot_bytes;
  }
  std::printf("snapshot: %.2f s, %lu bytes (%.0f MB/s)\n", snapshot_seconds, static_cast<unsigned long>(snapshot_bytes),
              static_cast<double>(snapshot_bytes) / snapshot_seconds / 1e6);

  record["keys"] = n;
  record["value_bytes"] = vb;
  record["list_seconds"] = list_seconds;
  record["chunk_keys"] = server::StoreExport::kChunkKeys;
  record["chunk_ms_p50"] = chunk_p50;
  record["chunk_ms_max"] = chunk_max;
  record["snapshot_seconds"] = snapshot_seconds;
  record["snapshot_bytes"] = snapshot_bytes;

  // A restart: a fresh store as the server makes it, recovered from the directory.
  store.reset();
  if (absl::GetFlag(FLAGS_recover)) {
    auto fresh = make_store(1 << 20);
    t0 = Clock::now();
    auto recovered = server::StoreDurability::open(config, *fresh, nullptr, nullptr);
    check(recovered.status(), "recover");
    const double recover_seconds = seconds_since(t0);
    std::printf("recover: %.2f s for %lu keys (%.0f keys/s), %lu rebuilds on the way\n", recover_seconds,
                static_cast<unsigned long>(fresh->keys()), static_cast<double>(fresh->keys()) / recover_seconds,
                static_cast<unsigned long>(fresh->counters().rebuilds));
    record["recover_seconds"] = recover_seconds;
    record["recovered_keys"] = fresh->keys();
  }
  if (absl::GetFlag(FLAGS_keep)) {
    std::printf("kept %s\n", path.c_str());
  } else {
    std::filesystem::remove_all(path);
  }
  const std::string json = absl::GetFlag(FLAGS_json);
  return json.empty() || gphkv::bench::write_json(json, record) ? 0 : 1;
}
