// memcached's text protocol on a port of its own (--memcached_address,
// issue 28): one libevent loop on a thread of its own accepts connections
// and runs them (connection.h); their gets, sets and deletes go to the same
// Intake as gRPC's calls, so both protocols share batches and per-key order.
// libevent is what memcached itself runs on (Debian's libevent-dev).
//
// One loop thread: the front end parses, hashes keys and copies bytes; the
// replies are formatted on the threads that answer the calls. More loops
// (a thread per core group, as memcached's -t) are the next step once
// measured. docs/memcached.md.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "server/intake.h"
#include "server/memcache/connection.h"

struct event;
struct sockaddr;
struct event_base;
struct evconnlistener;

namespace gphkv::server::memcache {

// The memcached release whose text protocol the port speaks, first in its
// `version` answer (then "gphkv-<version>"): clients pick features by it, and
// libmemcached refuses a server whose major version is 0, as gphkv's is.
inline constexpr std::string_view kProtocolVersion = "1.6.0";

struct ListenerOptions {
  std::string address;  // HOST:PORT; port 0 picks one
  // Past this many open connections a new one is told "ERROR Too many open
  // connections" and closed, as memcached does (its -c, 1024 by default).
  uint32_t max_connections = 1024;
  ConnectionLimits connection;
  std::string version;  // what `version` answers: kProtocolVersion, then ours
};

class Listener final : public ConnectionHost {
 public:
  // Binds, listens and starts the loop thread. `intake` outlives the
  // listener, and every call the listener queued is answered before the
  // listener is destroyed (the server stops its partitions first).
  static absl::StatusOr<std::unique_ptr<Listener>> start(const Intake* intake, ListenerOptions options);
  ~Listener() override;

  int port() const { return port_; }

  // Accepts no more connections and reads no more commands; waits up to
  // `grace` for the commands already read to be answered and their replies
  // written, then closes every connection and stops the loop. Idempotent.
  void stop(std::chrono::milliseconds grace);

  // ConnectionHost.
  const Intake& intake() const override { return *intake_; }
  const ConnectionLimits& limits() const override { return options_.connection; }
  std::string_view version() const override { return options_.version; }
  void append_stats(std::string* out) const override;
  void count_command(CommandKind kind, size_t keys) override;
  void post_answer(std::shared_ptr<Connection> connection, void* slot) override;
  void closed(Connection* connection) override;

 private:
  Listener(const Intake* intake, ListenerOptions options);

  static void on_accept(evconnlistener* listener, int fd, sockaddr* address, int length, void* self);
  static void on_inbox(int, short, void* self);
  static void on_stop(int, short, void* self);
  void accept(int fd);
  void close_all();

  const Intake* intake_;
  const ListenerOptions options_;
  const std::chrono::steady_clock::time_point started_;
  event_base* base_ = nullptr;
  evconnlistener* listener_ = nullptr;
  event* inbox_event_ = nullptr;
  event* stop_event_ = nullptr;
  std::thread thread_;
  int port_ = 0;

  // Answers posted from the threads that answered calls, for the loop.
  struct Answer {
    std::shared_ptr<Connection> connection;
    void* slot;
  };
  std::mutex inbox_mu_;
  std::vector<Answer> inbox_;  // under inbox_mu_

  // Loop thread only (and stop(), once the loop has ended).
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
  bool stopping_ = false;

  // stop() waits on these for the last connection to close.
  std::mutex open_mu_;
  std::condition_variable all_closed_;
  size_t open_ = 0;  // under open_mu_
  bool stopped_ = false;

  // For stats.
  std::atomic<uint64_t> total_connections_{0};
  std::atomic<uint64_t> rejected_connections_{0};
  std::atomic<uint64_t> get_keys_{0};
  std::atomic<uint64_t> sets_{0};
  std::atomic<uint64_t> deletes_{0};
};

}  // namespace gphkv::server::memcache
