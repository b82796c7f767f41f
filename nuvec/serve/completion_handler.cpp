#include "nuvec/serve/completion_handler.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/lm/constrain/json_constraint.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/completion_stream.h"
#include "nuvec/serve/response_json.h"
#include "nuvec/serve/tool_calls.h"

namespace nuvec::serve {

namespace {

/// How often a whole response's wait looks whether its client is still there.
constexpr std::chrono::milliseconds client_poll{100};

std::shared_ptr<ServedModel> find_model(ModelRegistry& registry, const std::optional<std::string>& name) {
  const std::string wanted = name.value_or("");
  if (auto model = registry.find(wanted)) {
    return model;
  }
  if (registry.is_loading(wanted)) {
    throw unavailable("The model " + (wanted.empty() ? std::string("") : "`" + wanted + "` ") +
                      "is still loading; retry shortly.");
  }
  if (wanted.empty()) {
    throw unavailable("No model is served.");
  }
  throw model_not_found(wanted);
}

/// The tools the prompt shows: none for tool_choice "none", only the named one for a named choice.
nlohmann::ordered_json prompt_tools(const ToolFields& fields) {
  switch (fields.choice) {
    case ToolChoice::none:
      return nullptr;
    case ToolChoice::named: {
      nlohmann::ordered_json named = nlohmann::ordered_json::array();
      for (const auto& tool : fields.tools) {
        if (tool["function"]["name"] == fields.function) {
          named.push_back(tool);
        }
      }
      return named;
    }
    case ToolChoice::automatic:
    case ToolChoice::required:
      return fields.tools;
  }
  return nullptr;
}

/// tool_choice "required" or a named function: the answer is held to one call by constrained decoding (vLLM's
/// way), written as the JSON object {"name": ..., "arguments": {...}} of one of the offered tools; null for "auto"
/// and "none", which leave the choice to the model.
std::shared_ptr<const lm::JsonSchema> forced_call_schema(const ToolFields& fields) {
  if (fields.choice != ToolChoice::required && fields.choice != ToolChoice::named) {
    return nullptr;
  }
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& tool : prompt_tools(fields)) {
    const auto& function = tool["function"];
    const nlohmann::json arguments =
        function.contains("parameters") ? nlohmann::json(function["parameters"]) : nlohmann::json{{"type", "object"}};
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", function["name"]}}}, {"arguments", arguments}}},
                     {"required", {"name", "arguments"}},
                     {"additionalProperties", false}});
  }
  try {
    return std::make_shared<const lm::JsonSchema>(
        lm::JsonSchema::compile(calls.size() == 1 ? calls[0] : nlohmann::json{{"anyOf", calls}}, false));
  } catch (const nuvec::error& e) {
    throw invalid_request(
        std::string("tool_choice asks for a call, which is decoded under the tools' parameter schemas: ")
            .append(e.what()),
        "tools");
  }
}

}  // namespace

lm::ChatTemplateOptions chat_template_options(const CompletionRequest& request) {
  lm::ChatTemplateOptions options;
  options.add_generation_prompt = true;
  options.extra = request.template_variables;
  options.tools = prompt_tools(request.tools);
  return options;
}

