#include "tests/server/data_dir_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/loadgen/child_process.h"

namespace gphkv::testing {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// GPHKV_SERVER, when set, is the binary to run instead of the build's (the
// device bundle's copy); GPHKV_SERVER_FLAGS, split at spaces, is appended to
// the defaults (--backend=cuda on the device: scripts/durability-bench.sh).
std::string server_path() {
  const char* path = std::getenv("GPHKV_SERVER");
  return path != nullptr && *path != '\0' ? path : GPHKV_SERVER_PATH;
}

std::vector<std::string> flags_from_environment() {
  const char* flags = std::getenv("GPHKV_SERVER_FLAGS");
  if (flags == nullptr) return {};
  return absl::StrSplit(flags, ' ', absl::SkipEmpty());
}

}  // namespace

ServerProcess::ServerProcess(Options options) {
  port_ = loadgen::testing::FreePort();
  log_path_ = options.data_dir + ".server.log";
  std::vector<std::string> argv = {server_path(),
                                   "--backend=cpu",
                                   "--listen_address=" + address(),
                                   "--metrics_address=",
                                   "--initial_capacity=1024",
                                   "--memory=256MiB",
                                   "--completion_threads=1",
                                   "--grpc_threads=2",
                                   "--shutdown_grace_ms=1000",
                                   "--data_dir=" + options.data_dir};
  for (std::string& f : flags_from_environment()) argv.push_back(std::move(f));
  argv.insert(argv.end(), options.flags.begin(), options.flags.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (options.file_size_limit > 0) {
      // Ignored signals stay ignored across exec: a write past the limit fails with EFBIG.
      signal(SIGXFSZ, SIG_IGN);
      const rlimit limit{options.file_size_limit, options.file_size_limit};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
    execv(args[0], args.data());
    _exit(127);
  }
}

ServerProcess::~ServerProcess() {
  kill9();
  std::remove(log_path_.c_str());
}

bool ServerProcess::reap(bool wait) {
  if (pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, wait ? 0 : WNOHANG) != pid_) return false;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  return true;
}

bool ServerProcess::wait_serving(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  // Until the server says it listens, a channel would only meet a refused
  // connection and back off for seconds before it tried again.
  while (log().find("serving gphkv.v1.KeyValue on") == std::string::npos) {
    if (reap(false) || std::chrono::steady_clock::now() > deadline) return false;
    sleep_ms(10);
  }
  while (std::chrono::steady_clock::now() < deadline) {
    if (client()->Health().ok()) return true;
    if (reap(false)) return false;
    sleep_ms(20);
  }
  return false;
}

int ServerProcess::wait_exit(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!reap(false)) {
    if (std::chrono::steady_clock::now() > deadline) return -1;
    sleep_ms(10);
  }
  return exit_status_;
}

void ServerProcess::kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  reap(true);
}

int ServerProcess::terminate(double timeout_s) {
  if (pid_ > 0) kill(pid_, SIGTERM);
  const int status = wait_exit(timeout_s);
  if (status < 0) kill9();
  return status;
}

std::string ServerProcess::log() const { return loadgen::testing::ReadFile(log_path_); }

std::unique_ptr<Client> ServerProcess::client() const {
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  o.max_attempts = 1;
  o.coalesce.enabled = false;
  o.own_connection = true;
  return Client::Connect(address(), o);
}

std::string byte_key_name(uint64_t k) {
  if (k % 8 == 3) return std::string("\0bin", 4) + std::to_string(k);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(k));
  return std::string("key:") + hex;
}

namespace {

// A call's keys as the load names them: views of `names` when by bytes.
struct CallKeys {
  CallKeys(absl::Span<const uint64_t> ids, bool byte_keys) : ids(ids), byte_keys(byte_keys) {
    if (!byte_keys) return;
    for (uint64_t k : ids) names.push_back(byte_key_name(k));
    views.assign(names.begin(), names.end());
  }
  absl::StatusOr<GetResult> get(Client& c) const { return byte_keys ? c.Get(views) : c.Get(ids); }
  absl::StatusOr<std::vector<bool>> put(Client& c, absl::Span<const std::string_view> values) const {
    return byte_keys ? c.Put(views, values) : c.Put(ids, values);
  }
  absl::StatusOr<std::vector<bool>> del(Client& c) const { return byte_keys ? c.Delete(views) : c.Delete(ids); }

  absl::Span<const uint64_t> ids;
  bool byte_keys;
  std::vector<std::string> names;
  std::vector<std::string_view> views;
};

}  // namespace

std::map<uint64_t, Value> read_back(Client& client, const std::vector<uint64_t>& keys, std::string* error,
                                    bool byte_keys) {
  std::map<uint64_t, Value> out;
  for (size_t b = 0; b < keys.size(); b += 1000) {
    const absl::Span<const uint64_t> chunk = absl::MakeConstSpan(keys).subspan(b, 1000);
    auto got = CallKeys(chunk, byte_keys).get(client);
    if (!got.ok()) {
      *error = got.status().ToString();
      return {};
    }
    for (size_t i = 0; i < chunk.size(); ++i) {
      out[chunk[i]] = got->found(i) ? Value(std::string(got->value(i))) : Value();
    }
  }
  return out;
}

