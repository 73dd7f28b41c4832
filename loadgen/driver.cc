#include "loadgen/driver.h"

#include <sys/prctl.h>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "loadgen/cache_aside.h"

namespace gphkv::loadgen {
namespace {

using Nanos = std::chrono::nanoseconds;

uint64_t NanosBetween(Clock::time_point a, Clock::time_point b) {
  return b > a ? static_cast<uint64_t>(std::chrono::duration_cast<Nanos>(b - a).count()) : 0;
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// One driver thread's loop. Slots hold the calls in flight; a slot's index
// is the tag its completion comes back with.
class ThreadDriver {
 public:
  ThreadDriver(uint32_t index, Session& session, OpSource& source, ReadChecker* checker, const DriveOptions& o,
               Clock::time_point start, uint64_t quota, IntervalRecorder& recorder)
      : index_(index),
        session_(session),
        source_(source),
        checker_(checker),
        o_(o),
        start_(start),
        quota_(quota),
        recorder_(recorder),
        arrival_rng_(Mix64(o.seed ^ 0x617272ULL) + index) {
    if (o.cache_aside != nullptr) fill_maker_.emplace(o.cache_aside);
    measure_start_ = start_ + Seconds(o.warmup_s);
    measure_end_ = measure_start_ + Seconds(o.duration_s);
    const size_t conns = session.connections();
    slots_.resize(conns * o.depth);
    in_flight_per_conn_.assign(conns, 0);
    for (size_t i = slots_.size(); i-- > 0;) free_slots_.push_back(static_cast<uint32_t>(i));
  }

  RunStats Run() {
    // Timers fire up to 50 us late by default (timer slack); the open loop's
    // sends are due at exact instants, so ask for the tightest wake-ups.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (o_.mode == DriveOptions::Mode::kClosed)
      RunClosed();
    else
      RunOpen();
    // Calls the drain gave up on stay visible: each counts as an error with
    // the latency it had reached, so a store that stops answering cannot
    // look fast by leaving its slowest calls out of the histogram.
    const Clock::time_point now = Clock::now();
    const bool open = o_.mode == DriveOptions::Mode::kOpen;
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].busy && slots_[i].measured) {
        if (!slots_[i].filling) ++stats_.dropped;  // a fill is not a workload call
        OpResult r;
        r.error = "DRAIN_TIMEOUT";
        Complete(i, r, now);
      }
    }
    Op op;
    for (Clock::time_point intended : backlog_) {
      if (intended < measure_start_ || !source_.Next(&op)) continue;
      ++stats_.dropped;
      OpStats& st = stats_.by_type[static_cast<int>(op.type)];
      ++st.calls;
      st.keys += op.keys.size();
      ++st.errors;
      ++st.errors_by_status["NOT_SENT"];
      st.latency.Record(NanosBetween(intended, now));
      last_completion_ = now;
    }
    stats_.scheduled = open ? scheduled_measured_ : measured_issued_;
    if (last_completion_ > measure_start_) {
      stats_.seconds = std::chrono::duration<double>(last_completion_ - measure_start_).count();
    }
    return stats_;
  }

 private:
  struct Slot {
    Op op;
    Clock::time_point intended, sent;
    size_t conn = 0;
    bool busy = false;
    bool measured = false;
    std::vector<ReadChecker::Expect> expect;  // a get's: what its keys must show (read_check.h)
    // Cache-aside: the slot carries the fill of its get's misses (`op` stays the get).
    bool filling = false;
    Op fill;
  };

  // May another call be measured? Also decides whether a call is measured.
  bool InWindow(Clock::time_point t) const {
    if (t < measure_start_) return true;  // warm-up calls: always allowed
    return quota_ > 0 ? measured_issued_ < quota_ : t < measure_end_;
  }

  bool Issue(uint32_t slot_index, size_t conn, Clock::time_point intended, Clock::time_point now) {
    Slot& s = slots_[slot_index];
    if (!source_.Next(&s.op)) {
      exhausted_ = true;
      return false;
    }
    s.intended = intended;
    s.sent = now;
    s.conn = conn;
    s.busy = true;
    s.measured = intended >= measure_start_;
    if (s.measured) ++measured_issued_;
    if (s.measured && o_.mode == DriveOptions::Mode::kOpen) stats_.send_lag.Record(NanosBetween(intended, now));
    ++in_flight_;
    ++in_flight_per_conn_[conn];
    if (checker_ != nullptr) checker_->OnSend(s.op, &s.expect);
    session_.Start(conn, s.op, slot_index);
    return true;
  }

