// Parameters that several image loaders declare alike, said once: the folder loaders'
// (imagefolder, nvjpeg) `split` and `on_error`, every epoch loader's order, last batch and crop
// size, and the CPU pipeline loaders' workers, prefetch and pinning. A loader's parameter table
// in docs/plugins.md comes from these declarations. Torch-free, like every schema.
#pragma once

#include <orch/params.h>

#include <string>
#include <vector>

namespace orch::loaderkit {

/// Which part of an ImageNet-layout folder the loader reads.
inline ParamSpec split_param() {
  return param("split")
      .string()
      .one_of({"train", "val"})
      .default_("train")
      .hash_exempt_since("1.0.0")
      .doc(
          "train: DIR/train/<class>/ (or DIR/<class>/ when there is no train/); val: "
          "DIR/val/<class>/");
}

/// What an unreadable or corrupt file does: fail the run, or be skipped and counted.
inline ParamSpec on_error_param() {
  return param("on_error")
      .string()
      .one_of({"fail", "skip"})
      .default_("fail")
      .doc(
          "an unreadable or corrupt file fails the run, or is skipped and counted by reason "
          "(data.skipped.<reason>)");
}

/// shuffle, drop_last and image_size, in that order.
inline std::vector<ParamSpec> epoch_params() {
  return {
      param("shuffle").boolean().default_(true).doc("a new order every epoch, from the run's seed"),
      param("drop_last").boolean().default_(true).doc("drop an epoch's incomplete last batch"),
      param("image_size")
          .integer()
          .min(16)
          .max(1024)
          .default_(224)
          .doc("height and width of the random-resized crop")};
}

/// The parameters every CPU pipeline loader (batch_pipeline.h) declares after its own (`root`,
/// `path`, ...): workers, prefetch, pin_memory, then epoch_params(). `workers_doc` says what a
/// worker does for this loader.
inline std::vector<ParamSpec> pipeline_params(const std::string& workers_doc) {
  std::vector<ParamSpec> out = {
      param("workers").integer().min(0).max(256).default_(0).doc(
          workers_doc + "; 0: min(16, cores - 2), at least 1"),
      param("prefetch")
          .integer()
          .min(1)
          .max(64)
          .default_(3)
          .doc("batches being prepared or ready ahead of the training loop"),
      param("pin_memory")
          .boolean()
          .default_(true)
          .doc("assemble batches in page-locked memory (CUDA runs only)")};
  for (auto& spec : epoch_params()) out.push_back(std::move(spec));
  return out;
}

}  // namespace orch::loaderkit
