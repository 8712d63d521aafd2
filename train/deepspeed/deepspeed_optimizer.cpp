// The optimizer block as DeepSpeed's engine builds its optimizer from it
// (_configure_basic_optimizer): Adam and AdamW only, both decoupled unless Adam says
// adam_w_mode false; params go to the optimizer as written, with FusedAdam's defaults, and
// apply to every trainable parameter alike (HF hands them over as one group).

#include "runtime/ascii_lower.h"
#include "train/deepspeed/deepspeed_blocks.h"

namespace zt::train {
namespace {}  // namespace

DeepSpeedOptimizer read_optimizer(ConfigBlock block, std::vector<std::string>& warnings) {
  const std::string type = block.get<std::string>("type", "");
  ZT_REQUIRE(ascii_lower(type) == "adam" || ascii_lower(type) == "adamw",
             block.where("type") + " '" + type + "' is not supported; use Adam or AdamW");
  block.accept<bool>("legacy_fusion");
  ConfigBlock params = block.child("params", BlockKind::kAsWritten);
  ZT_REQUIRE(!params.has("max_grad_norm"), params.where("max_grad_norm") +
                                               " is refused by DeepSpeed as an optimizer parameter; set "
                                               "gradient_clipping at the top level instead");
  DeepSpeedOptimizer optimizer;
  optimizer.lr = params.get("lr", optimizer.lr);
  if (auto betas = params.find<std::vector<double>>("betas")) {
    ZT_REQUIRE(betas->size() == 2, params.where("betas") + " must hold two numbers");
    optimizer.beta1 = (*betas)[0], optimizer.beta2 = (*betas)[1];
  }
  optimizer.eps = params.get("eps", optimizer.eps);
  optimizer.weight_decay = params.get("weight_decay", optimizer.weight_decay);
  optimizer.decoupled_weight_decay = ascii_lower(type) == "adamw" || params.get("adam_w_mode", true);
  optimizer.decays_every_parameter = true;
  ZT_REQUIRE(params.get("bias_correction", true), params.where("bias_correction") +
                                                      " false is not supported: zerotune's Adam corrects the moments' "
                                                      "bias, as torch's does; remove it or set it to true");
  ZT_REQUIRE(!params.get("amsgrad", false),
             params.where("amsgrad") +
                 " true is not supported: zerotune's Adam keeps no maximum of the second "
                 "moment; remove it or set it to false");
  params.accept<bool>("torch_adam");  // torch's implementation of the same update
  params.accept<bool>("set_grad_none");
  params.ignore_unless("fp32_optimizer_states", true, "is not supported (Adam's moments are fp32)", warnings);
  params.note_unread("is not a parameter of DeepSpeed's Adam", warnings);
  block.note_unread("is not read by DeepSpeed's optimizer block", warnings);
  return optimizer;
}

}  // namespace zt::train
