#include "models/quant/quantized_weight.h"

#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "cuda/quant4/dequantize4.cuh"
#include "cuda/quant4/gemm4.cuh"
#include "cuda/quant4/gemv4.cuh"
#include "ops/gemm/linear.h"
#include "ops/quant4/blockwise.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::models::quant {
namespace {

template <typename T>
Tensor cpu_tensor(const std::vector<T>& values, DType dtype) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, dtype);
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return t;
}

template <typename T>
std::span<const T> cpu_span(const Tensor& t) {
  return {t.data<T>(), static_cast<std::size_t>(t.numel())};
}

// The block scales as floats: stored, or decoded from their double quantization.
std::vector<float> block_absmax(const Quant4Weight& w) {
  if (!w.state.nested) {
    const std::span<const float> stored = cpu_span<float>(w.absmax);
    return {stored.begin(), stored.end()};
  }
  std::array<float, 256> map{};
  std::memcpy(map.data(), w.nested_map.data_ptr(), sizeof(map));
  return ops::quant4::decompress_absmax(cpu_span<std::uint8_t>(w.absmax), cpu_span<float>(w.nested_absmax),
                                        w.state.nested->blocksize, w.state.nested->offset, map);
}

Tensor dequantize_cpu(const Quant4Weight& w, DType dtype) {
  std::vector<float> values(static_cast<std::size_t>(w.state.numel()));
  ops::quant4::dequantize_4bit(cpu_span<std::uint8_t>(w.packed), block_absmax(w), w.state.blocksize, w.state.type,
                               values);
  return cpu_tensor(values, DType::kF32).to(dtype).view(Shape(w.state.shape));
}

Tensor dequantize_gpu(const Quant4Weight& w, DType dtype) {
  Tensor out = Tensor::empty(Shape(w.state.shape), dtype, w.device(), current_stream());
  cuda::dequantize_4bit({.weight = packed4_view(w), .out = out.data_ptr(), .out_dtype = dtype}, current_stream());
  return out;
}

// The arguments of both kernels on the packed weight (their structs hold the same fields).
template <typename Args>
Args packed_linear_args(const Quant4Weight& w, const Tensor& x, const Tensor& bias, Tensor& y) {
  return {.weight = packed4_view(w),
          .rows = x.size(0),
          .in_features = w.state.shape[1],
          .out_features = w.state.shape[0],
          .x = x.data_ptr(),
          .bias = bias.defined() ? bias.data_ptr() : nullptr,
          .y = y.data_ptr(),
          .dtype = x.dtype(),
          .weight_dtype = w.state.dtype};
}

// The 4-bit GEMV for a decode step's few rows, the 4-bit GEMM for more.
Tensor linear_gpu(const Quant4Weight& w, const Tensor& x, const Tensor& bias) {
  Tensor y = Tensor::empty({x.size(0), w.state.shape[0]}, x.dtype(), x.device(), current_stream());
  if (x.size(0) <= cuda::kGemv4MaxRows)
    cuda::gemv_4bit(packed_linear_args<cuda::Gemv4Args>(w, x, bias, y), current_stream());
  else
    cuda::gemm_4bit(packed_linear_args<cuda::Gemm4Args>(w, x, bias, y), current_stream());
  return y;
}

std::optional<safetensors::TensorInfo> info_of(const SafetensorsCheckpoint& checkpoint, const std::string& name) {
  if (!checkpoint.contains(name)) return std::nullopt;
  return checkpoint.info(name);
}

// The bytes of a tensor whatever its dtype (bnb_4bit_quant_storage views the codes as another).
Tensor as_bytes(const Tensor& stored) {
  const Tensor contiguous = stored.contiguous();
  const auto nbytes = static_cast<std::int64_t>(contiguous.numel() * dtype_size(contiguous.dtype()));
  Tensor bytes = Tensor::empty({nbytes}, DType::kU8);
  if (nbytes > 0) std::memcpy(bytes.data_ptr(), contiguous.data_ptr(), static_cast<std::size_t>(nbytes));
  return bytes;
}

