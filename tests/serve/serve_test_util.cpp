#include "tests/serve/serve_test_util.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "nuvec/core/ops.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/load_model.h"
#include "tests/lm/model_test_util.h"

namespace nuvec::serve::test {

namespace fs = std::filesystem;

namespace {

nlohmann::json special_tokens() {
  nlohmann::json added = nlohmann::json::array();
  int id = 0;
  for (const char* content : {"<unk>", "<s>", "</s>"}) {
    added.push_back({{"id", id++},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  return added;
}

void write_tokenizer(const std::string& dir) {
  const std::vector<std::string> special = {"<unk>", "<s>", "</s>"};
  const std::vector<std::string> words = {"user", "assistant", "system"};
  const std::vector<std::string> multibyte = {"é", "日本", "🙂"};
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (const auto& list : {special, words}) {
    for (const std::string& w : list) {
      vocab[w] = id++;
    }
  }
  for (; id < 96 - static_cast<int>(multibyte.size()); ++id) {
    vocab[std::string("w").append(std::to_string(id))] = id;
  }
  for (const std::string& w : multibyte) {
    vocab[w] = id++;
  }
  const nlohmann::json tokenizer = {{"version", "1.0"},
                                    {"added_tokens", special_tokens()},
                                    {"normalizer", nullptr},
                                    {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                                    {"post_processor", nullptr},
                                    {"decoder", nullptr},
                                    {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
  std::ofstream(fs::path(dir) / "tokenizer.json") << tokenizer.dump();
  const std::string chat_template =
      "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
      "{% if add_generation_prompt %}assistant{% endif %}";
  std::ofstream(fs::path(dir) / "tokenizer_config.json")
      << nlohmann::json{{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"chat_template", chat_template}}.dump();
}

std::string write_model(const std::string& name, void (*write_tokenizer_files)(const std::string&),
                        uint64_t seed = 11) {
  const std::string dir = lm::test::fresh_dir(name);
  const nlohmann::json config = lm::test::tiny_config("llama");
  std::unordered_map<std::string, array> weights;
  for (auto& [name, value] : lm::test::random_weights(config, float32, seed)) {
    // Spread the logits: greedy choices then stay clear of ties that batching's float rounding could flip.
    weights.emplace(name, name == "lm_head.weight" ? value * 16.0F : value);
  }
  save_safetensors((fs::path(dir) / "model.safetensors").string(), weights);
  std::ofstream(fs::path(dir) / "config.json") << config.dump(2);
  write_tokenizer_files(dir);
  return dir;
}

/// The byte model's tokenizer: "<unk>", "<s>", "</s>", a quote, the byte tokens of "€" (E2 82 AC), then words;
/// a ByteFallback decoder joins byte tokens into characters.
void write_byte_tokenizer(const std::string& dir) {
  nlohmann::json vocab = {{"<unk>", 0},  {"<s>", 1},    {"</s>", 2},  {"\"", 3},
                          {"<0xE2>", 4}, {"<0x82>", 5}, {"<0xAC>", 6}};
  for (int id = 7; id < 96; ++id) {
    vocab[std::string("w").append(std::to_string(id))] = id;
  }
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", special_tokens()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}},
      {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
  std::ofstream(fs::path(dir) / "tokenizer.json") << tokenizer.dump();
  std::ofstream(fs::path(dir) / "tokenizer_config.json")
      << nlohmann::json{{"bos_token", "<s>"}, {"eos_token", "</s>"}}.dump();
}

std::string write_json_model() {
  const std::string dir = lm::test::fresh_dir("serve_json_model");
  nlohmann::json config = lm::test::tiny_config("llama");
  config["max_position_embeddings"] = 4096;
  // The tiny config's ids 1 and 2 would be characters here.
  const int end_id = 95;
  config["bos_token_id"] = end_id;
  config["eos_token_id"] = end_id;
  lm::test::write_hf_folder(dir, config, float32, 5);
  nlohmann::json vocab = nlohmann::json::object();
  for (char c = ' '; c <= '~'; ++c) {
    vocab[std::string(1, c)] = c - ' ';
  }
  vocab["<|end|>"] = end_id;
  const nlohmann::json end = {{"id", end_id},    {"content", "<|end|>"}, {"special", true},    {"single_word", false},
                              {"lstrip", false}, {"rstrip", false},      {"normalized", false}};
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", {end}},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", {{"type", "Fuse"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::ofstream(fs::path(dir) / "tokenizer.json") << tokenizer.dump();
  const nlohmann::json tokenizer_config = {{"eos_token", "<|end|>"},
                                           {"chat_template", "{% for m in messages %}{{ m['content'] }} {% endfor %}"}};
  std::ofstream(fs::path(dir) / "tokenizer_config.json") << tokenizer_config.dump();
  return dir;
}

const lm::LoadedModel& loaded_model() {
  static const lm::LoadedModel model = lm::load_model(chat_model_dir());
  return model;
}

}  // namespace

const std::string& chat_model_dir() {
  static const std::string dir = write_model("serve_chat_model", write_tokenizer);
  return dir;
}

const std::string& json_model_dir() {
  static const std::string dir = write_json_model();
  return dir;
}

JsonServer::JsonServer() { registry.add("json", lm::load_model(json_model_dir()), ModelOptions{}); }

const std::string& draft_model_dir() {
  static const std::string dir = write_model("serve_draft_model", write_tokenizer, 12);
  return dir;
}

const std::string& byte_model_dir() {
  static const std::string dir = write_model("serve_byte_model", write_byte_tokenizer);
  return dir;
}

TestServer::TestServer(SchedulerOptions scheduler, ApiOptions api_options, ModelOptions model)
    : api(registry, metrics, std::move(api_options), &log) {
  model.scheduler = scheduler;
  registry.add("tiny", loaded_model(), model);
}

HttpRequest post(const std::string& path, const nlohmann::json& body) {
  return HttpRequest{"POST", path, {{"content-type", "application/json"}}, body.dump(), {}};
}

HttpRequest get(const std::string& path) { return HttpRequest{"GET", path, {}, "", {}}; }

nlohmann::json body_json(HttpResponse& response) { return nlohmann::json::parse(read_body(response)); }

std::vector<nlohmann::json> sse_events(const std::string& body) {
  std::vector<nlohmann::json> events;
  const std::string done = "data: [DONE]\n\n";
  EXPECT_GE(body.size(), done.size());
  EXPECT_EQ(body.substr(body.size() - std::min(body.size(), done.size())), done) << body;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "an event does not end with a blank line: " << body.substr(at);
    if (end == std::string::npos) {
      break;
    }
    const std::string event = body.substr(at, end - at);
    EXPECT_EQ(event.rfind("data: ", 0), 0U) << event;
    const std::string data = event.substr(6);
    if (data != "[DONE]") {
      events.push_back(nlohmann::json::parse(data));
    }
    at = end + 2;
  }
  return events;
}

std::string run_command(const std::string& command) {
  std::string out;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return out;
  }
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    out.append(buffer.data(), n);
  }
  pclose(pipe);
  return out;
}

std::vector<std::string> assemble(const std::vector<nlohmann::json>& events, int choices) {
  std::vector<std::string> texts(static_cast<size_t>(choices));
  for (const nlohmann::json& event : events) {
    for (const nlohmann::json& choice : event.value("choices", nlohmann::json::array())) {
      const size_t index = choice["index"].get<size_t>();
      if (choice.contains("delta")) {
        texts.at(index) += choice["delta"].value("content", "");
      } else {
        texts.at(index) += choice["text"].get<std::string>();
      }
    }
  }
  return texts;
}

}  // namespace nuvec::serve::test
