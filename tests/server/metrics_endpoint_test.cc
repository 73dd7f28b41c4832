// The /metrics endpoint (prometheus-cpp's Exposer): the bound port, what it
// serves, and refusals that say which address was wrong.
#include "server/metrics_endpoint.h"

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "tests/server/http_get.h"
#include "tests/server/test_server.h"

namespace gphkv::server {
namespace {

using gphkv::testing::http_get;
using gphkv::testing::http_request;

std::shared_ptr<prometheus::Registry> one_counter() {
  auto r = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter().Name("x_total").Help("X.").Register(*r).Add({{"op", "get"}}).Increment(2);
  return r;
}

TEST(MetricsEndpoint, ServesTheRegistryOnThePortItPicked) {
  auto registry = one_counter();
  auto endpoint = MetricsEndpoint::start("127.0.0.1:0", registry);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  ASSERT_GT(port, 0);
  auto page = http_get(port, "/metrics");
  ASSERT_TRUE(page.has_value());
  EXPECT_NE(page->find("# TYPE x_total counter\nx_total{op=\"get\"} 2\n"), std::string::npos) << *page;
  EXPECT_EQ(http_request(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  endpoint->reset();
  EXPECT_EQ(http_request(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), "") << "stops serving when destroyed";
}

TEST(MetricsEndpoint, AnEmptyHostIsEveryInterface) {
  auto endpoint = MetricsEndpoint::start(":0", one_counter());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_TRUE(http_get((*endpoint)->port(), "/metrics").has_value());
}

TEST(MetricsEndpoint, RefusesWhatIsNotHostPort) {
  for (const char* address : {"no-port", "127.0.0.1:65536", "127.0.0.1:x", "127.0.0.1:-1"}) {
    auto endpoint = MetricsEndpoint::start(address, one_counter());
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_NE(endpoint.status().message().find(address), std::string::npos) << endpoint.status();
  }
}

TEST(MetricsEndpoint, RefusesAnAddressInUse) {
  auto registry = one_counter();
  auto first = MetricsEndpoint::start("127.0.0.1:0", registry);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsEndpoint::start(taken, registry);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(taken), std::string::npos) << second.status();
}

TEST(MetricsEndpoint, ServerStartFailsWhenTheMetricsAddressIsTaken) {
  auto registry = one_counter();
  auto taken = MetricsEndpoint::start("127.0.0.1:0", registry);
  ASSERT_TRUE(taken.ok()) << taken.status();
  testing::keep_grpc_initialized();
  ServerOptions o = testing::test_options();
  o.metrics_address = "127.0.0.1:" + std::to_string((*taken)->port());
  auto server = Server::start(o);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(server.status().message().find("--metrics_address=" + o.metrics_address), std::string::npos)
      << server.status();
}

}  // namespace
}  // namespace gphkv::server
