// What a run trains (--finetuning_type, LLaMA-Factory's name): every parameter, some layers,
// LoRA matrices beside the frozen model, or a P-Tuning v2 prefix. Its own header so that the
// arguments (train/args/) and a checkpoint's export (train/checkpoint/), which reads the type
// back from training_args.json, both name it without including each other; finetuning.h
// selects the trainable parameters by it.
#pragma once

#include "runtime/enum_names.h"

namespace zt::train {

enum class FinetuningType { kFull, kFreeze, kLora, kPtuning };

inline constexpr EnumName<FinetuningType> kFinetuningTypeNames[] = {{FinetuningType::kFull, "full"},
                                                                    {FinetuningType::kFreeze, "freeze"},
                                                                    {FinetuningType::kLora, "lora"},
                                                                    {FinetuningType::kPtuning, "ptuning"}};
constexpr const auto& enum_names(FinetuningType) { return kFinetuningTypeNames; }

}  // namespace zt::train
