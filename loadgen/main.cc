// gphkv-loadgen: TaoBench-style social-graph load against gphkv (gRPC) or
// memcached (text protocol). See docs/loadgen.md for the model and flags.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "flags/malloc_tuning.h"
#include "flags/program_flags.h"
#include "loadgen/loadgen.h"
#include "loadgen/workload_preset.h"

ABSL_FLAG(std::string, target, "gphkv", "the store: gphkv (gRPC) or memcached (text protocol)");
ABSL_FLAG(std::string, address, "127.0.0.1:50051",
          "host:port of the store; gphkv: several (a:1,b:2) or dns:///NAME:PORT (every address of NAME) are shards, "
          "each key sent to its own (--api=unary splits a call by shard, --api=coalesced is gphkv::ShardedClient; "
          "--api=pipeline takes one server)");
ABSL_FLAG(bool, tls, false, "gphkv: TLS, trusting gRPC's default CA roots (implied by --tls_ca and --tls_cert)");
ABSL_FLAG(std::string, tls_ca, "", "gphkv: TLS, PEM CA certificates that may sign the servers' certificates");
ABSL_FLAG(std::string, tls_cert, "",
          "gphkv: TLS, PEM client certificate for servers that require one (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "gphkv: TLS, PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "gphkv: TLS, the name the servers' certificates must carry when not the --address host");
ABSL_FLAG(std::string, api, "unary",
          "gphkv: unary (an RPC per call, async completion queues), pipeline (a Pipeline stream per connection, "
          "up to --depth calls in flight on it) or coalesced (every call a request of gphkv::Client, whose "
          "concurrent requests share Batches messages)");
ABSL_FLAG(std::string, clients, "per_thread",
          "gphkv --api=coalesced: per_thread (a gphkv::Client per driver thread with --connections streams) or "
          "shared (one gphkv::Client for every thread, --connections streams in all: an application server's shape)");
ABSL_FLAG(std::string, check_reads, "auto",
          "check every get of a key the thread itself writes against its writes (each thread writes keys of its own; "
          "values carry their write's version): issued (a get sees every write the thread sent before it: "
          "gphkv::Client's promise), completed (every write answered before the get was sent), auto (issued for "
          "--api=coalesced, else completed) or off (e.g. for bench/null_server, which stores nothing); a violation "
          "makes the exit status 4");
ABSL_FLAG(bool, cache_aside, false,
          "a get that misses is followed, on its connection, by a put of the keys it missed with their load-phase "
          "values (memcached: a set), as a cache-aside client fills its cache; fills are counted apart from the "
          "workload's puts, and the hit ratio is the workload gets'; the read check then accepts a fill's value and "
          "allows misses (docs/loadgen.md, section 3.2)");
ABSL_FLAG(std::string, key_format, "u64",
          "gphkv: u64 sends the key space's ids as uint64 keys; bytes sends byte keys named after "
          "them (\"k:\" and the id, zero-padded to --key_length bytes; docs/byte-keys.md); tao names them as "
          "TaoBench's objects and associations (\"o:<id>\", \"a:<id1>:<type>:<id2>\")");
ABSL_FLAG(std::string, key_length, "24",
          "--key_format=bytes: the keys' lengths in bytes, 3 to 250, as a size spec: \"24\", or ranges with weights "
          "such as \"16-40\" or \"16-24:3,25-64:1\" (each id its own length, the same in every phase)");
ABSL_FLAG(int32_t, coalesce_in_flight, 2,
          "gphkv --api=coalesced: messages of a stream awaiting their answer before requests wait and ride "
          "together in the next one (gphkv::CoalesceOptions::max_in_flight)");

// The workload (docs/loadgen.md says where each default comes from). A
// preset (--workload) sets the optional ones; each given on the command line
// overrides the preset's value.
ABSL_FLAG(std::string, workload, "default",
          "preset: default (batched gets, Zipf popularity) or taobench-o (TAOBench's workload O: 97% single-key "
          "reads, 2.8% read transactions, 0.23% writes, weighted-shard popularity); other workload flags override it");
