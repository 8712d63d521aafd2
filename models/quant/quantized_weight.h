// One linear layer's weight held in bitsandbytes' 4-bit form (quant_state.h) on a device:
// about half a byte per weight at rest, dequantized whole into a transient tensor when the
// layer computes, or multiplied as it is held by a decode step's few rows. Made by quantizing a dense weight, or read
// from a pre-quantized checkpoint; written back in the same layout.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/quant4/packed4.cuh"
#include "models/quant/quant_state.h"
#include "tensor/safetensors/safetensors.h"
#include "tensor/safetensors/safetensors_index.h"
#include "tensor/tensor.h"

namespace zt::models::quant {

struct Quant4Options {
  Quant4Type type = Quant4Type::kNf4;
  bool double_quant = true;
  std::int64_t blocksize = 64;
};

struct Quant4Weight {
  QuantState4 state;
  Tensor packed;         // uint8 [(n + 1) / 2]
  Tensor absmax;         // float32 [blocks], or uint8 [blocks] under double quantization
  Tensor nested_absmax;  // float32 [nested blocks]   (double quantization only)
  Tensor nested_map;     // float32 [256]             (double quantization only)

  Device device() const { return packed.device(); }
  // Bytes held: the codes and every scale.
  std::int64_t nbytes() const;
  // The weight, of state.shape, in `dtype` on the weight's device (the CPU reference on the CPU,
  // cuda/quant4's kernel on a GPU: the same bits).
  Tensor dequantize(DType dtype) const;
  // x [rows, in_features] · weightᵀ (+ bias [out_features]) in x's dtype, the weight read as
  // dequantize(state.dtype) converted to x's dtype. On a GPU, rows that multiplies_packed takes
  // run on the packed codes (the weight is never written out whole; the result equals
  // dequantize-then-GEMM up to the order of the sums): up to cuda::kGemv4MaxRows cuda/quant4's
  // 4-bit GEMV, up to cuda::kGemm4MaxRows of bfloat16 or float16 its 4-bit GEMM. More rows, and
  // the CPU, dequantize and call ops::linear_forward (on the CPU: the gather path's bits).
  Tensor linear(const Tensor& x, const Tensor& bias = Tensor()) const;
  Quant4Weight to(Device device) const;
  // CPU tensors named as bitsandbytes names them: `name` (uint8 [(n + 1) / 2, 1]), name.absmax,
  // name.quant_map, [name.nested_absmax, name.nested_quant_map,] name.quant_state.bitsandbytes__*.
  NamedTensors checkpoint_tensors(const std::string& name) const;
};

// Whether a GPU linear of `rows` rows (1 or more) of `dtype` multiplies the packed weight (the
// 4-bit GEMV or GEMM) rather than dequantizing it first.
bool multiplies_packed(std::int64_t rows, DType dtype);

// The weight's device pointers as cuda/quant4's kernels read them.
cuda::Packed4Weight packed4_view(const Quant4Weight& w);

// Quantizes `weight` (any float dtype, any device; read on the CPU) as bitsandbytes'
// quantize_4bit does, its state recording the weight's dtype. Throws zt::Error naming `name`
// for a NaN or infinite value.
Quant4Weight quantize_weight(const Tensor& weight, const Quant4Options& options, const std::string& name);

// The bitsandbytes type `name` is stored in when the checkpoint holds its
// name.quant_state.bitsandbytes__* tensor; nullopt for a dense weight. Two such tensors are an error.
std::optional<Quant4Type> stored_quant_type(const SafetensorsCheckpoint& checkpoint, const std::string& name);

// Reads a 4-bit weight and its companions (CPU tensors viewing the checkpoint), checking each
// against its state; `expected_shape` is the parameter's. Throws zt::Error naming the tensor.
Quant4Weight read_quantized_weight(const SafetensorsCheckpoint& checkpoint, const std::string& name, Quant4Type type,
                                   const Shape& expected_shape);

}  // namespace zt::models::quant
