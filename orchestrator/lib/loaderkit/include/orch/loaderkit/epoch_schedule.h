// Which samples make batch b of a run, shared by every folder loader: batch b is batch
// b % batches_per_epoch of epoch b / batches_per_epoch, whose order comes from (seed, epoch)
// alone (imagedata::epoch_order), so every loader and any number of threads agree.
#pragma once

#include <orch/imagedata/sample_random.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace orch::loaderkit {

class EpochSchedule {
 public:
  EpochSchedule(std::int64_t samples, std::int64_t batch_size, bool drop_last, bool shuffle,
                std::uint64_t seed)
      : n_(samples), batch_(batch_size), shuffle_(shuffle), seed_(seed) {
    if (n_ < 1) throw std::invalid_argument("the dataset has no images");
    if (drop_last && n_ < batch_)
      throw std::invalid_argument("the dataset's " + std::to_string(n_) +
                                  " images are fewer than one batch of " + std::to_string(batch_) +
                                  " (drop_last: true)");
    batches_per_epoch_ = drop_last ? n_ / batch_ : (n_ + batch_ - 1) / batch_;
  }

  std::int64_t samples() const { return n_; }
  std::int64_t epoch_of(std::int64_t b) const { return b / batches_per_epoch_; }
  /// Samples in batch b: batch_size, or fewer for an epoch's last batch without drop_last.
  std::int64_t count(std::int64_t b) const {
    return std::min(batch_, n_ - (b % batches_per_epoch_) * batch_);
  }
  /// Sample i of batch b. Not thread-safe: keeps the current epoch's order.
  std::int64_t sample(std::int64_t b, std::int64_t i) {
    const std::int64_t epoch = epoch_of(b);
    if (epoch != order_epoch_) {
      order_ = imagedata::epoch_order(n_, seed_, static_cast<std::uint64_t>(epoch), shuffle_);
      order_epoch_ = epoch;
    }
    return order_[static_cast<std::size_t>((b % batches_per_epoch_) * batch_ + i)];
  }

 private:
  std::int64_t n_, batch_;
  bool shuffle_;
  std::uint64_t seed_;
  std::int64_t batches_per_epoch_ = 1;
  std::vector<std::int64_t> order_;
  std::int64_t order_epoch_ = -1;
};

}  // namespace orch::loaderkit
