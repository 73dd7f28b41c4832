// A run of put calls, planned before anything is written (Store::apply_puts):
// which of the run's distinct keys are stored already, and their old value
// handles; which calls fit under --memory, each whole or not at all, with
// their created flags against the state the calls before them leave; and,
// per key, the value its last admitted occurrence writes. The admitted values
// then go to the value heap in one write and the keys to the table in one
// batch, so a refused call changes nothing and an admitted run costs one
// heap write and one table launch. A run of pairs that recovery restores
// (Store::put_pairs) is planned the same way, as one group without a response.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "server/call.h"
#include "server/collided_keys.h"
#include "server/distinct_keys.h"
#include "server/evictor.h"
#include "server/key_places.h"
#include "server/memory_budget.h"
#include "server/value_heap.h"

namespace gphkv::server {

class PutPlan {
 public:
  // One group per call; admit() fills each admitted call's created flags.
  // Keys are told apart by their uint64 value, and live in the table
  // (find_stored), unless `placed`: then by their identity, uint64 or byte
  // key, and each lives in its table slot or in CollidedKeys (place(),
  // server/key_places.h); a byte key's value is stored as its record.
  // Each byte key's record takes the next CAS version from *next_cas (issue
  // 27: unique and increasing per store, never 0), or its put's keep_cas;
  // null: CAS 0 (tests of the plan alone).
  explicit PutPlan(absl::Span<Call* const> calls, bool placed = false, uint64_t* next_cas = nullptr);
  // One group: values[i] is keys[i]'s. The views must outlive the plan.
  PutPlan(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);

  // Looks the run's distinct keys up in the table (their old handles).
  absl::Status find_stored(engine::ElasticTable& table);
  // A placed plan's find_stored: each distinct key's place, table or CollidedKeys.
  absl::Status place(engine::ElasticTable& table, const ValueHeap& heap, const CollidedKeys& collided);
  size_t groups() const { return groups_.size(); }
  bool placed() const { return placed_; }
  // Admits group gi or says why not (then nothing changed for it). Called
  // for each group in order, after find_stored; fills an admitted call's
  // created flags and takes its value slots. With an evictor, a call
  // --memory refuses is tried again after evicting (server/evictor.h): the
  // bytes of its slots first, twice as many each round, at most
  // kEvictionRounds rounds.
  static constexpr int kEvictionRounds = 8;
  absl::Status admit(size_t gi, MemoryBudget& budget, Evictor* evictor = nullptr);

  // Every admitted value, in the order the calls carry them.
  absl::Span<const ValueHandle> written_handles() const { return written_handles_; }
  absl::Span<const std::string_view> written_bytes() const { return written_bytes_; }
  // The table's batch: each key an admitted call wrote, with its last value.
  void table_batch(std::vector<uint64_t>* keys, std::vector<uint64_t>* handles) const;
  // A placed plan's writes to CollidedKeys, once the table took its batch;
  // returns how many byte keys the table gained (their records in new slots).
  uint64_t apply_collided(CollidedKeys* collided) const;

  // The table took the batch: frees the values it replaced (the keys' old
  // values, and those a later occurrence in the run overwrote).
  void release_replaced(ValueHeap& heap) const;
  // The heap's write failed: frees every slot the run took.
  void release_written(ValueHeap& heap) const;
  // The table refused the batch: frees the batch's values, then those a
  // later occurrence overwrote (every slot the run took).
  void release_unstored(ValueHeap& heap) const;

 private:
  static constexpr ValueHandle kNoHandle = ~ValueHandle{0};

  // After the lookup: every distinct key as stored before the run.
  void start_planning(size_t distinct, uint64_t table_keys);

  // The keys and values of a call, or of a run of pairs.
  struct Group {
    absl::Span<const uint64_t> keys;
    absl::Span<const uint32_t> lengths;
    std::string_view bytes;                     // a call's: the values back to back
    absl::Span<const std::string_view> values;  // pairs': each value (then bytes is unused)
    v1::PutResponse* response = nullptr;        // a call's, for the created flags
  };

  std::vector<Group> groups_;
  std::vector<uint32_t> pair_lengths_;  // the lengths of a run of pairs
  DistinctKeys keys_;
  // Per occurrence (the groups' keys in order): its distinct key's index.
  std::vector<uint32_t> entry_;
  std::vector<uint32_t> group_first_;  // group g's first occurrence
  // A placed plan's distinct keys, their places, and the records of its
  // byte keys' occurrences with their lengths (the values it stores).
  bool placed_ = false;
  std::vector<KeyRef> entries_;
  std::vector<KeyHome> home_;
  std::string records_;
  std::vector<uint32_t> record_lengths_;
  // Per distinct key: in the table before the run, and its handle there.
  std::vector<uint8_t> found_;
  std::vector<uint64_t> old_handle_;
  // Per distinct key: stored after the calls admitted so far, the handle the
  // latest admitted occurrence wrote, and the last call that counted it new.
  std::vector<uint8_t> present_;
  std::vector<ValueHandle> pending_;
  std::vector<uint32_t> counted_in_;
  std::vector<ValueHandle> superseded_;  // written, then overwritten within the run
  std::vector<ValueHandle> written_handles_;
  std::vector<std::string_view> written_bytes_;
  uint64_t base_keys_ = 0;  // keys stored before the run
  uint64_t new_keys_ = 0;   // keys the admitted groups add
  // The table keys of the run's keys: what eviction must not take (made
  // on the first eviction).
  const absl::flat_hash_set<uint64_t>& held_table_keys();
  absl::flat_hash_set<uint64_t> held_;
  bool held_made_ = false;
  // Scratch of admit().
  std::vector<ValueHandle> slots_;
};

}  // namespace gphkv::server
