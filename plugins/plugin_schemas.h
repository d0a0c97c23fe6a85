// What each plugin that ships with orch says about itself (name, kind, version, description,
// parameters, whether it needs CUDA), declared once in its folder's schema.cpp. Torch-free: the
// plugin's info() returns it (adding its plan check), and the planner's tests plan against the
// same declarations (orch_plugin_schemas), never a copy.
#pragma once

#include <orch/plugin.h>

#include <vector>

namespace orch::plugin_schemas {

PluginInfo resnet();
PluginInfo torchscript();
PluginInfo synthetic();
PluginInfo imagefolder();
PluginInfo cached();
PluginInfo nvjpeg();
PluginInfo fp32();
PluginInfo tf32();
PluginInfo amp();
PluginInfo default_stream();
PluginInfo copy_overlap();
PluginInfo cuda_graph();
PluginInfo multi_stream();

/// Every plugin above, in that order (nvjpeg too, whether or not this build has nvJPEG).
std::vector<PluginInfo> all();

}  // namespace orch::plugin_schemas
