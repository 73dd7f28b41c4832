#include "server/memcache/meta_commands.h"

#include <charconv>

#include "absl/strings/escaping.h"
#include "server/memcache/intake_commands.h"
#include "server/memcache/replies.h"

namespace gphkv::server::memcache {
namespace {

// memcached 1.6.18's words.
constexpr ParseError kBadMsMode{ErrorKind::kClientError, "invalid mode for ms M token"};
constexpr ParseError kBadMaMode{ErrorKind::kClientError, "invalid mode for ma M token"};
constexpr ParseError kBadBase64Key{ErrorKind::kClientError, "error decoding key"};
// md and ma answer every flag problem so, a key that is not base64 included.
constexpr ParseError kInvalidOrDuplicateFlag{ErrorKind::kClientError, "invalid or duplicate flag"};
constexpr ParseError kNonNumeric{ErrorKind::kClientError, "cannot increment or decrement non-numeric value"};

// What the store cannot do yet: each needs an answer or an operation the
// intake's calls do not carry (docs/memcached.md, "Meta commands").
// SERVER_ERROR, as the other refusals: well formed, not served here.
constexpr ParseError kMgRefused{ErrorKind::kServerError, "not supported yet (mg flags N R h l)"};
constexpr ParseError kMsRefused{ErrorKind::kServerError, "not supported yet (ms flags c, I with C)"};
constexpr ParseError kMdRefused{ErrorKind::kServerError, "not supported yet (md flag I)"};

template <typename T>
T number_of(std::string_view text) {
  T value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);  // the parser checked it
  return value;
}

void add_returned(MetaRequest* request, char letter) {
  if (request->returned_count < sizeof(request->returned)) request->returned[request->returned_count++] = letter;
}

// A status message as one reply line.
std::string one_line(absl::string_view message) {
  std::string line(message.data(), message.size());
  for (char& c : line) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return line;
}

bool fail(ParseError* error, ParseError e) {
  *error = e;
  return false;
}

// The flags every meta command returns (k, O) and reads alike (q, b).
bool read_common(char letter, std::string_view argument, MetaRequest* request) {
  switch (letter) {
    case 'q': request->quiet = true; return true;
    case 'k': add_returned(request, 'k'); return true;
    case 'O':
      request->opaque = argument;
      add_returned(request, 'O');
      return true;
    case 'b': return true;  // Command::base64_key
    default: return false;
  }
}

bool read_get(char letter, std::string_view argument, MetaRequest* request, ParseError* error) {
  switch (letter) {
    case 'v': request->return_value = true; return true;
    case 't':
      request->ttl_before_touch = !request->has_ttl;
      add_returned(request, letter);
      return true;
    case 'c':
    case 'f':
    case 's': add_returned(request, letter); return true;
    case 'T':
      request->has_ttl = true;
      request->ttl = number_of<int32_t>(argument);
      return true;
    // Vivify, recache, hit-before and last-access need item state the
    // store does not keep.
    case 'N':
    case 'R':
    case 'h':
    case 'l': return fail(error, kMgRefused);
    default: return true;  // memcached 1.6.18 takes and ignores mg's others (u, P, L, C, ...)
  }
}

bool read_set(char letter, std::string_view argument, MetaRequest* request, bool* invalidate, ParseError* error) {
  switch (letter) {
    case 'T':
      request->has_ttl = true;
      request->ttl = number_of<int32_t>(argument);
      return true;
    // 1.6.18 reads F as a uint64 and keeps its low 32 bits.
    case 'F': request->client_flags = static_cast<uint32_t>(number_of<uint64_t>(argument)); return true;
    case 'C':
      request->compare_cas = true;
      request->cas = number_of<uint64_t>(argument);
      return true;
    case 'I': *invalidate = true; return true;
    case 'M':
      if (argument.size() != 1) return fail(error, kBadMsMode);
      switch (argument[0]) {
        case 'E': request->mode = PutMode::kAdd; return true;
        case 'A': request->mode = PutMode::kAppend; return true;
        case 'P': request->mode = PutMode::kPrepend; return true;
        case 'R': request->mode = PutMode::kReplace; return true;
        case 'S': request->mode = PutMode::kSet; return true;
        default: return fail(error, kBadMsMode);
      }
    case 'c': return fail(error, kMsRefused);  // the new CAS: a put's answer does not carry it
    default: return true;
  }
}

bool read_delete(char letter, std::string_view argument, MetaRequest* request, ParseError* error) {
  switch (letter) {
    case 'C':  // compare-and-delete (DeleteOp::compare_cas)
      request->compare_cas = true;
      request->cas = number_of<uint64_t>(argument);
      return true;
    case 'I': return fail(error, kMdRefused);  // a stale mark: the store keeps no such state
    default: return true;
  }
}

bool read_arithmetic(char letter, std::string_view argument, MetaRequest* request, ParseError* error) {
  switch (letter) {
    case 'v': request->return_value = true; return true;
    case 'D': request->delta = number_of<uint64_t>(argument); return true;
    case 'M':
      if (argument.size() != 1) return fail(error, kBadMaMode);
      switch (argument[0]) {
        case 'I':
        case '+': request->mode = PutMode::kIncrement; return true;
        case 'D':
        case '-': request->mode = PutMode::kDecrement; return true;
        default: return fail(error, kBadMaMode);
      }
    case 'N':  // create a miss (PutOp::vivify)
      request->vivify = true;
      request->vivify_ttl = number_of<int32_t>(argument);
      add_returned(request, letter);
      return true;
    case 'J': request->initial = number_of<uint64_t>(argument); return true;  // used only with N
    case 'T':
      request->has_ttl = true;
      request->ttl = number_of<int32_t>(argument);
      request->touch_after_vivify = request->vivify;
      add_returned(request, letter);
      return true;
    case 'C':
      request->compare_cas = true;
      request->cas = number_of<uint64_t>(argument);
      return true;
    case 't':
    case 'c': add_returned(request, letter); return true;
    default: return true;  // what 1.6.18 ignores
  }
}

}  // namespace