  // Records an answer; false when it was a cache-aside fill's, not a workload call's.
  bool Complete(uint64_t tag, const OpResult& r, Clock::time_point now) {
    Slot& s = slots_[tag];
    s.busy = false;
    --in_flight_;
    --in_flight_per_conn_[s.conn];
    const bool open = o_.mode == DriveOptions::Mode::kOpen;
    if (s.filling) {
      // A fill is not a workload call: its own counters, no series point,
      // nothing for the read check (cache_aside.h says why). Its latency
      // counts from its own send.
      s.filling = false;
      if (s.measured) {
        RecordInto(stats_.fills, s.fill, r, NanosBetween(s.sent, now));
        last_completion_ = std::max(last_completion_, now);
      }
      return false;
    }
    if (checker_ != nullptr) checker_->OnAnswer(s.op, r, s.expect);
    const uint64_t latency = NanosBetween(open ? s.intended : s.sent, now);
    const uint64_t get_keys = s.op.type == OpType::kGet ? s.op.keys.size() : 0;
    recorder_.Record(s.op.keys.size(), s.op.type == OpType::kGet ? r.found : 0, get_keys, r.value_bytes, !r.ok,
                     latency);
    if (s.measured) {
      RecordInto(stats_.by_type[static_cast<int>(s.op.type)], s.op, r, latency);
      last_completion_ = std::max(last_completion_, now);
    }
    return true;
  }

  static void RecordInto(OpStats& st, const Op& op, const OpResult& r, uint64_t latency) {
    ++st.calls;
    st.keys += op.keys.size();
    st.found += r.found;
    st.value_bytes += r.value_bytes;
    if (!r.ok) {
      ++st.errors;
      ++st.errors_by_status[r.error];
    }
    st.latency.Record(latency);
  }

  // Cache-aside: after slot `tag`'s get was answered with `r` (Complete ran),
  // sends the put of what it missed on the same connection, in the same slot.
  // True when a fill went out (the slot stays busy until its answer).
  bool StartFill(uint32_t tag, const OpResult& r, Clock::time_point now) {
    Slot& s = slots_[tag];
    if (!fill_maker_ || s.op.type != OpType::kGet || !fill_maker_->Make(s.op, r, &s.fill)) return false;
    s.filling = true;
    s.busy = true;
    s.sent = now;
    ++in_flight_;
    ++in_flight_per_conn_[s.conn];
    session_.Start(s.conn, s.fill, tag);
    return true;
  }

  void RunClosed() {
    const size_t conns = session_.connections();
    Clock::time_point now = Clock::now();
    for (uint32_t d = 0; d < o_.depth; ++d) {
      for (size_t c = 0; c < conns; ++c) {
        if (exhausted_ || !InWindow(now)) break;
        const uint32_t slot = free_slots_.back();
        free_slots_.pop_back();
        if (!Issue(slot, c, now, now)) free_slots_.push_back(slot);
      }
    }
    Clock::time_point drain_deadline = Clock::time_point::max();
    while (in_flight_ > 0) {
      now = Clock::now();
      if (drain_deadline == Clock::time_point::max() && (exhausted_ || !InWindow(now))) {
        drain_deadline = now + Seconds(o_.drain_timeout_s);
      }
      if (now >= drain_deadline) break;
      // Wake at least every 100 ms to notice the end of the window.
      const Clock::time_point wake = std::min(drain_deadline, now + std::chrono::milliseconds(100));
      session_.Poll(wake, [&](uint64_t tag, const OpResult& r) {
        const Clock::time_point done = Clock::now();
        if (Complete(tag, r, done) && StartFill(static_cast<uint32_t>(tag), r, done)) return;
        const size_t conn = slots_[tag].conn;
        // Refill the same slot at once: that is what closes the loop.
        if (!exhausted_ && InWindow(done) && Issue(static_cast<uint32_t>(tag), conn, done, done)) return;
        free_slots_.push_back(static_cast<uint32_t>(tag));
      });
    }
  }

  Clock::duration NextGap() {
    const double mean_s = static_cast<double>(o_.threads) / o_.rate;
    if (!o_.poisson) return Seconds(mean_s);
    return Seconds(-std::log1p(-arrival_rng_.Uniform()) * mean_s);
  }

