#include "server/executor.h"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/call_stages.h"
#include "server/elapsed.h"
#include "server/thread_name.h"
#include "spdlog/spdlog.h"

namespace gphkv::server {
namespace {

int64_t steady_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A get run that rewrites items (touch, gat, gats): logged as writes are.
bool touches(absl::Span<Call* const> get_run) {
  for (const Call* c : get_run) {
    if (c->get().touch) return true;
  }
  return false;
}

// How long an idle executor with a snapshot export under way waits for the
// writer to make room before it looks again (a call arriving ends the wait).
constexpr auto kSnapshotRoomWait = std::chrono::milliseconds(1);

}  // namespace

Executor::Executor(std::unique_ptr<Store> store, Batcher* batcher, ServiceMetrics* metrics, unsigned completion_threads,
                   ExecutorDataDir data_dir)
    : Executor(std::move(store), batcher, metrics, std::make_shared<CompletionPool>(completion_threads),
               std::move(data_dir), /*owns_completions=*/true) {}

Executor::Executor(std::unique_ptr<Store> store, Batcher* batcher, ServiceMetrics* metrics,
                   std::shared_ptr<CompletionPool> completions, ExecutorDataDir data_dir)
    : Executor(std::move(store), batcher, metrics, std::move(completions), std::move(data_dir),
               /*owns_completions=*/false) {}

Executor::Executor(std::unique_ptr<Store> store, Batcher* batcher, ServiceMetrics* metrics,
                   std::shared_ptr<CompletionPool> completions, ExecutorDataDir data_dir, bool owns_completions)
    : store_(std::move(store)),
      data_dir_config_(std::move(data_dir)),
      batcher_(batcher),
      metrics_(metrics),
      completions_(std::move(completions)),
      owns_completions_(owns_completions),
      memory_limit_bytes_(store_->memory_limit_bytes()) {
  executor_thread_.claim();  // no thread runs yet: the constructor owns the store
  publish();
}

Executor::~Executor() {
  batcher_->close();
  join();
}

void Executor::launch() {
  std::promise<absl::Status> started;
  started_ = started.get_future();
  thread_ = std::thread([this, started = std::move(started)]() mutable {
    executor_thread_.claim();
    name_this_thread("gphkv-executor");
    // The batch delay is a timed wait: with the default 50 us timer slack a
    // 100 us delay lasts up to 150 us. Ask for exact wake-ups.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    // Recovery fills the store on the thread that owns it from then on.
    if (!data_dir_config_.config.dir.empty()) {
      auto durable = StoreDurability::open(data_dir_config_.config, *store_, data_dir_config_.metrics,
                                           data_dir_config_.on_log_failed);
      if (!durable.ok()) {
        started.set_value(durable.status());
        return;
      }
      durable_ = std::move(*durable);
      publish();
    }
    started.set_value(absl::OkStatus());
    loop();
  });
}

absl::Status Executor::wait_started() { return started_.get(); }

void Executor::join() {
  if (thread_.joinable()) thread_.join();
  // Every answer handed over is delivered before join returns; a shared
  // pool's owner stops it once all its executors joined.
  if (owns_completions_) completions_->stop();
}

void Executor::loop() {
  const bool early = batcher_->options().early_answers;
  for (;;) {
    if (early) finish_done_gets();
    // Pipelined gets in flight and nobody waiting: finish them now rather
    // than hold their answers until the next call arrives.
    if (!in_flight_.empty() && batcher_->empty()) {
      finish_oldest_gets();
      continue;
    }
    if (durable_ != nullptr && snapshot_step()) continue;
    if (shrink_step()) continue;
    if (sweep_step()) continue;
    // Shared: get runs still in flight after run_batch returns point into it.
    const Clock::time_point asked = Clock::now();
    pub_idle_since_ns_.store(steady_ns(asked), std::memory_order_relaxed);
    // With runs in flight the batch does not wait for company: it grew
    // while they ran, and a wait would hold their answers.
    auto batch = std::make_shared<std::vector<Call>>(batcher_->next_batch(!early || in_flight_.empty()));
    idle_seconds_ = seconds_since(asked);
    pub_idle_ns_.fetch_add(static_cast<uint64_t>(idle_seconds_ * 1e9), std::memory_order_relaxed);
    pub_idle_since_ns_.store(0, std::memory_order_relaxed);
    if (batch->empty()) {  // closed and drained
      finish_all_gets();
      while (store_->shrinking()) shrink_step();
      if (durable_ != nullptr) durable_->close(*store_);
      return;
    }
    run_batch(batch);
  }
}

bool Executor::snapshot_step() {
  if (!durable_->snapshot_wanted(*store_)) return false;
  finish_all_gets();  // the export reads the store
  const bool exported = durable_->snapshot_step(*store_);
  if (!durable_->exporting() || !batcher_->empty()) return false;
  // Idle, with an export under way: go on with it; when the writer has no
  // room, wait for room or for a call (false once the batcher closed).
  return exported || batcher_->wait_for_call(kSnapshotRoomWait);
}

bool Executor::shrink_step() {
  if (!store_->shrinking()) return false;
  // With calls waiting, the trim takes at most 1 / (1 + kServePerTrim) of
  // the executor's time: a step every batch would let the queue outgrow
  // what the batches between steps carry (measured in the soak: a 4 s trim
  // and seconds of backlog).
  if (!batcher_->empty() && Clock::now() < next_trim_step_) return false;
  finish_all_gets();  // values move: no gather in flight may read their old places
  const Clock::time_point t0 = Clock::now();
  const absl::Status s = store_->shrink_step();
  const Clock::time_point t1 = Clock::now();
  next_trim_step_ = t1 + kServePerTrim * (t1 - t0);
  if (!s.ok() || !store_->shrinking()) finish_shrinks(s);
  publish();
  return store_->shrinking() && batcher_->empty();
}

bool Executor::sweep_step() {
  if (!store_->sweep_wanted()) return false;
  if (!batcher_->empty() && Clock::now() < next_sweep_step_) return false;
  finish_all_gets();  // the sweep deletes: no gather in flight may read what it frees
  const Clock::time_point t0 = Clock::now();
  if (const absl::Status s = store_->sweep_step(); !s.ok()) spdlog::warn("expiry sweep: {}", s.ToString());
  const Clock::time_point t1 = Clock::now();
  next_sweep_step_ = t1 + kServePerTrim * (t1 - t0);
  publish();
  return store_->sweeping() && batcher_->empty();
}

void Executor::finish_shrinks(const absl::Status& trimmed) {
  if (shrinks_.calls.empty()) return;
  std::vector<absl::Status> statuses;
  if (trimmed.ok()) {
    store_->apply_shrinks(shrinks_.calls, &statuses);
  } else {
    statuses.assign(shrinks_.calls.size(), trimmed);
  }
  answer(shrinks_.calls, statuses, false);
  shrinks_ = {};
}

void Executor::commit_writes(bool end_of_batch) {
  if (unlogged_.empty()) return;
  // flush_all's marks follow the writes before them (a flush hides only
  // versions older than its mark, so one logged late changes nothing).
  durable_->add_flushes(store_->take_flush_marks());
  if (absl::Status s = durable_->commit(); !s.ok()) {
    // In the store but not in the log: a restart would lose them, so they
    // are not acknowledged.
    const absl::Status unlogged = absl::UnavailableError(absl::StrCat("applied but not logged: ", s.message()));
    for (Unlogged& u : unlogged_) {
      for (absl::Status& st : u.statuses) {
        if (st.ok()) st = unlogged;
      }
    }
  }
  for (size_t i = 0; i < unlogged_.size(); ++i) {
    answer(unlogged_[i].run, unlogged_[i].statuses, end_of_batch && i + 1 == unlogged_.size());
  }
  unlogged_.clear();
}

void Executor::answer(absl::Span<Call* const> run, std::vector<absl::Status>& statuses, bool last_of_batch) {
  // The run took effect: hand its answers over and go on with the next run.
  struct Answer {
    std::function<void(absl::Status)> done;
    absl::Status status;
    Clock::time_point started;
  };
  std::vector<Answer> answers;
  answers.reserve(run.size());
  for (size_t i = 0; i < run.size(); ++i)
    answers.push_back({std::move(run[i]->done), std::move(statuses[i]), run[i]->started});
  const Clock::time_point ready = Clock::now();
  auto* histograms = metrics_ != nullptr ? &metrics_->call_stage_seconds : nullptr;
  auto deliver = [ready, histograms](std::vector<Answer>& all) {
    CallStageTally tally;
    const Clock::time_point begin = Clock::now();
    for (Answer& a : all) {
      a.done(std::move(a.status));
      if (a.started == Clock::time_point{}) continue;  // answered before its batch ran
      tally.add(kCallExecute, seconds_between(a.started, ready));
      tally.add(kCallAnswerWait, seconds_between(ready, begin));
      tally.add(kCallRespond, seconds_between(begin, Clock::now()));
    }
    tally.flush(histograms);
  };
  // Handing answers to the pool pays off while the executor has a next
  // run or batch to work on; with nothing queued it would only add a
  // thread wake-up to every call's latency (the light-load floor), so the
  // executor answers itself. Only when the pool is idle, so an answer
  // never overtakes one handed over earlier.
  if (last_of_batch && in_flight_.empty() && batcher_->empty() && completions_->idle()) {
    deliver(answers);
    return;
  }
  completions_->submit([deliver, answers = std::move(answers)]() mutable { deliver(answers); });
}

void Executor::finish_oldest_gets() {
  GetStageTimes times;
  std::shared_ptr<GetAnswers> answers = store_->finish_gets(&times);
  // Keeps the run's batch (its Calls) alive until the answers are delivered.
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  times.seconds[kStageIdle] = f.idle_seconds;
  pub_slot_wait_ns_.fetch_add(static_cast<uint64_t>(times.seconds[kStageSlot] * 1e9), std::memory_order_relaxed);
  pub_device_wait_ns_.fetch_add(static_cast<uint64_t>(times.seconds[kStageWait] * 1e9), std::memory_order_relaxed);
  if (metrics_ != nullptr) {
    // Submission to answers ready: the run's time in the engine, overlap included.
    metrics_->device_seconds[static_cast<int>(OpKind::kGet)]->Observe(seconds_since(f.submitted));
    metrics_->batch_keys->Observe(static_cast<double>(f.keys));
    for (int st = 0; st < kNumGetStages; ++st) {
      const bool device_stage = st >= kStageH2D && st <= kStageD2H;
      if (device_stage && !times.device_timed) continue;
      metrics_->get_stage_seconds[st]->Observe(times.seconds[st]);
    }
  }
  ++batches_;
  batched_keys_ += f.keys;
  publish();
  answer_gets(std::move(answers), std::move(f.batch));
}

void Executor::answer_gets(std::shared_ptr<GetAnswers> answers, std::shared_ptr<std::vector<Call>> batch) {
  const size_t n = answers->calls().size();
  // Fills calls [b, e) and answers them; the batch and the answers' buffers
  // stay alive while any range is being answered.
  const Clock::time_point ready = Clock::now();
  auto* histograms = metrics_ != nullptr ? &metrics_->call_stage_seconds : nullptr;
  auto deliver = [answers, batch, ready, histograms](size_t b, size_t e) {
    const Clock::time_point begin = Clock::now();
    answers->fill(b, e);
    // The slot goes back once every range is filled, before the calls are
    // answered: while answers held it through their done() (a split call's
    // merge, a message's serialization), the executor waited for a free
    // slot 75% of its time (issue 30, gpus_scaling_diagnostics_h200x2_*.json).
    answers->range_filled();
    CallStageTally tally;
    for (size_t i = b; i < e; ++i) {
      Call* c = answers->calls()[i];
      const Clock::time_point started = c->started;
      c->done(answers->statuses()[i]);
      tally.add(kCallExecute, seconds_between(started, ready));
      tally.add(kCallAnswerWait, seconds_between(ready, begin));
      tally.add(kCallRespond, seconds_between(begin, Clock::now()));
    }
    tally.flush(histograms);
  };
  // Nothing else to do: answering here saves a thread wake-up (the light-
  // load floor). Only when the pool is idle, so no answer overtakes one
  // handed over earlier.
  if (in_flight_.empty() && batcher_->empty() && completions_->idle()) {
    answers->expect_ranges(1);
    deliver(0, n);
    return;
  }
  // Otherwise the completion threads fill and answer ranges of similar key
  // counts in parallel, while this thread goes on with the next batch.
  const uint64_t keys = answers->key_offset(n);
  const uint64_t per_range = std::max<uint64_t>(
      kMinAnswerRangeKeys, (keys + completions_->threads() - 1) / std::max<size_t>(1, completions_->threads()));
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t b = 0; b < n;) {
    size_t e = b + 1;
    while (e < n && answers->key_offset(e) - answers->key_offset(b) < per_range) ++e;
    ranges.emplace_back(b, e);
    b = e;
  }
  // Counted before any range runs: the last one filled gives the slot back.
  answers->expect_ranges(ranges.size());
  for (const auto& [b, e] : ranges) completions_->submit([deliver, b = b, e = e] { deliver(b, e); });
}