bool decode_base64_key(std::string_view text, std::string* out) {
  // memcached decodes whole 4-character groups; '=' only at the end.
  if (text.empty() || text.size() % 4 != 0) return false;
  const size_t padding = text.substr(text.size() - 2) == "==" ? 2 : text.back() == '=' ? 1 : 0;
  for (size_t i = 0; i < text.size() - padding; ++i) {
    const char c = text[i];
    const bool alphabet =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!alphabet) return false;
  }
  return absl::Base64Unescape(absl::string_view(text.data(), text.size()), out) && !out->empty();
}

bool read_meta_request(const Command& command, MetaRequest* request, ParseError* error) {
  *request = MetaRequest{};
  request->key = command.keys.empty() ? std::string_view() : command.keys[0];
  request->base64_key = command.base64_key;
  const bool md_or_ma = command.kind == CommandKind::kMetaDelete || command.kind == CommandKind::kMetaArithmetic;
  if (command.base64_key) {
    std::string decoded;
    if (!decode_base64_key(request->key, &decoded))
      return fail(error, md_or_ma ? kInvalidOrDuplicateFlag : kBadBase64Key);
  }
  if (command.kind == CommandKind::kMetaArithmetic) request->mode = PutMode::kIncrement;
  bool invalidate = false;
  for (const MetaFlag& flag : command.meta_flags) {
    if (read_common(flag.letter, flag.argument, request)) continue;
    bool ok = true;
    switch (command.kind) {
      case CommandKind::kMetaGet: ok = read_get(flag.letter, flag.argument, request, error); break;
      case CommandKind::kMetaSet: ok = read_set(flag.letter, flag.argument, request, &invalidate, error); break;
      case CommandKind::kMetaDelete: ok = read_delete(flag.letter, flag.argument, request, error); break;
      case CommandKind::kMetaArithmetic: ok = read_arithmetic(flag.letter, flag.argument, request, error); break;
      default: break;
    }
    if (!ok) return false;
  }
  if (command.kind == CommandKind::kMetaSet && request->compare_cas) {
    // ms C, as 1.6.18 reads it with each mode: with S or R it is
    // memcached's cas; E adds and ignores it; A and P compare it (where it
    // is not 0: PutOp::compare_cas). With I it would mark the item stale
    // instead, which the store has no state for.
    if (invalidate) return fail(error, kMsRefused);
    switch (request->mode) {
      case PutMode::kSet:
      case PutMode::kReplace: request->mode = PutMode::kCompareAndSet; break;
      case PutMode::kAdd: request->compare_cas = false; break;
      default: request->compare_cas = request->cas != 0; break;
    }
  }
  // ma compares a CAS that is not 0, as 1.6.18's does.
  if (command.kind == CommandKind::kMetaArithmetic && request->cas == 0) request->compare_cas = false;
  return true;
}

void MetaAnswer::assign(CommandKind command_kind, const MetaRequest& request) {
  kind = command_kind;
  mode = request.mode;
  base64_key = request.base64_key;
  quiet = request.quiet;
  return_value = request.return_value;
  returned.assign(request.returned, request.returned_count);
  key.assign(request.key);
  opaque.assign(request.opaque);
  touched = request.has_ttl && !request.ttl_before_touch && command_kind == CommandKind::kMetaGet;
  ttl = request.ttl;
}

