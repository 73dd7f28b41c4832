// A gphkv server on 127.0.0.1 (ports picked by the kernel) for loopback tests.
#pragma once

#include <memory>
#include <string>

#include <grpc/grpc.h>

#include "absl/strings/str_cat.h"
#include "gphkv/client/client.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace gphkv::testing {

// gRPC shuts its library down when its last object goes away and starts it
// again with the next one; with gRPC 1.51 a restart racing the asynchronous
// shutdown corrupted the heap (seen in grpc_cq_internal_unref when a process
// destroyed one server and its clients, then built another). Tests build many
// servers one after another, so they keep the library up for the process.
inline void keep_grpc_initialized() {
  static const bool once = (grpc_init(), true);
  (void)once;
}

inline server::ServerOptions test_options() {
  server::ServerOptions o;
  o.listen_address = "127.0.0.1:0";
  // No metrics endpoint unless a test scrapes it (metrics_scraped_options):
  // civetweb, under prometheus-cpp's Exposer, takes about 2 s to stop, which
  // every test's server would pay.
  o.metrics_address = "";
  o.backend = server::BackendChoice::kCpu;
  o.store.initial_capacity = 1024;
  o.store.memory_limit_bytes = 256 << 20;
  o.store.table.cpu_threads = 2;
  o.batcher.max_delay = std::chrono::microseconds(200);
  o.shutdown_grace_ms = 2000;
  return o;
}

// test_options() with the metrics endpoint on a port the kernel picks.
inline server::ServerOptions metrics_scraped_options() {
  server::ServerOptions o = test_options();
  o.metrics_address = "127.0.0.1:0";
  return o;
}

// test_options() with the memcached port on a port the kernel picks, and a
// small --max_value_bytes so that tests reach it cheaply.
inline server::ServerOptions memcached_test_options(uint32_t max_value_bytes) {
  server::ServerOptions o = test_options();
  o.memcached.address = "127.0.0.1:0";
  o.limits.max_value_bytes = max_value_bytes;
  return o;
}

inline std::unique_ptr<server::Server> start_server(const server::ServerOptions& o = test_options()) {
  keep_grpc_initialized();
  auto s = server::Server::start(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

inline std::unique_ptr<Client> connect(const server::Server& s, ClientOptions o = {}) {
  return Client::Connect(absl::StrCat("127.0.0.1:", s.port()), o);
}

}  // namespace gphkv::testing
