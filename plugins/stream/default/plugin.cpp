// The `default` stream strategy: everything on the current stream, in order. The batch is
// fetched, copied to the device (if the loader left it on the host) and trained on; nothing
// overlaps. This is the baseline the other strategies have to beat.
#include <orch/stream_strategy.h>

#include <chrono>

#include "plugin_schemas.h"

namespace orch::default_stream {
namespace {

class DefaultStrategy final : public StreamStrategy {
 public:
  StepResult step(StepFunctions& fns) override {
    const auto t0 = std::chrono::steady_clock::now();
    Batch host = fns.next_batch();
    const auto t1 = std::chrono::steady_clock::now();
    Batch dev = fns.to_device(host, /*non_blocking=*/false);
    StepResult r;
    r.loss = fns.train_step(dev);
    r.data_wait_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    return r;
  }
};

class DefaultPlugin final : public StreamStrategyPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::default_stream(); }
  std::unique_ptr<StreamStrategy> create(const Params&, const StrategyContext&) const override {
    return std::make_unique<DefaultStrategy>();
  }
};

}  // namespace
}  // namespace orch::default_stream

ORCH_PLUGIN(orch::default_stream::DefaultPlugin)
