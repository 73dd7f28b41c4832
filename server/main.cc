// gphkv-server: the daemon. Flags are defined here, beside their only reader.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "flags/malloc_tuning.h"
#include "flags/program_flags.h"
#include "server/byte_key.h"
#include "server/byte_size.h"
#include "server/durability/durability_options.h"
#include "server/gpu_list.h"
#include "server/server.h"
#include "spdlog/spdlog.h"

using gphkv::server::ByteSize;

ABSL_FLAG(std::string, listen_address, "0.0.0.0:50051",
          "gRPC address to serve gphkv.v1.KeyValue, health and reflection on");
ABSL_FLAG(std::string, memcached_address, "",
          "host:port (IP:PORT, such as 0.0.0.0:11211) to serve memcached's text protocol on, beside gRPC and over "
          "the same store; empty (the default) disables it. docs/memcached.md says what it answers and refuses");
ABSL_FLAG(uint32_t, memcached_max_connections, 1024,
          "open memcached connections at most (memcached's -c); a connection past it is told \"ERROR Too many open "
          "connections\" and closed");
ABSL_FLAG(uint32_t, memcached_threads, 4,
          "event loops serving the memcached port, each on a thread of its own that owns the connections handed to "
          "it round robin (memcached's -t, and its default)");
ABSL_FLAG(uint32_t, memcached_spin_us, 0,
          "microseconds a memcached loop with calls in the store spins, watching for their answers, before it "
          "sleeps in epoll (0 = sleep at once): an answer arriving meanwhile is taken without the loop's wake-up, "
          "at the cost of up to this much of a core per wait; see docs/performance.md, \"Waits\"");
ABSL_FLAG(bool, memcached_pack_gets, true,
          "a memcached loop queues the plain gets it read in one round of its events as one call (each key keeps "
          "its connection's order), instead of a call a get: the executor's cost per call is paid once; see "
          "docs/memcached.md, \"Packed gets\"");
ABSL_FLAG(absl::Duration, memcached_idle_timeout, absl::ZeroDuration(),
          "close a memcached connection that sends nothing while it has nothing to answer, or reads none of its "
          "replies, this long (whole seconds, such as 300s; 0 = never, memcached's default)");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9464",
          "host:port of the Prometheus endpoint (GET /metrics); empty disables it");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain (the server's first) for TLS on --listen_address, with --tls_key; empty: plain "
          "text. The metrics endpoint stays plain HTTP");
ABSL_FLAG(std::string, tls_key, "", "PEM private key (unencrypted) of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: every client must present a certificate one of them signed (mTLS); needs --tls_cert");
ABSL_FLAG(std::string, backend, "auto",
          "table backend: auto (cuda when a CUDA device is visible, else cpu), cuda or cpu");
ABSL_FLAG(std::string, gpus, "all",
          "--backend=cuda: the CUDA devices to serve from, 'all' (every device the runtime reports) or a comma list "
          "of ids such as 0,1. Each gets a partition (its own table, value heap and executor); keys are placed by a "
          "hash of the key, and a call's keys are split over the GPUs and answered in request order");
ABSL_FLAG(int, gpu, -1, "deprecated: --gpu=N is --gpus=N (one device)");
ABSL_FLAG(uint32_t, partitions, 1,
          "--backend=cpu: split the keys over this many CPU stores, each with its own executor, as --gpus does over "
          "GPUs");
ABSL_FLAG(ByteSize, memory, ByteSize{uint64_t{1} << 30},
          "cap on table + value heap bytes (e.g. 512MiB, 4GiB), for the whole server: each GPU (or partition) gets "
          "an equal share; a put past its share gets RESOURCE_EXHAUSTED");
ABSL_FLAG(uint32_t, max_value_bytes, 1 << 20, "largest value a put may store, in bytes");
ABSL_FLAG(uint32_t, max_key_bytes, gphkv::server::byte_key::kDefaultMaxKeyBytes,
          "longest byte key a request may carry, in bytes (1 to 4096; memcached's 250 by default)");
ABSL_FLAG(uint32_t, max_call_keys, 65536,
          "most keys one Get/Put/Delete (or pipelined op) may carry; more is INVALID_ARGUMENT");
ABSL_FLAG(uint64_t, max_batch_keys, 16384,
          "a batch closes when its calls hold this many keys (1 = no cross-call batching); "
          "see docs/performance.md for the measurement behind the default");
