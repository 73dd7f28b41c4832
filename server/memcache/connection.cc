#include "server/memcache/connection.h"

#include <sys/socket.h>

#include <algorithm>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "server/memcache/replies.h"

namespace gphkv::server::memcache {

Connection::Connection(ConnectionHost* host, bufferevent* bev)
    : host_(host), bev_(bev), parser_(host->limits().parser) {}

namespace {

// A free slot keeps its buffers' capacity for the next command, unless they
// grew past this (a big value or reply): those are given back.
constexpr size_t kKeptBufferBytes = 16 << 10;
// Free slots kept per connection; a pipelining burst deeper than this
// allocates the rest once more next time.
constexpr size_t kKeptFreeSlots = 64;

}  // namespace

void Connection::SlotQueue::push_back(Slot* s) {
  if (size_ == ring_.size()) {
    std::vector<Slot*> bigger(std::max<size_t>(16, ring_.size() * 2));
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }
  ring_[(head_ + size_) & (ring_.size() - 1)] = s;
  ++size_;
}

Connection::Slot* Connection::SlotQueue::pop_front() {
  Slot* s = ring_[head_];
  head_ = (head_ + 1) & (ring_.size() - 1);
  --size_;
  return s;
}

Connection::~Connection() {
  // close() runs on the loop thread first; a Connection kept alive only by
  // a late answer may end on another thread, and touches no libevent then.
  if (bev_ != nullptr) bufferevent_free(bev_);
  while (!slots_.empty()) delete slots_.pop_front();
}

void Connection::start() {
  bufferevent_setcb(bev_, &Connection::on_read, &Connection::on_write, &Connection::on_event, this);
  // on_write runs once the output falls to half the bound: reading resumes.
  bufferevent_setwatermark(bev_, EV_WRITE, host_->limits().max_output_bytes / 2, 0);
  const std::chrono::seconds idle = host_->limits().idle_timeout;
  if (idle.count() > 0) {
    const timeval tv{static_cast<time_t>(idle.count()), 0};
    bufferevent_set_timeouts(bev_, &tv, &tv);
  }
  bufferevent_enable(bev_, EV_READ | EV_WRITE);
}

void Connection::on_read(bufferevent* bev, void* self) {
  auto* c = static_cast<Connection*>(self);
  evbuffer* in = bufferevent_get_input(bev);
  const size_t n = evbuffer_get_length(in);
  if (c->input_pos_ > 0) {
    c->input_.erase(0, c->input_pos_);
    c->input_pos_ = 0;
  }
  const size_t old = c->input_.size();
  c->input_.resize(old + n);
  evbuffer_remove(in, c->input_.data() + old, n);
  c->pump();
}

void Connection::on_write(bufferevent*, void* self) { static_cast<Connection*>(self)->pump(); }

void Connection::on_event(bufferevent*, short what, void* self) {
  auto* c = static_cast<Connection*>(self);
  const std::shared_ptr<Connection> keep = c->shared_from_this();
  if (what & BEV_EVENT_TIMEOUT) {
    // A reader with nothing to answer is idle; a writer whose client reads
    // nothing is stalled. Either way memcached's idle_timeout closes it.
    if ((what & BEV_EVENT_WRITING) || c->slots_.empty()) {
      c->close();
    } else {
      // Waiting on the store, not the client: keep the connection (libevent
      // disabled reading when the timeout fired).
      c->pump();
    }
    return;
  }
  if (what & BEV_EVENT_EOF) {
    // The client finished sending: answer what it sent, then close (its
    // half-closed socket may still read).
    c->reading_stopped_ = true;
    if (c->slots_.empty()) {
      c->close_when_written();
    } else {
      c->pump();
    }
    return;
  }
  if (what & BEV_EVENT_ERROR) c->close();
}

void Connection::drain() {
  reading_stopped_ = true;
  if (slots_.empty()) {
    close_when_written();
  } else {
    pump();
  }
}

void Connection::close() {
  if (closed_) return;
  // The host drops its reference below; the object lives to this call's end.
  const std::shared_ptr<Connection> keep = shared_from_this();
  closed_ = true;
  // libevent closes the socket in a finalizer that its loop runs later (or
  // never, when the loop has stopped): end the TCP connection now, so the
  // client sees the close at once.
  ::shutdown(bufferevent_getfd(bev_), SHUT_RDWR);
  bufferevent_free(bev_);
  bev_ = nullptr;
  // Slots stay: calls still in the store write into them until answered.
  host_->closed(this);
}

void Connection::answered(void* slot) {
  auto* s = static_cast<Slot*>(slot);
  s->ready = true;
  s->in_store = false;
  if (closed_) {
    // Nobody to write to: drop the answered slots at the head.
    while (!slots_.empty() && slots_.front().ready) retire_front();
    return;
  }
  pump();
}

void Connection::pump() {
  if (pumping_ || closed_) return;
  const std::shared_ptr<Connection> keep = shared_from_this();
  pumping_ = true;
  for (;;) {
    const bool at_limit = !parse_commands();
    flush();
    if (closed_ || closing_) break;
    // Replies written may have taken the connection back under its limits
    // while commands wait in the input: go on with them.
    if (!at_limit || over_limits()) break;
  }
  pumping_ = false;
  if (closed_ || closing_) return;
  if (reading_stopped_ && slots_.empty()) {
    close_when_written();
    return;
  }
  if (reading_stopped_ || over_limits()) {
    bufferevent_disable(bev_, EV_READ);
  } else {
    bufferevent_enable(bev_, EV_READ);
  }
}

bool Connection::parse_commands() {
  while (!reading_stopped_) {
    if (over_limits()) return false;
    const std::string_view input(input_.data() + input_pos_, input_.size() - input_pos_);
    const ParseResult r = parser_.parse(input, &command_);
    input_pos_ += r.consumed;
    if (r.status == ParseStatus::kNeedMore) break;
    if (r.status == ParseStatus::kError) {
      Slot& s = new_slot();
      if (!r.noreply) append_error(&s.reply, r.error);
      s.ready = true;
      if (r.close_connection) {
        s.close_after = true;
        reading_stopped_ = true;
      }
      continue;
    }
    handle(r);
  }
  if (input_pos_ == input_.size()) {
    input_.clear();
    input_pos_ = 0;
  }
  return true;
}

void Connection::handle(const ParseResult& result) {
  host_->count_parsed(command_.kind);
  const Routing routing = route_command(command_);
  if (routing.route == CommandRoute::kIntake) {
    submit(result.noreply);
    return;
  }
  Slot& s = new_slot();
  s.ready = true;
  switch (routing.route) {
    case CommandRoute::kLocal:
      if (!result.noreply) append_local_reply(command_, host_->version(), &s.reply);
      break;
    case CommandRoute::kStats:
      host_->append_stats(&s.reply);
      append_reply(&s.reply, Reply::kEnd);
      break;
    case CommandRoute::kQuit:
      s.close_after = true;
      reading_stopped_ = true;
      break;
    case CommandRoute::kRefused:
      if (!result.noreply) append_error(&s.reply, routing.refusal);
      break;
    case CommandRoute::kIntake: break;
  }
}

void Connection::submit(bool noreply) {
  Slot& s = new_slot();
  Slot* slot = &s;
  s.in_store = true;
  s.keep = shared_from_this();
  // The reply is written where the store answered (a completion thread), so
  // the loop only copies it out. One pointer captured: no allocation.
  Call call = s.command.make_call(command_, noreply, host_->unix_now(), [slot](absl::Status status) {
    slot->command.append_reply(status, &slot->reply);
    slot->owner->host_->post_answer(std::move(slot->keep), slot);
  });
  call.session = session_;
  host_->count_command(command_.kind, command_.keys.size());
  const size_t pack_max_keys = host_->pack_max_keys();
  if (command_.kind == CommandKind::kGet && command_.keys.size() <= pack_max_keys) {
    packed_in_ = host_->pack_get(call, PackedGet{std::move(s.keep), slot, &s.reply});
    return;
  }
  // Any other call follows this connection's gets still in the loop's pack.
  if (packed_in_ != 0) host_->flush_gets(packed_in_);
  if (absl::Status st = host_->sink().submit(std::move(call)); !st.ok()) {
    // Refused whole by the intake (a limit, a full queue): nothing changed
    // and `done` will not run.
    s.command.append_reply(st, &s.reply);
    s.keep.reset();
    s.in_store = false;
    s.ready = true;
    return;
  }
  host_->call_submitted();
}

Connection::Slot& Connection::new_slot() {
  Slot* s;
  if (free_.empty()) {
    s = new Slot;
    s->owner = this;
  } else {
    s = free_.back().release();
    free_.pop_back();
  }
  slots_.push_back(s);
  return *s;
}

void Connection::retire_front() {
  std::unique_ptr<Slot> s(slots_.pop_front());
  if (free_.size() >= kKeptFreeSlots) return;
  s->ready = false;
  s->close_after = false;
  if (s->reply.capacity() > kKeptBufferBytes) {
    std::string().swap(s->reply);
  } else {
    s->reply.clear();
  }
  s->command.recycle(kKeptBufferBytes);
  free_.push_back(std::move(s));
}

void Connection::flush() {
  while (!closed_ && !closing_ && !slots_.empty() && slots_.front().ready) {
    Slot& s = slots_.front();
    if (!s.reply.empty()) bufferevent_write(bev_, s.reply.data(), s.reply.size());
    const bool close_after = s.close_after;
    retire_front();
    if (close_after) close_when_written();
  }
}

bool Connection::over_limits() const {
  const ConnectionLimits& l = host_->limits();
  return slots_.size() >= l.max_pending_commands || output_bytes() >= l.max_output_bytes;
}

size_t Connection::output_bytes() const {
  return bev_ == nullptr ? 0 : evbuffer_get_length(bufferevent_get_output(bev_));
}

void Connection::close_when_written() {
  if (closed_) return;
  closing_ = true;
  reading_stopped_ = true;
  bufferevent_disable(bev_, EV_READ);
  if (output_bytes() == 0) {
    close();
    return;
  }
  // on_write fires once the output is empty; it finds closing_ set.
  bufferevent_setwatermark(bev_, EV_WRITE, 0, 0);
  bufferevent_setcb(
      bev_, nullptr,
      [](bufferevent* bev, void* self) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) static_cast<Connection*>(self)->close();
      },
      &Connection::on_event, this);
}

}  // namespace gphkv::server::memcache
