// Names the calling thread as `top -H`, `ps -L` and /proc/PID/task/*/comm
// show it, so an operator (and scripts/gpus-scaling.sh's per-thread CPU) can
// tell the executor from the completion threads. Linux keeps 15 bytes of it.
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>

namespace gphkv::server {

inline void name_this_thread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());  // best effort: a name is not worth failing over
}

}  // namespace gphkv::server