void Executor::finish_all_gets() {
  while (!in_flight_.empty()) finish_oldest_gets();
}

void Executor::finish_done_gets() {
  while (!in_flight_.empty() && store_->oldest_gets_done()) finish_oldest_gets();
}

void Executor::run_batch(const std::shared_ptr<std::vector<Call>>& batch_ptr) {
  std::vector<Call>& batch = *batch_ptr;
  const Clock::time_point start = Clock::now();
  if (metrics_ != nullptr) metrics_->batch_calls->Observe(static_cast<double>(batch.size()));
  std::vector<Call*> live;
  live.reserve(batch.size());
  CallStageTally intake;
  for (Call& c : batch) {
    if (metrics_ != nullptr) {
      metrics_->queue_wait->Observe(std::chrono::duration<double>(start - c.enqueued).count());
      if (c.received != Clock::time_point{}) intake.add(kCallIntake, seconds_between(c.received, c.enqueued));
    }
    if (c.deadline <= start) {
      // Answers leave in arrival order: earlier gets still in flight first.
      finish_all_gets();
      c.done(absl::DeadlineExceededError(absl::StrCat(
          "deadline passed after ", std::chrono::duration_cast<std::chrono::microseconds>(start - c.enqueued).count(),
          " us in the server's queue; nothing was changed")));
      continue;
    }
    c.started = start;
    live.push_back(&c);
  }
  intake.flush(metrics_ != nullptr ? &metrics_->call_stage_seconds : nullptr);
  run_order_.reorder(live);
  std::vector<absl::Status> statuses;
  for (size_t begin = 0; begin < live.size();) {
    const OpKind kind = live[begin]->kind();
    size_t end = begin;
    uint64_t keys = 0;
    while (end < live.size() && live[end]->kind() == kind) keys += live[end++]->num_keys();
    const absl::Span<Call* const> run(live.data() + begin, end - begin);
    begin = end;
    const bool write = kind == OpKind::kPut || kind == OpKind::kDelete;
    // No read runs, and nothing is answered, past a write not yet logged.
    if (!write) commit_writes(false);
    if (kind == OpKind::kGet && store_->can_pipeline_gets(run)) {
      // Runs the device finished meanwhile go out first (inline, when nothing
      // else is queued: their fill is short beside a completion thread's wake-up).
      if (batcher_->options().early_answers) finish_done_gets();
      if (static_cast<int>(in_flight_.size()) >= store_->pipeline_depth()) finish_oldest_gets();
      const Clock::time_point t0 = Clock::now();
      if (absl::Status s = store_->submit_gets(run); !s.ok()) {
        finish_all_gets();
        statuses.assign(run.size(), s);
        answer(run, statuses, begin == live.size());
      } else {
        in_flight_.push_back(InFlight{t0, keys, idle_seconds_, batch_ptr});
        idle_seconds_ = 0;
      }
      continue;
    }
    // A write (or a synchronous get) must not overtake a read in flight:
    // finish those first, so answers also go out in arrival order.
    const Clock::time_point drain_start = Clock::now();
    finish_all_gets();
    const double drained = seconds_since(drain_start);
    if ((write || (kind == OpKind::kGet && touches(run))) && durable_ != nullptr && !durable_->log_error().ok()) {
      statuses.assign(run.size(), durable_->log_error());
      answer(run, statuses, begin == live.size());  // once the log failed, no run waits unlogged
      continue;
    }
    if (kind == OpKind::kShrink) {
      // Answered once the value heap's trim, begun (or begun again) here, is done.
      store_->begin_shrink();
      shrinks_.batches.push_back(batch_ptr);
      shrinks_.calls.insert(shrinks_.calls.end(), run.begin(), run.end());
      continue;
    }
    const Clock::time_point t0 = Clock::now();
    switch (kind) {
      case OpKind::kGet: store_->apply_gets(run, &statuses); break;
      case OpKind::kPut: store_->apply_puts(run, &statuses); break;
      case OpKind::kDelete: store_->apply_deletes(run, &statuses); break;
      case OpKind::kShrink: break;  // above
    }
    if (metrics_ != nullptr) {
      metrics_->device_seconds[static_cast<int>(kind)]->Observe(seconds_since(t0));
      metrics_->batch_keys->Observe(static_cast<double>(keys));
      if (kind == OpKind::kPut) observe_put_stages(drained);
    }
    ++batches_;
    batched_keys_ += keys;
    publish();  // before answering: Stats after an acknowledged write sees it
    if (kind == OpKind::kGet && durable_ != nullptr) {
      // A touch rewrote items: answered once the log holds them, as a write
      // is, after what their rewrite evicted to fit.
      if (Store::TouchedItems touched = store_->take_touches(); !touched.empty()) {
        if (Store::EvictedKeys evicted = store_->take_evictions(); !evicted.empty()) durable_->add_evictions(evicted);
        durable_->add_touches(touched);
        unlogged_.push_back(Unlogged{run, std::move(statuses)});
        continue;
      }
    }
    if (write && durable_ != nullptr) {
      if (kind == OpKind::kPut) {
        // What the run evicted to fit went first.
        if (Store::EvictedKeys evicted = store_->take_evictions(); !evicted.empty()) durable_->add_evictions(evicted);
        durable_->add_puts(run, statuses);
      } else {
        durable_->add_deletes(run, statuses);
      }
      unlogged_.push_back(Unlogged{run, std::move(statuses)});
      continue;
    }
    answer(run, statuses, begin == live.size());
  }
  commit_writes(true);
}

