// A plain TCP client for the memcached port's tests: sends bytes, reads
// exactly the bytes a reply should be (with a deadline), or sees the server
// close. No memcached client library stands between the test and the wire.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>

namespace gphkv::testing {

class MemcacheSocket {
 public:
  explicit MemcacheSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    const int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~MemcacheSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemcacheSocket(const MemcacheSocket&) = delete;
  MemcacheSocket& operator=(const MemcacheSocket&) = delete;

  bool connected() const { return fd_ >= 0; }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until `n` bytes came, the peer closed, or the deadline passed;
  // returns what came.
  std::string read(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out.size() < n) {
      if (!wait_readable(deadline)) break;
      char buf[65536];
      const ssize_t got = ::recv(fd_, buf, std::min(sizeof(buf), n - out.size()), 0);
      if (got <= 0) break;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }

  // Sends `request` and reads as many bytes as `expected` holds.
  std::string round_trip(std::string_view request, std::string_view expected) {
    if (!send(request)) return "<send failed>";
    return read(expected.size());
  }

  // Whatever arrives within `wait` (for "nothing more was sent").
  std::string read_available(std::chrono::milliseconds wait = std::chrono::milliseconds(200)) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (wait_readable(deadline)) {
      char buf[65536];
      const ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
      if (got <= 0) break;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }

  // True when the server closed the connection within `timeout` (any bytes
  // before the close are dropped).
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (wait_readable(deadline)) {
      char buf[4096];
      const ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
      if (got == 0) return true;
      if (got < 0) return errno == ECONNRESET;
    }
    return false;
  }

 private:
  bool wait_readable(std::chrono::steady_clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
  }

  int fd_ = -1;
};

}  // namespace gphkv::testing
