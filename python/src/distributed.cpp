// nuvec.core.distributed: MLX's mlx.core.distributed (init, Group and the collectives as lazy ops).

#include "nuvec/distributed/distributed.h"
#include "nuvec/distributed/ops.h"
#include "python/src/bindings.h"

namespace nuvec::python {

void init_distributed(py::module_& parent) {
  auto m = parent.def_submodule(
      "distributed",
      "Communication between processes: a Group and the collectives over it (MPI under mpirun, the TCP ring under "
      "nuvec launch).");
  using distributed::Group;
  py::class_<Group>(m, "Group", "A group of processes that communicate; copies share the group.")
      .def("rank", &Group::rank, "This process's rank in the group.")
      .def("size", &Group::size, "The number of processes in the group.")
      .def("split", &Group::split, py::arg("color"), py::arg("key") = -1,
           "The processes with the same color form a new group, ranked by key (this group's rank when key < 0); "
           "every process of this group calls it.")
      .def_property_readonly("backend", &Group::backend, "\"none\", \"mpi\" or \"ring\".")
      .def("__repr__", [](const Group& g) {
        return "Group(rank=" + std::to_string(g.rank()) + ", size=" + std::to_string(g.size()) + ", backend='" +
               g.backend() + "')";
      });
  m.def("is_available", py::overload_cast<>(&distributed::is_available),
        "Whether a backend other than the single-process one is built in.");
  m.def(
      "init",
      [](bool strict, const std::string& backend) {
        py::gil_scoped_release release;  // joining waits for the other processes
        return distributed::init(strict, backend);
      },
      py::arg("strict") = false, py::arg("backend") = "any",
      "Joins the processes a launcher started and returns the group of all of them (a group of one process when "
      "none runs, unless strict).");

  using Collective = array (*)(const array&, std::optional<Group>, StreamOrDevice);
  const std::pair<const char*, Collective> collectives[] = {
      {"all_sum", &distributed::all_sum},
      {"all_gather", &distributed::all_gather},
      {"all_max", &distributed::all_max},
      {"all_min", &distributed::all_min},
      {"sum_scatter", &distributed::sum_scatter},
  };
  for (const auto& [name, fn] : collectives) {
    m.def(
        name,
        [fn](py::handle x, std::optional<Group> group, StreamOrDevice s) { return fn(to_array(x), group, s); },
        py::arg("x"), py::kw_only(), py::arg("group") = py::none(), py::arg("stream") = py::none());
  }
  m.def(
      "send",
      [](py::handle x, int dst, std::optional<Group> group, StreamOrDevice s) {
        return distributed::send(to_array(x), dst, group, s);
      },
      py::arg("x"), py::arg("dst"), py::kw_only(), py::arg("group") = py::none(), py::arg("stream") = py::none(),
      "Sends x to rank dst; the result must be evaluated for the message to go.");
  m.def(
      "recv",
      [](Shape shape, Dtype dtype, int src, std::optional<Group> group, StreamOrDevice s) {
        return distributed::recv(std::move(shape), dtype, src, group, s);
      },
      py::arg("shape"), py::arg("dtype"), py::arg("src"), py::kw_only(), py::arg("group") = py::none(),
      py::arg("stream") = py::none(), "An array of shape and dtype received from rank src.");
  m.def(
      "recv_like",
      [](py::handle x, int src, std::optional<Group> group, StreamOrDevice s) {
        return distributed::recv_like(to_array(x), src, group, s);
      },
      py::arg("x"), py::arg("src"), py::kw_only(), py::arg("group") = py::none(), py::arg("stream") = py::none(),
      "recv with x's shape and dtype.");
}

}  // namespace nuvec::python