void require_finite_scales(const Tensor& scales, const std::string& name) {
  for (float v : cpu_span<float>(scales))
    if (!std::isfinite(v))
      fail("'" + name + "' holds a NaN or infinite scale; the checkpoint is damaged: download it again");
}

}  // namespace

bool multiplies_packed(std::int64_t rows, DType dtype) {
  return rows >= 1 && (rows <= cuda::kGemv4MaxRows || (rows <= cuda::kGemm4MaxRows && cuda::gemm_4bit_takes(dtype)));
}

cuda::Packed4Weight packed4_view(const Quant4Weight& w) {
  cuda::Packed4Weight view{.packed = w.packed.data<std::uint8_t>(),
                           .nf4 = w.state.type == Quant4Type::kNf4,
                           .n = w.state.numel(),
                           .blocksize = w.state.blocksize};
  if (w.state.nested) {
    view.absmax_codes = w.absmax.data<std::uint8_t>();
    view.nested_absmax = w.nested_absmax.data<float>();
    view.nested_map = w.nested_map.data<float>();
    view.nested_offset = w.state.nested->offset;
    view.nested_blocksize = w.state.nested->blocksize;
  } else {
    view.absmax = w.absmax.data<float>();
  }
  return view;
}

std::int64_t Quant4Weight::nbytes() const {
  std::int64_t total = 0;
  for (const Tensor* t : {&packed, &absmax, &nested_absmax, &nested_map})
    if (t->defined()) total += t->numel() * static_cast<std::int64_t>(dtype_size(t->dtype()));
  return total;
}

Tensor Quant4Weight::dequantize(DType dtype) const {
  return device().is_cpu() ? dequantize_cpu(*this, dtype) : dequantize_gpu(*this, dtype);
}

Tensor Quant4Weight::linear(const Tensor& x, const Tensor& bias) const {
  ZT_REQUIRE(state.shape.size() == 2 && x.dim() == 2 && x.size(1) == state.shape[1],
             "4-bit linear: x " + shape_str(x.shape()) + " does not match the weight " + shape_str(Shape(state.shape)));
  ZT_REQUIRE(x.device() == device() && (!bias.defined() || (bias.device() == device() && bias.dtype() == x.dtype())),
             "4-bit linear: x and the bias must be on the weight's device, the bias in x's dtype");
  if (device().is_cpu() || !multiplies_packed(x.size(0), x.dtype()))
    return ops::linear_forward(x, dequantize(state.dtype).to(x.dtype()), bias);
  return linear_gpu(*this, x.contiguous(), bias.defined() ? bias.contiguous() : bias);
}

Quant4Weight Quant4Weight::to(Device target) const {
  Quant4Weight moved = *this;
  for (Tensor* t : {&moved.packed, &moved.absmax, &moved.nested_absmax, &moved.nested_map})
    if (t->defined()) *t = t->to(target);
  return moved;
}

NamedTensors Quant4Weight::checkpoint_tensors(const std::string& name) const {
  const Quant4Weight cpu = to(Device::cpu());
  NamedTensors tensors;
  tensors.emplace_back(name, cpu.packed.view({cpu.packed.numel(), 1}));
  tensors.emplace_back(name + ".absmax", cpu.absmax);
  const std::array<float, 16>& book = ops::quant4::code_book(state.type);
  tensors.emplace_back(name + ".quant_map", cpu_tensor(std::vector<float>(book.begin(), book.end()), DType::kF32));
  if (state.nested) {
    tensors.emplace_back(name + ".nested_absmax", cpu.nested_absmax);
    tensors.emplace_back(name + ".nested_quant_map", cpu.nested_map);
  }
  const std::string json = quant_state_json(state);
  tensors.emplace_back(name + "." + quant_state_suffix(state.type),
                       cpu_tensor(std::vector<std::uint8_t>(json.begin(), json.end()), DType::kU8));
  return tensors;
}

