#include "loadgen/memcached_target.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gphkv::loadgen {
namespace {

absl::StatusOr<int> ConnectTcp(const std::string& address, bool nonblocking) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("want host:port, got ", address));
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("resolving ", address, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string why;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      why = strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("connecting to ", address, ": ", why));
  int one = 1;
  // Small pipelined requests must leave now, not after Nagle's 40 ms.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (nonblocking) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// A call whose answers the connection is still reading.
struct Pending {
  uint64_t tag;
  OpType type;
  uint32_t expected;  // answer lines still due (puts, deletes)
  OpResult result;
};

struct Connection {
  int fd = -1;
  bool broken = false;
  std::string out;
  size_t out_done = 0;
  std::string in;
  size_t in_done = 0;
  std::deque<Pending> pending;
};

class MemcachedSession : public Session {
 public:
  MemcachedSession(std::vector<int> fds, const ValuePool* values, bool inspect_reads)
      : values_(values), inspect_(inspect_reads) {
    conns_.resize(fds.size());
    for (size_t i = 0; i < fds.size(); ++i) conns_[i].fd = fds[i];
  }
  ~MemcachedSession() override {
    for (auto& c : conns_) close(c.fd);
  }
  size_t connections() const override { return conns_.size(); }

  void Start(size_t connection, const Op& op, uint64_t tag) override {
    Connection& c = conns_[connection % conns_.size()];
    Pending p{tag, op.type, 0, {}};
    switch (op.type) {
      case OpType::kGet:
        c.out += "get";
        for (uint64_t k : op.keys) absl::StrAppend(&c.out, " ", k);
        c.out += "\r\n";
        break;
      case OpType::kPut:
        for (size_t i = 0; i < op.keys.size(); ++i) {
          absl::StrAppend(&c.out, "set ", op.keys[i], " 0 0 ", op.value_sizes[i], "\r\n");
          values_->AppendValue(op.keys[i], op.value_sizes[i], op.version, &c.out);
          c.out += "\r\n";
          p.result.value_bytes += op.value_sizes[i];
        }
        p.expected = static_cast<uint32_t>(op.keys.size());
        break;
      case OpType::kDelete:
        for (uint64_t k : op.keys) absl::StrAppend(&c.out, "delete ", k, "\r\n");
        p.expected = static_cast<uint32_t>(op.keys.size());
        break;
    }
    c.pending.push_back(std::move(p));
    if (c.broken) {
      FailAll(c, "CONNECTION_CLOSED");
      return;
    }
    Flush(c);
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    done_ = done;
    done_ctx_ = ctx;
    delivered_ = 0;
    DeliverFailed();
    std::vector<pollfd> fds(conns_.size());
    while (delivered_ == 0) {
      for (size_t i = 0; i < conns_.size(); ++i) {
        Connection& c = conns_[i];
        fds[i].fd = c.broken ? -1 : c.fd;
        fds[i].events =
            static_cast<short>((c.pending.empty() ? 0 : POLLIN) | (c.out.size() > c.out_done ? POLLOUT : 0));
        fds[i].revents = 0;
      }
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count();
      timespec ts{};
      if (left > 0) {
        ts.tv_sec = left / 1'000'000'000;
        ts.tv_nsec = left % 1'000'000'000;
      }
      const int n = ppoll(fds.data(), fds.size(), &ts, nullptr);
      if (n < 0 && errno != EINTR) break;
      for (size_t i = 0; i < conns_.size() && n > 0; ++i) {
        if (fds[i].revents & POLLOUT) Flush(conns_[i]);
        if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) Read(conns_[i]);
      }
      DeliverFailed();
      if (left <= 0) break;
    }
    return delivered_;
  }

 private:
  void Deliver(uint64_t tag, const OpResult& r) {
    done_(done_ctx_, tag, r);
    ++delivered_;
  }
  // Failures found outside Poll (in Start) wait here for the next Poll.
  void DeliverFailed() {
    while (!failed_.empty() && done_ != nullptr) {
      auto [tag, r] = std::move(failed_.front());
      failed_.pop_front();
      Deliver(tag, r);
    }
  }

  void FailAll(Connection& c, const char* why) {
    c.broken = true;
    for (Pending& p : c.pending) {
      p.result.ok = false;
      p.result.error = why;
      failed_.emplace_back(p.tag, p.result);
    }
    c.pending.clear();
    c.out.clear();
    c.out_done = 0;
  }

  void Flush(Connection& c) {
    while (c.out_done < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.out_done, c.out.size() - c.out_done, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_done += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        FailAll(c, "CONNECTION_CLOSED");
        return;
      }
    }
    c.out.clear();
    c.out_done = 0;
  }

  void Read(Connection& c) {
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof(buf)) break;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        Parse(c);
        FailAll(c, "CONNECTION_CLOSED");
        return;
      }
    }
    Parse(c);
  }

  // Consumes every complete answer unit at the front of c.in.
  void Parse(Connection& c) {
    while (!c.pending.empty()) {
      const size_t eol = c.in.find("\r\n", c.in_done);
      if (eol == std::string::npos) break;
      absl::string_view line(c.in.data() + c.in_done, eol - c.in_done);
      Pending& p = c.pending.front();
      bool finished = false;
      if (p.type == OpType::kGet && absl::StartsWith(line, "VALUE ")) {
        // VALUE <key> <flags> <bytes> [<cas>]
        std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
        uint64_t bytes = 0;
        if (f.size() < 4 || !absl::SimpleAtoi(f[3], &bytes)) {
          FailAll(c, "PROTOCOL_ERROR");
          return;
        }
        if (c.in.size() < eol + 2 + bytes + 2) break;  // the data block is not all here yet
        ++p.result.found;
        p.result.value_bytes += bytes;
        uint64_t key = 0;
        if (inspect_ && absl::SimpleAtoi(f[1], &key)) {
          p.result.seen.push_back(values_->Inspect(key, absl::string_view(c.in).substr(eol + 2, bytes)));
        }
        c.in_done = eol + 2 + bytes + 2;
        continue;
      }
      c.in_done = eol + 2;
      if (line == "END" && p.type == OpType::kGet) {
        p.result.ok = true;
        finished = true;
      } else if (absl::StartsWith(line, "ERROR") || absl::StartsWith(line, "CLIENT_ERROR") ||
                 absl::StartsWith(line, "SERVER_ERROR")) {
        // An error answers one command: a get is then over, a batch of
        // sets or deletes keeps counting its remaining answers.
        if (p.result.error.empty()) p.result.error = std::string(line.substr(0, line.find(' ')));
        finished = p.type == OpType::kGet || --p.expected == 0;
      } else if (p.type == OpType::kPut && (line == "STORED" || line == "NOT_STORED")) {
        p.result.found += line == "STORED";
        finished = --p.expected == 0;
      } else if (p.type == OpType::kDelete && (line == "DELETED" || line == "NOT_FOUND")) {
        p.result.found += line == "DELETED";
        finished = --p.expected == 0;
      } else {
        FailAll(c, "PROTOCOL_ERROR");
        return;
      }
      if (finished) {
        p.result.ok = p.result.error.empty();
        OpResult r = std::move(p.result);
        const uint64_t tag = p.tag;
        c.pending.pop_front();
        Deliver(tag, r);
      }
    }
    // Keep the buffer from growing: drop what was consumed once it is most of it.
    if (c.in_done > 0 && (c.in_done == c.in.size() || c.in_done > (1 << 20))) {
      c.in.erase(0, c.in_done);
      c.in_done = 0;
    }
  }

  const ValuePool* values_;
  const bool inspect_;  // gets read their values back (OpResult::seen)
  std::vector<Connection> conns_;
  std::deque<std::pair<uint64_t, OpResult>> failed_;
  DoneFn done_ = nullptr;
  void* done_ctx_ = nullptr;
  int delivered_ = 0;
};

