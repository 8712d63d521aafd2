#include "ops/gemm/few_rows_product.h"

#include "runtime/device.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

thread_local FewRowsProducts few_rows_products = FewRowsProducts::kNone;

}  // namespace

FewRowsGemmScope::FewRowsGemmScope(FewRowsProducts products) : previous_(few_rows_products) {
  few_rows_products = products;
}

FewRowsGemmScope::~FewRowsGemmScope() { few_rows_products = previous_; }

}  // namespace zt::ops

namespace zt::ops::detail {
namespace {

bool asked(cuda::FewRowsOutput output, std::int64_t k, std::int64_t n) {
  switch (few_rows_products) {
    case FewRowsProducts::kNone:
      return false;
    case FewRowsProducts::kSwiglu:
      return output == cuda::FewRowsOutput::kSwiglu;
    case FewRowsProducts::kSwigluAndLongK:
      return output == cuda::FewRowsOutput::kSwiglu || (output == cuda::FewRowsOutput::kLinear && k > n);
    case FewRowsProducts::kAll:
      return true;
  }
  return false;
}

// The kernel's arguments for x times weight (+ bias) into `output`, y left unset; nullopt where
// it is not asked for in this scope or x, weight or bias have a shape or layout it cannot read.
std::optional<cuda::FewRowsGemmArgs> args_for(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                              cuda::FewRowsOutput output) {
  if (x.dim() != 2 || weight.dim() != 2 || !asked(output, x.size(1), weight.size(0)) || !x.device().is_cuda() ||
      x.size(0) == 0 || x.size(0) > cuda::kFewRowsGemmMaxRows)
    return std::nullopt;
  if (x.stride(1) != 1 || !weight.is_contiguous() || (bias.defined() && !bias.is_contiguous())) return std::nullopt;
  // linear_forward checks these before it asks; few_rows_qkv_rope's caller has not.
  const bool bias_fits = !bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0) &&
                                             bias.dtype() == x.dtype() && bias.device() == x.device());
  if (weight.size(1) != x.size(1) || weight.dtype() != x.dtype() || weight.device() != x.device() || !bias_fits)
    return std::nullopt;
  const std::int64_t rows = x.size(0), k = x.size(1), n = weight.size(0);
  return cuda::FewRowsGemmArgs{.rows = rows,
                               .in_features = k,
                               .out_features = n,
                               .x = x.data_ptr(),
                               .x_row_stride = rows == 1 ? k : x.stride(0),
                               .weight = weight.data_ptr(),
                               .bias = bias.defined() ? bias.data_ptr() : nullptr,
                               .dtype = x.dtype(),
                               .output = output};
}

// y for args (y allocated here), or nullopt where the kernel does not take them.
std::optional<Tensor> launched(cuda::FewRowsGemmArgs args, const Tensor& x) {
  if (!cuda::few_rows_gemm_takes(args)) return std::nullopt;
  const std::int64_t columns = args.output == cuda::FewRowsOutput::kSwiglu ? args.out_features / 2 : args.out_features;
  Tensor y = Tensor::empty({args.rows, columns}, x.dtype(), x.device());
  args.y = y.data_ptr();
  DeviceGuard guard(x.device().index);
  cuda::few_rows_gemm(args, current_stream());
  return y;
}

// The cache's tensors as the kernel reads them: on x's device, int64 positions and slots one per
// row, float32 frequencies, pools of x's dtype with whole heads; false where they are not.
bool cache_readable(const Tensor& x, const FewRowsQkvCache& c) {
  const std::int64_t rows = x.size(0);
  auto on_device = [&](const Tensor& t) { return t.defined() && t.device() == x.device() && t.is_contiguous(); };
  for (const Tensor* t : {&c.positions, &c.inv_freq, &c.slots, &c.key_pool, &c.value_pool})
    if (!on_device(*t)) return false;
  return c.positions.dtype() == DType::kI64 && c.positions.numel() == rows && c.slots.dtype() == DType::kI64 &&
         c.slots.numel() == rows && c.inv_freq.dtype() == DType::kF32 && c.key_pool.dim() == 4 &&
         c.key_pool.dtype() == x.dtype() && c.value_pool.shape() == c.key_pool.shape() &&
         c.value_pool.dtype() == x.dtype() && c.inv_freq.numel() * 2 == c.key_pool.size(3);
}

}  // namespace

std::optional<Tensor> few_rows_product(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                       cuda::FewRowsOutput output) {
  const std::optional<cuda::FewRowsGemmArgs> args = args_for(x, weight, bias, output);
  if (!args) return std::nullopt;
  return launched(*args, x);
}

}  // namespace zt::ops::detail

namespace zt::ops {

std::optional<Tensor> few_rows_qkv_rope(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                        const FewRowsQkvCache& cache) {
  std::optional<cuda::FewRowsGemmArgs> args = detail::args_for(x, weight, bias, cuda::FewRowsOutput::kRopeQkv);
  if (!args || !detail::cache_readable(x, cache)) return std::nullopt;
  const std::int64_t head_dim = cache.key_pool.size(3), kv_heads = cache.key_pool.size(2);
  if (weight.size(0) % head_dim != 0) return std::nullopt;
  args->rope = {.head_dim = head_dim,
                .q_heads = weight.size(0) / head_dim - 2 * kv_heads,
                .kv_heads = kv_heads,
                .positions = cache.positions.data<std::int64_t>(),
                .inv_freq = cache.inv_freq.data<float>(),
                .slots = cache.slots.data<std::int64_t>(),
                .key_pool = cache.key_pool.data_ptr(),
                .value_pool = cache.value_pool.data_ptr(),
                .num_slots = cache.key_pool.size(0) * cache.key_pool.size(1)};
  return detail::launched(*args, x);
}

}  // namespace zt::ops