Quant4Weight quantize_weight(const Tensor& weight, const Quant4Options& options, const std::string& name) {
  const Tensor values = weight.to(Device::cpu(), DType::kF32).contiguous();
  const ops::quant4::Packed4 q =
      ops::quant4::quantize_4bit(cpu_span<float>(values), options.blocksize, options.type, name);
  Quant4Weight result;
  result.state = {
      .type = options.type, .blocksize = options.blocksize, .dtype = weight.dtype(), .shape = weight.shape()};
  result.packed = cpu_tensor(q.packed, DType::kU8);
  if (options.double_quant) {
    const ops::quant4::NestedAbsmax nested = ops::quant4::compress_absmax(q.absmax);
    result.state.nested = NestedState{.blocksize = nested.blocksize, .offset = nested.offset};
    result.absmax = cpu_tensor(nested.codes, DType::kU8);
    result.nested_absmax = cpu_tensor(nested.absmax, DType::kF32);
    const std::array<float, 256>& map = ops::quant4::dynamic_map();
    result.nested_map = cpu_tensor(std::vector<float>(map.begin(), map.end()), DType::kF32);
  } else {
    result.absmax = cpu_tensor(q.absmax, DType::kF32);
  }
  return result.to(weight.device());
}

std::optional<Quant4Type> stored_quant_type(const SafetensorsCheckpoint& checkpoint, const std::string& name) {
  std::optional<Quant4Type> found;
  for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4}) {
    if (!checkpoint.contains(name + "." + quant_state_suffix(type))) continue;
    if (found)
      fail("'" + name + "' has both an nf4 and an fp4 quantization state; keep the one its codes were made with");
    found = type;
  }
  return found;
}

Quant4Weight read_quantized_weight(const SafetensorsCheckpoint& checkpoint, const std::string& name, Quant4Type type,
                                   const Shape& expected_shape) {
  const std::string state_name = name + "." + quant_state_suffix(type);
  const Tensor json = checkpoint.get(state_name).contiguous();
  if (json.dtype() != DType::kU8)
    fail("'" + state_name + "' must be uint8 (UTF-8 JSON), got " + dtype_name(json.dtype()));
  const std::span<const std::uint8_t> bytes = cpu_span<std::uint8_t>(json);
  Quant4Weight w;
  w.state = parse_quant_state(std::string(bytes.begin(), bytes.end()), type, name);
  check_stored_layout(
      w.state,
      {info_of(checkpoint, name), info_of(checkpoint, name + ".absmax"), info_of(checkpoint, name + ".quant_map"),
       info_of(checkpoint, name + ".nested_absmax"), info_of(checkpoint, name + ".nested_quant_map")},
      name);
  if (Shape(w.state.shape) != expected_shape)
    fail("'" + name + "' was quantized from a weight of shape " + shape_str(Shape(w.state.shape)) +
         ", but the model's is " + shape_str(expected_shape) + ": check that config.json belongs to these weights");
  const Tensor book = checkpoint.get(name + ".quant_map").contiguous();
  const std::array<float, 16>& expected = ops::quant4::code_book(type);
  for (std::size_t i = 0; i < 16; ++i)
    if (cpu_span<float>(book)[i] != expected[i])
      fail("'" + name + ".quant_map' is not bitsandbytes' " + ops::quant4::quant4_type_name(type) +
           " code book (entry " + std::to_string(i) +
           "); zerotune dequantizes with the standard book, as bitsandbytes' kernels do");
  w.packed = as_bytes(checkpoint.get(name));
  w.absmax = checkpoint.get(name + ".absmax").contiguous().view({checkpoint.get(name + ".absmax").numel()});
  if (w.state.nested) {
    w.nested_absmax = checkpoint.get(name + ".nested_absmax").contiguous();
    w.nested_absmax = w.nested_absmax.view({w.nested_absmax.numel()});
    w.nested_map = checkpoint.get(name + ".nested_quant_map").contiguous().view({256});
    require_finite_scales(w.nested_absmax, name + ".nested_absmax");
    require_finite_scales(w.nested_map, name + ".nested_quant_map");
  } else {
    require_finite_scales(w.absmax, name + ".absmax");
  }
  return w;
}

}  // namespace zt::models::quant
