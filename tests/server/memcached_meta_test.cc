// The memcached port's meta commands mg, ms, md, ma and mn (issue 28), byte
// for byte on a raw socket: each flag's reply as memcached 1.6.18 writes it
// (tests/memcached/meta_compare_test.py holds the two servers to the same
// bytes), bad input and refused flags changing nothing, and a random mix of
// meta and classic commands against a model of values, flags, TTLs and CAS.
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/item_model.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::MemcacheSocket;

class MemcachedMetaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = testing::start_server(testing::memcached_test_options(/*max_value_bytes=*/4096));
    ASSERT_NE(server_, nullptr);
    socket_ = std::make_unique<MemcacheSocket>(server_->memcached_port());
    ASSERT_TRUE(socket_->connected());
  }

  // Sends `request`, expects exactly `reply` and nothing after it.
  void expect(const std::string& request, const std::string& reply) {
    EXPECT_EQ(socket_->round_trip(request, reply), reply) << "request: " << request;
    EXPECT_EQ(socket_->read_available(std::chrono::milliseconds(30)), "") << "request: " << request;
  }

  // As expect, without waiting to see that nothing follows: the random test's
  // next reply would show it.
  void expect_next(const std::string& request, const std::string& reply) {
    EXPECT_EQ(socket_->round_trip(request, reply), reply) << "request: " << request;
  }

  // One reply: its line, and for VA its data block.
  std::string reply() { return reply_on(*socket_); }
  static std::string reply_on(MemcacheSocket& socket) {
    std::string line;
    while (line.size() < 2 || line.compare(line.size() - 2, 2, "\r\n") != 0) {
      const std::string c = socket.read(1);
      if (c.empty()) return line;
      line += c;
    }
    if (line.rfind("VA ", 0) == 0) line += socket.read(std::strtoull(line.c_str() + 3, nullptr, 10) + 2);
    return line;
  }

  // The number after " <letter>" in a reply line; -2 when absent.
  static int64_t flag_of(const std::string& reply, char letter) {
    const std::string line = reply.substr(0, reply.find("\r\n"));
    const std::string needle = std::string(" ") + letter;
    const size_t at = line.find(needle);
    if (at == std::string::npos) return -2;
    return std::strtoll(line.c_str() + at + 2, nullptr, 10);
  }

  uint64_t cas_of(const std::string& key) {
    EXPECT_TRUE(socket_->send("mg " + key + " c\r\n"));
    const std::string r = reply();
    EXPECT_EQ(r.rfind("HD c", 0), 0u) << r;
    return static_cast<uint64_t>(flag_of(r, 'c'));
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<MemcacheSocket> socket_;
};

TEST_F(MemcachedMetaTest, NoopAndGetFlags) {
  expect("mn\r\n", "MN\r\n");
  expect("mn ignored words\r\n", "MN\r\n");
  expect("mg a\r\n", "EN\r\n");
  expect("mg a v\r\n", "EN\r\n");
  // A miss returns only k and O; q hides it.
  expect("mg a k O12 v t f c s\r\n", "EN ka O12\r\n");
  expect("mg a q v\r\nmg a k O12 q\r\nmn\r\n", "MN\r\n");
  expect("ms a 2 F5\r\nhi\r\n", "HD\r\n");
  expect("mg a\r\n", "HD\r\n");
  expect("mg a q\r\n", "HD\r\n");  // q hides only mg's EN
  expect("mg a v\r\n", "VA 2\r\nhi\r\n");
  expect("mg a v q\r\n", "VA 2\r\nhi\r\n");
  expect("mg a s f k O\r\n", "HD s2 f5 ka O\r\n");
  expect("mg a t\r\n", "HD t-1\r\n");
  // c: the item's CAS, the one gets reports.
  const uint64_t cas = cas_of("a");
  expect("gets a\r\n", "VALUE a 5 2 " + std::to_string(cas) + "\r\nhi\r\nEND\r\n");
  expect("mg a O9 v c k\r\n", "VA 2 O9 c" + std::to_string(cas) + " ka\r\nhi\r\n");
  // Flags mg takes and ignores, as 1.6.18 does.
  expect("mg a u P L v\r\n", "VA 2\r\nhi\r\n");
}

TEST_F(MemcachedMetaTest, GetTouchesAndReportsTtl) {
  expect("ms t 1 T100\r\nx\r\n", "HD\r\n");
  ASSERT_TRUE(socket_->send("mg t t v\r\n"));
  std::string r = reply();
  EXPECT_GE(flag_of(r, 't'), 98);
  EXPECT_LE(flag_of(r, 't'), 100);
  EXPECT_EQ(r.substr(r.find("\r\n")), "\r\nx\r\n");
  // T sets the TTL (memcached's touch), and t reports the new one.
  expect("mg t T50 t\r\n", "HD t50\r\n");
  ASSERT_TRUE(socket_->send("mg t t\r\n"));
  r = reply();
  EXPECT_GE(flag_of(r, 't'), 48) << r;
  EXPECT_LE(flag_of(r, 't'), 50) << r;
  // t before T reports the TTL the item had (memcached reads the flags in order).
  ASSERT_TRUE(socket_->send("mg t t T500\r\n"));
  r = reply();
  EXPECT_GE(flag_of(r, 't'), 48) << r;
  EXPECT_LE(flag_of(r, 't'), 50) << r;
  expect("mg t T0 t\r\n", "HD t-1\r\n");
  expect("mg none T5 t\r\n", "EN\r\n");
  // A negative TTL expires the item.
  expect("mg t T-1\r\n", "HD\r\n");
  expect("mg t v\r\n", "EN\r\n");
}

