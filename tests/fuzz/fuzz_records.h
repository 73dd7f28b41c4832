// The request fuzzer's input: a sequence of records, each one message for
// the server, so one input drives a store through many requests.
//
//   record = [selector: 1 byte][length: 2 bytes, little-endian][payload: length bytes]
//
// selector % 5 is the message (GetRequest, PutRequest, DeleteRequest,
// PipelineRequest, BatchRequest); (selector / 5) % 2 == 0 feeds the payload
// as the message's wire bytes (raw, valid or not), 1 lets a
// FuzzedDataProvider build a message from it (structured: valid encodings
// with fields the validator must judge). A truncated last record keeps what
// is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gphkv::fuzz {

enum class Message : uint8_t { kGet = 0, kPut = 1, kDelete = 2, kPipeline = 3, kBatch = 4 };
constexpr int kMessages = 5;

struct Record {
  Message message;
  bool structured;
  std::string_view payload;
};

inline std::vector<Record> split_records(const uint8_t* data, size_t size) {
  std::vector<Record> out;
  size_t at = 0;
  while (at + 3 <= size) {
    const uint8_t selector = data[at];
    const size_t length = data[at + 1] | static_cast<size_t>(data[at + 2]) << 8;
    at += 3;
    const size_t n = length < size - at ? length : size - at;
    out.push_back(Record{static_cast<Message>(selector % kMessages), (selector / kMessages) % 2 == 1,
                         std::string_view(reinterpret_cast<const char*>(data + at), n)});
    at += n;
  }
  return out;
}

inline std::string encode_record(Message message, bool structured, std::string_view payload) {
  std::string out;
  out.push_back(static_cast<char>(static_cast<uint8_t>(message) + (structured ? kMessages : 0)));
  out.push_back(static_cast<char>(payload.size() & 0xff));
  out.push_back(static_cast<char>((payload.size() >> 8) & 0xff));
  out.append(payload.substr(0, 0xffff));
  return out;
}

}  // namespace gphkv::fuzz
