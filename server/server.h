// gphkv-server assembled: the partitions (per GPU, or per --partitions on
// the CPU backend, a store, batcher and executor), the intake that routes
// calls to them, the gRPC service (with health and reflection) and the
// metrics endpoint. main.cc turns flags into
// ServerOptions; tests build a Server directly on 127.0.0.1 port 0.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/batcher.h"
#include "server/request_validation.h"
#include "server/store.h"
#include "server/store_durability.h"

namespace gphkv::server {

enum class BackendChoice { kAuto, kCpu, kCuda };

// TLS on the gRPC port, from PEM files (--tls_cert, --tls_key,
// --tls_client_ca); no certificate: plain text. The metrics endpoint stays
// plain HTTP on its own address either way.
struct ServerTls {
  std::string cert_file;  // certificate chain, the server's first
  std::string key_file;   // its private key (unencrypted)
  // Set: every client must present a certificate signed by one of these
  // CAs (mTLS); needs cert_file.
  std::string client_ca_file;
};

// memcached's text protocol on a second port (--memcached_address and its
// limits; docs/memcached.md). address empty: no memcached port.
struct MemcachedOptions {
  std::string address;
  uint32_t max_connections = 1024;  // memcached's -c default
  // Event loops, each on a thread of its own (memcached's -t and its default).
  uint32_t threads = 4;
  // Closes a connection idle (or not reading its replies) this long; 0: never,
  // memcached's default.
  std::chrono::seconds idle_timeout{0};
  // How long a loop with calls in the store spins for their answers before
  // it sleeps in epoll (memcache::ListenerOptions::answer_spin); 0: never.
  std::chrono::microseconds answer_spin{0};
  // A loop packs the plain gets of a round into one call (memcache/get_pack.h).
  bool pack_gets = true;
};

struct ServerOptions {
  std::string listen_address = "0.0.0.0:50051";
  MemcachedOptions memcached{};
  // Empty disables the metrics endpoint.
  std::string metrics_address = "0.0.0.0:9464";
  BackendChoice backend = BackendChoice::kAuto;
  // CUDA: a partition (store, batcher, executor) on each of these devices
  // (--gpus); nullopt: on every device the runtime reports.
  std::optional<std::vector<int>> gpus;
  // CPU backend: how many partitions (--partitions), each a CPU store.
  uint32_t cpu_partitions = 1;
  // The server's totals: store.memory_limit_bytes and
  // store.initial_capacity are divided over the partitions
  // (server/partitions.h).
  StoreOptions store{};
  BatcherOptions batcher{};
  // When set, batcher.max_delay is chosen for the backend: 0 on cpu (its
  // per-launch cost is ~5 us, so waiting only adds latency), 25 us on cuda
  // (a launch and its copies cost tens of us: a short wait amortizes them;
  // 25 us beat 0, 10, 50 and 100 on the H100 under coalesced clients).
  // docs/performance.md, "Choosing the batching defaults".
  bool max_delay_per_backend = false;
  RequestLimits limits{};
  // gRPC message size cap, both directions.
  int max_message_bytes = 256 << 20;
  // Threads that fill, serialize and send answers (0 = the executor thread
  // does); default_completion_threads() when not set.
  int completion_threads = -1;
  // Threads (each with its own completion queue) that receive unary
  // Get/Put/Delete calls; 0 = default_grpc_threads().
  int grpc_threads = 0;
  // How long shutdown waits for open streams before cancelling them.
  int shutdown_grace_ms = 5000;
  ServerTls tls{};
  // The data directory (--data_dir, --fsync, --recover, the snapshot and
  // segment sizes): recovered before the server listens; dir empty: none.
  DataDirConfig data_dir{};
};

// The unary front end's threads when not set: a quarter of the cores, at least 2.
int default_grpc_threads();
// The completion threads when not set: half the cores, at least 2.
int default_completion_threads();

// Resolves --backend=auto: CUDA when a device is visible, else CPU.
engine::Backend resolve_backend(BackendChoice choice);

class Server {
 public:
  static absl::StatusOr<std::unique_ptr<Server>> start(ServerOptions options);
  ~Server();

  // The bound ports (useful when the options asked for port 0).
  int port() const;
  int metrics_port() const;
  // The memcached port, 0 without --memcached_address.
  int memcached_port() const;
  std::string backend_name() const;
  // The /metrics page, rendered now (for tools that embed a server).
  std::string render_metrics() const;

  // Stops accepting calls, answers every pending call (queued work runs),
  // stops the executor and the metrics endpoint. Idempotent.
  void shutdown();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gphkv::server
