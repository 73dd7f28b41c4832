#include "server/store.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/device_info.h"
#include "spdlog/spdlog.h"

#ifdef GPHKV_HAVE_CUDA
#include "engine/cuda/cuda_table.h"
#include "server/cuda/device_gets.h"
#include "server/cuda/device_value_heap.h"
#else
namespace gphkv::server {
// Without CUDA there is no pipeline: Store::gets_ stays null.
class DeviceGets {
 public:
  int depth() const { return 0; }
  size_t in_flight() const { return 0; }
};
}  // namespace gphkv::server
#endif

namespace gphkv::server {
namespace {

constexpr ValueHandle kNoHandle = ~ValueHandle{0};
// A rebuild of a table this small is waited for at the end of the put run
// that started it: the bulk build takes well under a millisecond on the CPU,
// less than serving from the overlay, and growth of a small store stays
// deterministic. Larger rebuilds run in the background.
constexpr uint64_t kForegroundRebuildKeys = 16384;

// Index of each distinct key of a run, in order of first occurrence.
struct UniqueKeys {
  absl::flat_hash_map<uint64_t, uint32_t> index;
  std::vector<uint64_t> keys;
  uint32_t add(uint64_t key) {
    auto [it, inserted] = index.try_emplace(key, static_cast<uint32_t>(keys.size()));
    if (inserted) keys.push_back(key);
    return it->second;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::create(const StoreOptions& options) {
  if (!(options.max_load_factor > 0.0 && options.max_load_factor <= 0.95)) {
    return absl::InvalidArgumentError("max_load_factor must be in (0, 0.95]");
  }
  engine::TableOptions topts = options.table;
  topts.num_buckets = engine::buckets_for_capacity(std::max<uint64_t>(options.initial_capacity, 1),
                                                   options.max_load_factor, topts.slots_per_bucket);
  auto probe = engine::make_geometry(topts);
  if (!probe.ok()) return probe.status();
  const uint64_t table_bytes = probe->num_slots() * 2 * sizeof(uint64_t) + probe->num_cells;
  if (table_bytes > options.memory_limit_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--initial_capacity=", options.initial_capacity, " needs a table of ", table_bytes,
        " bytes, more than --memory=", options.memory_limit_bytes));
  }
  engine::ElasticOptions eo;
  eo.backend = options.backend;
  eo.device = options.device;
  eo.shape = topts;
  eo.max_load_factor = options.max_load_factor;
  // Below max_load_factor whatever it is (0.5 at the default 0.80).
  eo.rebuild_load_factor = std::min(options.rebuild_load_factor, 0.625 * options.max_load_factor);
  // Never rebuild for a burst: on the CPU the insert path beat a rebuild for
  // every burst size measured (bench/results).
  eo.rebuild_burst_fraction = 0;
  // The value heap is empty: the table may have all of --memory for now.
  eo.max_table_bytes = options.memory_limit_bytes;
  auto table = engine::ElasticTable::create(eo);
  if (!table.ok()) return table.status();
  std::unique_ptr<ValueHeap> heap;
  std::unique_ptr<DeviceGets> gets;
#ifdef GPHKV_HAVE_CUDA
  if (options.backend == engine::Backend::kCuda && options.device_value_heap) {
    auto dh = DeviceValueHeap::create(options.max_value_bytes, options.device);
    if (!dh.ok()) return dh.status();
    if (options.gpu_pipeline_depth > 0) {
      auto g = DeviceGets::create(dh->get(), options.gpu_pipeline_depth, options.time_get_stages);
      if (!g.ok()) return g.status();
      gets = std::move(*g);
    }
    heap = std::move(*dh);
  }
#endif
  const bool device_heap = heap != nullptr;
  if (!heap) heap = std::make_unique<HostValueHeap>(options.max_value_bytes);
  auto store = std::unique_ptr<Store>(new Store(options, std::move(*table), std::move(heap), std::move(gets)));
  store->device_heap_ = device_heap;
  return store;
}

Store::~Store() = default;

Store::Store(const StoreOptions& options, std::unique_ptr<engine::ElasticTable> table,
             std::unique_ptr<ValueHeap> heap, std::unique_ptr<DeviceGets> gets)
    : options_(options), table_(std::move(table)), heap_(std::move(heap)), gets_(std::move(gets)) {
  heap_->set_limit(options_.memory_limit_bytes - std::min(options_.memory_limit_bytes, table_bytes()));
  update_table_cap();
  table_->on_rebuild([this](const engine::RebuildEvent& e) { on_rebuild(e); });
}

void Store::update_table_cap() {
  // 0 would mean "no cap" to the table: never hand it that.
  const uint64_t heap = heap_->reserved_bytes();
  const uint64_t limit = options_.memory_limit_bytes;
  table_->set_max_table_bytes(std::max<uint64_t>(1, limit - std::min(limit, heap)));
}

void Store::on_rebuild(const engine::RebuildEvent& e) {
  spdlog::info(
      "table rebuilt ({}): {} -> {} buckets, {} keys, {} writes served by the overlay during it, {:.3f} s "
      "(build {:.3f} s)",
      e.cause, e.old_buckets, e.new_buckets, e.keys, e.writes_during, e.seconds, e.build.seconds);
  ++counters_.rebuilds;
  ++counters_.rebuilds_by_cause[e.cause];
  counters_.rebuild_keys += e.keys;
  counters_.rebuild_writes_during += e.writes_during;
  counters_.rebuild_seconds += e.seconds;
}

absl::Status Store::finish_rebuild() {
  absl::Status s = table_->finish_rebuild();
  heap_->set_limit(options_.memory_limit_bytes - std::min(options_.memory_limit_bytes, table_bytes()));
  return s;
}

void Store::apply_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  ++counters_.sync_get_runs;
  keys_.clear();
  for (Call* c : calls) keys_.insert(keys_.end(), c->get().request->keys().begin(), c->get().request->keys().end());
  values_.resize(keys_.size());
  flags_.resize(keys_.size());
  if (auto s = table_->find(keys_, absl::MakeSpan(values_), absl::MakeSpan(flags_)); !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  size_t pos = 0;
  std::vector<ValueHandle> found_handles;
  for (size_t ci = 0; ci < calls.size(); ++ci) {
    Call* c = calls[ci];
    const v1::GetRequest& req = *c->get().request;
    const int n = req.keys_size();
    const bool with_values = req.value_mode() != v1::VALUE_MODE_EXISTS;
    v1::GetResponse* out = c->get().response;
    out->mutable_found()->Resize(n, false);
    out->mutable_value_lengths()->Resize(n, 0);
    found_handles.clear();
    uint64_t bytes = 0;
    for (int i = 0; i < n; ++i, ++pos) {
      if (!flags_[pos]) continue;
      out->set_found(i, true);
      if (with_values) {
        const uint32_t len = heap_->length(values_[pos]);
        out->set_value_lengths(i, len);
        bytes += len;
        found_handles.push_back(values_[pos]);
      }
    }
    if (bytes > options_.max_response_bytes) {
      out->Clear();
      (*statuses)[ci] = absl::ResourceExhaustedError(absl::StrCat(
          "the values of this Get total ", bytes, " bytes, over the response limit of ",
          options_.max_response_bytes, " bytes; ask for fewer keys per call"));
      continue;
    }
    // One contiguous buffer per call: the response's `values` field itself.
    if (with_values) {
      if (auto s = heap_->gather(found_handles, out->mutable_values()); !s.ok()) {
        out->Clear();
        (*statuses)[ci] = s;
      }
    }
  }
}

bool Store::can_pipeline_gets() const { return gets_ != nullptr && !table_->rebuilding(); }
int Store::pipeline_depth() const { return gets_ ? gets_->depth() : 0; }
size_t Store::gets_in_flight() const { return gets_ ? gets_->in_flight() : 0; }

absl::Status Store::submit_gets(absl::Span<Call* const> calls) {
#ifdef GPHKV_HAVE_CUDA
  if (!can_pipeline_gets()) return absl::FailedPreconditionError("the CUDA get pipeline is not usable now");
  auto* table = dynamic_cast<engine::cuda::CudaTable*>(&table_->serving_table());
  if (table == nullptr) return absl::InternalError("the CUDA get pipeline needs a CUDA table");
  ++counters_.pipelined_get_runs;
  return gets_->submit(*table, calls);
#else
  (void)calls;
  return absl::UnimplementedError("this build has no CUDA");
#endif
}

std::shared_ptr<GetAnswers> Store::finish_gets(GetStageTimes* times) {
#ifdef GPHKV_HAVE_CUDA
  auto answers = gets_->finish(options_.max_response_bytes, times);
  counters_.late_get_downloads = gets_->late_downloads();
  return answers;
#else
  (void)times;
  return nullptr;
#endif
}

void Store::count_relocations() {
  const engine::Table* t = &table_->serving_table();
  const uint64_t moves = table_relocations(*t);
  if (t != relocations_table_) {
    // A rebuild swapped a new table in: its count starts at what it did so far.
    relocations_table_ = t;
    relocations_seen_ = 0;
  }
  if (moves > relocations_seen_) counters_.relocations += moves - relocations_seen_;
  relocations_seen_ = moves;
}

void Store::apply_puts(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  UniqueKeys unique;
  for (Call* c : calls) {
    for (uint64_t k : c->put().request->keys()) unique.add(k);
  }
  const size_t u = unique.keys.size();
  std::vector<uint64_t> old_handle(u);
  std::vector<uint8_t> found(u);
  if (auto s = table_->find(unique.keys, absl::MakeSpan(old_handle), absl::MakeSpan(found)); !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  // Per distinct key: stored after the calls admitted so far, and the handle
  // the latest admitted occurrence wrote.
  std::vector<uint8_t> present(found);
  std::vector<ValueHandle> pending(u, kNoHandle);
  std::vector<uint32_t> counted_in(u, UINT32_MAX);  // last call that counted the key as new
  std::vector<ValueHandle> superseded, allocated;
  std::vector<uint32_t> lengths;
  // Every admitted value, written to the heap in one go before the table
  // learns the handles (one upload + scatter kernel on a device).
  std::vector<ValueHandle> write_handles;
  std::vector<std::string_view> write_bytes;
  uint64_t new_keys = 0;
  const uint64_t base_keys = table_->size();
  const uint64_t limit = options_.memory_limit_bytes;

  for (size_t ci = 0; ci < calls.size(); ++ci) {
    const v1::PutRequest& req = *calls[ci]->put().request;
    const int n = req.keys_size();
    uint64_t call_new = 0;
    for (int i = 0; i < n; ++i) {
      const uint32_t x = unique.index.find(req.keys(i))->second;
      if (!present[x] && counted_in[x] != ci) {
        counted_in[x] = static_cast<uint32_t>(ci);
        ++call_new;
      }
    }
    // Admission against --memory: the tables held now (both while a rebuild
    // runs), or the table that must hold the projected keys as the
    // ElasticTable sizes it under its cap (so the two agree: an admitted run
    // is never refused by the table), plus every value slot the call adds.
    const uint64_t projected = base_keys + new_keys + call_new;
    const uint64_t table_need = std::max(table_->table_bytes(), table_->bytes_to_hold(projected));
    if (table_need > limit) {
      (*statuses)[ci] = absl::ResourceExhaustedError(absl::StrCat(
          "put refused: storing ", projected, " keys needs ", table_need,
          " bytes of table, over the memory limit (--memory) of ", limit, " bytes"));
      continue;
    }
    heap_->set_limit(limit - table_need);
    allocated.clear();
    lengths.assign(req.value_lengths().begin(), req.value_lengths().end());
    // All or nothing: a refusal takes no slot and reserves no slab.
    if (absl::Status st = heap_->allocate_slots(lengths, &allocated); !st.ok()) {
      (*statuses)[ci] = absl::ResourceExhaustedError(absl::StrCat(
          "put refused: ", st.message(), " (table ", table_need, " bytes, value heap ",
          heap_->reserved_bytes(), " bytes; --memory=", limit, ")"));
      continue;
    }
    // Admitted: created flags against the state before this call, then the
    // call's values become the pending ones (the last occurrence wins).
    v1::PutResponse* out = calls[ci]->put().response;
    out->mutable_created()->Resize(n, false);
    for (int i = 0; i < n; ++i) {
      const uint32_t x = unique.index.find(req.keys(i))->second;
      out->set_created(i, !present[x]);
    }
    for (int i = 0; i < n; ++i) {
      const uint32_t x = unique.index.find(req.keys(i))->second;
      present[x] = 1;
      if (pending[x] != kNoHandle) superseded.push_back(pending[x]);
      pending[x] = allocated[i];
    }
    size_t off = 0;
    for (int i = 0; i < n; ++i) {
      const uint32_t len = req.value_lengths(i);
      write_handles.push_back(allocated[i]);
      write_bytes.push_back(std::string_view(req.values()).substr(off, len));
      off += len;
    }
    new_keys += call_new;
  }

  if (absl::Status ws = heap_->write(write_handles, write_bytes); !ws.ok()) {
    // Nothing reached the table: give the slots back and refuse the admitted calls.
    spdlog::error("value heap write of {} values failed: {}", write_handles.size(), ws.ToString());
    for (ValueHandle h : write_handles) heap_->release(h);
    for (auto& st : *statuses) {
      if (st.ok()) st = absl::InternalError(absl::StrCat("value heap write failed: ", ws.message()));
    }
    return;
  }

  keys_.clear();
  values_.clear();
  for (size_t x = 0; x < u; ++x) {
    if (pending[x] == kNoHandle) continue;
    keys_.push_back(unique.keys[x]);
    values_.push_back(pending[x]);
  }
  // The table's cap is what the value heap leaves; every admitted call's
  // table_need fits under it, so the write below cannot be refused.
  update_table_cap();
  absl::Status engine_status;
  if (!keys_.empty()) {
    outcomes_.resize(keys_.size());
    engine_status = table_->insert_or_assign(keys_, values_, absl::MakeSpan(outcomes_));
  }
  heap_->set_limit(limit - std::min(limit, table_bytes()));
  if (!engine_status.ok()) {
    if (engine_status.code() == absl::StatusCode::kResourceExhausted) {
      // The table refused the batch whole (nothing changed), though admission
      // sized it to fit: a bug in the accounting. Give the values back.
      spdlog::error("BUG: the table refused an admitted put batch of {} keys ({} stored, table {} bytes, "
                    "cap {} bytes, value heap {} bytes): {}",
                    keys_.size(), table_->size(), table_->table_bytes(), table_->max_table_bytes(),
                    heap_->reserved_bytes(), engine_status.ToString());
      for (ValueHandle h : values_) heap_->release(h);
      for (ValueHandle h : superseded) heap_->release(h);
      update_table_cap();
    } else {
      // An engine failure mid-write leaves the run's outcome unknown.
      spdlog::error("put batch failed in the engine: {}", engine_status.ToString());
    }
    // Either way report INTERNAL for every admitted call rather than claim success.
    for (auto& s : *statuses) {
      if (s.ok()) s = absl::InternalError(absl::StrCat("engine write failed: ", engine_status.message()));
    }
    return;
  }
  for (size_t x = 0; x < u; ++x) {
    if (found[x] && pending[x] != kNoHandle) heap_->release(old_handle[x]);
  }
  for (ValueHandle h : superseded) heap_->release(h);
  count_relocations();
  if (table_->rebuilding() && table_->size() < kForegroundRebuildKeys) {
    // The run's writes are acknowledged already; a failure here leaves them
    // in the overlay and the next call retries the swap.
    if (auto s = finish_rebuild(); !s.ok()) spdlog::error("table rebuild failed: {}", s.ToString());
  }
}

void Store::apply_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  UniqueKeys unique;
  for (Call* c : calls) {
    for (uint64_t k : c->del().request->keys()) unique.add(k);
  }
  const size_t u = unique.keys.size();
  std::vector<uint64_t> handles(u);
  std::vector<uint8_t> found(u), erased(u);
  absl::Status s = table_->find(unique.keys, absl::MakeSpan(handles), absl::MakeSpan(found));
  if (s.ok()) s = table_->erase(unique.keys, absl::MakeSpan(erased));
  if (!s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  // The first occurrence of a stored key deletes it; later ones find it gone.
  std::vector<uint8_t> gone(u, 0);
  for (Call* c : calls) {
    const v1::DeleteRequest& req = *c->del().request;
    v1::DeleteResponse* out = c->del().response;
    const int n = req.keys_size();
    out->mutable_deleted()->Resize(n, false);
    for (int i = 0; i < n; ++i) {
      const uint32_t x = unique.index.find(req.keys(i))->second;
      if (erased[x] && !gone[x]) {
        out->set_deleted(i, true);
        gone[x] = 1;
      }
    }
  }
  for (size_t x = 0; x < u; ++x) {
    if (erased[x] && found[x]) heap_->release(handles[x]);
  }
  update_table_cap();
  heap_->set_limit(options_.memory_limit_bytes - std::min(options_.memory_limit_bytes, table_bytes()));
}

void Store::apply_shrinks(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  absl::Status s;
  v1::ShrinkResponse answer;
  answer.set_keys(keys());
  answer.set_table_bytes(table_bytes());
  if (table_->rebuilding()) {
    s = absl::FailedPreconditionError(
        "a table rebuild is already running; ask again once it is done (gphkv_rebuilds_total counts it)");
  } else {
    s = table_->shrink_to_fit();
    if (s.ok() && table_->rebuilding()) {
      answer.set_started(true);
      // table_bytes() counts both tables while the new one is built.
      answer.set_new_table_bytes(table_bytes() - answer.table_bytes());
      spdlog::info("shrink requested: rebuilding {} keys from a {}-byte table into a {}-byte one", answer.keys(),
                   answer.table_bytes(), answer.new_table_bytes());
    } else if (s.ok()) {
      spdlog::info("shrink requested: the {}-byte table already fits its {} keys", answer.table_bytes(),
                   answer.keys());
    }
  }
  statuses->assign(calls.size(), s);
  if (!s.ok()) return;
  for (Call* c : calls) *c->shrink().response = answer;
  heap_->set_limit(options_.memory_limit_bytes - std::min(options_.memory_limit_bytes, table_bytes()));
}

}  // namespace gphkv::server
