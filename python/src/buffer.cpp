// The buffer protocol for nuvec.core.array: NumPy (np.asarray, np.array(copy=False)) and memoryview see nuvec's
// memory without a copy. Each exported view holds its own handle to the array, so the memory outlives any later
// rebinding of the Python object (a[...] = ...) for as long as the view exists.

#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

/// What one exported view owns: the array and its shape then its strides in bytes, held inline up to `inline_axes`
/// axes (one allocation per export, as np.asarray in a loop makes one each time).
class Exported {
 public:
  Exported(array source, size_t ndim) : source_(std::move(source)), heap_(ndim > inline_axes ? 2 * ndim : 0) {}

  [[nodiscard]] const array& source() const { return source_; }
  [[nodiscard]] Py_ssize_t* layout() { return heap_.empty() ? inline_.data() : heap_.data(); }

 private:
  static constexpr size_t inline_axes = 4;
  array source_;
  std::array<Py_ssize_t, 2 * inline_axes> inline_{};
  std::vector<Py_ssize_t> heap_;
};

const char* buffer_format(Dtype dtype) {
  switch (dtype.val) {
    case Dtype::Val::bool_:
      return "?";
    case Dtype::Val::uint8:
      return "B";
    case Dtype::Val::uint16:
      return "H";
    case Dtype::Val::uint32:
      return "I";
    case Dtype::Val::uint64:
      return "Q";
    case Dtype::Val::int8:
      return "b";
    case Dtype::Val::int16:
      return "h";
    case Dtype::Val::int32:
      return "i";
    case Dtype::Val::int64:
      return "q";
    case Dtype::Val::float16:
      return "e";
    case Dtype::Val::float32:
      return "f";
    case Dtype::Val::float64:
      return "d";
    case Dtype::Val::bfloat16:
      return nullptr;  // no buffer format exists for it
    case Dtype::Val::complex64:
      return "Zf";
  }
  return nullptr;
}

int get_buffer(PyObject* obj, Py_buffer* view, int flags) {
  try {
    // A handle of the view's own: the object may be rebound while the GIL is released below, or later.
    const array& held = array_of(obj);
    auto exported = std::make_unique<Exported>(held, static_cast<size_t>(held.ndim()));
    const array& a = exported->source();
    const char* format = buffer_format(a.dtype());
    if (format == nullptr) {
      throw py::buffer_error(
          "[array] bfloat16 arrays have no buffer format; convert them first, e.g. a.astype(mx.float32), or view the "
          "bits with a.view(mx.uint16).");
    }
    eval_released(a);
    bool needs_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    if (!needs_strides && !a.flags().row_contiguous) {
      throw py::buffer_error("[array] The array is not contiguous; ask for a strided buffer.");
    }
    const auto ndim = static_cast<size_t>(a.ndim());
    Py_ssize_t* shape = exported->layout();
    Py_ssize_t* strides = shape + ndim;
    for (size_t axis = 0; axis < ndim; ++axis) {
      shape[axis] = a.shape()[axis];
      strides[axis] = static_cast<Py_ssize_t>(a.strides()[axis] * static_cast<int64_t>(a.itemsize()));
    }
    static char empty = 0;  // a valid address for arrays without elements
    view->buf = a.size() == 0 || a.raw_data() == nullptr ? &empty : a.raw_data();
    view->obj = py::handle(obj).inc_ref().ptr();
    view->len = static_cast<Py_ssize_t>(a.nbytes());
    view->readonly = 0;
    view->itemsize = static_cast<Py_ssize_t>(a.itemsize());
    // Py_buffer's format is not const, but its readers never write to it.
    view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(format) : nullptr;
    view->ndim = a.ndim();
    view->shape = shape;
    view->strides = needs_strides ? strides : nullptr;
    view->suboffsets = nullptr;
    view->internal = exported.release();
    return 0;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  }
  view->obj = nullptr;
  return -1;
}

void release_buffer(PyObject* /*obj*/, Py_buffer* view) { delete static_cast<Exported*>(view->internal); }

}  // namespace

void init_buffer(ArrayClass& cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  type->tp_as_buffer->bf_getbuffer = get_buffer;
  type->tp_as_buffer->bf_releasebuffer = release_buffer;
  cls.def(
      "__array__",
      [](const array& a, const py::object& dtype) {
        // NumPy has no bfloat16: MLX raises rather than convert, so a silent float32 copy never stands in for a view.
        if (a.dtype() == bfloat16) {
          throw py::type_error(
              "[array] bfloat16 arrays cannot be converted to NumPy; convert them first, e.g. "
              "np.array(a.astype(mx.float32)), or view the bits with np.array(a.view(mx.uint16)).");
        }
        py::object out = py::module_::import("numpy").attr("asarray")(py::cast(a));
        return dtype.is_none() ? out : out.attr("astype")(dtype, py::arg("copy") = false);
      },
      py::arg("dtype") = py::none(), "A NumPy array sharing the array's memory (evaluates it first).");
}

}  // namespace nuvec::python
