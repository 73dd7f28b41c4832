#include "server/store.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/bulk_load.h"
#include "server/byte_key.h"
#include "server/distinct_keys.h"
#include "server/put_plan.h"
#include "server/table_growth.h"
#include "spdlog/spdlog.h"

namespace gphkv::server {

absl::StatusOr<std::unique_ptr<Store>> Store::create(const StoreOptions& options) {
  auto table = make_growing_table(options);
  if (!table.ok()) return table.status();
  auto values = make_value_path(options);
  if (!values.ok()) return values.status();
  return std::unique_ptr<Store>(new Store(options, std::move(*table), std::move(*values)));
}

Store::~Store() = default;

Store::Store(const StoreOptions& options, std::unique_ptr<engine::ElasticTable> table, ValuePath values)
    : options_(options),
      table_(std::move(table)),
      heap_(std::move(values.heap)),
      gets_(std::move(values.gets)),
      heap_kind_(values.heap_kind),
      budget_(options.memory_limit_bytes, table_.get(), heap_.get()) {
  budget_.fit_heap_to_table();
  budget_.fit_table_to_heap();
  table_->on_rebuild([this](const engine::RebuildEvent& e) {
    log_rebuild(e);
    counters_.count_rebuild(e);
  });
}

void Store::begin_run(const char* method) {
  owner_.check(method);
  if (gets_in_flight() != 0) {
    ownership_broken("Store", method,
                     "pipelined gets are in flight; the executor must finish them before it applies a run");
  }
  if (flush_at_ != 0 && !delayed_flushes_held_ && now() >= flush_at_) {
    // A delayed flush_all's time came: what was written before this run is gone.
    set_flush(durability::FlushMark{next_cas_, 0});
  }
}

void Store::set_flush(const durability::FlushMark& mark) {
  flushed_below_ = std::max(flushed_below_, mark.below);
  flush_at_ = mark.at;
  if (options_.logged_writes) flush_marks_.push_back(mark);
}

void Store::recover_flush(const durability::FlushMark& mark) {
  begin_run("recover_flush");
  flushed_below_ = std::max(flushed_below_, mark.below);
  flush_at_ = mark.at;
  // Writes after recovery take versions past every item the flush hid,
  // also when no item written after the flush came back.
  next_cas_ = std::max(next_cas_, flushed_below_);
}

absl::Status Store::finish_rebuild() {
  owner_.check("finish_rebuild");
  absl::Status s = table_->finish_rebuild();
  budget_.fit_heap_to_table();
  return s;
}

// Store::apply_gets: server/store_touch.cc (a run's touches are ordered with its reads).

absl::Status Store::read_one_item(KeySpan keys, ByteKeys byte_keys, bool exists_only, HeldItem* held) {
  Call read;
  read.op = GetOp{keys, exists_only, /*packed=*/false, &held->response, byte_keys, &held->items};
  Call* const reads[] = {&read};
  std::vector<absl::Status> status;
  read_values(reads, &status);
  return status[0];
}

void Store::read_values(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  if (needs_placed(calls)) {
    apply_placed_gets(calls, statuses);
    return;
  }
  sync_gets_.apply(calls, *table_, *heap_, options_.evict, options_.max_response_bytes, statuses);
}

// The pipeline takes a slot that is not the key's own (a record of other
// key bytes, or one found by a uint64 key) for a miss, which is right while
// no key waits in CollidedKeys.
// Nor does it return flags (GetOp::flags), so not once an item has some.
bool Store::can_pipeline_gets() const {
  return gets_ != nullptr && !table_->rebuilding() && collided_.empty() && !flags_stored_ && flushed_below_ == 0 &&
         flush_at_ == 0;
}

// Nor does it return CAS versions, nor rewrite what it finds: gets and gats,
// and touches, take the host's placed path.
bool Store::can_pipeline_gets(absl::Span<Call* const> calls) const {
  if (!can_pipeline_gets()) return false;
  for (const Call* c : calls) {
    if (c->get().needs_cas || c->get().touch) return false;
  }
  return true;
}

uint32_t Store::now() const {
  if (options_.unix_clock) return options_.unix_clock();
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

void Store::resolve_item_fields(absl::Span<Call* const> calls) {
  uint32_t t = 0;
  for (Call* c : calls) {
    PutOp& op = std::get<PutOp>(c->op);
    if (op.flags != 0) flags_stored_ = true;
    for (const byte_key::ItemMeta& m : op.item_metas) {
      flags_stored_ |= m.flags != 0;
      items_may_expire_ |= m.exptime != 0;
    }
    // --default_ttl: a client's write that stores a new item without an
    // expiry takes the default (not recovery's puts, which carry each
    // item's fields, nor the modes that keep the stored item's expiry).
    if (op.exptime == 0 && options_.default_ttl_seconds != 0 && op.item_metas.empty() && c->has_byte_keys() &&
        (op.mode == PutMode::kSet || op.mode == PutMode::kAdd || op.mode == PutMode::kReplace ||
         op.mode == PutMode::kCompareAndSet)) {
      op.exptime = options_.default_ttl_seconds;
    }
    items_may_expire_ |= op.exptime != 0;
    if (op.exptime == 0) continue;
    if (t == 0) t = now();
    op.exptime = byte_key::absolute_exptime(op.exptime, t);
  }
}

bool Store::needs_placed(absl::Span<Call* const> calls) const {
  if (!plain()) return true;
  for (const Call* c : calls) {
    if (c->has_byte_keys()) return true;
  }
  return false;
}
int Store::pipeline_depth() const { return gets_ ? gets_->depth() : 0; }
size_t Store::gets_in_flight() const { return gets_ ? gets_->in_flight() : 0; }

absl::Status Store::submit_gets(absl::Span<Call* const> calls) {
  owner_.check("submit_gets");
  if (!can_pipeline_gets(calls)) return absl::FailedPreconditionError("the CUDA get pipeline is not usable now");
  engine::StreamOrderedTable* table = table_->serving_table().stream_ordered();
  if (table == nullptr) return absl::InternalError("the CUDA get pipeline needs a table on the device");
  ++counters_.pipelined_get_runs;
  return gets_->submit(*table, calls, now());
}

std::shared_ptr<GetAnswers> Store::finish_gets(GetStageTimes* times) {
  owner_.check("finish_gets");
  if (gets_ == nullptr) return nullptr;
  auto answers = gets_->finish(options_.max_response_bytes, times);
  counters_.late_get_downloads = gets_->late_downloads();
  return answers;
}

bool Store::oldest_gets_done() {
  owner_.check("oldest_gets_done");
  return gets_ != nullptr && gets_->oldest_done();
}

void Store::set_gpu_hashes_byte_keys(bool on) {
  if (gets_ != nullptr) gets_->set_hashes_byte_keys(on);
}

void Store::apply_puts(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  begin_run("apply_puts");
  put_times_.clear();
  put_lap_at_ = std::chrono::steady_clock::now();
  put_run_ = calls;
  put_run_keys_made_ = false;
  // Whatever way the run ends, its calls are the caller's again.
  struct EndRun {
    Store* s;
    ~EndRun() { s->put_run_ = {}; }
  } end_run{this};
  apply_put_run(calls, statuses);
}

void Store::apply_put_run(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  resolve_item_fields(calls);
  for (const Call* c : calls) {
    if (c->put().mode != PutMode::kSet) {
      apply_puts_in_order(calls, statuses);
      return;
    }
  }
  PutPlan plan(calls, /*placed=*/needs_placed(calls), &next_cas_);
  apply_plan(plan, statuses);
}

void Store::put_lap(PutStage s) {
  const auto t = std::chrono::steady_clock::now();
  put_times_.seconds[s] += std::chrono::duration<double>(t - put_lap_at_).count();
  put_lap_at_ = t;
}

void Store::apply_plan(PutPlan& plan, std::vector<absl::Status>* statuses) {
  statuses->assign(plan.groups(), absl::OkStatus());
  const absl::Status planned = plan.placed() ? plan.place(*table_, *heap_, collided_) : plan.find_stored(*table_);
  put_lap(kPutPlan);
  if (!planned.ok()) {
    statuses->assign(plan.groups(), planned);
    return;
  }
  for (size_t gi = 0; gi < plan.groups(); ++gi)
    (*statuses)[gi] = plan.admit(gi, budget_, options_.evict ? this : nullptr);
  put_lap(kPutAdmit);
  // Every admitted value, written to the heap in one go before the table
  // learns the handles (one upload + place kernel on a device).
  auto refuse_admitted = [&](absl::Status why) {
    for (auto& s : *statuses) {
      if (s.ok()) s = why;
    }
  };
  if (absl::Status ws = heap_->write(plan.written_handles(), plan.written_bytes()); !ws.ok()) {
    // Nothing reached the table: give the slots back and refuse the admitted calls.
    spdlog::error("value heap write of {} values failed: {}", plan.written_handles().size(), ws.ToString());
    plan.release_written(*heap_);
    refuse_admitted(absl::InternalError(absl::StrCat("value heap write failed: ", ws.message())));
    return;
  }
  put_lap(kPutHeap);
  plan.table_batch(&keys_, &handles_);
  // The table's cap is what the value heap leaves; every admitted call's
  // table need fits under it, so the write below cannot be refused.
  budget_.fit_table_to_heap();
  absl::Status engine_status;
  if (!keys_.empty()) {
    outcomes_.resize(keys_.size());
    engine_status = table_->insert_or_assign(keys_, handles_, absl::MakeSpan(outcomes_));
  }
  budget_.fit_heap_to_table();
  put_lap(kPutTable);
  if (!engine_status.ok()) {
    if (engine_status.code() == absl::StatusCode::kResourceExhausted) {
      // The table refused the batch whole (nothing changed), though admission
      // sized it to fit: a bug in the accounting. Give the values back.
      spdlog::error(
          "BUG: the table refused an admitted put batch of {} keys ({} stored, table {} bytes, "
          "cap {} bytes, value heap {} bytes): {}",
          keys_.size(), table_->size(), table_->table_bytes(), table_->max_table_bytes(), heap_->reserved_bytes(),
          engine_status.ToString());
      plan.release_unstored(*heap_);
      budget_.fit_table_to_heap();
    } else {
      // An engine failure mid-write leaves the run's outcome unknown.
      spdlog::error("put batch failed in the engine: {}", engine_status.ToString());
    }
    // Either way report INTERNAL for every admitted call rather than claim success.
    refuse_admitted(absl::InternalError(absl::StrCat("engine write failed: ", engine_status.message())));
    return;
  }
  table_records_ += plan.apply_collided(&collided_);
  plan.release_replaced(*heap_);
  after_puts();
  put_lap(kPutFinish);
}

void Store::after_puts() {
  relocations_.update(table_->serving_table(), &counters_);
  if (rebuild_is_small(*table_)) {
    // The run's writes are acknowledged already; a failure here leaves them
    // in the overlay and the next call retries the swap.
    if (auto s = finish_rebuild(); !s.ok()) spdlog::error("table rebuild failed: {}", s.ToString());
  }
}

void Store::apply_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  begin_run("apply_deletes");
  if (needs_placed(calls)) {
    apply_placed_deletes(calls, statuses);
    return;
  }
  statuses->assign(calls.size(), absl::OkStatus());
  DistinctKeys unique;
  for (Call* c : calls) {
    for (uint64_t k : c->del().keys) unique.add(k);
  }
  std::vector<uint8_t> erased;
  if (absl::Status s = erase_distinct(unique, &erased); !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  // The first occurrence of a stored key deletes it; later ones find it gone.
  std::vector<uint8_t> gone(unique.size(), 0);
  for (Call* c : calls) {
    const KeySpan keys = c->del().keys;
    v1::DeleteResponse* out = c->del().response;
    const int n = static_cast<int>(keys.size());
    out->mutable_deleted()->Resize(n, false);
    for (int i = 0; i < n; ++i) {
      const uint32_t x = unique.at(keys[i]);
      if (erased[x] && !gone[x]) {
        out->set_deleted(i, true);
        gone[x] = 1;
      }
    }
  }
}

absl::Status Store::erase_distinct(const DistinctKeys& unique, std::vector<uint8_t>* erased) {
  const size_t u = unique.size();
  std::vector<uint64_t> handles(u);
  std::vector<uint8_t> found(u);
  erased->assign(u, 0);
  absl::Status s = table_->find(unique.keys, absl::MakeSpan(handles), absl::MakeSpan(found));
  if (s.ok()) s = table_->erase(unique.keys, absl::MakeSpan(*erased));
  if (!s.ok()) return s;
  for (size_t x = 0; x < u; ++x) {
    if ((*erased)[x] && found[x]) heap_->release(handles[x]);
  }
  budget_.fit_table_to_heap();
  budget_.fit_heap_to_table();
  return absl::OkStatus();
}

namespace {

// Values a trim step may move (at least one chunk's): in the device soak,
// 3 to 11 ms a step on average, the longest 22.5 ms (one chunk of small
// values; docs/hardening.md, bench/value_heap_trim_bench.cc).
constexpr uint64_t kTrimStepValues = 4096;

}  // namespace

void Store::begin_shrink() {
  owner_.check("begin_shrink");
  heap_->begin_trim();
  trim_ = HeapTrim{};
  trim_.start = std::chrono::steady_clock::now();
  spdlog::info("shrink requested: the value heap ({} bytes, {} values) gives freed memory back in steps",
               heap_->reserved_bytes(), heap_->live_values());
}

bool Store::shrinking() const { return heap_->trimming(); }

absl::Status Store::shrink_step() {
  begin_run("shrink_step");
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<ValueHeap::TrimProgress> step = heap_->trim_step(kTrimStepValues);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  trim_.step_seconds += took;
  trim_.longest_step_s = std::max(trim_.longest_step_s, took);
  if (!step.ok()) {
    spdlog::error("shrink: the value heap's trim failed after {} steps: {}", trim_.steps, step.status().ToString());
    return step.status();
  }
  ++trim_.steps;
  trim_.released_bytes += step->released_bytes;
  // Memory the heap gave back is the table's to take.
  if (step->released_bytes > 0) budget_.fit_table_to_heap();
  if (step->done) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - trim_.start).count();
    spdlog::info(
        "shrink requested: the value heap gave back {} bytes in {} steps over {:.3f} s ({:.3f} s in the steps, the "
        "longest {:.1f} ms; holds {})",
        trim_.released_bytes, trim_.steps, seconds, trim_.step_seconds, 1e3 * trim_.longest_step_s,
        heap_->reserved_bytes());
  }
  return absl::OkStatus();
}

void Store::apply_shrinks(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  begin_run("apply_shrinks");
  absl::StatusOr<v1::ShrinkResponse> answer = start_shrink(*table_);
  statuses->assign(calls.size(), answer.status());
  if (!answer.ok()) return;
  for (Call* c : calls) *c->shrink().response = *answer;
  budget_.fit_heap_to_table();
}

}  // namespace gphkv::server
