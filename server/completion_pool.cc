#include "server/completion_pool.h"

namespace gphkv::server {

CompletionPool::CompletionPool(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

CompletionPool::~CompletionPool() { stop(); }

void CompletionPool::submit(std::function<void()> task) {
  if (threads_.empty()) {
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    ++busy_;
  }
  cv_.notify_one();
}

bool CompletionPool::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_ == 0;
}

void CompletionPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void CompletionPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
  }
}

}  // namespace gphkv::server
