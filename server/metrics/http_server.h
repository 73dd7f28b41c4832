// A minimal HTTP/1.1 server for Prometheus scrapes: GET /metrics answers the
// registry's text; anything else gets 404 (or 405 for other methods). One
// thread serves connections one at a time, each closed after its response:
// a scrape every few seconds needs nothing more.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace gphkv::metrics {

class HttpServer {
 public:
  // `body` renders the page for GET /metrics.
  explicit HttpServer(std::function<std::string()> body);
  ~HttpServer();

  // Binds `address` ("host:port"; port 0 picks a free one) and starts serving.
  // Returns the bound port.
  absl::StatusOr<int> start(const std::string& address);
  // Stops accepting and joins the thread. Idempotent.
  void stop();

 private:
  void serve();
  void handle(int fd);

  std::function<std::string()> body_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace gphkv::metrics
