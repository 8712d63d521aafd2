// A small builder over cuDNN's backend (graph) API, used by the cuDNN attention graphs:
// tensors, pointwise / matmul / reduction / reshape operations, the operation graph, the
// engine choice and the execution plan. Every call's status is checked; a failure throws
// zt::Error naming the graph, the descriptor and the attribute or step that failed, cuDNN's
// status and its last error message, so a first run on a new GPU or cuDNN says what broke.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zt::cuda::cudnn_graph {

// Throws zt::Error for a failed status: "<graph>: <step> failed: <status> (<cuDNN's message>)".
void check(cudnnStatus_t status, const std::string& graph, const std::string& step);

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  Descriptor(cudnnBackendDescriptorType_t type, std::string graph, std::string what);
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept;
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count, const void* values,
           const char* name_text);
  void set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& value, const char* name_text);
  void finalize();
  std::string label() const { return graph_ + " " + what_; }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
  std::string graph_, what_;
};

// Sets attribute NAME with its name in any error message.
#define ZT_CUDNN_SET(desc, name, type, count, values) (desc).set(name, type, count, values, #name)
// Sets attribute NAME to the descriptor `value`.
#define ZT_CUDNN_SET_DESCRIPTOR(desc, name, value) (desc).set_descriptor(name, value, #name)

struct TensorSpec {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  bool is_virtual = false;
  bool by_value = false;            // a host scalar handed over in the variant pack
  std::int64_t ragged_offset = -1;  // uid of an int32 [batch + 1, 1, 1, 1] offsets tensor, or -1
};

// A finalized execution plan and everything it was built from.
class Plan {
 public:
  Plan(std::vector<Descriptor> keep_alive, Descriptor plan, std::int64_t workspace_bytes, std::string graph);
  std::int64_t workspace_bytes() const { return workspace_bytes_; }
  // Runs the plan; pointers pairs each non-virtual tensor uid with its device (or, for
  // by-value scalars, host) address.
  void execute(cudnnHandle_t handle, const std::vector<std::pair<std::int64_t, void*>>& pointers,
               void* workspace) const;

 private:
  std::vector<Descriptor> keep_alive_;
  Descriptor plan_;
  std::int64_t workspace_bytes_ = 0;
  std::string graph_;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name) : name_(std::move(name)) {}

  // Adds a tensor under `uid` (explicit for the tensors the caller binds; virtual ones may
  // take next_virtual_uid()).
  std::int64_t tensor(std::int64_t uid, const TensorSpec& spec, const std::string& what);
  std::int64_t virtual_tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
                              cudnnDataType_t type, const std::string& what);
  std::int64_t virtual_tensor(TensorSpec spec, const std::string& what);
  const TensorSpec& spec(std::int64_t uid) const;

  // y = mode(x[, b[, t]]), computed in `math`; b and t are -1 when unused; axis for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, std::int64_t x, std::int64_t b, std::int64_t t,
                 std::int64_t y, const std::string& what, std::int64_t axis = -1);
  // c = a · b over the last two dims; the overrides are int32 [batch, 1, 1, 1] tensors of
  // per-sequence sizes, or -1.
  void matmul(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t m_override, std::int64_t n_override,
              std::int64_t k_override, const std::string& what);
  void reduction(cudnnReduceTensorOp_t op, std::int64_t x, std::int64_t y, const std::string& what);
  void reshape(std::int64_t x, std::int64_t y, const std::string& what);

  // Finalizes the operation graph and the first engine configuration cuDNN's heuristics
  // (mode A, then the fallback list) can build a plan from.
  Plan build(cudnnHandle_t handle);

 private:
  const Descriptor& tensor_desc(std::int64_t uid) const;

  std::string name_;
  std::map<std::int64_t, std::pair<TensorSpec, Descriptor>> tensors_;
  std::vector<Descriptor> ops_;
  std::vector<Descriptor> op_settings_;  // pointwise / matmul / reduction descriptors the ops use
  std::int64_t next_virtual_uid_ = 1000;
};

}  // namespace zt::cuda::cudnn_graph