  void RunOpen() {
    const size_t conns = session_.connections();
    // Threads take turns: thread t's first call is due t/rate after start.
    Clock::time_point next_due = start_ + Seconds(index_ / o_.rate);
    bool scheduling = true;
    size_t rr = 0;
    Clock::time_point drain_deadline = Clock::time_point::max();
    for (;;) {
      Clock::time_point now = Clock::now();
      while (scheduling && next_due <= now) {
        const bool measured = next_due >= measure_start_;
        if (measured && (quota_ > 0 ? scheduled_measured_ >= quota_ : next_due >= measure_end_)) {
          scheduling = false;
          break;
        }
        if (backlog_.size() >= o_.max_backlog) {
          // The store is hopelessly behind: forget the call, but count it.
          if (measured) ++stats_.dropped;
        } else {
          backlog_.push_back(next_due);
        }
        if (measured) ++scheduled_measured_;
        next_due += NextGap();
      }
      stats_.max_backlog = std::max<uint64_t>(stats_.max_backlog, backlog_.size());
      // Send what is due, oldest first, while a connection has room.
      while (!backlog_.empty() && !free_slots_.empty() && !exhausted_) {
        size_t conn = conns;
        for (size_t i = 0; i < conns; ++i) {
          const size_t c = (rr + i) % conns;
          if (in_flight_per_conn_[c] < o_.depth) {
            conn = c;
            break;
          }
        }
        if (conn == conns) break;
        rr = conn + 1;
        const uint32_t slot = free_slots_.back();
        free_slots_.pop_back();
        const Clock::time_point intended = backlog_.front();
        if (!Issue(slot, conn, intended, Clock::now())) {
          free_slots_.push_back(slot);
          break;
        }
        backlog_.pop_front();
      }
      if (exhausted_) scheduling = false;
      if (!scheduling && (backlog_.empty() || exhausted_) && in_flight_ == 0) break;
      if (!scheduling && drain_deadline == Clock::time_point::max()) {
        drain_deadline = now + Seconds(o_.drain_timeout_s);
      }
      if (now >= drain_deadline) break;
      Clock::time_point wake = scheduling ? next_due : drain_deadline;
      if (scheduling && o_.spin_us > 0) {
        const Clock::time_point spin_from = next_due - Seconds(o_.spin_us * 1e-6);
        wake = now >= spin_from ? now : spin_from;  // inside the spin window: poll without blocking
      }
      if (in_flight_ == 0 && scheduling) {
        std::this_thread::sleep_until(wake);  // nothing to hear from: just wait for the next due call
        continue;
      }
      session_.Poll(wake, [&](uint64_t tag, const OpResult& r) {
        const Clock::time_point done = Clock::now();
        if (Complete(tag, r, done) && StartFill(static_cast<uint32_t>(tag), r, done)) return;
        free_slots_.push_back(static_cast<uint32_t>(tag));
      });
    }
  }

  const uint32_t index_;
  Session& session_;
  OpSource& source_;
  ReadChecker* const checker_;  // null: reads are not checked
  const DriveOptions& o_;
  const Clock::time_point start_;
  Clock::time_point measure_start_, measure_end_;
  const uint64_t quota_;
  IntervalRecorder& recorder_;
  Rng arrival_rng_;
  std::optional<CacheAsideFill> fill_maker_;  // cache-aside: this thread's fills

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> in_flight_per_conn_;
  size_t in_flight_ = 0;
  bool exhausted_ = false;
  uint64_t measured_issued_ = 0;
  uint64_t scheduled_measured_ = 0;
  std::deque<Clock::time_point> backlog_;
  Clock::time_point last_completion_{};
  RunStats stats_;
};

SeriesPoint ToPoint(const IntervalRecorder::Snapshot& s, double t_s, double width_s, bool warmup) {
  SeriesPoint p;
  p.t_s = t_s;
  p.warmup = warmup;
  p.calls_per_s = s.calls / width_s;
  p.keys_per_s = s.keys / width_s;
  p.bytes_per_s = s.bytes / width_s;
  p.hit_ratio = s.get_keys ? static_cast<double>(s.found) / s.get_keys : 0.0;
  p.errors = s.errors;
  p.p50_us = s.latency.ValueAtQuantile(0.5) / 1e3;
  p.p90_us = s.latency.ValueAtQuantile(0.9) / 1e3;
  p.p99_us = s.latency.ValueAtQuantile(0.99) / 1e3;
  p.p999_us = s.latency.ValueAtQuantile(0.999) / 1e3;
  p.max_us = s.latency.max() / 1e3;
  return p;
}

}  // namespace

