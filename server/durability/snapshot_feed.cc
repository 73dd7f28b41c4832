#include "server/durability/snapshot_feed.h"

namespace gphkv::server::durability {

Pairs PairChunk::as_pairs(std::vector<std::string_view>* values) const {
  values->resize(keys.size());
  size_t off = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    (*values)[i] = std::string_view(bytes).substr(off, lengths[i]);
    off += lengths[i];
  }
  return Pairs{keys, *values};
}

bool SnapshotFeed::wants_more() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !abandoned_ && !finished_ && queued_bytes_ < max_queued_bytes_;
}

void SnapshotFeed::push(PairChunk chunk) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned_ || finished_) return;
    queued_bytes_ += chunk.bytes.size() + 12 * chunk.keys.size();
    queue_.push_back(std::move(chunk));
  }
  ready_.notify_one();
}

void SnapshotFeed::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }
  ready_.notify_one();
}

void SnapshotFeed::fail(absl::Status error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::move(error);
    finished_ = true;
  }
  ready_.notify_one();
}

bool SnapshotFeed::abandoned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abandoned_;
}

void SnapshotFeed::abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_ = true;
  queue_.clear();
  queued_bytes_ = 0;
}

absl::StatusOr<bool> SnapshotFeed::next(Pairs* out) {
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait(lock, [this] { return !queue_.empty() || finished_; });
  if (!error_.ok()) return error_;
  if (queue_.empty()) return false;
  current_ = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= current_.bytes.size() + 12 * current_.keys.size();
  lock.unlock();
  *out = current_.as_pairs(&current_values_);
  return true;
}

}  // namespace gphkv::server::durability
