// The memcached listener's loops (--memcached_threads): connections spread
// round robin over the loops and served on them at once (a loop held up
// holds up its own connections only), the connection limit counted over
// every loop, stats summed over the loops, and shutdown answering and
// closing the connections of every loop. The listener runs over a test
// sink, not a store: it answers inline on the loop thread (the null
// server's path), or later from the test's thread (the store's path: its
// answers come from other threads), and it records which thread submitted
// each call.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/batcher.h"
#include "server/executor.h"
#include "server/intake.h"
#include "server/memcache/listener.h"
#include "server/service_metrics.h"
#include "server/store.h"
#include "tests/engine/table_checks.h"
#include "tests/server/memcache_socket.h"

namespace gphkv {
namespace {

using server::Call;
using server::memcache::CallSink;
using server::memcache::Listener;
using server::memcache::ListenerOptions;
using testing::MemcacheSocket;

// Gets (and sets, stored): every key is found, its value "v-" and the key. A call whose first key is "block" holds the
// submitting loop thread until unblock(); one whose first key starts with "later" waits in a list until answer_later(),
// which answers it from the calling thread.
class TestSink final : public CallSink {
 public:
  absl::Status submit(Call call) const override {
    std::string first;
    call.byte_keys().for_each([&](size_t i, std::string_view k) {
      if (i == 0) first = std::string(k);
    });
    std::unique_lock<std::mutex> lock(mu_);
    thread_of_[first] = std::this_thread::get_id();
    std::vector<std::string> keys;
    call.byte_keys().for_each([&](size_t, std::string_view k) { keys.emplace_back(k); });
    calls_.push_back(std::move(keys));
    key_sessions_.emplace_back();
    if (call.kind() == server::OpKind::kGet) {
      key_sessions_.back().assign(call.get().key_sessions.begin(), call.get().key_sessions.end());
    }
    if (absl::StartsWith(first, "refuse")) return absl::UnavailableError("the queue is full");
    if (first == "block") {
      ++blocked_;
      changed_.notify_all();
      changed_.wait(lock, [this] { return unblocked_; });
    }
    if (absl::StartsWith(first, "later")) {
      later_.push_back(std::move(call));
      changed_.notify_all();
      return absl::OkStatus();
    }
    lock.unlock();
    answer(call);
    return absl::OkStatus();
  }

  std::thread::id thread_of(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = thread_of_.find(key);
    return it == thread_of_.end() ? std::thread::id() : it->second;
  }
  // Waits until a loop thread is held in submit.
  bool wait_blocked() const {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [this] { return blocked_ > 0; });
  }
  void unblock() const {
    std::lock_guard<std::mutex> lock(mu_);
    unblocked_ = true;
    changed_.notify_all();
  }
  bool wait_later(size_t n) const {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return later_.size() >= n; });
  }
  void answer_later() const {
    std::vector<Call> calls;
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls.swap(later_);
    }
    for (Call& c : calls) answer(c);
  }

  static std::string value_of(std::string_view key) { return "v-" + std::string(key); }

  // Each call submitted so far: its keys, and its keys' sessions (a packed
  // get's GetOp::key_sessions; empty for a call of one session).
  std::vector<std::vector<std::string>> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::vector<std::vector<uint64_t>> key_sessions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return key_sessions_;
  }

 private:
  static void answer(Call& call) {
    if (call.kind() != server::OpKind::kGet) {  // a set: stored
      call.done(absl::OkStatus());
      return;
    }
    const server::GetOp& get = call.get();
    v1::GetResponse* r = get.response;
    get.byte_keys.for_each([&](size_t, std::string_view k) {
      const std::string v = value_of(k);
      r->add_found(true);
      r->add_value_lengths(static_cast<uint32_t>(v.size()));
      r->mutable_values()->append(v);
    });
    call.done(absl::OkStatus());
  }

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  mutable std::map<std::string, std::thread::id> thread_of_;
  mutable int blocked_ = 0;
  mutable bool unblocked_ = false;
  mutable std::vector<Call> later_;
  mutable std::vector<std::vector<std::string>> calls_;
  mutable std::vector<std::vector<uint64_t>> key_sessions_;
};

