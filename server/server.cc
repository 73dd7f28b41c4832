#include "server/server.h"

#include <fstream>
#include <mutex>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/byte_key.h"
#include "server/data_dir_metrics.h"
#include "server/gpu_list.h"
#include "server/grpc/key_value_service.h"
#include "server/grpc/unary_front_end.h"
#include "server/intake.h"
#include "server/memcache/listener.h"
#include "server/memcached_metrics.h"
#include "server/metrics_endpoint.h"
#include "server/partition_metrics.h"
#include "server/partitions.h"
#include "server/service_metrics.h"
#include "spdlog/spdlog.h"
#include "tls/pem_files.h"

#ifndef GPHKV_VERSION
#define GPHKV_VERSION "0.0.0"
#endif

namespace gphkv::server {
namespace {

// Per-backend batch delays (docs/performance.md, "Choosing max_delay_us").
constexpr int kCpuMaxDelayUs = 0;
constexpr int kCudaMaxDelayUs = 25;

// --partitions' bound: past the cores of any host, a partition's executor
// thread would only wait for a core.
constexpr uint32_t kMaxPartitions = 256;

// The CPU model, for Stats and build_info on the CPU backend.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "cpu";
}

// The gRPC port's credentials: plain text, TLS, or TLS that requires client
// certificates. The files are read and checked here, so a bad one stops the
// start with its flag's name instead of failing every handshake later.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const ServerTls& tls) {
  auto pair = tls::ReadKeyPair("--tls_cert", tls.cert_file, "--tls_key", tls.key_file);
  if (!pair.ok()) return pair.status();
  if (pair->certificate_chain.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key: mTLS is TLS first");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(tls.client_ca_file.empty()
                                            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!tls.client_ca_file.empty()) {
    auto ca = tls::ReadCertificates("--tls_client_ca", tls.client_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = std::move(*ca);
  }
  ssl.pem_key_cert_pairs.push_back({std::move(pair->private_key), std::move(pair->certificate_chain)});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

int default_completion_threads() {
  // Answers are where the per-key host work of a get is (filling responses
  // from the download, serializing them): on the H100 host 8 threads served
  // more coalesced requests than 4 in every paired run (docs/performance.md,
  // "Choosing the front end's threads").
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 2);
}

int default_grpc_threads() {
  // A quarter of the cores, at least 2: the front end shares the host with
  // the completion threads, gRPC's own threads and often the clients
  // (docs/performance.md, "The front end's ceiling").
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 4);
}

engine::Backend resolve_backend(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::kCpu: return engine::Backend::kCpu;
    case BackendChoice::kCuda: return engine::Backend::kCuda;
    default: return engine::cuda_device_count() > 0 ? engine::Backend::kCuda : engine::Backend::kCpu;
  }
}

struct Server::Impl {
  ServerOptions options;
  ServiceMetrics metrics;
  std::unique_ptr<DataDirMetrics> data_dir_metrics;  // with --data_dir
  std::unique_ptr<Partitions> partitions;
  std::unique_ptr<PartitionMetrics> partition_metrics;
  std::unique_ptr<Intake> intake;
  std::unique_ptr<grpcfe::KeyValueService> service;
  std::unique_ptr<grpcfe::UnaryFrontEnd> front_end;
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  // Declared after the intake and the partitions: destroyed before them,
  // once shutdown() has had every call it queued answered.
  std::unique_ptr<memcache::Listener> memcached;
  std::unique_ptr<MemcachedMetrics> memcached_metrics;  // with the memcached port
  int port = 0;
  int metrics_port = 0;
  std::string backend;
  bool stopped = false;

