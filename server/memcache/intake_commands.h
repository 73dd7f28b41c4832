// The thin adapter between memcached's commands and the intake: a parsed
// command becomes one protocol-neutral Call (server/call.h) of byte keys,
// and the Call's answer becomes memcached's reply. No storage logic here:
// the store decides what is found, stored and deleted; this file only
// translates, and refuses what today's store cannot do without new
// semantics (docs/memcached.md, "What is refused").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/call.h"
#include "server/memcache/meta_commands.h"
#include "server/memcache/parser.h"

namespace gphkv::server::memcache {

// What a command turns into before anything is queued.
enum class CommandRoute : uint8_t {
  kIntake,   // a get, set or delete: a Call for the intake (IntakeCommand)
  kLocal,    // answered by the front end alone (version, verbosity, mn): no data touched
  kStats,    // stats: the listener's counters
  kQuit,     // quit: close once the replies before it are sent
  kRefused,  // not supported until the store has the semantics (issue 27): an error, nothing changed
};

// The route of a parsed command, and for kRefused the reply's error (its
// text is static): the meta commands and stats with arguments. cas, touch,
// gat, gats and flush_all go to the store (issue 27): cas as a conditional
// put, touch/gat/gats as touching gets (GetOp::touch), flush_all as a
// key-less put to every partition (PutMode::kFlush).
struct Routing {
  CommandRoute route = CommandRoute::kRefused;
  ParseError refusal;
};
Routing route_command(const Command& command);

// The reply of a kLocal command (version, verbosity, mn).
void append_local_reply(const Command& command, std::string_view version, std::string* out);

// One get, gets, gat, gats, touch, storage command (set, add, replace,
// append, prepend, cas), incr, decr or delete between the intake and its reply: it owns
// the key and value bytes its Call views (the connection's read buffer is
// reused as soon as the command is parsed), the table keys, and the
// response the store fills. Built on the connection's thread; its Call's
// `done` may run on any. Reusable: the next make_call keeps the buffers'
// capacity, so a warm connection's commands allocate nothing here.
class IntakeCommand {
 public:
  // Copies the command's keys (and value) and builds the Call: byte keys,
  // hashed to their table keys here, as the gRPC front end does
  // (server/wire_calls.cc). `done` is the Call's; route_command(command)
  // must be kIntake. The last call made from this object must have been
  // answered.
  // `unix_now` is the store's clock as the command is read: mg's t counts
  // from it.
  Call make_call(const Command& command, bool noreply, uint32_t unix_now, std::function<void(absl::Status)> done);

  // Between calls: gives back any buffer whose capacity passed `max_bytes`
  // (a big value, a big answer), so a pooled command holds little.
  void recycle(size_t max_bytes);

  // Writes memcached's reply to the finished call (status as its `done` got
  // it, or the intake's refusal) to *out. Nothing for noreply, unless the
  // command is of the get family (whose "noreply" is a key).
  void append_reply(const absl::Status& status, std::string* out) const;

  CommandKind kind() const { return kind_; }
  size_t num_keys() const { return key_lengths_.size(); }

 private:
  // mg, ms, md, ma: one key (decoded from base64 with flag b), one call.
  Call make_meta_call(const Command& command, uint32_t unix_now, std::function<void(absl::Status)> done);
  void append_meta_reply(const absl::Status& status, std::string* out) const;

  CommandKind kind_ = CommandKind::kGet;
  bool noreply_ = false;
  std::string key_bytes_;
  std::vector<uint32_t> key_lengths_;
  std::vector<uint64_t> table_keys_;  // the Call's op views them
  std::string value_;
  uint32_t value_length_ = 0;
  v1::GetResponse get_;
  std::vector<byte_key::ItemMeta> items_;  // the found items' flags and CAS (GetOp::items)
  v1::PutResponse put_;
  v1::DeleteResponse delete_;
  MetaAnswer meta_;       // a meta command's reply flags
  WriteOutcome outcome_;  // ma's item as the store left it (PutOp::outcome)
  uint32_t unix_now_ = 0;
};

// A get's answer within a response that may hold other gets' keys too (a
// packed call, get_pack.h): key i of `keys` is the response's key first + i,
// and the first found one's value starts at value_offset in its values.
struct GetAnswerView {
  ByteKeys keys;
  const v1::GetResponse* response = nullptr;
  size_t first = 0;
  size_t value_offset = 0;
  // The response's items (GetOp::items), as many as its keys; empty: every
  // item's flags are 0.
  absl::Span<const byte_key::ItemMeta> items;
};
// Writes the reply of a get, gets, gat or gats that the store answered OK:
// a VALUE line and data block per found key, in order (with its CAS version
// when with_cas: gets, gats), then END. Returns the value bytes it read.
size_t append_get_reply(const GetAnswerView& answer, bool with_cas, std::string* out);

// memcached's error line for a refused or failed call: CLIENT_ERROR for what
// the client asked wrongly (INVALID_ARGUMENT), SERVER_ERROR for the rest
// (out of memory, a queue full, writes refused with --data_dir). The
// status message becomes one line.
void append_status_error(const absl::Status& status, std::string* out);

}  // namespace gphkv::server::memcache
