#include "python/src/dlpack.h"

#include <string>
#include <vector>

#include "nuvec/core/device.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

constexpr const char* capsule_name = "dltensor";
constexpr const char* used_capsule_name = "used_dltensor";

dl::DataType dl_dtype(Dtype dtype) {
  auto bits = static_cast<uint8_t>(size_of(dtype) * 8);
  if (dtype == bool_) {
    return {dl::kDLBool, 8, 1};
  }
  if (dtype == bfloat16) {
    return {dl::kDLBfloat, 16, 1};
  }
  if (is_complex(dtype)) {
    return {dl::kDLComplex, bits, 1};
  }
  if (is_floating(dtype)) {
    return {dl::kDLFloat, bits, 1};
  }
  return {is_unsigned(dtype) ? dl::kDLUInt : dl::kDLInt, bits, 1};
}

Dtype nuvec_dtype(dl::DataType t) {
  if (t.lanes != 1) {
    throw_invalid("[from_dlpack] Vector (multi-lane) dtypes are not supported.");
  }
  auto unknown = [&]() -> Dtype {
    throw_invalid(std::string("[from_dlpack] Unsupported DLPack dtype: code ")
                      .append(std::to_string(t.code))
                      .append(", ")
                      .append(std::to_string(t.bits))
                      .append(" bits."));
  };
  switch (t.code) {
    case dl::kDLBool:
      return bool_;
    case dl::kDLInt:
      return t.bits == 8 ? int8 : t.bits == 16 ? int16 : t.bits == 32 ? int32 : t.bits == 64 ? int64 : unknown();
    case dl::kDLUInt:
      return t.bits == 8 ? uint8 : t.bits == 16 ? uint16 : t.bits == 32 ? uint32 : t.bits == 64 ? uint64 : unknown();
    case dl::kDLFloat:
      return t.bits == 16 ? float16 : t.bits == 32 ? float32 : t.bits == 64 ? float64 : unknown();
    case dl::kDLBfloat:
      return t.bits == 16 ? bfloat16 : unknown();
    case dl::kDLComplex:
      return t.bits == 64 ? complex64 : unknown();
    default:
      return unknown();
  }
}

/// What a capsule nuvec produced owns: the array (which keeps the buffer) and the shape and strides DLPack points at.
struct Exported {
  dl::ManagedTensor managed{};
  array source;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  explicit Exported(array a) : source(std::move(a)) {}
};

void delete_exported(dl::ManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // A consumer renames the capsule and takes over the tensor; an unconsumed one is released here.
  if (PyCapsule_IsValid(capsule, capsule_name) != 0) {
    auto* managed = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(capsule, capsule_name));
    managed->deleter(managed);
  }
}

}  // namespace

py::capsule to_dlpack(const array& a) {
  eval_released(a);
  auto* exported = new Exported(a);
  exported->shape.assign(a.shape().begin(), a.shape().end());
  exported->strides.assign(a.strides().begin(), a.strides().end());
  auto& t = exported->managed.dl_tensor;
  t.data = a.raw_data();
  t.device = {dl::kDLCPU, 0};
  t.ndim = a.ndim();
  t.dtype = dl_dtype(a.dtype());
  t.shape = exported->shape.data();
  t.strides = exported->strides.data();
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&exported->managed, capsule_name, capsule_destructor);
  if (capsule == nullptr) {
    delete exported;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

array from_dlpack(py::handle obj) {
  py::object capsule = py::reinterpret_borrow<py::object>(obj);
  if (!PyCapsule_CheckExact(obj.ptr())) {
    if (py::hasattr(obj, "__dlpack_device__")) {
      auto device = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
      if (device.first != dl::kDLCPU && device.first != dl::kDLCUDAHost) {
        throw_invalid(std::string("[from_dlpack] Only CPU memory can be shared; got DLPack device type ")
                          .append(std::to_string(device.first))
                          .append("."));
      }
    }
    capsule = obj.attr("__dlpack__")();
  }
  if (PyCapsule_IsValid(capsule.ptr(), capsule_name) == 0) {
    throw_invalid("[from_dlpack] Expected an unconsumed \"dltensor\" capsule.");
  }
  auto* managed = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), capsule_name));
  const auto& t = managed->dl_tensor;
  Dtype dtype = nuvec_dtype(t.dtype);
  Shape shape(t.shape, t.shape + t.ndim);
  PyCapsule_SetName(capsule.ptr(), used_capsule_name);
  // The producer's deleter may release Python objects (NumPy's does), so it runs holding the GIL.
  auto release = [managed](void*) {
    if (managed->deleter != nullptr && Py_IsInitialized() != 0) {
      py::gil_scoped_acquire gil;
      managed->deleter(managed);
    }
  };
  char* base = static_cast<char*>(t.data) + t.byte_offset;
  bool row_major = true;
  int64_t extent = 1;  // elements from the first to one past the last
  if (t.strides != nullptr) {
    int64_t expected = 1;
    for (int axis = t.ndim; axis-- > 0;) {
      if (t.shape[axis] != 1 && t.strides[axis] != expected) {
        row_major = false;
      }
      if (t.strides[axis] < 0) {
        release(nullptr);
        throw_invalid("[from_dlpack] Negative strides are not supported.");
      }
      expected *= t.shape[axis];
      extent += (t.shape[axis] - 1) * t.strides[axis];
    }
  }
  if (row_major) {
    return array(base, std::move(shape), dtype, release);
  }
  // A strided view over the producer's memory: no copy either.
  array flat(base, Shape{static_cast<int>(extent)}, dtype, release);
  Strides strides(t.strides, t.strides + t.ndim);
  return as_strided(flat, std::move(shape), std::move(strides), 0);
}

void init_dlpack(py::module_& m, ArrayClass& cls) {
  cls.def(
         "__dlpack__", [](const array& a, const py::object& /*stream*/) { return to_dlpack(a); },
         py::arg("stream") = py::none(), "A DLPack capsule viewing the array's memory (evaluates it first).")
      .def("__dlpack_device__", [](const array&) { return py::make_tuple(static_cast<int>(dl::kDLCPU), 0); });
  m.def("from_dlpack", &from_dlpack, py::arg("x"),
        "An array sharing the memory of a DLPack object (a torch tensor, a NumPy array...) without a copy.");
}

}  // namespace nuvec::python
