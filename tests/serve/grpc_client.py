"""Talks to a running nuvec gRPC service (nuvec/serve/serve.proto) with Python's grpcio and prints what it got as
one JSON object, for tests/serve/grpc_server_test.cpp to check against the HTTP API's in-process answers.

usage: grpc_client.py PROTO_DIR ADDRESS API_KEY WORK_DIR
"""
import json
import subprocess
import sys

import grpc

proto_dir, address, api_key, work_dir = sys.argv[1:5]
# The message classes come from protoc's own Python output; the calls go through grpcio's generic stubs.
subprocess.run(["protoc", "-I", proto_dir, f"--python_out={work_dir}", f"{proto_dir}/serve.proto"], check=True)
sys.path.insert(0, work_dir)
import serve_pb2 as pb  # noqa: E402

channel = grpc.insecure_channel(address)
metadata = [("authorization", f"Bearer {api_key}")]


def unary(name, request, response_class):
    call = channel.unary_unary(f"/nuvec.rpc.Serve/{name}", request_serializer=request.__class__.SerializeToString,
                               response_deserializer=response_class.FromString)
    return call(request, metadata=metadata)


generate = channel.unary_stream("/nuvec.rpc.Serve/Generate", request_serializer=pb.GenerateRequest.SerializeToString,
                                response_deserializer=pb.GenerateResponse.FromString)


def generated(request):
    out = {"text": "", "tokens": [], "finish_reason": "", "responses": 0}
    for piece in generate(request, metadata=metadata):
        out["text"] += piece.text
        out["tokens"] += list(piece.tokens)
        out["responses"] += 1
        if piece.finish_reason:
            out["finish_reason"] = piece.finish_reason
    return out


def error_code(thunk):
    try:
        thunk()
        return None
    except grpc.RpcError as e:
        return e.code().name


out = {}
out["health"] = unary("Health", pb.HealthRequest(), pb.HealthResponse).status
out["models"] = list(unary("ListModels", pb.ListModelsRequest(), pb.ListModelsResponse).models)
out["tokens"] = list(unary("Tokenize", pb.TokenizeRequest(text="w10 w11"), pb.TokenizeResponse).tokens)
out["completion"] = generated(pb.GenerateRequest(prompt="w10 w11", max_tokens=12, temperature=0))
out["chat"] = generated(pb.GenerateRequest(messages=[pb.ChatMessage(role="user", content="w33 w34")], max_tokens=12,
                                           temperature=0))
out["unknown_model"] = error_code(lambda: generated(pb.GenerateRequest(model="no-such-model", prompt="w1")))
out["bad_temperature"] = error_code(lambda: generated(pb.GenerateRequest(prompt="w1", temperature=-1)))
out["wrong_key"] = error_code(lambda: channel.unary_unary(
    "/nuvec.rpc.Serve/ListModels", request_serializer=pb.ListModelsRequest.SerializeToString,
    response_deserializer=pb.ListModelsResponse.FromString)(pb.ListModelsRequest(),
                                                             metadata=[("authorization", "Bearer wrong")]))
# A long generation cancelled after its first response: the server must drop it.
stream = generate(pb.GenerateRequest(prompt="w10", max_tokens=250, temperature=0), metadata=metadata)
next(stream)
stream.cancel()
out["cancelled"] = True
print(json.dumps(out))
