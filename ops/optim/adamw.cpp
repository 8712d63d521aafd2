#include "ops/optim/adamw.h"

#include <cmath>
#include <string>

#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "ops/optim/adamw_scalars.h"
#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

// Names a parameter's tensor in messages: "master" for adamw_step, "params[3].master" for
// adamw_step_multi.
struct Namer {
  const char* op;
  std::string prefix;
  std::string operator()(const char* tensor) const { return prefix + tensor; }
};

void check_state(const Namer& name, const Tensor& t, const char* which, const Tensor& master) {
  std::string n = name(which), m = name("master");
  ZT_REQUIRE(t.dtype() == DType::kF32,
             std::string(name.op) + ": " + n + " must be float32, got " + dtype_name(t.dtype()));
  ZT_REQUIRE(t.is_contiguous(), std::string(name.op) + ": " + n +
                                    " is updated in place and must be contiguous; its shape is " +
                                    shape_str(t.shape()));
  check_same_shape(name.op, {n.c_str(), &t}, {m.c_str(), &master});
}

void check_16_or_32_bit(const Namer& name, const Tensor& t, const char* which) {
  DType d = t.dtype();
  ZT_REQUIRE(d == DType::kF32 || d == DType::kBF16 || d == DType::kF16,
             std::string(name.op) + ": " + name(which) + " must be float32, bfloat16 or float16, got " + dtype_name(d));
}

void check_param(const Namer& name, const AdamWParam& p) {
  std::string master = name("master"), exp_avg = name("exp_avg"), exp_avg_sq = name("exp_avg_sq");
  std::string grad = name("grad"), working = name("working");
  check_same_device(name.op, {{master.c_str(), &p.master},
                              {exp_avg.c_str(), &p.exp_avg},
                              {exp_avg_sq.c_str(), &p.exp_avg_sq},
                              {grad.c_str(), &p.grad}});
  check_state(name, p.master, "master", p.master);
  check_state(name, p.exp_avg, "exp_avg", p.master);
  check_state(name, p.exp_avg_sq, "exp_avg_sq", p.master);
  check_same_shape(name.op, {grad.c_str(), &p.grad}, {master.c_str(), &p.master});
  check_16_or_32_bit(name, p.grad, "grad");
  if (p.working.defined()) {
    check_same_device(name.op, {{master.c_str(), &p.master}, {working.c_str(), &p.working}});
    check_same_shape(name.op, {working.c_str(), &p.working}, {master.c_str(), &p.master});
    check_16_or_32_bit(name, p.working, "working");
    ZT_REQUIRE(p.working.is_contiguous(),
               std::string(name.op) + ": " + working + " is written in place and must be contiguous");
  }
}

float decay_factor_of(const AdamWParam& p, const AdamWConfig& c) {
  return static_cast<float>(1.0 - c.lr * p.weight_decay.value_or(c.hyperparameters.weight_decay));
}

template <typename G>
bool any_non_finite(const G* grad, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(host::load(grad[i]))) return true;
  return false;
}

// The kernel's float operations in the same order, so the two agree to the last bit
// (as long as the host compiler does not fuse multiply-adds, which x86-64 builds do not).
template <typename G>
void update_cpu(float* master, float* exp_avg, float* exp_avg_sq, const G* grad, std::int64_t n, float decay_factor,
                const cuda::AdamWScalars& s) {
  for (std::int64_t i = 0; i < n; ++i) {
    float g = host::load(grad[i]) / s.grad_scale;
    float p = master[i] * decay_factor;
    float m = s.beta1 * exp_avg[i] + s.one_minus_beta1 * g;
    float v = s.beta2 * exp_avg_sq[i] + s.one_minus_beta2 * (g * g);
    float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
    p = p - s.step_size * (m / denom);
    master[i] = p;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
  }
}

void write_working_cpu(const char* op, const Tensor& master, const Tensor& working) {
  host::dispatch_float(working.dtype(), op, [&]<typename W>() {
    const float* p = master.data<float>();
    W* out = working.data<W>();
    for (std::int64_t i = 0; i < master.numel(); ++i) out[i] = host::store<W>(static_cast<host::Acc<W>>(p[i]));
  });
}

