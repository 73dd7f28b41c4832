#include "server/memcache/get_pack.h"

#include <string_view>
#include <utility>

#include "server/memcache/intake_commands.h"

namespace gphkv::server::memcache {

void GetPack::add(const Call& get, PackedGet answer_to) {
  if (gets_.empty()) received_ = get.received;
  const ByteKeys keys = get.byte_keys();
  answer_to.keys = static_cast<uint32_t>(keys.size());
  answer_to.key_bytes = static_cast<uint32_t>(keys.bytes.size());
  key_bytes_.append(keys.bytes);
  key_lengths_.insert(key_lengths_.end(), keys.lengths.begin(), keys.lengths.end());
  const KeySpan table_keys = get.keys();
  table_keys_.insert(table_keys_.end(), table_keys.begin(), table_keys.end());
  key_sessions_.insert(key_sessions_.end(), table_keys.size(), get.session);
  gets_.push_back(std::move(answer_to));
}

Call GetPack::make_call(std::function<void(absl::Status)> done) {
  response_.Clear();
  items_.clear();
  GetOp op{KeySpan(table_keys_),
           /*exists_only=*/false,
           /*packed=*/true,       &response_, ByteKeys{key_bytes_, key_lengths_}, &items_};
  op.key_sessions = key_sessions_;
  Call call;
  call.op = op;
  // The call's own session is one of its gets'; the executor orders each key
  // by key_sessions.
  call.session = key_sessions_.front();
  call.received = received_;
  call.done = std::move(done);
  return call;
}

void GetPack::write_replies(const absl::Status& status) {
  size_t first = 0;
  size_t key_byte = 0;
  size_t value_offset = 0;
  const std::string_view key_bytes(key_bytes_);
  const absl::Span<const uint32_t> key_lengths(key_lengths_);
  for (PackedGet& g : gets_) {
    if (status.ok()) {
      const ByteKeys keys{key_bytes.substr(key_byte, g.key_bytes), key_lengths.subspan(first, g.keys)};
      value_offset += append_get_reply(GetAnswerView{keys, &response_, first, value_offset, items_},
                                       /*with_cas=*/false, g.reply);
    } else {
      // As a get answered alone: memcached's error line (IntakeCommand::append_reply).
      append_status_error(status, g.reply);
    }
    first += g.keys;
    key_byte += g.key_bytes;
  }
}

void GetPack::clear(size_t max_bytes) {
  gets_.clear();  // drops the connections it kept
  key_bytes_.clear();
  key_lengths_.clear();
  table_keys_.clear();
  key_sessions_.clear();
  items_.clear();
  if (key_bytes_.capacity() > max_bytes) std::string().swap(key_bytes_);
  if (response_.values().capacity() > max_bytes) response_ = v1::GetResponse();
}

}  // namespace gphkv::server::memcache
