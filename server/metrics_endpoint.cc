#include "server/metrics_endpoint.h"

#include <exception>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gphkv::server {

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(
    const std::string& address, const std::weak_ptr<prometheus::Collectable>& registry) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_address='", address, "' is not host:port with a port in 0..65535"));
  }
  // civetweb's listening_ports takes "host:port" or, for every interface, the
  // port alone (":9464" is refused there).
  const std::string listening = colon == 0 ? address.substr(1) : address;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listening);
  } catch (const std::exception& e) {
    // civetweb says only "null context when constructing CivetServer".
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on --metrics_address=", address,
                                               " (in use, not a local address, or IPv6, which Debian's "
                                               "civetweb is built without): ",
                                               e.what()));
  }
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint on ", address, " reports no bound port"));
  }
  exposer->RegisterCollectable(registry);
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(exposer), ports.front()));
}

}  // namespace gphkv::server
