#include "tests/fuzz/structured_requests.h"

#include <algorithm>

#include "gphkv/v1/gphkv.pb.h"

namespace gphkv::fuzz {
namespace {

uint64_t key(FuzzedDataProvider& fdp) {
  const uint8_t pick = fdp.ConsumeIntegral<uint8_t>();
  if (pick < 200) return pick % 48;     // a small space: puts, gets and deletes meet
  if (pick < 210) return ~uint64_t{0};  // the table's empty-slot sentinel, a valid key
  return fdp.ConsumeIntegral<uint64_t>();
}

int key_count(FuzzedDataProvider& fdp) {
  // Mostly a few; sometimes none, the limit, or past it.
  switch (fdp.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return 0;
    case 1: return static_cast<int>(kMaxCallKeys) + fdp.ConsumeIntegralInRange<int>(-1, 2);
    default: return fdp.ConsumeIntegralInRange<int>(1, 12);
  }
}

void fill_get(v1::GetRequest* r, FuzzedDataProvider& fdp) {
  for (int i = key_count(fdp); i > 0; --i) r->add_keys(key(fdp));
  switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: r->set_value_mode(v1::VALUE_MODE_EXISTS); break;
    case 1: r->set_value_mode(v1::VALUE_MODE_VALUES); break;
    // Not a ValueMode: proto3 keeps unknown enum values.
    case 2: r->set_value_mode(static_cast<v1::ValueMode>(fdp.ConsumeIntegral<int32_t>())); break;
    default: break;
  }
}

void fill_put(v1::PutRequest* r, FuzzedDataProvider& fdp) {
  const int n = key_count(fdp);
  const int lengths = fdp.ConsumeIntegralInRange<int>(0, 7) == 0 ? fdp.ConsumeIntegralInRange<int>(0, n + 1) : n;
  for (int i = 0; i < n; ++i) r->add_keys(key(fdp));
  for (int i = 0; i < lengths; ++i) {
    uint32_t len;
    switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: len = 0; break;
      case 1: len = kMaxValueBytes + fdp.ConsumeIntegralInRange<uint32_t>(0, 1); break;
      case 2: len = fdp.ConsumeIntegral<uint32_t>(); break;  // far past the limit
      case 3: len = fdp.ConsumeIntegralInRange<uint32_t>(0, kMaxValueBytes); break;
      default: len = fdp.ConsumeIntegralInRange<uint32_t>(1, 64); break;
    }
    r->add_value_lengths(len);
  }
  // The bytes: each value a run of its own byte (a short input stores long
  // values, and a value mixed up with another reads back wrong), no more
  // than the largest valid put takes (a little past it: those are refused
  // anyway); sometimes a few bytes more or fewer than the lengths say.
  constexpr size_t kMaxBytes = (kMaxCallKeys + 8) * size_t{kMaxValueBytes};
  const char fill = fdp.ConsumeIntegral<char>();
  std::string* bytes = r->mutable_values();
  for (int i = 0; i < lengths && bytes->size() < kMaxBytes; ++i) {
    bytes->append(std::min<size_t>(r->value_lengths(i), kMaxBytes - bytes->size()), static_cast<char>(fill + i));
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
    const int delta = fdp.ConsumeIntegralInRange<int>(-3, 3);
    bytes->resize(delta < 0 && bytes->size() < static_cast<size_t>(-delta) ? 0 : bytes->size() + delta, fill);
  }
}

void fill_delete(v1::DeleteRequest* r, FuzzedDataProvider& fdp) {
  for (int i = key_count(fdp); i > 0; --i) r->add_keys(key(fdp));
}

// Packed gets: a few requests' keys back to back in `gets`, their counts in
// get_counts (sometimes 0, past the limit, or not adding up to the keys).
void fill_packed_gets(v1::BatchRequest* r, FuzzedDataProvider& fdp) {
  int keys = 0;
  for (int i = fdp.ConsumeIntegralInRange<int>(0, 4); i > 0; --i) {
    const int n = key_count(fdp);
    r->add_get_counts(static_cast<uint32_t>(n));
    keys += n;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) keys += fdp.ConsumeIntegralInRange<int>(-2, 2);
  v1::GetRequest* gets = r->mutable_gets();
  for (int i = 0; i < keys; ++i) gets->add_keys(key(fdp));
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) {
    gets->set_value_mode(fdp.ConsumeBool() ? v1::VALUE_MODE_EXISTS
                                           : static_cast<v1::ValueMode>(fdp.ConsumeIntegral<int32_t>()));
  }
}

// One of get, put, delete (or none) into a message with that oneof.
template <class M>
void fill_op(M* m, FuzzedDataProvider& fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 6)) {
    case 0:
    case 1: fill_get(m->mutable_get(), fdp); break;
    case 2:
    case 3: fill_put(m->mutable_put(), fdp); break;
    case 4:
    case 5: fill_delete(m->mutable_delete_(), fdp); break;
    default: break;  // no operation: refused
  }
}

}  // namespace

std::string structured_request(Message message, FuzzedDataProvider& fdp) {
  switch (message) {
    case Message::kGet: {
      v1::GetRequest r;
      fill_get(&r, fdp);
      return r.SerializeAsString();
    }
    case Message::kPut: {
      v1::PutRequest r;
      fill_put(&r, fdp);
      return r.SerializeAsString();
    }
    case Message::kDelete: {
      v1::DeleteRequest r;
      fill_delete(&r, fdp);
      return r.SerializeAsString();
    }
    case Message::kPipeline: {
      v1::PipelineRequest r;
      r.set_id(fdp.ConsumeIntegral<uint64_t>());
      fill_op(&r, fdp);
      return r.SerializeAsString();
    }
    case Message::kBatch: {
      v1::BatchRequest r;
      r.set_id(fdp.ConsumeIntegral<uint64_t>());
      for (int i = fdp.ConsumeIntegralInRange<int>(0, 8); i > 0; --i) fill_op(r.add_ops(), fdp);
      if (fdp.ConsumeBool()) fill_packed_gets(&r, fdp);
      return r.SerializeAsString();
    }
  }
  return {};
}

}  // namespace gphkv::fuzz
