// A bidirectional stream of raw messages on gRPC's callback API: reads one
// message at a time and hands it to the subclass, which queues its
// operations and answers them (send()) from any thread; answers are written
// one at a time, in the order they are sent. At most kMaxInFlight operations
// per stream are outstanding: past that the stream stops reading, so a fast
// sender is slowed by flow control instead of growing server memory. The
// stream ends once the client half-closed and every operation was answered.
// Shared by the Pipeline stream (an op per message) and the Batches stream
// (many ops per message).
#pragma once

#include <chrono>
#include <deque>
#include <mutex>

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/call.h"

namespace gphkv::server::grpcfe {

class MessageStream : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  static constexpr int kMaxInFlight = 1024;

  void OnReadDone(bool ok) final;
  void OnWriteDone(bool ok) final;
  void OnDone() final;

 protected:
  explicit MessageStream(grpc::CallbackServerContext* ctx);
  // Starts reading; the subclass calls it last in its constructor (a read
  // may complete at once, on another thread).
  void start();

  // One message arrived. Returns the operations it left outstanding (each
  // later answered through done()); 0 when it was answered or refused at once.
  virtual int on_message(grpc::ByteBuffer& bytes) = 0;
  // The stream ended (Finish called): the subclass records what it wants.
  virtual void on_finish(uint64_t operations, double seconds) = 0;
  // An answer was written: `seconds` from its queueing (done() or send())
  // until gRPC was done with it, the wait behind the stream's earlier
  // answers included. Runs under the stream's lock: keep it short.
  virtual void on_written(double /*seconds*/) {}

  // `operations` of the stream were answered; `answer` (unless null) is
  // written. Any thread. The caller must not touch the stream afterwards
  // unless it still has operations outstanding.
  void done(int operations, grpc::ByteBuffer* answer);
  // Queues `answer` for writing without touching the outstanding count
  // (answers to messages refused before any of their operations was queued).
  void send(grpc::ByteBuffer answer);
  // Ends the stream with `status` (say, a message that does not parse) once
  // what is outstanding has been answered; nothing more is read.
  void fail(grpc::Status status);

  grpc::CallbackServerContext* context() const { return ctx_; }
  // The stream's session: its operations keep the order they were sent in.
  uint64_t session() const { return session_; }

 private:
  const uint64_t session_ = new_session_id();
  void read_next();
  // Under mu_: true (once) when the stream can be finished now.
  bool ready_to_finish();
  // Outside mu_, as the caller's last touch of `this`: OnDone may delete it.
  void finish_stream();
  // Under mu_: writes the front answer unless a write is in progress.
  void write_next();

  grpc::CallbackServerContext* ctx_;
  const std::chrono::steady_clock::time_point started_;
  grpc::ByteBuffer reading_;

  std::mutex mu_;
  struct Write {
    grpc::ByteBuffer bytes;
    std::chrono::steady_clock::time_point queued;
  };
  std::deque<Write> writes_;  // front is being written when writing_
  bool writing_ = false;
  bool write_failed_ = false;  // the client is gone: answers are dropped
  bool reads_done_ = false;
  bool read_paused_ = false;
  bool finished_ = false;
  int in_flight_ = 0;  // operations queued, not yet answered
  uint64_t operations_ = 0;
  grpc::Status final_status_;
};

}  // namespace gphkv::server::grpcfe
