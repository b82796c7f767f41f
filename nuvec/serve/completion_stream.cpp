#include "nuvec/serve/completion_stream.h"

#include <utility>

#include "nuvec/serve/api_error.h"

namespace nuvec::serve {

CompletionStream::CompletionStream(std::shared_ptr<RequestChannel> channel, ResponseContext context, int choices,
                                   std::vector<std::string> prefixes, int prompt_tokens,
                                   std::shared_ptr<RequestRecord> record,
                                   std::function<void(const RequestRecord&)> on_end)
    : channel_(std::move(channel)),
      context_(std::move(context)),
      choices_(choices),
      prefixes_(std::move(prefixes)),
      prompt_tokens_(prompt_tokens),
      record_(std::move(record)),
      on_end_(std::move(on_end)) {
  if (context_.tool_calls) {
    tool_parsers_.assign(static_cast<size_t>(choices_), ToolCallStream(*context_.tool_calls));
    calls_sent_.assign(static_cast<size_t>(choices_), 0);
  }
}

CompletionStream::~CompletionStream() {
  // A stream dropped before its end (the connection failed) must not leave its sequences running.
  stop();
}

bool CompletionStream::next(std::string& out, std::chrono::milliseconds wait) {
  if (done_) {
    return false;
  }
  if (!opened_) {
    open(out);
    return true;
  }
  for (const SequenceEvent& event : channel_->take(wait)) {
    add(event, out);
  }
  if (channel_->finished()) {
    close(out);
    return false;
  }
  return true;
}

void CompletionStream::cancel() { stop(); }

void CompletionStream::stop() {
  channel_->cancel();
  if (!done_) {
    record_->error = "the client disconnected";
  }
  done_ = true;
  end();
}

void CompletionStream::open(std::string& out) {
  opened_ = true;
  for (int index = 0; index < choices_; ++index) {
    switch (context_.endpoint) {
      case Endpoint::chat:
        out.append(sse_event(role_chunk(context_, index)));
        break;
      case Endpoint::completion:
        if (!prefixes_.empty()) {
          out.append(sse_event(text_chunk(context_, index, prefixes_[index], {})));
        }
        break;
    }
  }
}

void CompletionStream::add(const SequenceEvent& event, std::string& out) {
  if (event.error) {
    record_->error = *event.error;
    out.append(sse_event(internal_error(*event.error).body()));
    return;
  }
  const lm::GenerationResponse& response = event.response;
  ++completion_tokens_;
  if (!record_->first_token_seconds) {
    record_->first_token_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - record_->start).count();
  }
  ParsedOutput parsed;
  if (context_.tool_calls) {
    ToolCallStream& parser = tool_parsers_[static_cast<size_t>(event.index)];
    parsed = parser.add(response.text);
    if (response.finish_reason) {
      ParsedOutput rest = parser.finish();
      parsed.content.append(rest.content);
      parsed.calls.insert(parsed.calls.end(), rest.calls.begin(), rest.calls.end());
    }
  } else {
    parsed.content = response.text;
  }
  if (!parsed.content.empty() || context_.logprobs) {
    out.append(sse_event(text_chunk(context_, event.index, parsed.content, {response})));
  }
  for (const ToolCall& call : parsed.calls) {
    int& sent = calls_sent_[static_cast<size_t>(event.index)];
    if (sent == 0 || context_.parallel_tool_calls) {
      out.append(sse_event(tool_call_chunk(context_, event.index, sent++, call)));
    }
  }
  if (response.finish_reason) {
    const bool called = context_.tool_calls && calls_sent_[static_cast<size_t>(event.index)] > 0;
    record_->finish_reason = called ? "tool_calls" : *response.finish_reason;
    out.append(sse_event(finish_chunk(context_, event.index, record_->finish_reason)));
  }
}

void CompletionStream::close(std::string& out) {
  if (context_.include_usage) {
    out.append(sse_event(usage_chunk(context_, Usage{prompt_tokens_, completion_tokens_})));
  }
  out.append(sse_done());
  done_ = true;
  end();
}

void CompletionStream::end() {
  if (ended_) {
    return;
  }
  ended_ = true;
  record_->completion_tokens = completion_tokens_;
  if (on_end_) {
    on_end_(*record_);
  }
}

}  // namespace nuvec::serve
