// The store: the GPH table (an engine::ElasticTable) plus the value heap,
// and the rules that tie them together: every key's slot holds a value
// handle, the --memory cap covers both (MemoryBudget), and the table grows by
// background rebuilds (lookups and writes keep being served from the old
// table plus an overlay while one runs) instead of ever dropping a write
// (table_growth.h). Applies whole runs of same-kind calls as engine batches;
// the work of each lives beside it: PutPlan (put_plan.h), SyncGets
// (sync_gets.h), the CUDA get pipeline (value_path.h).
//
// Owned and called by the executor thread only: the first thread that
// applies or submits a run owns it, and any other thread that does aborts
// (ThreadOwner), which covers the table, the value heap and the get pipeline
// behind it. The read-only accessors (keys(), counters(), ...) may be read by
// whoever holds the store before it is handed to the executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "gphkv/engine/table.h"
#include "server/call.h"
#include "server/collided_keys.h"
#include "server/durability/snapshot_feed.h"
#include "server/get_answers.h"
#include "server/get_pipeline.h"
#include "server/get_stages.h"
#include "server/memory_budget.h"
#include "server/put_stages.h"
#include "server/store_counters.h"
#include "server/store_options.h"
#include "server/sync_gets.h"
#include "server/thread_owner.h"
#include "server/value_heap.h"
#include "server/value_path.h"

namespace gphkv::server {

class BulkLoad;
struct DistinctKeys;
class PairCall;
class PutPlan;

class Store : private Evictor {
 public:
  // The store's clock (StoreOptions::unix_clock), unix seconds: what items'
  // expiry is checked against.
  uint32_t now() const;
  static absl::StatusOr<std::unique_ptr<Store>> create(const StoreOptions& options);
  ~Store();