ABSL_FLAG(uint64_t, keys, 1'000'000, "items in the key space (objects + associations), all loaded before the run");
ABSL_FLAG(std::optional<double>, association_fraction, std::nullopt,
          "share of items that are associations (preset: 0.5; TAOBench workload O reads: 479 object vs 475 edge "
          "reads)");
ABSL_FLAG(std::optional<std::string>, popularity, std::nullopt,
          "key popularity: zipf (calibrated, --zipf/--hot_fraction/--hot_share) or shards (TAOBench's: a shard by "
          "--shard_weights, then a key uniformly within it); preset: default zipf, taobench-o shards");
ABSL_FLAG(std::optional<std::string>, shard_weights, std::nullopt,
          "shards: taobench (workload O's 50 primary_shards weights, the presets') or a comma-separated list");
ABSL_FLAG(double, zipf, 0.0, "Zipf exponent of key popularity; 0 calibrates it from --hot_fraction/--hot_share");
ABSL_FLAG(double, hot_fraction, 0.2, "calibration: this fraction of the hottest keys ...");
ABSL_FLAG(double, hot_share, 0.82, "... receives this share of draws (GPH paper, TaoBenchmark: 20% -> 82.14%)");
ABSL_FLAG(std::optional<double>, write_fraction, std::nullopt,
          "share of calls that are writes (preset: default 0.002, TAO's 99.8% reads; taobench-o 20/8649)");
ABSL_FLAG(std::optional<double>, delete_fraction, std::nullopt,
          "share of writes that are deletes (preset: default 0.10, taobench-o 0)");
ABSL_FLAG(std::optional<std::string>, read_batch, std::nullopt,
          "keys per get: a size spec (docs/loadgen.md), e.g. 16 or 1-64:1 (preset: default taobench-read, "
          "taobench-o taobench-o-read)");
ABSL_FLAG(std::optional<std::string>, write_batch, std::nullopt,
          "keys per put/delete: a size spec (preset: default taobench-write, taobench-o taobench-o-write)");
ABSL_FLAG(std::optional<std::string>, object_value, std::nullopt,
          "object value bytes: a size spec or gpareto:SIGMA:K:MIN:MAX (preset: default tao-object, taobench-o 158)");
ABSL_FLAG(std::optional<std::string>, association_value, std::nullopt,
          "association value bytes: a size spec (preset: default tao-association, taobench-o 158)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the request stream: the same seed gives every target the same keys");
ABSL_FLAG(uint64_t, key_pool, uint64_t{1} << 20,
          "keys drawn by popularity come from a ring of this many per thread, drawn before the clock starts "
          "(same distribution, repeating after this many keys; far cheaper than live draws); 0 = draw live");

// Driving.
ABSL_FLAG(std::string, mode, "closed", "closed (connections x depth outstanding) or open (a fixed --rate)");
ABSL_FLAG(uint32_t, threads, 2, "driver threads, each with its own connections");
ABSL_FLAG(uint32_t, connections, 2, "connections per thread");
ABSL_FLAG(uint32_t, depth, 4, "calls outstanding per connection, at most");
ABSL_FLAG(double, rate, 0, "open loop: calls (batches) per second, all threads together");
ABSL_FLAG(std::string, arrivals, "uniform", "open loop: uniform (constant gaps, as wrk2) or poisson");
ABSL_FLAG(double, warmup, 2, "seconds run before measuring starts");
ABSL_FLAG(double, duration, 10, "seconds measured (ignored when --count is set)");
ABSL_FLAG(uint64_t, count, 0, "measure this many calls in all instead of a duration");
ABSL_FLAG(double, drain_timeout, 10, "seconds to wait for calls in flight after the window");
ABSL_FLAG(uint64_t, malloc_trim_threshold_mib, gphkv::kLargeMessageMalloc.trim_threshold_mib,
          "glibc: free memory a malloc arena keeps before giving it back (flags/malloc_tuning.h: large answers "
          "otherwise cost page faults on every message); 0 = glibc's default");
ABSL_FLAG(uint64_t, malloc_mmap_threshold_mib, gphkv::kLargeMessageMalloc.mmap_threshold_mib,
          "glibc: smallest allocation served by its own mmap, at most 32; 0 = glibc's default");
ABSL_FLAG(int32_t, server_pid, 0,
          "the store's process id: its CPU use over the measured window (/proc/PID/stat) is reported beside ours");