namespace {

// The returned flags the reply of any status carries: k (with b after it
// when the key came in base64) and O, in request order.
void append_key_and_opaque(const MetaAnswer& answer, char letter, MetaReply* reply) {
  if (letter == 'k') {
    reply->key(answer.key);
    if (answer.base64_key) reply->base64_key();
  } else if (letter == 'O') {
    reply->opaque(answer.opaque);
  }
}

void append_flags(const MetaAnswer& answer, MetaReply* reply) {
  for (char letter : answer.returned) append_key_and_opaque(answer, letter, reply);
}

}  // namespace

void append_meta_get_reply(const MetaAnswer& answer, std::string_view value, const byte_key::ItemMeta* item,
                           uint32_t now, std::string* out) {
  if (item == nullptr) {
    if (answer.quiet) return;  // q: a miss says nothing
    MetaReply reply(out, MetaStatus::kMiss);
    append_flags(answer, &reply);  // a miss returns only k and O
    reply.end();
    return;
  }
  MetaReply reply = answer.return_value ? MetaReply::value(out, value.size()) : MetaReply(out, MetaStatus::kHeader);
  for (char letter : answer.returned) {
    switch (letter) {
      case 'c': reply.cas(item->cas); break;
      case 'f': reply.client_flags(item->flags); break;
      case 's': reply.size(value.size()); break;
      case 't': {
        const uint32_t exptime = answer.touched ? byte_key::absolute_exptime(answer.ttl, now) : item->exptime;
        reply.ttl(exptime == 0 ? -1 : static_cast<int64_t>(exptime) - static_cast<int64_t>(now));
        break;
      }
      default: append_key_and_opaque(answer, letter, &reply); break;
    }
  }
  reply.end(value);
}

void append_meta_write_reply(const MetaAnswer& answer, const absl::Status& status, std::string* out) {
  MetaStatus word = MetaStatus::kHeader;
  if (!status.ok()) {
    switch (status.code()) {
      case absl::StatusCode::kAlreadyExists: word = MetaStatus::kNotStored; break;  // E: the key is there
      case absl::StatusCode::kAborted: word = MetaStatus::kExists; break;           // C: another CAS
      case absl::StatusCode::kNotFound:
        // R, A, P on a miss: not stored; C on a miss and md on a miss: not found.
        word = answer.kind == CommandKind::kMetaSet && answer.mode != PutMode::kCompareAndSet ? MetaStatus::kNotStored
                                                                                              : MetaStatus::kNotFound;
        break;
      case absl::StatusCode::kResourceExhausted:
        if (answer.kind == CommandKind::kMetaSet) {
          // memcached's words for a value that does not fit, as for set; the store's reason follows.
          append_server_error(out, "out of memory storing object: " + one_line(status.message()));
          return;
        }
        append_status_error(status, out);
        return;
      default: append_status_error(status, out); return;
    }
  }
  if (word == MetaStatus::kHeader && answer.quiet) return;
  MetaReply reply(out, word);
  append_flags(answer, &reply);
  reply.end();
}

void append_meta_arithmetic_reply(const MetaAnswer& answer, const absl::Status& status, uint64_t counter,
                                  const WriteOutcome& outcome, std::string* out) {
  if (!status.ok()) {
    if (status.code() == absl::StatusCode::kNotFound) {
      MetaReply reply(out, MetaStatus::kNotFound);
      append_flags(answer, &reply);
      reply.end();
    } else if (status.code() == absl::StatusCode::kAborted) {  // C: another CAS
      MetaReply reply(out, MetaStatus::kExists);
      append_flags(answer, &reply);
      reply.end();
    } else if (status.code() == absl::StatusCode::kInvalidArgument) {
      append_error(out, kNonNumeric);
    } else {
      append_status_error(status, out);
    }
    return;
  }
  // q hides ma's success, value and all; 1.6.18 still answers an item N
  // created.
  if (answer.quiet && !outcome.created) return;
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), counter);
  const std::string_view number(digits, static_cast<size_t>(end - digits));
  MetaReply reply = answer.return_value ? MetaReply::value(out, number.size()) : MetaReply(out, MetaStatus::kHeader);
  // memcached walks the flags in order: T sets the item's expiry, N a
  // created item's, and a t reports the expiry as it is at that point.
  uint32_t exptime = outcome.created ? 0 : outcome.exptime_before;
  for (char letter : answer.returned) {
    switch (letter) {
      case 'c': reply.cas(outcome.cas); break;
      case 't': reply.ttl(exptime == 0 ? -1 : static_cast<int64_t>(exptime) - static_cast<int64_t>(outcome.now)); break;
      case 'T': exptime = outcome.touch_exptime; break;
      case 'N':
        if (outcome.created) exptime = outcome.vivify_exptime;
        break;
      default: append_key_and_opaque(answer, letter, &reply); break;
    }
  }
  if (answer.return_value) {
    reply.end(number);
  } else {
    reply.end();
  }
}

}  // namespace gphkv::server::memcache
