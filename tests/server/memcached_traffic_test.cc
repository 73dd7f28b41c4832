// The memcached port under traffic: pipelined commands answered in order,
// many connections at once, a random mix checked against a model, the
// connection limit, the idle timeout, a client that does not read its
// replies (it must not hold up the others), shutdown with connections open,
// and a real client library (Debian's python3-pymemcache) when installed.
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::MemcacheSocket;

constexpr uint32_t kMaxValueBytes = 8192;
server::ServerOptions memcached_options() { return testing::memcached_test_options(kMaxValueBytes); }

// What memcached's incr and decr read as a number: 1 to 20 digits, maybe
// followed by spaces, at most 2^64 - 1; nullopt for anything else. Written
// apart from the server's parse_counter so the test checks it.
std::optional<uint64_t> decimal(std::string value) {
  while (!value.empty() && value.back() == ' ') value.pop_back();
  if (value.empty() || value.size() > 20) return std::nullopt;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  if (value.size() == 20 && value > "18446744073709551615") return std::nullopt;
  return std::stoull(value);
}

std::string value_reply(const std::string& key, const std::string& value, uint32_t flags = 0) {
  return absl::StrCat("VALUE ", key, " ", flags, " ", value.size(), "\r\n", value, "\r\n");
}

TEST(MemcachedTrafficTest, PipelinedCommandsAnsweredInOrder) {
  auto server = testing::start_server(memcached_options());
  ASSERT_NE(server, nullptr);
  MemcacheSocket s(server->memcached_port());
  std::string request, expected;
  std::unordered_map<std::string, std::string> model;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = absl::StrCat("p", i % 37);
    switch (i % 3) {
      case 0: {
        const std::string value = absl::StrCat("value-", i);
        absl::StrAppend(&request, "set ", key, " 0 0 ", value.size(), "\r\n", value, "\r\n");
        absl::StrAppend(&expected, "STORED\r\n");
        model[key] = value;
        break;
      }
      case 1: {
        const std::string other = absl::StrCat("p", (i * 7) % 37);
        absl::StrAppend(&request, "get ", key, " ", other, "\r\n");
        for (const std::string& k : {key, other}) {
          if (auto it = model.find(k); it != model.end()) expected += value_reply(k, it->second);
        }
        absl::StrAppend(&expected, "END\r\n");
        break;
      }
      default:
        absl::StrAppend(&request, "delete ", key, "\r\n");
        absl::StrAppend(&expected, model.erase(key) ? "DELETED\r\n" : "NOT_FOUND\r\n");
    }
  }
  ASSERT_TRUE(s.send(request));
  EXPECT_EQ(s.read(expected.size()), expected);
}