ABSL_FLAG(std::string, server_metrics, "",
          "gphkv: the server's metrics endpoint (HOST:PORT, its --metrics_address), scraped as the measured window "
          "opens and closes: the report gives the server's mean time per call in each stage (intake, queue, execute, "
          "answer_wait, respond)");
ABSL_FLAG(double, spin_us, 0,
          "open loop: busy-poll this many microseconds before each due send instead of sleeping (precise "
          "send times; costs CPU)");

// Load phase.
ABSL_FLAG(bool, load, true, "populate every item before the run (false: the store is already loaded)");
ABSL_FLAG(uint32_t, load_batch, 1000, "keys per put in the load phase");
ABSL_FLAG(uint32_t, load_depth, 4, "puts outstanding per connection in the load phase");

// Output.
ABSL_FLAG(std::string, json, "", "write the report (config and results) as JSON here");
ABSL_FLAG(std::string, plot, "", "draw throughput and latency over time here (.svg or .png, needs gnuplot)");
ABSL_FLAG(std::string, trace, "", "write every call's keys, per thread in send order, here");
ABSL_FLAG(std::string, label, "", "free text carried into the report and plot title");
ABSL_FLAG(bool, progress, true, "print a live progress line on stderr");
ABSL_FLAG(double, interval, 1, "seconds per progress line and per point of the time series");
ABSL_FLAG(double, wait_ready, 10, "seconds to wait for the store to answer before giving up");

namespace {

// A flag given on the command line overrides the preset's value.
template <typename T>
void OverrideIfGiven(const absl::Flag<std::optional<T>>& flag, T* field) {
  if (std::optional<T> given = absl::GetFlag(flag)) *field = *given;
}

}  // namespace

