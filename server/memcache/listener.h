// memcached's text protocol on a port of its own (--memcached_address,
// issue 28): an acceptor thread (a libevent loop of its own, as memcached's
// dispatcher) hands each accepted connection to the next of N event loops
// (loop.h) in turn, each on a thread of its own; their gets, sets and deletes go to a CallSink (the same Intake as
// gRPC's calls, so both protocols share batches and per-key order). libevent
// is what memcached itself runs on (Debian's libevent-dev), and this is
// memcached's own thread model (-t): a connection stays on the loop it was
// given. One acceptor handing sockets round robin, rather than a listener
// per loop with SO_REUSEPORT, because the kernel's hash of the 4-tuple
// spreads a few dozen connections unevenly (a loop with twice its share
// bounds the whole port), and because the connection limit is then counted
// where connections are accepted. docs/memcached.md, "Threads".
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/intake.h"
#include "server/memcache/call_sink.h"
#include "server/memcache/connection.h"
#include "server/memcache/loop.h"

struct sockaddr;
struct event_base;
struct evconnlistener;

namespace gphkv::server::memcache {

// The memcached release whose text protocol the port speaks, first in its
// `version` answer (then "gphkv-<version>"): clients pick features by it, and
// libmemcached refuses a server whose major version is 0, as gphkv's is.
inline constexpr std::string_view kProtocolVersion = "1.6.0";

// What `stats` says of the store behind the listener, under memcached's names.
struct StoreTotals {
  uint64_t items = 0;        // curr_items
  uint64_t limit_bytes = 0;  // limit_maxbytes: --memory
  uint64_t evictions = 0;    // evictions: items evicted at the cap (--eviction=lru)
  uint64_t swept = 0;        // crawler_reclaimed: expired or flushed items the sweep freed
};

// The port's counters, summed over the loops (the Prometheus series of
// server/memcached_metrics.h).
struct PortCounters {
  uint64_t open_connections = 0;
  uint64_t accepted_connections = 0;
  uint64_t rejected_connections = 0;
  std::array<uint64_t, kCommandKinds> commands{};  // parsed, by CommandKind
  uint64_t get_keys = 0;                           // keys of get, gets, gat, gats and mg (memcached's cmd_get)
  uint64_t store_calls = 0;                        // calls queued to the store: a pack of gets is one
  uint64_t packed_gets = 0;                        // gets that went in packs
  uint64_t spun_answers = 0;                       // answers taken while spinning for them
};

struct ListenerOptions {
  std::string address;  // HOST:PORT; port 0 picks one
  // Past this many open connections a new one is told "ERROR Too many open
  // connections" and closed, as memcached does (its -c, 1024 by default).
  uint32_t max_connections = 1024;
  // Event loops, each on a thread of its own (memcached's -t, 4 by default).
  uint32_t threads = 4;
  // How long a loop whose connections have calls in the store spins,
  // watching its inbox, before it sleeps in epoll: an answer posted
  // meanwhile is taken at once, without the eventfd wake-up of a sleeping
  // thread (tens of microseconds at light load). It costs up to this much of
  // a core per wait for answers. 0: sleep at once.
  std::chrono::microseconds answer_spin{0};
  // A plain get of at most this many keys joins its loop's pack of gets, one
  // call a round of the loop's events (get_pack.h; its comment says how the
  // server picks the bound); 0: every get is a call of its own.
  uint32_t pack_max_keys = 0;
  ConnectionLimits connection;
  std::string version;  // what `version` answers: kProtocolVersion, then ours
  // The store's side of `stats` (curr_items, limit_maxbytes, evictions,
  // crawler_reclaimed); null: those lines are left out.
  std::function<StoreTotals()> store_totals;
  // The store's clock, unix seconds (StoreOptions::unix_clock), which mg's
  // t counts from; null: the system clock, the store's default.
  std::function<uint32_t()> unix_clock;
};

class Listener final {
 public:
  // Binds, listens and starts the loop threads. `sink` outlives the
  // listener, and every call the listener queued is answered before the
  // listener is destroyed (the server stops its partitions first).
  static absl::StatusOr<std::unique_ptr<Listener>> start(const CallSink* sink, ListenerOptions options);
  // The same over the server's intake.
  static absl::StatusOr<std::unique_ptr<Listener>> start(const Intake* intake, ListenerOptions options);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }

  // Accepts no more connections and reads no more commands; waits up to
  // `grace` for the commands already read to be answered and their replies
  // written, then closes every connection and stops the loops. Idempotent.
  void stop(std::chrono::milliseconds grace);

  // Open connections, on every loop.
  size_t open_connections() const;
  // Answers the loops took while spinning for them (answer_spin), on every loop.
  uint64_t spun_answers() const;
  // Every counter, summed over the loops; any thread.
  PortCounters counters() const;

  // For the loops.
  const CallSink& sink() const { return *sink_; }
  const ListenerOptions& options() const { return options_; }
  // "STAT ..." lines of the stats command, summed over the loops.
  void append_stats(std::string* out) const;
  // A connection counted open closed, or a socket handed to a loop was
  // dropped; any loop thread.
  void connection_gone();

 private:
  Listener(const CallSink* sink, ListenerOptions options);

  static void on_accept(evconnlistener* listener, int fd, sockaddr* address, int length, void* self);
  void accept(int fd);

  std::unique_ptr<CallSink> owned_sink_;  // start(const Intake*)
  const CallSink* sink_;
  const ListenerOptions options_;
  const std::chrono::steady_clock::time_point started_;
  std::vector<std::unique_ptr<Loop>> loops_;
  // The acceptor: its own base and thread, so a busy loop delays no accept.
  event_base* accept_base_ = nullptr;
  evconnlistener* listener_ = nullptr;
  std::thread accept_thread_;
  int port_ = 0;
  bool stopped_ = false;

  // The acceptor thread's: the loop the next connection goes to.
  size_t next_loop_ = 0;
  std::atomic<bool> accepting_{true};

  // Connections accepted and not yet closed, on every loop: the limit is
  // checked against it, and stop() waits on it.
  mutable std::mutex open_mu_;
  std::condition_variable all_closed_;
  size_t open_ = 0;  // under open_mu_

  std::atomic<uint64_t> total_connections_{0};
  std::atomic<uint64_t> rejected_connections_{0};
};

}  // namespace gphkv::server::memcache