// With the store's clock the test's (StoreOptions::unix_clock), mg's t is
// exact: seconds left by that clock.
class MemcachedMetaClockTest : public MemcachedMetaTest {
 protected:
  void SetUp() override {
    server::ServerOptions o = testing::memcached_test_options(/*max_value_bytes=*/4096);
    o.store.unix_clock = [this] { return now_.load(); };
    server_ = testing::start_server(o);
    ASSERT_NE(server_, nullptr);
    socket_ = std::make_unique<MemcacheSocket>(server_->memcached_port());
    ASSERT_TRUE(socket_->connected());
  }
  std::atomic<uint32_t> now_{1'800'000'000};
};

TEST_F(MemcachedMetaClockTest, TtlCountsByTheStoresClock) {
  expect("ms k 1 T100\r\nx\r\n", "HD\r\n");
  expect("mg k t\r\n", "HD t100\r\n");
  now_ += 30;
  expect("mg k t v\r\n", "VA 1 t70\r\nx\r\n");
  expect("mg k t T50\r\n", "HD t70\r\n");  // t before T: the TTL it had
  expect("mg k t\r\n", "HD t50\r\n");
  // An absolute exptime (past 30 days): seconds until then.
  expect("ms k 1 T" + std::to_string(now_.load() + 5000) + "\r\nx\r\n", "HD\r\n");
  expect("mg k t\r\n", "HD t5000\r\n");
  now_ += 4999;
  expect("mg k t\r\n", "HD t1\r\n");
  now_ += 1;
  expect("mg k t k\r\n", "EN kk\r\n");
}

TEST_F(MemcachedMetaTest, SetModesAndCas) {
  expect("ms k 2 q\r\nab\r\nmg k v\r\n", "VA 2\r\nab\r\n");  // q hides HD
  expect("ms k 2 ME\r\nzz\r\n", "NS\r\n");
  expect("ms k 2 ME q\r\nzz\r\n", "NS\r\n");  // and only HD
  expect("ms n 2 MR k O1\r\nzz\r\n", "NS kn O1\r\n");
  expect("ms n 2 MA\r\nzz\r\n", "NS\r\n");
  expect("ms n 2 MP\r\nzz\r\n", "NS\r\n");
  expect("ms n 2 ME F3 T0\r\nnn\r\n", "HD\r\n");
  expect("mg n v f\r\n", "VA 2 f3\r\nnn\r\n");
  // F past 2^32: its low 32 bits, as 1.6.18 keeps them.
  expect("ms n 2 F4294967297\r\nnn\r\n", "HD\r\n");
  expect("mg n f\r\n", "HD f1\r\n");
  expect("ms n 2 F18446744073709551616\r\nnn\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("ms k 2 MR F7\r\ncd\r\n", "HD\r\n");
  // Append and prepend keep the item's flags and TTL.
  expect("ms k 1 MA F9 T5\r\ne\r\n", "HD\r\n");
  expect("ms k 1 MP\r\n<\r\n", "HD\r\n");
  expect("mg k v f t\r\n", "VA 4 f7 t-1\r\n<cde\r\n");
  expect("ms k 1 MS k O3\r\n!\r\n", "HD kk O3\r\n");
  // C: memcached's cas.
  const uint64_t cas = cas_of("k");
  expect("ms k 1 C" + std::to_string(cas + 1) + "\r\nx\r\n", "EX\r\n");
  expect("ms k 1 C" + std::to_string(cas + 1) + " q\r\nx\r\n", "EX\r\n");
  expect("ms gone 1 C" + std::to_string(cas) + "\r\nx\r\n", "NF\r\n");
  expect("ms k 1 C" + std::to_string(cas) + " MS\r\ny\r\n", "HD\r\n");
  expect("ms k 1 C" + std::to_string(cas) + "\r\nz\r\n", "EX\r\n");
  expect("mg k v\r\n", "VA 1\r\ny\r\n");
  expect("ms k 0\r\n\r\n", "HD\r\n");
  expect("mg k v s\r\n", "VA 0 s0\r\n\r\n");
  expect("ms k 2 T-1\r\nzz\r\n", "HD\r\n");
  expect("mg k\r\n", "EN\r\n");
}

TEST_F(MemcachedMetaTest, DeleteAndArithmetic) {
  expect("md x\r\n", "NF\r\n");
  expect("md x q\r\n", "NF\r\n");
  expect("md x O5 k\r\n", "NF O5 kx\r\n");
  expect("ms x 1\r\n5\r\n", "HD\r\n");
  expect("md x q\r\nmn\r\n", "MN\r\n");
  expect("ms x 1\r\n5\r\n", "HD\r\n");
  expect("md x k O5\r\n", "HD kx O5\r\n");
  expect("md x\r\n", "NF\r\n");

  expect("ma c\r\n", "NF\r\n");
  expect("ma c q O1 k\r\n", "NF O1 kc\r\n");
  expect("ms c 1\r\n5\r\n", "HD\r\n");
  expect("ma c\r\n", "HD\r\n");
  expect("ma c v\r\n", "VA 1\r\n7\r\n");
  expect("ma c MD D3 v\r\n", "VA 1\r\n4\r\n");
  expect("ma c MD D100 v\r\n", "VA 1\r\n0\r\n");
  expect("ma c M+ D18446744073709551615 v k\r\n", "VA 20 kc\r\n18446744073709551615\r\n");
  expect("ma c MI D2 v\r\n", "VA 1\r\n1\r\n");  // wraps at 2^64
  expect("ma c M- v O7\r\n", "VA 1 O7\r\n0\r\n");
  expect("ma c q v\r\nma c q\r\nmn\r\n", "MN\r\n");
  expect("mg c v\r\n", "VA 1\r\n2\r\n");
  expect("incr c 5\r\n", "7\r\n");
  expect("ms s 2\r\nab\r\n", "HD\r\n");
  expect("ma s\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("ma s q\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("mg s v\r\n", "VA 2\r\nab\r\n");
}

// ms C with each mode, as 1.6.18 reads it: S and R are memcached's cas
// (NF on a miss), E adds and ignores C, A and P compare a C that is not 0.
TEST_F(MemcachedMetaTest, SetCompareWithEachMode) {
  expect("ms c 2 F5\r\n10\r\n", "HD\r\n");
  const uint64_t cas = cas_of("c");
  const std::string wrong = std::to_string(cas + 1);
  expect("ms c 1 MA C" + wrong + "\r\nx\r\n", "EX\r\n");
  expect("ms c 1 MA C" + wrong + " q\r\nx\r\n", "EX\r\n");
  expect("ms c 1 MP C" + wrong + " k O1\r\nx\r\n", "EX kc O1\r\n");
  expect("ms c 1 MR C" + wrong + "\r\nx\r\n", "EX\r\n");
  expect("ms c 1 ME C" + std::to_string(cas) + "\r\nx\r\n", "NS\r\n");
  expect("mg c v f c\r\n", "VA 2 f5 c" + std::to_string(cas) + "\r\n10\r\n");  // nothing changed
  expect("ms c 1 MA C" + std::to_string(cas) + "\r\n!\r\n", "HD\r\n");
  const uint64_t appended = cas_of("c");
  EXPECT_NE(appended, cas);
  expect("ms c 1 MP C" + std::to_string(cas) + "\r\n?\r\n", "EX\r\n");  // the CAS it had
  expect("ms c 1 MP C0\r\n<\r\n", "HD\r\n");                            // C0: no compare
  expect("mg c v f\r\n", "VA 4 f5\r\n<10!\r\n");                        // append and prepend keep the flags
  expect("ms c 1 MR F1 C" + std::to_string(cas_of("c")) + " q\r\nr\r\nmn\r\n", "MN\r\n");
  expect("mg c v f\r\n", "VA 1 f1\r\nr\r\n");
  expect("ms gone 1 MR C1\r\nx\r\n", "NF\r\n");
  expect("ms gone 1 MA C1\r\nx\r\n", "NS\r\n");
  expect("ms gone 1 MP C1 q\r\nx\r\n", "NS\r\n");
  expect("mg gone\r\n", "EN\r\n");
  expect("ms gone 1 ME C1\r\nx\r\n", "HD\r\n");  // add ignores C
  expect("mg gone v\r\n", "VA 1\r\nx\r\n");
}

// md C: deletes only where the item's CAS is C's (EX otherwise, NF on a miss).
TEST_F(MemcachedMetaTest, DeleteCompares) {
  expect("md x C1\r\n", "NF\r\n");
  expect("md x C1 q\r\n", "NF\r\n");
  expect("ms x 1\r\n5\r\n", "HD\r\n");
  uint64_t cas = cas_of("x");
  expect("md x C" + std::to_string(cas + 1) + " k O2\r\n", "EX kx O2\r\n");
  expect("md x C" + std::to_string(cas + 1) + " q\r\n", "EX\r\n");
  expect("md x C0\r\n", "EX\r\n");
  expect("mg x v c\r\n", "VA 1 c" + std::to_string(cas) + "\r\n5\r\n");  // nothing changed
  expect("md x C" + std::to_string(cas) + " q\r\nmn\r\n", "MN\r\n");
  expect("mg x\r\n", "EN\r\n");
  expect("ms x 1\r\n6\r\n", "HD\r\n");
  cas = cas_of("x");
  expect("ma x\r\n", "HD\r\n");  // a write since: another CAS
  expect("md x C" + std::to_string(cas) + "\r\n", "EX\r\n");
  expect("md x C" + std::to_string(cas_of("x")) + " k\r\n", "HD kx\r\n");
  expect("md x\r\n", "NF\r\n");
}

// ma's N, J, T, C, t and c, with the store's clock the test's so t is exact.
TEST_F(MemcachedMetaClockTest, ArithmeticCreatesTouchesComparesAndReports) {
  // N creates a miss with J's number, not incremented, flags 0.
  ASSERT_TRUE(socket_->send("ma n N0 J13 v t c\r\n"));
  const std::string created = reply();
  EXPECT_EQ(created.substr(0, 10), "VA 2 t-1 c") << created;
  EXPECT_EQ(created.substr(created.find("\r\n")), "\r\n13\r\n") << created;
  EXPECT_EQ(static_cast<uint64_t>(flag_of(created, 'c')), cas_of("n"));
  expect("ma n N0 J13 v t\r\n", "VA 2 t-1\r\n14\r\n");
  expect("mg n f v\r\n", "VA 2 f0\r\n14\r\n");
  expect("ma d N0 J5 D3 MD v\r\n", "VA 1\r\n5\r\n");
  expect("ma d N0 J5 D3 MD v\r\n", "VA 1\r\n2\r\n");
  // The flags in order: a t before N or T reports the TTL before them.
  expect("ma m t N100 J5 v\r\n", "VA 1 t-1\r\n5\r\n");
  expect("mg m t\r\n", "HD t100\r\n");
  expect("ma m4 v T30 N100 t\r\n", "VA 1 t100\r\n0\r\n");  // created: the later of N and T
  expect("ma m5 N100 T30 t v\r\n", "VA 1 t30\r\n0\r\n");
  expect("mg m5 t\r\n", "HD t30\r\n");
  expect("ma m5 t T500 v k\r\n", "VA 1 t30 km5\r\n1\r\n");
  expect("mg m5 t\r\n", "HD t500\r\n");
  now_ += 10;
  expect("ma m5 N5 J99 t O1\r\n", "HD t490 O1\r\n");  // N on a hit changes nothing
  expect("ma m5 T0 t\r\n", "HD t-1\r\n");
  // q hides success, but 1.6.18 answers an item N created.
  expect("ma q1 q N0\r\n", "HD\r\n");
  expect("ma q1 q N0 v\r\nmn\r\n", "MN\r\n");
  expect("mg q1 v\r\n", "VA 1\r\n1\r\n");
  // C: compared where it is not 0; EX before a miss's N and a non-number's error.
  const uint64_t cas = cas_of("q1");
  const std::string wrong = std::to_string(cas + 1);
  expect("ma q1 C" + wrong + " v\r\n", "EX\r\n");
  expect("ma q1 C" + wrong + " q k\r\n", "EX kq1\r\n");
  expect("ma q1 C" + wrong + " N0 T5 v\r\n", "EX\r\n");
  expect("mg q1 v t\r\n", "VA 1 t-1\r\n1\r\n");
  ASSERT_TRUE(socket_->send("ma q1 C" + std::to_string(cas) + " v c\r\n"));
  const std::string compared = reply();
  EXPECT_EQ(compared.substr(compared.find("\r\n")), "\r\n2\r\n") << compared;
  EXPECT_EQ(static_cast<uint64_t>(flag_of(compared, 'c')), cas_of("q1"));
  expect("ma q1 C0 v\r\n", "VA 1\r\n3\r\n");
  expect("ma gone C5\r\n", "NF\r\n");
  expect("ma gone2 C5 N0 J7 v\r\n", "VA 1\r\n7\r\n");
  expect("ms s 2\r\nab\r\n", "HD\r\n");
  expect("ma s N0 C1\r\n", "EX\r\n");
  expect("ma s T5 N0\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("mg s t v\r\n", "VA 2 t-1\r\nab\r\n");
  // A negative TTL expires the item; N-1 answers the number it created.
  expect("ma e N-1 v\r\n", "VA 1\r\n0\r\n");
  expect("mg e\r\n", "EN\r\n");
  expect("ma q1 T-1\r\n", "HD\r\n");
  expect("mg q1\r\n", "EN\r\n");
}

// Several connections race ma N on absent keys and md C on one CAS: the
// store decides each in its order, so each key is created once and
// incremented by every other ma, and each item is deleted once.
TEST_F(MemcachedMetaTest, ConcurrentVivifiesAndCompareDeletes) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE("GPHKV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr int kConnections = 6;
  constexpr int kRounds = 40;
  std::vector<uint64_t> initial(kRounds), delta(kRounds), cas(kRounds);
  for (int r = 0; r < kRounds; ++r) {
    initial[r] = rng() % 1000;
    delta[r] = 1 + rng() % 100;
    expect_next("ms del" + std::to_string(r) + " 1\r\nx\r\n", "HD\r\n");
    cas[r] = cas_of("del" + std::to_string(r));
  }
  std::vector<std::vector<std::string>> replies(kConnections);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < kConnections; ++t) {
    threads.emplace_back([&, t] {
      MemcacheSocket socket(server_->memcached_port());
      std::string requests;
      for (int r = 0; r < kRounds; ++r) {
        // Each connection in its own order of the two commands.
        const std::string vivify = "ma race" + std::to_string(r) + " N0 J" + std::to_string(initial[r]) + " D" +
                                   std::to_string(delta[r]) + " v\r\n";
        const std::string del = "md del" + std::to_string(r) + " C" + std::to_string(cas[r]) + "\r\n";
        requests += (r + t) % 2 == 0 ? vivify + del : del + vivify;
      }
      ++ready;
      while (ready.load() < kConnections) std::this_thread::yield();
      if (!socket.send(requests)) return;
      for (int r = 0; r < 2 * kRounds; ++r) replies[t].push_back(reply_on(socket));
    });
  }
  for (std::thread& th : threads) th.join();
  for (int r = 0; r < kRounds; ++r) {
    std::multiset<std::string> numbers, deletes;
    std::multiset<std::string> want_numbers;
    for (int t = 0; t < kConnections; ++t) {
      ASSERT_EQ(replies[t].size(), 2u * kRounds) << "connection " << t;
      const bool vivify_first = (r + t) % 2 == 0;
      numbers.insert(replies[t][2 * r + (vivify_first ? 0 : 1)]);
      deletes.insert(replies[t][2 * r + (vivify_first ? 1 : 0)]);
      const std::string n = std::to_string(initial[r] + static_cast<uint64_t>(t) * delta[r]);
      want_numbers.insert("VA " + std::to_string(n.size()) + "\r\n" + n + "\r\n");
    }
    EXPECT_EQ(numbers, want_numbers) << "round " << r;
    EXPECT_EQ(deletes.count("HD\r\n"), 1u) << "round " << r;
    EXPECT_EQ(deletes.count("NF\r\n"), static_cast<size_t>(kConnections - 1)) << "round " << r;
  }
  expect("mg race0 v\r\n", "VA " + std::to_string(std::to_string(initial[0] + (kConnections - 1) * delta[0]).size()) +
                               "\r\n" + std::to_string(initial[0] + (kConnections - 1) * delta[0]) + "\r\n");
}

TEST_F(MemcachedMetaTest, Base64Keys) {
  expect("ms YWJj 2 b k\r\nzz\r\n", "HD kYWJj b\r\n");
  expect("mg abc v\r\n", "VA 2\r\nzz\r\n");  // the same key as "abc"
  expect("mg YWJj b k v O1\r\n", "VA 2 kYWJj b O1\r\nzz\r\n");
  expect("ma YWJj b\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("md YWJj b k\r\n", "HD kYWJj b\r\n");
  expect("mg abc\r\n", "EN\r\n");
  for (const char* bad : {"a", "====", "YWJ", "YWJjZA", "YW$j", "YQ=a"}) {
    expect(std::string("mg ") + bad + " b\r\n", "CLIENT_ERROR error decoding key\r\n");
    expect(std::string("ms ") + bad + " 1 b\r\nx\r\n", "CLIENT_ERROR error decoding key\r\n");
    expect(std::string("md ") + bad + " b\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
    expect(std::string("ma ") + bad + " b\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
  }
  expect("mn\r\n", "MN\r\n");
}

// Bad input and refused flags: memcached's error (or our refusal), and the
// item as it was.
TEST_F(MemcachedMetaTest, BadInputAndRefusalsChangeNothing) {
  expect("ms have 3 F4 T0\r\nold\r\n", "HD\r\n");
  const uint64_t cas = cas_of("have");
  const std::string bad[][2] = {
      {"mg have zz\r\n", "CLIENT_ERROR invalid flag\r\n"},
      {"mg have v v\r\n", "CLIENT_ERROR duplicate flag\r\n"},
      {"mg have Tx\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
      {"mg have E1\r\n", "CLIENT_ERROR invalid flag\r\n"},
      {"mg have O" + std::string(33, 'o') + "\r\n", "CLIENT_ERROR opaque token too long\r\n"},
      {"mg have v 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9\r\n", "CLIENT_ERROR options flags are too long\r\n"},
      {"mg " + std::string(251, 'k') + " v\r\n", "CLIENT_ERROR bad command line format\r\n"},
      {"ms have 3 MX\r\nnew\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n"},
      {"ms have 3 Ms q\r\nnew\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n"},
      {"ms have 3 Fx\r\nnew\r\n", "CLIENT_ERROR bad command line format\r\n"},
      {"ms have 3 S5\r\nnew\r\n", "CLIENT_ERROR invalid flag\r\n"},
      {"ms have 3 Cx\r\nnew\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
      {"ms have 3 q q\r\nnew\r\n", "CLIENT_ERROR duplicate flag\r\n"},
      {"ms have 2\r\nnew\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n"},  // then "\n" alone
      {"md have Tx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"md have q q\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"md have x\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ma have Dx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ma have D18446744073709551616\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ma have Mz\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n"},
      {"ma have Nx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ma have N0 J18446744073709551616\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ma have Cx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ma have T\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"md have C\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"md have C1 C2\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
      {"ms have 3 MA Cx\r\nnew\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
      // What the store refuses, or cannot compare: the CAS is another.
      {"ms have 3 MA C" + std::to_string(cas + 1) + "\r\nnew\r\n", "EX\r\n"},
      {"md have C" + std::to_string(cas + 1) + "\r\n", "EX\r\n"},
      {"ma have N0 J5 T9\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
      // What the store cannot serve yet.
      {"mg have N30 v\r\n", "SERVER_ERROR not supported yet (mg flags N R h l)\r\n"},
      {"mg have h\r\n", "SERVER_ERROR not supported yet (mg flags N R h l)\r\n"},
      {"ms have 3 c\r\nnew\r\n", "SERVER_ERROR not supported yet (ms flags c, I with C)\r\n"},
      {"ms have 3 I C" + std::to_string(cas) + "\r\nnew\r\n",
       "SERVER_ERROR not supported yet (ms flags c, I with C)\r\n"},
      {"ms have 3 MA I C" + std::to_string(cas) + "\r\nnew\r\n",
       "SERVER_ERROR not supported yet (ms flags c, I with C)\r\n"},
      {"md have I\r\n", "SERVER_ERROR not supported yet (md flag I)\r\n"},
      {"md have I C" + std::to_string(cas) + "\r\n", "SERVER_ERROR not supported yet (md flag I)\r\n"},
      {"me have\r\n", "SERVER_ERROR not supported (me: memcached's debug command)\r\n"},
  };
  for (const auto& [request, error] : bad) expect(request, error);
  // A key too long: the data block is read as the next command (1.6.18).
  expect("ms " + std::string(251, 'k') + " 3\r\nnew\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
  expect("mg have v f t c\r\n", "VA 3 f4 t-1 c" + std::to_string(cas) + "\r\nold\r\n");
}

// An append past --max_value_bytes: set's words for a value that does not
// fit (memcached 1.6.18 answers NS), and the item as it was.
TEST_F(MemcachedMetaTest, AppendPastTheValueLimitChangesNothing) {
  const std::string big(4000, 'x');
  expect("ms big 4000\r\n" + big + "\r\n", "HD\r\n");
  const std::string error =
      "SERVER_ERROR out of memory storing object: append would make a value of 4200 bytes; the limit "
      "(--max_value_bytes) is 4096; nothing was changed\r\n";
  expect("ms big 200 MA q\r\n" + std::string(200, 'y') + "\r\n", error);
  expect("mg big s\r\n", "HD s4000\r\n");
}

// mg counts in cmd_get, ms in cmd_set, md in cmd_delete, as memcached counts
// them (its md counts in delete_hits/delete_misses); refused ones count nowhere.
TEST_F(MemcachedMetaTest, StatsCountMetaCommands) {
  auto stat = [&](const std::string& name) -> int64_t {
    EXPECT_TRUE(socket_->send("stats\r\n"));
    std::string all;
    while (all.size() < 5 || all.compare(all.size() - 5, 5, "END\r\n") != 0) {
      const std::string c = socket_->read(1);
      if (c.empty()) break;
      all += c;
    }
    const std::string needle = "STAT " + name + " ";
    const size_t at = all.find(needle);
    return at == std::string::npos ? -1 : std::strtoll(all.c_str() + at + needle.size(), nullptr, 10);
  };
  const int64_t gets = stat("cmd_get"), sets = stat("cmd_set"), deletes = stat("cmd_delete");
  expect("mg a v\r\nms a 1\r\nx\r\nmg a\r\nmd a\r\nmg a N5\r\nmn\r\n",
         "EN\r\nHD\r\nHD\r\nHD\r\nSERVER_ERROR not supported yet (mg flags N R h l)\r\nMN\r\n");
  EXPECT_EQ(stat("cmd_get"), gets + 2);
  EXPECT_EQ(stat("cmd_set"), sets + 1);
  EXPECT_EQ(stat("cmd_delete"), deletes + 1);
}

// A random mix of meta and classic commands over a few keys against a model
// of each item's value, flags, TTL and CAS (the CAS as last read: any write
// changes it, nothing else does).
TEST_F(MemcachedMetaTest, RandomMixMatchesModel) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE("GPHKV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  struct Item {
    std::string value;
    uint32_t flags = 0;
    int64_t ttl = -1;  // as set; -1 none
    uint64_t cas = 0;  // 0: not read since the last write
  };
  std::map<std::string, Item> model;
  auto random_value = [&]() -> std::string {
    if (uniform(0, 2) == 0) {  // a number, now and then padded as memcached pads a decremented one
      const std::string number = std::to_string(rng() >> uniform(0, 63));
      return number + std::string(uniform(0, 3) == 0 ? uniform(1, 2) : 0, ' ');
    }
    std::string v(uniform(0, 12), ' ');
    for (char& c : v) c = static_cast<char>(uniform(0, 255));
    return v;
  };
  auto numeric = [](const std::string& v, uint64_t* n) {
    const std::optional<uint64_t> counter = server::model_counter(v);
    if (counter) *n = *counter;
    return counter.has_value();
  };
  for (int step = 0; step < 1500; ++step) {
    const std::string key = "key" + std::to_string(uniform(0, 5));
    auto it = model.find(key);
    const bool present = it != model.end();
    const std::string where = "step " + std::to_string(step) + " key " + key;
    switch (uniform(0, 10)) {
      case 0:
      case 1: {  // ms in a random mode
        const std::string value = random_value();
        const uint32_t flags = static_cast<uint32_t>(uniform(0, 3) == 0 ? rng() : uniform(0, 9));
        const int64_t ttl = uniform(0, 2) == 0 ? 0 : static_cast<int64_t>(uniform(1000, 100000));
        const char mode = "SEARP"[uniform(0, 4)];
        const bool quiet = uniform(0, 3) == 0;
        const bool stored = mode == 'S' || (mode == 'E' ? !present : present);
        std::string request = "ms " + key + " " + std::to_string(value.size()) + " F" + std::to_string(flags) + " T" +
                              std::to_string(ttl) + " M" + mode + (quiet ? " q" : "") + "\r\n" + value + "\r\n";
        expect_next(request, stored ? (quiet ? "" : "HD\r\n") : "NS\r\n");
        if (quiet && stored) expect_next("mn\r\n", "MN\r\n");
        if (!stored) break;
        Item& item = model[key];
        if (mode == 'A' || mode == 'P') {
          item.value = mode == 'A' ? item.value + value : value + item.value;
        } else {
          item = Item{value, flags, ttl == 0 ? -1 : ttl, 0};
        }
        item.cas = 0;
        break;
      }
      case 2: {  // ms C with the right CAS, or a wrong one
        if (!present || it->second.cas == 0) break;
        const bool right = uniform(0, 1) == 0;
        const uint64_t cas = right ? it->second.cas : it->second.cas + uniform(1, 1000);
        expect_next("ms " + key + " 1 C" + std::to_string(cas) + "\r\nC\r\n", right ? "HD\r\n" : "EX\r\n");
        if (right) it->second = Item{"C", 0, -1, 0};
        break;
      }
      case 3:
      case 4: {  // mg with every flag it serves
        ASSERT_TRUE(socket_->send("mg " + key + " s v f t k c O" + std::to_string(step) + "\r\n"));
        const std::string r = reply();
        if (!present) {
          ASSERT_EQ(r, "EN k" + key + " O" + std::to_string(step) + "\r\n") << where;
          break;
        }
        const Item& item = it->second;
        const std::string head = "VA " + std::to_string(item.value.size()) + " s" + std::to_string(item.value.size()) +
                                 " f" + std::to_string(item.flags) + " t";
        ASSERT_EQ(r.substr(0, head.size()), head) << where;
        const int64_t ttl = flag_of(r, 't');
        if (item.ttl < 0) {
          EXPECT_EQ(ttl, -1) << where;
        } else {
          EXPECT_LE(ttl, item.ttl) << where;
          EXPECT_GE(ttl, item.ttl - 60) << where;  // the test takes well under a minute
        }
        const uint64_t cas = static_cast<uint64_t>(flag_of(r, 'c'));
        if (item.cas != 0) EXPECT_EQ(cas, item.cas) << where;
        EXPECT_NE(cas, 0u) << where;
        it->second.cas = cas;
        EXPECT_EQ(r.substr(r.find("\r\n") + 2), item.value + "\r\n") << where;
        break;
      }
      case 5: {  // md, or delete
        if (uniform(0, 1) == 0) {
          expect_next("md " + key + " k\r\n", present ? "HD k" + key + "\r\n" : "NF k" + key + "\r\n");
        } else {
          expect_next("delete " + key + "\r\n", present ? "DELETED\r\n" : "NOT_FOUND\r\n");
        }
        model.erase(key);
        break;
      }
      case 6:
      case 7: {  // ma or incr/decr
        const uint64_t delta = uniform(0, 3) == 0 ? rng() : uniform(0, 100);
        const bool increment = uniform(0, 1) == 0;
        uint64_t n = 0;
        std::string expected;
        const bool is_number = present && numeric(it->second.value, &n);
        if (is_number) n = increment ? n + delta : (n > delta ? n - delta : 0);
        const bool classic = uniform(0, 2) == 0;
        if (!present) {
          expected = classic ? "NOT_FOUND\r\n" : "NF\r\n";
        } else if (!is_number) {
          expected = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
        } else {
          const std::string text = std::to_string(n);
          expected = classic ? text + "\r\n" : "VA " + std::to_string(text.size()) + "\r\n" + text + "\r\n";
        }
        const std::string request =
            classic ? std::string(increment ? "incr " : "decr ") + key + " " + std::to_string(delta) + "\r\n"
                    : "ma " + key + " v D" + std::to_string(delta) + (increment ? " MI" : " MD") + "\r\n";
        expect_next(request, expected);
        if (is_number) {
          it->second.value = std::to_string(n);
          it->second.cas = 0;
        }
        break;
      }
      case 8: {  // classic set, or gets
        if (uniform(0, 1) == 0) {
          const std::string value = random_value();
          const uint32_t flags = static_cast<uint32_t>(uniform(0, 9));
          expect_next("set " + key + " " + std::to_string(flags) + " 0 " + std::to_string(value.size()) + "\r\n" +
                          value + "\r\n",
                      "STORED\r\n");
          model[key] = Item{value, flags, -1, 0};
        } else if (present && it->second.cas != 0) {
          const Item& item = it->second;
          expect_next("gets " + key + "\r\n", "VALUE " + key + " " + std::to_string(item.flags) + " " +
                                                  std::to_string(item.value.size()) + " " + std::to_string(item.cas) +
                                                  "\r\n" + item.value + "\r\nEND\r\n");
        }
        break;
      }
      case 9: {  // the compare and create flags: ms C with a mode, md C, ma N C T
        const bool known = present && it->second.cas != 0;
        const bool right = known && uniform(0, 1) == 0;
        const uint64_t cas = right ? it->second.cas : known ? it->second.cas + uniform(1, 1000) : uniform(1, 1000);
        const std::string c = " C" + std::to_string(cas);
        switch (uniform(0, 2)) {
          case 0: {                        // ms with C and a mode
            if (present && !known) break;  // its CAS is not known: no answer to predict
            const char mode = "SEARP"[uniform(0, 4)];
            std::string want;
            if (mode == 'E') {
              want = present ? "NS\r\n" : "HD\r\n";
            } else if (!present) {
              want = mode == 'A' || mode == 'P' ? "NS\r\n" : "NF\r\n";
            } else {
              want = right ? "HD\r\n" : "EX\r\n";
            }
            expect_next("ms " + key + " 1 M" + mode + c + "\r\n*\r\n", want);
            if (want != "HD\r\n") break;
            Item& item = model[key];
            if (mode == 'A' || mode == 'P') {
              item.value = mode == 'A' ? item.value + "*" : "*" + item.value;
            } else {
              item = Item{"*", 0, -1, 0};
            }
            item.cas = 0;
            break;
          }
          case 1: {  // md C
            if (present && !known) break;
            const std::string want = !present ? "NF\r\n" : right ? "HD\r\n" : "EX\r\n";
            expect_next("md " + key + c + "\r\n", want);
            if (right) model.erase(key);
            break;
          }
          default: {  // ma N J T C, with t and c returned
            if (present && !known) break;
            const uint64_t initial = uniform(0, 3) == 0 ? rng() : uniform(0, 100);
            const int64_t ttl = uniform(0, 1) == 0 ? 0 : static_cast<int64_t>(uniform(1000, 100000));
            const bool touch = uniform(0, 1) == 0;
            const std::string request = "ma " + key + " N" + std::to_string(ttl) + " J" + std::to_string(initial) +
                                        (touch ? " T" + std::to_string(ttl) : "") + c + " v t c\r\n";
            ASSERT_TRUE(socket_->send(request));
            const std::string r = reply();
            uint64_t n = 0;
            if (present && it->second.value.empty()) {  // an empty value is non-numeric before C is compared
              ASSERT_EQ(r, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n") << where;
              break;
            }
            if (present && !right) {
              ASSERT_EQ(r, "EX\r\n") << where;
              break;
            }
            if (present && !numeric(it->second.value, &n)) {
              ASSERT_EQ(r, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n") << where;
              break;
            }
            const std::string number = present ? std::to_string(n + 1) : std::to_string(initial);
            const std::string head = "VA " + std::to_string(number.size()) + " t";
            ASSERT_EQ(r.substr(0, head.size()), head) << where << ": " << r;
            ASSERT_EQ(r.substr(r.find("\r\n")), "\r\n" + number + "\r\n") << where;
            Item& item = model[key];
            if (!present) item = Item{};
            // t came after N and T: the TTL they set (N on a hit sets none).
            if (!present || touch) item.ttl = ttl == 0 ? -1 : ttl;
            const int64_t reported = flag_of(r, 't');
            if (item.ttl < 0) {
              EXPECT_EQ(reported, -1) << where;
            } else {
              EXPECT_LE(reported, item.ttl) << where;
              EXPECT_GE(reported, item.ttl - 60) << where;
            }
            item.value = number;
            item.cas = static_cast<uint64_t>(flag_of(r, 'c'));  // the reply's c is the item's new CAS
            EXPECT_GT(item.cas, 0u) << where;
            break;
          }
        }
        break;
      }
      default: {  // a refused or bad meta command: nothing changes
        static const char* const kBad[] = {"mg {} N5 v", "md {} I", "ma {} Nx", "mg {} v v", "md {} Tx", "ma {} Mz"};
        std::string line = kBad[uniform(0, 5)];
        line.replace(line.find("{}"), 2, key);
        ASSERT_TRUE(socket_->send(line + "\r\n"));
        const std::string r = reply();
        EXPECT_TRUE(r.rfind("CLIENT_ERROR ", 0) == 0 || r.rfind("SERVER_ERROR ", 0) == 0) << where << ": " << r;
        break;
      }
    }
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
  }
  expect("mn\r\n", "MN\r\n");
}

}  // namespace
}  // namespace gphkv
