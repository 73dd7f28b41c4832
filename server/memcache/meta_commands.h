// memcached's meta commands mg, ms, md and ma (issue 28) on the intake's
// operations, as the classic commands use them: mg is a get (a touching get
// with T), ms a put in the mode its M flag names, md a delete, ma an incr or
// decr. This file reads what a meta command's flags ask, refuses what the
// store cannot do (docs/memcached.md, "Meta commands"), and writes the
// reply. The flags' grammar (letters, numbers, duplicates) is the parser's;
// the words and layouts are memcached 1.6.18's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/call.h"
#include "server/memcache/parser.h"

namespace gphkv::server::memcache {

// What one mg, ms, md or ma asks, its views into the parsed command.
struct MetaRequest {
  std::string_view key;  // as sent: base64 with flag b
  bool base64_key = false;
  bool quiet = false;         // q: hide the reply that says "done" (HD, mg's EN)
  bool return_value = false;  // v
  // The flags the reply returns, in request order: k O c f s t (each once:
  // the parser refuses a duplicate); for ma also T and N, which change the
  // TTL a t after them reports (memcached reads ma's flags in order).
  char returned[8] = {};
  size_t returned_count = 0;
  std::string_view opaque;  // O
  // T: mg touches the item, ms stores it with this exptime (memcached's rule).
  bool has_ttl = false;
  int64_t ttl = 0;
  // mg: t came before T, so it reports the TTL the item had (memcached
  // reads the flags in order).
  bool ttl_before_touch = false;
  uint32_t client_flags = 0;  // F (ms)
  bool compare_cas = false;   // C (ms, md, ma)
  uint64_t cas = 0;
  PutMode mode = PutMode::kSet;  // ms and ma's M
  uint64_t delta = 1;            // D (ma)
  // ma N (create a miss with J's number, default 0, and N's exptime); T
  // after N: T's exptime is a created item's.
  bool vivify = false;
  int64_t vivify_ttl = 0;
  uint64_t initial = 0;
  bool touch_after_vivify = false;
};

// Reads a meta command's flags into *request. False, with the error to
// send, for memcached's CLIENT_ERRORs the parser leaves (an unknown mode,
// a key that is not base64) and for what this server refuses (SERVER_ERROR).
bool read_meta_request(const Command& command, MetaRequest* request, ParseError* error);

// A meta key with flag b, decoded as memcached decodes it (padded base64,
// nothing after the padding). False when it is not base64.
bool decode_base64_key(std::string_view text, std::string* out);

// What a meta reply needs once the parsed command's bytes are gone: owned
// copies, kept by the IntakeCommand between its call and its reply.
struct MetaAnswer {
  CommandKind kind = CommandKind::kMetaGet;
  PutMode mode = PutMode::kSet;
  bool base64_key = false;
  bool quiet = false;
  bool return_value = false;
  std::string returned;  // the returned flags' letters, in request order
  std::string key;       // as sent
  std::string opaque;
  // mg T before t: the TTL the reply's t reports is the new one.
  bool touched = false;
  int64_t ttl = 0;
  void assign(CommandKind command_kind, const MetaRequest& request);
};

// mg's reply: `item` null for a miss. The TTL is the item's absolute expiry
// less `now` (unix seconds), -1 when it has none.
void append_meta_get_reply(const MetaAnswer& answer, std::string_view value, const byte_key::ItemMeta* item,
                           uint32_t now, std::string* out);
// ms's and md's reply to the store's status: HD, NS, EX or NF (or an error line).
void append_meta_write_reply(const MetaAnswer& answer, const absl::Status& status, std::string* out);
// ma's reply: the new number when the store took the call (the initial one
// when it created the item), and the item's CAS and TTL as `outcome` says.
void append_meta_arithmetic_reply(const MetaAnswer& answer, const absl::Status& status, uint64_t counter,
                                  const WriteOutcome& outcome, std::string* out);

}  // namespace gphkv::server::memcache
