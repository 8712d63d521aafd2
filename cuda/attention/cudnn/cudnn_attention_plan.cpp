// GraphBuilder::build: the operation graph, cuDNN's ranked engine configurations and the
// first of them that finalizes into an execution plan.
#include <string>

#include "cuda/attention/cudnn/cudnn_attention_graph.h"
#include "runtime/error.h"

namespace zt::cuda::cudnn_graph {
namespace {

// The engine configurations heuristics `mode` ranks for the graph, best first.
std::vector<Descriptor> engine_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode, const std::string& name) {
  const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "heuristics mode A" : "heuristics fallback";
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, name, mode_name);
  ZT_CUDNN_SET_DESCRIPTOR(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  ZT_CUDNN_SET(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heuristics.finalize();

  std::int64_t count = 0;
  check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                 &count, nullptr),
        name, std::string("counting the engine configurations of ") + mode_name);
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw_configs;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, name, "engine configuration " + std::to_string(i));
    raw_configs.push_back(configs.back().get());
  }
  if (count == 0) return configs;
  std::int64_t returned = 0;
  check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                 &returned, raw_configs.data()),
        name, std::string("reading the engine configurations of ") + mode_name);
  configs.erase(configs.begin() + returned, configs.end());
  return configs;
}

std::string last_error_text() {
  char message[512] = {};
  cudnnGetLastErrorString(message, sizeof(message));
  return message;
}

}  // namespace

Plan GraphBuilder::build(cudnnHandle_t handle) {
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, name_, "operation graph");
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const Descriptor& op : ops_) raw_ops.push_back(op.get());
  ZT_CUDNN_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               static_cast<std::int64_t>(raw_ops.size()), raw_ops.data());
  ZT_CUDNN_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  graph.finalize();

  std::string rejected;  // why each configuration failed, for the error when none works
  int tried = 0;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Descriptor& config : engine_configs(graph, mode, name_)) {
      ++tried;
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, name_, "execution plan");
      ZT_CUDNN_SET(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      ZT_CUDNN_SET_DESCRIPTOR(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
      cudnnStatus_t status = cudnnBackendFinalize(plan.get());
      if (status != CUDNN_STATUS_SUCCESS) {
        if (tried <= 4)
          rejected += std::string("; ") + config.label() + ": " + cudnnGetErrorString(status) + " " + last_error_text();
        continue;
      }
      std::int64_t workspace = 0, returned = 0;
      check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                     &returned, &workspace),
            name_, "reading the plan's workspace size");
      std::vector<Descriptor> keep;
      for (auto& entry : tensors_) keep.push_back(std::move(entry.second.second));
      for (Descriptor& d : ops_) keep.push_back(std::move(d));
      for (Descriptor& d : op_settings_) keep.push_back(std::move(d));
      keep.push_back(std::move(graph));
      keep.push_back(std::move(config));
      return Plan(std::move(keep), std::move(plan), workspace, name_);
    }
  }
  throw Error(name_ + ": cuDNN has no engine for this graph (" + std::to_string(tried) + " configurations tried" +
              rejected + "). This cuDNN or GPU does not support the shape; set attn_impl=zerotune.");
}

}  // namespace zt::cuda::cudnn_graph
