#include <string>

#include "gtest/gtest.h"
#include "server/metrics/http_server.h"
#include "server/metrics/registry.h"
#include "server/byte_size.h"
#include "tests/server/http_get.h"

namespace gphkv::metrics {
namespace {

using gphkv::testing::http_request;

TEST(Registry, RendersTheExpositionFormat) {
  Registry r;
  auto* c = r.counter("test_requests_total", "Requests.");
  c->with({{"op", "get"}, {"code", "OK"}})->inc(3);
  c->with({{"op", "put"}, {"code", "INVALID_ARGUMENT"}})->inc();
  r.gauge("test_load", "Load \"factor\".")->with({})->set(0.5);
  auto* h = r.histogram("test_seconds", "Latency.", {0.001, 0.01})->with({{"op", "get"}});
  h->observe(0.0005);
  h->observe(0.005);
  h->observe(5);
  const std::string text = r.render();
  EXPECT_NE(text.find("# TYPE test_requests_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_requests_total{op=\"get\",code=\"OK\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_requests_total{op=\"put\",code=\"INVALID_ARGUMENT\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE test_load gauge\ntest_load 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_seconds_bucket{op=\"get\",le=\"0.001\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_seconds_bucket{op=\"get\",le=\"0.01\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_seconds_count{op=\"get\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_seconds_sum{op=\"get\"} 5.0055\n"), std::string::npos) << text;
}

TEST(Registry, EscapesLabelValues) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(HttpServer, ServesMetricsAnd404) {
  HttpServer server([] { return std::string("x_total 1\n"); });
  auto port = server.start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string ok = http_request(*port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("\r\n\r\nx_total 1\n"), std::string::npos);
  EXPECT_EQ(http_request(*port, "GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(http_request(*port, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  server.stop();
  EXPECT_EQ(http_request(*port, "GET /metrics HTTP/1.1\r\n\r\n"), "");
}

TEST(HttpServer, RefusesABadAddress) {
  HttpServer server([] { return std::string(); });
  EXPECT_EQ(server.start("no-port").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ByteSize, ParsesUnits) {
  uint64_t v = 0;
  std::string err;
  ASSERT_TRUE(server::parse_byte_size("512MiB", &v, &err));
  EXPECT_EQ(v, 512ull << 20);
  ASSERT_TRUE(server::parse_byte_size("4GiB", &v, &err));
  EXPECT_EQ(v, 4ull << 30);
  ASSERT_TRUE(server::parse_byte_size("1000", &v, &err));
  EXPECT_EQ(v, 1000u);
  ASSERT_TRUE(server::parse_byte_size("2GB", &v, &err));
  EXPECT_EQ(v, 2000000000u);
  EXPECT_FALSE(server::parse_byte_size("12 parsecs", &v, &err));
  EXPECT_NE(err.find("parsecs"), std::string::npos);
  EXPECT_FALSE(server::parse_byte_size("MiB", &v, &err));
  EXPECT_EQ(server::format_byte_size(1ull << 30), "1GiB");
}

}  // namespace
}  // namespace gphkv::metrics
