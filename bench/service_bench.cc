// service_bench: gphkv-server throughput and latency over loopback gRPC.
//
// Starts a server in this process (CPU or CUDA backend), preloads keys with
// fixed-size values, then runs one workload per configuration:
//   batched_get  C client threads, each a closed loop of Get(1000 random keys)
//   single_get   S concurrent single-key Get calls in flight (async, closed
//                loop), with the server's cross-call batching on or off
//   delay_sweep  single_get at several --max_delay_us values (how the
//                default was chosen)
//   engine       no gRPC: the table's synchronous find alone, then the store's
//                whole get path (find + response building + value gather) per
//                --variants entry, on runs of 3 x --batch keys: the
//                executor's share of a batched get
// --variants runs each workload per value path on CUDA: device0 (device value
// heap, synchronous gets), deviceN (N get runs pipelined); the host heap's
// path under a CUDA table is gone, its figures stay in docs/performance.md.
// Pipelined runs also report their per-stage means (gphkv_get_stage_seconds).
// Prints a table and writes JSON (--json).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <grpc/grpc.h>
#include <sys/resource.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_report.h"
#include "gphkv/client/client.h"
#include "server/get_stages.h"
#include "server/server.h"
#include "server/store.h"
#include "server/wire_calls.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, workloads, "batched_get,single_get", "comma-separated: batched_get, single_get, delay_sweep");
ABSL_FLAG(std::string, backend, "cpu", "auto, cpu or cuda");
ABSL_FLAG(uint64_t, keys, 1000000, "keys preloaded");
ABSL_FLAG(uint32_t, value_bytes, 64, "bytes per value");
ABSL_FLAG(uint32_t, batch, 1000, "keys per Get in batched_get");
ABSL_FLAG(std::string, clients, "4", "client threads in batched_get; a comma-separated list runs each");
ABSL_FLAG(int, streams, 256, "concurrent single-key calls in single_get");
ABSL_FLAG(double, seconds, 5, "measured seconds per workload");
ABSL_FLAG(uint32_t, max_delay_us, 0, "server --max_delay_us for batched runs (0: the cpu default)");
ABSL_FLAG(uint64_t, max_batch_keys, 16384, "server --max_batch_keys for batched runs");
ABSL_FLAG(uint32_t, completion_threads, 1, "server --completion_threads");
ABSL_FLAG(std::string, json, "", "write results as JSON to this file");
ABSL_FLAG(std::string, variants, "default",
          "comma-separated value paths to run each workload with (CUDA): default (the server's), device0 (device "
          "heap, synchronous gets), deviceN (device heap, N get batches pipelined)");
ABSL_FLAG(bool, time_stages, true, "time the pipelined CUDA get stages with CUDA events (gphkv_get_stage_seconds)");

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  std::string name;
  std::string config;
  double seconds = 0;
  uint64_t calls = 0;
  uint64_t keys = 0;
  uint64_t errors = 0;
  double p50_us = 0, p99_us = 0;
  uint64_t server_batches = 0;
  uint64_t server_batched_keys = 0;
  // Where the time goes, from the server's own histograms (means per call or
  // per launch over the run): time in the batcher queue, engine time per
  // launch (table + value heap), end-to-end time inside the server, and the
  // share of wall time the executor spent in the engine.
  double queue_wait_us = 0, engine_us_per_launch = 0, server_us = 0, engine_busy = 0;
  // Pipelined CUDA gets: mean seconds per batch of each stage (server/get_stages.h), 0 when not pipelined.
  std::array<double, gphkv::server::kNumGetStages> stage_us{};
  uint64_t stage_batches = 0;
  // Cores the whole process (server, gRPC and clients) kept busy: CPU seconds over wall seconds.
  double process_cores = 0;
};

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The value path a variant names (see --variants).
struct Variant {
  std::string name = "default";
  int depth = 2;
};
Variant current_variant;

Variant parse_variant(const std::string& v) {
  Variant x;
  x.name = v;
  if (v == "default") return x;
  if (v.rfind("device", 0) == 0 && v.size() > 6) {
    x.depth = std::atoi(v.c_str() + 6);
    return x;
  }
  std::fprintf(stderr, "unknown variant '%s'\n", v.c_str());
  std::exit(2);
}

