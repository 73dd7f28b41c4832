// Checks what a driver thread reads against what it wrote: a get of a key
// this thread put sees that value or a later one; a key it deleted is missing
// or has a later value.
//
// Why it can be cheap and sound:
// - One writer per key. Each thread writes only keys of its own
//   (Workload::WriterOf; OpStream draws them), so a key's values come from
//   one thread's writes, and that thread alone can say what its reads must
//   see. Gets still read every key; only the reader's own keys are checked,
//   about 1/threads of a get's keys.
// - A value names its write. Every put stamps its version (the op's place in
//   its thread's stream, from 1; the load phase's is 0) into the value's
//   first bytes (value_pool.h), so a seen value is placed among the thread's
//   writes by an integer compare; the rest of the value must be the key's
//   pool bytes, and its size the key's size, or it is another key's value.
// - State per written key only: the version a read must at least see, and
//   the last delete issued (a missing key is fine if a delete may have run).
//
// What "must see" means depends on what the client promises:
// - kIssued (gphkv::Client, --api=coalesced): a thread's requests take
//   effect in the order it issued them, so a get must see every write the
//   thread issued before it, answered or not.
// - kCompleted (every other path: unary RPCs and pipeline streams spread over
//   connections, memcached's connections): only the writes answered before
//   the get was sent are promised.
// Under kCompleted, writes of one key that overlap in flight may take effect
// in either order: the key then must show the earliest of them (or a later
// write) once all are answered. A write that fails may or may not have taken
// effect: its key is not checked until the next write of it; under kIssued a
// violation found against a write still in flight waits for that write's
// answer (failed: forgotten).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/target.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

enum class ReadCheckMode { kOff, kCompleted, kIssued };
const char* ReadCheckModeName(ReadCheckMode mode);
// "off", "completed", "issued"; "auto" gives `automatic`.
absl::StatusOr<ReadCheckMode> ParseReadCheckMode(const std::string& name, ReadCheckMode automatic);

struct ReadCheckStats {
  uint64_t keys_checked = 0;  // get keys this thread writes, with a write to check them against
  uint64_t stale = 0;         // a value older than a write the get had to see (or not of this run)
  uint64_t missing = 0;       // the key absent, though no delete of it could have run
  uint64_t corrupt = 0;       // a value of the wrong size or bytes: not this key's
  uint64_t violations() const { return stale + missing + corrupt; }
  void Merge(const ReadCheckStats& other);
};

struct ReadCheckOptions {
  ReadCheckMode mode = ReadCheckMode::kOff;
  uint32_t thread = 0;
  uint32_t threads = 1;
  // The load phase stored every key at version 0: a thread's keys are then
  // checked before it writes them.
  bool loaded = false;
  // A cache may drop any key (memcached evicts): a miss is then never a violation.
  bool misses_allowed = false;
  // Cache-aside (cache_aside.h): any thread may fill any key it missed with
  // the key's load-phase value (version 0), so a value stamped 0 is a fill's
  // and never stale; every other stamp is judged as always.
  bool fills_allowed = false;
};

class ReadChecker {
 public:
  // What one get key must see: recorded when the get is sent.
  struct Expect {
    uint64_t key;
    uint64_t version;  // the write it must see, or one after it
    bool deleted;      // that write was a delete
  };

  ReadChecker(const ReadCheckOptions& options, const Workload* workload);

  // An op is being sent; for a get, *expect receives what its keys must see.
  void OnSend(const Op& op, std::vector<Expect>* expect);
  // An op's answer; `expect` is what OnSend gave it.
  void OnAnswer(const Op& op, const OpResult& result, const std::vector<Expect>& expect);

  const ReadCheckStats& stats() const { return stats_; }

 private:
  struct KeyState {
    uint64_t version = 0;           // the write a read must see, or one after it
    bool deleted = false;           // that write was a delete
    bool known = false;             // false: nothing to check against (no write yet, or it failed)
    uint64_t last_delete_sent = 0;  // 0: none
    // kCompleted: the writes of this key in flight, and of the group that
    // overlapped since none was: the earliest, and whether any failed.
    uint32_t in_flight = 0;
    uint64_t group_min = 0;
    bool group_min_deleted = false;
    bool group_failed = false;
  };
  KeyState& StateOf(uint64_t key);
  void Judge(const Expect& e, const ValueSeen* seen);
  void Violation(uint64_t version, uint64_t* kind);

  const ReadCheckOptions o_;
  const Workload* workload_;
  std::unordered_map<uint64_t, KeyState> keys_;
  // kIssued: writes sent and not yet answered, with the violations found against each.
  std::unordered_map<uint64_t, std::vector<uint64_t*>> in_flight_;
  std::unordered_set<uint64_t> failed_;  // kIssued: writes that failed (violations against them do not count)
  uint64_t last_sent_ = 0;
  std::unordered_map<uint64_t, const ValueSeen*> by_key_;  // OnAnswer's scratch for large gets
  ReadCheckStats stats_;
};

}  // namespace gphkv::loadgen
