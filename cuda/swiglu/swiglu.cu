// Elementwise over [rows, ffn] with rows of gate/up in_row_stride apart: a 2-D grid (columns
// of 16-byte vectors across x, rows across y, striding when rows exceed the grid) so no
// thread divides a flat index to find its row.
#include "cuda/swiglu/swiglu.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/programmatic_launch.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 128;
constexpr unsigned kMaxGridRows = 65535;

// One exp serves both silu(g) = g / (1 + e^-g) and sigmoid(g) = 1 / (1 + e^-g); the
// expressions are those of the CPU reference, so sharing it changes no bit.
__device__ __forceinline__ float exp_neg(float g) { return expf(-g); }

template <typename T, int W, bool kVector>
__global__ void __launch_bounds__(kThreads) swiglu_forward_kernel(const T* gate, const T* up, T* out, SwigluLayout l) {
  wait_for_prior_grids();  // launched after prior: in a decode step it follows the gate/up GEMM
  allow_next_grid_launch();
  const std::int64_t column = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * W;
  if (column >= l.ffn) return;
  for (std::int64_t r = blockIdx.y; r < l.rows; r += gridDim.y) {
    const std::int64_t at = r * l.in_row_stride + column;
    float g[W], u[W], y[W];
    load_elements<T, W, kVector>(gate + at, g);
    load_elements<T, W, kVector>(up + at, u);
#pragma unroll
    for (int i = 0; i < W; ++i) y[i] = round_through<T>(g[i] / (1.0f + exp_neg(g[i]))) * u[i];
    store_elements<T, W, kVector>(out + r * l.ffn + column, y);
  }
}

template <typename T, int W, bool kVector>
__global__ void __launch_bounds__(kThreads) swiglu_backward_kernel(const T* grad_out, const T* gate, const T* up,
                                                                   T* grad_gate, T* grad_up, T* out, SwigluLayout l) {
  const std::int64_t column = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * W;
  if (column >= l.ffn) return;
  for (std::int64_t r = blockIdx.y; r < l.rows; r += gridDim.y) {
    const std::int64_t at = r * l.in_row_stride + column;
    float g[W], u[W], dy[W], dg[W], du[W], y[W];
    load_elements<T, W, kVector>(gate + at, g);
    load_elements<T, W, kVector>(up + at, u);
    load_elements<T, W, kVector>(grad_out + r * l.ffn + column, dy);
#pragma unroll
    for (int i = 0; i < W; ++i) {
      float e = exp_neg(g[i]);
      float s = 1.0f / (1.0f + e);
      float silu = round_through<T>(g[i] / (1.0f + e));
      float grad_silu = round_through<T>(dy[i] * u[i]);
      du[i] = dy[i] * silu;
      dg[i] = grad_silu * (s * (1.0f + g[i] * (1.0f - s)));
      y[i] = silu * u[i];  // the forward's expression: silu is rounded the same way there
    }
    store_elements<T, W, kVector>(grad_up + at, du);
    store_elements<T, W, kVector>(grad_gate + at, dg);
    if (out != nullptr) store_elements<T, W, kVector>(out + r * l.ffn + column, y);
  }
}

// Whether every row of every pointer starts on a 16-byte boundary.
bool vectorizable(std::initializer_list<const void*> pointers, const SwigluLayout& l, std::size_t element_bytes) {
  for (const void* p : pointers)
    if (!is_aligned(p, 16)) return false;
  std::int64_t width = static_cast<std::int64_t>(16 / element_bytes);
  return l.ffn % width == 0 && l.in_row_stride % width == 0;
}

// Calls f.template operator()<W, kVector>() and launches on the grid that W implies.
template <typename T, typename F>
void with_width(bool vector, const SwigluLayout& l, F&& f) {
  auto grid = [&](int width) {
    std::int64_t columns = (l.ffn + static_cast<std::int64_t>(kThreads) * width - 1) / (kThreads * width);
    return dim3(static_cast<unsigned>(columns), static_cast<unsigned>(l.rows < kMaxGridRows ? l.rows : kMaxGridRows));
  };
  if (vector)
    f.template operator()<kVectorWidth<T>, true>(grid(kVectorWidth<T>));
  else
    f.template operator()<1, false>(grid(1));
}

}  // namespace

void swiglu_forward(const void* gate, const void* up, void* out, DType dtype, const SwigluLayout& layout,
                    cudaStream_t stream) {
  if (layout.rows == 0 || layout.ffn == 0) return;
  dispatch_float_type(dtype, "swiglu_forward", [&]<typename T>() {
    bool vector = vectorizable({gate, up, out}, layout, sizeof(T));
    with_width<T>(vector, layout, [&]<int W, bool kVector>(dim3 grid) {
      launch_after_prior(swiglu_forward_kernel<T, W, kVector>, grid, kThreads, 0, stream, static_cast<const T*>(gate),
                         static_cast<const T*>(up), static_cast<T*>(out), layout);
    });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(const void* grad_out, const void* gate, const void* up, void* grad_gate, void* grad_up, void* out,
                     DType dtype, const SwigluLayout& layout, cudaStream_t stream) {
  if (layout.rows == 0 || layout.ffn == 0) return;
  dispatch_float_type(dtype, "swiglu_backward", [&]<typename T>() {
    bool vector =
        vectorizable({grad_out, gate, up, grad_gate, grad_up, out != nullptr ? out : grad_out}, layout, sizeof(T));
    with_width<T>(vector, layout, [&]<int W, bool kVector>(dim3 grid) {
      swiglu_backward_kernel<T, W, kVector><<<grid, kThreads, 0, stream>>>(
          static_cast<const T*>(grad_out), static_cast<const T*>(gate), static_cast<const T*>(up),
          static_cast<T*>(grad_gate), static_cast<T*>(grad_up), static_cast<T*>(out), layout);
    });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
