#pragma once

// A streamed completion: the tokens of a request's sequences, as they come from the scheduler, turned into
// server-sent events in OpenAI's chunk format (a chat choice opens with its role; each token's text, which the
// streaming detokenizer cuts only at whole UTF-8 characters, with its log-probabilities; each choice ends with its
// finish reason; an optional usage chunk; then "data: [DONE]"). With tools, the text goes through a ToolCallStream:
// what it holds back waits, and the calls it finds go out as delta.tool_calls.

#include <memory>
#include <string>
#include <vector>

#include "nuvec/serve/http_types.h"
#include "nuvec/serve/request_channel.h"
#include "nuvec/serve/request_log.h"
#include "nuvec/serve/response_json.h"
#include "nuvec/serve/tool_calls.h"

namespace nuvec::serve {

class CompletionStream : public BodyStream {
 public:
  /// `prefixes`: text each choice starts with (echo), none when empty; `record` is filled in as tokens come and
  /// `on_end` called once the stream ended or was cancelled.
  CompletionStream(std::shared_ptr<RequestChannel> channel, ResponseContext context, int choices,
                   std::vector<std::string> prefixes, int prompt_tokens, std::shared_ptr<RequestRecord> record,
                   std::function<void(const RequestRecord&)> on_end);
  ~CompletionStream() override;
  CompletionStream(const CompletionStream&) = delete;
  CompletionStream& operator=(const CompletionStream&) = delete;
  CompletionStream(CompletionStream&&) = delete;
  CompletionStream& operator=(CompletionStream&&) = delete;

  bool next(std::string& out, std::chrono::milliseconds wait) override;
  void cancel() override;

 private:
  void open(std::string& out);
  void add(const SequenceEvent& event, std::string& out);
  void close(std::string& out);
  void end();
  /// What cancel() does, also from the destructor (which must not call a virtual method).
  void stop();

  std::shared_ptr<RequestChannel> channel_;
  ResponseContext context_;
  int choices_;
  std::vector<std::string> prefixes_;
  int prompt_tokens_;
  int completion_tokens_ = 0;
  std::shared_ptr<RequestRecord> record_;
  std::function<void(const RequestRecord&)> on_end_;
  /// Per choice, with tools: its output's parser and how many calls it sent.
  std::vector<ToolCallStream> tool_parsers_;
  std::vector<int> calls_sent_;
  bool opened_ = false;
  bool done_ = false;
  bool ended_ = false;
};

}  // namespace nuvec::serve
