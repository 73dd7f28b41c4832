// Writes the request fuzzer's seed corpus into a folder: inputs of valid
// messages of every kind (as raw wire-bytes records), a few that bring the
// store to its limits, and structured records, so fuzzing starts from inputs
// that reach the store instead of ones the parser refuses.
//   request_fuzz_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gphkv/v1/gphkv.pb.h"
#include "tests/fuzz/fuzz_records.h"

namespace {

using gphkv::fuzz::encode_record;
using gphkv::fuzz::Message;
namespace v1 = gphkv::v1;

v1::GetRequest get(std::vector<uint64_t> keys, bool exists = false) {
  v1::GetRequest r;
  for (uint64_t k : keys) r.add_keys(k);
  if (exists) r.set_value_mode(v1::VALUE_MODE_EXISTS);
  return r;
}

v1::PutRequest put(std::vector<uint64_t> keys, std::vector<std::string> values) {
  v1::PutRequest r;
  for (uint64_t k : keys) r.add_keys(k);
  for (const auto& v : values) {
    r.add_value_lengths(static_cast<uint32_t>(v.size()));
    r.mutable_values()->append(v);
  }
  return r;
}

v1::DeleteRequest del(std::vector<uint64_t> keys) {
  v1::DeleteRequest r;
  for (uint64_t k : keys) r.add_keys(k);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::string> seeds;
  const std::string big(4096, 'v');  // the fuzzer's --max_value_bytes
  // Unary messages: put, read back both ways, delete (duplicates included).
  seeds.push_back(encode_record(Message::kPut, false, put({1, 2, 3}, {"a", "bb", ""}).SerializeAsString()) +
                  encode_record(Message::kGet, false, get({1, 2, 3, 4}).SerializeAsString()) +
                  encode_record(Message::kGet, false, get({1, 2}, true).SerializeAsString()) +
                  encode_record(Message::kDelete, false, del({2, 2, 9}).SerializeAsString()) +
                  encode_record(Message::kGet, false, get({2}).SerializeAsString()));
  seeds.push_back(
      encode_record(Message::kPut, false, put({7, 7, ~uint64_t{0}}, {"x", "yy", "max"}).SerializeAsString()) +
      encode_record(Message::kGet, false, get({7, ~uint64_t{0}, 0}).SerializeAsString()));
  // The largest values, then a delete and a smaller value in the room it made.
  {
    std::vector<uint64_t> keys;
    std::vector<std::string> values;
    for (uint64_t k = 0; k < 12; ++k) {
      keys.push_back(100 + k);
      values.push_back(big);
    }
    seeds.push_back(encode_record(Message::kPut, false, put(keys, values).SerializeAsString()) +
                    encode_record(Message::kDelete, false, del({100, 102, 104}).SerializeAsString()) +
                    encode_record(Message::kPut, false, put({1000}, {std::string(100, 's')}).SerializeAsString()) +
                    encode_record(Message::kGet, false, get({100, 101, 1000}).SerializeAsString()));
  }
  // Pipeline messages, one operation each.
  {
    v1::PipelineRequest p, g, d;
    p.set_id(1);
    *p.mutable_put() = put({5, 6}, {"five", "six"});
    g.set_id(2);
    *g.mutable_get() = get({5, 6, 7});
    d.set_id(3);
    *d.mutable_delete_() = del({5});
    seeds.push_back(encode_record(Message::kPipeline, false, p.SerializeAsString()) +
                    encode_record(Message::kPipeline, false, g.SerializeAsString()) +
                    encode_record(Message::kPipeline, false, d.SerializeAsString()) +
                    encode_record(Message::kPipeline, false, g.SerializeAsString()));
  }
  // Batches: runs of puts, a get, deletes, a get; packed gets.
  {
    v1::BatchRequest b;
    b.set_id(9);
    *b.add_ops()->mutable_put() = put({10, 11}, {"ten", "eleven"});
    *b.add_ops()->mutable_put() = put({11}, {"ELEVEN"});
    *b.add_ops()->mutable_get() = get({10, 11, 12});
    *b.add_ops()->mutable_delete_() = del({10});
    *b.add_ops()->mutable_delete_() = del({10, 11});
    *b.add_ops()->mutable_get() = get({10, 11}, true);
    seeds.push_back(encode_record(Message::kBatch, false, b.SerializeAsString()));
    // Packed gets: three requests' keys back to back, after a put.
    v1::BatchRequest p;
    p.set_id(10);
    *p.add_ops()->mutable_put() = put({20, 21}, {"twenty", "twenty-one"});
    *p.mutable_gets() = get({20, 22, 21, 20, 23, 21});
    for (uint32_t n : {2u, 1u, 3u}) p.add_get_counts(n);
    seeds.push_back(encode_record(Message::kBatch, false, p.SerializeAsString()));
  }
  // Structured records of every kind (the payload drives a FuzzedDataProvider).
  {
    std::string s;
    for (int m = 0; m < gphkv::fuzz::kMessages; ++m) {
      std::string payload;
      for (int i = 0; i < 64; ++i) payload.push_back(static_cast<char>(i * 37 + m));
      s += encode_record(static_cast<Message>(m), true, payload);
    }
    seeds.push_back(s);
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(argv[1]) + "/seed-" + std::to_string(i);
    std::ofstream out(path, std::ios::binary);
    out << seeds[i];
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("%zu seeds in %s\n", seeds.size(), argv[1]);
  return 0;
}
