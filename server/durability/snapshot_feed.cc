#include "server/durability/snapshot_feed.h"

namespace gphkv::server::durability {

void PairChunk::clear() {
  keys.clear();
  key_lengths.clear();
  key_bytes.clear();
  lengths.clear();
  bytes.clear();
  metas.clear();
}

namespace {

// Views of the pieces of `bytes`, lengths[i] bytes each, into *out.
void cut(std::string_view bytes, absl::Span<const uint32_t> lengths, std::vector<std::string_view>* out) {
  out->resize(lengths.size());
  size_t off = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    (*out)[i] = bytes.substr(off, lengths[i]);
    off += lengths[i];
  }
}

}  // namespace

Pairs PairChunk::as_pairs(std::vector<std::string_view>* values, std::vector<std::string_view>* byte_keys) const {
  cut(bytes, lengths, values);
  cut(key_bytes, key_lengths, byte_keys);
  return Pairs{keys, *values, *byte_keys, metas};
}

bool SnapshotFeed::wants_more() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !abandoned_ && !finished_ && queued_bytes_ < max_queued_bytes_;
}

void SnapshotFeed::push(PairChunk chunk) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned_ || finished_) return;
    queued_bytes_ += chunk.bytes_held();
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
  queued_bytes_ -= current_.bytes_held();
  lock.unlock();
  *out = current_.as_pairs(&current_values_, &current_byte_keys_);
  return true;
}

}  // namespace gphkv::server::durability