namespace {

/// The family of tool calls to parse out of the answer: the one the template rendering the prompt writes (the
/// tokenizer's "tool_use" template, when it has one, renders prompts with tools).
std::optional<ToolCallFormat> answer_tool_format(const ServedModel& model, const CompletionRequest& request) {
  if (request.endpoint != Endpoint::chat || prompt_tools(request.tools).is_null()) {
    return std::nullopt;
  }
  if (request.tools.choice == ToolChoice::required || request.tools.choice == ToolChoice::named) {
    // The constrained answer is one bare JSON call, as the Llama family writes it.
    return ToolCallFormat::llama_json;
  }
  const lm::Tokenizer& tokenizer = model.loaded.tokenizer;
  for (const auto& [name, source] : tokenizer.chat_templates()) {
    if (name == "tool_use") {
      return tool_call_format(source);
    }
  }
  return tool_call_format(tokenizer.chat_template());
}

/// The prompt the chat template makes of the messages, as token ids (the template writes the special tokens).
std::vector<int32_t> chat_prompt(const ServedModel& model, const CompletionRequest& request) {
  const lm::Tokenizer& tokenizer = model.loaded.tokenizer;
  if (tokenizer.chat_template().empty()) {
    throw invalid_request("The model `" + model.name + "` has no chat template; use /v1/completions.", "messages");
  }
  std::string text;
  try {
    text = tokenizer.apply_chat_template(request.messages, chat_template_options(request));
  } catch (const nuvec::error& e) {
    throw invalid_request(std::string("The chat template could not render the messages: ").append(e.what()),
                          "messages");
  }
  return tokenizer.encode(text, false);
}

/// Each prompt's ids and, for echo, its text.
std::vector<std::pair<std::vector<int32_t>, std::string>> build_prompts(const ServedModel& model,
                                                                        const CompletionRequest& request) {
  std::vector<std::pair<std::vector<int32_t>, std::string>> prompts;
  switch (request.endpoint) {
    case Endpoint::chat:
      prompts.emplace_back(chat_prompt(model, request), "");
      break;
    case Endpoint::completion:
      for (const PromptInput& input : request.prompts) {
        if (input.text) {
          prompts.emplace_back(model.loaded.tokenizer.encode(*input.text, true), *input.text);
          continue;
        }
        const int vocab = model.loaded.model->vocab_size();
        for (int32_t id : input.ids) {
          if (id >= vocab) {
            throw invalid_request("Token id " + std::to_string(id) + " in 'prompt' is outside the vocabulary of " +
                                      std::to_string(vocab) + " tokens.",
                                  "prompt");
          }
        }
        prompts.emplace_back(input.ids, request.echo ? model.loaded.tokenizer.decode(input.ids) : "");
      }
      break;
  }
  return prompts;
}

/// The completion's token budget: what the request asks, else the rest of the context; 400 past the context.
int token_budget(const ServedModel& model, const CompletionRequest& request, int prompt_tokens) {
  const char* param = request.endpoint == Endpoint::chat ? "messages" : "prompt";
  const std::string context = std::to_string(model.context);
  if (prompt_tokens == 0) {
    throw invalid_request("The prompt is empty: it has no tokens.", param);
  }
  if (prompt_tokens >= model.context) {
    throw invalid_request("This model's maximum context length is " + context + " tokens. However, your prompt has " +
                              std::to_string(prompt_tokens) +
                              " tokens, which leaves no room for the completion. Please reduce the length of the " +
                              param + ".",
                          param);
  }
  // The KV cache must hold the whole request by itself (the other requests wait or are preempted meanwhile).
  const std::string pool = std::to_string(model.kv_cache_tokens);
  if (prompt_tokens >= model.kv_cache_tokens) {
    throw invalid_request("This server's KV cache holds " + pool + " tokens for all requests together. However, your " +
                              "prompt has " + std::to_string(prompt_tokens) +
                              " tokens, which leaves no room for the completion. Please reduce the length of the " +
                              param + ".",
                          param);
  }
  const int room = std::min(model.context, model.kv_cache_tokens) - prompt_tokens;
  if (!request.max_tokens) {
    return model.max_tokens > 0 ? std::min(room, model.max_tokens) : room;
  }
  if (model.max_tokens > 0 && *request.max_tokens > model.max_tokens) {
    throw invalid_request("'max_tokens' is at most " + std::to_string(model.max_tokens) + " on this server; got " +
                              std::to_string(*request.max_tokens) + ".",
                          "max_tokens");
  }
  if (prompt_tokens + *request.max_tokens > model.context) {
    throw invalid_request("This model's maximum context length is " + context + " tokens. However, you requested " +
                              std::to_string(prompt_tokens + *request.max_tokens) + " tokens (" +
                              std::to_string(prompt_tokens) + " in the " + param + ", " +
                              std::to_string(*request.max_tokens) +
                              " in the completion). Please reduce the length of the " + param + " or completion.",
                          "max_tokens");
  }
  if (prompt_tokens + *request.max_tokens > model.kv_cache_tokens) {
    throw invalid_request("This server's KV cache holds " + pool + " tokens for all requests together. However, you " +
                              "requested " + std::to_string(prompt_tokens + *request.max_tokens) + " tokens (" +
                              std::to_string(prompt_tokens) + " in the " + param + ", " +
                              std::to_string(*request.max_tokens) +
                              " in the completion). Please reduce the length of the " + param + " or completion.",
                          "max_tokens");
  }
  return *request.max_tokens;
}

/// The request's sampling over the model's generation defaults (then OpenAI's: temperature 1).
lm::SamplingParams sampling_params(const ServedModel& model, const CompletionRequest& request) {
  const SamplingFields& given = request.sampling;
  const lm::GenerationConfig& defaults = model.loaded.generation;
  lm::SamplingParams p;
  p.temperature = given.temperature.value_or(defaults.temperature.value_or(1.0F));
  p.top_p = given.top_p.value_or(defaults.top_p.value_or(1.0F));
  p.top_k = given.top_k.value_or(defaults.top_k.value_or(0));
  p.min_p = given.min_p.value_or(defaults.min_p.value_or(0.0F));
  p.repetition_penalty = given.repetition_penalty.value_or(defaults.repetition_penalty.value_or(1.0F));
  p.presence_penalty = given.presence_penalty;
  p.frequency_penalty = given.frequency_penalty;
  p.logit_bias = given.logit_bias;
  p.top_logprobs = request.logprobs ? request.top_logprobs : 0;
  const int vocab = model.loaded.model->vocab_size();
  for (const auto& [id, bias] : p.logit_bias) {
    if (id >= vocab) {
      throw invalid_request("'logit_bias' names token id " + std::to_string(id) + ", outside the vocabulary of " +
                                std::to_string(vocab) + " tokens.",
                            "logit_bias");
    }
  }
  try {
    p.validate(vocab);
  } catch (const nuvec::error& e) {
    throw invalid_request(e.what());
  }
  return p;
}

/// A 400 unless the model's vocabulary can begin the document that `param` asks for (a vocabulary of whole words
/// may have no token that starts a JSON object).
void check_format_can_start(lm::TokenConstraint& constraint, int vocab, const std::string& param) {
  std::vector<uint8_t> mask(static_cast<size_t>(vocab));
  constraint.allowed(mask);
  if (std::find(mask.begin(), mask.end(), uint8_t{1}) == mask.end()) {
    throw invalid_request(
        "This model's vocabulary has no token that can begin the JSON document '" + param + "' asks for.", param);
  }
}

/// Every choice draws with its own key: the request's seed plus its index, or a fresh random seed.
uint64_t base_seed(const CompletionRequest& request) {
  if (request.sampling.seed) {
    return *request.sampling.seed;
  }
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine();
}

}  // namespace

