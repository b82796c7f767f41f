"""Talks to a running nuvec gRPC service (nuvec/serve/serve.proto and health.proto) with Python's grpcio and prints
what it got as one JSON object, for tests/serve/grpc_server_test.cpp to check against the HTTP API's in-process
answers.

usage: grpc_client.py SUITE PROTO_DIR ADDRESS API_KEY WORK_DIR [CA_PEM]
  SUITE: "tiny" (the chat model: health, models, tokenize, Generate with n and logprobs, errors, a cancel),
         "json" (the JSON model: response_format and tools), or "tls" (CA_PEM: the server's certificate).
"""
import json
import subprocess
import sys

import grpc

suite, proto_dir, address, api_key, work_dir = sys.argv[1:6]
# The message classes come from protoc's own Python output; the calls go through grpcio's generic stubs.
for proto in ("serve.proto", "health.proto"):
    subprocess.run(["protoc", "-I", proto_dir, f"--python_out={work_dir}", f"{proto_dir}/{proto}"], check=True)
sys.path.insert(0, work_dir)
import health_pb2  # noqa: E402
import serve_pb2 as pb  # noqa: E402

if suite == "tls":
    with open(sys.argv[6], "rb") as f:
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=f.read()))
else:
    channel = grpc.insecure_channel(address)
metadata = [("authorization", f"Bearer {api_key}")]


def unary(name, request, response_class, on=None, service="nuvec.rpc.Serve"):
    call = (on or channel).unary_unary(f"/{service}/{name}", request_serializer=request.__class__.SerializeToString,
                                       response_deserializer=response_class.FromString)
    return call(request, metadata=metadata, timeout=30)


generate = channel.unary_stream("/nuvec.rpc.Serve/Generate", request_serializer=pb.GenerateRequest.SerializeToString,
                                response_deserializer=pb.GenerateResponse.FromString)


def generated(request):
    """The streamed responses put together per choice."""
    choices = {}
    for piece in generate(request, metadata=metadata, timeout=120):
        out = choices.setdefault(piece.index, {"text": "", "tokens": [], "logprobs": [], "tool_calls": [],
                                               "finish_reason": "", "responses": 0})
        out["text"] += piece.text
        out["tokens"] += list(piece.tokens)
        out["logprobs"] += [{"token": t.token, "logprob": t.logprob, "bytes": list(t.bytes),
                             "top": [{"token": a.token, "logprob": a.logprob} for a in t.top_logprobs]}
                            for t in piece.logprobs]
        out["tool_calls"] += [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in piece.tool_calls]
        out["responses"] += 1
        if piece.finish_reason:
            out["finish_reason"] = piece.finish_reason
    return [choices[i] for i in sorted(choices)]


def error_code(thunk):
    try:
        thunk()
        return None
    except grpc.RpcError as e:
        return e.code().name


def health_check(service):
    return unary("Check", health_pb2.HealthCheckRequest(service=service), health_pb2.HealthCheckResponse,
                 service="grpc.health.v1.Health").status


out = {}
if suite == "tiny":
    out["health"] = unary("Health", pb.HealthRequest(), pb.HealthResponse).status
    out["health_v1"] = [health_check(""), health_check("nuvec.rpc.Serve")]
    out["health_v1_unknown"] = error_code(lambda: health_check("no.such.Service"))
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                 response_deserializer=health_pb2.HealthCheckResponse.FromString)
    stream = watch(health_pb2.HealthCheckRequest(service=""))
    out["health_v1_watch"] = next(stream).status
    stream.cancel()
    out["models"] = list(unary("ListModels", pb.ListModelsRequest(), pb.ListModelsResponse).models)
    out["tokens"] = list(unary("Tokenize", pb.TokenizeRequest(text="w10 w11"), pb.TokenizeResponse).tokens)
    out["completion"] = generated(pb.GenerateRequest(prompt="w10 w11", max_tokens=12, temperature=0))
    out["chat"] = generated(pb.GenerateRequest(messages=[pb.ChatMessage(role="user", content="w33 w34")],
                                               max_tokens=12, temperature=0))
    out["completion_logprobs"] = generated(pb.GenerateRequest(prompt="w10 w11", max_tokens=6, temperature=0,
                                                              logprobs=3))
    out["chat_logprobs"] = generated(pb.GenerateRequest(messages=[pb.ChatMessage(role="user", content="w33 w34")],
                                                        max_tokens=6, temperature=0, logprobs=2))
    out["sampled_n"] = generated(pb.GenerateRequest(prompt="w10", max_tokens=8, temperature=1, seed=7, n=3))
    out["unknown_model"] = error_code(lambda: generated(pb.GenerateRequest(model="no-such-model", prompt="w1")))
    out["bad_temperature"] = error_code(lambda: generated(pb.GenerateRequest(prompt="w1", temperature=-1)))
    out["tools_without_messages"] = error_code(lambda: generated(pb.GenerateRequest(
        prompt="w1", tools=[pb.Tool(name="f")])))
    out["wrong_key"] = error_code(lambda: channel.unary_unary(
        "/nuvec.rpc.Serve/ListModels", request_serializer=pb.ListModelsRequest.SerializeToString,
        response_deserializer=pb.ListModelsResponse.FromString)(pb.ListModelsRequest(),
                                                                 metadata=[("authorization", "Bearer wrong")]))
    # A long generation cancelled after its first response: the server must drop it.
    stream = generate(pb.GenerateRequest(prompt="w10", max_tokens=250, temperature=0), metadata=metadata)
    next(stream)
    stream.cancel()
    out["cancelled"] = True
elif suite == "json":
    # As tests/serve/tool_choice_test.cpp: sampled, biased towards closing quotes (id 2) and braces (id 93).
    bias = {2: 3, 93: 4}
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
            "additionalProperties": False}
    tool = pb.Tool(name="get_weather", description="The weather in a city.")
    tool.parameters.update(city)
    user = [pb.ChatMessage(role="user", content="Call a tool.")]
    out["forced_call"] = generated(pb.GenerateRequest(messages=user, tools=[tool], tool_choice="get_weather",
                                                      temperature=1, seed=5, max_tokens=2000, logit_bias=bias))
    out["required_call"] = generated(pb.GenerateRequest(messages=user, tools=[tool], tool_choice="required",
                                                        temperature=1, seed=6, max_tokens=2000, logit_bias=bias))
    form = pb.ResponseFormat(type="json_schema", name="place", strict=True)
    form.schema.update(city)
    out["json_schema"] = generated(pb.GenerateRequest(messages=user, response_format=form, temperature=1, seed=8,
                                                      max_tokens=2000, logit_bias=bias))
    out["json_object"] = generated(pb.GenerateRequest(messages=user, response_format=pb.ResponseFormat(
        type="json_object"), temperature=1, seed=9, max_tokens=2000, logit_bias=bias))
    out["unknown_tool"] = error_code(lambda: generated(pb.GenerateRequest(messages=user, tools=[tool],
                                                                          tool_choice="no_such_tool")))
elif suite == "tls":
    out["models"] = list(unary("ListModels", pb.ListModelsRequest(), pb.ListModelsResponse).models)
    out["health_v1"] = health_check("")
    plain = grpc.insecure_channel(address)
    out["plain_text"] = error_code(lambda: unary("ListModels", pb.ListModelsRequest(), pb.ListModelsResponse,
                                                 on=plain))
print(json.dumps(out))
