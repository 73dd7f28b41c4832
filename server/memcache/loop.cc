#include "server/memcache/loop.h"

#include <chrono>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "absl/strings/str_cat.h"
#include "server/memcache/listener.h"
#include "server/thread_name.h"

namespace gphkv::server::memcache {
namespace {

// The loop whose thread this is (null on every other thread): an answer
// posted from its own loop (a sink that answers inline) is handled at once.
thread_local const Loop* t_current_loop = nullptr;

}  // namespace

Loop::Loop(Listener* listener, size_t index) : listener_(listener), index_(index) {}

Loop::~Loop() {
  if (inbox_event_ != nullptr) event_free(inbox_event_);
  if (stop_event_ != nullptr) event_free(stop_event_);
  if (base_ != nullptr) event_base_free(base_);
}

absl::Status Loop::init() {
  base_ = event_base_new();
  if (base_ == nullptr) return absl::InternalError("libevent: event_base_new failed");
  inbox_event_ = event_new(base_, -1, 0, &Loop::on_inbox, this);
  stop_event_ = event_new(base_, -1, 0, &Loop::on_stop, this);
  if (inbox_event_ == nullptr || stop_event_ == nullptr) return absl::InternalError("libevent: event_new failed");
  return absl::OkStatus();
}

void Loop::start() {
  thread_ = std::thread([this] {
    name_this_thread(absl::StrCat("gphkv-memc-", index_));
    t_current_loop = this;
    run();
    t_current_loop = nullptr;
  });
}

void Loop::run() {
  const std::chrono::microseconds spin = listener_->options().answer_spin;
  // A round of events at a time (EVLOOP_ONCE sleeps until some callback
  // ran), until break_and_join sets quit_ (and activates the inbox event,
  // which ends the round: a loopbreak alone is lost when it comes before
  // the thread's first round, and the loop then slept for good). With a
  // spin, while this loop's calls are in the store, a spin for their
  // answers follows each round; answers taken by the spin are written, and
  // the sockets looked at, by a round that does not sleep.
  bool took = false;
  while (!quit_.load(std::memory_order_acquire)) {
    if (event_base_loop(base_, took ? EVLOOP_NONBLOCK : EVLOOP_ONCE | EVLOOP_NO_EXIT_ON_EMPTY) < 0) return;
    // The round's gets, packed (get_pack.h).
    flush_all_gets();
    took = spin.count() > 0 && awaiting_ > 0 && spin_for_answers(spin);
  }
}

bool Loop::spin_for_answers(std::chrono::microseconds spin) {
  // Sockets are looked at between the spin's checks (a round that does not
  // sleep: one epoll_wait with no timeout), so a command arriving while the
  // loop waits for answers is read and submitted at once, as when it sleeps.
  constexpr auto kSocketsEvery = std::chrono::microseconds(10);
  // Answers taken while spinning count as spun, whether the spin's check or
  // one of its socket rounds (which runs the inbox event if it is active)
  // takes them: on_inbox counts them before it writes their replies, which
  // a socket round may send before it returns.
  spinning_ = true;
  struct EndSpin {
    bool& spinning;
    ~EndSpin() { spinning = false; }
  } end_spin{spinning_};
  auto now = std::chrono::steady_clock::now();
  const auto until = now + spin;
  auto next_look = now + kSocketsEvery;
  while (!inbox_posted_.load(std::memory_order_acquire)) {
    if (quit_.load(std::memory_order_relaxed) || now >= until) return false;
    if (now >= next_look) {
      if (event_base_loop(base_, EVLOOP_NONBLOCK) < 0) return false;
      flush_all_gets();
      if (awaiting_ <= 0) return false;  // that round took the last answers
      next_look = std::chrono::steady_clock::now() + kSocketsEvery;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    now = std::chrono::steady_clock::now();
  }
  // Taken here; the event_active that posted them finds the inbox empty.
  on_inbox(-1, 0, this);
  return true;
}

void Loop::adopt(int fd) {
  if (t_current_loop == this) {
    open_connection(fd);
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    sockets_.push_back(fd);
    wake = !inbox_pending_;
    inbox_pending_ = true;
  }
  if (wake) event_active(inbox_event_, 0, 0);
}

void Loop::open_connection(int fd) {
  if (stopping_) {
    ::close(fd);
    listener_->connection_gone();
    return;
  }
  // Replies are whole when written: send them at once.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  bufferevent* bev = bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    ::close(fd);
    listener_->connection_gone();
    return;
  }
  auto connection = std::make_shared<Connection>(this, bev);
  connections_.emplace(connection.get(), connection);
  connection->start();
}

void Loop::post_answer(std::shared_ptr<Connection> connection, void* slot) {
  if (t_current_loop == this) {
    // Answered inline while the loop submitted it: the connection is
    // pumping, and writes the reply when the submit returns.
    --awaiting_;
    connection->answered(slot);
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    answers_.push_back(Answer{std::move(connection), slot});
    inbox_posted_.store(true, std::memory_order_release);
    wake = !inbox_pending_;
    inbox_pending_ = true;
  }
  // One wake-up per batch of answers: the loop takes them all.
  if (wake) event_active(inbox_event_, 0, 0);
}

size_t Loop::pack_max_keys() const { return listener_->options().pack_max_keys; }

uint64_t Loop::pack_get(const Call& get, PackedGet answer_to) {
  if (pack_ != nullptr && pack_->num_keys() + get.num_keys() > pack_max_keys()) submit_pack();
  if (pack_ == nullptr) {
    if (free_packs_.empty()) {
      pack_ = std::make_unique<GetPack>();
    } else {
      pack_ = std::move(free_packs_.back());
      free_packs_.pop_back();
    }
  }
  pack_->add(get, std::move(answer_to));
  return pack_generation_;
}

void Loop::flush_gets(uint64_t generation) {
  if (generation == pack_generation_) submit_pack();
}

void Loop::flush_all_gets() {
  while (pack_ != nullptr && !pack_->empty()) submit_pack();
}

void Loop::submit_pack() {
  if (pack_ == nullptr || pack_->empty()) return;
  // Gets parsed from here on (answers given inline may pump their
  // connections) start the next pack.
  GetPack* pack = pack_.release();
  ++pack_generation_;
  const auto gets = static_cast<int64_t>(pack->size());
  awaiting_ += gets;  // before the submit: a sink may answer inline
  Call call = pack->make_call([this, pack](absl::Status status) {
    pack->write_replies(status);
    post_pack(pack);
  });
  if (absl::Status st = sink().submit(std::move(call)); !st.ok()) {
    // Refused whole (a full queue): nothing changed, `done` will not run.
    awaiting_ -= gets;
    pack->write_replies(st);
    answer_pack(pack);
    return;
  }
  bump(store_calls_, 1);
  bump(packed_gets_, static_cast<uint64_t>(gets));
}

void Loop::post_pack(GetPack* pack) {
  if (t_current_loop == this) {
    awaiting_ -= static_cast<int64_t>(pack->size());
    answer_pack(pack);
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    packs_.push_back(pack);
    inbox_posted_.store(true, std::memory_order_release);
    wake = !inbox_pending_;
    inbox_pending_ = true;
  }
  if (wake) event_active(inbox_event_, 0, 0);
}

void Loop::answer_pack(GetPack* pack) {
  std::unique_ptr<GetPack> owned(pack);
  for (PackedGet& g : pack->gets()) g.connection->answered(g.slot);
  // Big answers' buffers go back; a warm pack keeps the rest.
  constexpr size_t kKeptPackBytes = 1 << 20;
  owned->clear(kKeptPackBytes);
  if (free_packs_.size() < 4) free_packs_.push_back(std::move(owned));
}

void Loop::on_inbox(int, short, void* self) {
  auto* l = static_cast<Loop*>(self);
  {
    std::lock_guard<std::mutex> lock(l->inbox_mu_);
    l->answers_taken_.swap(l->answers_);
    l->packs_taken_.swap(l->packs_);
    l->sockets_taken_.swap(l->sockets_);
    l->inbox_pending_ = false;
    l->inbox_posted_.store(false, std::memory_order_relaxed);
  }
  size_t taken = l->answers_taken_.size();
  for (const GetPack* p : l->packs_taken_) taken += p->size();
  l->awaiting_ -= static_cast<int64_t>(taken);
  if (l->spinning_)
    l->spun_answers_.store(l->spun_answers_.load(std::memory_order_relaxed) + taken, std::memory_order_relaxed);
  for (int fd : l->sockets_taken_) l->open_connection(fd);
  l->sockets_taken_.clear();
  for (Answer& a : l->answers_taken_) a.connection->answered(a.slot);
  l->answers_taken_.clear();
  for (GetPack* p : l->packs_taken_) l->answer_pack(p);
  l->packs_taken_.clear();
}

void Loop::closed(Connection* connection) {
  // The last reference may be an answer in flight; the connection ends with it.
  connections_.erase(connection);
  listener_->connection_gone();
}

void Loop::begin_stop() { event_active(stop_event_, 0, 0); }

void Loop::on_stop(int, short, void* self) {
  auto* l = static_cast<Loop*>(self);
  l->stopping_ = true;
  // drain() may close a connection, which erases it from the map.
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [ptr, c] : l->connections_) open.push_back(c);
  for (auto& c : open) c->drain();
}

