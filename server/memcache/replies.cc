#include "server/memcache/replies.h"

#include <charconv>

namespace gphkv::server::memcache {
namespace {

constexpr std::string_view kEndOfLine = "\r\n";

template <typename T>
void append_decimal(std::string* out, T value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  out->append(digits, static_cast<size_t>(end - digits));
}

std::string_view reply_word(Reply reply) {
  switch (reply) {
    case Reply::kStored: return "STORED";
    case Reply::kNotStored: return "NOT_STORED";
    case Reply::kExists: return "EXISTS";
    case Reply::kNotFound: return "NOT_FOUND";
    case Reply::kDeleted: return "DELETED";
    case Reply::kTouched: return "TOUCHED";
    case Reply::kOk: return "OK";
    case Reply::kEnd: return "END";
    case Reply::kError: return "ERROR";
  }
  return "ERROR";
}

std::string_view meta_word(MetaStatus status) {
  switch (status) {
    case MetaStatus::kHeader: return "HD";
    case MetaStatus::kMiss: return "EN";
    case MetaStatus::kNotFound: return "NF";
    case MetaStatus::kNotStored: return "NS";
    case MetaStatus::kExists: return "EX";
    case MetaStatus::kNoop: return "MN";
  }
  return "HD";
}

void append_value_header(std::string* out, std::string_view key, uint32_t client_flags, std::string_view data) {
  out->append("VALUE ");
  out->append(key);
  out->push_back(' ');
  append_decimal(out, client_flags);
  out->push_back(' ');
  append_decimal(out, data.size());
}

void append_value_data(std::string* out, std::string_view data) {
  out->append(kEndOfLine);
  out->append(data);
  out->append(kEndOfLine);
}

}  // namespace

void append_reply(std::string* out, Reply reply) {
  out->append(reply_word(reply));
  out->append(kEndOfLine);
}

void append_value(std::string* out, std::string_view key, uint32_t client_flags, std::string_view data) {
  append_value_header(out, key, client_flags, data);
  append_value_data(out, data);
}

void append_value(std::string* out, std::string_view key, uint32_t client_flags, std::string_view data,
                  uint64_t cas_unique) {
  append_value_header(out, key, client_flags, data);
  out->push_back(' ');
  append_decimal(out, cas_unique);
  append_value_data(out, data);
}

void append_number(std::string* out, uint64_t value) {
  append_decimal(out, value);
  out->append(kEndOfLine);
}

void append_version(std::string* out, std::string_view version) {
  out->append("VERSION ");
  out->append(version);
  out->append(kEndOfLine);
}

void append_client_error(std::string* out, std::string_view message) {
  out->append("CLIENT_ERROR ");
  out->append(message);
  out->append(kEndOfLine);
}

void append_server_error(std::string* out, std::string_view message) {
  out->append("SERVER_ERROR ");
  out->append(message);
  out->append(kEndOfLine);
}

void append_error(std::string* out, const ParseError& error) {
  switch (error.kind) {
    case ErrorKind::kError: append_reply(out, Reply::kError); return;
    case ErrorKind::kClientError: append_client_error(out, error.message); return;
    case ErrorKind::kServerError: append_server_error(out, error.message); return;
  }
}

void append_stat(std::string* out, std::string_view name, std::string_view value) {
  out->append("STAT ");
  out->append(name);
  out->push_back(' ');
  out->append(value);
  out->append(kEndOfLine);
}

void append_stat(std::string* out, std::string_view name, uint64_t value) {
  out->append("STAT ");
  out->append(name);
  out->push_back(' ');
  append_decimal(out, value);
  out->append(kEndOfLine);
}

MetaReply::MetaReply(std::string* out, MetaStatus status) : out_(out), has_value_(false) {
  out_->append(meta_word(status));
}

MetaReply MetaReply::value(std::string* out, uint64_t size) {
  out->append("VA ");
  append_decimal(out, size);
  return MetaReply(out, true);
}

MetaReply& MetaReply::key(std::string_view key) { return flag('k', key); }
MetaReply& MetaReply::base64_key() { return flag('b'); }
MetaReply& MetaReply::opaque(std::string_view opaque) { return flag('O', opaque); }
MetaReply& MetaReply::cas(uint64_t cas) {
  out_->append(" c");
  append_decimal(out_, cas);
  return *this;
}
MetaReply& MetaReply::client_flags(uint32_t client_flags) { return flag('f', int64_t{client_flags}); }
MetaReply& MetaReply::size(uint64_t size) {
  out_->append(" s");
  append_decimal(out_, size);
  return *this;
}
MetaReply& MetaReply::ttl(int64_t seconds) { return flag('t', seconds); }

MetaReply& MetaReply::flag(char letter, std::string_view argument) {
  out_->push_back(' ');
  out_->push_back(letter);
  out_->append(argument);
  return *this;
}

MetaReply& MetaReply::flag(char letter, int64_t argument) {
  out_->push_back(' ');
  out_->push_back(letter);
  append_decimal(out_, argument);
  return *this;
}

void MetaReply::end(std::string_view data) {
  out_->append(kEndOfLine);
  if (has_value_) {
    out_->append(data);
    out_->append(kEndOfLine);
  }
}

}  // namespace gphkv::server::memcache