void Executor::observe_put_stages(double drained) {
  PutStageTimes times = store_->last_put_stage_times();
  times.seconds[kPutDrain] = drained;
  for (int st = 0; st < kNumPutStages; ++st) metrics_->put_stage_seconds[st]->Observe(times.seconds[st]);
}

void Executor::publish() {
  pub_keys_.store(store_->keys(), std::memory_order_relaxed);
  pub_collided_keys_.store(store_->collided_keys(), std::memory_order_relaxed);
  pub_load_factor_.store(store_->load_factor(), std::memory_order_relaxed);
  pub_table_bytes_.store(store_->table_bytes(), std::memory_order_relaxed);
  pub_heap_bytes_.store(store_->value_heap_bytes(), std::memory_order_relaxed);
  pub_rebuilds_.store(store_->counters().rebuilds, std::memory_order_relaxed);
  pub_batches_.store(batches_, std::memory_order_relaxed);
  pub_batched_keys_.store(batched_keys_, std::memory_order_relaxed);
  pub_rebuilding_.store(store_->rebuilding(), std::memory_order_relaxed);
  pub_evictions_.store(store_->counters().evictions, std::memory_order_relaxed);
  pub_items_swept_.store(store_->counters().items_swept, std::memory_order_relaxed);
  // The table gauges are set from stats() when the metrics are scraped
  // (server/partition_metrics.h), per partition and in total; the counters
  // here add this partition's increments to the server's.
  if (metrics_ != nullptr) {
    if (const uint64_t n = store_->counters().items_swept; n > reported_swept_) {
      metrics_->items_swept->Increment(static_cast<double>(n - reported_swept_));
      reported_swept_ = n;
    }
    if (const uint64_t n = store_->counters().evictions; n > reported_evictions_) {
      metrics_->evictions->Increment(static_cast<double>(n - reported_evictions_));
      reported_evictions_ = n;
    }
    if (const uint64_t r = store_->counters().relocations; r > reported_relocations_) {
      metrics_->insert_relocations->Increment(static_cast<double>(r - reported_relocations_));
      reported_relocations_ = r;
    }
    for (const auto& [cause, n] : store_->counters().rebuilds_by_cause) {
      uint64_t& reported = reported_rebuilds_[cause];
      if (n > reported) {
        metrics_->rebuilds->Add({{"cause", cause}}).Increment(static_cast<double>(n - reported));
        reported = n;
      }
    }
  }
}