TEST(MemcachedTrafficTest, ManyConnectionsAtOnce) {
  auto server = testing::start_server(memcached_options());
  ASSERT_NE(server, nullptr);
  constexpr int kConnections = 32;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kConnections);
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&, c] {
      MemcacheSocket s(server->memcached_port());
      if (!s.connected()) {
        failures[c] = "could not connect";
        return;
      }
      for (int round = 0; round < 50; ++round) {
        std::string request, expected;
        for (int k = 0; k < 10; ++k) {
          const std::string key = absl::StrCat("c", c, ":", k);
          const std::string value = absl::StrCat(round, ":", c, ":", k);
          absl::StrAppend(&request, "set ", key, " 0 0 ", value.size(), "\r\n", value, "\r\n");
          absl::StrAppend(&expected, "STORED\r\n");
        }
        absl::StrAppend(&request, "get");
        for (int k = 0; k < 10; ++k) absl::StrAppend(&request, " c", c, ":", k);
        absl::StrAppend(&request, "\r\n");
        for (int k = 0; k < 10; ++k) {
          expected += value_reply(absl::StrCat("c", c, ":", k), absl::StrCat(round, ":", c, ":", k));
        }
        absl::StrAppend(&expected, "END\r\n");
        if (!s.send(request)) {
          failures[c] = "send failed";
          return;
        }
        const std::string got = s.read(expected.size());
        if (got != expected) {
          failures[c] = absl::StrCat("round ", round, ": got ", got, " expected ", expected);
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kConnections; ++c) EXPECT_EQ(failures[c], "") << "connection " << c;
}

// Random commands, good and bad, in pipelined bursts on a few connections
// taking turns; every reply is checked against a std::unordered_map. On one
// CPU store, and on three, where a multi-get is cut over the partitions and
// its answers merged in request order.
class MemcachedModelTest : public ::testing::TestWithParam<uint32_t> {};

INSTANTIATE_TEST_SUITE_P(Partitions, MemcachedModelTest, ::testing::Values(1u, 3u));

TEST_P(MemcachedModelTest, RandomCommandsMatchAModel) {
  server::ServerOptions o = memcached_options();
  o.cpu_partitions = GetParam();
  auto server = testing::start_server(o);
  ASSERT_NE(server, nullptr);
  // A fresh seed each run; GPHKV_TEST_SEED replays one.
  const auto seed = static_cast<uint32_t>(engine::testing::test_seed());
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Keys of 1 to 250 printable bytes; a few share a prefix.
  std::vector<std::string> keys;
  for (int i = 0; i < 48; ++i) {
    std::string k = i % 4 == 0 ? std::string("shared:") : std::string();
    const int length = i % 8 == 1 ? 250 - static_cast<int>(k.size()) : uniform(1, 30);
    for (int j = 0; j < length; ++j) k.push_back(static_cast<char>(uniform(33, 126)));
    keys.push_back(k);
  }
  auto random_value = [&] {
    std::string v(static_cast<size_t>(uniform(0, uniform(0, 1) ? 16 : 3000)), '\0');
    for (char& ch : v) ch = static_cast<char>(uniform(0, 255));
    return v;
  };
  std::unordered_map<std::string, std::string> model;
  std::unordered_map<std::string, uint32_t> flags;  // each stored key's client flags
  std::vector<std::unique_ptr<MemcacheSocket>> sockets;
  for (int i = 0; i < 4; ++i) sockets.push_back(std::make_unique<MemcacheSocket>(server->memcached_port()));
  for (int burst = 0; burst < 150; ++burst) {
    MemcacheSocket& s = *sockets[static_cast<size_t>(uniform(0, 3))];
    std::string request, expected;
    const int commands = uniform(1, 40);
    for (int i = 0; i < commands; ++i) {
      const std::string& key = keys[static_cast<size_t>(uniform(0, static_cast<int>(keys.size()) - 1))];
      const bool noreply = uniform(0, 5) == 0;
      const std::string tail = noreply ? " noreply\r\n" : "\r\n";
      switch (uniform(0, 10)) {
        case 0:
        case 1:
        case 2: {
          const std::string value = random_value();
          absl::StrAppend(&request, "set ", key, " 0 0 ", value.size(), tail, value, "\r\n");
          if (!noreply) expected += "STORED\r\n";
          model[key] = value;
          flags[key] = 0;
          break;
        }
        case 3:
        case 4:
        case 5: {
          absl::StrAppend(&request, "get");
          std::string reply;
          for (int n = uniform(1, 20); n > 0; --n) {
            const std::string& k = keys[static_cast<size_t>(uniform(0, static_cast<int>(keys.size()) - 1))];
            absl::StrAppend(&request, " ", k);
            if (auto it = model.find(k); it != model.end()) reply += value_reply(k, it->second, flags[k]);
          }
          absl::StrAppend(&request, "\r\n");
          expected += reply + "END\r\n";
          break;
        }
        case 6:
          absl::StrAppend(&request, "delete ", key, tail);
          if (!noreply) expected += model.count(key) ? "DELETED\r\n" : "NOT_FOUND\r\n";
          model.erase(key);
          flags.erase(key);
          break;
        case 7: {
          // The conditional writes, decided against what the key holds.
          const std::string value = random_value();
          const int verb = uniform(0, 3);
          const char* verbs[] = {"add", "replace", "append", "prepend"};
          absl::StrAppend(&request, verbs[verb], " ", key, " 0 0 ", value.size(), tail, value, "\r\n");
          auto it = model.find(key);
          const bool stored = verb == 0 ? it == model.end() : it != model.end();
          const bool too_big = stored && verb >= 2 && it->second.size() + value.size() > kMaxValueBytes;
          if (too_big) {
            // Refused whole, the item kept (docs/memcached.md: an append past --max_value_bytes).
            if (!noreply) {
              absl::StrAppend(&expected, "SERVER_ERROR out of memory storing object: ", verbs[verb],
                              " would make a value of ", it->second.size() + value.size(),
                              " bytes; the limit (--max_value_bytes) is ", kMaxValueBytes, "; nothing was changed\r\n");
            }
            break;
          }
          if (!noreply) expected += stored ? "STORED\r\n" : "NOT_STORED\r\n";
          if (stored) {
            if (verb == 2) {
              it->second += value;
            } else if (verb == 3) {
              it->second = value + it->second;
            } else {
              model[key] = value;  // add and replace store their flags, 0 here
              flags[key] = 0;
            }
          }
          break;
        }
        case 9: {
          if (uniform(0, 1) == 0) {
            // A number to count with (sometimes near 2^64, to wrap).
            const std::string number = std::to_string(std::uniform_int_distribution<uint64_t>()(rng) >> uniform(0, 63));
            absl::StrAppend(&request, "set ", key, " 0 0 ", number.size(), tail, number, "\r\n");
            if (!noreply) expected += "STORED\r\n";
            model[key] = number;
            flags[key] = 0;
            break;
          }
          const bool incr = uniform(0, 1) == 0;
          const uint64_t delta = std::uniform_int_distribution<uint64_t>()(rng) >> uniform(0, 63);
          absl::StrAppend(&request, incr ? "incr " : "decr ", key, " ", delta, tail);
          auto it = model.find(key);
          std::optional<uint64_t> now;
          if (it != model.end()) now = decimal(it->second);
          std::string reply;
          if (it == model.end()) {
            reply = "NOT_FOUND\r\n";
          } else if (!now) {
            reply = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
          } else {
            const uint64_t next = incr ? *now + delta : (*now > delta ? *now - delta : 0);
            it->second = std::to_string(next);
            reply = it->second + "\r\n";
          }
          if (!noreply) expected += reply;
          break;
        }
        case 8: {
          const std::string value = random_value();
          // Flags kept; incr, decr, append and prepend keep them too.
          const uint32_t f = static_cast<uint32_t>(uniform(1, 1 << 30));
          absl::StrAppend(&request, "set ", key, " ", f, " 0 ", value.size(), tail, value, "\r\n");
          if (!noreply) expected += "STORED\r\n";
          model[key] = value;
          flags[key] = f;
          break;
        }
        default: absl::StrAppend(&request, "garbage ", key, "\r\n"); expected += "ERROR\r\n";
      }
    }
    // The next burst may go to another connection, served by another loop
    // thread: a noreply write at the end of this one must have taken effect
    // first. A reply is written only once every command before it on its
    // connection was answered, so mn's MN says so (memcached's way to sync
    // a pipeline of quiet commands); without it, across connections, neither
    // memcached nor gphkv promises an order.
    request += "mn\r\n";
    expected += "MN\r\n";
    ASSERT_TRUE(s.send(request));
    const std::string got = s.read(expected.size());
    if (got != expected) {
      size_t at = 0;
      while (at < got.size() && at < expected.size() && got[at] == expected[at]) ++at;
      const size_t from = at > 200 ? at - 200 : 0;
      FAIL() << "burst " << burst << ": the reply differs from byte " << at << " of " << expected.size() << " (got "
             << got.size() << ")\nrequest:\n"
             << request.substr(0, 4000) << "\nexpected from byte " << from << ":\n"
             << expected.substr(from, 600) << "\ngot:\n"
             << got.substr(from, 600);
    }
  }
  // Nothing extra was sent on any connection.
  for (auto& s : sockets) EXPECT_EQ(s->read_available(std::chrono::milliseconds(20)), "");
}

TEST(MemcachedTrafficTest, ConnectionsPastTheLimitAreTurnedAway) {
  server::ServerOptions o = memcached_options();
  o.memcached.max_connections = 3;
  auto server = testing::start_server(o);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<MemcacheSocket>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<MemcacheSocket>(server->memcached_port()));
    ASSERT_EQ(open.back()->round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  }
  MemcacheSocket extra(server->memcached_port());
  const std::string refusal = "ERROR Too many open connections\r\n";
  EXPECT_EQ(extra.read(refusal.size()), refusal);
  EXPECT_TRUE(extra.closed_by_peer());
  // One closes: a new one is served (once the server has seen the close).
  open.pop_back();
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    MemcacheSocket again(server->memcached_port());
    served = again.round_trip("mn\r\n", "MN\r\n") == "MN\r\n";
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
}

