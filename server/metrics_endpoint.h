// The Prometheus endpoint: prometheus-cpp's Exposer (an embedded civetweb)
// serving a registry on GET /metrics.
#pragma once

#include <memory>
#include <string>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include "absl/status/statusor.h"

namespace gphkv::server {

class MetricsEndpoint {
 public:
  // Binds `address` ("host:port"; an empty host is every interface, port 0
  // picks a free one) and serves `registry` there until destroyed.
  // INVALID_ARGUMENT when the address is not host:port, UNAVAILABLE when it
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> start(const std::string& address,
                                                                const std::weak_ptr<prometheus::Collectable>& registry);

  // The bound port (the chosen one when the address asked for port 0).
  int port() const { return port_; }

 private:
  MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer, int port) : exposer_(std::move(exposer)), port_(port) {}

  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_;
};

}  // namespace gphkv::server