  // The health service says SERVING once the server listens, unless the
  // data directory's log failed (the executor's thread says so, at any
  // time): then NOT_SERVING, so an orchestrator restarts the server.
  std::mutex health_mu;
  bool listening = false;
  bool log_failed = false;
  void set_health(bool now_listening, bool now_log_failed) {
    std::lock_guard<std::mutex> lock(health_mu);
    listening |= now_listening;
    log_failed |= now_log_failed;
    if (listening) grpc_server->GetHealthCheckService()->SetServingStatus(!log_failed);
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { shutdown(); }

int Server::port() const { return impl_->port; }
int Server::metrics_port() const { return impl_->metrics_port; }
int Server::memcached_port() const { return impl_->memcached ? impl_->memcached->port() : 0; }
std::string Server::backend_name() const { return impl_->backend; }
std::string Server::render_metrics() const { return impl_->metrics.render(); }

absl::StatusOr<std::unique_ptr<Server>> Server::start(ServerOptions options) {
  if (options.limits.max_call_keys > options.batcher.max_queue_keys) {
    return absl::InvalidArgumentError(absl::StrCat("--max_call_keys=", options.limits.max_call_keys,
                                                   " exceeds --max_queue_keys=", options.batcher.max_queue_keys,
                                                   ": the largest call could never be queued"));
  }
  if (options.batcher.max_batch_keys == 0) {
    return absl::InvalidArgumentError("--max_batch_keys must be at least 1");
  }
  if (!options.data_dir.dir.empty()) {
    if (absl::Status s = check_log_record_bound(options.batcher.max_queue_bytes, options.max_message_bytes,
                                                options.batcher.max_queue_keys, options.limits.max_key_bytes);
        !s.ok()) {
      return s;
    }
  }
  auto credentials = server_credentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  const engine::Backend backend = resolve_backend(options.backend);
  if (options.backend == BackendChoice::kAuto) {
    spdlog::info("--backend=auto: {} CUDA device(s) visible, using the {} backend", engine::cuda_device_count(),
                 engine::backend_name(backend));
  }
  PartitionsOptions partitions;
  if (backend == engine::Backend::kCuda) {
    if (options.cpu_partitions != 1) {
      return absl::InvalidArgumentError(absl::StrCat("--partitions=", options.cpu_partitions,
                                                     " is for --backend=cpu; on cuda there is a partition per GPU "
                                                     "of --gpus"));
    }
    auto gpus = resolve_gpus(options.gpus, engine::cuda_device_count());
    if (!gpus.ok()) return gpus.status();
    partitions.gpus = std::move(*gpus);
  } else {
    if (options.gpus.has_value() && options.backend == BackendChoice::kCpu) {
      return absl::InvalidArgumentError(
          "--gpus lists CUDA devices, but the backend is cpu; on cpu, --partitions=N splits the keys over N stores");
    }
    // --backend=auto on a host without a GPU: the same flags serve on either kind of host.
    if (options.gpus.has_value()) spdlog::warn("no CUDA device visible: --gpus is ignored on the cpu backend");
    if (options.cpu_partitions < 1 || options.cpu_partitions > kMaxPartitions) {
      return absl::InvalidArgumentError(
          absl::StrCat("--partitions must be in [1, ", kMaxPartitions, "], got ", options.cpu_partitions));
    }
    partitions.cpu_partitions = options.cpu_partitions;
  }
  options.store.backend = backend;
  // The heap stores a byte key's record: its key beside the value (server/byte_key.h).
  options.store.max_value_bytes =
      options.limits.max_value_bytes + byte_key::kMaxRecordHeaderBytes + options.limits.max_key_bytes;
  options.store.max_put_value_bytes = options.limits.max_value_bytes;
  // Leave room for the found flags and lengths next to the values (at most
  // 6 bytes a key on the wire, plus framing).
  const uint64_t overhead = 8ull * options.limits.max_call_keys + 4096;
  options.store.max_response_bytes =
      static_cast<uint64_t>(options.max_message_bytes) - std::min<uint64_t>(options.max_message_bytes, overhead);
  impl->backend = std::string(engine::backend_name(backend));
  if (options.max_delay_per_backend) {
    options.batcher.max_delay =
        std::chrono::microseconds(backend == engine::Backend::kCuda ? kCudaMaxDelayUs : kCpuMaxDelayUs);
    spdlog::info("max_delay_us={} (the {} backend's default)", options.batcher.max_delay.count(), impl->backend);
  }
  partitions.store = options.store;
  // Evictions are logged as deletes, so a restart does not bring them back.
  partitions.store.record_evictions = options.store.evict && !options.data_dir.dir.empty();
  // Touches and flushes keep what the log must carry of them (issue 27).
  partitions.store.logged_writes = !options.data_dir.dir.empty();
  partitions.batcher = options.batcher;
  partitions.completion_threads = options.completion_threads >= 0 ? static_cast<unsigned>(options.completion_threads)
                                                                  : static_cast<unsigned>(default_completion_threads());
  partitions.data_dir = options.data_dir;
  if (!options.data_dir.dir.empty()) {
    impl->data_dir_metrics = std::make_unique<DataDirMetrics>(*impl->metrics.registry());
    partitions.data_dir_metrics = impl->data_dir_metrics.get();
    partitions.on_log_failed = [s = impl.get()](const absl::Status&) { s->set_health(false, true); };
  }
  auto created = Partitions::create(partitions, &impl->metrics, cpu_model());
  if (!created.ok()) return created.status();
  impl->partitions = std::move(*created);
  Partitions& parts = *impl->partitions;
  if (absl::Status s = parts.start(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot recover --data_dir=", options.data_dir.dir, ": ", s.message()));
  }
  // Stats' and build_info's device: the one partition's, or the devices of all of them.
  std::string device = parts[0].device;
  if (backend == engine::Backend::kCuda && parts.size() > 1) {
    std::vector<std::string> devices;
    for (size_t k = 0; k < parts.size(); ++k) devices.push_back(parts[k].device);
    device = absl::StrJoin(devices, ", ");
  } else if (parts.size() > 1) {
    device = absl::StrCat(device, " (", parts.size(), " partitions)");
  }
  std::vector<std::string> labels;
  for (size_t k = 0; k < parts.size(); ++k) labels.push_back(parts[k].label);
  impl->partition_metrics = std::make_unique<PartitionMetrics>(impl->metrics, labels);
  // The gauges as of each scrape: the tables' figures, and the data
  // directory's (the snapshot's age above all), not as of the last batch.
  impl->metrics.on_collect([s = impl.get()] {
    std::vector<uint64_t> queued;
    for (Batcher* b : s->partitions->batchers()) queued.push_back(b->queued_keys());
    s->partition_metrics->refresh(s->partitions->stats(), queued);
    if (s->data_dir_metrics != nullptr) s->data_dir_metrics->refresh(s->partitions->data_dir_status().state);
    // Set before the metrics endpoint starts, and kept until the server is destroyed.
    if (s->memcached_metrics != nullptr) s->memcached_metrics->refresh(s->memcached->counters());
  });
  impl->metrics.set_build_info(GPHKV_VERSION, impl->backend, device);
  impl->intake = std::make_unique<Intake>(parts.batchers(), options.limits, parts.names(),
                                          options.store.max_response_bytes, &impl->metrics.call_stage_seconds);
  spdlog::info("{} partition(s): {}", parts.size(), absl::StrJoin(parts.names(), ", "));
  impl->service = std::make_unique<grpcfe::KeyValueService>(impl->intake.get(), &parts, &impl->metrics,
                                                            grpcfe::ServiceInfo{impl->backend, device, GPHKV_VERSION});
  grpcfe::UnaryFrontEndOptions fe;
  fe.threads = options.grpc_threads > 0 ? options.grpc_threads : default_grpc_threads();
  impl->front_end = std::make_unique<grpcfe::UnaryFrontEnd>(impl->service.get(), impl->service.get(), fe);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, *credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  impl->front_end->add_queues(builder);
  impl->grpc_server = builder.BuildAndStart();
  if (!impl->grpc_server || impl->port == 0) {
    impl->front_end->stop();
    parts.stop();
    return absl::UnavailableError(absl::StrCat("cannot listen on --listen_address=", options.listen_address));
  }
  impl->front_end->start();
  spdlog::info("unary Get/Put/Delete on {} completion-queue threads", fe.threads);
  if (!options.memcached.address.empty()) {
    memcache::ListenerOptions mc;
    mc.address = options.memcached.address;
    mc.max_connections = options.memcached.max_connections;
    mc.threads = options.memcached.threads;
    mc.answer_spin = options.memcached.answer_spin;
    if (options.memcached.pack_gets) {
      mc.pack_max_keys = memcache::pack_max_keys_for(options.store.max_response_bytes, options.limits.max_value_bytes,
                                                     options.limits.max_call_keys);
    }
    mc.connection.idle_timeout = options.memcached.idle_timeout;
    // One limit per idea for both protocols: --max_key_bytes and --max_value_bytes.
    mc.connection.parser.max_key_length = options.limits.max_key_bytes;
    mc.connection.parser.max_value_length = options.limits.max_value_bytes;
    mc.version = std::string(memcache::kProtocolVersion) + " gphkv-" GPHKV_VERSION;
    mc.store_totals = [partitions = impl->partitions.get()] {
      const ExecutorStats t = total_stats(partitions->stats());
      return memcache::StoreTotals{t.keys, t.memory_limit_bytes, t.evictions, t.items_swept};
    };
    mc.unix_clock = options.store.unix_clock;
    auto listener = memcache::Listener::start(impl->intake.get(), std::move(mc));
    if (!listener.ok()) {
      impl->grpc_server->Shutdown();
      impl->front_end->stop();
      parts.stop();
      return listener.status();
    }
    impl->memcached = std::move(*listener);
    impl->memcached_metrics = std::make_unique<MemcachedMetrics>(*impl->metrics.registry());
    spdlog::info("serving memcached's text protocol on {} (port {}), {} loop threads, {}", options.memcached.address,
                 impl->memcached->port(), options.memcached.threads,
                 options.memcached.pack_gets ? "a round's gets packed into one call" : "a call a get");
  }
  impl->set_health(true, false);

  if (!options.metrics_address.empty()) {
    auto endpoint = MetricsEndpoint::start(options.metrics_address, impl->metrics.registry());
    if (!endpoint.ok()) {
      if (impl->memcached) impl->memcached->stop(std::chrono::milliseconds(0));
      impl->grpc_server->Shutdown();
      impl->front_end->stop();
      parts.stop();
      return endpoint.status();
    }
    impl->metrics_endpoint = std::move(*endpoint);
    impl->metrics_port = impl->metrics_endpoint->port();
  }
  spdlog::info("serving gphkv.v1.KeyValue on {} (port {}) {}; metrics on {}", options.listen_address, impl->port,
               options.tls.cert_file.empty()        ? "in plain text"
               : options.tls.client_ca_file.empty() ? "over TLS"
                                                    : "over TLS, client certificates required",
               options.metrics_address.empty()
                   ? std::string("(disabled)")
                   : absl::StrCat(options.metrics_address, " (port ", impl->metrics_port, ")/metrics"));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  spdlog::info("shutting down: refusing new calls, answering pending ones");
  s.grpc_server->GetHealthCheckService()->SetServingStatus(false);
  // The memcached port first, while the executors run: the commands its
  // connections have read are answered and written, then they close.
  if (s.memcached) s.memcached->stop(std::chrono::milliseconds(s.options.shutdown_grace_ms));
  // Shutdown stops new calls at once and waits for every started call to
  // finish; the executor keeps running meanwhile, so queued work completes.
  // Streams still open after the grace period are cancelled.
  s.grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(s.options.shutdown_grace_ms));
  s.front_end->stop();
  s.partitions->stop();
  s.grpc_server->Wait();
  s.metrics_endpoint.reset();
  const ExecutorStats st = total_stats(s.partitions->stats());
  spdlog::info("stopped: {} batches, {} keys batched, {} keys stored", st.batches, st.batched_keys, st.keys);
}

}  // namespace gphkv::server
