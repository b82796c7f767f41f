#include "nuvec/lm/tokenizer/post_processor.h"

#include <limits>
#include <variant>

#include "nuvec/lm/overload.h"

namespace nuvec::lm::detail {

namespace {

int32_t read_id(const JsonField& field) {
  int64_t id = field.integer();
  if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
    field.fail("id out of range");
  }
  return static_cast<int32_t>(id);
}

// The single-text template: pieces that are either the text (empty ids) or a special token's ids.
struct TemplateProcessor {
  struct Piece {
    bool is_text;
    std::vector<int32_t> ids;
  };
  std::vector<Piece> single;

  std::vector<int32_t> apply(const std::vector<int32_t>& ids) const {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Piece& piece : single) {
      const std::vector<int32_t>& part = piece.is_text ? ids : piece.ids;
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }
};

// ByteLevel only trims offsets: the ids stay as they are.
struct ByteLevelProcessor {
  std::vector<int32_t> apply(std::vector<int32_t> ids) const { return ids; }
};

// BertProcessing and RobertaProcessing for a single text: [CLS] A [SEP], <s> A </s>.
struct SurroundProcessor {
  int32_t first;
  int32_t last;

  std::vector<int32_t> apply(std::vector<int32_t> ids) const {
    ids.insert(ids.begin(), first);
    ids.push_back(last);
    return ids;
  }
};

struct SequenceProcessor {
  std::vector<PostProcessor> processors;
};

TemplateProcessor read_template(const JsonField& field) {
  JsonField special_tokens = field["special_tokens"];
  JsonField single = field["single"];
  TemplateProcessor processor;
  for (size_t i = 0; i < single.size(); ++i) {
    JsonField piece = single.at(i);
    if (auto sequence = piece.find("Sequence")) {
      if (std::string id = (*sequence)["id"].string(); id != "A") {
        (*sequence)["id"].unsupported("the single-text template can only hold sequence A, got " + id);
      }
      processor.single.push_back({true, {}});
    } else if (auto special = piece.find("SpecialToken")) {
      std::string name = (*special)["id"].string();
      JsonField token = special_tokens[name];
      JsonField ids = token["ids"];
      TemplateProcessor::Piece part{false, {}};
      for (size_t j = 0; j < ids.size(); ++j) {
        part.ids.push_back(read_id(ids.at(j)));
      }
      processor.single.push_back(std::move(part));
    } else {
      piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return processor;
}

SurroundProcessor read_surround(const JsonField& field) {
  auto id_of = [&](std::string_view key) {
    JsonField pair = field[key];
    if (pair.size() != 2) {
      pair.fail("expected a pair [token, id]");
    }
    return read_id(pair.at(1));
  };
  return SurroundProcessor{id_of("cls"), id_of("sep")};
}

}  // namespace

struct PostProcessor::Impl {
  std::variant<TemplateProcessor, ByteLevelProcessor, SurroundProcessor, SequenceProcessor> kind;
};

PostProcessor::PostProcessor() = default;

PostProcessor PostProcessor::from_json(const JsonField& field) {
  PostProcessor processor;
  if (field.is_null()) {
    return processor;
  }
  std::string type = field["type"].string();
  auto make = [&](auto kind) {
    processor.impl_ = std::make_shared<Impl>(Impl{std::move(kind)});
    return processor;
  };
  if (type == "TemplateProcessing") {
    return make(read_template(field));
  }
  if (type == "ByteLevel") {
    return make(ByteLevelProcessor{});
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return make(read_surround(field));
  }
  if (type == "Sequence") {
    JsonField list = field["processors"];
    SequenceProcessor sequence;
    for (size_t i = 0; i < list.size(); ++i) {
      sequence.processors.push_back(from_json(list.at(i)));
    }
    return make(std::move(sequence));
  }
  field["type"].unsupported("unknown post-processor type '" + type + "'");
}

std::vector<int32_t> PostProcessor::add_special_tokens(std::vector<int32_t> ids) const {
  if (!impl_) {
    return ids;
  }
  return std::visit(Overload{[&](const TemplateProcessor& p) { return p.apply(std::move(ids)); },
                             [&](const ByteLevelProcessor& p) { return p.apply(std::move(ids)); },
                             [&](const SurroundProcessor& p) { return p.apply(std::move(ids)); },
                             [&](const SequenceProcessor& p) {
                               for (const PostProcessor& processor : p.processors) {
                                 ids = processor.add_special_tokens(std::move(ids));
                               }
                               return std::move(ids);
                             }},
                    impl_->kind);
}

}  // namespace nuvec::lm::detail
