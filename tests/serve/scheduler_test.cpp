// The scheduler behind the API, without sockets: concurrent greedy streams batched together give the texts the same
// requests give one at a time, also when a KV cache too small for all of them preempts some; a full queue answers 429
// with Retry-After; a cancelled stream (a client that went away) leaves the batch at once and frees its place.

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json stream_request(const std::string& prompt, int max_tokens) {
  return {{"prompt", prompt},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"stream", true},
          {"logit_bias", {{"2", -100}}}};
}

/// Reads a stream until its first token's text arrives.
void read_until_first_token(HttpResponse& response) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (out.find("\"text\":\"") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(response.stream->next(out, 100ms)) << out;
  }
}

/// Streams each prompt's greedy completion one at a time, then all at once from their own threads, and expects the
/// same texts.
void expect_together_equal_alone(test::TestServer& server, const std::vector<std::string>& prompts) {
  std::vector<std::string> alone;
  for (const std::string& prompt : prompts) {
    HttpResponse response = server.api.handle(test::post("/v1/completions", stream_request(prompt, 24)));
    alone.push_back(test::assemble(test::sse_events(read_body(response)), 1)[0]);
  }
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i) {
    clients.emplace_back([&, i] {
      HttpResponse response = server.api.handle(test::post("/v1/completions", stream_request(prompts[i], 24)));
      together[i] = test::assemble(test::sse_events(read_body(response)), 1)[0];
    });
  }
  for (std::thread& client : clients) {
    client.join();
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_FALSE(alone[i].empty());
    EXPECT_EQ(together[i], alone[i]) << prompts[i];
  }
}

TEST(Scheduler, ConcurrentGreedyStreamsEqualTheSameRequestsOneAtATime) {
  test::TestServer server(SchedulerOptions{.parallel = 4, .max_queue = 16});
  const std::vector<std::string> prompts = {"w10 w11", "w20", "w30 w31 w32 w33", "w40 w41 w42", "w50", "w60 w61"};
  expect_together_equal_alone(server, prompts);
}

TEST(Scheduler, StreamsPreemptedWhenTheKVCacheRunsOutEqualTheSameRequestsAlone) {
  // Three blocks of 16 positions: each request fits alone, four together do not.
  test::TestServer server(SchedulerOptions{.parallel = 4, .max_queue = 16, .kv_cache_tokens = 48});
  const std::vector<std::string> prompts = {"w10 w11", "w20", "w30 w31 w32 w33", "w40 w41 w42"};
  expect_together_equal_alone(server, prompts);
  const std::string metrics = server.api.handle(test::get("/metrics")).body;
  const std::string counter = "nuvec_num_preemptions_total{model=\"tiny\"} ";
  const size_t at = metrics.find(counter);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GT(std::stoi(metrics.substr(at + counter.size())), 0) << metrics;
  EXPECT_NE(metrics.find("nuvec_kv_cache_usage_perc{model=\"tiny\"} 0\n"), std::string::npos) << metrics;
}

TEST(Scheduler, AFullQueueAnswers429WithRetryAfter) {
  test::TestServer server(SchedulerOptions{.parallel = 1, .max_queue = 1});
  HttpResponse running = server.api.handle(test::post("/v1/completions", stream_request("w10", 250)));
  ASSERT_EQ(running.status, 200);
  read_until_first_token(running);
  HttpResponse waiting = server.api.handle(test::post("/v1/completions", stream_request("w11", 250)));
  ASSERT_EQ(waiting.status, 200);
  HttpResponse refused = server.api.handle(test::post("/v1/completions", stream_request("w12", 5)));
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(json::parse(refused.body)["error"]["code"], "queue_full");
  ASSERT_EQ(refused.headers.size(), 1U);
  EXPECT_EQ(refused.headers[0].first, "Retry-After");
  running.stream->cancel();
  waiting.stream->cancel();
}

TEST(Scheduler, ACancelledStreamFreesItsPlaceAtOnce) {
  test::TestServer server(SchedulerOptions{.parallel = 1, .max_queue = 4});
  HttpResponse first = server.api.handle(test::post("/v1/completions", stream_request("w10", 250)));
  read_until_first_token(first);
  first.stream->cancel();
  // The next request gets the only place and finishes; the cancelled one generated few of its 250 tokens.
  HttpResponse second =
      server.api.handle(test::post("/v1/completions", {{"prompt", "w20"}, {"max_tokens", 3}, {"temperature", 0}}));
  ASSERT_EQ(second.status, 200);
  EXPECT_EQ(test::body_json(second)["usage"]["completion_tokens"], 3);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!server.registry.idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(server.registry.idle());
  const std::string metrics = server.api.handle(test::get("/metrics")).body;
  EXPECT_NE(metrics.find("nuvec_requests_running{model=\"tiny\"} 0\n"), std::string::npos) << metrics;
  const size_t at = metrics.find("nuvec_generation_tokens_total{model=\"tiny\"} ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stoi(metrics.substr(at + 44)), 100) << "the cancelled stream kept generating";
}

TEST(Scheduler, ShutdownEndsRunningStreamsWithAnErrorEventAndDone) {
  test::TestServer server(SchedulerOptions{.parallel = 2, .max_queue = 4});
  HttpResponse running = server.api.handle(test::post("/v1/completions", stream_request("w10", 250)));
  read_until_first_token(running);
  server.registry.stop_accepting();
  EXPECT_EQ(server.api.handle(test::post("/v1/completions", stream_request("w11", 5))).status, 503);
  server.registry.shutdown("The server is shutting down.");
  const auto events = test::sse_events(read_body(running));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["error"]["message"], "The server is shutting down.");
}

}  // namespace
}  // namespace nuvec::serve
