// Devices and streams: Device, DeviceType (nuvec.core.cpu, nuvec.core.gpu), Stream, the defaults, synchronize and
// the stream() context manager.

#include <memory>
#include <sstream>

#include "nuvec/core/matmul_precision.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

template <class T>
std::string printed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

/// `with nuvec.core.stream(s):` makes s (or a device's default stream) the default inside the block.
class StreamScope {
 public:
  explicit StreamScope(StreamOrDevice s) : target_(std::move(s)) {}
  void enter() { context_ = std::make_unique<StreamContext>(target_); }
  void exit() { context_.reset(); }

 private:
  StreamOrDevice target_;
  std::unique_ptr<StreamContext> context_;
};

}  // namespace

void init_device(py::module_& m) {
  py::enum_<Device::DeviceType>(m, "DeviceType")
      .value("cpu", Device::DeviceType::cpu)
      .value("gpu", Device::DeviceType::gpu);
  m.attr("cpu") = py::cast(Device::DeviceType::cpu);
  m.attr("gpu") = py::cast(Device::DeviceType::gpu);

  py::class_<Device>(m, "Device", "A device: its type and index.")
      .def(py::init<Device::DeviceType, int>(), py::arg("type"), py::arg("index") = 0)
      .def_readonly("type", &Device::type)
      .def_readonly("index", &Device::index)
      .def("__repr__", &printed<Device>)
      .def("__eq__", [](const Device& a, py::object b) {
        if (py::isinstance<Device::DeviceType>(b)) {
          return a == b.cast<Device::DeviceType>();
        }
        return py::isinstance<Device>(b) && a == b.cast<Device>();
      })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; });
  py::implicitly_convertible<Device::DeviceType, Device>();

  py::class_<Stream>(m, "Stream", "A queue of work on one device.")
      .def_readonly("device", &Stream::device)
      .def_readonly("index", &Stream::index)
      .def("__repr__", &printed<Stream>)
      .def("__eq__", [](const Stream& a, py::object b) { return py::isinstance<Stream>(b) && a == b.cast<Stream>(); })
      .def("__hash__", [](const Stream& s) { return s.index; });
  py::class_<ThreadLocalStream, Stream>(m, "ThreadLocalStream");

  m.def("default_device", &default_device, "The device ops run on when given none.");
  m.def("set_default_device", &set_default_device, py::arg("device"));
  m.def("is_available", &is_available, py::arg("device"), "Whether the device exists on this machine.");
  m.def("device_count", &device_count, py::arg("device_type"));
  m.def("device_info", [](const Device& d) { return device_info(d); }, py::arg("device") = default_device());
  m.def(
      "set_float32_matmul_precision", [](const std::string& precision) { set_float32_matmul_precision(precision); },
      py::arg("precision"),
      "'highest' (default), 'high' or 'medium', as torch.set_float32_matmul_precision: under 'high' quantized "
      "products carry float32 rows with 16 bits, under 'medium' with GGUF block weights 8 bits per 32 values.");
  m.def("get_float32_matmul_precision", &get_float32_matmul_precision);
  m.def("default_stream", &default_stream, py::arg("device"));
  m.def("set_default_stream", &set_default_stream, py::arg("stream"));
  m.def("new_stream", &new_stream, py::arg("device"));
  m.def(
      "synchronize",
      [](std::optional<Stream> s) {
        py::gil_scoped_release release;
        if (s) {
          synchronize(*s);
        } else {
          synchronize();
        }
      },
      py::arg("stream") = py::none(), "Waits for the work handed to async_eval (on the stream) to finish.");

  py::class_<StreamScope>(m, "StreamContext")
      .def(py::init<StreamOrDevice>(), py::arg("s"))
      .def("__enter__", [](StreamScope& scope) { scope.enter(); })
      .def("__exit__", [](StreamScope& scope, const py::args&) { scope.exit(); });
  m.def(
      "stream", [](StreamOrDevice s) { return StreamScope(std::move(s)); }, py::arg("s"),
      "A context manager making the stream (or the device's default stream) the default inside its block.");
}

}  // namespace nuvec::python