class MemcachedTarget : public Target {
 public:
  MemcachedTarget(std::string address, const ValuePool* values, bool inspect_reads)
      : address_(std::move(address)), values_(values), inspect_(inspect_reads) {}
  std::string name() const override { return "memcached"; }

  absl::Status WaitReady(Clock::time_point deadline) override {
    absl::Status last = absl::UnavailableError("not tried");
    do {  // one attempt at least, then until the deadline
      auto fd = ConnectTcp(address_, false);
      if (fd.ok()) {
        timeval tv{1, 0};
        setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        const char kVersion[] = "version\r\n";
        char buf[256];
        ssize_t n = -1;
        if (send(*fd, kVersion, sizeof(kVersion) - 1, MSG_NOSIGNAL) > 0) n = recv(*fd, buf, sizeof(buf), 0);
        close(*fd);
        if (n > 8 && std::strncmp(buf, "VERSION ", 8) == 0) return absl::OkStatus();
        last = absl::UnavailableError("no VERSION answer");
      } else {
        last = fd.status();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (Clock::now() < deadline);
    return absl::UnavailableError(absl::StrCat("memcached at ", address_, " not ready: ", last.message()));
  }

  absl::StatusOr<std::unique_ptr<Session>> Connect(size_t connections) override {
    std::vector<int> fds;
    for (size_t i = 0; i < connections; ++i) {
      auto fd = ConnectTcp(address_, true);
      if (!fd.ok()) {
        for (int f : fds) close(f);
        return fd.status();
      }
      fds.push_back(*fd);
    }
    return std::unique_ptr<Session>(new MemcachedSession(std::move(fds), values_, inspect_));
  }

 private:
  std::string address_;
  const ValuePool* values_;
  const bool inspect_;
};

}  // namespace

std::unique_ptr<Target> MakeMemcachedTarget(const std::string& address, const ValuePool* values, bool inspect_reads) {
  return std::make_unique<MemcachedTarget>(address, values, inspect_reads);
}

}  // namespace gphkv::loadgen
