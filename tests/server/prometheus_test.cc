// Metrics: the /metrics page moves with traffic, and a real Prometheus
// (Debian's `prometheus` package) scrapes it and answers a query for a
// counter this test's own puts moved.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "tests/server/http_get.h"
#include "tests/server/test_server.h"

extern char** environ;

namespace gphkv {
namespace {

using testing::connect;
using testing::free_port;
using testing::http_get;
using testing::metrics_scraped_options;
using testing::start_server;

TEST(Metrics, PageReportsTrafficTableAndBuildInfo) {
  auto server = start_server(metrics_scraped_options());
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  ASSERT_TRUE(client->Put(std::vector<uint64_t>{1, 2, 3}, std::vector<std::string_view>{"a", "b", "c"}).ok());
  ASSERT_TRUE(client->Get(std::vector<uint64_t>{1, 9}).ok());
  {
    // A get with no keys, past the client (which refuses it before sending): the server counts it refused.
    grpc::ClientContext ctx;
    v1::GetResponse resp;
    ASSERT_EQ(client->stub()->Get(&ctx, v1::GetRequest(), &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  auto page = http_get(server->metrics_port(), "/metrics");
  ASSERT_TRUE(page.has_value());
  for (const char* line : {
           "gphkv_requests_total{code=\"OK\",op=\"put\"} 1\n",
           "gphkv_requests_total{code=\"OK\",op=\"get\"} 1\n",
           "gphkv_requests_total{code=\"INVALID_ARGUMENT\",op=\"get\"} 1\n",
           "gphkv_keys_total{code=\"OK\",op=\"put\"} 3\n",
           "gphkv_keys_total{code=\"OK\",op=\"get\"} 2\n",
           "gphkv_table_keys 3\n",
           "gphkv_collided_keys 0\n",
           "gphkv_memory_limit_bytes 268435456\n",
           "gphkv_request_duration_seconds_count{op=\"put\"} 1\n",
           "gphkv_rebuilds_total{cause=\"load_factor\"} 0\n",
           "gphkv_insert_relocations_total 0\n",
           "gphkv_items_swept_total 0\n",
           "# TYPE gphkv_batch_keys histogram\n",
           "# TYPE gphkv_batch_calls histogram\n",
           "# TYPE gphkv_queue_wait_seconds histogram\n",
           "# TYPE gphkv_device_seconds histogram\n",
           "# TYPE gphkv_table_load_factor gauge\n",
           "# TYPE gphkv_table_bytes gauge\n",
           "# TYPE gphkv_value_heap_bytes gauge\n",
       }) {
    EXPECT_NE(page->find(line), std::string::npos) << "missing: " << line;
  }
  EXPECT_TRUE(
      std::regex_search(*page, std::regex(R"(gphkv_build_info\{backend="cpu",device="[^"]*",version="[^"]+"\} 1)")))
      << *page;
}

// Every call the executor answers passes each stage once (server/call_stages.h).
TEST(Metrics, EveryAnsweredCallIsTimedInEachStage) {
  auto server = start_server(metrics_scraped_options());
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  constexpr int kCalls = 5;
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t k = 100 + i;
    ASSERT_TRUE(client->Put({&k, 1}, std::vector<std::string_view>{"x"}).ok());
  }
  ASSERT_FALSE(client->Get(std::vector<uint64_t>{}).ok());  // refused by the intake: no stage
  // The stages are added once the answers are out: wait for the last one.
  std::string page;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const std::string want = "gphkv_call_stage_seconds_count{stage=\"respond\"} " + std::to_string(kCalls) + "\n";
  while (page.find(want) == std::string::npos && std::chrono::steady_clock::now() < until) {
    page = http_get(server->metrics_port(), "/metrics").value_or("");
    if (page.find(want) == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const char* stage : {"intake", "execute", "answer_wait", "respond"}) {
    const std::string line =
        std::string("gphkv_call_stage_seconds_count{stage=\"") + stage + "\"} " + std::to_string(kCalls) + "\n";
    EXPECT_NE(page.find(line), std::string::npos) << "missing: " << line << page;
  }
}

// A child process killed (TERM, then KILL after a bound) when this goes out of scope.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0) pid_ = -1;
  }
  ~Child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

TEST(Metrics, PrometheusScrapesTheServer) {
  const char* prometheus = "/usr/bin/prometheus";
  ASSERT_TRUE(std::filesystem::exists(prometheus))
      << "Debian's prometheus package is required (scripts/deps/service.txt; scripts/install-deps.sh)";
  auto server = start_server(metrics_scraped_options());
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  constexpr int kPuts = 7;
  for (int i = 0; i < kPuts; ++i) {
    const uint64_t k = 100 + i;
    ASSERT_TRUE(client->Put({&k, 1}, std::vector<std::string_view>{"x"}).ok());
  }

  char tmpl[] = "/tmp/gphkv-prom-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir(tmpl);
  const int web_port = free_port();
  {
    std::ofstream cfg(dir / "prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: gphkv\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << server->metrics_port() << "']\n";
  }
  bool answered = false;
  std::string last;
  {
    Child prom({prometheus, "--config.file=" + (dir / "prometheus.yml").string(),
                "--storage.tsdb.path=" + (dir / "data").string(),
                "--web.listen-address=127.0.0.1:" + std::to_string(web_port), "--log.level=warn"});
    ASSERT_GT(prom.pid(), 0);
    // Bounded wait: Prometheus starts, scrapes (every 1 s) and answers.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    const std::string query =
        "/api/v1/query?query=gphkv_requests_total%7Bop%3D%22put%22%2Ccode%3D%22OK%22%2Cjob%3D%22gphkv%22%7D";
    while (std::chrono::steady_clock::now() < until && prom.running()) {
      auto body = http_get(web_port, query);
      if (body) {
        last = *body;
        // {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[t,"7"]}]}}
        if (last.find("\"status\":\"success\"") != std::string::npos &&
            last.find("\"" + std::to_string(kPuts) + "\"]") != std::string::npos) {
          answered = true;
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    EXPECT_TRUE(prom.running() || answered) << "prometheus exited early";
  }
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(answered) << "Prometheus never reported gphkv_requests_total{op=\"put\",code=\"OK\"} = " << kPuts
                        << "; last answer: " << last;
}

}  // namespace
}  // namespace gphkv
