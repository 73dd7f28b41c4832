// memcached's text-protocol replies, appended to a caller's buffer (reused
// from one reply to the next, so nothing is allocated once it has grown).
// The words and layouts are memcached's (doc/protocol.txt).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/memcache/parser.h"

namespace gphkv::server::memcache {

// The one-word replies of the classic commands.
enum class Reply : uint8_t {
  kStored,     // STORED
  kNotStored,  // NOT_STORED
  kExists,     // EXISTS
  kNotFound,   // NOT_FOUND
  kDeleted,    // DELETED
  kTouched,    // TOUCHED
  kOk,         // OK
  kEnd,        // END: closes a get's VALUE lines and a stats listing
  kError,      // ERROR: an unknown command
};

void append_reply(std::string* out, Reply reply);

// "VALUE <key> <flags> <bytes>\r\n<data>\r\n", with " <cas unique>" after
// <bytes> for gets and gats.
void append_value(std::string* out, std::string_view key, uint32_t client_flags, std::string_view data);
void append_value(std::string* out, std::string_view key, uint32_t client_flags, std::string_view data,
                  uint64_t cas_unique);

// incr/decr's new value: "<value>\r\n".
void append_number(std::string* out, uint64_t value);

// "VERSION <version>\r\n".
void append_version(std::string* out, std::string_view version);

// "CLIENT_ERROR <message>\r\n" and "SERVER_ERROR <message>\r\n".
void append_client_error(std::string* out, std::string_view message);
void append_server_error(std::string* out, std::string_view message);
// The reply to a parser error: ERROR, CLIENT_ERROR or SERVER_ERROR with its
// message.
void append_error(std::string* out, const ParseError& error);

// "STAT <name> <value>\r\n"; a listing ends with Reply::kEnd.
void append_stat(std::string* out, std::string_view name, std::string_view value);
void append_stat(std::string* out, std::string_view name, uint64_t value);

// A meta command's status code.
enum class MetaStatus : uint8_t {
  kHeader,     // HD: success, no value
  kMiss,       // EN: mg found nothing
  kNotFound,   // NF: md/ma found nothing
  kNotStored,  // NS
  kExists,     // EX: a C (cas) mismatch
  kNoop,       // MN: mn's answer
};

// One meta reply: the status (or "VA <size>"), the flags it returns in the
// order they are added, then the end of the line (and for VA, the value).
//
//   MetaReply(&out, MetaStatus::kHeader).opaque("x1").end();        // HD Ox1
//   MetaReply::value(&out, v.size()).client_flags(3).key("k").end(v); // VA 2 f3 kk
class MetaReply {
 public:
  MetaReply(std::string* out, MetaStatus status);
  // "VA <size>": the reply of an mg with flag v that found its item.
  static MetaReply value(std::string* out, uint64_t size);

  MetaReply& key(std::string_view key);            // k<key>
  MetaReply& base64_key();                         // b: the returned key is base64
  MetaReply& opaque(std::string_view opaque);      // O<opaque>
  MetaReply& cas(uint64_t cas);                    // c<cas>
  MetaReply& client_flags(uint32_t client_flags);  // f<flags>
  MetaReply& size(uint64_t size);                  // s<size>
  MetaReply& ttl(int64_t seconds);                 // t<seconds>, -1 for none
  // Any other returned flag (h, l, W, X, Z ...): letter and argument.
  MetaReply& flag(char letter, std::string_view argument = {});
  MetaReply& flag(char letter, int64_t argument);

  // Ends the line; a VA reply's data block follows it.
  void end(std::string_view data = {});

 private:
  MetaReply(std::string* out, bool has_value) : out_(out), has_value_(has_value) {}

  std::string* out_;
  bool has_value_ = false;
};

}  // namespace gphkv::server::memcache
