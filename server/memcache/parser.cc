#include "server/memcache/parser.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>

namespace gphkv::server::memcache {

const char* command_name(CommandKind kind) {
  static constexpr const char* kNames[kCommandKinds] = {
      "get",  "gets",   "gat",  "gats", "set",   "add",       "replace", "append",    "prepend",
      "cas",  "delete", "incr", "decr", "touch", "flush_all", "version", "verbosity", "stats",
      "quit", "mg",     "ms",   "md",   "ma",    "mn",        "me"};
  const auto k = static_cast<size_t>(kind);
  return k < kCommandKinds ? kNames[k] : "unknown";
}
namespace {

// memcached's reply texts, word for word (proto_text.c, proto_parser.c).
constexpr ParseError kUnknownCommand{ErrorKind::kError, {}};
constexpr ParseError kBadFormat{ErrorKind::kClientError, "bad command line format"};
constexpr ParseError kBadDeleteFormat{ErrorKind::kClientError,
                                      "bad command line format.  Usage: delete <key> [noreply]"};
constexpr ParseError kBadDataChunk{ErrorKind::kClientError, "bad data chunk"};
constexpr ParseError kBadExptime{ErrorKind::kClientError, "invalid exptime argument"};
constexpr ParseError kBadDelta{ErrorKind::kClientError, "invalid numeric delta argument"};
constexpr ParseError kLineTooLong{ErrorKind::kClientError, "line too long"};
constexpr ParseError kTooLarge{ErrorKind::kServerError, "object too large for cache"};
constexpr ParseError kMetaTooManyFlags{ErrorKind::kClientError, "options flags are too long"};
constexpr ParseError kMetaDuplicateFlag{ErrorKind::kClientError, "duplicate flag"};
constexpr ParseError kMetaInvalidFlag{ErrorKind::kClientError, "invalid flag"};
constexpr ParseError kMetaBadToken{ErrorKind::kClientError, "bad token in command line format"};
// memcached 1.6.18's md and ma answer any flag they cannot read so: a bad
// letter, a duplicate, a bad number.
constexpr ParseError kMetaInvalidOrDuplicate{ErrorKind::kClientError, "invalid or duplicate flag"};
constexpr ParseError kMetaOpaqueTooLong{ErrorKind::kClientError, "opaque token too long"};

// memcached's MFLAG_MAX_OPT_LENGTH (tokens of a meta line, command and key
// included) and MFLAG_MAX_OPAQUE_LENGTH.
constexpr size_t kMaxMetaTokens = 20;
constexpr size_t kMaxOpaqueLength = 32;
// Tokens after the command of a non-get line: more than any grammar takes
// (cas has six), few enough to live on the stack.
constexpr size_t kMaxArgs = 24;

constexpr std::string_view kNoreply = "noreply";

struct CommandName {
  std::string_view name;
  CommandKind kind;
};

constexpr std::array<CommandName, 25> kCommandNames = {{
    {"get", CommandKind::kGet},
    {"gets", CommandKind::kGets},
    {"gat", CommandKind::kGat},
    {"gats", CommandKind::kGats},
    {"set", CommandKind::kSet},
    {"add", CommandKind::kAdd},
    {"replace", CommandKind::kReplace},
    {"append", CommandKind::kAppend},
    {"prepend", CommandKind::kPrepend},
    {"cas", CommandKind::kCas},
    {"delete", CommandKind::kDelete},
    {"incr", CommandKind::kIncr},
    {"decr", CommandKind::kDecr},
    {"touch", CommandKind::kTouch},
    {"flush_all", CommandKind::kFlushAll},
    {"version", CommandKind::kVersion},
    {"verbosity", CommandKind::kVerbosity},
    {"stats", CommandKind::kStats},
    {"quit", CommandKind::kQuit},
    {"mg", CommandKind::kMetaGet},
    {"ms", CommandKind::kMetaSet},
    {"md", CommandKind::kMetaDelete},
    {"ma", CommandKind::kMetaArithmetic},
    {"mn", CommandKind::kMetaNoop},
    {"me", CommandKind::kMetaDebug},
}};

bool find_command(std::string_view name, CommandKind* kind) {
  for (const CommandName& c : kCommandNames) {
    if (c.name == name) {
      *kind = c.kind;
      return true;
    }
  }
  return false;
}

bool is_storage(CommandKind kind) {
  switch (kind) {
    case CommandKind::kSet:
    case CommandKind::kAdd:
    case CommandKind::kReplace:
    case CommandKind::kAppend:
    case CommandKind::kPrepend:
    case CommandKind::kCas: return true;
    default: return false;
  }
}

bool is_meta_with_key(CommandKind kind) {
  switch (kind) {
    case CommandKind::kMetaGet:
    case CommandKind::kMetaDelete:
    case CommandKind::kMetaArithmetic:
    case CommandKind::kMetaDebug: return true;
    default: return false;
  }
}

// Whether a buffer that holds no '\n' yet may grow to max_get_line_length:
// memcached lets only get lines grow past its 2048 bytes.
bool starts_get_line(std::string_view input) {
  for (std::string_view prefix : {"get ", "gets ", "gat ", "gats "}) {
    if (input.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// Splits on runs of spaces, as memcached's tokenizer does. Returns the tokens
// found, or max + 1 when there are more than `max`.
size_t split(std::string_view text, std::string_view* out, size_t max) {
  size_t n = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    if (n == max) return max + 1;
    out[n++] = text.substr(i, end - i);
    i = end;
  }
  return n;
}

// Digits only (and a leading '-' for signed types), in range: memcached's
// mcmc_toktou32/u64/32, which refuse "+1", " 1" and "1x".
template <typename T>
bool parse_number(std::string_view token, T* out) {
  if (token.empty()) return false;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), *out);
  return ec == std::errc() && end == token.data() + token.size();
}

bool valid_key(std::string_view key, size_t max_length) {
  if (key.empty() || key.size() > max_length) return false;
  for (char c : key) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

ParseResult error_result(ParseError error, size_t consumed, bool noreply = false) {
  ParseResult r;
  r.status = ParseStatus::kError;
  r.error = error;
  r.consumed = consumed;
  r.noreply = noreply;
  return r;
}

ParseResult command_result(size_t consumed, bool noreply = false) {
  ParseResult r;
  r.status = ParseStatus::kCommand;
  r.consumed = consumed;
  r.noreply = noreply;
  return r;
}

// Drops a trailing "noreply" from args; true if there was one.
bool take_noreply(std::string_view* args, size_t* n) {
  if (*n > 0 && args[*n - 1] == kNoreply) {
    --*n;
    return true;
  }
  return false;
}

// The flags of a meta line after its key (and ms's datalen), checked the way
// memcached's _meta_flag_preparse checks them. `tokens` counts the whole line.
bool parse_meta_flags(const std::string_view* flags, size_t n, size_t tokens, Command* command, ParseError* error) {
  if (tokens > kMaxMetaTokens) {
    *error = kMetaTooManyFlags;
    return false;
  }
  std::array<bool, 128> seen{};
  for (size_t i = 0; i < n; ++i) {
    const auto letter = static_cast<unsigned char>(flags[i][0]);
    std::string_view argument = flags[i].substr(1);
    if (letter >= 127 || seen[letter]) {
      *error = kMetaDuplicateFlag;
      return false;
    }
    seen[letter] = true;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    switch (letter) {
      case 'b': command->base64_key = true; break;
      case 'N':
      case 'T':
      case 'R':
        if (!parse_number(argument, &i32)) {
          *error = kMetaBadToken;
          return false;
        }
        break;
      case 'C':
      case 'J':
      case 'D':
        if (!parse_number(argument, &u64)) {
          *error = kMetaBadToken;
          return false;
        }
        break;
      case 'F':  // a uint64 that memcached 1.6.18 keeps the low 32 bits of
        if (!parse_number(argument, &u64)) {
          *error = kBadFormat;
          return false;
        }
        break;
      case 'O':
        if (argument.size() > kMaxOpaqueLength) {
          *error = kMetaOpaqueTooLong;
          return false;
        }
        break;
      case 'M':  // ms and ma mode: one letter
      case 'P':
      case 'L':  // proxy hints, carried along
      case 'c':
      case 'f':
      case 'h':
      case 'I':
      case 'k':
      case 'l':
      case 'q':
      case 's':
      case 't':
      case 'u':
      case 'v': break;
      // E (an explicit CAS) and x (md's value removal) came after 1.6.18,
      // whose answer is ours.
      default: *error = kMetaInvalidFlag; return false;
    }
    command->meta_flags.push_back(MetaFlag{static_cast<char>(letter), argument});
  }
  return true;
}

}  // namespace

void Command::reset() {
  kind = CommandKind::kVersion;
  keys.clear();
  client_flags = 0;
  exptime = 0;
  cas_unique = 0;
  delta = 0;
  level = 0;
  value = {};
  stats_args.clear();
  meta_flags.clear();
  base64_key = false;
}

ParseResult Parser::parse(std::string_view input, Command* command) {
  command->reset();
  size_t skipped = 0;
  if (skip_remaining_ > 0) {
    skipped = static_cast<size_t>(std::min<uint64_t>(skip_remaining_, input.size()));
    skip_remaining_ -= skipped;
    if (skip_remaining_ > 0) {
      ParseResult r;
      r.consumed = skipped;
      r.skip_remaining = skip_remaining_;
      return r;
    }
  }
  ParseResult r = parse_line(input.substr(skipped), command);
  r.consumed += skipped;
  return r;
}

ParseResult Parser::parse_line(std::string_view input, Command* command) {
  const size_t newline = input.find('\n');
  const size_t limit = starts_get_line(input) ? limits_.max_get_line_length : limits_.max_line_length;
  // The same answer however the line arrives: a line longer than the limit
  // is refused whether or not its '\n' has come.
  if ((newline == std::string_view::npos && input.size() > limit) ||
      (newline != std::string_view::npos && newline > limit)) {
    ParseResult r = error_result(kLineTooLong, input.size());
    r.close_connection = true;
    return r;
  }
  if (newline == std::string_view::npos) return ParseResult{};

  const size_t line_end = newline + 1;
  std::string_view line = input.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

  const size_t name_end = std::min(line.find(' '), line.size());
  CommandKind kind;
  std::array<std::string_view, kMaxArgs> args;
  if (name_end == 0 || !find_command(line.substr(0, name_end), &kind)) {
    // memcached honours noreply even here.
    size_t n = split(line.substr(name_end), args.data(), kMaxArgs);
    bool noreply = n <= kMaxArgs && take_noreply(args.data(), &n);
    return error_result(kUnknownCommand, line_end, noreply);
  }
  command->kind = kind;
  std::string_view rest = line.substr(name_end);

  switch (kind) {
    case CommandKind::kGet:
    case CommandKind::kGets:
    case CommandKind::kGat:
    case CommandKind::kGats: {
      // Keys go straight into the caller's vector: a get line has no bound
      // on its keys but the line's length.
      const bool touch = kind == CommandKind::kGat || kind == CommandKind::kGats;
      bool exptime_seen = !touch;
      size_t i = 0;
      while (i < rest.size()) {
        if (rest[i] == ' ') {
          ++i;
          continue;
        }
        size_t end = std::min(rest.find(' ', i), rest.size());
        std::string_view token = rest.substr(i, end - i);
        i = end;
        if (!exptime_seen) {
          if (!parse_number(token, &command->exptime)) return error_result(kBadExptime, line_end);
          exptime_seen = true;
          continue;
        }
        if (!valid_key(token, limits_.max_key_length)) return error_result(kBadFormat, line_end);
        command->keys.push_back(token);
      }
      if (command->keys.empty()) return error_result(kBadFormat, line_end);
      return command_result(line_end);
    }
    case CommandKind::kMetaSet: return parse_meta_set(input, line, line_end, command);
    default: break;
  }
  if (is_storage(kind)) return parse_storage(input, line, line_end, command);

  size_t n = split(rest, args.data(), kMaxArgs);
  if (n > kMaxArgs) {
    return error_result(is_meta_with_key(kind) ? kMetaTooManyFlags : kBadFormat, line_end);
  }
  if (is_meta_with_key(kind)) {
    // memcached 1.6.18: mg, md and ma without a key are unknown commands; me's is a format error.
    if (n < 1 && kind != CommandKind::kMetaDebug) return error_result(kUnknownCommand, line_end);
    if (n < 1 || !valid_key(args[0], limits_.max_key_length)) return error_result(kBadFormat, line_end);
    command->keys.push_back(args[0]);
    ParseError error;
    if (!parse_meta_flags(args.data() + 1, n - 1, n + 1, command, &error)) {
      const bool md_or_ma = kind == CommandKind::kMetaDelete || kind == CommandKind::kMetaArithmetic;
      if (md_or_ma && error.message != kMetaOpaqueTooLong.message && error.message != kMetaTooManyFlags.message) {
        error = kMetaInvalidOrDuplicate;
      }
      return error_result(error, line_end);
    }
    return command_result(line_end);
  }

  bool noreply = false;
  switch (kind) {
    case CommandKind::kDelete:
      noreply = take_noreply(args.data(), &n);
      if (n < 1 || !valid_key(args[0], limits_.max_key_length)) return error_result(kBadFormat, line_end, noreply);
      // "delete <key> 0": the hold time memcached took long ago, and old
      // clients still send.
      if (n > 2 || (n == 2 && args[1] != "0")) return error_result(kBadDeleteFormat, line_end, noreply);
      command->keys.push_back(args[0]);
      break;
    case CommandKind::kIncr:
    case CommandKind::kDecr:
      noreply = take_noreply(args.data(), &n);
      if (n != 2 || !valid_key(args[0], limits_.max_key_length)) return error_result(kBadFormat, line_end, noreply);
      if (!parse_number(args[1], &command->delta)) return error_result(kBadDelta, line_end, noreply);
      command->keys.push_back(args[0]);
      break;
    case CommandKind::kTouch:
      noreply = take_noreply(args.data(), &n);
      if (n != 2 || !valid_key(args[0], limits_.max_key_length)) return error_result(kBadFormat, line_end, noreply);
      if (!parse_number(args[1], &command->exptime)) return error_result(kBadExptime, line_end, noreply);
      command->keys.push_back(args[0]);
      break;
    case CommandKind::kFlushAll:
      noreply = take_noreply(args.data(), &n);
      if (n > 1) return error_result(kBadFormat, line_end, noreply);
      if (n == 1 && !parse_number(args[0], &command->exptime)) return error_result(kBadExptime, line_end, noreply);
      break;
    case CommandKind::kVerbosity:
      noreply = take_noreply(args.data(), &n);
      if (n != 1 || !parse_number(args[0], &command->level)) return error_result(kBadFormat, line_end, noreply);
      break;
    case CommandKind::kStats: command->stats_args.assign(args.begin(), args.begin() + n); break;
    case CommandKind::kQuit: {
      // memcached ignores what follows version, quit and mn.
      ParseResult r = command_result(line_end);
      r.close_connection = true;
      return r;
    }
    case CommandKind::kVersion:
    case CommandKind::kMetaNoop: break;
    default: break;
  }
  return command_result(line_end, noreply);
}

// <command> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply]
ParseResult Parser::parse_storage(std::string_view input, std::string_view line, size_t line_end, Command* command) {
  std::array<std::string_view, kMaxArgs + 1> tokens;
  size_t n = split(line, tokens.data(), tokens.size());
  // The length first: with it known, the data block can be skipped whatever
  // else is wrong with the line (memcached swallows it the same way).
  uint64_t length = 0;
  int32_t length_field = 0;
  if (n < 5 || !parse_number(tokens[4], &length_field) || length_field < 0 || length_field > INT_MAX - 2) {
    return error_result(kBadFormat, line_end, n <= tokens.size() && take_noreply(tokens.data(), &n));
  }
  length = static_cast<uint64_t>(length_field);
  const bool noreply = n <= tokens.size() && take_noreply(tokens.data(), &n);
  const size_t expected = command->kind == CommandKind::kCas ? 6 : 5;
  if (n != expected || !valid_key(tokens[1], limits_.max_key_length) ||
      !parse_number(tokens[2], &command->client_flags) || !parse_number(tokens[3], &command->exptime) ||
      (expected == 6 && !parse_number(tokens[5], &command->cas_unique))) {
    return refuse_value(input, line_end, length, kBadFormat, noreply);
  }
  if (length > limits_.max_value_length) return refuse_value(input, line_end, length, kTooLarge, noreply);
  command->keys.push_back(tokens[1]);
  ParseResult r = take_value(input, line_end, length, command);
  r.noreply = noreply;
  return r;
}

// ms <key> <datalen> <flags>*
ParseResult Parser::parse_meta_set(std::string_view input, std::string_view line, size_t line_end, Command* command) {
  std::array<std::string_view, kMaxArgs + 1> tokens;
  size_t n = split(line, tokens.data(), tokens.size());
  int32_t length_field = 0;
  if (n < 2) return error_result(kUnknownCommand, line_end);  // as 1.6.18 answers a bare "ms"
  if (n < 3 || !parse_number(tokens[2], &length_field) || length_field < 0 || length_field > INT_MAX - 2) {
    return error_result(kBadFormat, line_end);
  }
  const auto length = static_cast<uint64_t>(length_field);
  if (n > tokens.size()) return refuse_value(input, line_end, length, kMetaTooManyFlags, false);
  // memcached 1.6.18 reads a bad key's data block as the next command.
  if (!valid_key(tokens[1], limits_.max_key_length)) return error_result(kBadFormat, line_end);
  ParseError error;
  if (!parse_meta_flags(tokens.data() + 3, n - 3, n, command, &error)) {
    return refuse_value(input, line_end, length, error, false);
  }
  if (length > limits_.max_value_length) return refuse_value(input, line_end, length, kTooLarge, false);
  command->keys.push_back(tokens[1]);
  return take_value(input, line_end, length, command);
}

ParseResult Parser::take_value(std::string_view input, size_t line_end, uint64_t length, Command* command) {
  const uint64_t total = line_end + length + 2;
  if (input.size() < total) {
    command->reset();
    return ParseResult{};
  }
  // Only "\r\n" ends a data block, even where the line ended in '\n' alone.
  if (input.substr(line_end + length, 2) != "\r\n") {
    command->reset();
    return error_result(kBadDataChunk, total);
  }
  command->value = input.substr(line_end, length);
  return command_result(total);
}

ParseResult Parser::refuse_value(std::string_view input, size_t line_end, uint64_t length, ParseError error,
                                 bool noreply) {
  const uint64_t total = line_end + length + 2;
  const size_t consumed = static_cast<size_t>(std::min<uint64_t>(total, input.size()));
  skip_remaining_ = total - consumed;
  ParseResult r = error_result(error, consumed, noreply);
  r.skip_remaining = skip_remaining_;
  return r;
}

}  // namespace gphkv::server::memcache
