// run_profile and run_profile_ops from a document (see profile_rows.h).
#include "storage/profile_rows.h"

#include <string>

#include "storage/row_values.h"

namespace orch::storage {
namespace {

void insert_ops(Database& db, std::int64_t run_id, const nlohmann::json& list, const char* kind) {
  if (!list.is_array()) return;
  Statement st(db, R"(INSERT INTO run_profile_ops (run_id, kind, position, name, calls, total_ms,
                      self_ms, share) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))");
  std::int64_t position = 0;
  for (const auto& op : list) {
    const std::string name = json_text(op, "name");
    if (name.empty()) continue;
    st.bind(1, run_id).bind(2, std::string(kind)).bind(3, ++position).bind(4, name);
    if (auto calls = json_integer(op, "calls"))
      st.bind(5, *calls);
    else
      st.bind_null(5);
    st.bind(6, json_number(op, "total_ms"))
        .bind(7, json_number(op, "self_ms"))
        .bind(8, json_number(op, "share"));
    st.step();
    st.reset();
  }
}

}  // namespace

void insert_profile(Database& db, std::int64_t run_id, const nlohmann::json& doc) {
  const nlohmann::json p = json_object(doc, "profile");
  if (p.empty()) return;
  std::string activities;
  if (auto a = p.find("activities"); a != p.end() && a->is_array()) {
    for (const auto& v : *a) {
      if (v.is_string()) activities += (activities.empty() ? "" : ",") + v.get<std::string>();
    }
  }
  RowValues row;
  row.set("run_id", run_id)
      .set("steps", json_integer(p, "steps").value_or(0))
      .set_text("profiler", json_text(p, "profiler"))
      .set_text("activities", activities)
      .set_text("trace_path", json_text(p, "trace"))
      .set("trace_bytes", json_integer(p, "trace_bytes"))
      .set("step_ms", json_number(p, "step_ms"))
      .set("measured_step_ms", json_number(p, "measured_step_ms"))
      .set("kernels_per_step", json_number(p, "kernels_per_step"))
      .set("gpu_kernel_ms_per_step", json_number(p, "gpu_kernel_ms_per_step"))
      .set("gpu_busy_ms_per_step", json_number(p, "gpu_busy_ms_per_step"))
      .set("gpu_busy_share", json_number(p, "gpu_busy_share"))
      .set("gpu_busy_share_profiled", json_number(p, "gpu_busy_share_profiled"))
      .set("cuda_launches_per_step", json_number(p, "cuda_launches_per_step"))
      .set("cpu_ops_per_step", json_number(p, "cpu_ops_per_step"))
      .set_text("error", json_text(p, "error"));
  // A plain insert: the run's previous profile rows were deleted with its other children.
  std::string names, params;
  for (std::size_t i = 0; i < row.columns.size(); ++i) {
    names += (i ? ", " : "") + row.columns[i].first;
    params += (i ? ", ?" : "?") + std::to_string(i + 1);
  }
  Statement st(db, "INSERT INTO run_profile (" + names + ") VALUES (" + params + ")");
  bind_row(st, row);
  st.step();
  insert_ops(db, run_id, p.value("top_kernels", nlohmann::json()), "kernel");
  insert_ops(db, run_id, p.value("top_cpu_ops", nlohmann::json()), "cpu_op");
}

}  // namespace orch::storage