// Sum and count of one histogram series in a rendered /metrics page.
std::pair<double, double> histogram_totals(const std::string& page, const std::string& series) {
  auto value = [&](const std::string& suffix) {
    const std::string head = series.substr(0, series.find('{')) + suffix +
                             (series.find('{') == std::string::npos ? "" : series.substr(series.find('{'))) + " ";
    const size_t at = page.find("\n" + head);
    return at == std::string::npos ? 0.0 : std::strtod(page.c_str() + at + 1 + head.size(), nullptr);
  };
  return {value("_sum"), value("_count")};
}

struct Totals {
  std::pair<double, double> queue, engine, server;
  std::array<std::pair<double, double>, gphkv::server::kNumGetStages> stages;
};

Totals totals(const gphkv::server::Server& s) {
  const std::string page = s.render_metrics();
  Totals t{histogram_totals(page, "gphkv_queue_wait_seconds"),
           histogram_totals(page, "gphkv_device_seconds{op=\"get\"}"),
           histogram_totals(page, "gphkv_request_duration_seconds{op=\"get\"}"),
           {}};
  for (int st = 0; st < gphkv::server::kNumGetStages; ++st) {
    t.stages[st] = histogram_totals(
        page, absl::StrCat("gphkv_get_stage_seconds{stage=\"", gphkv::server::get_stage_name(st), "\"}"));
  }
  return t;
}