std::string get_reply(const std::string& key) {
  const std::string v = TestSink::value_of(key);
  return absl::StrCat("VALUE ", key, " 0 ", v.size(), "\r\n", v, "\r\nEND\r\n");
}

std::unique_ptr<Listener> start(const TestSink* sink, uint32_t threads, uint32_t max_connections = 1024,
                                uint32_t pack_max_keys = 0) {
  ListenerOptions o;
  o.address = "127.0.0.1:0";
  o.threads = threads;
  o.max_connections = max_connections;
  o.pack_max_keys = pack_max_keys;
  o.version = "1.6.0 test";
  auto l = Listener::start(sink, std::move(o));
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? std::move(*l) : nullptr;
}

// The value of one STAT line of a stats reply.
std::string stat(MemcacheSocket& s, const std::string& name) {
  EXPECT_TRUE(s.send("stats\r\n"));
  std::string all;
  while (!absl::EndsWith(all, "END\r\n")) {
    const std::string more = s.read(1, std::chrono::seconds(5));
    if (more.empty()) break;
    all += more + s.read_available(std::chrono::milliseconds(10));
  }
  const std::string line = absl::StrCat("STAT ", name, " ");
  const size_t at = all.find(line);
  if (at == std::string::npos) return "";
  const size_t end = all.find("\r\n", at);
  return all.substr(at + line.size(), end - at - line.size());
}

TEST(MemcachedLoopsTest, ConnectionsAreSpreadRoundRobinOverTheLoops) {
  TestSink sink;
  auto l = start(&sink, 4);
  ASSERT_NE(l, nullptr);
  std::vector<std::unique_ptr<MemcacheSocket>> sockets;
  for (int i = 0; i < 8; ++i) {
    sockets.push_back(std::make_unique<MemcacheSocket>(l->port()));
    const std::string key = absl::StrCat("k", i);
    ASSERT_EQ(sockets.back()->round_trip("get " + key + "\r\n", get_reply(key)), get_reply(key));
  }
  // Connection i went to loop i % 4: four threads, each with two connections.
  std::set<std::thread::id> threads;
  for (int i = 0; i < 8; ++i) {
    const std::thread::id t = sink.thread_of(absl::StrCat("k", i));
    ASSERT_NE(t, std::thread::id());
    EXPECT_NE(t, std::this_thread::get_id());
    threads.insert(t);
    if (i >= 4) EXPECT_EQ(t, sink.thread_of(absl::StrCat("k", i - 4))) << i;
  }
  EXPECT_EQ(threads.size(), 4u);
  // Each connection goes on being served on its loop, in any order.
  for (int i = 7; i >= 0; --i) {
    const std::string key = absl::StrCat("again", i);
    ASSERT_EQ(sockets[i]->round_trip("get " + key + "\r\n", get_reply(key)), get_reply(key));
    EXPECT_EQ(sink.thread_of(key), sink.thread_of(absl::StrCat("k", i)));
  }
  // stats counts every loop's commands and connections.
  EXPECT_EQ(stat(*sockets[1], "threads"), "4");
  EXPECT_EQ(stat(*sockets[2], "cmd_get"), "16");
  EXPECT_EQ(stat(*sockets[3], "curr_connections"), "8");
  EXPECT_EQ(stat(*sockets[0], "total_connections"), "8");
}

