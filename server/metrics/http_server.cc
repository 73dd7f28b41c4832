#include "server/metrics/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gphkv::metrics {
namespace {

// Bounds on one request, so a slow or hostile peer cannot hold the thread.
constexpr int kPollMs = 200;
constexpr int kRequestTimeoutMs = 5000;
constexpr size_t kMaxRequestBytes = 16 * 1024;

void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

std::string response(int code, const char* reason, const std::string& content_type,
                     const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", code, " ", reason, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

HttpServer::HttpServer(std::function<std::string()> body) : body_(std::move(body)) {}

HttpServer::~HttpServer() { stop(); }

absl::StatusOr<int> HttpServer::start(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "' is not host:port with a port in 0..65535"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "': ", ::gai_strerror(rc)));
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
    const int err = errno;
    ::freeaddrinfo(res);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen on metrics address '", address, "': ", std::strerror(err)));
  }
  ::freeaddrinfo(res);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  stopping_ = false;
  thread_ = std::thread([this] { serve(); });
  return bound_port;
}

void HttpServer::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void HttpServer::serve() {
  // Poll with a timeout so stop() is noticed without closing the fd under us.
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    handle(fd);
    ::close(fd);
  }
}

void HttpServer::handle(int fd) {
  std::string req;
  char buf[2048];
  int waited_ms = 0;
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < kMaxRequestBytes) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, kPollMs);
    if (r == 0) {
      waited_ms += kPollMs;
      if (waited_ms >= kRequestTimeoutMs || stopping_) return;
      continue;
    }
    if (r < 0) return;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
  }
  const size_t line_end = req.find("\r\n");
  const std::string line = req.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    write_all(fd, response(400, "Bad Request", "text/plain", "bad request line\n"));
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  if (path != "/metrics") {
    write_all(fd, response(404, "Not Found", "text/plain", "not found; metrics are at /metrics\n"));
  } else if (method != "GET" && method != "HEAD") {
    write_all(fd, response(405, "Method Not Allowed", "text/plain", "use GET\n"));
  } else {
    std::string page = response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body_());
    if (method == "HEAD") page.resize(page.find("\r\n\r\n") + 4);
    write_all(fd, page);
  }
}

}  // namespace gphkv::metrics
