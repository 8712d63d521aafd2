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
      return output == cuda::FewRowsOutput::kSwiglu || k > n;
    case FewRowsProducts::kAll:
      return true;
  }
  return false;
}

}  // namespace

std::optional<Tensor> few_rows_product(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                       cuda::FewRowsOutput output) {
  if (x.dim() != 2 || weight.dim() != 2 || !asked(output, x.size(1), weight.size(0)) || !x.device().is_cuda() ||
      x.size(0) == 0 || x.size(0) > cuda::kFewRowsGemmMaxRows)
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
