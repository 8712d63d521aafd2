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

std::optional<Tensor> few_rows_product(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                       cuda::FewRowsOutput output) {
  const bool asked = few_rows_products == FewRowsProducts::kAll ||
                     (few_rows_products == FewRowsProducts::kSwiglu && output == cuda::FewRowsOutput::kSwiglu);
  if (!asked || !x.device().is_cuda() || x.dim() != 2 || x.size(0) == 0 || x.size(0) > cuda::kFewRowsGemmMaxRows)
    return std::nullopt;
  if (x.stride(1) != 1 || !weight.is_contiguous() || (bias.defined() && !bias.is_contiguous())) return std::nullopt;
  const std::int64_t rows = x.size(0), k = x.size(1), n = weight.size(0);
  cuda::FewRowsGemmArgs args{.rows = rows,
                             .in_features = k,
                             .out_features = n,
                             .x = x.data_ptr(),
                             .x_row_stride = rows == 1 ? k : x.stride(0),
                             .weight = weight.data_ptr(),
                             .bias = bias.defined() ? bias.data_ptr() : nullptr,
                             .dtype = x.dtype(),
                             .output = output};
  if (!cuda::few_rows_gemm_takes(args)) return std::nullopt;
  Tensor y = Tensor::empty({rows, output == cuda::FewRowsOutput::kSwiglu ? n / 2 : n}, x.dtype(), x.device());
  args.y = y.data_ptr();
  DeviceGuard guard(x.device().index);
  cuda::few_rows_gemm(args, current_stream());
  return y;
}

}  // namespace zt::ops::detail
