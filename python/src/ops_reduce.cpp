// Reductions, arg-reductions, softmax, sorting and cumulative ops. The reductions, arg-reductions and cumulative ops
// take the fast-call path (fast_function.h) as functions and as array methods, softmax and the sorts as functions.

#include "python/src/bindings.h"
#include "python/src/fast_function.h"

namespace nuvec::python {
namespace {

using Reduce = array (*)(const array&, const std::vector<int>&, bool, StreamOrDevice);
using ArgReduce = array (*)(const array&, int, bool, StreamOrDevice);
using ArgReduceAll = array (*)(const array&, bool, StreamOrDevice);

// The parameters after `a`, as the signatures spell them; the reductions are also array methods (a.sum(...)).
constexpr const char* reduce_parameters = "axis: Optional[Union[int, List[int]]] = None, keepdims: bool = False, *, ";
constexpr const char* arg_reduce_parameters = "axis: Optional[int] = None, keepdims: bool = False, *, ";

/// name(a, axis=None, keepdims=False, *, stream=None) and the method a.name(axis=None, keepdims=False, *, ...).
void def_reduce(py::module_& m, ArrayClass& cls, const char* name, Reduce fn) {
  auto body = [fn](const Arguments& args) {
    auto x = args.to_array(0);
    return wrap(fn(x, axes_or_all(args.to_axes(1), x), args.to_bool(2, false), args.to_stream(3)));
  };
  def_fast_both(m, cls, name, std::string(", ").append(reduce_parameters).append(stream_parameter), body);
}

void def_arg_reduce(py::module_& m, ArrayClass& cls, const char* name, ArgReduce fn, ArgReduceAll all) {
  auto body = [fn, all](const Arguments& args) {
    auto x = args.to_array(0);
    bool keepdims = args.to_bool(2, false);
    auto s = args.to_stream(3);
    return wrap(args.given(1) ? fn(x, args.to_int(1), keepdims, s) : all(x, keepdims, s));
  };
  def_fast_both(m, cls, name, std::string(", ").append(arg_reduce_parameters).append(stream_parameter), body);
}

using Sort = array (*)(const array&, int, StreamOrDevice);
using SortAll = array (*)(const array&, StreamOrDevice);

/// name(a, axis=-1, *, stream=None); axis=None sorts the flattened array.
void def_sort(py::module_& m, const char* name, Sort fn, SortAll all) {
  def_fast(m,
           std::string(name)
               .append("(a: object, axis: Optional[int] = -1, *, ")
               .append(stream_parameter)
               .append(") -> nuvec.core.array"),
           [fn, all](const Arguments& args) {
             auto x = args.to_array(0);
             auto axis = args.to_optional_int(1, -1);
             auto s = args.to_stream(2);
             return wrap(axis ? fn(x, *axis, s) : all(x, s));
           });
}

using Scan = array (*)(const array&, int, bool, bool, StreamOrDevice);
using ScanAll = array (*)(const array&, bool, bool, StreamOrDevice);

/// name(a, axis=None, *, reverse=False, inclusive=True, stream=None) and the array method; axis=None scans the
/// flattened array.
void def_scan(py::module_& m, ArrayClass& cls, const char* name, Scan fn, ScanAll all) {
  auto body = [fn, all](const Arguments& args) {
    auto x = args.to_array(0);
    bool reverse = args.to_bool(2, false);
    bool inclusive = args.to_bool(3, true);
    auto s = args.to_stream(4);
    return wrap(args.given(1) ? fn(x, args.to_int(1), reverse, inclusive, s) : all(x, reverse, inclusive, s));
  };
  def_fast_both(m, cls, name,
                std::string(", axis: Optional[int] = None, *, reverse: bool = False, inclusive: bool = True, ")
                    .append(stream_parameter),
                body);
}

}  // namespace

void init_ops_reduce(py::module_& m, ArrayClass& cls) {
  const std::pair<const char*, Reduce> reductions[] = {
      {"all", &nuvec::all},       {"any", &nuvec::any},
      {"sum", &nuvec::sum},       {"prod", &nuvec::prod},
      {"max", &nuvec::max},       {"min", &nuvec::min},
      {"mean", &nuvec::mean},     {"logsumexp", &nuvec::logsumexp},
      {"median", &nuvec::median}, {"count_nonzero", &nuvec::count_nonzero},
  };
  for (const auto& [name, fn] : reductions) {
    def_reduce(m, cls, name, fn);
  }
  for (const char* name : {"var", "std"}) {
    bool is_var = name[0] == 'v';
    auto body = [is_var](const Arguments& args) {
      auto x = args.to_array(0);
      auto axes = axes_or_all(args.to_axes(1), x);
      bool keepdims = args.to_bool(2, false);
      int ddof = args.to_int(3, 0);
      auto s = args.to_stream(4);
      return wrap(is_var ? var(x, axes, keepdims, ddof, s) : nuvec::std(x, axes, keepdims, ddof, s));
    };
    const char* parameters = "axis: Optional[Union[int, List[int]]] = None, keepdims: bool = False, ddof: int = 0, *, ";
    def_fast_both(m, cls, name, std::string(", ").append(parameters).append(stream_parameter), body);
  }
  def_arg_reduce(m, cls, "argmax", &nuvec::argmax, &nuvec::argmax);
  def_arg_reduce(m, cls, "argmin", &nuvec::argmin, &nuvec::argmin);
  def_fast(m,
           std::string("softmax(a: object, axis: Optional[Union[int, List[int]]] = None, *, precise: bool = False, ")
               .append(stream_parameter)
               .append(") -> nuvec.core.array"),
           [](const Arguments& args) {
             auto x = args.to_array(0);
             return wrap(softmax(x, axes_or_all(args.to_axes(1), x), args.to_bool(2, false), args.to_stream(3)));
           });

  def_sort(m, "sort", &nuvec::sort, &nuvec::sort);
  def_sort(m, "argsort", &nuvec::argsort, &nuvec::argsort);
  // partition, argpartition and topk: name(a, <k>: int, axis: Optional[int] = -1), None for the flattened array.
  struct Selection {
    const char* name;
    const char* k;  // the count's parameter name
    array (*fn)(const array&, int, int, StreamOrDevice);
    array (*all)(const array&, int, StreamOrDevice);
  };
  const Selection selections[] = {
      {"partition", "kth", &nuvec::partition, &nuvec::partition},
      {"argpartition", "kth", &nuvec::argpartition, &nuvec::argpartition},
      {"topk", "k", &nuvec::topk, &nuvec::topk},
  };
  for (const auto& selection : selections) {
    def_fast(m,
             std::string(selection.name)
                 .append("(a: object, ")
                 .append(selection.k)
                 .append(": int, axis: Optional[int] = -1, *, ")
                 .append(stream_parameter)
                 .append(") -> nuvec.core.array"),
             [selection](const Arguments& args) {
               auto x = args.to_array(0);
               int k = args.to_int(1);
               auto axis = args.to_optional_int(2, -1);
               auto s = args.to_stream(3);
               return wrap(axis ? selection.fn(x, k, *axis, s) : selection.all(x, k, s));
             });
  }
  m.def(
      "searchsorted",
      [](const py::object& a, const py::object& v, bool right, StreamOrDevice s) {
        return searchsorted(to_array(a), to_array(v), right, s);
      },
      py::arg("a"), py::arg("v"), py::kw_only(), py::arg("right") = false, py::arg("stream") = py::none());

  def_scan(m, cls, "cumsum", &nuvec::cumsum, &nuvec::cumsum);
  def_scan(m, cls, "cumprod", &nuvec::cumprod, &nuvec::cumprod);
  def_scan(m, cls, "cummax", &nuvec::cummax, &nuvec::cummax);
  def_scan(m, cls, "cummin", &nuvec::cummin, &nuvec::cummin);
  def_scan(m, cls, "logcumsumexp", &nuvec::logcumsumexp, &nuvec::logcumsumexp);
  m.def(
      "diff", [](const py::object& a, int n, int axis, StreamOrDevice s) { return diff(to_array(a), n, axis, s); },
      py::arg("a"), py::arg("n") = 1, py::arg("axis") = -1, py::kw_only(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
