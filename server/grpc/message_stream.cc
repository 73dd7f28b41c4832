#include "server/grpc/message_stream.h"

namespace gphkv::server::grpcfe {

MessageStream::MessageStream(grpc::CallbackServerContext* ctx)
    : ctx_(ctx), started_(std::chrono::steady_clock::now()) {}

void MessageStream::start() { read_next(); }

void MessageStream::read_next() {
  reading_.Clear();
  StartRead(&reading_);
}

void MessageStream::OnReadDone(bool ok) {
  if (!ok) {
    bool finish;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      finish = ready_to_finish();
    }
    if (finish) finish_stream();
    return;
  }
  // Counted before the operations are queued (they may be answered at once),
  // and held until the decision to read on is taken, so the stream cannot
  // finish under this thread.
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++in_flight_;
  }
  const int queued = on_message(reading_);
  bool finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ += queued - 1;
    if (reads_done_) {
      // fail() stopped reading.
    } else if (in_flight_ >= kMaxInFlight) {
      read_paused_ = true;  // done() resumes reading
    } else {
      read_next();
    }
    finish = ready_to_finish();
  }
  if (finish) finish_stream();
}

void MessageStream::done(int operations, grpc::ByteBuffer* answer) {
  bool finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ -= operations;
    operations_ += static_cast<uint64_t>(operations);
    if (answer != nullptr && !write_failed_) {
      writes_.push_back(Write{std::move(*answer), std::chrono::steady_clock::now()});
      write_next();
    }
    if (read_paused_ && !reads_done_ && in_flight_ < kMaxInFlight) {
      read_paused_ = false;
      read_next();
    }
    finish = ready_to_finish();
  }
  if (finish) finish_stream();  // the last touch of `this`: OnDone may delete it
}

void MessageStream::send(grpc::ByteBuffer answer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (write_failed_) return;
  writes_.push_back(Write{std::move(answer), std::chrono::steady_clock::now()});
  write_next();
}

void MessageStream::fail(grpc::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (final_status_.ok()) final_status_ = std::move(status);
  // Reading stops; the stream ends once what is outstanding was answered.
  // The caller is inside on_message, which holds one operation, so the
  // stream cannot finish here.
  reads_done_ = true;
}

void MessageStream::write_next() {
  if (writing_ || writes_.empty()) return;
  writing_ = true;
  StartWrite(&writes_.front().bytes);
}

void MessageStream::OnWriteDone(bool ok) {
  bool finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ok) {
      on_written(std::chrono::duration<double>(std::chrono::steady_clock::now() - writes_.front().queued).count());
    }
    writes_.pop_front();
    writing_ = false;
    if (!ok) {
      write_failed_ = true;  // the stream is broken; drop what is left to write
      writes_.clear();
    }
    write_next();
    finish = ready_to_finish();
  }
  if (finish) finish_stream();
}

bool MessageStream::ready_to_finish() {
  if (finished_ || !reads_done_ || in_flight_ > 0 || writing_) return false;
  finished_ = true;
  return true;
}

void MessageStream::finish_stream() {
  on_finish(operations_, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  Finish(final_status_);
}

void MessageStream::OnDone() { delete this; }

}  // namespace gphkv::server::grpcfe
