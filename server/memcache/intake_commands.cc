#include "server/memcache/intake_commands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/byte_key.h"
#include "server/memcache/meta_commands.h"
#include "server/memcache/replies.h"

namespace gphkv::server::memcache {
namespace {

// The refusals, one per reason, so a client's log says what to wait for.
// SERVER_ERROR: the request is well formed, this server cannot do it yet.
constexpr ParseError kStatsArgsRefused{ErrorKind::kServerError, "not supported yet (stats with arguments)"};
// me dumps memcached's internal item state, which this server does not have.
constexpr ParseError kMetaDebugRefused{ErrorKind::kServerError, "not supported (me: memcached's debug command)"};

Routing refused(ParseError error) { return Routing{CommandRoute::kRefused, error}; }

// The store's write mode of a storage or arithmetic command.
PutMode put_mode(CommandKind kind) {
  switch (kind) {
    case CommandKind::kAdd: return PutMode::kAdd;
    case CommandKind::kReplace: return PutMode::kReplace;
    case CommandKind::kAppend: return PutMode::kAppend;
    case CommandKind::kPrepend: return PutMode::kPrepend;
    case CommandKind::kIncr: return PutMode::kIncrement;
    case CommandKind::kDecr: return PutMode::kDecrement;
    case CommandKind::kCas: return PutMode::kCompareAndSet;
    default: return PutMode::kSet;
  }
}

bool is_meta(CommandKind kind) {
  return kind == CommandKind::kMetaGet || kind == CommandKind::kMetaSet || kind == CommandKind::kMetaDelete ||
         kind == CommandKind::kMetaArithmetic;
}

void append_one_line(std::string_view text, std::string* out) {
  const size_t start = out->size();
  out->append(text);
  std::replace_if(
      out->begin() + static_cast<std::ptrdiff_t>(start), out->end(), [](char c) { return c == '\r' || c == '\n'; },
      ' ');
}

}  // namespace

Routing route_command(const Command& command) {
  switch (command.kind) {
    case CommandKind::kGet:
    case CommandKind::kGets:
    case CommandKind::kGat:
    case CommandKind::kGats:
    case CommandKind::kTouch:
    case CommandKind::kFlushAll:
    case CommandKind::kDelete: return Routing{CommandRoute::kIntake, {}};
    // set, add and replace store their flags and exptime; memcached ignores
    // append's and prepend's: the item keeps its own (the store keeps them).
    case CommandKind::kSet:
    case CommandKind::kAdd:
    case CommandKind::kReplace:
    case CommandKind::kAppend:
    case CommandKind::kPrepend:
    case CommandKind::kCas:
    case CommandKind::kIncr:
    case CommandKind::kDecr: return Routing{CommandRoute::kIntake, {}};
    case CommandKind::kVersion:
    case CommandKind::kVerbosity:
    case CommandKind::kMetaNoop: return Routing{CommandRoute::kLocal, {}};
    case CommandKind::kStats:
      return command.stats_args.empty() ? Routing{CommandRoute::kStats, {}} : refused(kStatsArgsRefused);
    case CommandKind::kQuit: return Routing{CommandRoute::kQuit, {}};
    case CommandKind::kMetaGet:
    case CommandKind::kMetaSet:
    case CommandKind::kMetaDelete:
    case CommandKind::kMetaArithmetic: {
      MetaRequest request;
      ParseError error;
      if (!read_meta_request(command, &request, &error)) return refused(error);
      return Routing{CommandRoute::kIntake, {}};
    }
    case CommandKind::kMetaDebug: return refused(kMetaDebugRefused);
  }
  return refused(kMetaDebugRefused);
}

void append_local_reply(const Command& command, std::string_view version, std::string* out) {
  switch (command.kind) {
    case CommandKind::kVersion: append_version(out, version); break;
    // memcached's verbosity sets its log level; ours is --log_level's. OK,
    // as memcached answers it, and nothing else changes.
    case CommandKind::kVerbosity: append_reply(out, Reply::kOk); break;
    case CommandKind::kMetaNoop: MetaReply(out, MetaStatus::kNoop).end(); break;
    default: append_reply(out, Reply::kError); break;
  }
}

Call IntakeCommand::make_call(const Command& command, bool noreply, uint32_t unix_now,
                              std::function<void(absl::Status)> done) {
  if (is_meta(command.kind)) return make_meta_call(command, unix_now, std::move(done));
  kind_ = command.kind;
  noreply_ = noreply;
  size_t total = 0;
  for (std::string_view k : command.keys) total += k.size();
  key_bytes_.clear();
  key_lengths_.clear();
  table_keys_.clear();
  key_bytes_.reserve(total);
  key_lengths_.reserve(command.keys.size());
  table_keys_.reserve(command.keys.size());
  Call call;
  for (std::string_view k : command.keys) {
    key_bytes_.append(k);
    key_lengths_.push_back(static_cast<uint32_t>(k.size()));
    table_keys_.push_back(byte_key::table_key(k));
  }
  const ByteKeys keys{key_bytes_, key_lengths_};
  const KeySpan table_keys(table_keys_);
  switch (command.kind) {
    case CommandKind::kSet:
    case CommandKind::kAdd:
    case CommandKind::kReplace:
    case CommandKind::kAppend:
    case CommandKind::kPrepend:
    case CommandKind::kCas:
    case CommandKind::kIncr:
    case CommandKind::kDecr:
      if (command.kind == CommandKind::kIncr || command.kind == CommandKind::kDecr) {
        // The store takes the delta as its decimal text (PutMode::kIncrement).
        value_.clear();  // keeps its capacity
        absl::StrAppend(&value_, command.delta);
      } else {
        value_.assign(command.value);
      }
      value_length_ = static_cast<uint32_t>(value_.size());
      put_.Clear();
      call.op =
          PutOp{table_keys, absl::Span<const uint32_t>(&value_length_, 1), value_, &put_, keys, put_mode(command.kind)};
      if (command.kind == CommandKind::kSet || command.kind == CommandKind::kAdd ||
          command.kind == CommandKind::kReplace || command.kind == CommandKind::kCas) {
        // memcached's exptime rule is the store's (PutOp::exptime).
        std::get<PutOp>(call.op).flags = command.client_flags;
        std::get<PutOp>(call.op).exptime = command.exptime;
      }
      std::get<PutOp>(call.op).cas = command.cas_unique;  // cas: the version the item must hold
      break;
    case CommandKind::kFlushAll:
      // No keys: the store's every partition; its delay is the exptime.
      value_.clear();
      value_length_ = 0;
      put_.Clear();
      call.op = PutOp{table_keys, {}, value_, &put_, keys, PutMode::kFlush};
      std::get<PutOp>(call.op).exptime = command.exptime;
      break;
    case CommandKind::kDelete:
      delete_.Clear();
      call.op = DeleteOp{table_keys, &delete_, keys};
      break;
    default:
      // Clear keeps the repeated fields' and the values' capacity.
      get_.Clear();
      items_.clear();
      call.op = GetOp{table_keys, /*exists_only=*/false, /*packed=*/false, &get_, keys, &items_};
      {
        GetOp& get = std::get<GetOp>(call.op);
        get.needs_cas = command.kind == CommandKind::kGets || command.kind == CommandKind::kGats;
        // touch, gat and gats: each found item takes the new expiry (memcached's exptime rule).
        get.touch = command.kind == CommandKind::kTouch || command.kind == CommandKind::kGat ||
                    command.kind == CommandKind::kGats;
        get.touch_exptime = command.exptime;
      }
      break;
  }
  call.received = Clock::now();
  call.done = std::move(done);
  return call;
}

Call IntakeCommand::make_meta_call(const Command& command, uint32_t unix_now, std::function<void(absl::Status)> done) {
  kind_ = command.kind;
  unix_now_ = unix_now;
  noreply_ = false;  // meta commands use flag q instead
  MetaRequest request;
  ParseError error;
  read_meta_request(command, &request, &error);  // route_command took it
  meta_.assign(command.kind, request);
  key_bytes_.clear();
  if (!request.base64_key || !decode_base64_key(request.key, &key_bytes_)) key_bytes_.assign(request.key);
  key_lengths_.assign(1, static_cast<uint32_t>(key_bytes_.size()));
  table_keys_.assign(1, byte_key::table_key(key_bytes_));
  const ByteKeys keys{key_bytes_, key_lengths_};
  const KeySpan table_keys(table_keys_);
  Call call;
  switch (command.kind) {
    case CommandKind::kMetaGet: {
      get_.Clear();
      items_.clear();
      call.op = GetOp{table_keys, /*exists_only=*/false, /*packed=*/false, &get_, keys, &items_};
      GetOp& get = std::get<GetOp>(call.op);
      // The placed path fills each item's CAS and expiry (GetOp::needs_cas).
      get.needs_cas = meta_.returned.find_first_of("ct") != std::string::npos;
      get.touch = request.has_ttl;
      get.touch_exptime = request.ttl;
      break;
    }
    case CommandKind::kMetaDelete: {
      delete_.Clear();
      call.op = DeleteOp{table_keys, &delete_, keys};
      DeleteOp& del = std::get<DeleteOp>(call.op);
      del.compare_cas = request.compare_cas;  // md C: compare-and-delete
      del.cas = request.cas;
      break;
    }
    default: {  // ms, ma
      value_.clear();
      if (command.kind == CommandKind::kMetaArithmetic) {
        absl::StrAppend(&value_, request.delta);  // PutMode::kIncrement's decimal text
      } else {
        value_.assign(command.value);
      }
      value_length_ = static_cast<uint32_t>(value_.size());
      put_.Clear();
      call.op = PutOp{table_keys, absl::Span<const uint32_t>(&value_length_, 1), value_, &put_, keys, request.mode};
      PutOp& put = std::get<PutOp>(call.op);
      if (command.kind == CommandKind::kMetaSet && request.mode != PutMode::kAppend &&
          request.mode != PutMode::kPrepend) {
        // As set: F and T are the item's; append and prepend keep the stored ones.
        put.flags = request.client_flags;
        put.exptime = request.has_ttl ? request.ttl : 0;
      }
      put.cas = request.cas;
      // ms A/P and ma with C (read_meta_request says where it compares).
      put.compare_cas = request.compare_cas && request.mode != PutMode::kCompareAndSet;
      if (command.kind == CommandKind::kMetaArithmetic) {
        put.vivify = request.vivify;  // N: create a miss with J's number
        put.initial = request.initial;
        put.vivify_exptime = request.vivify_ttl;
        put.touch = request.has_ttl;  // T: the item's new expiry
        put.touch_exptime = request.ttl;
        put.touch_after_vivify = request.touch_after_vivify;
        outcome_ = WriteOutcome{};
        put.outcome = &outcome_;  // ma's t and c, and whether N created the item
      }
      break;
    }
  }
  call.received = Clock::now();
  call.done = std::move(done);
  return call;
}

void IntakeCommand::recycle(size_t max_bytes) {
  if (key_bytes_.capacity() > max_bytes) std::string().swap(key_bytes_);
  if (key_lengths_.capacity() * sizeof(uint32_t) > max_bytes) std::vector<uint32_t>().swap(key_lengths_);
  if (table_keys_.capacity() * sizeof(uint64_t) > max_bytes) std::vector<uint64_t>().swap(table_keys_);
  if (value_.capacity() > max_bytes) std::string().swap(value_);
  if (get_.values().capacity() > max_bytes || get_.value_lengths().Capacity() * sizeof(uint32_t) > max_bytes) {
    get_ = v1::GetResponse();
  }
}

void IntakeCommand::append_reply(const absl::Status& status, std::string* out) const {
  if (is_meta(kind_)) {
    append_meta_reply(status, out);
    return;
  }
  const bool get_family = kind_ == CommandKind::kGet || kind_ == CommandKind::kGets || kind_ == CommandKind::kGat ||
                          kind_ == CommandKind::kGats;
  if (noreply_ && !get_family) return;
  const PutMode mode = put_mode(kind_);
  const bool arithmetic = mode == PutMode::kIncrement || mode == PutMode::kDecrement;
  if (!status.ok()) {
    // A conditional write the store refused as memcached does: its words.
    if (status.code() == absl::StatusCode::kAlreadyExists && mode == PutMode::kAdd) {
      memcache::append_reply(out, Reply::kNotStored);
      return;
    }
    if (status.code() == absl::StatusCode::kNotFound && mode != PutMode::kSet) {
      memcache::append_reply(out, arithmetic || mode == PutMode::kCompareAndSet ? Reply::kNotFound : Reply::kNotStored);
      return;
    }
    if (status.code() == absl::StatusCode::kAborted && mode == PutMode::kCompareAndSet) {
      memcache::append_reply(out, Reply::kExists);  // the item was written since the client's gets
      return;
    }
    if (status.code() == absl::StatusCode::kInvalidArgument && arithmetic) {
      out->append("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
      return;
    }
    const bool storage = kind_ == CommandKind::kSet || (mode != PutMode::kSet && !arithmetic);
    if (storage && status.code() == absl::StatusCode::kResourceExhausted) {
      // memcached's words for a value that does not fit; the store's reason follows.
      out->append("SERVER_ERROR out of memory storing object: ");
      append_one_line(std::string_view(status.message().data(), status.message().size()), out);
      out->append("\r\n");
      return;
    }
    append_status_error(status, out);
    return;
  }
  if (arithmetic) {
    append_number(out, put_.counter());
    return;
  }
  switch (kind_) {
    case CommandKind::kSet:
    case CommandKind::kAdd:
    case CommandKind::kReplace:
    case CommandKind::kAppend:
    case CommandKind::kPrepend:
    case CommandKind::kCas: memcache::append_reply(out, Reply::kStored); return;
    case CommandKind::kFlushAll: memcache::append_reply(out, Reply::kOk); return;
    case CommandKind::kTouch:
      memcache::append_reply(out, get_.found_size() > 0 && get_.found(0) ? Reply::kTouched : Reply::kNotFound);
      return;
    case CommandKind::kDelete:
      memcache::append_reply(out,
                             delete_.deleted_size() > 0 && delete_.deleted(0) ? Reply::kDeleted : Reply::kNotFound);
      return;
    default: break;
  }
  // get/gets/gat/gats: a VALUE per found key, in request order, then END.
  append_get_reply(GetAnswerView{ByteKeys{key_bytes_, key_lengths_}, &get_, 0, 0, items_},
                   kind_ == CommandKind::kGets || kind_ == CommandKind::kGats, out);
}

size_t append_get_reply(const GetAnswerView& answer, bool with_cas, std::string* out) {
  // The item's flags: none filled means every item's are 0 (GetOp::items);
  // gets and gats add its CAS version (GetOp::needs_cas: always filled).
  const v1::GetResponse& response = *answer.response;
  const std::string& values = response.values();
  size_t value_offset = answer.value_offset;
  answer.keys.for_each([&](size_t i, std::string_view key) {
    const size_t at = answer.first + i;
    if (at >= static_cast<size_t>(response.found_size()) || !response.found(static_cast<int>(at))) return;
    const uint32_t length = response.value_lengths(static_cast<int>(at));
    const std::string_view data(values.data() + value_offset, length);
    value_offset += length;
    const byte_key::ItemMeta* item = at < answer.items.size() ? &answer.items[at] : nullptr;
    const uint32_t flags = item != nullptr ? item->flags : 0;
    if (with_cas) {
      append_value(out, key, flags, data, item != nullptr ? item->cas : 0);
    } else {
      append_value(out, key, flags, data);
    }
  });
  memcache::append_reply(out, Reply::kEnd);
  return value_offset - answer.value_offset;
}

void IntakeCommand::append_meta_reply(const absl::Status& status, std::string* out) const {
  switch (kind_) {
    case CommandKind::kMetaGet: {
      if (!status.ok()) {
        append_status_error(status, out);
        return;
      }
      const bool found = get_.found_size() > 0 && get_.found(0);
      const byte_key::ItemMeta empty;
      const byte_key::ItemMeta* item = items_.empty() ? &empty : &items_[0];
      const std::string_view value =
          found ? std::string_view(get_.values().data(), get_.value_lengths(0)) : std::string_view();
      append_meta_get_reply(meta_, value, found ? item : nullptr, unix_now_, out);
      return;
    }
    case CommandKind::kMetaDelete:
      if (status.ok() && !(delete_.deleted_size() > 0 && delete_.deleted(0))) {
        append_meta_write_reply(meta_, absl::NotFoundError("not stored"), out);
        return;
      }
      append_meta_write_reply(meta_, status, out);
      return;
    case CommandKind::kMetaArithmetic:
      append_meta_arithmetic_reply(meta_, status, put_.counter(), outcome_, out);
      return;
    default: append_meta_write_reply(meta_, status, out); return;
  }
}

void append_status_error(const absl::Status& status, std::string* out) {
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    out->append("CLIENT_ERROR ");
  } else {
    out->append("SERVER_ERROR ");
  }
  append_one_line(std::string_view(status.message().data(), status.message().size()), out);
  out->append("\r\n");
}

}  // namespace gphkv::server::memcache
