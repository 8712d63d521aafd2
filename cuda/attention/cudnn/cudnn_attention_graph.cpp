#include "cuda/attention/cudnn/cudnn_attention_graph.h"

#include <array>
#include <string>

#include "runtime/error.h"

namespace zt::cuda::cudnn_graph {
namespace {

constexpr std::int64_t kByteAlignment = 16;

std::string last_error() {
  std::array<char, 1024> message{};
  cudnnGetLastErrorString(message.data(), message.size());
  return message[0] != '\0' ? std::string(message.data()) : std::string("no further detail from cuDNN");
}

}  // namespace

void check(cudnnStatus_t status, const std::string& graph, const std::string& step) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw Error(graph + ": " + step + " failed: " + cudnnGetErrorString(status) + " (" + last_error() +
              "). Set attn_impl=zerotune to use zerotune's own attention kernels instead.");
}

Descriptor::Descriptor(cudnnBackendDescriptorType_t type, std::string graph, std::string what)
    : graph_(std::move(graph)), what_(std::move(what)) {
  check(cudnnBackendCreateDescriptor(type, &desc_), graph_, "creating the descriptor of " + what_);
}

Descriptor::~Descriptor() {
  // Nothing useful can be done if destruction fails (e.g. at process exit).
  if (desc_ != nullptr) cudnnBackendDestroyDescriptor(desc_);
}

Descriptor::Descriptor(Descriptor&& other) noexcept
    : desc_(other.desc_), graph_(std::move(other.graph_)), what_(std::move(other.what_)) {
  other.desc_ = nullptr;
}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (desc_ != nullptr) cudnnBackendDestroyDescriptor(desc_);
    desc_ = other.desc_;
    graph_ = std::move(other.graph_);
    what_ = std::move(other.what_);
    other.desc_ = nullptr;
  }
  return *this;
}

void Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
                     const void* values, const char* name_text) {
  check(cudnnBackendSetAttribute(desc_, name, type, count, values), graph_,
        std::string("setting ") + name_text + " on " + what_);
}

void Descriptor::set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& value, const char* name_text) {
  cudnnBackendDescriptor_t raw = value.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, name_text);
}

void Descriptor::finalize() { check(cudnnBackendFinalize(desc_), graph_, "finalizing " + what_); }

Plan::Plan(std::vector<Descriptor> keep_alive, Descriptor plan, std::int64_t workspace_bytes, std::string graph)
    : keep_alive_(std::move(keep_alive)),
      plan_(std::move(plan)),
      workspace_bytes_(workspace_bytes),
      graph_(std::move(graph)) {}

void Plan::execute(cudnnHandle_t handle, const std::vector<std::pair<std::int64_t, void*>>& pointers,
                   void* workspace) const {
  std::vector<std::int64_t> uids;
  std::vector<void*> data;
  for (const auto& [uid, ptr] : pointers) {
    uids.push_back(uid);
    data.push_back(ptr);
  }
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, graph_, "variant pack");
  ZT_CUDNN_SET(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<std::int64_t>(uids.size()),
               uids.data());
  ZT_CUDNN_SET(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<std::int64_t>(data.size()),
               data.data());
  ZT_CUDNN_SET(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  check(cudnnBackendExecute(handle, plan_.get(), pack.get()), graph_, "cudnnBackendExecute");
}

std::int64_t GraphBuilder::tensor(std::int64_t uid, const TensorSpec& spec, const std::string& what) {
  if (tensors_.count(uid) != 0)
    throw Error(name_ + ": tensor uid " + std::to_string(uid) + " used twice (" + what + ")");
  Descriptor desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR, name_, "tensor " + what);
  const auto rank = static_cast<std::int64_t>(spec.dims.size());
  ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &spec.type);
  ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kByteAlignment);
  ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, spec.dims.data());
  ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, spec.strides.data());
  bool is_virtual = spec.is_virtual;
  ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (spec.by_value) {
    bool by_value = true;
    ZT_CUDNN_SET(desc, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  }
  if (spec.ragged_offset >= 0)
    ZT_CUDNN_SET_DESCRIPTOR(desc, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, tensor_desc(spec.ragged_offset));
  desc.finalize();
  tensors_.emplace(uid, std::make_pair(spec, std::move(desc)));
  return uid;
}