ABSL_FLAG(int32_t, max_delay_us, -1,
          "a batch closes when its oldest call has waited this long, in microseconds (0 = never "
          "wait: batch only what queued while the executor was busy); -1 = per backend: 0 on cpu, "
          "25 on cuda. See docs/performance.md for the measurement behind the defaults");
ABSL_FLAG(uint32_t, spin_us, 0,
          "microseconds the executor spins, watching for a call, before it parks its thread after a batch (0 = "
          "park at once): a call arriving meanwhile skips the wake-up, at the cost of up to this much of a core "
          "after every batch; see docs/performance.md, \"Waits\"");
ABSL_FLAG(bool, early_answers, true,
          "CUDA: answer a pipelined get batch as soon as the device is done with it, and close the next batch at "
          "once while batches are on the device (false: answer a batch when the pipeline is full or no call "
          "waits, and let the next batch wait --max_delay_us for company: the policy before 2026-11-28, kept "
          "to measure); see docs/performance.md, \"Answers held in the pipeline\"");
ABSL_FLAG(uint64_t, max_queue_keys, 1 << 20,
          "bound on keys waiting for the executor; a call past it gets RESOURCE_EXHAUSTED at once");
ABSL_FLAG(ByteSize, max_queue_bytes, ByteSize{uint64_t{1} << 30},
          "bound on put value bytes waiting for the executor (e.g. 1GiB); past it calls get "
          "RESOURCE_EXHAUSTED at once");
ABSL_FLAG(uint64_t, initial_capacity, 1 << 20,
          "keys the first tables are sized for, in all (each GPU's table for its share); past load factor 0.80 it "
          "grows by a background rebuild sized for load "
          "factor 0.50");
ABSL_FLAG(int32_t, completion_threads, -1,
          "threads that fill, serialize and send answers, so the executor goes on to the next batch "
          "(-1 = half the cores, at least 2; 0 = the executor answers); see docs/performance.md");
ABSL_FLAG(int32_t, grpc_threads, 0,
          "threads, each with its own completion queue, that receive unary Get/Put/Delete calls "
          "(0 = a quarter of the cores, at least 2); see docs/performance.md");
ABSL_FLAG(int, gpu_pipeline_depth, 2,
          "CUDA: get batches in flight at once, each on its own stream with pinned buffers (0 = every get "
          "synchronous); see docs/performance.md");
ABSL_FLAG(uint32_t, expiry_sweep_seconds, 10,
          "a pass of the expiry sweep over the stored items at most this often, between batches, once some item "
          "was given an expiry or a flush_all was asked for: it deletes what expired or was flushed, so their "
          "memory comes back (0 = never: only a write or delete of the key frees it); see docs/memcached.md");
ABSL_FLAG(uint32_t, default_ttl, 0,
          "seconds from the write after which a byte-key item stored without an expiry (set, add, replace, cas, "
          "an incr that creates its item with ma N0; "
          "memcached's exptime 0, gRPC's exptime unset) expires, at most 2592000 (30 days); 0 = never; see "
          "docs/memcached.md");
ABSL_FLAG(std::string, eviction, "none",
          "at the --memory cap: none (a put that does not fit gets RESOURCE_EXHAUSTED) or lru (the store evicts "
          "items an approximate LRU, CLOCK with access bits the gets set, picks until the put fits); with "
          "--data_dir each eviction is logged as a delete; see docs/memcached.md");
ABSL_FLAG(uint32_t, gpu_small_gets_keys, 256,
          "CUDA: a get batch of at most this many keys (at most 256; 0 = none) whose values likely take at most 64 "
          "KiB takes the small path: the lookup reads its keys from pinned host memory and one kernel writes its "
          "answers there, so the batch makes two launches and no copy instead of an upload, four kernels and a "
          "download; see docs/memcached.md, \"The small path\"");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error or off");
ABSL_FLAG(int, shutdown_grace_ms, 5000,
          "on SIGTERM/SIGINT, how long open Pipeline streams may take to end before they are cancelled");
// The data directory (docs/durability.md).
ABSL_FLAG(std::string, data_dir, "",
          "directory for the log of every acknowledged write and the snapshots; recovered at start, before the "
          "server listens (empty = keep nothing on disk)");
ABSL_FLAG(std::string, fsync, "everysec",
          "with --data_dir, when a logged write reaches the disk (Redis's appendfsync): always (before it is "
          "acknowledged), everysec (within about a second), never (when the OS writes it back)");
