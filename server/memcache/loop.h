// One of the memcached listener's event loops: a libevent base on a thread
// of its own that runs the connections the acceptor hands it (round robin,
// listener.h) and the answers the store posts back to them. A connection
// lives on one loop from accept to close; nothing of it is touched by
// another loop, so the loops share no lock on the fast path (only the
// inbox's, between a loop and the threads that answer its calls).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "server/memcache/connection.h"

struct event;
struct event_base;

namespace gphkv::server::memcache {

class Listener;

class Loop final : public ConnectionHost {
 public:
  // Creates the base and its events; start() runs it.
  Loop(Listener* listener, size_t index);
  ~Loop() override;
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  absl::Status init();
  void start();
  event_base* base() const { return base_; }

  // Any thread: the loop opens a connection on the accepted socket (at once
  // on the loop's own thread). Counted open by the listener already.
  void adopt(int fd);
  // Any thread: read no more; answer and write what was read, then close.
  void begin_stop();
  // Breaks the loop and joins its thread.
  void break_and_join();
  // After break_and_join, on the stopping thread: closes what is still open
  // (connections, sockets not yet adopted) and runs libevent's finalizers.
  void close_all();
  // Before the base is freed: drops answers that came after the loop ended.
  void drop_inbox();

  // Commands counted on this loop (only its thread writes them).
  uint64_t get_keys() const { return get_keys_.load(std::memory_order_relaxed); }
  uint64_t sets() const { return sets_.load(std::memory_order_relaxed); }
  uint64_t deletes() const { return deletes_.load(std::memory_order_relaxed); }
  // Answers taken while spinning for them (answer_spin).
  uint64_t spun_answers() const { return spun_answers_.load(std::memory_order_relaxed); }
  // Commands parsed, by kind; calls queued to the sink (a pack is one); gets
  // that went in packs.
  uint64_t commands(CommandKind kind) const {
    return commands_[static_cast<size_t>(kind)].load(std::memory_order_relaxed);
  }
  uint64_t store_calls() const { return store_calls_.load(std::memory_order_relaxed); }
  uint64_t packed_gets() const { return packed_gets_.load(std::memory_order_relaxed); }

  // ConnectionHost.
  const CallSink& sink() const override;
  const ConnectionLimits& limits() const override;
  std::string_view version() const override;
  uint32_t unix_now() const override;
  void append_stats(std::string* out) const override;
  void count_parsed(CommandKind kind) override { bump(commands_[static_cast<size_t>(kind)], 1); }
  void count_command(CommandKind kind, size_t keys) override;
  void call_submitted() override {
    ++awaiting_;
    bump(store_calls_, 1);
  }
  size_t pack_max_keys() const override;
  uint64_t pack_get(const Call& get, PackedGet answer_to) override;
  void flush_gets(uint64_t generation) override;
  void post_answer(std::shared_ptr<Connection> connection, void* slot) override;
  void closed(Connection* connection) override;

 private:
  static void on_inbox(int, short, void* self);
  static void on_stop(int, short, void* self);
  void open_connection(int fd);
  // The thread's body: libevent's loop, and with answer_spin the spin for
  // answers between its rounds.
  void run();
  // With calls in the store: watches the inbox up to `spin` and takes what
  // was posted at once (true), or gives up (false: the round may sleep).
  bool spin_for_answers(std::chrono::microseconds spin);
  // Queues the pack of gets, and any that its answers (given inline by the
  // sink) gathered meanwhile, until none waits.
  void flush_all_gets();
  void submit_pack();
  // Any thread: a pack's replies are written; its gets are answered on the
  // loop thread (at once when called there).
  void post_pack(GetPack* pack);
  // Loop thread: answers each get of a pack whose replies are written, and
  // keeps the pack for reuse.
  void answer_pack(GetPack* pack);

  Listener* const listener_;
  const size_t index_;
  event_base* base_ = nullptr;
  event* inbox_event_ = nullptr;
  event* stop_event_ = nullptr;
  std::thread thread_;

  // Posted from other threads: answers of the store, and sockets from the
  // acceptor. The loop swaps them with the *_taken_ vectors, which keep
  // their capacity: no allocation per wake-up.
  struct Answer {
    std::shared_ptr<Connection> connection;
    void* slot;
  };
  std::mutex inbox_mu_;
  std::vector<Answer> answers_;  // under inbox_mu_
  std::vector<GetPack*> packs_;  // under inbox_mu_: answered packs (the loop owns them)
  std::vector<int> sockets_;     // under inbox_mu_
  bool inbox_pending_ = false;   // under inbox_mu_: an event_active is on its way
  // Set with answers_ growing, cleared when the loop takes them: what the
  // spin watches without the lock.
  std::atomic<bool> inbox_posted_{false};
  // break_and_join's word to a spinning loop (libevent's break flag is reset
  // when a round begins, so a break between rounds would be lost).
  std::atomic<bool> quit_{false};
  std::vector<Answer> answers_taken_;
  std::vector<GetPack*> packs_taken_;
  std::vector<int> sockets_taken_;

  // Loop thread only (and close_all(), once the loop has ended).
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
  bool stopping_ = false;
  // Calls submitted to the sink and not yet answered back to this loop (a
  // pack counts its gets).
  int64_t awaiting_ = 0;
  // The gets gathered this round (null or empty: none), its generation
  // (Connection::packed_in_), and packs to reuse. A pack in the store is
  // owned by its call until post_pack hands it back.
  std::unique_ptr<GetPack> pack_;
  uint64_t pack_generation_ = 1;
  std::vector<std::unique_ptr<GetPack>> free_packs_;

  std::atomic<uint64_t> get_keys_{0};
  std::atomic<uint64_t> sets_{0};
  std::atomic<uint64_t> deletes_{0};
  std::atomic<uint64_t> spun_answers_{0};
  std::array<std::atomic<uint64_t>, kCommandKinds> commands_{};
  std::atomic<uint64_t> store_calls_{0};
  std::atomic<uint64_t> packed_gets_{0};
  // Only the loop's thread writes these counters: a plain add, no locked
  // instruction, and the readers (stats, /metrics) see each value whole.
  static void bump(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Inside spin_for_answers (loop thread): the answers on_inbox takes count
  // as spun, before their replies are written.
  bool spinning_ = false;
};

}  // namespace gphkv::server::memcache
