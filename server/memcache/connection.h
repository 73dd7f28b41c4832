// One memcached client connection on the listener's event loop: reads bytes,
// feeds the parser, hands each command to the intake (through the adapter,
// intake_commands.h) or answers it itself, and writes the replies in the
// order the commands came, whatever order the store answers them in.
//
// Back-pressure: while `max_pending_commands` commands wait for their reply
// or `max_output_bytes` of replies wait for the socket, the connection stops
// reading, so a client that pipelines without reading its answers holds a
// bounded amount of memory and the kernel's socket buffers push back on it;
// the other connections on the loop are not held up.
//
// Everything here runs on the loop thread, except a call's `done`, which
// writes its reply into its slot on whatever thread answered it and posts
// the slot back to the loop (ConnectionHost::post_answer).
//
// No heap allocation per command once a connection is warm: a command's
// slot (its reply buffer, the copies of its keys and value, the response the
// store fills) comes from the connection's free list and goes back to it
// with its buffers' capacity (slots whose buffers grew large are trimmed),
// and the call's `done` captures one pointer, which std::function keeps
// inline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/memcache/call_sink.h"
#include "server/memcache/get_pack.h"
#include "server/memcache/intake_commands.h"
#include "server/memcache/parser.h"

struct bufferevent;

namespace gphkv::server::memcache {

struct ConnectionLimits {
  ParserLimits parser;
  // Commands parsed and not yet answered, per connection (a pipelining
  // client's depth); past it the connection stops reading.
  size_t max_pending_commands = 1024;
  // Reply bytes waiting for the socket, per connection; past it the
  // connection stops reading until half of them are written.
  size_t max_output_bytes = 4 << 20;
  // A connection with nothing to answer that sends nothing for this long, or
  // whose replies make no progress for this long, is closed (0: never).
  std::chrono::seconds idle_timeout{0};
};

class Connection;

// What a connection needs of its listener.
class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;
  // Where the connection's gets, sets and deletes go.
  virtual const CallSink& sink() const = 0;
  virtual const ConnectionLimits& limits() const = 0;
  virtual std::string_view version() const = 0;
  // The store's clock, unix seconds: what a meta reply's TTL counts from.
  virtual uint32_t unix_now() const = 0;
  // "STAT ..." lines of the stats command (without END).
  virtual void append_stats(std::string* out) const = 0;
  // Counts a parsed command, whatever its route and answer (the metrics'
  // commands by kind).
  virtual void count_parsed(CommandKind kind) = 0;
  // Counts a command of `keys` keys that goes to the store, for stats (get
  // keys, sets, deletes, as memcached counts them).
  virtual void count_command(CommandKind kind, size_t keys) = 0;
  // Loop thread: a call went to the sink; its answer comes by post_answer.
  virtual void call_submitted() = 0;
  // The most keys a get may have to join the loop's pack of gets
  // (get_pack.h); 0: every get is a call of its own.
  virtual size_t pack_max_keys() const = 0;
  // Loop thread: `get` (a plain get of at most pack_max_keys() keys) joins
  // the loop's pack, which is queued at the latest when the loop's round of
  // events ends; its reply comes by post_answer to answer_to's slot. Returns
  // the pack's generation, for flush_gets.
  virtual uint64_t pack_get(const Call& get, PackedGet answer_to) = 0;
  // Loop thread: queues the loop's pack now if it is still the one of that
  // generation (a connection with gets in it is about to queue another
  // call, which must follow them).
  virtual void flush_gets(uint64_t generation) = 0;
  // Any thread: runs connection->answered(slot) on the loop thread (at once
  // when called there).
  virtual void post_answer(std::shared_ptr<Connection> connection, void* slot) = 0;
  // Loop thread: the connection closed its socket; the host drops it.
  virtual void closed(Connection* connection) = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Takes the bufferevent (its socket closes with it).
  Connection(ConnectionHost* host, bufferevent* bev);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sets the callbacks and starts reading.
  void start();
  // Shutdown: read no more; close once every parsed command is answered and
  // its reply written.
  void drain();
  // Closes the socket now; answers still to come are dropped.
  void close();
  // A call's reply is in its slot (from ConnectionHost::post_answer).
  void answered(void* slot);

 private:
  // The connection's session (Call::session): its commands keep their order.
  const uint64_t session_ = new_session_id();
  // The generation of the loop's pack that this connection's latest packed
  // get joined (0: none): its other calls are queued after that pack.
  uint64_t packed_in_ = 0;
  struct Slot {
    std::string reply;
    bool ready = false;
    bool close_after = false;  // quit, or an error memcached closes on
    bool in_store = false;     // `command` is a call the store has not answered yet
    IntakeCommand command;
    Connection* owner = nullptr;
    // Keeps the connection alive while the store holds the call; handed to
    // post_answer with the answer.
    std::shared_ptr<Connection> keep;
  };

  // The slots of the commands parsed and not yet written, oldest first: a
  // ring of pointers that grows by doubling and never shrinks (its size is
  // bounded by max_pending_commands).
  class SlotQueue {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    Slot& front() const { return *ring_[head_]; }
    Slot& at(size_t i) const { return *ring_[(head_ + i) & (ring_.size() - 1)]; }
    void push_back(Slot* s);
    Slot* pop_front();

   private:
    std::vector<Slot*> ring_;
    size_t head_ = 0;
    size_t size_ = 0;
  };

  static void on_read(bufferevent* bev, void* self);
  static void on_write(bufferevent* bev, void* self);
  static void on_event(bufferevent* bev, short what, void* self);

  // Parses what it may, writes the replies that are ready, and sets reading
  // on or off; every event ends here.
  void pump();
  // Parses commands until the input runs out, a limit is reached or reading
  // stopped. False when it stopped at a limit.
  bool parse_commands();
  void handle(const ParseResult& result);
  void submit(bool noreply);
  Slot& new_slot();
  // Pops the head slot into the free list.
  void retire_front();
  // Writes the ready replies at the head of the queue, in order.
  void flush();
  bool over_limits() const;
  size_t output_bytes() const;
  // Stops reading; closes once the replies queued so far are written.
  void close_when_written();

  ConnectionHost* host_;
  bufferevent* bev_;
  Parser parser_;
  Command command_;
  std::string input_;  // bytes read and not yet consumed by the parser, from input_pos_
  size_t input_pos_ = 0;
  SlotQueue slots_;                          // one per parsed command, oldest first
  std::vector<std::unique_ptr<Slot>> free_;  // slots to reuse
  bool reading_stopped_ = false;             // quit, a fatal error, end of input, or shutdown
  bool closing_ = false;                     // close once the output is written
  bool closed_ = false;
  bool pumping_ = false;
};

}  // namespace gphkv::server::memcache
