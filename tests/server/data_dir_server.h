// gphkv-server as a child process on a data directory, for the tests that
// kill it, damage its files and start it again (durable_server_test.cc,
// data_dir_damage_test.cc), and the write load they run against it: clients
// that each own a range of keys, issue calls one at a time and record every
// write with the times it was sent and acknowledged (durable_model.h).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gphkv/client/client.h"
#include "tests/server/durable_model.h"

namespace gphkv::testing {

class ServerProcess {
 public:
  struct Options {
    std::string data_dir;
    // After the defaults (CPU backend, 127.0.0.1, a free port, no metrics
    // endpoint, a small first table) and $GPHKV_SERVER_FLAGS, so they win.
    std::vector<std::string> flags;
    // RLIMIT_FSIZE of the process (0: none), with SIGXFSZ ignored, so a
    // write past it fails with EFBIG: a disk error on demand.
    uint64_t file_size_limit = 0;
  };

  explicit ServerProcess(Options options);
  // SIGKILL if it still runs.
  ~ServerProcess();

  // True once the health service says SERVING; false if the process exited
  // first or timeout_s passed.
  bool wait_serving(double timeout_s = 60);
  // The exit status (128 + signal when killed) once it exited within
  // timeout_s (or before); -1 otherwise.
  int wait_exit(double timeout_s);
  // SIGKILL, as a crash: nothing drains, nothing is synced.
  void kill9();
  // SIGTERM: the server drains, takes its final snapshot and exits.
  int terminate(double timeout_s = 120);

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Its output so far.
  std::string log() const;
  // Unary calls, no retries: a failed call is an unknown outcome.
  std::unique_ptr<Client> client() const;

 private:
  // Whether it has exited (then exit_status_ holds how); waits for it if `wait`.
  bool reap(bool wait);

  std::string log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
  int exit_status_ = -1;
};

// The byte key a load with byte keys names key k by: "key:" and k in hex,
// or, for one key in eight, binary bytes with a NUL (issue 26).
std::string byte_key_name(uint64_t k);

// Every key's value (nullopt: not stored), read in calls of up to 1000 keys,
// by their byte_key_name when `byte_keys`. Empty on an RPC error (then
// *error says it).
std::map<uint64_t, Value> read_back(Client& client, const std::vector<uint64_t>& keys, std::string* error,
                                    bool byte_keys = false);

struct LoadOptions {
  int clients = 4;
  // Keys each client owns: the key of (client c, index j) is a scrambled
  // c * keys_per_client + j; client 0 also owns 0 and UINT64_MAX.
  uint64_t keys_per_client = 500;
  uint32_t max_value_bytes = 2000;
  // Puts go mostly to keys never written, in order, so the table grows
  // through rebuilds; otherwise to keys drawn from the whole range.
  bool grow = false;
  // The clients write and read each key by its byte_key_name (the history
  // still names it by its id).
  bool byte_keys = false;
  uint64_t seed = 0;
};

uint64_t load_key(const LoadOptions& options, int client, uint64_t index);

// The clients run until stop() or their first failed call (the kill): each
// issues puts of 1-8 keys, deletes of 1-4 and gets of 1-8 of its own keys,
// and checks every get against what it last wrote (read your writes).
class WriteLoad {
 public:
  // `history` must hold every key's state before the load (set_initial).
  WriteLoad(const std::string& address, const LoadOptions& options, WriteHistory* history);
  ~WriteLoad();
  // Waits for the clients (they end at their first failure, or at stop()).
  void stop();

  // Keys the clients wrote or may have (in grow mode: the ones reached).
  std::vector<uint64_t> keys() const;
  uint64_t acknowledged_calls() const { return acknowledged_.load(); }
  // Gets that did not return what the client had written and been acknowledged.
  uint64_t stale_reads() const { return stale_reads_.load(); }
  std::string first_stale_read() const;

 private:
  void run(int client);

  const std::string address_;
  const LoadOptions options_;
  WriteHistory* history_;
  const std::map<uint64_t, Value> initial_;  // the keys' states before the load
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> acknowledged_{0}, stale_reads_{0};
  std::vector<std::atomic<uint64_t>> reached_;  // grow mode: per client, key indices used
  mutable std::mutex mu_;
  std::string first_stale_read_;
  std::vector<std::thread> threads_;
};

}  // namespace gphkv::testing