ABSL_FLAG(std::string, recover, "strict",
          "with --data_dir, what a corrupt snapshot, a bad log record before the end or a gap in the log does at "
          "start: strict (refuse to start, naming the file and offset) or skip-corrupt (start with what is intact, "
          "the damaged files set aside as *.corrupt)");
ABSL_FLAG(absl::Duration, snapshot_interval, absl::Hours(1),
          "with --data_dir, a snapshot is taken this long after the last one once something was written (0 = "
          "only for --snapshot_log_bytes and at shutdown)");
ABSL_FLAG(ByteSize, snapshot_log_bytes, ByteSize{uint64_t{1} << 30},
          "with --data_dir, a snapshot is also taken once the log holds this many bytes, which bounds the replay "
          "at the next start (0 = never for size)");
ABSL_FLAG(ByteSize, log_segment_bytes, ByteSize{uint64_t{64} << 20},
          "with --data_dir, a log segment file is closed (and synced) and the next one started at this size");
ABSL_FLAG(uint64_t, malloc_trim_threshold_mib, 0,
          "glibc: free memory a malloc arena keeps before giving it back, in MiB (flags/malloc_tuning.h; the load "
          "generator's default is 256: answers of megabytes otherwise cost page faults on every message); 0 = "
          "glibc's default");
ABSL_FLAG(uint64_t, malloc_mmap_threshold_mib, 0,
          "glibc: smallest allocation served by its own mmap, in MiB, at most 32; 0 = glibc's default");

