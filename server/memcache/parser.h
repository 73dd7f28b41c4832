// memcached's text protocol, bytes in: one command, "need more bytes", or an
// error with the reply memcached would send (doc/protocol.txt in memcached's
// repository). No I/O: the connection loop feeds what it has read and drops
// `consumed` bytes. The parsed command views into the fed buffer, so it is
// valid until the loop drops or overwrites those bytes; its vectors belong to
// the caller and keep their capacity between commands (no allocation per
// command once they are warm). docs/memcached.md, "Parser".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gphkv::server::memcache {

struct ParserLimits {
  // memcached's KEY_MAX_LENGTH.
  size_t max_key_length = 250;
  // A line (the bytes before its '\n') longer than this is refused and the
  // connection closed, as memcached does when 2048 bytes hold no '\n'.
  size_t max_line_length = 2048;
  // get/gets/gat/gats lines may be longer (a multi-get names many keys).
  // memcached lets them grow without bound; we stop at a bound so one
  // connection cannot hold unbounded memory: 1 MiB is about 4000 keys of 250
  // bytes.
  size_t max_get_line_length = 1 << 20;
  // A storage command's value longer than this gets "SERVER_ERROR object too
  // large for cache" and its data block is skipped. memcached's -I default.
  uint64_t max_value_length = 1 << 20;
};

enum class CommandKind : uint8_t {
  kGet,
  kGets,
  kGat,
  kGats,
  kSet,
  kAdd,
  kReplace,
  kAppend,
  kPrepend,
  kCas,
  kDelete,
  kIncr,
  kDecr,
  kTouch,
  kFlushAll,
  kVersion,
  kVerbosity,
  kStats,
  kQuit,
  kMetaGet,         // mg
  kMetaSet,         // ms
  kMetaDelete,      // md
  kMetaArithmetic,  // ma
  kMetaNoop,        // mn
  kMetaDebug,       // me
};
inline constexpr size_t kCommandKinds = static_cast<size_t>(CommandKind::kMetaDebug) + 1;
// The command's name as a client sends it ("get", "flush_all", "mg").
const char* command_name(CommandKind kind);

// A meta command's flag token: its letter and what follows it ("T30" is
// {'T', "30"}, "k" is {'k', ""}).
struct MetaFlag {
  char letter = 0;
  std::string_view argument;

  friend bool operator==(const MetaFlag& a, const MetaFlag& b) {
    return a.letter == b.letter && a.argument == b.argument;
  }
};

// One parsed command, meaningful only after ParseStatus::kCommand. Only the
// fields its kind uses are set; the others keep their reset values.
struct Command {
  CommandKind kind = CommandKind::kVersion;
  // The get family's keys in request order; one key for the other commands
  // that take one (meta commands included); none for the rest.
  std::vector<std::string_view> keys;
  uint32_t client_flags = 0;  // storage commands
  // Storage commands, touch, gat/gats, flush_all's delay (0 when absent).
  // Negative is allowed, as in memcached: the item expires at once.
  int32_t exptime = 0;
  uint64_t cas_unique = 0;  // cas
  uint64_t delta = 0;       // incr/decr
  uint32_t level = 0;       // verbosity
  // A storage command's or ms's data block, without its "\r\n".
  std::string_view value;
  std::vector<std::string_view> stats_args;
  std::vector<MetaFlag> meta_flags;
  // The meta key is base64 (flag b); recorded, not decoded.
  bool base64_key = false;

  void reset();
};

enum class ParseStatus : uint8_t {
  kCommand,   // a whole command (and its data block) is in `Command`
  kNeedMore,  // call again with the same bytes and more
  kError,     // send `error` (unless noreply), drop `consumed`
};

// The class of an error reply: "ERROR", "CLIENT_ERROR <message>",
// "SERVER_ERROR <message>".
enum class ErrorKind : uint8_t { kError, kClientError, kServerError };

struct ParseError {
  ErrorKind kind = ErrorKind::kError;
  // memcached's text after the class word ("bad command line format"); empty
  // for kError. Points to static storage.
  std::string_view message;
};

struct ParseResult {
  ParseStatus status = ParseStatus::kNeedMore;
  // Bytes of the fed input to drop: the command line and its data block, the
  // refused line, or skipped bytes of a refused data block. On kNeedMore it
  // is nonzero only while a refused data block is being skipped.
  size_t consumed = 0;
  // The line ended in "noreply": memcached sends nothing back, neither the
  // command's reply nor an error (never set for the get family, whose
  // "noreply" is a key, nor for meta commands, which use flag q).
  bool noreply = false;
  // memcached closes the connection here: after quit, or a line too long.
  bool close_connection = false;
  // Bytes of a refused data block that have not arrived yet; the parser
  // drops them from the inputs that follow before it parses again.
  uint64_t skip_remaining = 0;
  ParseError error;
};

// One per connection: it carries the skip of a refused data block from one
// input to the next.
class Parser {
 public:
  explicit Parser(ParserLimits limits = {}) : limits_(limits) {}

  // Parses the first command of `input`, the bytes the connection holds that
  // no earlier call consumed. `command` is reset first.
  ParseResult parse(std::string_view input, Command* command);

  uint64_t skip_remaining() const { return skip_remaining_; }
  const ParserLimits& limits() const { return limits_; }

 private:
  ParseResult parse_line(std::string_view input, Command* command);
  ParseResult parse_storage(std::string_view input, std::string_view line, size_t line_end, Command* command);
  ParseResult parse_meta_set(std::string_view input, std::string_view line, size_t line_end, Command* command);
  // The data block of a storage command whose line ends at `line_end`.
  ParseResult take_value(std::string_view input, size_t line_end, uint64_t length, Command* command);
  // A refused storage line whose data block is `length` bytes: the line and
  // the block are dropped, the part not yet arrived through skip_remaining.
  ParseResult refuse_value(std::string_view input, size_t line_end, uint64_t length, ParseError error, bool noreply);

  ParserLimits limits_;
  uint64_t skip_remaining_ = 0;
};

}  // namespace gphkv::server::memcache
