// parallel_for: n independent jobs over a few threads; the first exception stops the rest and is
// rethrown on the caller's thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace orch::imagedata {

/// Worker threads to use by default: min(16, cores - 2), at least 1 (the article's rule).
inline int default_workers() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, std::min(16, cores - 2));
}

template <class Fn>
void parallel_for(std::int64_t n, int workers, Fn&& fn) {
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (;;) {
      const std::int64_t i = next.fetch_add(1);
      if (i >= n || stop.load()) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        stop = true;
      }
    }
  };
  const int threads =
      static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(workers, n)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace orch::imagedata
