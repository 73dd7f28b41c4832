#include "loadgen/server_stages.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gphkv::loadgen {
namespace {

constexpr char kStage[] = "gphkv_call_stage_seconds_";
constexpr char kBatchStage[] = "gphkv_get_stage_seconds_";
constexpr char kQueue[] = "gphkv_queue_wait_seconds_";

// "NAME{stage="X"} V" or "NAME V": records V under the stage as its sum or count.
void Take(const std::string& line, StageSample* out) {
  std::string stage, rest;
  // A call's stages by name; a pipelined get batch's as "batch_NAME".
  const bool batch = line.rfind(kBatchStage, 0) == 0;
  if (batch || line.rfind(kStage, 0) == 0) {
    rest = line.substr(batch ? sizeof(kBatchStage) - 1 : sizeof(kStage) - 1);
    const size_t open = rest.find("{stage=\"");
    if (open == std::string::npos) return;
    const size_t close = rest.find("\"}", open);
    if (close == std::string::npos) return;
    stage = (batch ? "batch_" : "") + rest.substr(open + 8, close - open - 8);
    rest = rest.substr(0, open) + rest.substr(close + 2);
  } else if (line.rfind(kQueue, 0) == 0) {
    stage = "queue";
    rest = line.substr(sizeof(kQueue) - 1);
  } else {
    return;
  }
  const size_t space = rest.find(' ');
  if (space == std::string::npos) return;
  const std::string which = rest.substr(0, space);
  double v = 0;
  if (!absl::SimpleAtod(rest.substr(space + 1), &v)) return;
  if (which == "sum") out->sum_count[stage].first = v;
  if (which == "count") out->sum_count[stage].second = v;
}

}  // namespace

StageSample ParseStageSample(const std::string& page) {
  StageSample s;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) Take(line, &s);
  return s;
}

std::map<std::string, StageMean> StagesBetween(const StageSample& from, const StageSample& to) {
  std::map<std::string, StageMean> out;
  for (const auto& [stage, sc] : to.sum_count) {
    std::pair<double, double> before{0, 0};
    if (auto it = from.sum_count.find(stage); it != from.sum_count.end()) before = it->second;
    StageMean m;
    m.calls = sc.second - before.second;
    m.mean_s = m.calls > 0 ? (sc.first - before.first) / m.calls : 0;
    out[stage] = m;
  }
  return out;
}

absl::StatusOr<std::string> ScrapeMetrics(const std::string& host_port, double timeout_s) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("not HOST:PORT: ", host_port));
  const std::string host = host_port.substr(0, colon), port = host_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int e = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); e != 0) {
    return absl::UnavailableError(absl::StrCat("resolving ", host_port, ": ", gai_strerror(e)));
  }
  const int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  const bool connected = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  freeaddrinfo(res);
  if (!connected) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("connecting to ", host_port));
  }
  const std::string request = absl::StrCat("GET /metrics HTTP/1.0\r\nHost: ", host_port, "\r\n\r\n");
  std::string reply;
  bool ok = send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (ok) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      ok = false;
      break;
    }
    char buf[65536];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) ok = false;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (!ok) return absl::DeadlineExceededError(absl::StrCat("scraping ", host_port, "/metrics"));
  const size_t body = reply.find("\r\n\r\n");
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.find(" 200 ") > reply.find("\r\n") || body == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("scraping ", host_port, "/metrics: ", reply.substr(0, reply.find("\r\n"))));
  }
  return reply.substr(body + 4);
}

}  // namespace gphkv::loadgen
