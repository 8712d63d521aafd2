// Model folders in transformers' bitsandbytes 4-bit layout (what save_pretrained writes for a
// load_in_4bit model, as the "-bnb-4bit" repositories are laid out): config.json with a
// quantization_config, each quantized linear weight as packed codes with its companions
// (quant_state.h), every other tensor (embeddings, norms, biases, the LM head) dense.
#pragma once

#include <string>
#include <vector>

#include "models/model.h"
#include "models/quant/quantized_weight.h"
#include "tensor/safetensors/safetensors_index.h"

namespace zt::models::quant {

// Loads such a checkpoint into `model` (built from its config.json). Dense tensors are copied;
// 4-bit weights are kept packed as the model's QuantizedLinears where the model left them
// unallocated (ModelOptions::keep_4bit_weights: training and generation on the 4-bit base), or
// dequantized into the parameters (the dense model, bit for bit what bitsandbytes'
// dequantize_4bit gives). Every missing, unexpected or mis-shaped tensor
// is an error naming it; a damaged quantization state names its weight.
void load_bnb_4bit_weights(CausalLM& model, const SafetensorsCheckpoint& checkpoint, const std::string& path);

// Loads a dense checkpoint into `model`, whose decoder linears were left unallocated
// (ModelOptions::quantize_base): each linear is read from the file (on the host), converted to
// the model's dtype, quantized and moved to the device in 4 bits, becoming the model's
// QuantizedLinears; every other tensor is copied as load_weights copies it. Problems are
// reported as load_weights reports them.
void load_quantizing_linears(CausalLM& model, const SafetensorsCheckpoint& checkpoint, const std::string& path,
                             const Quant4Options& options);

// Writes `model` (dense) into `dir` as transformers saves it quantized with these options:
// the quantizable linears (but skipped modules) in 4 bits, the rest in the model's dtype,
// config.json with bitsandbytes' quantization_config, the companion files of its source.
void save_bnb_4bit_model(const CausalLM& model, const std::string& dir, const Quant4Options& options,
                         const std::vector<std::string>& skip_modules = {});

// transformers' BitsAndBytesConfig.to_dict() for 4-bit as it lands in config.json.
nlohmann::ordered_json bnb_4bit_quantization_config(const Quant4Options& options, DType compute_dtype,
                                                    const std::vector<std::string>& skip_modules);

}  // namespace zt::models::quant
