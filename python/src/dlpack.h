#pragma once

// DLPack (https://dmlc.github.io/dlpack/latest/c_api.html), the exchange format torch, NumPy and JAX share: the
// structs of its C ABI (version 0.x, the "dltensor" capsule) written from the specification, and nuvec's producer
// and consumer.

#include <cstdint>

#include "python/src/convert.h"

namespace nuvec::python {

namespace dl {

enum DeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum TypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means row-major contiguous
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

}  // namespace dl

/// A "dltensor" capsule viewing `a`'s memory (evaluated first); the capsule keeps the buffer alive.
py::capsule to_dlpack(const array& a);
/// An array sharing the memory of an object with __dlpack__ (or of a "dltensor" capsule), without a copy; the
/// producer's deleter runs when the last view goes.
array from_dlpack(py::handle obj);

}  // namespace nuvec::python