std::int64_t GraphBuilder::virtual_tensor(const std::vector<std::int64_t>& dims,
                                          const std::vector<std::int64_t>& strides, cudnnDataType_t type,
                                          const std::string& what) {
  TensorSpec spec;
  spec.dims = dims;
  spec.strides = strides;
  spec.type = type;
  return virtual_tensor(spec, what);
}

std::int64_t GraphBuilder::virtual_tensor(TensorSpec spec, const std::string& what) {
  spec.is_virtual = true;
  return tensor(next_virtual_uid_++, spec, what);
}

const TensorSpec& GraphBuilder::spec(std::int64_t uid) const {
  auto found = tensors_.find(uid);
  if (found == tensors_.end()) throw Error(name_ + ": no tensor with uid " + std::to_string(uid));
  return found->second.first;
}

const Descriptor& GraphBuilder::tensor_desc(std::int64_t uid) const {
  auto found = tensors_.find(uid);
  if (found == tensors_.end()) throw Error(name_ + ": no tensor with uid " + std::to_string(uid));
  return found->second.second;
}

void GraphBuilder::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, std::int64_t x, std::int64_t b,
                             std::int64_t t, std::int64_t y, const std::string& what, std::int64_t axis) {
  Descriptor settings(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, name_, "pointwise settings of " + what);
  ZT_CUDNN_SET(settings, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  ZT_CUDNN_SET(settings, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
  if (axis >= 0) ZT_CUDNN_SET(settings, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  settings.finalize();

  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name_, "pointwise operation " + what);
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, settings);
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, tensor_desc(x));
  if (b >= 0) ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, tensor_desc(b));
  if (t >= 0) ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, tensor_desc(t));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, tensor_desc(y));
  op.finalize();
  op_settings_.push_back(std::move(settings));
  ops_.push_back(std::move(op));
}

void GraphBuilder::matmul(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t m_override,
                          std::int64_t n_override, std::int64_t k_override, const std::string& what) {
  Descriptor settings(CUDNN_BACKEND_MATMUL_DESCRIPTOR, name_, "matmul settings of " + what);
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  ZT_CUDNN_SET(settings, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  settings.finalize();

  Descriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, name_, "matmul operation " + what);
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, tensor_desc(a));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, tensor_desc(b));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, tensor_desc(c));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, settings);
  if (m_override >= 0)
    ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, tensor_desc(m_override));
  if (n_override >= 0)
    ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, tensor_desc(n_override));
  if (k_override >= 0)
    ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, tensor_desc(k_override));
  op.finalize();
  op_settings_.push_back(std::move(settings));
  ops_.push_back(std::move(op));
}

void GraphBuilder::reduction(cudnnReduceTensorOp_t reduce, std::int64_t x, std::int64_t y, const std::string& what) {
  Descriptor settings(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, name_, "reduction settings of " + what);
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  ZT_CUDNN_SET(settings, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce);
  ZT_CUDNN_SET(settings, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  settings.finalize();

  Descriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, name_, "reduction operation " + what);
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, tensor_desc(x));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, tensor_desc(y));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, settings);
  op.finalize();
  op_settings_.push_back(std::move(settings));
  ops_.push_back(std::move(op));
}

void GraphBuilder::reshape(std::int64_t x, std::int64_t y, const std::string& what) {
  Descriptor op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, name_, "reshape operation " + what);
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, tensor_desc(x));
  ZT_CUDNN_SET_DESCRIPTOR(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, tensor_desc(y));
  op.finalize();
  ops_.push_back(std::move(op));
}

}  // namespace zt::cuda::cudnn_graph
