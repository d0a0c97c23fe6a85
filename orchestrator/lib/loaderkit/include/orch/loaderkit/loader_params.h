// Parameters that several image loaders declare alike, said once: the folder loaders'
// (imagefolder, nvjpeg) `split` and `on_error`, and every epoch loader's order, last batch and
// crop size. A loader's parameter table in docs/plugins.md comes from these declarations.
#pragma once

#include <orch/params.h>

#include <cstdint>
#include <string>
#include <vector>

namespace orch::loaderkit {

/// Which part of an ImageNet-layout folder the loader reads.
inline ParamSpec split_param() {
  return {"split",
          ParamType::kString,
          std::string("train"),
          {std::string("train"), std::string("val")},
          {},
          {},
          "train: DIR/train/<class>/ (or DIR/<class>/ when there is no train/); val: "
          "DIR/val/<class>/",
          // Left out of the hash at its default, so results stored before it existed keep
          // their configuration hashes.
          /*hashed_at_default=*/false};
}

/// What an unreadable or corrupt file does: fail the run, or be skipped and counted.
inline ParamSpec on_error_param() {
  return {"on_error",
          ParamType::kString,
          std::string("fail"),
          {std::string("fail"), std::string("skip")},
          {},
          {},
          "an unreadable or corrupt file fails the run, or is skipped and counted by reason "
          "(data.skipped.<reason>)"};
}

/// shuffle, drop_last and image_size, in that order.
inline std::vector<ParamSpec> epoch_params() {
  return {
      {"shuffle",
       ParamType::kBool,
       true,
       {},
       {},
       {},
       "a new order every epoch, from the run's seed"},
      {"drop_last", ParamType::kBool, true, {}, {}, {}, "drop an epoch's incomplete last batch"},
      {"image_size",
       ParamType::kInt,
       std::int64_t{224},
       {},
       16,
       1024,
       "height and width of the random-resized crop"}};
}

}  // namespace orch::loaderkit
