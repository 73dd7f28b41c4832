#include "tests/server/durability/durability_test_util.h"

#include <dirent.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "server/durability/record_format.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::server::durability::testing {

absl::Status ModelSink::on_snapshot_begin(uint64_t pairs, uint64_t value_bytes) {
  begun_pairs = pairs;
  begun_value_bytes = value_bytes;
  puts_before_begin = state.size();
  return absl::OkStatus();
}

absl::Status ModelSink::on_puts(const Pairs& pairs) {
  if (!pairs.keys.empty() && pairs.has_byte_keys()) return absl::InternalError("a run of both kinds of key");
  for (size_t i = 0; i < pairs.keys.size(); ++i) state[pairs.keys[i]] = std::string(pairs.values[i]);
  for (size_t i = 0; i < pairs.byte_keys.size(); ++i) {
    byte_state[std::string(pairs.byte_keys[i])] = std::string(pairs.values[i]);
  }
  return absl::OkStatus();
}

absl::Status ModelSink::on_deletes(absl::Span<const uint64_t> keys) {
  for (uint64_t k : keys) state.erase(k);
  return absl::OkStatus();
}

absl::Status ModelSink::on_byte_deletes(absl::Span<const std::string_view> keys) {
  for (std::string_view k : keys) byte_state.erase(std::string(k));
  return absl::OkStatus();
}

absl::Status ModelSink::on_flush(const FlushMark& mark) {
  flushes.push_back(mark);
  return absl::OkStatus();
}

absl::Status ModelSink::on_snapshot_loaded(uint64_t sequence) {
  snapshot_sequence = sequence;
  return absl::OkStatus();
}

absl::Status ModelSink::on_reset() {
  state.clear();
  byte_state.clear();
  ++resets;
  return absl::OkStatus();
}

WriteBatch random_batch(uint64_t seed, uint64_t sequence, Model* model, Keys kinds, ByteModel* byte_model) {
  std::mt19937_64 rng(seed ^ (sequence * 0x9E3779B97F4A7C15ull));
  auto key = [&]() -> uint64_t {
    switch (rng() % 16) {
      case 0: return 0;
      case 1: return UINT64_MAX;
      default: return rng() % 512;
    }
  };
  auto byte_key = [&]() -> std::string {
    const uint64_t id = rng() % 256;
    switch (rng() % 16) {
      case 0: return std::string(4096, static_cast<char>('a' + id % 4));  // the longest key
      case 1:
      case 2: return std::string("\0\xff", 2) + static_cast<char>(id % 16);  // binary, NUL first
      default: return "user:" + std::to_string(id) + ":profile";
    }
  };
  auto value = [&](std::string* bytes) -> uint32_t {
    const uint32_t n = static_cast<uint32_t>(rng() % 64 == 0 ? rng() % 65536 : rng() % 301);
    const size_t at = bytes->size();
    bytes->resize(at + n);
    for (size_t j = at; j < bytes->size(); ++j) (*bytes)[j] = static_cast<char>(rng());
    return n;
  };
  WriteBatch batch;
  // A run of either kind of key: deletes one time in four, else puts; the model follows.
  auto add_run = [&](const auto& keys, auto* m, auto&& add_deletes, auto&& add_puts) {
    if (rng() % 4 == 0) {
      add_deletes();
      if (m) {
        for (const auto& k : keys) m->erase(k);
      }
      return;
    }
    std::vector<uint32_t> lengths(keys.size());
    std::string bytes;
    for (size_t i = 0; i < keys.size(); ++i) {
      const size_t at = bytes.size();
      lengths[i] = value(&bytes);
      if (m) (*m)[keys[i]] = bytes.substr(at);
    }
    add_puts(lengths, bytes);
  };
  const int runs = 1 + static_cast<int>(rng() % 3);
  for (int r = 0; r < runs; ++r) {
    const size_t n = 1 + rng() % 12;
    if (kinds == Keys::kBoth && rng() % 2 == 0) {
      std::vector<std::string> keys(n);
      for (auto& k : keys) k = byte_key();
      const std::vector<std::string_view> views(keys.begin(), keys.end());
      add_run(
          keys, byte_model, [&] { batch.add_byte_deletes(views); },
          [&](const std::vector<uint32_t>& lengths, const std::string& bytes) {
            batch.add_byte_puts(views, lengths, bytes);
          });
      continue;
    }
    std::vector<uint64_t> keys(n);
    for (auto& k : keys) k = key();
    add_run(
        keys, model, [&] { batch.add_deletes(keys); },
        [&](const std::vector<uint32_t>& lengths, const std::string& bytes) { batch.add_puts(keys, lengths, bytes); });
  }
  return batch;
}