namespace {

int fail(const std::string& message) {
  spdlog::critical("{}", message);
  return 2;
}

// Whether --name was on the command line (absl reports only the value, and
// --gpus=all, the default, may be given too).
bool flag_given(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    for (const char* dashes : {"--", "-"}) {
      if (arg == dashes + name || absl::StartsWith(arg, dashes + name + "=")) return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals first, so every thread started later (gRPC's,
  // the executor's, the table's workers) inherits the mask, and take them
  // synchronously with sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  gphkv::ParseProgramFlags(argc, argv,
                           {"gphkv-server",
                            "a gRPC key-value store over a GPH perfect-hash table (CUDA or CPU).\n"
                            "Usage: gphkv-server [--flags]; SIGTERM/SIGINT drains and exits 0.",
                            {"server/main.cc"}});

  const gphkv::MallocTuning malloc_tuning{absl::GetFlag(FLAGS_malloc_trim_threshold_mib),
                                          absl::GetFlag(FLAGS_malloc_mmap_threshold_mib)};
  const absl::Status malloc_tuned = gphkv::tune_malloc(malloc_tuning);
  if (absl::IsInvalidArgument(malloc_tuned)) return fail("--malloc_*: " + std::string(malloc_tuned.message()));
  const std::string level = absl::GetFlag(FLAGS_log_level);
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") return fail("unknown --log_level=" + level);
  spdlog::set_level(lvl);

  gphkv::server::ServerOptions o;
  o.listen_address = absl::GetFlag(FLAGS_listen_address);
  o.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  o.memcached.address = absl::GetFlag(FLAGS_memcached_address);
  o.memcached.max_connections = absl::GetFlag(FLAGS_memcached_max_connections);
  if (o.memcached.max_connections == 0) return fail("--memcached_max_connections must be at least 1");
  o.memcached.threads = absl::GetFlag(FLAGS_memcached_threads);
  if (o.memcached.threads == 0 || o.memcached.threads > 256) return fail("--memcached_threads must be 1 to 256");
  o.memcached.answer_spin =
      std::chrono::microseconds(std::min<uint32_t>(absl::GetFlag(FLAGS_memcached_spin_us), 1'000'000));
  o.memcached.pack_gets = absl::GetFlag(FLAGS_memcached_pack_gets);
  const absl::Duration idle = absl::GetFlag(FLAGS_memcached_idle_timeout);
  if (idle < absl::ZeroDuration()) return fail("--memcached_idle_timeout must not be negative");
  o.memcached.idle_timeout = std::chrono::seconds(absl::ToInt64Seconds(idle));
  if (idle > absl::ZeroDuration() && o.memcached.idle_timeout.count() == 0) {
    return fail("--memcached_idle_timeout is counted in whole seconds: give 1s or more, or 0");
  }
  o.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  o.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  o.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend == "auto")
    o.backend = gphkv::server::BackendChoice::kAuto;
  else if (backend == "cpu")
    o.backend = gphkv::server::BackendChoice::kCpu;
  else if (backend == "cuda")
    o.backend = gphkv::server::BackendChoice::kCuda;
  else
    return fail("--backend must be auto, cuda or cpu, got '" + backend + "'");
  // --gpus, or the deprecated --gpu=N (one device; ignored on cpu, as it always was).
  const int gpu = absl::GetFlag(FLAGS_gpu);
  std::string gpus = absl::GetFlag(FLAGS_gpus);
  if (flag_given(argc, argv, "gpu")) {
    if (flag_given(argc, argv, "gpus")) return fail("--gpu and --gpus given together: --gpu=N is the old --gpus=N");
    if (gpu < 0) return fail(absl::StrCat("--gpu=", gpu, " is not a CUDA device id"));
    spdlog::warn("--gpu is deprecated: --gpu={0} is --gpus={0}", gpu);
    gpus = o.backend == gphkv::server::BackendChoice::kCpu ? "all" : std::to_string(gpu);
  }
  auto gpu_list = gphkv::server::parse_gpu_list(gpus);
  if (!gpu_list.ok()) return fail(std::string(gpu_list.status().message()));
  o.gpus = *gpu_list;
  o.cpu_partitions = absl::GetFlag(FLAGS_partitions);
  o.store.memory_limit_bytes = absl::GetFlag(FLAGS_memory).bytes;
  o.store.initial_capacity = absl::GetFlag(FLAGS_initial_capacity);
  o.limits.max_value_bytes = absl::GetFlag(FLAGS_max_value_bytes);
  o.limits.max_call_keys = absl::GetFlag(FLAGS_max_call_keys);
  o.limits.max_key_bytes = absl::GetFlag(FLAGS_max_key_bytes);
  if (o.limits.max_key_bytes == 0 || o.limits.max_key_bytes > gphkv::server::byte_key::kMaxKeyBytesLimit) {
    return fail(absl::StrCat("--max_key_bytes=", o.limits.max_key_bytes, " is outside 1 .. ",
                             gphkv::server::byte_key::kMaxKeyBytesLimit));
  }
  o.batcher.max_batch_keys = absl::GetFlag(FLAGS_max_batch_keys);
  const int32_t max_delay_us = absl::GetFlag(FLAGS_max_delay_us);
  o.max_delay_per_backend = max_delay_us < 0;
  o.batcher.max_delay = std::chrono::microseconds(std::max(0, max_delay_us));
  o.batcher.spin = std::chrono::microseconds(std::min<uint32_t>(absl::GetFlag(FLAGS_spin_us), 1'000'000));
  o.batcher.early_answers = absl::GetFlag(FLAGS_early_answers);
  o.batcher.max_queue_keys = absl::GetFlag(FLAGS_max_queue_keys);
  o.batcher.max_queue_bytes = absl::GetFlag(FLAGS_max_queue_bytes).bytes;
  o.shutdown_grace_ms = absl::GetFlag(FLAGS_shutdown_grace_ms);
  o.completion_threads = absl::GetFlag(FLAGS_completion_threads);
  if (o.completion_threads < -1 || o.completion_threads > 256) return fail("--completion_threads must be in [-1, 256]");
  o.grpc_threads = absl::GetFlag(FLAGS_grpc_threads);
  if (o.grpc_threads < 0 || o.grpc_threads > 256) return fail("--grpc_threads must be in [0, 256]");
  o.store.gpu_pipeline_depth = absl::GetFlag(FLAGS_gpu_pipeline_depth);
  if (o.store.gpu_pipeline_depth < 0 || o.store.gpu_pipeline_depth > 8) {
    return fail("--gpu_pipeline_depth must be in [0, 8]");
  }
  o.store.sweep_interval_seconds = absl::GetFlag(FLAGS_expiry_sweep_seconds);
  o.store.default_ttl_seconds = absl::GetFlag(FLAGS_default_ttl);
  if (int64_t{o.store.default_ttl_seconds} > gphkv::server::byte_key::kMaxRelativeExptime) {
    return fail(absl::StrCat("--default_ttl must be at most ", gphkv::server::byte_key::kMaxRelativeExptime,
                             " seconds (30 days): memcached reads a larger exptime as a unix time"));
  }
  if (const std::string eviction = absl::GetFlag(FLAGS_eviction); eviction == "lru") {
    o.store.evict = true;
  } else if (eviction != "none") {
    return fail(absl::StrCat("--eviction must be none or lru, not \"", eviction, "\""));
  }
  o.store.gpu_small_gets_keys = absl::GetFlag(FLAGS_gpu_small_gets_keys);
  if (o.store.gpu_small_gets_keys > 256) return fail("--gpu_small_gets_keys must be in [0, 256]");
  o.data_dir.dir = absl::GetFlag(FLAGS_data_dir);
  auto fsync = gphkv::server::durability::parse_fsync_policy(absl::GetFlag(FLAGS_fsync));
  if (!fsync.ok()) return fail(absl::StrCat("--fsync: ", fsync.status().message()));
  o.data_dir.options.log.fsync = *fsync;
  auto recover = gphkv::server::durability::parse_recover_mode(absl::GetFlag(FLAGS_recover));
  if (!recover.ok()) return fail(absl::StrCat("--recover: ", recover.status().message()));
  o.data_dir.options.recover = *recover;
  const absl::Duration snapshot_interval = absl::GetFlag(FLAGS_snapshot_interval);
  if (snapshot_interval < absl::ZeroDuration()) return fail("--snapshot_interval must not be negative");
  o.data_dir.options.snapshot_interval_seconds = absl::ToDoubleSeconds(snapshot_interval);
  o.data_dir.options.snapshot_log_bytes = absl::GetFlag(FLAGS_snapshot_log_bytes).bytes;
  o.data_dir.options.log.segment_bytes = absl::GetFlag(FLAGS_log_segment_bytes).bytes;
  if (o.data_dir.options.log.segment_bytes == 0) return fail("--log_segment_bytes must be at least 1");

  spdlog::info(
      "gphkv-server starting: listen_address={} memcached_address={} tls_cert={} tls_client_ca={} metrics_address={} "
      "backend={} gpus={} "
      "partitions={} "
      "memory={} "
      "max_value_bytes={} max_key_bytes={} max_call_keys={} max_batch_keys={} max_delay_us={} spin_us={} "
      "early_answers={} max_queue_keys={} "
      "initial_capacity={} completion_threads={} grpc_threads={} gpu_pipeline_depth={} eviction={} data_dir={}",
      o.listen_address, o.memcached.address.empty() ? "(off)" : o.memcached.address,
      o.tls.cert_file.empty() ? "(plain text)" : o.tls.cert_file,
      o.tls.client_ca_file.empty() ? "(none)" : o.tls.client_ca_file,
      o.metrics_address.empty() ? "(disabled)" : o.metrics_address, backend, gpus, o.cpu_partitions,
      gphkv::server::format_byte_size(o.store.memory_limit_bytes), o.limits.max_value_bytes, o.limits.max_key_bytes,
      o.limits.max_call_keys, o.batcher.max_batch_keys,
      o.max_delay_per_backend ? std::string("per-backend") : std::to_string(o.batcher.max_delay.count()),
      o.batcher.spin.count(), o.batcher.early_answers, o.batcher.max_queue_keys, o.store.initial_capacity,
      o.completion_threads >= 0 ? o.completion_threads : gphkv::server::default_completion_threads(),
      o.grpc_threads > 0 ? o.grpc_threads : gphkv::server::default_grpc_threads(), o.store.gpu_pipeline_depth,
      o.store.evict ? "lru" : "none",
      o.data_dir.dir.empty()
          ? std::string("(none)")
          : absl::StrCat(o.data_dir.dir, " fsync=", absl::GetFlag(FLAGS_fsync), " recover=",
                         absl::GetFlag(FLAGS_recover), " snapshot_interval=", absl::FormatDuration(snapshot_interval),
                         " snapshot_log_bytes=", gphkv::server::format_byte_size(o.data_dir.options.snapshot_log_bytes),
                         " log_segment_bytes=", gphkv::server::format_byte_size(o.data_dir.options.log.segment_bytes)));
  spdlog::info("{}", gphkv::describe(malloc_tuning, malloc_tuned));

  auto server = gphkv::server::Server::start(o);
  if (!server.ok()) return fail(std::string(server.status().message()));

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("received {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->shutdown();
  server->reset();
  spdlog::info("exit 0");
  return 0;
}
