// What the clients of a server that was then killed were told, and the
// check of what the restarted server holds against it.
//
// Every key has one writer, which issues its calls one at a time, so a key's
// writes form one sequence w_1 .. w_n, each with the time it was sent and the
// time it was acknowledged; only the last may be unknown (the call that the
// kill cut short, or any call that failed: the writer stops there). w_0 is
// the key's state before the round. The restarted server's value of the key
// must be the one some w_i left (i >= 0) such that:
//
//   1. w_i was acknowledged, or it is the unknown last write: nothing that
//      was refused or never sent shows up;
//   2. every acknowledged write after w_i was acknowledged less than
//      `loss_window` seconds before the kill: only a recent suffix is lost
//      (loss_window 0: nothing acknowledged is lost);
//   3. across keys, one moment t explains every key at once, as a prefix of
//      the log would: w_i was sent before t and w_{i+1}, if acknowledged,
//      was acknowledged after t. A hole (a lost batch with later batches
//      kept) breaks this when a kept write was sent after a lost one was
//      acknowledged.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gphkv::testing {

// A key's value; nullopt: not stored.
using Value = std::optional<std::string>;

// Seconds on the steady clock.
double now_seconds();

class WriteHistory {
 public:
  struct Write {
    Value value;
    double sent = 0;
    double acked = 0;    // meaningful when known
    bool known = false;  // acknowledged OK
  };

  // The key's state before the round (w_0).
  void set_initial(uint64_t key, Value value);
  // A write of the key's one writer, in the order it issued them.
  void record(uint64_t key, Value value, double sent, double acked, bool known);

  // Keys with a history, and their states before the round.
  const std::map<uint64_t, Value>& initial() const { return initial_; }
  const std::map<uint64_t, std::vector<Write>>& writes() const { return writes_; }
  // What each key should hold if nothing was lost: its last acknowledged
  // write (or its initial state); for a key whose last write is unknown, that write.
  std::map<uint64_t, Value> expected_if_unknown_applied() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, Value> initial_;
  std::map<uint64_t, std::vector<Write>> writes_;
};

struct CheckResult {
  bool ok = true;
  std::vector<std::string> failures;  // the first few, described
  uint64_t keys = 0;
  uint64_t acknowledged = 0;       // acknowledged writes in the history
  uint64_t lost_acknowledged = 0;  // acknowledged writes the state does not reflect
  double oldest_loss_age = 0;      // seconds before the kill the oldest lost one was acknowledged
  std::string summary() const;
};

// `recovered` holds every key of the history (nullopt: not stored).
CheckResult check_recovered(const WriteHistory& history, const std::map<uint64_t, Value>& recovered, double kill_time,
                            double loss_window);

}  // namespace gphkv::testing
