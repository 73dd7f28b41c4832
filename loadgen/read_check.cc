#include "loadgen/read_check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gphkv::loadgen {

const char* ReadCheckModeName(ReadCheckMode mode) {
  switch (mode) {
    case ReadCheckMode::kOff: return "off";
    case ReadCheckMode::kCompleted: return "completed";
    case ReadCheckMode::kIssued: return "issued";
  }
  return "?";
}

absl::StatusOr<ReadCheckMode> ParseReadCheckMode(const std::string& name, ReadCheckMode automatic) {
  if (name == "auto") return automatic;
  if (name == "off") return ReadCheckMode::kOff;
  if (name == "completed") return ReadCheckMode::kCompleted;
  if (name == "issued") return ReadCheckMode::kIssued;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --check_reads '", name, "' (want auto, issued, completed or off)"));
}

void ReadCheckStats::Merge(const ReadCheckStats& o) {
  keys_checked += o.keys_checked;
  stale += o.stale;
  missing += o.missing;
  corrupt += o.corrupt;
}

ReadChecker::ReadChecker(const ReadCheckOptions& options, const Workload* workload)
    : o_(options), workload_(workload) {}

ReadChecker::KeyState& ReadChecker::StateOf(uint64_t key) {
  auto [it, fresh] = keys_.try_emplace(key);
  if (fresh) it->second.known = o_.loaded;  // the load's value, version 0
  return it->second;
}

void ReadChecker::OnSend(const Op& op, std::vector<Expect>* expect) {
  last_sent_ = std::max(last_sent_, op.version);
  if (op.type == OpType::kGet) {
    expect->clear();
    for (uint64_t key : op.keys) {
      if (Workload::WriterOf(key, o_.threads) != o_.thread) continue;
      auto it = keys_.find(key);
      const bool known = it != keys_.end() ? it->second.known : o_.loaded;
      if (!known) continue;
      // A key twice in one get is judged once.
      if (std::any_of(expect->begin(), expect->end(), [&](const Expect& e) { return e.key == key; })) continue;
      if (it == keys_.end()) {
        expect->push_back({key, 0, false});
      } else {
        expect->push_back({key, it->second.version, it->second.deleted});
      }
    }
    return;
  }
  const bool deleted = op.type == OpType::kDelete;
  if (o_.mode == ReadCheckMode::kIssued) in_flight_.try_emplace(op.version);
  for (uint64_t key : op.keys) {
    KeyState& st = StateOf(key);
    if (deleted) st.last_delete_sent = op.version;
    if (o_.mode == ReadCheckMode::kIssued) {
      // The client applies this thread's requests in the order sent: every
      // later get must see this write.
      st.version = op.version;
      st.deleted = deleted;
      st.known = true;
    } else if (st.in_flight++ == 0) {
      st.group_min = op.version;
      st.group_min_deleted = deleted;
      st.group_failed = false;
    }
  }
}

void ReadChecker::OnAnswer(const Op& op, const OpResult& result, const std::vector<Expect>& expect) {
  if (op.type == OpType::kGet) {
    if (!result.ok) return;  // an error is counted as one; it says nothing of the store's contents
    stats_.keys_checked += expect.size();
    // A few checked keys against the values found: a scan; many: an index.
    if (expect.size() * result.seen.size() <= 256) {
      for (const Expect& e : expect) {
        auto it =
            std::find_if(result.seen.begin(), result.seen.end(), [&](const ValueSeen& s) { return s.key == e.key; });
        Judge(e, it == result.seen.end() ? nullptr : &*it);
      }
    } else {
      by_key_.clear();
      for (const ValueSeen& s : result.seen) by_key_.try_emplace(s.key, &s);
      for (const Expect& e : expect) {
        auto it = by_key_.find(e.key);
        Judge(e, it == by_key_.end() ? nullptr : it->second);
      }
    }
    return;
  }
  if (o_.mode == ReadCheckMode::kIssued) {
    auto pending = in_flight_.find(op.version);
    if (pending != in_flight_.end()) {
      if (result.ok) {
        for (uint64_t* kind : pending->second) ++*kind;
      }
      in_flight_.erase(pending);
    }
    if (!result.ok) {
      failed_.insert(op.version);
      for (uint64_t key : op.keys) {
        KeyState& st = StateOf(key);
        if (st.version == op.version) st.known = false;  // it may or may not have taken effect
      }
    }
    return;
  }
  for (uint64_t key : op.keys) {
    KeyState& st = StateOf(key);
    if (st.in_flight == 0) continue;  // a key twice in one write: its group is closed already
    if (!result.ok) st.group_failed = true;
    if (--st.in_flight > 0) continue;
    // The group is answered: the key holds one of its writes, the earliest at least.
    st.known = !st.group_failed;
    st.version = st.group_min;
    st.deleted = st.group_min_deleted;
  }
}

void ReadChecker::Judge(const Expect& e, const ValueSeen* seen) {
  if (seen == nullptr) {
    if (o_.misses_allowed || e.deleted) return;
    auto it = keys_.find(e.key);
    if (it != keys_.end() && it->second.last_delete_sent > e.version) return;  // a later delete may have run
    Violation(e.version, &stats_.missing);
    return;
  }
  if (!seen->intact || seen->size != workload_->ValueSizeOf(e.key)) {
    Violation(e.version, &stats_.corrupt);
    return;
  }
  // A fill's value (version 0): a short value's stamp keeps only the
  // version's low bytes, so it may also be a later write's; either is fine.
  if (o_.fills_allowed && seen->stamp == 0) return;
  // The earliest write at or after the one required whose version matches
  // the stamp's bytes (all 8 of them, or a short value's low bytes): it must
  // have been sent already.
  const uint32_t n = std::min(seen->size, ValuePool::kStampBytes);
  uint64_t version = seen->stamp;
  if (n < ValuePool::kStampBytes) {
    const uint64_t mask = (uint64_t{1} << (8 * n)) - 1;
    version = e.version + ((seen->stamp - e.version) & mask);
  }
  if (version < e.version || version > last_sent_) Violation(e.version, &stats_.stale);
}

void ReadChecker::Violation(uint64_t version, uint64_t* kind) {
  if (o_.mode == ReadCheckMode::kIssued) {
    if (auto it = in_flight_.find(version); it != in_flight_.end()) {
      it->second.push_back(kind);  // counts once that write is known to have succeeded
      return;
    }
    if (failed_.count(version) > 0) return;
  }
  ++*kind;
}

}  // namespace gphkv::loadgen