Model model_after(uint64_t seed, uint64_t last, Keys keys, ByteModel* byte_model) {
  Model m;
  for (uint64_t s = 1; s <= last; ++s) random_batch(seed, s, &m, keys, byte_model);
  return m;
}

void append_batches(DataDir& dir, uint64_t seed, uint64_t from, uint64_t to, Keys keys) {
  for (uint64_t seq = from; seq <= to; ++seq) {
    WriteBatch b = random_batch(seed, seq, nullptr, keys);
    auto got = dir.append(b);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(*got, seq);
  }
}

absl::StatusOr<bool> ModelSource::next(Pairs* out) {
  if (chunks_ == fail_at_chunk) return absl::AbortedError("the store stopped exporting");
  ++chunks_;
  if (before_chunk) before_chunk();
  keys_.clear();
  bytes_.clear();
  byte_key_copies_.clear();
  if (!done_) {
    auto it = started_ ? model_->lower_bound(next_key_) : model_->begin();
    started_ = true;
    for (; it != model_->end() && keys_.size() < chunk_; ++it) {
      keys_.push_back(it->first);
      bytes_.push_back(it->second);
    }
    if (it == model_->end()) {
      done_ = true;
    } else {
      next_key_ = it->first;
    }
  }
  if (keys_.empty() && !byte_done_ && byte_model_ != nullptr) {
    auto it = byte_started_ ? byte_model_->lower_bound(next_byte_key_) : byte_model_->begin();
    byte_started_ = true;
    for (; it != byte_model_->end() && byte_key_copies_.size() < chunk_; ++it) {
      byte_key_copies_.push_back(it->first);
      bytes_.push_back(it->second);
    }
    if (it == byte_model_->end()) {
      byte_done_ = true;
    } else {
      next_byte_key_ = it->first;
    }
  }
  if (bytes_.empty()) return false;
  values_.assign(bytes_.begin(), bytes_.end());
  byte_keys_.assign(byte_key_copies_.begin(), byte_key_copies_.end());
  *out = Pairs{keys_, values_, byte_keys_};
  return true;
}

ScratchDir::ScratchDir() {
  std::string tmpl = ::testing::TempDir() + "gphkv-durability-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << tmpl;
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void copy_dir(const std::string& from, const std::string& to) {
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (e.is_regular_file()) {
      std::filesystem::copy_file(e.path(), to + "/" + e.path().filename().string(),
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
}

std::vector<std::string> list_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string last_file(const std::string& dir, const std::string& prefix) {
  std::string found;
  for (const std::string& name : list_names(dir)) {
    if (name.rfind(prefix, 0) == 0) found = dir + "/" + name;
  }
  return found;
}

std::vector<uint64_t> record_offsets(const std::string& bytes) {
  std::vector<uint64_t> offsets;
  for (uint64_t off = 0; off < bytes.size();) {
    const RecordAt r = read_record(bytes, off);
    if (r.check != RecordCheck::kOk) break;
    offsets.push_back(off);
    off = r.end;
  }
  return offsets;
}

uint64_t test_seed() { return loadgen::testing::TestSeed(); }

}  // namespace gphkv::server::durability::testing
