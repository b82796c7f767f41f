// nuvec._lm: the C++ lm library's loading and generation for nuvec.lm (mlx_lm's API, in python/nuvec/lm.py).
// A module of its own, so `import nuvec.core` does not load the tokenizer's and models' code paths.

#include <pybind11/stl.h>

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/chat_template.h"
#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/load_model.h"
#include "nuvec/lm/sample/logits_processors.h"
#include "python/src/array_object.h"

namespace nuvec::python {
namespace {

/// Logits (V) or (B, V) as (B, V), and whether they were one row.
std::pair<array, bool> as_rows(const array& logits, const char* op) {
  if (logits.ndim() != 1 && logits.ndim() != 2) {
    throw_invalid(std::string("[")
                      .append(op)
                      .append("] Expected logits of shape (V) or (B, V); got ")
                      .append(std::to_string(logits.ndim()))
                      .append(" dimensions."));
  }
  return {logits.ndim() == 1 ? reshape(logits, {1, logits.shape(0)}) : logits, logits.ndim() == 1};
}

/// mlx_lm's samplers (make_sampler): a token per row of `logits` (log-probabilities or logits) with these
/// parameters, each row drawing with a fresh key from nuvec's global random sequence as mlx_lm's draw from
/// mx.random's. Evaluated here, while the rows' samplers are alive.
array sample_rows(const lm::SamplingParams& params, const array& logits) {
  auto [rows2d, one_row] = as_rows(logits, "sampler");
  std::vector<lm::Sampler> samplers;
  samplers.reserve(static_cast<size_t>(rows2d.shape(0)));
  std::vector<lm::SamplingRow> rows;
  rows.reserve(samplers.capacity());
  for (int b = 0; b < rows2d.shape(0); ++b) {
    rows.push_back({&samplers.emplace_back(params, rows2d.shape(1))});
  }
  auto tokens = lm::sample(rows2d, rows).tokens;
  tokens.eval();
  return one_row ? reshape(tokens, {}) : tokens;
}

/// mlx_lm's logits processors (make_logits_processors): `logits` after the logit bias and the repetition penalty
/// over `tokens`, the ids so far (T), shared by every row, or (B, T).
array process_rows(const lm::SamplingParams& params, const array& tokens, const array& logits) {
  auto [rows2d, one_row] = as_rows(logits, "logits_processor");
  auto ids = astype(tokens.ndim() == 1 ? reshape(tokens, {1, tokens.shape(0)}) : tokens, int32);
  if (ids.ndim() != 2 || (ids.shape(0) != 1 && ids.shape(0) != rows2d.shape(0))) {
    throw_invalid("[logits_processor] Expected tokens of shape (T) or (B, T) for logits of shape " +
                  shape_string(rows2d.shape()) + "; got " + shape_string(tokens.shape()) + ".");
  }
  ids = contiguous(ids);
  ids.eval();
  std::vector<lm::Sampler> samplers;
  samplers.reserve(static_cast<size_t>(rows2d.shape(0)));
  std::vector<lm::SamplingRow> rows;
  const auto width = static_cast<size_t>(ids.shape(1));
  for (int b = 0; b < rows2d.shape(0); ++b) {
    const int32_t* row_ids = ids.data<int32_t>() + (ids.shape(0) == 1 ? 0 : static_cast<size_t>(b) * width);
    rows.push_back({&samplers.emplace_back(params, rows2d.shape(1)), {std::span(row_ids, width), {}}});
  }
  auto out = lm::process_logits(rows2d, rows);
  out.eval();
  return one_row ? reshape(out, {rows2d.shape(1)}) : out;
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

/// A Python callable that C++ code may copy and drop on threads without the GIL: its reference is released with the
/// GIL held.
std::shared_ptr<py::function> held(const py::function& f) {
  return {new py::function(f), [](py::function* p) {
            py::gil_scoped_acquire acquire;
            delete p;
          }};
}

/// What a Python hook returned, which must be an array.
array returned_array(const py::object& result, const char* hook) {
  if (!is_array(result)) {
    throw py::type_error(std::string("[stream_generate] ") + hook + " must return a nuvec array; got " +
                         py::str(py::type::of(result).attr("__name__")).cast<std::string>() + ".");
  }
  return array_of(result);
}

/// The generation's hooks calling Python's processors and sampler (with the GIL; their exceptions reach the caller).
lm::SamplingHooks python_hooks(const std::vector<py::function>& processors,
                               const std::optional<py::function>& sampler) {
  lm::SamplingHooks hooks;
  for (const py::function& processor : processors) {
    hooks.processors.emplace_back([f = held(processor)](const array& ids, const array& logits) {
      py::gil_scoped_acquire acquire;
      return returned_array((*f)(ids, logits), "a logits processor");
    });
  }
  if (sampler) {
    hooks.chooser = [f = held(*sampler)](const array& logprobs) {
      py::gil_scoped_acquire acquire;
      return returned_array((*f)(logprobs), "a sampler");
    };
  }
  return hooks;
}

}  // namespace
}  // namespace nuvec::python

PYBIND11_MODULE(_lm, m) {
  using namespace nuvec;
  using namespace nuvec::python;
  // Arrays pass as nuvec.core's objects (array_object.h), whose type this module finds there.
  set_array_type(py::module_::import("nuvec.core").attr("array"));
  py::class_<lm::StreamingDetokenizer>(m, "StreamingDetokenizer")
      .def("add", &lm::StreamingDetokenizer::add, py::arg("id"), "Adds an id; returns the text that became final.")
      .def("finish", &lm::StreamingDetokenizer::finish, "Returns the text held back and starts a new stream.");
  py::class_<lm::Tokenizer>(m, "Tokenizer")
      .def(
          "encode",
          [](const lm::Tokenizer& self, const std::string& text, bool add_special_tokens) {
            return self.encode(text, add_special_tokens);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const lm::Tokenizer& self, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            return self.decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def("detokenizer", &lm::Tokenizer::detokenizer, py::arg("skip_special_tokens") = false)
      .def("token_to_id", &lm::Tokenizer::token_to_id, py::arg("token"))
      .def("id_to_token", &lm::Tokenizer::id_to_token, py::arg("id"))
      .def(
          "token_bytes", [](const lm::Tokenizer& self, int32_t id) { return py::bytes(self.token_bytes(id)); },
          py::arg("id"))
      .def_property_readonly("vocab_size", &lm::Tokenizer::vocab_size)
      .def_property_readonly("bos_token", &lm::Tokenizer::bos_token)
      .def_property_readonly("bos_id", &lm::Tokenizer::bos_id)
      .def_property_readonly("eos_token", &lm::Tokenizer::eos_token)
      .def_property_readonly("eos_id", &lm::Tokenizer::eos_id)
      .def_property_readonly("eot_id", &lm::Tokenizer::eot_id)
      .def_property_readonly("chat_templates", &lm::Tokenizer::chat_templates)
      .def(
          "apply_chat_template",
          [](const lm::Tokenizer& self, const std::string& messages, const std::string& tools,
             const std::string& documents, bool add_generation_prompt, const std::string& extra,
             const std::string& template_name, const std::string& template_source) {
            lm::ChatTemplateOptions options;
            options.tools = nlohmann::ordered_json::parse(tools);
            options.documents = nlohmann::ordered_json::parse(documents);
            options.add_generation_prompt = add_generation_prompt;
            options.extra = nlohmann::ordered_json::parse(extra);
            const auto conversation = nlohmann::ordered_json::parse(messages);
            if (template_source.empty()) {
              return self.apply_chat_template(conversation, std::move(options), template_name);
            }
            options.bos_token = self.bos_token().value_or("");
            options.eos_token = self.eos_token().value_or("");
            return lm::ChatTemplate(template_source).render(conversation, options);
          },
          py::arg("messages"), py::arg("tools"), py::arg("documents"), py::arg("add_generation_prompt"),
          py::arg("extra"), py::arg("template_name"), py::arg("template_source"),
          "The chat template's prompt; the JSON arguments come as text (nuvec.lm's TokenizerWrapper writes them).");
  py::class_<lm::LoadedModel, std::shared_ptr<lm::LoadedModel>>(m, "LoadedModel")
      .def_property_readonly(
          "tokenizer", [](const lm::LoadedModel& self) -> const lm::Tokenizer& { return self.tokenizer; },
          py::return_value_policy::reference_internal)
      .def_property_readonly("eos_token_ids", [](const lm::LoadedModel& self) { return self.generation.eos_token_ids; })
      .def_property_readonly(
          "model_type", [](const lm::LoadedModel& self) { return self.config.value("model_type", std::string()); })
      .def(
          "parameters", [](const lm::LoadedModel& self) { return self.model->parameters(); },
          "The model's parameters as (dotted name, array) pairs: on a split model, this process's part.");
  m.def(
      "load",
      [](const std::string& path, std::optional<distributed::Group> group, bool pipeline) {
        std::optional<lm::Placement> placement;
        if (group) {
          placement = lm::Placement{*group, pipeline};
        }
        py::gil_scoped_release release;
        return std::make_shared<lm::LoadedModel>(lm::load_model(path, placement));
      },
      py::arg("path"), py::arg("group") = py::none(), py::arg("pipeline") = false,
      "Loads a model folder or GGUF file: model, tokenizer and generation defaults. With a group of several "
      "processes, each loads and computes its part: its slices of every layer (tensor parallel), or with pipeline "
      "its run of layers; every process reads only what it keeps.");
  // The sampling parameters, validated when made; nuvec.lm's samplers and logits processors hold them.
  py::class_<lm::SamplingParams>(m, "SamplingParams")
      .def(py::init([](float temperature, float top_p, float min_p, int min_tokens_to_keep, int top_k,
                       float repetition_penalty, int repetition_context_size, std::map<int32_t, float> logit_bias,
                       std::optional<uint64_t> seed) {
             lm::SamplingParams p;
             p.temperature = temperature;
             p.top_p = top_p;
             p.min_p = min_p;
             p.min_tokens_to_keep = min_tokens_to_keep;
             p.top_k = top_k;
             p.repetition_penalty = repetition_penalty;
             p.repetition_context_size = repetition_context_size;
             p.logit_bias = std::move(logit_bias);
             p.seed = seed;
             p.validate(std::numeric_limits<int>::max());  // logit_bias ids are checked against the vocabulary later
             return p;
           }),
           py::kw_only(), py::arg("temperature") = 0.0F, py::arg("top_p") = 1.0F, py::arg("min_p") = 0.0F,
           py::arg("min_tokens_to_keep") = 1, py::arg("top_k") = 0, py::arg("repetition_penalty") = 1.0F,
           py::arg("repetition_context_size") = 20, py::arg("logit_bias") = std::map<int32_t, float>(),
           py::arg("seed") = py::none())
      .def("sample", &sample_rows, py::arg("logits"), "A token per row of logits (V) or (B, V).")
      .def("process", &process_rows, py::arg("tokens"), py::arg("logits"),
           "The logits after the logit bias and the repetition penalty over the ids so far.");
  m.def(
      "stream_generate",
      [](lm::LoadedModel& loaded, const std::vector<int32_t>& prompt, const py::function& callback, int max_tokens,
         const lm::SamplingParams& sampling, const std::vector<py::function>& processors,
         const std::optional<py::function>& sampler) {
        lm::GenerateOptions options;
        options.max_tokens = max_tokens;
        options.sampling = sampling;
        options.hooks = python_hooks(processors, sampler);
        py::gil_scoped_release release;
        lm::stream_generate(loaded, prompt, options, [&](const lm::GenerationResponse& r) {
          py::gil_scoped_acquire acquire;
          return callback(response_dict(r)).cast<bool>();
        });
      },
      py::arg("loaded"), py::arg("prompt"), py::arg("callback"), py::arg("max_tokens"), py::arg("sampling"),
      py::arg("processors") = std::vector<py::function>(), py::arg("sampler") = py::none(),
      "Generates from token ids, calling callback(response) with each token; it returns whether to go on. "
      "processors(ids, logits) and sampler(logprobs) are the caller's own, called each step.");
}