uint64_t load_key(const LoadOptions& options, int client, uint64_t index) {
  if (client == 0 && index == 1) return UINT64_MAX;  // the table's sentinel, kept out of band
  // An odd multiplier is a bijection: distinct indices, distinct keys; index 0 of client 0 is key 0.
  return (static_cast<uint64_t>(client) * options.keys_per_client + index) * 0x9E3779B97F4A7C15ULL;
}

WriteLoad::WriteLoad(const std::string& address, const LoadOptions& options, WriteHistory* history)
    : address_(address), options_(options), history_(history), initial_(history->initial()), reached_(options.clients) {
  if (options_.grow) {
    // Continue after the keys an earlier round reached.
    for (int c = 0; c < options_.clients; ++c) {
      uint64_t j = 0;
      while (j < options_.keys_per_client && initial_.count(load_key(options_, c, j))) ++j;
      reached_[c] = std::max<uint64_t>(j, 2);
    }
  }
  for (int c = 0; c < options_.clients; ++c) threads_.emplace_back([this, c] { run(c); });
}

WriteLoad::~WriteLoad() { stop(); }

void WriteLoad::stop() {
  stopping_ = true;
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::vector<uint64_t> WriteLoad::keys() const {
  std::vector<uint64_t> keys;
  for (int c = 0; c < options_.clients; ++c) {
    const uint64_t n = options_.grow ? reached_[c].load() : options_.keys_per_client;
    for (uint64_t j = 0; j < n; ++j) keys.push_back(load_key(options_, c, j));
  }
  return keys;
}

std::string WriteLoad::first_stale_read() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_stale_read_;
}

void WriteLoad::run(int c) {
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  o.max_attempts = 1;  // a failed call's outcome is unknown; retrying would blur it
  o.coalesce.enabled = false;
  o.own_connection = true;
  auto client = Client::Connect(address_, o);
  std::mt19937_64 rng(options_.seed * 1000003 + static_cast<uint64_t>(c));
  // What this client last wrote to each of its keys and was told was done.
  std::map<uint64_t, Value> mine = initial_;
  uint64_t counter = 0;
  auto pick = [&](int n, bool fresh) {
    std::vector<uint64_t> keys;
    if (!fresh)
      n = static_cast<int>(std::min<uint64_t>(n, options_.grow ? reached_[c].load() : options_.keys_per_client));
    while (static_cast<int>(keys.size()) < n) {
      uint64_t j;
      if (fresh && reached_[c] < options_.keys_per_client) {
        j = reached_[c].fetch_add(1);
      } else {
        const uint64_t range = options_.grow ? reached_[c].load() : options_.keys_per_client;
        j = rng() % range;
      }
      const uint64_t k = load_key(options_, c, j);
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    return keys;
  };
  auto value_bytes = [&]() -> uint32_t {
    // Mostly small, now and then up to the maximum.
    return rng() % 16 == 0 ? static_cast<uint32_t>(rng() % (options_.max_value_bytes + 1))
                           : static_cast<uint32_t>(rng() % std::min<uint32_t>(300, options_.max_value_bytes + 1));
  };
  while (!stopping_) {
    const uint64_t dice = rng() % 100;
    const double sent = now_seconds();
    if (dice < 55) {
      // Growing, most puts bring new keys, many at a time.
      const bool fresh = options_.grow && rng() % 4 != 0;
      const std::vector<uint64_t> keys = pick(1 + static_cast<int>(rng() % (fresh ? 32 : 8)), fresh);
      std::vector<std::string> values;
      std::vector<std::string_view> views;
      for (size_t i = 0; i < keys.size(); ++i) {
        std::string v = absl::StrCat("c", c, ":", counter++, ":");
        v.resize(std::max<size_t>(v.size(), value_bytes()), static_cast<char>('a' + counter % 26));
        values.push_back(std::move(v));
      }
      for (const std::string& v : values) views.push_back(v);
      auto r = CallKeys(keys, options_.byte_keys).put(*client, views);
      const double acked = now_seconds();
      for (size_t i = 0; i < keys.size(); ++i) {
        history_->record(keys[i], values[i], sent, acked, r.ok());
        if (r.ok()) mine[keys[i]] = values[i];
      }
      if (!r.ok()) return;
    } else if (dice < 80) {
      const std::vector<uint64_t> keys = pick(1 + static_cast<int>(rng() % 4), false);
      auto r = CallKeys(keys, options_.byte_keys).del(*client);
      const double acked = now_seconds();
      for (uint64_t k : keys) {
        history_->record(k, std::nullopt, sent, acked, r.ok());
        if (r.ok()) mine[k] = std::nullopt;
      }
      if (!r.ok()) return;
    } else {
      const std::vector<uint64_t> keys = pick(1 + static_cast<int>(rng() % 8), false);
      auto r = CallKeys(keys, options_.byte_keys).get(*client);
      if (!r.ok()) return;
      ++acknowledged_;
      for (size_t i = 0; i < keys.size(); ++i) {
        const Value got = r->found(i) ? Value(std::string(r->value(i))) : Value();
        if (got == mine[keys[i]]) continue;
        if (stale_reads_++ == 0) {
          std::lock_guard<std::mutex> lock(mu_);
          first_stale_read_ = absl::StrCat("client ", c, " read key ", keys[i], " as ", got ? *got : "(absent)",
                                           " after writing ", mine[keys[i]] ? *mine[keys[i]] : "(absent)");
        }
      }
      continue;
    }
    ++acknowledged_;
  }
}

}  // namespace gphkv::testing