int main(int argc, char** argv) {
  gphkv::ParseProgramFlags(argc, argv,
                           {"gphkv-loadgen",
                            "TaoBench-style load for gphkv and memcached; see docs/loadgen.md.\n"
                            "Usage: gphkv-loadgen [--flags]",
                            {"loadgen/main.cc"}});
  const gphkv::MallocTuning malloc_tuning{absl::GetFlag(FLAGS_malloc_trim_threshold_mib),
                                          absl::GetFlag(FLAGS_malloc_mmap_threshold_mib)};
  const absl::Status malloc_tuned = gphkv::tune_malloc(malloc_tuning);
  if (absl::IsInvalidArgument(malloc_tuned)) {
    std::fprintf(stderr, "gphkv-loadgen: --malloc_*: %s\n", std::string(malloc_tuned.message()).c_str());
    return 2;
  }
  using gphkv::loadgen::DriveOptions;
  gphkv::loadgen::LoadgenConfig c;
  c.target = absl::GetFlag(FLAGS_target);
  c.address = absl::GetFlag(FLAGS_address);
  c.api = absl::GetFlag(FLAGS_api);
  c.coalesce_in_flight = absl::GetFlag(FLAGS_coalesce_in_flight);
  c.clients = absl::GetFlag(FLAGS_clients);
  c.key_format = absl::GetFlag(FLAGS_key_format);
  c.key_length = absl::GetFlag(FLAGS_key_length);
  c.check_reads = absl::GetFlag(FLAGS_check_reads);
  c.cache_aside = absl::GetFlag(FLAGS_cache_aside);
  c.malloc = gphkv::describe(malloc_tuning, malloc_tuned);
  if (c.coalesce_in_flight < 1) {
    std::fprintf(stderr, "gphkv-loadgen: --coalesce_in_flight must be at least 1\n");
    return 2;
  }
  c.tls = {absl::GetFlag(FLAGS_tls), absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
           absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_server_name)};
  auto preset = gphkv::loadgen::WorkloadPreset(absl::GetFlag(FLAGS_workload));
  if (!preset.ok()) {
    std::fprintf(stderr, "gphkv-loadgen: %s\n", std::string(preset.status().message()).c_str());
    return 2;
  }
  auto& w = c.workload;
  w = *preset;
  w.keys = absl::GetFlag(FLAGS_keys);
  OverrideIfGiven(FLAGS_association_fraction, &w.association_fraction);
  OverrideIfGiven(FLAGS_popularity, &w.popularity);
  OverrideIfGiven(FLAGS_shard_weights, &w.shard_weights);
  w.zipf_exponent = absl::GetFlag(FLAGS_zipf);
  w.hot_fraction = absl::GetFlag(FLAGS_hot_fraction);
  w.hot_share = absl::GetFlag(FLAGS_hot_share);
  OverrideIfGiven(FLAGS_write_fraction, &w.write_fraction);
  OverrideIfGiven(FLAGS_delete_fraction, &w.delete_fraction);
  OverrideIfGiven(FLAGS_read_batch, &w.read_batch);
  OverrideIfGiven(FLAGS_write_batch, &w.write_batch);
  OverrideIfGiven(FLAGS_object_value, &w.object_value);
  OverrideIfGiven(FLAGS_association_value, &w.association_value);
  w.seed = absl::GetFlag(FLAGS_seed);
  w.key_pool = absl::GetFlag(FLAGS_key_pool);
  auto& d = c.drive;
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "closed" && mode != "open") {
    std::fprintf(stderr, "gphkv-loadgen: --mode must be closed or open, not '%s'\n", mode.c_str());
    return 2;
  }
  d.mode = mode == "open" ? DriveOptions::Mode::kOpen : DriveOptions::Mode::kClosed;
  d.threads = absl::GetFlag(FLAGS_threads);
  d.connections = absl::GetFlag(FLAGS_connections);
  d.depth = absl::GetFlag(FLAGS_depth);
  d.rate = absl::GetFlag(FLAGS_rate);
  const std::string arrivals = absl::GetFlag(FLAGS_arrivals);
  if (arrivals != "uniform" && arrivals != "poisson") {
    std::fprintf(stderr, "gphkv-loadgen: --arrivals must be uniform or poisson\n");
    return 2;
  }
  d.poisson = arrivals == "poisson";
  d.warmup_s = absl::GetFlag(FLAGS_warmup);
  d.duration_s = absl::GetFlag(FLAGS_duration);
  d.count = absl::GetFlag(FLAGS_count);
  d.drain_timeout_s = absl::GetFlag(FLAGS_drain_timeout);
  d.spin_us = absl::GetFlag(FLAGS_spin_us);
  d.server_pid = absl::GetFlag(FLAGS_server_pid);
  d.server_metrics = absl::GetFlag(FLAGS_server_metrics);
  d.seed = w.seed;
  c.load = absl::GetFlag(FLAGS_load);
  c.load_batch_keys = absl::GetFlag(FLAGS_load_batch);
  c.load_depth = absl::GetFlag(FLAGS_load_depth);
  c.json_path = absl::GetFlag(FLAGS_json);
  c.plot_path = absl::GetFlag(FLAGS_plot);
  c.trace_path = absl::GetFlag(FLAGS_trace);
  c.label = absl::GetFlag(FLAGS_label);
  c.progress = absl::GetFlag(FLAGS_progress);
  c.interval_s = absl::GetFlag(FLAGS_interval);
  c.wait_ready_s = absl::GetFlag(FLAGS_wait_ready);

  auto report = gphkv::loadgen::RunLoadgen(c);
  if (!report.ok()) {
    std::fprintf(stderr, "gphkv-loadgen: %s\n", std::string(report.status().ToString()).c_str());
    return 1;
  }
  std::printf("%s", gphkv::loadgen::ReportToTable(*report).c_str());
  if (auto st = gphkv::loadgen::WriteOutputs(*report); !st.ok()) {
    std::fprintf(stderr, "gphkv-loadgen: %s\n", std::string(st.ToString()).c_str());
    return 1;
  }
  // Errors during the run are results, not failures of the tool; but a run in
  // which nothing succeeded should not look like a pass to a script, nor one
  // in which a get missed its own thread's write.
  const auto all = report->run.Overall();
  if (!(all.calls > 0 && all.errors < all.calls)) return 3;
  if (report->read_check.violations() > 0) {
    std::fprintf(stderr, "gphkv-loadgen: %llu keys read did not show their own thread's writes (--check_reads)\n",
                 static_cast<unsigned long long>(report->read_check.violations()));
    return 4;
  }
  return 0;
}
