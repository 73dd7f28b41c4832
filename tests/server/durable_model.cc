#include "tests/server/durable_model.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"

namespace gphkv::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Moments as a union of disjoint half-open intervals [first, second), ascending.
using Moments = std::vector<std::pair<double, double>>;

Moments merged(Moments m) {
  std::sort(m.begin(), m.end());
  Moments out;
  for (const auto& iv : m) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

Moments intersect(const Moments& a, const Moments& b) {
  Moments out;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const double lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo < hi) out.emplace_back(lo, hi);
    (a[i].second < b[j].second ? i : j)++;
  }
  return out;
}

std::string describe(const Value& v) {
  if (!v) return "(absent)";
  return v->size() <= 24 ? absl::StrCat("'", *v, "'")
                         : absl::StrCat("'", v->substr(0, 24), "...' (", v->size(), " bytes)");
}

}  // namespace

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void WriteHistory::set_initial(uint64_t key, Value value) {
  std::lock_guard<std::mutex> lock(mu_);
  initial_[key] = std::move(value);
}

void WriteHistory::record(uint64_t key, Value value, double sent, double acked, bool known) {
  std::lock_guard<std::mutex> lock(mu_);
  initial_.try_emplace(key, std::nullopt);
  writes_[key].push_back(Write{std::move(value), sent, acked, known});
}

std::map<uint64_t, Value> WriteHistory::expected_if_unknown_applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<uint64_t, Value> out = initial_;
  for (const auto& [key, ws] : writes_) {
    if (!ws.empty()) out[key] = ws.back().value;
  }
  return out;
}

std::string CheckResult::summary() const {
  return absl::StrCat(keys, " keys, ", acknowledged, " acknowledged writes, ", lost_acknowledged, " of them lost",
                      lost_acknowledged > 0
                          ? absl::StrCat(" (the oldest acknowledged ", oldest_loss_age, " s before the kill)")
                          : std::string());
}

CheckResult check_recovered(const WriteHistory& history, const std::map<uint64_t, Value>& recovered, double kill_time,
                            double loss_window) {
  CheckResult r;
  auto fail = [&r](std::string what) {
    r.ok = false;
    if (r.failures.size() < 8) r.failures.push_back(std::move(what));
  };
  // Condition 3: the moments at which every key checked so far held the
  // value it holds now (each key's: the union over the writes it may show).
  Moments all = {{-kInf, kInf}};
  bool hole_reported = false;
  for (const auto& [key, initial] : history.initial()) {
    ++r.keys;
    const auto it = history.writes().find(key);
    static const std::vector<WriteHistory::Write> kNone;
    const std::vector<WriteHistory::Write>& ws = it == history.writes().end() ? kNone : it->second;
    const auto got = recovered.find(key);
    if (got == recovered.end()) {
      fail(absl::StrCat("key ", key, " was not read back"));
      continue;
    }
    const size_t n = ws.size();
    auto value_of = [&](size_t i) -> const Value& { return i == 0 ? initial : ws[i - 1].value; };
    // The last write acknowledged before the loss window: it or a later one must show.
    size_t floor = 0;
    for (size_t i = 1; i <= n; ++i) {
      if (ws[i - 1].known) {
        ++r.acknowledged;
        if (ws[i - 1].acked < kill_time - loss_window) floor = i;
      }
    }
    Moments when;
    std::optional<size_t> shown;
    for (size_t i = floor; i <= n; ++i) {
      const bool allowed = i == 0 || ws[i - 1].known || i == n;  // condition 1
      if (!allowed || value_of(i) != got->second) continue;
      if (!shown) shown = i;
      // Current from when w_i was sent (applied after) until w_{i+1} was acknowledged (applied before).
      when.emplace_back(i == 0 ? -kInf : ws[i - 1].sent, i == n || !ws[i].known ? kInf : ws[i].acked);
    }
    if (!shown) {
      std::string hist;
      for (size_t i = 0; i <= n && i < 12; ++i) {
        absl::StrAppend(
            &hist, " w", i, "=", describe(value_of(i)),
            i == 0 ? ""
                   : (ws[i - 1].known ? absl::StrCat(" acked ", kill_time - ws[i - 1].acked, " s before the kill")
                                      : std::string(" unknown")),
            ";");
      }
      fail(absl::StrCat("key ", key, " holds ", describe(got->second), ", which is no write at or after w", floor,
                        " (the last acknowledged more than ", loss_window, " s before the kill):", hist));
      continue;
    }
    // Acknowledged writes after the newest one shown are lost.
    size_t newest = *shown;
    for (size_t i = newest + 1; i <= n; ++i) {
      if (value_of(i) == got->second && (ws[i - 1].known || i == n)) newest = i;
    }
    for (size_t i = newest + 1; i <= n; ++i) {
      if (!ws[i - 1].known) continue;
      ++r.lost_acknowledged;
      r.oldest_loss_age = std::max(r.oldest_loss_age, kill_time - ws[i - 1].acked);
    }
    const Moments before = all;
    all = intersect(all, merged(std::move(when)));
    if (all.empty() && !hole_reported) {
      hole_reported = true;
      fail(absl::StrCat("no single moment explains the recovered state (a hole, not a lost suffix): key ", key,
                        " holds ", describe(got->second),
                        ", current only outside the moments the keys before it "
                        "agree on (from ",
                        kill_time - before.front().first, " s to ", kill_time - before.back().second,
                        " s before the kill)"));
    }
  }
  return r;
}

}  // namespace gphkv::testing
