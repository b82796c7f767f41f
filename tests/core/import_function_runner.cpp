// The other program of the cross-process export test (export_test.cpp): imports an exported function, calls it on
// arrays read from a safetensors file ("arg0", "arg1", ... positional, "kw.<name>" keyword) and saves its outputs
// ("out0", "out1", ...) to another. Exit status 1 with the error on stderr when anything throws.

#include <iostream>
#include <string>

#include "nuvec/nuvec.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: import_function_runner FUNCTION INPUTS.safetensors OUTPUTS.safetensors\n";
    return 2;
  }
  try {
    auto fun = nuvec::import_function(argv[1]);
    auto [arrays, metadata] = nuvec::load_safetensors(argv[2]);
    nuvec::Args args;
    nuvec::Kwargs kwargs;
    for (size_t i = 0; arrays.contains("arg" + std::to_string(i)); ++i) {
      args.push_back(arrays.at("arg" + std::to_string(i)));
    }
    for (const auto& [name, a] : arrays) {
      if (name.starts_with("kw.")) {
        kwargs.emplace(name.substr(3), a);
      }
    }
    std::unordered_map<std::string, nuvec::array> outputs;
    auto results = fun(args, kwargs);
    for (size_t i = 0; i < results.size(); ++i) {
      outputs.emplace("out" + std::to_string(i), results[i]);
    }
    nuvec::save_safetensors(argv[3], outputs);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
