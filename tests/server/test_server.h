// A gphkv server on 127.0.0.1 (ports picked by the kernel) for loopback tests.
#pragma once

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gphkv/client/client.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace gphkv::testing {

inline server::ServerOptions test_options() {
  server::ServerOptions o;
  o.listen_address = "127.0.0.1:0";
  o.metrics_address = "127.0.0.1:0";
  o.backend = server::BackendChoice::kCpu;
  o.store.initial_capacity = 1024;
  o.store.memory_limit_bytes = 256 << 20;
  o.store.table.cpu_threads = 2;
  o.batcher.max_delay = std::chrono::microseconds(200);
  o.shutdown_grace_ms = 2000;
  return o;
}

inline std::unique_ptr<server::Server> start_server(const server::ServerOptions& o = test_options()) {
  auto s = server::Server::start(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

inline std::unique_ptr<Client> connect(const server::Server& s, ClientOptions o = {}) {
  return Client::Connect(absl::StrCat("127.0.0.1:", s.port()), o);
}

}  // namespace gphkv::testing