TEST(MemcachedTrafficTest, IdleConnectionsClose) {
  server::ServerOptions o = memcached_options();
  o.memcached.idle_timeout = std::chrono::seconds(1);
  auto server = testing::start_server(o);
  ASSERT_NE(server, nullptr);
  MemcacheSocket idle(server->memcached_port());
  MemcacheSocket busy(server->memcached_port());
  ASSERT_EQ(idle.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  const auto start = std::chrono::steady_clock::now();
  // The busy one sends every 200 ms for 2 s and stays open.
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
    ASSERT_EQ(busy.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(idle.closed_by_peer(std::chrono::seconds(2)));
  EXPECT_EQ(busy.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
}

TEST(MemcachedTrafficTest, AClientThatDoesNotReadHoldsUpNoOne) {
  auto server = testing::start_server(memcached_options());
  ASSERT_NE(server, nullptr);
  MemcacheSocket writer(server->memcached_port());
  const std::string big(8000, 'b');
  ASSERT_EQ(writer.round_trip("set big 0 0 8000\r\n" + big + "\r\n", "STORED\r\n"), "STORED\r\n");
  // 4000 gets of 8000 bytes: 32 MB of replies, far past the socket buffers
  // and the connection's output bound, which it does not read for now.
  MemcacheSocket stalled(server->memcached_port());
  std::string gets;
  for (int i = 0; i < 4000; ++i) gets += "get big\r\n";
  ASSERT_TRUE(stalled.send(gets));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Others are served meanwhile, promptly.
  MemcacheSocket other(server->memcached_port());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    const std::string value = absl::StrCat("v", i);
    ASSERT_EQ(other.round_trip(absl::StrCat("set o 0 0 ", value.size(), "\r\n", value, "\r\nget o\r\n"),
                               "STORED\r\n" + value_reply("o", value) + "END\r\n"),
              "STORED\r\n" + value_reply("o", value) + "END\r\n");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The stalled client gets every reply, in order, once it reads.
  const std::string one = value_reply("big", big) + "END\r\n";
  const std::string all = stalled.read(one.size() * 4000, std::chrono::seconds(60));
  ASSERT_EQ(all.size(), one.size() * 4000);
  EXPECT_EQ(all.substr(all.size() - one.size()), one);
}

TEST(MemcachedTrafficTest, ShutdownAnswersAndCloses) {
  auto server = testing::start_server(memcached_options());
  ASSERT_NE(server, nullptr);
  MemcacheSocket a(server->memcached_port());
  MemcacheSocket idle(server->memcached_port());
  ASSERT_EQ(a.round_trip("set s 0 0 1\r\nx\r\n", "STORED\r\n"), "STORED\r\n");
  ASSERT_EQ(idle.round_trip("mn\r\n", "MN\r\n"), "MN\r\n");
  // A client with replies it does not read: shutdown closes it after the grace.
  MemcacheSocket stalled(server->memcached_port());
  std::string gets;
  for (int i = 0; i < 2000; ++i) gets += "get s\r\n";
  ASSERT_TRUE(stalled.send(gets));
  const auto start = std::chrono::steady_clock::now();
  server->shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  EXPECT_TRUE(a.closed_by_peer());
  EXPECT_TRUE(idle.closed_by_peer());
  EXPECT_TRUE(stalled.closed_by_peer());
}

// Debian's python3-pymemcache against the port: a client library nobody here wrote.
TEST(MemcachedTrafficTest, PymemcacheClientWorks) {
  // Debian's package is for Debian's python3, which a python3 earlier on the
  // PATH (pyenv, a virtualenv) may not be.
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    if (std::system(absl::StrCat(candidate, " -c 'import pymemcache' >/dev/null 2>&1").c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    GTEST_SKIP() << "python3-pymemcache is not installed (apt-get install python3-pymemcache)";
  }
  auto server = testing::start_server(memcached_options());
  ASSERT_NE(server, nullptr);
  const std::string script = R"PY(
import sys
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheServerError
c = Client(('127.0.0.1', int(sys.argv[1])), default_noreply=False, timeout=10)
assert c.set('py:a', b'1') is True
assert c.get('py:a') == b'1'
assert c.get_many(['py:a', 'py:none']) == {'py:a': b'1'}
assert c.set_many({'py:m1': b'x', 'py:m2': b'y' * 5000}) == []
assert c.get_many(['py:m1', 'py:m2']) == {'py:m1': b'x', 'py:m2': b'y' * 5000}
value, unique = c.gets('py:m1')
assert value == b'x' and int(unique) > 0
assert c.delete('py:a') is True
assert c.delete('py:a') is False
assert c.get('py:a') is None
assert c.add('py:b', b'2') is True
assert c.add('py:b', b'3') is False
assert c.replace('py:none', b'3') is False
assert c.append('py:b', b'0') is True
assert c.prepend('py:b', b'1') is True
assert c.get('py:b') == b'120'
assert c.incr('py:b', 5) == 125
assert c.decr('py:b', 200) == 0
assert c.incr('py:none', 1) is None
# cas: True stored, False EXISTS (written since), None NOT_FOUND.
value, unique = c.gets('py:b')
assert value == b'0'
assert c.cas('py:b', b'9', unique) is True
assert c.cas('py:b', b'8', unique) is False
assert c.cas('py:none', b'8', unique) is None
assert c.get('py:b') == b'9'
assert c.touch('py:b', 3600) is True
assert c.touch('py:none', 3600) is False
assert c.gets('py:b')[1] != unique
assert c.version()
c.set('py:quiet', b'q', noreply=True)
assert c.get('py:quiet') == b'q'
# Flags come back with the value (a serde sees them); an expiry in the past
# makes a miss, one ahead keeps the item.
class Flags:
    seen = {}
    def serialize(self, key, value):
        return value, 0
    def deserialize(self, key, value, flags):
        Flags.seen[key] = flags
        return value
f = Client(('127.0.0.1', int(sys.argv[1])), default_noreply=False, timeout=10, serde=Flags())
assert f.set('py:f', b'v', flags=1234567) is True
assert f.get('py:f') == b'v' and Flags.seen['py:f'] == 1234567
assert f.append('py:f', b'w') is True
assert f.get('py:f') == b'vw' and Flags.seen['py:f'] == 1234567
assert f.set('py:e', b'v', expire=-1) is True
assert f.get('py:e') is None
assert f.add('py:e', b'n', expire=3600) is True
assert f.get('py:e') == b'n'
f.quit()
assert c.flush_all() is True
assert c.get_many(['py:b', 'py:m1', 'py:quiet']) == {}
c.quit()
print('pymemcache ok')
)PY";
  const std::string path = ::testing::TempDir() + "/gphkv_pymemcache_check.py";
  {
    std::ofstream out(path);
    out << script;
  }
  const std::string command = absl::StrCat(python, " ", path, " ", server->memcached_port());
  EXPECT_EQ(std::system(command.c_str()), 0) << "the pymemcache script failed (its output is above)";
}

}  // namespace
}  // namespace gphkv