absl::StatusOr<DriveResult> Drive(Target& target, const DriveOptions& o,
                                  const std::function<std::unique_ptr<OpSource>(uint32_t)>& make_source,
                                  double interval_s, const IntervalCallback& on_interval,
                                  const std::function<std::unique_ptr<ReadChecker>(uint32_t)>& make_checker) {
  if (o.threads == 0 || o.connections == 0 || o.depth == 0) {
    return absl::InvalidArgumentError("threads, connections and depth must be at least 1");
  }
  if (o.mode == DriveOptions::Mode::kOpen && !(o.rate > 0)) {
    return absl::InvalidArgumentError("the open loop needs --rate > 0");
  }
  // Connect everything before the clock starts: connection setup is not load.
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<OpSource>> sources(o.threads);
  std::vector<std::unique_ptr<ReadChecker>> checkers(o.threads);
  {
    // Each thread's source draws its key ring (a million Zipf draws by
    // default): on as many threads as there are drivers, while the
    // connections are made, not one after another (16 rings took seconds).
    std::vector<std::thread> makers;
    for (uint32_t t = 0; t < o.threads; ++t) makers.emplace_back([&, t] { sources[t] = make_source(t); });
    absl::Status connected;
    for (uint32_t t = 0; t < o.threads && connected.ok(); ++t) {
      auto s = target.Connect(o.connections);
      if (s.ok()) {
        sessions.push_back(std::move(*s));
      } else {
        connected = s.status();
      }
      if (make_checker) checkers[t] = make_checker(t);
    }
    for (auto& m : makers) m.join();
    if (!connected.ok()) return connected;
  }
  std::vector<IntervalRecorder> recorders(o.threads);
  std::vector<RunStats> per_thread(o.threads);
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
  const Clock::time_point measure_start = start + Seconds(o.warmup_s);

  std::atomic<uint32_t> running{o.threads};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.threads; ++t) {
    // Spread the count over the threads; the first ones take the remainder.
    const uint64_t quota = o.count == 0 ? 0 : o.count / o.threads + (t < o.count % o.threads ? 1 : 0);
    if (o.count != 0 && quota == 0) {
      running.fetch_sub(1);
      continue;
    }
    threads.emplace_back([&, t, quota] {
      std::this_thread::sleep_until(start);
      ThreadDriver driver(t, *sessions[t], *sources[t], checkers[t].get(), o, start, quota, recorders[t]);
      per_thread[t] = driver.Run();
      running.fetch_sub(1);
    });
  }

  // The reporter: one series point per interval, on this thread; it also
  // reads the CPU clocks when the measured window opens.
  DriveResult result;
  std::optional<CpuSample> window_open;
  // The server's stage sums when the window opened (a scrape takes a few
  // milliseconds of this thread, none of the drivers').
  result.server_stages.metrics_address = o.server_metrics;
  std::optional<StageSample> stages_open;
  auto scrape_stages = [&]() -> std::optional<StageSample> {
    if (o.server_metrics.empty() || result.server_stages.error) return std::nullopt;
    absl::StatusOr<std::string> page = ScrapeMetrics(o.server_metrics);
    if (!page.ok()) {
      result.server_stages.error = std::string(page.status().message());
      return std::nullopt;
    }
    return ParseStageSample(*page);
  };
  Clock::time_point tick = start;
  const Clock::duration width = Seconds(interval_s);
  while (running.load() > 0) {
    const Clock::time_point next = tick + width;
    for (Clock::time_point now = Clock::now(); running.load() > 0 && now < next; now = Clock::now()) {
      if (!window_open && now >= measure_start) {
        window_open = TakeCpuSample(o.server_pid);
        stages_open = scrape_stages();
      }
      Clock::time_point wake = std::min(next, now + std::chrono::milliseconds(10));
      if (!window_open) wake = std::min(wake, measure_start);
      std::this_thread::sleep_until(wake);
    }
    const Clock::time_point end = std::min(next, Clock::now());
    const double w = std::chrono::duration<double>(end - tick).count();
    IntervalRecorder::Snapshot snap;
    for (auto& r : recorders) r.TakeInto(&snap);
    if (w > 1e-3 && snap.calls > 0) {
      const SeriesPoint p = ToPoint(snap, std::chrono::duration<double>(end - start).count(), w, end <= measure_start);
      // A last sliver of an interval (the drain) has too few calls for its
      // rates and percentiles to mean anything: progress shows it, the series not.
      if (!p.warmup && w >= 0.5 * interval_s) result.series.push_back(p);
      if (on_interval) on_interval(p);
    }
    tick = end;
  }
  for (auto& th : threads) th.join();
  const CpuSample window_closed = TakeCpuSample(o.server_pid);
  if (!stages_open) stages_open = scrape_stages();  // the run ended within its warm-up
  if (const std::optional<StageSample> closed = scrape_stages(); closed && stages_open) {
    result.server_stages.stages = StagesBetween(*stages_open, *closed);
  }
  if (!window_open) window_open = window_closed;  // the run ended within its warm-up
  result.cpu = CpuUsageBetween(*window_open, window_closed, o.server_pid);
  for (const RunStats& s : per_thread) result.stats.Merge(s);
  for (const auto& c : checkers) {
    if (c != nullptr) result.read_check.Merge(c->stats());
  }
  // Calls still in flight at this point are cancelled by the sessions' destructors.
  return result;
}

}  // namespace gphkv::loadgen
