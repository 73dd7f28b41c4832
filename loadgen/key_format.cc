#include "loadgen/key_format.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_cat.h"
#include "loadgen/rng.h"

namespace gphkv::loadgen {

absl::StatusOr<KeyFormat> ParseKeyFormat(const std::string& name) {
  if (name == "u64") return KeyFormat::kU64;
  if (name == "bytes") return KeyFormat::kBytes;
  if (name == "tao") return KeyFormat::kTao;
  return absl::InvalidArgumentError(absl::StrCat("unknown --key_format '", name, "' (want u64, bytes or tao)"));
}

const char* KeyFormatName(KeyFormat format) {
  switch (format) {
    case KeyFormat::kU64: return "u64";
    case KeyFormat::kBytes: return "bytes";
    case KeyFormat::kTao: return "tao";
  }
  return "?";
}

namespace {

// Appends the key of `id`: "k:", zeros up to `length` bytes, the id's digits.
void AppendName(uint64_t id, uint32_t length, std::string* out) {
  char digits[20];
  const size_t n = static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), id).ptr - digits);
  out->append("k:", 2);
  if (length > 2 + n) out->append(length - 2 - n, '0');
  out->append(digits, n);
}

void AppendDigits(uint64_t v, std::string* out) {
  char digits[20];
  out->append(digits, static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), v).ptr - digits));
}

// Appends TaoBench's name of `id`: an object for an even id, an association
// of 8 types for an odd one, its two ends the high and the low digits of
// what is left (a bijection: the name gives back the id).
void AppendTaoName(uint64_t id, std::string* out) {
  const uint64_t x = id >> 1;
  if ((id & 1) == 0) {
    out->append("o:", 2);
    AppendDigits(x, out);
    return;
  }
  const uint64_t rest = x >> 3;
  out->append("a:", 2);
  AppendDigits(rest / 1000, out);
  out->push_back(':');
  AppendDigits(x & 7, out);
  out->push_back(':');
  AppendDigits(rest % 1000, out);
}

}  // namespace

uint32_t ByteKeyNames::LengthOf(uint64_t id) const {
  if (lengths_ == nullptr) return length_;
  return lengths_->Quantile(UnitFromHash(Mix64(id ^ 0x6b65796c656eULL)));
}

void ByteKeyNames::Append(uint64_t id, std::string* out) const {
  if (format_ == KeyFormat::kTao) {
    AppendTaoName(id, out);
  } else {
    AppendName(id, LengthOf(id), out);
  }
}

std::string ByteKeyNames::Name(uint64_t id) const {
  std::string key;
  Append(id, &key);
  return key;
}

// Runs per op on the load generator's hot path: one buffer, sized up front
// for the longest key (20 digits) so that the views taken as it fills stay
// valid, and no string per key.
void ByteKeyNames::Name(absl::Span<const uint64_t> ids, std::string* storage,
                        std::vector<std::string_view>* views) const {
  storage->clear();
  views->clear();
  storage->reserve(ids.size() * std::max<size_t>({length_, 2 + 20, kMaxTaoLength}));
  for (uint64_t id : ids) {
    const size_t begin = storage->size();
    Append(id, storage);
    views->emplace_back(storage->data() + begin, storage->size() - begin);
  }
}

}  // namespace gphkv::loadgen