TEST(MemcachedLoopsTest, ALoopHeldUpHoldsUpOnlyItsOwnConnections) {
  TestSink sink;
  auto l = start(&sink, 2);
  ASSERT_NE(l, nullptr);
  MemcacheSocket first(l->port());  // loop 0
  ASSERT_EQ(first.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  MemcacheSocket second(l->port());  // loop 1
  ASSERT_EQ(second.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  MemcacheSocket third(l->port());  // loop 0 again
  ASSERT_EQ(third.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  // The first loop's thread is held in the sink.
  ASSERT_TRUE(first.send("get block\r\n"));
  ASSERT_TRUE(sink.wait_blocked());
  // The other loop serves its connection, and the acceptor new ones.
  const auto start_time = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    const std::string key = absl::StrCat("s", i);
    ASSERT_EQ(second.round_trip("get " + key + "\r\n", get_reply(key)), get_reply(key));
  }
  MemcacheSocket fourth(l->port());  // loop 1
  ASSERT_EQ(fourth.round_trip("get f\r\n", get_reply("f")), get_reply("f"));
  EXPECT_LT(std::chrono::steady_clock::now() - start_time, std::chrono::seconds(5));
  // The held loop's other connection waits for it.
  ASSERT_TRUE(third.send("get t\r\n"));
  EXPECT_EQ(third.read_available(std::chrono::milliseconds(200)), "");
  sink.unblock();
  EXPECT_EQ(first.read(get_reply("block").size()), get_reply("block"));
  EXPECT_EQ(third.read(get_reply("t").size()), get_reply("t"));
  EXPECT_NE(sink.thread_of("s0"), sink.thread_of("block"));
  EXPECT_EQ(sink.thread_of("t"), sink.thread_of("block"));
}

TEST(MemcachedLoopsTest, TheConnectionLimitCountsEveryLoop) {
  TestSink sink;
  auto l = start(&sink, 4, /*max_connections=*/6);
  ASSERT_NE(l, nullptr);
  std::vector<std::unique_ptr<MemcacheSocket>> open;
  for (int i = 0; i < 6; ++i) {
    open.push_back(std::make_unique<MemcacheSocket>(l->port()));
    ASSERT_EQ(open.back()->round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  }
  // Six open over four loops (two have two): the seventh is turned away,
  // whichever loop would have been next.
  const std::string refusal = "ERROR Too many open connections\r\n";
  for (int attempt = 0; attempt < 4; ++attempt) {
    MemcacheSocket extra(l->port());
    EXPECT_EQ(extra.read(refusal.size()), refusal);
    EXPECT_TRUE(extra.closed_by_peer());
  }
  EXPECT_EQ(l->open_connections(), 6u);
  EXPECT_EQ(stat(*open[5], "rejected_connections"), "4");
  // One closes (on the third loop): a new one is served once it is seen.
  open.erase(open.begin() + 2);
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    MemcacheSocket again(l->port());
    served = again.round_trip("mn\r\n", "MN\r\n") == "MN\r\n";
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
  for (auto& s : open) EXPECT_EQ(s->round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
}

TEST(MemcachedLoopsTest, ShutdownAnswersAndClosesTheConnectionsOfEveryLoop) {
  TestSink sink;
  auto l = start(&sink, 4);
  ASSERT_NE(l, nullptr);
  std::vector<std::unique_ptr<MemcacheSocket>> sockets;
  for (int i = 0; i < 8; ++i) {
    sockets.push_back(std::make_unique<MemcacheSocket>(l->port()));
    ASSERT_EQ(sockets.back()->round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  }
  // Every connection has a get the sink holds, and more commands behind it.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(sockets[i]->send(absl::StrCat("get later", i, "\r\nmn\r\n")));
  ASSERT_TRUE(sink.wait_later(8));
  const int port = l->port();
  std::thread stopper([&] { l->stop(std::chrono::seconds(10)); });
  // Shutdown waits for the answers, which come from another thread.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MemcacheSocket late(port);
  EXPECT_EQ(late.read_available(std::chrono::milliseconds(100)), "");
  sink.answer_later();
  const auto start_time = std::chrono::steady_clock::now();
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start_time, std::chrono::seconds(5));
  for (int i = 0; i < 8; ++i) {
    const std::string key = absl::StrCat("later", i);
    const std::string expected = get_reply(key) + "MN\r\n";
    EXPECT_EQ(sockets[i]->read(expected.size()), expected) << i;
    EXPECT_TRUE(sockets[i]->closed_by_peer()) << i;
  }
  EXPECT_EQ(l->open_connections(), 0u);
  // Distinct loops held them.
  std::set<std::thread::id> threads;
  for (int i = 0; i < 8; ++i) threads.insert(sink.thread_of(absl::StrCat("later", i)));
  EXPECT_EQ(threads.size(), 4u);
}

// Eight connections at once, two a loop, over a CPU store's pipeline (no
// gRPC): each writes, reads back and deletes keys of its own, with random
// multi-gets that also name other connections' keys (whose values it does
// not check), against a model of its own keys. Answers come from the
// completion threads to four loops.
// With pack_max_keys the loops pack their gets (get_pack.h), and each
// connection pipelines 1 to 8 commands a write, so that its gets share
// packs with its own writes before and after them and with other
// connections' gets, and packs fill up.
void connections_read_their_writes_through_a_store(std::chrono::microseconds answer_spin, uint32_t pack_max_keys = 0) {
  const uint64_t seed = engine::testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  server::StoreOptions so;
  so.initial_capacity = 256;  // grows while the connections run
  so.max_value_bytes = 4096;
  auto store = server::Store::create(so);
  ASSERT_TRUE(store.ok()) << store.status();
  server::BatcherOptions bo;
  bo.max_batch_keys = 64;
  bo.max_delay = std::chrono::microseconds(50);
  server::Batcher batcher(bo);
  server::ServiceMetrics metrics;
  server::Executor executor(std::move(*store), &batcher, &metrics, /*completion_threads=*/2);
  ASSERT_TRUE(executor.start().ok());
  const server::Intake intake(&batcher, server::RequestLimits{});
  ListenerOptions o;
  o.address = "127.0.0.1:0";
  o.threads = 4;
  o.answer_spin = answer_spin;
  o.pack_max_keys = pack_max_keys;
  auto listener = Listener::start(&intake, o);
  ASSERT_TRUE(listener.ok()) << listener.status();
  constexpr int kConnections = 8;
  std::vector<std::string> failures(kConnections);
  std::vector<std::thread> threads;
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(c));
      MemcacheSocket s((*listener)->port());
      std::unordered_map<std::string, std::string> mine;
      for (int round = 0; round < 150 && failures[c].empty(); ++round) {
        std::string request, expected;
        const int commands = pack_max_keys == 0 ? 1 : 1 + static_cast<int>(rng() % 8);
        for (int command = 0; command < commands; ++command) {
          const std::string key = absl::StrCat("c", c, ":", rng() % 40);
          switch (rng() % 3) {
            case 0: {
              const std::string value = absl::StrCat(key, "@", round, std::string(rng() % 300, 'v'));
              absl::StrAppend(&request, "set ", key, " 0 0 ", value.size(), "\r\n", value, "\r\n");
              expected += "STORED\r\n";
              mine[key] = value;
              break;
            }
            case 1:
              absl::StrAppend(&request, "delete ", key, "\r\n");
              expected += mine.erase(key) ? "DELETED\r\n" : "NOT_FOUND\r\n";
              break;
            default: {
              // Its own keys only, so the whole reply is known.
              request += "get";
              for (int n = 1 + static_cast<int>(rng() % 6); n > 0; --n) {
                const std::string k = absl::StrCat("c", c, ":", rng() % 40);
                absl::StrAppend(&request, " ", k);
                if (auto it = mine.find(k); it != mine.end()) {
                  absl::StrAppend(&expected, "VALUE ", k, " 0 ", it->second.size(), "\r\n", it->second, "\r\n");
                }
              }
              request += "\r\n";
              expected += "END\r\n";
            }
          }
        }
        if (!s.send(request)) {
          failures[c] = "send failed";
          break;
        }
        const std::string got = s.read(expected.size());
        if (got != expected) failures[c] = absl::StrCat("round ", round, ": sent ", request, " got ", got);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kConnections; ++c) EXPECT_EQ(failures[c], "") << "connection " << c;
  // Every call answered before the pipeline stops, as the server orders it.
  (*listener)->stop(std::chrono::seconds(5));
  listener->reset();
  batcher.close();
  executor.join();
}

TEST(MemcachedLoopsTest, ConnectionsOnEveryLoopReadTheirWritesThroughAStore) {
  connections_read_their_writes_through_a_store(std::chrono::microseconds(0));
}

// The same with loops that spin for their answers (--memcached_spin_us):
// answers taken by the spin and by the loop's own rounds interleave.
TEST(MemcachedLoopsTest, SpinningLoopsReadTheirWritesThroughAStore) {
  connections_read_their_writes_through_a_store(std::chrono::microseconds(200));
}

// Packed gets (get_pack.h) keep each connection's order with its writes, on
// every loop, with and without a spin; packs of at most 8 keys fill up
// (a get has up to 6).
TEST(MemcachedLoopsTest, PackedGetsReadTheirWritesThroughAStore) {
  connections_read_their_writes_through_a_store(std::chrono::microseconds(0), /*pack_max_keys=*/8);
  connections_read_their_writes_through_a_store(std::chrono::microseconds(200), /*pack_max_keys=*/8);
}

// A connection's pipelined gets, read in one round, become one call whose
// keys keep the connection's session; a pack is queued before it would
// pass pack_max_keys; a get of more keys goes alone; and a set from a
// connection with gets in the pack queues the pack first.
TEST(MemcachedLoopsTest, GetsReadInOneRoundAreOneCall) {
  TestSink sink;
  auto l = start(&sink, 1, 1024, /*pack_max_keys=*/4);
  ASSERT_NE(l, nullptr);
  MemcacheSocket a(l->port());
  // The values of `keys`, one get's reply.
  const auto reply = [](std::vector<std::string> keys) {
    std::string out;
    for (const std::string& k : keys) out += get_reply(k).substr(0, get_reply(k).size() - 5);  // less END
    return out + "END\r\n";
  };
  const std::string first = reply({"a"}) + reply({"b", "c"});
  ASSERT_TRUE(a.send("get a\r\nget b c\r\n"));
  EXPECT_EQ(a.read(first.size()), first);
  ASSERT_EQ(sink.calls(), (std::vector<std::vector<std::string>>{{"a", "b", "c"}}));
  const std::vector<uint64_t> sessions = sink.key_sessions().at(0);
  ASSERT_EQ(sessions.size(), 3u);
  EXPECT_NE(sessions[0], 0u);
  EXPECT_EQ(sessions[1], sessions[0]);
  EXPECT_EQ(sessions[2], sessions[0]);

  // 3 + 2 keys pass 4: the first pack goes, the second holds d e; f..j (5
  // keys) goes alone.
  const std::string second = reply({"a", "b", "c"}) + reply({"d", "e"}) + reply({"f", "g", "h", "i", "j"});
  ASSERT_TRUE(a.send("get a b c\r\nget d e\r\nget f g h i j\r\n"));
  EXPECT_EQ(a.read(second.size()), second);
  auto calls = sink.calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[1], (std::vector<std::string>{"a", "b", "c"}));
  // f..j, a call of the connection's own, is queued after its gets waiting
  // in the pack.
  EXPECT_EQ(calls[2], (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(calls[3], (std::vector<std::string>{"f", "g", "h", "i", "j"}));
  EXPECT_TRUE(sink.key_sessions()[3].empty());  // alone: the call's own session

  // A set after a packed get: the pack is queued before the set.
  ASSERT_TRUE(a.send("get k\r\nset k 0 0 1\r\nx\r\n"));
  EXPECT_EQ(a.read(reply({"k"}).size() + 8), reply({"k"}) + "STORED\r\n");
  calls = sink.calls();
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[4], (std::vector<std::string>{"k"}));
  EXPECT_EQ(sink.key_sessions()[4].size(), 1u);  // the pack
  EXPECT_EQ(calls[5], (std::vector<std::string>{"k"}));
  EXPECT_TRUE(sink.key_sessions()[5].empty());  // the set, alone
}

// A pack the sink refuses whole (a full queue) answers each of its gets
// with the error, and the connection goes on.
TEST(MemcachedLoopsTest, ARefusedPackAnswersEachGetWithTheError) {
  TestSink sink;
  auto l = start(&sink, 1, 1024, /*pack_max_keys=*/16);
  ASSERT_NE(l, nullptr);
  MemcacheSocket a(l->port());
  const std::string error = "SERVER_ERROR the queue is full\r\n";
  ASSERT_TRUE(a.send("get refuse1\r\nget b\r\n"));
  EXPECT_EQ(a.read(2 * error.size()), error + error);
  EXPECT_EQ(a.round_trip("get c\r\n", get_reply("c")), get_reply("c"));
}

std::unique_ptr<Listener> start_spinning(const TestSink* sink, std::chrono::microseconds spin) {
  ListenerOptions o;
  o.address = "127.0.0.1:0";
  o.threads = 1;
  o.answer_spin = spin;
  o.version = "1.6.0 test";
  auto l = Listener::start(sink, std::move(o));
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? std::move(*l) : nullptr;
}

// One loop with a long spin (2 s) and a call in the store: another
// connection's commands are still read and answered at once (the spin looks
// at the sockets), the answer posted from another thread is taken by the
// spin, and the listener stops at once though its loop was spinning.
TEST(MemcachedLoopsTest, ALoopSpinningForAnAnswerStillServesItsOtherConnections) {
  TestSink sink;
  auto l = start_spinning(&sink, std::chrono::seconds(2));
  ASSERT_NE(l, nullptr);
  MemcacheSocket a(l->port()), b(l->port());
  ASSERT_EQ(a.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  ASSERT_EQ(b.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  ASSERT_TRUE(a.send("get later0\r\n"));
  ASSERT_TRUE(sink.wait_later(1));
  // The loop spins for later0's answer; b's get is answered inline meanwhile.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(b.round_trip("get now\r\n", get_reply("now")), get_reply("now"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_EQ(l->spun_answers(), 0u);
  // Answered from this thread while the loop spins (its 2 s are not over).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  sink.answer_later();
  EXPECT_EQ(a.read(get_reply("later0").size()), get_reply("later0"));
  EXPECT_EQ(l->spun_answers(), 1u);
  // A call in the store when the stop begins: answered, then the loop ends
  // promptly (no 2 s spin after the quit).
  ASSERT_TRUE(a.send("get later1\r\n"));
  ASSERT_TRUE(sink.wait_later(1));
  std::thread answerer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sink.answer_later();
  });
  const auto stop_at = std::chrono::steady_clock::now();
  l->stop(std::chrono::seconds(5));
  answerer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, std::chrono::milliseconds(1500));
  EXPECT_EQ(a.read(get_reply("later1").size()), get_reply("later1"));
}

// Without answer_spin nothing spins: every answer comes through the loop's
// wake-up.
TEST(MemcachedLoopsTest, WithoutASpinNoAnswerIsTakenSpinning) {
  TestSink sink;
  auto l = start_spinning(&sink, std::chrono::microseconds(0));
  ASSERT_NE(l, nullptr);
  MemcacheSocket a(l->port());
  for (int i = 0; i < 5; ++i) {
    const std::string key = absl::StrCat("later", i);
    ASSERT_TRUE(a.send(absl::StrCat("get ", key, "\r\n")));
    ASSERT_TRUE(sink.wait_later(1));
    sink.answer_later();
    EXPECT_EQ(a.read(get_reply(key).size()), get_reply(key));
  }
  EXPECT_EQ(l->spun_answers(), 0u);
}

TEST(MemcachedLoopsTest, ZeroThreadsIsRefused) {
  TestSink sink;
  ListenerOptions o;
  o.address = "127.0.0.1:0";
  o.threads = 0;
  EXPECT_EQ(Listener::start(&sink, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gphkv
