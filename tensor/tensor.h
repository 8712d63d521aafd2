// Tensor: a typed, strided view of shared storage on one device, with c10's semantics —
// views share storage and differ in shape, strides and offset; copies are explicit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/device.h"
#include "runtime/dtype.h"

namespace zt {

using Shape = std::vector<std::int64_t>;

std::string shape_str(const Shape& shape);  // "[2, 3]"
std::int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

// Bytes on one device. The deleter returns them to whoever gave them (allocator, mmap, user).
class Storage {
 public:
  // Device memory comes from the caching allocator for use on `stream`.
  static std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device, cudaStream_t stream = nullptr);
  // Page-locked host memory, so host<->device copies from it can run asynchronously.
  static std::shared_ptr<Storage> allocate_pinned(std::size_t nbytes);
  // Wraps memory owned elsewhere; `keep_alive` is released when the last view goes.
  static std::shared_ptr<Storage> wrap(void* data, std::size_t nbytes, Device device, std::shared_ptr<void> keep_alive);
  Storage(void* data, std::size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  std::size_t nbytes_;
  Device device_;
  std::function<void(void*)> deleter_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // ---- factories (contents from the Philox stream where random) ----
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  // On a GPU, memory to be used on `stream` (the caching allocator reuses it in that order).
  static Tensor empty(const Shape& shape, DType dtype, Device device, cudaStream_t stream);
  static Tensor empty_pinned(const Shape& shape, DType dtype);  // CPU, page-locked
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype, Device device = Device::cpu());
  static Tensor arange(std::int64_t end, DType dtype = DType::kI64, Device device = Device::cpu());
  static Tensor arange(double start, double end, double step, DType dtype, Device device = Device::cpu());
  // Uniform in [low, high) and normal(mean, std): element i is philox element (seed, offset, i).
  static Tensor uniform(const Shape& shape, std::uint64_t seed, std::uint64_t offset, double low = 0.0,
                        double high = 1.0, DType dtype = DType::kF32, Device device = Device::cpu());
  static Tensor normal(const Shape& shape, std::uint64_t seed, std::uint64_t offset, double mean = 0.0,
                       double std = 1.0, DType dtype = DType::kF32, Device device = Device::cpu());
  // Copies host values into a new CPU tensor of `dtype` (cast from double).
  static Tensor from_values(const std::vector<double>& values, const Shape& shape, DType dtype);
  // A view of memory owned elsewhere (mmap'ed file, user buffer); no copy.
  static Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device, std::shared_ptr<void> keep_alive);

  // ---- metadata ----
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t size(std::int64_t dim) const;
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t storage_offset() const { return offset_; }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const;
  bool is_contiguous() const;
  bool is_pinned() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  void* data_ptr() const;  // address of element 0 (after the storage offset)
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }

  // ---- views (share storage) ----
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor view(const Shape& shape) const;     // needs compatible strides, else throws
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor permute(const std::vector<std::int64_t>& order) const;
  Tensor expand(const Shape& shape) const;  // size-1 dims broadcast with stride 0
  Tensor squeeze(std::int64_t dim) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor flatten() const { return reshape({numel()}); }
  // `parts` stored one after another in one storage (each contiguous, of one dtype and one
  // shape past dim 0) as one view [their dim-0 sizes summed, ...]: a model that allocated its
  // q, k and v weights together multiplies by them at once. nullopt when they are not so
  // stored (one of them replaced, loaded elsewhere, or a part empty).
  static std::optional<Tensor> adjacent_rows(const std::vector<Tensor>& parts);

  // ---- copies ----
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;
  // Returns *this when nothing changes, as torch does; otherwise a new contiguous tensor.
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  // Copies src into *this (shapes equal, any devices/dtypes/strides). With a stream the copy
  // is queued on it and returns at once; host memory must then be pinned to be asynchronous.
  void copy_from(const Tensor& src);
  void copy_from_async(const Tensor& src, cudaStream_t stream);
  void fill_(double value);
  void zero_() { fill_(0.0); }

  // ---- host access (any device; copies to the host) ----
  std::vector<double> to_vector() const;
  double item() const;                                  // the single element
  std::string str(std::int64_t max_per_dim = 6) const;  // torch-like printing

 private:
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, std::int64_t offset, DType dtype);
  Tensor make_view(Shape shape, Shape strides, std::int64_t offset) const;
  std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim_plus = 0) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  std::int64_t offset_ = 0;
  DType dtype_ = DType::kF32;
};

// While enabled, new GPU tensors start filled with 0xFF bytes (NaN in every float dtype),
// so a kernel that leaves part of its output unwritten fails its test instead of passing
// on stale memory.
void set_poison_new_device_tensors(bool enabled);

// Test helpers: elementwise |a-b| <= atol + rtol*|b|; ‖a−b‖/‖b‖. Both compare as float64.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
double relative_error(const Tensor& a, const Tensor& b);
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace zt
