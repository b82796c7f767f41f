// Routes (--route NAME=A:90,B:10): the spec's parsing and its errors; requests for the route's name served by A or
// B in about the weights' proportions, the same draws again from the same seed, each response's `model` and the
// metrics' label naming the model that served it, /v1/models listing the route; names that clash or targets not
// served refused.

#include "nuvec/serve/model_route.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/lm/load_model.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;

TEST(ModelRoute, ParsesNamesAndWeights) {
  const RouteSpec route = parse_route("chat=gpt-a:90,gpt-b:10");
  EXPECT_EQ(route.name, "chat");
  ASSERT_EQ(route.targets.size(), 2U);
  EXPECT_EQ(route.targets[0].model, "gpt-a");
  EXPECT_EQ(route.targets[0].weight, 90);
  EXPECT_EQ(route.targets[1].model, "gpt-b");
  EXPECT_EQ(route.targets[1].weight, 10);
  // A target without a weight weighs 1; a model name may hold ':' before the weight.
  const RouteSpec plain = parse_route("r=a,org:b:3");
  EXPECT_EQ(plain.targets[0].weight, 1);
  EXPECT_EQ(plain.targets[1].model, "org:b");
  EXPECT_EQ(plain.targets[1].weight, 3);
}

TEST(ModelRoute, MalformedSpecsSayWhatIsWrong) {
  for (const auto& [spec, says] :
       std::vector<std::pair<std::string, std::string>>{{"a:90,b:10", "no route name"},
                                                        {"r=a:0,b:1", "not a positive integer"},
                                                        {"r=a:x", "not a positive integer"},
                                                        {"r=a:5,", "names no model"},
                                                        {"r=", "names no model"},
                                                        {"r=a:1,a:2", "named twice"}}) {
    try {
      (void)parse_route(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const nuvec::error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(spec), std::string::npos) << e.what();
    }
  }
}

/// The tiny model served as "tiny" and "tiny-b", and "ab" routed 90:10 between them with `seed`.
struct RoutedServer : test::TestServer {
  explicit RoutedServer(uint64_t seed) {
    registry.add("tiny-b", lm::load_model(test::chat_model_dir()), ModelOptions{});
    registry.add_route(parse_route("ab=tiny:90,tiny-b:10"), seed);
  }

  /// The model that served each of `count` requests for "ab".
  std::vector<std::string> served(int count) {
    std::vector<std::string> models;
    for (int i = 0; i < count; ++i) {
      HttpResponse response = api.handle(
          test::post("/v1/completions", {{"model", "ab"}, {"prompt", "w10"}, {"max_tokens", 1}, {"temperature", 0}}));
      EXPECT_EQ(response.status, 200) << response.body;
      models.push_back(test::body_json(response)["model"].get<std::string>());
    }
    return models;
  }
};

/// The successes a model's label counts in /metrics.
int successes(test::TestServer& server, const std::string& model) {
  const std::string text = server.api.handle(test::get("/metrics")).body;
  const std::string prefix = "nuvec_request_success_total{model=\"" + model + "\"";
  int sum = 0;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    const size_t end = text.find('\n', at);
    sum += std::stoi(text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1));
  }
  return sum;
}

TEST(ModelRoute, SplitsRequestsByWeightAndSaysWhichModelServed) {
  RoutedServer server(7);
  const std::vector<std::string> models = server.served(200);
  std::map<std::string, int> counts;
  for (const std::string& model : models) {
    ++counts[model];
  }
  EXPECT_EQ(counts.size(), 2U);
  // 200 draws at 10%: B's count is 20 on average, with a standard deviation of about 4.2.
  EXPECT_GE(counts["tiny-b"], 6);
  EXPECT_LE(counts["tiny-b"], 40);
  EXPECT_EQ(counts["tiny"] + counts["tiny-b"], 200);
  EXPECT_EQ(successes(server, "tiny"), counts["tiny"]);
  EXPECT_EQ(successes(server, "tiny-b"), counts["tiny-b"]);
  // The same seed draws the same models in the same order.
  EXPECT_EQ(RoutedServer(7).served(200), models);
  // /v1/models lists the route with its targets, after the models.
  HttpResponse list = server.api.handle(test::get("/v1/models"));
  const json cards = test::body_json(list);
  ASSERT_EQ(cards["data"].size(), 3U) << cards;
  EXPECT_EQ(cards["data"][2]["id"], "ab");
  EXPECT_EQ(cards["data"][2]["routes_to"], json::parse(R"([{"model": "tiny", "weight": 90},
                                                            {"model": "tiny-b", "weight": 10}])"));
  HttpResponse card = server.api.handle(test::get("/v1/models/ab"));
  EXPECT_EQ(test::body_json(card)["routes_to"], cards["data"][2]["routes_to"]);
  // A request that names a model goes to it.
  HttpResponse direct = server.api.handle(test::post("/v1/completions", {{"model", "tiny-b"}, {"prompt", "w10"}}));
  EXPECT_EQ(test::body_json(direct)["model"], "tiny-b");
}

TEST(ModelRoute, ClashesAndUnservedTargetsAreRefused) {
  test::TestServer server;
  const auto refused = [&](const std::string& spec, const std::string& says) {
    try {
      server.registry.add_route(parse_route(spec), 1);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const nuvec::error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused("tiny=tiny:1", "already a model's");
  refused("ab=tiny:1,other:1", "'other' is not a served model");
  server.registry.add_route(parse_route("ab=tiny:1"), 1);
  refused("ab=tiny:2", "already a model's or a route's");
  EXPECT_THROW(server.registry.announce("ab"), nuvec::error);
  // A target still loading: the route answers 503 meanwhile.
  server.registry.announce("later");
  server.registry.add_route(parse_route("wait=later:1"), 1);
  HttpResponse response = server.api.handle(test::post("/v1/completions", {{"model", "wait"}, {"prompt", "w10"}}));
  EXPECT_EQ(response.status, 503) << response.body;
}

}  // namespace
}  // namespace nuvec::serve