void add_breakdown(const Totals& a, const Totals& b, double wall, Result* r) {
  auto mean_us = [](std::pair<double, double> x, std::pair<double, double> y) {
    const double n = y.second - x.second;
    return n > 0 ? (y.first - x.first) / n * 1e6 : 0.0;
  };
  r->queue_wait_us = mean_us(a.queue, b.queue);
  r->engine_us_per_launch = mean_us(a.engine, b.engine);
  r->server_us = mean_us(a.server, b.server);
  r->engine_busy = (b.engine.first - a.engine.first) / wall;
  for (int st = 0; st < gphkv::server::kNumGetStages; ++st) r->stage_us[st] = mean_us(a.stages[st], b.stages[st]);
  r->stage_batches =
      static_cast<uint64_t>(b.stages[gphkv::server::kStageWait].second - a.stages[gphkv::server::kStageWait].second);
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

std::unique_ptr<gphkv::server::Server> start(uint64_t max_batch_keys, uint32_t max_delay_us) {
  gphkv::server::ServerOptions o;
  o.listen_address = "127.0.0.1:0";
  o.metrics_address = "";
  const std::string b = absl::GetFlag(FLAGS_backend);
  o.backend = b == "cuda"  ? gphkv::server::BackendChoice::kCuda
              : b == "cpu" ? gphkv::server::BackendChoice::kCpu
                           : gphkv::server::BackendChoice::kAuto;
  o.store.initial_capacity = absl::GetFlag(FLAGS_keys) + 1024;
  o.store.memory_limit_bytes = uint64_t{16} << 30;
  o.batcher.max_batch_keys = max_batch_keys;
  o.batcher.max_delay = std::chrono::microseconds(max_delay_us);
  o.batcher.max_queue_keys = uint64_t{1} << 24;
  o.completion_threads = absl::GetFlag(FLAGS_completion_threads);
  o.store.gpu_pipeline_depth = current_variant.depth;
  o.store.time_get_stages = absl::GetFlag(FLAGS_time_stages);
  auto s = gphkv::server::Server::start(o);
  if (!s.ok()) {
    std::fprintf(stderr, "server: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

void preload(gphkv::Client& c) {
  const uint64_t n = absl::GetFlag(FLAGS_keys);
  const std::string value(absl::GetFlag(FLAGS_value_bytes), 'v');
  std::vector<uint64_t> keys;
  std::vector<std::string_view> values;
  for (uint64_t k = 0; k < n; k += 10000) {
    keys.clear();
    values.clear();
    for (uint64_t i = k; i < std::min(n, k + 10000); ++i) {
      keys.push_back(i);
      values.push_back(value);
    }
    auto r = c.Put(keys, values);
    if (!r.ok()) {
      std::fprintf(stderr, "preload: %s\n", r.status().ToString().c_str());
      std::exit(1);
    }
  }
}

void add_server_stats(gphkv::Client& c, const gphkv::v1::StatsResponse& before, Result* r) {
  auto after = c.Stats();
  if (!after.ok()) return;
  r->server_batches = after->batches() - before.batches();
  r->server_batched_keys = after->batched_keys() - before.batched_keys();
}

Result batched_get(gphkv::server::Server& server, int clients) {
  const uint32_t batch = absl::GetFlag(FLAGS_batch);
  const uint64_t n = absl::GetFlag(FLAGS_keys);
  auto ctl = gphkv::Client::Connect(absl::StrCat("127.0.0.1:", server.port()));
  const auto before = *ctl->Stats();
  const Totals t_before = totals(server);
  std::vector<std::vector<double>> lat(clients);
  std::atomic<uint64_t> calls{0}, errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  const double cpu0 = process_cpu_seconds();
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      // One connection per client thread, as separate processes would have.
      gphkv::ClientOptions o;
      o.own_connection = true;
      auto c = gphkv::Client::Connect(absl::StrCat("127.0.0.1:", server.port()), o);
      std::mt19937_64 rng(t);
      std::vector<uint64_t> keys(batch);
      while (!stop.load(std::memory_order_relaxed)) {
        for (auto& k : keys) k = rng() % n;
        const auto s = Clock::now();
        auto r = c->Get(keys);
        lat[t].push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
        if (!r.ok()) ++errors;
        ++calls;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds)));
  stop = true;
  for (auto& th : threads) th.join();
  Result r;
  r.name = "batched_get";
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.process_cores = (process_cpu_seconds() - cpu0) / r.seconds;
  r.config =
      absl::StrFormat("variant=%s clients=%d batch=%d value_bytes=%d completion_threads=%d", current_variant.name,
                      clients, batch, absl::GetFlag(FLAGS_value_bytes), absl::GetFlag(FLAGS_completion_threads));
  r.calls = calls;
  r.keys = calls * batch;
  r.errors = errors;
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  r.p50_us = percentile(all, 0.50);
  r.p99_us = percentile(all, 0.99);
  add_server_stats(*ctl, before, &r);
  add_breakdown(t_before, totals(server), r.seconds, &r);
  return r;
}

// S independent closed loops of async single-key gets over a few channels.
Result single_get(gphkv::server::Server& server, const std::string& label) {
  const int streams = absl::GetFlag(FLAGS_streams);
  const uint64_t n = absl::GetFlag(FLAGS_keys);
  constexpr int kChannels = 4;
  std::vector<std::unique_ptr<gphkv::Client>> clients;
  gphkv::ClientOptions own;
  own.own_connection = true;  // kChannels connections, not one
  for (int i = 0; i < kChannels; ++i) {
    clients.push_back(gphkv::Client::Connect(absl::StrCat("127.0.0.1:", server.port()), own));
  }
  const auto before = *clients[0]->Stats();
  const Totals t_before = totals(server);
  struct Loop {
    std::vector<double> lat;
    std::mt19937_64 rng;
    uint64_t key = 0;
    Clock::time_point sent;
  };
  std::vector<Loop> loops(streams);
  std::atomic<uint64_t> calls{0}, errors{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  int running = streams;
  std::function<void(int)> issue = [&](int i) {
    Loop& l = loops[i];
    if (stop.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> g(mu);
      if (--running == 0) cv.notify_all();
      return;
    }
    l.key = l.rng() % n;
    l.sent = Clock::now();
    clients[i % kChannels]->GetAsync({&l.key, 1}, false, [&, i](absl::StatusOr<gphkv::GetResult> r) {
      Loop& me = loops[i];
      me.lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - me.sent).count());
      if (!r.ok()) ++errors;
      ++calls;
      issue(i);
    });
  };
  const auto t0 = Clock::now();
  const double cpu0 = process_cpu_seconds();
  for (int i = 0; i < streams; ++i) {
    loops[i].rng.seed(i);
    issue(i);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds)));
  stop = true;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu_secs = process_cpu_seconds() - cpu0;
  {
    std::unique_lock<std::mutex> g(mu);
    cv.wait_for(g, std::chrono::seconds(30), [&] { return running == 0; });
  }
  Result r;
  r.name = "single_get";
  r.process_cores = cpu_secs / secs;
  r.config = absl::StrFormat("variant=%s streams=%d %s", current_variant.name, streams, label);
  r.seconds = secs;
  r.calls = calls;
  r.keys = calls;
  r.errors = errors;
  std::vector<double> all;
  for (auto& l : loops) all.insert(all.end(), l.lat.begin(), l.lat.end());
  r.p50_us = percentile(all, 0.50);
  r.p99_us = percentile(all, 0.99);
  add_server_stats(*clients[0], before, &r);
  add_breakdown(t_before, totals(server), r.seconds, &r);
  return r;
}

