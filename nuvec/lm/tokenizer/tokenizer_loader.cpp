// Loading a tokenizer from a tokenizer.json, a model folder or the text of the files.

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nuvec/core/error.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
#include "nuvec/lm/tokenizer/tokenizer_state.h"

namespace nuvec::lm {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw_error(ErrorKind::io, "cannot open " + path.string());
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw_error(ErrorKind::io, "cannot read " + path.string());
  }
  return text.str();
}

nlohmann::json parse(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw_invalid(source + ": not valid JSON: " + e.what());
  }
}

detail::TokenizerConfig read_config(std::string_view text, const std::string& source) {
  if (text.empty()) {
    return {};
  }
  nlohmann::json root = parse(text, source);
  return detail::TokenizerConfig::from_json(detail::JsonField(root, source));
}

Tokenizer build(std::string_view tokenizer_json, const std::string& source, detail::TokenizerConfig config) {
  nlohmann::json root = parse(tokenizer_json, source);
  return make_tokenizer(detail::build_state(root, source, std::move(config)));
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config) {
  return build(tokenizer_json, "tokenizer.json", read_config(tokenizer_config, "tokenizer_config.json"));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  detail::TokenizerConfig config;
  if (fs::path config_path = dir / "tokenizer_config.json"; fs::exists(config_path)) {
    config = read_config(read_text(config_path), config_path.string());
  }
  // A chat_template.jinja beside the files is the default template (newer transformers saves it there).
  if (fs::path jinja = dir / "chat_template.jinja"; fs::exists(jinja)) {
    auto& templates = config.chat_templates;
    std::erase_if(templates, [](const auto& entry) { return entry.first == "default"; });
    templates.insert(templates.begin(), {"default", read_text(jinja)});
  }
  return build(read_text(path), path, std::move(config));
}

Tokenizer Tokenizer::from_folder(const std::string& dir) {
  fs::path path = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(path)) {
    throw_error(ErrorKind::io, dir + ": no tokenizer.json in the folder");
  }
  return from_file(path.string());
}

Tokenizer Tokenizer::load(const std::string& path) {
  if (fs::is_directory(path)) {
    return from_folder(path);
  }
  if (fs::path(path).extension() == ".gguf") {
    return from_gguf(path);
  }
  return from_file(path);
}

}  // namespace nuvec::lm
