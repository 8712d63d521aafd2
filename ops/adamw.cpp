#include "ops/adamw.h"

#include <cmath>
#include <string>

#include "cuda/adamw.cuh"
#include "ops/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::ops {
namespace {

const char* kOp = "adamw_step";

void check_state(NamedTensor t, const Tensor& master) {
  ZT_REQUIRE(t.second->dtype() == DType::kF32, std::string(kOp) + ": " + t.first + " must be float32, got " +
                                                   dtype_name(t.second->dtype()));
  ZT_REQUIRE(t.second->is_contiguous(), std::string(kOp) + ": " + t.first +
                                            " is updated in place and must be contiguous; its shape is " +
                                            shape_str(t.second->shape()));
  check_same_shape(kOp, t, {"master", &master});
}

void check_16_or_32_bit(NamedTensor t) {
  DType d = t.second->dtype();
  ZT_REQUIRE(d == DType::kF32 || d == DType::kBF16 || d == DType::kF16,
             std::string(kOp) + ": " + t.first + " must be float32, bfloat16 or float16, got " + dtype_name(d));
}

void check_arguments(const Tensor& master, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                     const AdamWConfig& config, const Tensor& working) {
  check_same_device(kOp, {{"master", &master}, {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}, {"grad", &grad}});
  for (NamedTensor t : {NamedTensor{"master", &master}, {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}})
    check_state(t, master);
  check_same_shape(kOp, {"grad", &grad}, {"master", &master});
  check_16_or_32_bit({"grad", &grad});
  if (working.defined()) {
    check_same_device(kOp, {{"master", &master}, {"working", &working}});
    check_same_shape(kOp, {"working", &working}, {"master", &master});
    check_16_or_32_bit({"working", &working});
    ZT_REQUIRE(working.is_contiguous(), std::string(kOp) + ": working is written in place and must be contiguous");
  }
  ZT_REQUIRE(config.step >= 1, std::string(kOp) + ": step counts from 1, got " + std::to_string(config.step));
  ZT_REQUIRE(config.grad_scale > 0.0 && std::isfinite(config.grad_scale),
             std::string(kOp) + ": grad_scale must be positive and finite, got " + std::to_string(config.grad_scale));
}

cuda::AdamWScalars scalars_of(const AdamWConfig& c) {
  auto step = static_cast<double>(c.step);
  cuda::AdamWScalars s;
  s.decay_factor = static_cast<float>(1.0 - c.lr * c.weight_decay);
  s.beta1 = static_cast<float>(c.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  s.beta2 = static_cast<float>(c.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  s.step_size = static_cast<float>(c.lr / (1.0 - std::pow(c.beta1, step)));
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(c.beta2, step)));
  s.eps = static_cast<float>(c.eps);
  s.grad_scale = static_cast<float>(c.grad_scale);
  return s;
}

template <typename G>
bool any_non_finite(const G* grad, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(host::load(grad[i]))) return true;
  return false;
}

// The kernel's float operations in the same order, so the two agree to the last bit or so
// (exactly, unless the host compiler fuses multiply-adds).
template <typename G>
void update_cpu(float* master, float* exp_avg, float* exp_avg_sq, const G* grad, std::int64_t n,
                const cuda::AdamWScalars& s) {
  for (std::int64_t i = 0; i < n; ++i) {
    float g = host::load(grad[i]) / s.grad_scale;
    float p = master[i] * s.decay_factor;
    float m = s.beta1 * exp_avg[i] + s.one_minus_beta1 * g;
    float v = s.beta2 * exp_avg_sq[i] + s.one_minus_beta2 * (g * g);
    float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
    p = p - s.step_size * (m / denom);
    master[i] = p;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
  }
}

void write_working_cpu(const Tensor& master, const Tensor& working) {
  host::dispatch_float(working.dtype(), kOp, [&]<typename W>() {
    const float* p = master.data<float>();
    W* out = working.data<W>();
    for (std::int64_t i = 0; i < master.numel(); ++i) out[i] = host::store<W>(static_cast<host::Acc<W>>(p[i]));
  });
}

Tensor step_cuda(const Tensor& master, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                 const cuda::AdamWScalars& scalars, const Tensor& working) {
  Tensor found = Tensor::empty({}, DType::kBool, master.device());
  ZT_CUDA_CHECK(cudaMemsetAsync(found.data_ptr(), 0, sizeof(bool), nullptr));
  cuda::adamw_find_non_finite(grad.data_ptr(), grad.dtype(), grad.numel(), found.data<bool>(), nullptr);
  cuda::adamw_update(master.data<float>(), exp_avg.data<float>(), exp_avg_sq.data<float>(), grad.data_ptr(),
                     grad.dtype(), working.defined() ? working.data_ptr() : nullptr,
                     working.defined() ? working.dtype() : DType::kF32, master.numel(), scalars, found.data<bool>(),
                     nullptr);
  return found;
}

}  // namespace

Tensor adamw_step(const Tensor& master, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad_in,
                  const AdamWConfig& config, const Tensor& working) {
  check_arguments(master, exp_avg, exp_avg_sq, grad_in, config, working);
  Tensor grad = grad_in.contiguous();
  cuda::AdamWScalars scalars = scalars_of(config);
  if (master.device().is_cuda()) return step_cuda(master, exp_avg, exp_avg_sq, grad, scalars, working);
  bool found = host::dispatch_float(grad.dtype(), kOp, [&]<typename G>() {
    if (any_non_finite(grad.data<G>(), grad.numel())) return true;
    update_cpu(master.data<float>(), exp_avg.data<float>(), exp_avg_sq.data<float>(), grad.data<G>(),
               master.numel(), scalars);
    return false;
  });
  if (!found && working.defined()) write_working_cpu(master, working);
  return Tensor::full({}, found ? 1.0 : 0.0, DType::kBool);
}

}  // namespace zt::ops
