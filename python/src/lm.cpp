// nuvec._lm: the C++ lm library's loading and generation for nuvec.lm (mlx_lm's API, in python/nuvec/lm.py).
// A module of its own, so `import nuvec.core` does not load the tokenizer's and models' code paths.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/load_model.h"

namespace py = pybind11;

namespace nuvec::python {
namespace {

lm::GenerateOptions options_of(int max_tokens, float temp, float top_p, int top_k, std::optional<uint64_t> seed) {
  lm::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.sampling.temperature = temp;
  options.sampling.top_p = top_p;
  options.sampling.top_k = top_k;
  options.sampling.seed = seed;
  return options;
}

// mlx_lm's GenerationResponse fields (peak_memory in GB as mlx_lm reports it), plus the token's log-probability.
py::dict response_dict(const lm::GenerationResponse& r) {
  py::dict d;
  d["text"] = r.text;
  d["token"] = r.token;
  d["logprob"] = r.logprob;
  d["from_draft"] = r.from_draft;
  d["prompt_tokens"] = r.stats.prompt_tokens;
  d["prompt_tps"] = r.stats.prompt_tps;
  d["generation_tokens"] = r.stats.generation_tokens;
  d["generation_tps"] = r.stats.generation_tps;
  d["peak_memory"] = static_cast<double>(r.stats.peak_memory) / 1e9;
  d["finish_reason"] = r.finish_reason ? py::object(py::str(*r.finish_reason)) : py::object(py::none());
  return d;
}

}  // namespace
}  // namespace nuvec::python

PYBIND11_MODULE(_lm, m) {
  using namespace nuvec;
  using namespace nuvec::python;
  py::class_<lm::LoadedModel, std::shared_ptr<lm::LoadedModel>>(m, "LoadedModel")
      .def(
          "encode",
          [](const lm::LoadedModel& self, const std::string& text, bool add_special_tokens) {
            return self.tokenizer.encode(text, add_special_tokens);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const lm::LoadedModel& self, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            return self.tokenizer.decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def_property_readonly("eos_token_id", [](const lm::LoadedModel& self) { return self.tokenizer.eos_id(); })
      .def_property_readonly(
          "model_type", [](const lm::LoadedModel& self) { return self.config.value("model_type", std::string()); });
  m.def(
      "load",
      [](const std::string& path) {
        py::gil_scoped_release release;
        return std::make_shared<lm::LoadedModel>(lm::load_model(path));
      },
      py::arg("path"), "Loads a model folder or GGUF file: model, tokenizer and generation defaults.");
  m.def(
      "stream_generate",
      [](lm::LoadedModel& loaded, const std::vector<int32_t>& prompt, const py::function& callback, int max_tokens,
         float temp, float top_p, int top_k, std::optional<uint64_t> seed) {
        auto options = options_of(max_tokens, temp, top_p, top_k, seed);
        py::gil_scoped_release release;
        lm::stream_generate(loaded, prompt, options, [&](const lm::GenerationResponse& r) {
          py::gil_scoped_acquire acquire;
          return callback(response_dict(r)).cast<bool>();
        });
      },
      py::arg("loaded"), py::arg("prompt"), py::arg("callback"), py::arg("max_tokens"), py::arg("temp"),
      py::arg("top_p"), py::arg("top_k"), py::arg("seed"),
      "Generates from token ids, calling callback(response) with each token; it returns whether to go on.");
}
