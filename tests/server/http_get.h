// Blocking HTTP/1.1 on 127.0.0.1 for tests: a raw request, and a GET that
// returns the body of a 200 answer or an empty optional.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace gphkv::testing {

// Sends `request` as-is to 127.0.0.1:port and returns the whole response
// ("" when nothing answers).
inline std::string http_request(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{5, 0};  // bounded: a stuck peer fails the request, not the test run
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

inline std::optional<std::string> http_get(int port, const std::string& path) {
  const std::string out =
      http_request(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (out.rfind("HTTP/1.1 200", 0) != 0 && out.rfind("HTTP/1.0 200", 0) != 0) return std::nullopt;
  const size_t body = out.find("\r\n\r\n");
  if (body == std::string::npos) return std::nullopt;
  std::string b = out.substr(body + 4);
  // Prometheus answers chunked; undo the chunk framing.
  if (out.substr(0, body).find("Transfer-Encoding: chunked") != std::string::npos) {
    std::string plain;
    size_t pos = 0;
    while (pos < b.size()) {
      const size_t eol = b.find("\r\n", pos);
      if (eol == std::string::npos) break;
      const size_t len = std::stoul(b.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) break;
      plain += b.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    b = plain;
  }
  return b;
}

// A port that was free a moment ago (the kernel's pick for port 0).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace gphkv::testing