HttpResponse collect_response(RequestChannel& channel, const ResponseContext& context, int choices,
                              const std::vector<std::string>& prefixes, int prompt_tokens, RequestRecord& record,
                              const std::function<bool()>& client_gone) {
  std::vector<ChoiceOutput> outputs(static_cast<size_t>(choices));
  std::string error;
  while (!channel.finished()) {
    if (client_gone && client_gone()) {
      channel.cancel();
      throw client_closed();
    }
    for (const SequenceEvent& event : channel.take(client_poll)) {
      if (event.error) {
        error = *event.error;
        continue;
      }
      if (!record.first_token_seconds) {
        record.first_token_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - record.start).count();
      }
      outputs[static_cast<size_t>(event.index)].add(event.response);
    }
  }
  if (!error.empty()) {
    throw internal_error(error);
  }
  Usage usage{prompt_tokens, 0};
  for (const ChoiceOutput& output : outputs) {
    usage.completion_tokens += static_cast<int>(output.tokens.size());
  }
  record.completion_tokens = usage.completion_tokens;
  nlohmann::json body = completion_body(context, outputs, usage, prefixes);
  record.finish_reason = body["choices"].empty() ? "" : body["choices"].back()["finish_reason"].get<std::string>();
  return json_response(200, body);
}

HttpResponse serve_completion(ModelRegistry& registry, const CompletionRequest& request,
                              const std::shared_ptr<RequestRecord>& record,
                              const std::function<void(const RequestRecord&)>& on_end,
                              const std::function<bool()>& client_gone) {
  const std::shared_ptr<ServedModel> model = find_model(registry, request.model);
  record->model = model->name;
  record->stream = request.stream;
  const auto prompts = build_prompts(*model, request);
  const lm::SamplingParams sampling = sampling_params(*model, request);
  const uint64_t seed = base_seed(request);
  const std::optional<ToolCallFormat> tool_format = answer_tool_format(*model, request);
  const std::shared_ptr<const lm::JsonSchema> call_schema =
      request.endpoint == Endpoint::chat ? forced_call_schema(request.tools) : nullptr;
  if (call_schema && request.response_schema) {
    throw invalid_request("'response_format' cannot be combined with a tool_choice that forces a call.",
                          "response_format");
  }
  const std::shared_ptr<const lm::JsonSchema> schema = call_schema ? call_schema : request.response_schema;
  if (schema && model->sharded) {
    // A constraint lives in rank 0's memory, where the other ranks' generators cannot follow it.
    throw invalid_request(std::string("Model '")
                              .append(model->name)
                              .append("' is sharded across ranks and takes no ")
                              .append(call_schema ? "tool_choice that forces a call." : "response_format schema."),
                          call_schema ? "tool_choice" : "response_format");
  }
  const std::shared_ptr<const lm::TokenTexts> token_texts =
      schema ? model->token_texts() : std::shared_ptr<const lm::TokenTexts>();

  GenerationJob job;
  std::vector<std::string> prefixes;
  int prompt_tokens = 0;
  for (const auto& [ids, text] : prompts) {
    prompt_tokens += static_cast<int>(ids.size());
    lm::GenerateOptions options;
    options.max_tokens = token_budget(*model, request, static_cast<int>(ids.size()));
    options.sampling = sampling;
    options.stop_strings = request.stop;
    // A family whose call marker is a special token needs it in the text to find the calls.
    options.skip_special_tokens = !tool_format || !needs_special_tokens(*tool_format);
    for (int i = 0; i < request.n; ++i) {
      options.sampling.seed = seed + job.prompts.size();
      if (schema) {
        // Each choice follows the schema from its own parse state.
        options.constraint = std::make_shared<lm::JsonConstraint>(schema, token_texts);
      }
      job.prompts.push_back(ids);
      job.options.push_back(options);
      if (request.echo) {
        prefixes.push_back(text);
      }
    }
  }
  if (schema) {
    check_format_can_start(*job.options.front().constraint, model->loaded.model->vocab_size(),
                           call_schema ? "tool_choice" : "response_format");
  }
  record->prompt_tokens = prompt_tokens;
  const int choices = static_cast<int>(job.prompts.size());
  auto channel = std::make_shared<RequestChannel>(choices);
  job.channel = channel;
  model->scheduler->submit(std::move(job));

  ResponseContext context{
      .endpoint = request.endpoint,
      .id = make_response_id(request.endpoint),
      .created =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
      .model = model->name,
      .tokenizer = &model->loaded.tokenizer,
      .logprobs = request.logprobs,
      .include_usage = request.include_usage,
      .tool_calls = tool_format,
      .parallel_tool_calls = request.tools.parallel};
  record->id = context.id;
  if (!request.stream) {
    return collect_response(*channel, context, choices, prefixes, prompt_tokens, *record, client_gone);
  }
  HttpResponse response;
  response.content_type = "text/event-stream";
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.stream = std::make_shared<CompletionStream>(channel, std::move(context), choices, std::move(prefixes),
                                                       prompt_tokens, record, on_end);
  return response;
}

}  // namespace nuvec::serve