// The executor's work for a batched get, without gRPC or queues: on a store
// of --keys keys, runs of 3 calls x --batch keys, timed per run (one engine
// launch) for the table's synchronous find alone (copy in, launch, copy out,
// wait), and the store's whole get path (find + responses + value gather)
// for each value path: host (values in host memory), device0 (device heap,
// synchronous), deviceN (N runs pipelined on N streams).
gphkv::engine::Backend bench_backend() {
  return absl::GetFlag(FLAGS_backend) == "cuda" ? gphkv::engine::Backend::kCuda : gphkv::engine::Backend::kCpu;
}

std::string engine_breakdown() {
  const uint64_t n = absl::GetFlag(FLAGS_keys);
  const uint32_t batch = absl::GetFlag(FLAGS_batch);
  const std::string value(absl::GetFlag(FLAGS_value_bytes), 'v');
  constexpr int kCalls = 3, kRounds = 300;
  std::mt19937_64 rng(1);
  std::vector<gphkv::v1::GetRequest> reqs(kCalls);
  for (auto& r : reqs) {
    for (uint32_t i = 0; i < batch; ++i) r.add_keys(rng() % n);
  }
  std::vector<uint64_t> keys, vals(kCalls * batch);
  std::vector<uint8_t> found(kCalls * batch);
  for (auto& r : reqs) keys.insert(keys.end(), r.keys().begin(), r.keys().end());
  std::string json = "{";
  // find alone, on a table of the same keys
  {
    gphkv::engine::TableOptions t;
    t.num_buckets = gphkv::engine::buckets_for_capacity(n + 1024, 0.8, t.slots_per_bucket);
    auto table = std::move(*gphkv::engine::make_table(bench_backend(), t));
    std::vector<uint64_t> all(n);
    for (uint64_t i = 0; i < n; ++i) all[i] = i;
    std::vector<gphkv::engine::UpsertOutcome> out(n);
    (void)table->insert_or_assign(all, all, absl::MakeSpan(out));
    for (int r = 0; r < 20; ++r) (void)table->find(keys, absl::MakeSpan(vals), absl::MakeSpan(found));
    const auto t0 = Clock::now();
    for (int r = 0; r < kRounds; ++r) (void)table->find(keys, absl::MakeSpan(vals), absl::MakeSpan(found));
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kRounds;
    std::printf("engine       %s table find alone (synchronous), %zu keys: %.1f us per launch\n",
                absl::GetFlag(FLAGS_backend).c_str(), keys.size(), us);
    absl::StrAppendFormat(&json, "\"table_find_sync_us\":%.2f", us);
  }
  const std::vector<std::string> variants = absl::StrSplit(absl::GetFlag(FLAGS_variants), ',');
  for (const std::string& v : variants) {
    const Variant var = parse_variant(v);
    gphkv::server::StoreOptions so;
    so.backend = bench_backend();
    so.initial_capacity = n + 1024;
    so.memory_limit_bytes = uint64_t{16} << 30;
    so.gpu_pipeline_depth = var.depth;
    so.time_get_stages = absl::GetFlag(FLAGS_time_stages);
    auto created = gphkv::server::Store::create(so);
    if (!created.ok()) {
      std::fprintf(stderr, "store: %s\n", created.status().ToString().c_str());
      std::exit(1);
    }
    auto store = std::move(*created);
    std::vector<absl::Status> st;
    for (uint64_t k = 0; k < n; k += 10000) {
      gphkv::v1::PutRequest req;
      gphkv::v1::PutResponse resp;
      for (uint64_t i = k; i < std::min(n, k + 10000); ++i) {
        req.add_keys(i);
        req.add_value_lengths(static_cast<uint32_t>(value.size()));
        req.mutable_values()->append(value);
      }
      gphkv::server::Call c;
      c.op = gphkv::server::put_op(req, &resp).value();
      gphkv::server::Call* p = &c;
      store->apply_puts({&p, 1}, &st);
    }
    (void)store->finish_rebuild();
    // Each round's responses live until its run is finished.
    const int depth = store->can_pipeline_gets() ? store->pipeline_depth() : 0;
    std::vector<std::vector<gphkv::v1::GetResponse>> resp(std::max(depth, 1),
                                                          std::vector<gphkv::v1::GetResponse>(kCalls));
    std::vector<std::vector<gphkv::server::Call>> calls(std::max(depth, 1), std::vector<gphkv::server::Call>(kCalls));
    std::vector<std::vector<gphkv::server::Call*>> ptrs(std::max(depth, 1));
    for (size_t d = 0; d < calls.size(); ++d) {
      for (int c = 0; c < kCalls; ++c) {
        calls[d][c].op = gphkv::server::get_op(reqs[c], &resp[d][c]).value();
        ptrs[d].push_back(&calls[d][c]);
      }
    }
    std::array<double, gphkv::server::kNumGetStages> stage_sum{};
    int timed = 0;
    auto run = [&](int rounds, bool record) {
      size_t in_flight = 0;
      for (int r = 0; r < rounds; ++r) {
        if (depth == 0) {
          for (auto& x : resp[0]) x.Clear();
          store->apply_gets(ptrs[0], &st);
          continue;
        }
        const size_t slot = static_cast<size_t>(r) % depth;
        if (in_flight == static_cast<size_t>(depth)) {
          gphkv::server::GetStageTimes times;
          auto answers = store->finish_gets(&times);
          answers->fill(0, answers->calls().size());
          st = answers->statuses();
          --in_flight;
          if (record) {
            for (int s = 0; s < gphkv::server::kNumGetStages; ++s) stage_sum[s] += times.seconds[s];
            ++timed;
          }
        }
        for (auto& x : resp[slot]) x.Clear();
        if (auto s = store->submit_gets(ptrs[slot]); !s.ok()) {
          std::fprintf(stderr, "submit: %s\n", s.ToString().c_str());
          std::exit(1);
        }
        ++in_flight;
      }
      while (in_flight > 0) {
        gphkv::server::GetStageTimes times;
        auto answers = store->finish_gets(&times);
        answers->fill(0, answers->calls().size());
        st = answers->statuses();
        --in_flight;
      }
    };
    run(20, false);
    const auto t0 = Clock::now();
    run(kRounds, true);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kRounds;
    std::printf(
        "engine       variant=%s store get path, %d calls x %u keys, %u-byte values: %.1f us per launch = "
        "%.1f M keys/s on the executor",
        v.c_str(), kCalls, batch, absl::GetFlag(FLAGS_value_bytes), us, keys.size() / us);
    absl::StrAppendFormat(&json, ",\"%s\":{\"us_per_launch\":%.2f,\"keys_per_launch\":%d,\"M_keys_per_s\":%.2f", v, us,
                          static_cast<int>(keys.size()), keys.size() / us);
    if (timed > 0) {
      std::printf("; per run, us:");
      json += ",\"stage_us\":{";
      for (int s = 0; s < gphkv::server::kNumGetStages; ++s) {
        std::printf(" %s %.1f", gphkv::server::get_stage_name(s), stage_sum[s] / timed * 1e6);
        absl::StrAppendFormat(&json, "%s\"%s\":%.2f", s ? "," : "", gphkv::server::get_stage_name(s),
                              stage_sum[s] / timed * 1e6);
      }
      json += "}";
    }
    json += "}";
    std::printf("\n");
  }
  return json + "}";
}