  // Each applies a run of calls of one kind, in order, as one engine launch
  // (two for puts and deletes: a find for the old handles, then the write).
  // statuses[i] is the outcome of calls[i]: an OK call's response is filled,
  // a refused call changed nothing. An engine failure refuses every call of
  // the run with its status. No pipelined get may be in flight (the
  // executor finishes them first): a write must not overtake a read, nor
  // free a slot one still reads; a call with gets in flight aborts.
  void apply_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // A conditional or read-modify-write put (PutOp::mode, one key) reads the
  // key's value where it falls in the run, after the puts before it, and is
  // applied alone (server/conditional_put.h); then it is a plain set of what
  // it stores (its op rewritten, so the log records that).
  void apply_puts(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  void apply_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // An operator's shrink, in two parts so that serving goes on meanwhile.
  // First the value heap gives freed memory back, in steps of bounded work
  // (a whole trim of millions of values holds the executor about a second):
  // begin_shrink() starts it (or starts it over), the executor calls
  // shrink_step() between batches while shrinking(), with no pipelined get
  // in flight (values move). A step's error ends the trim. Then
  // apply_shrinks() answers the calls (every call the same answer): it
  // starts a background rebuild into a table sized for the keys stored now,
  // unless the table already is; FAILED_PRECONDITION while another rebuild
  // runs, since waiting for it would stall every call behind.
  void begin_shrink();
  bool shrinking() const;
  absl::Status shrink_step();
  void apply_shrinks(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);

  // The expiry sweep (server/store_sweep.cc): between batches, with no
  // pipelined get in flight, the executor calls sweep_step() while
  // sweep_wanted(). A pass lists the table's slots, then each step reads the
  // items of up to kSweepKeys of them and deletes those that expired or that
  // a flush_all hid (StoreCounters::items_swept); the next pass starts
  // StoreOptions::sweep_interval_seconds after one ends, once some item was
  // given an expiry or a flush was asked for. Deletes that change no answer:
  // not logged (recovery drops expired items itself).
  static constexpr size_t kSweepKeys = 4096;
  // The eviction (StoreOptions::evict, server/store_eviction.cc): the hand
  // looks at this many table slots a step, and frees at least
  // memory_limit_bytes() / kEvictionSlackDivisor a time it runs, so that a
  // store at its cap evicts in batches, not a few items per put: 1/64 of the
  // cap (1.6%) took a cache-aside load at the cap from 0.36 to 0.48 M keys/s
  // on an H200 for 0.45 points of hit ratio, where 1/512 paid a step's round
  // trips for a few hundred victims (docs/performance.md).
  static constexpr size_t kClockStepKeys = 8192;
  static constexpr uint64_t kEvictionSlackDivisor = 64;
  bool sweep_wanted() const;
  bool sweeping() const { return sweeping_; }
  absl::Status sweep_step();

  // The pipelined CUDA get path (server/get_pipeline.h). Usable while the
  // store has it (CUDA backend, depth > 0) and no rebuild runs: the rebuild
  // overlay is on the host, so apply_gets serves gets then.
  // Gets of byte keys take it too: their records are compared on the device.
  bool can_pipeline_gets() const;
  // And for these gets: not for those that need CAS versions or touch
  // (GetOp::needs_cas, GetOp::touch), which the host's placed path serves.
  bool can_pipeline_gets(absl::Span<Call* const> calls) const;
  int pipeline_depth() const;
  size_t gets_in_flight() const;
  // Enqueues a run of gets (gets_in_flight() < pipeline_depth()). On error
  // nothing is in flight for the run and its calls are the caller's.
  absl::Status submit_gets(absl::Span<Call* const> calls);
  // Waits for the oldest run in flight and returns its answers, to be
  // filled into the responses on any thread (server/get_answers.h). Writes
  // may be applied meanwhile: the run read the table and heap already.
  std::shared_ptr<GetAnswers> finish_gets(GetStageTimes* times);
  // Whether finish_gets would find the oldest run done (never waits; false
  // with none in flight): GetPipeline::oldest_done.
  bool oldest_gets_done();
  // Whether the pipeline makes byte keys' table keys on the device (the
  // default) or takes the calls' own: GetPipeline::set_hashes_byte_keys.
  void set_gpu_hashes_byte_keys(bool on);

  // "device" (CUDA memory) or "host".
  const char* value_heap_kind() const { return heap_kind_; }

  uint64_t keys() const { return table_->size() + collided_.size(); }
  // Byte keys whose record a table slot holds, and the keys that lost their
  // slot to a collision (docs/byte-keys.md).
  uint64_t table_records() const { return table_records_; }
  uint64_t collided_keys() const { return collided_.size(); }
  // Of the table serving now (the old one while a rebuild runs).
  double load_factor() const { return table_->load_factor(); }
  // The serving table plus, while a rebuild runs, the one being built.
  uint64_t table_bytes() const { return table_->table_bytes(); }
  uint64_t value_heap_bytes() const { return heap_->reserved_bytes(); }
  // Of those, the bytes live values take (each rounded up to its slot).
  uint64_t value_bytes_used() const { return heap_->used_bytes(); }
  uint64_t memory_limit_bytes() const { return budget_.limit_bytes(); }
  const StoreCounters& counters() const { return counters_; }
  // The keys evicted since the last call (StoreOptions::record_evictions),
  // for the log: the executor logs them as deletes before the run's writes.
  struct EvictedKeys {
    std::vector<uint64_t> ids;
    std::vector<std::string> byte_keys;
    bool empty() const { return ids.empty() && byte_keys.empty(); }
  };
  EvictedKeys take_evictions() { return std::exchange(evicted_, {}); }
  // With StoreOptions::logged_writes: the items touching gets rewrote since
  // the last take, each as stored (its value, flags, new expiry and kept CAS
  // version), for the log to carry as puts.
  struct TouchedItems {
    std::vector<uint64_t> ids;  // uint64 keys, their values in id_values
    std::vector<uint32_t> id_lengths;
    std::string id_values;
    std::vector<std::string> byte_keys;  // byte keys, their values in byte_values
    std::vector<uint32_t> byte_lengths;
    std::string byte_values;
    std::vector<byte_key::ItemMeta> metas;  // byte_keys[i]'s fields
    bool empty() const { return ids.empty() && byte_keys.empty(); }
  };
  TouchedItems take_touches() { return std::exchange(touched_, {}); }
  // With StoreOptions::logged_writes: the flush_all marks (pairs.h) made
  // since the last take, a flush at once or delayed and a delayed one's time
  // coming, in order; the log carries them after the writes before them.
  std::vector<durability::FlushMark> take_flush_marks() { return std::exchange(flush_marks_, {}); }
  // The flushes in effect now: the mark that restates them (all 0: none).
  durability::FlushMark flush_state() const { return durability::FlushMark{flushed_below_, flush_at_}; }
  // Recovery: a logged mark, applied as it was (StoreRecovery::on_flush).
  void recover_flush(const durability::FlushMark& mark);
  // While held (recovery), a pending delayed flush does not come due: its
  // `below` would be the replay's next version at whatever record the clock
  // passed its time, not the one it had, and the writes logged after that
  // record but made before its time would escape it. Once released, the
  // next run applies it if its time has passed (hiding all that came back).
  void hold_delayed_flushes(bool hold) { delayed_flushes_held_ = hold; }
  // Where the last apply_puts spent its time (its kPutDrain is the
  // executor's to fill).
  const PutStageTimes& last_put_stage_times() const { return put_times_; }
  const engine::ElasticTable& table() const { return *table_; }
  // A background rebuild is in flight (reads see its overlay).
  bool rebuilding() const { return table_->rebuilding(); }
  // Waits for a rebuild in flight and swaps it in (tests, shutdown).
  absl::Status finish_rebuild();

  // The data directory's side (server/store_recovery.h,
  // server/snapshot_export.h): the same rules as the runs above, on pairs
  // instead of Calls, on the owner thread, with no get in flight.
  //
  // Stores values[i] under keys[i] (a key repeated: the last wins), admitted
  // as one call: RESOURCE_EXHAUSTED, and nothing changed, past --memory.
  absl::Status put_pairs(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  // The same for byte keys (their table keys made here: byte_key_hash_bits),
  // metas[i] the item fields keys[i] takes as they are (empty: all 0).
  absl::Status put_byte_pairs(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                              absl::Span<const byte_key::ItemMeta> metas = {});
  // Removes the keys that are stored.
  absl::Status erase_keys(absl::Span<const uint64_t> keys);
  absl::Status erase_byte_keys(absl::Span<const std::string_view> keys);
  // Recovery's bulk path for a snapshot (server/bulk_load.h): begin_bulk_load
  // on an empty store (FAILED_PRECONDITION otherwise), then bulk_load_pairs
  // per run of pairs (values to the heap, admitted under --memory as
  // put_pairs is: RESOURCE_EXHAUSTED, nothing taken for the run), then
  // finish_bulk_load builds the table from them all in one step, sized for
  // them (no rebuild). The keys are not stored (keys() stays 0) until then;
  // no other operation may come between. abandon_bulk_load frees what was
  // loaded (the store is empty again).
  absl::Status begin_bulk_load(uint64_t expected_pairs);
  absl::Status bulk_load_pairs(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  absl::Status finish_bulk_load();
  void abandon_bulk_load();
  bool bulk_loading() const { return bulk_ != nullptr; }
  // Pairs a bulk load in progress has taken.
  uint64_t bulk_load_pairs_taken() const;
  // Removes every key (a rebuild in flight is finished first).
  absl::Status clear();
  // The table key of every table slot now, into *keys (its capacity
  // reused): each names a uint64 key, or the byte key whose record the slot
  // holds. The keys in CollidedKeys are not among them: read_collided gives
  // those. FAILED_PRECONDITION while a rebuild runs: the serving table then
  // misses the writes in the rebuild's overlay.
  absl::Status stored_keys(std::vector<uint64_t>* keys);
  // Of the slots of `table_keys`, those stored now (one gather): a uint64
  // key's pair is appended to *ids, a byte key's (its record's key and
  // value) to *byte_pairs.
  absl::Status read_pairs(absl::Span<const uint64_t> table_keys, durability::PairChunk* ids,
                          durability::PairChunk* byte_pairs);
  // Every key in CollidedKeys, with its value now, appended the same way.
  absl::Status read_collided(durability::PairChunk* ids, durability::PairChunk* byte_pairs);

 private:
  Store(const StoreOptions& options, std::unique_ptr<engine::ElasticTable> table, ValuePath values);
  // The entry of every apply_*: the owner thread, and no get in flight.
  void begin_run(const char* method);
  // The admitted groups of a planned run go to the heap and the table:
  // statuses[g] says how group g went (a call, or put_pairs' one group).
  void apply_plan(PutPlan& plan, std::vector<absl::Status>* statuses);
  // After a put run: counts its relocations and swaps in a small rebuild it started.
  void after_puts();
  // Adds the time since the last lap to stage `s` of put_times_.
  void put_lap(PutStage s);
  // Erases the distinct keys; erased[x]: keys.keys[x] was stored.
  absl::Status erase_distinct(const DistinctKeys& keys, std::vector<uint8_t>* erased);
  // Every table slot is its uint64 key's, and nothing collided: the plain
  // paths serve. Otherwise the placed ones (server/key_places.h,
  // server/store_placed.cc) do, as they do for any call of byte keys.
  bool plain() const { return table_records_ == 0 && collided_.empty(); }
  // Whether these calls take the placed paths: the store is not plain, or a
  // call has byte keys.
  bool needs_placed(absl::Span<Call* const> calls) const;
  // Turns each put's exptime into an absolute time by the clock, and notes
  // whether an item with flags was ever stored (flags_stored_; recovery's
  // item_metas count too).
  void resolve_item_fields(absl::Span<Call* const> calls);
  // apply_puts' work once its run is admitted.
  void apply_put_run(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // Deletes the items of `byte_pairs` (read just now) that expired or that a
  // flush hid; the sweep's work.
  absl::Status erase_gone(const durability::PairChunk& byte_pairs);
  // A pair operation as one call through apply_puts or apply_deletes: its status.
  absl::Status apply_one(PairCall& call);
  void apply_placed_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // apply_gets without its run's checks and counts: for a read inside a write.
  void read_values(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // One key as it is now, for a write that depends on it (a conditional put,
  // a compare-and-delete): the calls before it in its run are applied.
  struct HeldItem {
    v1::GetResponse response;               // found flag and, unless exists_only, the value
    std::vector<byte_key::ItemMeta> items;  // its flags, expiry and CAS (empty: all 0)
    bool found() const { return response.found_size() == 1 && response.found(0); }
    const byte_key::ItemMeta* item() const { return items.size() == 1 ? &items[0] : nullptr; }
  };
  absl::Status read_one_item(KeySpan keys, ByteKeys byte_keys, bool exists_only, HeldItem* held);
  // apply_puts for a run that holds conditional puts (server/store_conditional.cc).
  void apply_puts_in_order(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  absl::Status apply_conditional(Call& call);
  // flush_all, at once or delayed (PutMode::kFlush, server/store_conditional.cc).
  void apply_flush(const PutOp& op);
  // Makes `mark` the store's flush state (flushed_below_ only grows) and
  // keeps it for the log.
  void set_flush(const durability::FlushMark& mark);
  // A touching get's found items, rewritten with its new expiry (server/store_touch.cc).
  absl::Status touch_found(const Call& call);
  // touch_found's rewritten items, kept for the log (take_touches).
  void keep_touched(absl::Span<Call* const> sets, const std::vector<absl::Status>& statuses);
  void apply_placed_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // apply_placed_deletes' work: every call's keys deleted, compare_cas or not.
  void erase_placed(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // apply_placed_deletes for a run that holds a compare-and-delete
  // (DeleteOp::compare_cas, server/store_compare_delete.cc): in the run's
  // order, the plain deletes between them together, each compare alone.
  void apply_deletes_in_order(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  absl::Status apply_compare_delete(Call& call);
  // CLOCK over the table's slots (Evictor, server/store_eviction.cc).
  absl::StatusOr<uint64_t> evict(uint64_t bytes, const absl::flat_hash_set<uint64_t>& held) override;
  // One step of the hand over clock_keys_ from clock_next_: evicts until
  // *freed reaches `goal`; adds to *freed and *evicted.
  absl::Status clock_step(uint64_t goal, const absl::flat_hash_set<uint64_t>& held, uint64_t* freed, uint64_t* evicted);
  // A key of the put run being applied (never evicted: its evictions are
  // logged before the run's writes, so none may be a key the run wrote).
  bool in_put_run(uint64_t table_key);
  // Orders the hand's listed keys by where their values lie, last first.
  absl::Status order_by_place(std::vector<uint64_t>* table_keys);
  // (*keys)[v]: the key bytes of handles[v] when it is a byte key's record
  // (one gather), empty otherwise: what the log needs of a victim.
  absl::Status read_record_keys(absl::Span<const ValueHandle> handles, std::vector<std::string>* keys);

  ThreadOwner owner_{"Store"};
  StoreOptions options_;
  std::unique_ptr<engine::ElasticTable> table_;
  std::unique_ptr<ValueHeap> heap_;
  std::unique_ptr<GetPipeline> gets_;  // null without the CUDA pipeline
  // Once an item with nonzero flags was stored, gets take the placed path,
  // which reads each record's flags on the host: the CUDA pipeline's
  // download carries values only (a follow-up may add the flags to it).
  bool flags_stored_ = false;
  // The next CAS version a byte key's record takes (PutPlan): every write of
  // an item takes a new one, so they are unique and increasing per store,
  // never 0. The log and snapshots keep each item's, and recovery moves
  // the counter past every one it puts back (PutPlan).
  uint64_t next_cas_ = 1;
  // flush_all (PutMode::kFlush): byte-key items whose CAS is below
  // flushed_below_ were written before it and read as misses (key_places.h);
  // flush_at_, when not 0, is a delayed flush's time by the store's clock,
  // which the first run at or after it applies (begin_run). The CUDA
  // pipeline does not compare CAS versions, so once a flush was asked for
  // the placed path serves gets (a follow-up may pass the bound to the kernel).
  uint64_t flushed_below_ = 0;
  // The sweep: an item was ever given an expiry (resolve_item_fields); the
  // pass in progress (its listed slots and the next to read); when the next
  // pass may start (the store's clock).
  bool items_may_expire_ = false;
  bool sweeping_ = false;
  std::vector<uint64_t> sweep_keys_;
  size_t sweep_next_ = 0;
  uint32_t next_sweep_at_ = 0;
  uint32_t flush_at_ = 0;
  // The eviction's hand: the table keys listed when its pass began, and the
  // next one it looks at.
  std::vector<uint64_t> clock_keys_;
  size_t clock_next_ = 0;
  EvictedKeys evicted_;
  TouchedItems touched_;
  std::vector<durability::FlushMark> flush_marks_;
  bool delayed_flushes_held_ = false;
  // The put run apply_puts is applying, and its table keys (made when an
  // eviction first asks).
  absl::Span<Call* const> put_run_;
  absl::flat_hash_set<uint64_t> put_run_keys_;
  bool put_run_keys_made_ = false;
  const char* heap_kind_;
  MemoryBudget budget_;
  SyncGets sync_gets_;
  StoreCounters counters_;
  RelocationTally relocations_;
  // The value heap's trim of a shrink under way (begin_shrink to its last step).
  struct HeapTrim {
    std::chrono::steady_clock::time_point start;
    uint64_t steps = 0;
    uint64_t released_bytes = 0;
    double step_seconds = 0;    // in the steps, all together
    double longest_step_s = 0;  // the longest step: what it held the executor
  };
  HeapTrim trim_;
  std::unique_ptr<BulkLoad> bulk_;  // while recovery bulk-loads a snapshot
  CollidedKeys collided_;
  uint64_t table_records_ = 0;
  // Scratch of the put path, reused across runs.
  std::vector<uint64_t> keys_, handles_;
  std::vector<engine::UpsertOutcome> outcomes_;
  PutStageTimes put_times_;
  std::chrono::steady_clock::time_point put_lap_at_;
};

}  // namespace gphkv::server
