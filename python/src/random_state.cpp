#include "python/src/random_state.h"

#include <string>

#include "nuvec/core/random.h"
#include "python/src/array_object.h"

namespace nuvec::python {

namespace {

/// The state's __setitem__: the key goes to the calling thread's key sequence, then into the list.
void set_key(const py::list& self, const py::handle& index, const py::handle& value) {
  if (!is_array(value)) {
    throw py::type_error("[random.state] The state holds the key, a uint32 array of shape (2,); given a " +
                         py::str(value.get_type().attr("__name__")).cast<std::string>() + ".");
  }
  random::KeySequence::default_().set_state(array_of(value));
  py::module_::import("builtins").attr("list").attr("__setitem__")(self, index, value);
}

py::list& state_list() {
  // Made once and never destroyed: Python objects must not be released after the interpreter ends.
  static auto* list = [] {
    auto builtins = py::module_::import("builtins");
    py::dict attributes;
    attributes["__module__"] = "nuvec.core.random";
    attributes["__doc__"] = "The global key in a list (mx.random.state): pass it to compile's inputs= and outputs=.";
    py::object cls = builtins.attr("type")("RandomState", py::make_tuple(builtins.attr("list")), attributes);
    cls.attr("__setitem__") = py::cpp_function(&set_key, py::is_method(cls), py::name("__setitem__"));
    return new py::list(cls(py::make_tuple(py::none())));
  }();
  return *list;
}

}  // namespace

void refresh_random_state() {
  // py::list's item assignment is the C API's, past the subclass's __setitem__: nothing goes back to the sequence.
  state_list()[0] = wrap(random::KeySequence::default_().state());
}

py::list random_state() {
  refresh_random_state();
  return state_list();
}

bool holds_random_state(const py::handle& tree) {
  if (tree.is(state_list())) {
    return true;
  }
  if (py::isinstance<py::list>(tree) || py::isinstance<py::tuple>(tree)) {
    for (auto item : tree) {
      if (holds_random_state(item)) {
        return true;
      }
    }
  } else if (py::isinstance<py::dict>(tree)) {
    for (auto item : tree.cast<py::dict>()) {
      if (holds_random_state(item.second)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace nuvec::python