void Loop::break_and_join() {
  // A spinning loop sees quit_; one about to begin a round, or whose thread
  // has not begun its first, finds the inbox event active, so the round
  // returns instead of sleeping (run()).
  quit_.store(true, std::memory_order_release);
  if (inbox_event_ != nullptr) event_active(inbox_event_, 0, 0);
  if (base_ != nullptr) event_base_loopbreak(base_);
  if (thread_.joinable()) thread_.join();
}

void Loop::close_all() {
  stopping_ = true;
  // Sockets the acceptor handed over that the loop never took.
  std::vector<int> sockets;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    sockets.swap(sockets_);
  }
  for (int fd : sockets) {
    ::close(fd);
    listener_->connection_gone();
  }
  // What is still open (a client that did not read its replies within the
  // grace) closes here, on this thread. libevent closes a freed
  // bufferevent's socket in a finalizer the loop runs (a chain of
  // callbacks, each activated by the one before): run the loop a few times
  // more; event_base_free runs what is left.
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [ptr, c] : connections_) open.push_back(c);
  for (auto& c : open) c->close();
  for (int i = 0; i < 4; ++i) event_base_loop(base_, EVLOOP_NONBLOCK);
}

void Loop::drop_inbox() {
  std::lock_guard<std::mutex> lock(inbox_mu_);
  answers_.clear();
  answers_taken_.clear();
  for (GetPack* p : packs_) delete p;
  packs_.clear();
}

const CallSink& Loop::sink() const { return listener_->sink(); }
const ConnectionLimits& Loop::limits() const { return listener_->options().connection; }
std::string_view Loop::version() const { return listener_->options().version; }
void Loop::append_stats(std::string* out) const { listener_->append_stats(out); }
uint32_t Loop::unix_now() const {
  if (listener_->options().unix_clock) return listener_->options().unix_clock();
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

void Loop::count_command(CommandKind kind, size_t keys) {
  switch (kind) {
    case CommandKind::kGet:
    case CommandKind::kGets:
    case CommandKind::kGat:
    case CommandKind::kGats:
    case CommandKind::kMetaGet:  // memcached counts mg as a get, ms as a set
      bump(get_keys_, keys);
      break;
    case CommandKind::kSet:
    case CommandKind::kMetaSet: bump(sets_, 1); break;
    case CommandKind::kDelete:
    case CommandKind::kMetaDelete: bump(deletes_, 1); break;
    default: break;
  }
}

}  // namespace gphkv::server::memcache