void print(const Result& r) {
  std::printf(
      "%-12s %-40s %8.0f calls/s %10.0f keys/s  p50 %8.1f us  p99 %8.1f us  keys/launch %7.1f  "
      "queue %7.1f us  engine %7.1f us/launch  in-server %7.1f us  engine busy %4.1f%%  cores %.1f  errors %llu\n",
      r.name.c_str(), r.config.c_str(), r.calls / r.seconds, r.keys / r.seconds, r.p50_us, r.p99_us,
      r.server_batches ? static_cast<double>(r.server_batched_keys) / r.server_batches : 0.0, r.queue_wait_us,
      r.engine_us_per_launch, r.server_us, 100 * r.engine_busy, r.process_cores,
      static_cast<unsigned long long>(r.errors));
  if (r.stage_batches > 0) {
    std::printf("             per pipelined batch (%llu batches), us:",
                static_cast<unsigned long long>(r.stage_batches));
    for (int st = 0; st < gphkv::server::kNumGetStages; ++st) {
      std::printf(" %s %.1f", gphkv::server::get_stage_name(st), r.stage_us[st]);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

std::string to_json(const Result& r) {
  return absl::StrFormat(
      R"({"workload":"%s","config":"%s","seconds":%.3f,"calls":%d,"keys":%d,"errors":%d,)"
      R"("calls_per_s":%.1f,"keys_per_s":%.1f,"p50_us":%.1f,"p99_us":%.1f,"server_batches":%d,"server_batched_keys":%d,)"
      R"("queue_wait_us":%.1f,"engine_us_per_launch":%.1f,"in_server_us":%.1f,"engine_busy":%.4f,)"
      R"("process_cores":%.2f,"pipelined_batches":%d,"stage_us_per_batch":{%s}})",
      r.name, r.config, r.seconds, r.calls, r.keys, r.errors, r.calls / r.seconds, r.keys / r.seconds, r.p50_us,
      r.p99_us, r.server_batches, r.server_batched_keys, r.queue_wait_us, r.engine_us_per_launch, r.server_us,
      r.engine_busy, r.process_cores, r.stage_batches, [&] {
        std::string out;
        for (int st = 0; st < gphkv::server::kNumGetStages; ++st) {
          absl::StrAppendFormat(&out, "%s\"%s\":%.2f", st ? "," : "", gphkv::server::get_stage_name(st),
                                r.stage_us[st]);
        }
        return out;
      }());
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Each workload builds and drops its own server and clients; keep the gRPC
  // library initialized across them (a shutdown/restart of the library in
  // gRPC 1.51 corrupted the heap here; see tests/server/test_server.h).
  grpc_init();
  spdlog::set_level(spdlog::level::warn);
  std::vector<Result> results;
  std::string engine_json;
  const std::vector<std::string> workloads = absl::StrSplit(absl::GetFlag(FLAGS_workloads), ',');
  const uint64_t mbk = absl::GetFlag(FLAGS_max_batch_keys);
  const uint32_t delay = absl::GetFlag(FLAGS_max_delay_us);
  // Rewritten after every result, so a run cut short still leaves what it measured.
  auto write_json = [&] {
    const std::string path = absl::GetFlag(FLAGS_json);
    if (path.empty()) return;
    std::ofstream out(path);
    using gphkv::bench::json_quote;
    out << "{\n  \"benchmark\": \"service_bench\",\n"
        << "  \"backend\": " << json_quote(absl::GetFlag(FLAGS_backend)) << ",\n"
        << "  \"device\": "
        << json_quote(absl::GetFlag(FLAGS_backend) == "cuda" ? gphkv::engine::cuda_device_name(0) : "") << ",\n"
        << "  \"host\": " << json_quote(gphkv::bench::cpu_model()) << ",\n"
        << "  \"commit\": " << json_quote(gphkv::bench::git_commit()) << ",\n"
        << "  \"command\": " << json_quote(gphkv::bench::command_line(argc, argv)) << ",\n"
        << "  \"date\": " << json_quote(gphkv::bench::utc_now()) << ",\n"
        << "  \"results\": [\n";
    for (size_t i = 0; i < results.size(); ++i) out << (i ? ",\n" : "") << to_json(results[i]);
    out << "\n  ]";
    if (!engine_json.empty()) out << ",\n  \"engine\": " << engine_json;
    out << "\n}\n";
  };
  const std::vector<std::string> variants = absl::StrSplit(absl::GetFlag(FLAGS_variants), ',');
  const std::vector<std::string> client_counts = absl::StrSplit(absl::GetFlag(FLAGS_clients), ',');
  for (const std::string& w : workloads) {
    for (const std::string& v : variants) {
      current_variant = parse_variant(v);
      if (w == "batched_get") {
        auto server = start(mbk, delay);
        preload(*gphkv::Client::Connect(absl::StrCat("127.0.0.1:", server->port())));
        for (const std::string& c : client_counts) {
          results.push_back(batched_get(*server, std::atoi(c.c_str())));
          print(results.back());
          write_json();
        }
      } else if (w == "single_get") {
        for (bool batching : {true, false}) {
          // Off: every call is its own engine launch (max_batch_keys=1).
          auto server = batching ? start(mbk, delay) : start(1, 0);
          preload(*gphkv::Client::Connect(absl::StrCat("127.0.0.1:", server->port())));
          results.push_back(
              single_get(*server, batching ? absl::StrCat("batching=on max_delay_us=", delay) : "batching=off"));
          print(results.back());
          write_json();
        }
      } else if (w == "delay_sweep") {
        for (uint32_t d : {0u, 25u, 50u, 100u, 200u, 500u}) {
          auto server = start(mbk, d);
          preload(*gphkv::Client::Connect(absl::StrCat("127.0.0.1:", server->port())));
          results.push_back(single_get(*server, absl::StrCat("batching=on max_delay_us=", d)));
          print(results.back());
          write_json();
        }
      } else if (w == "engine") {
        engine_json = engine_breakdown();
        write_json();
        break;  // runs every variant itself
      } else {
        std::fprintf(stderr, "unknown workload '%s'\n", w.c_str());
        return 2;
      }
    }
  }
  return 0;
}