ExecutorStats Executor::stats() const {
  ExecutorStats s;
  s.keys = pub_keys_.load(std::memory_order_relaxed);
  s.collided_keys = pub_collided_keys_.load(std::memory_order_relaxed);
  s.load_factor = pub_load_factor_.load(std::memory_order_relaxed);
  s.table_bytes = pub_table_bytes_.load(std::memory_order_relaxed);
  s.value_heap_bytes = pub_heap_bytes_.load(std::memory_order_relaxed);
  s.memory_limit_bytes = memory_limit_bytes_;
  s.rebuilds = pub_rebuilds_.load(std::memory_order_relaxed);
  s.batches = pub_batches_.load(std::memory_order_relaxed);
  s.batched_keys = pub_batched_keys_.load(std::memory_order_relaxed);
  s.rebuilding = pub_rebuilding_.load(std::memory_order_relaxed);
  s.evictions = pub_evictions_.load(std::memory_order_relaxed);
  s.items_swept = pub_items_swept_.load(std::memory_order_relaxed);
  // A wait under way counts up to now, so a scrape between two runs splits
  // the idle time between them (may count a wait ending meanwhile twice:
  // the counter only moves forward, PartitionMetrics).
  const int64_t since = pub_idle_since_ns_.load(std::memory_order_relaxed);
  s.idle_ns = pub_idle_ns_.load(std::memory_order_relaxed);
  if (since != 0) {
    s.idle_ns += static_cast<uint64_t>(std::max<int64_t>(0, steady_ns(Clock::now()) - since));
  }
  s.slot_wait_ns = pub_slot_wait_ns_.load(std::memory_order_relaxed);
  s.device_wait_ns = pub_device_wait_ns_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace gphkv::server
