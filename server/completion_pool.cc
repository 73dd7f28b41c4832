#include "server/completion_pool.h"

#include "server/thread_name.h"

namespace gphkv::server {

CompletionPool::CompletionPool(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      name_this_thread("gphkv-fill");
      work();
    });
}

CompletionPool::~CompletionPool() { stop(); }

void CompletionPool::submit(std::function<void()> task) {
  if (threads_.empty()) {
    task();
    return;
  }
  {
    AnnotatedLock lock(&mu_);
    tasks_.push_back(std::move(task));
    ++busy_;
  }
  cv_.notify_one();
}

bool CompletionPool::idle() {
  AnnotatedLock lock(&mu_);
  return busy_ == 0;
}

void CompletionPool::stop() {
  {
    AnnotatedLock lock(&mu_);
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
      AnnotatedLock lock(&mu_);
      while (!stopping_ && tasks_.empty()) lock.wait(cv_);
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    AnnotatedLock lock(&mu_);
    --busy_;
  }
}

}  // namespace gphkv::server