Tensor step_cpu(const char* op, const std::vector<AdamWParam>& params, const std::vector<Tensor>& grads,
                const AdamWConfig& config) {
  for (const Tensor& grad : config.gradients_known_finite ? std::vector<Tensor>() : grads) {
    bool bad = host::dispatch_float(grad.dtype(), op,
                                    [&]<typename G>() { return any_non_finite(grad.data<G>(), grad.numel()); });
    if (bad) return Tensor::full({}, 1.0, DType::kBool);
  }
  cuda::AdamWScalars scalars = adamw_scalars(config);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const AdamWParam& p = params[i];
    host::dispatch_float(grads[i].dtype(), op, [&]<typename G>() {
      update_cpu(p.master.data<float>(), p.exp_avg.data<float>(), p.exp_avg_sq.data<float>(), grads[i].data<G>(),
                 p.master.numel(), decay_factor_of(p, config), scalars);
    });
    if (p.working.defined()) write_working_cpu(op, p.master, p.working);
  }
  return Tensor::full({}, 0.0, DType::kBool);
}

// The gradients stay referenced until the launches are queued; the caching allocator keeps
// a temporary's memory from reuse until the stream has passed it.
Tensor step_cuda(const std::vector<AdamWParam>& params, const std::vector<Tensor>& grads, const AdamWConfig& config) {
  std::vector<cuda::AdamWTensor> tensors;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const AdamWParam& p = params[i];
    cuda::AdamWTensor t;
    t.master = p.master.data<float>();
    t.exp_avg = p.exp_avg.data<float>();
    t.exp_avg_sq = p.exp_avg_sq.data<float>();
    t.grad = grads[i].data_ptr();
    t.grad_dtype = grads[i].dtype();
    t.working = p.working.defined() ? p.working.data_ptr() : nullptr;
    t.working_dtype = p.working.defined() ? p.working.dtype() : DType::kF32;
    t.n = p.master.numel();
    t.decay_factor = decay_factor_of(p, config);
    tensors.push_back(t);
  }
  Tensor found = Tensor::empty({}, DType::kBool, params[0].master.device());
  cuda::adamw_step_multi(tensors.data(), tensors.size(), adamw_scalars(config), !config.gradients_known_finite,
                         found.data<bool>(), current_stream());
  return found;
}

Tensor step(const char* op, const std::vector<AdamWParam>& params, const AdamWConfig& config, bool name_by_index) {
  check_adamw_config(op, config);
  if (params.empty()) return Tensor::full({}, 0.0, DType::kBool);
  std::vector<Tensor> grads;
  for (std::size_t i = 0; i < params.size(); ++i) {
    Namer name{op, name_by_index ? "params[" + std::to_string(i) + "]." : std::string()};
    check_param(name, params[i]);
    std::string first = "params[0].master", this_one = name("master");
    check_same_device(op, {{first.c_str(), &params[0].master}, {this_one.c_str(), &params[i].master}});
    grads.push_back(params[i].grad.contiguous());
  }
  if (params[0].master.device().is_cuda()) return step_cuda(params, grads, config);
  return step_cpu(op, params, grads, config);
}

}  // namespace

Tensor adamw_step(const Tensor& master, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                  const AdamWConfig& config, const Tensor& working) {
  return step("adamw_step", {AdamWParam{master, exp_avg, exp_avg_sq, grad, working, std::nullopt}}, config, false);
}

Tensor adamw_step_multi(const std::vector<AdamWParam>& params, const AdamWConfig& config) {
  return step("adamw_step_multi", params, config, true);
}

cuda::AdamWScalars adamw_scalars(const AdamWConfig& c) {
  auto step = static_cast<double>(c.step);
  cuda::AdamWScalars s;
  s.beta1 = static_cast<float>(c.hyperparameters.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - c.hyperparameters.beta1);
  s.beta2 = static_cast<float>(c.hyperparameters.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - c.hyperparameters.beta2);
  s.step_size = static_cast<float>(c.lr / (1.0 - std::pow(c.hyperparameters.beta1, step)));
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(c.hyperparameters.beta2, step)));
  s.eps = static_cast<float>(c.hyperparameters.eps);
  s.grad_scale = static_cast<float>(c.grad_scale);
  return s;
}

void check_adamw_config(const char* op, const AdamWConfig& config) {
  ZT_REQUIRE(config.step >= 1, std::string(op) + ": step counts from 1, got " + std::to_string(config.step));
  ZT_REQUIRE(config.grad_scale > 0.0 && std::isfinite(config.grad_scale),
             std::string(op) + ": grad_scale must be positive and finite, got " + std::to_string(config.grad_scale));
}

}  // namespace zt::ops
