#include "apps/train/trainer.h"

#include <array>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "apps/train/dataset.h"
#include "apps/train/models.h"
#include "apps/train/progress.h"
#include "apps/train/step.h"
#include "nuvec/distributed/distributed.h"
#include "nuvec/io/io.h"
#include "nuvec/nn/nn.h"

namespace nuvec::train {

namespace {

// 2: the optimizer state holds the step and learning rate, the metadata the peak learning rate.
constexpr const char* kCheckpointFormat = "nuvec-train-checkpoint-2";

std::string encode_points(const std::vector<std::pair<double, double>>& points) {
  std::ostringstream out;
  out.precision(9);
  for (const auto& [x, y] : points) {
    out << x << ":" << y << ";";
  }
  return out.str();
}

std::vector<std::pair<double, double>> decode_points(const std::string& text) {
  std::vector<std::pair<double, double>> points;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    auto colon = item.find(':');
    if (colon != std::string::npos) {
      points.emplace_back(std::stod(item.substr(0, colon)), std::stod(item.substr(colon + 1)));
    }
  }
  return points;
}

ImageSet first(const ImageSet& set, int limit) {
  if (limit <= 0 || limit >= set.size()) {
    return set;
  }
  return {slice(set.images, {0, 0, 0, 0}, {limit, 28, 28, 1}), slice(set.labels, {0}, {limit})};
}

double accuracy(nn::UnaryModule& model, const ImageSet& set) {
  constexpr int chunk = 1000;
  long correct = 0;
  for (int start = 0; start < set.size(); start += chunk) {
    int stop = std::min(start + chunk, set.size());
    auto logits = model.forward(slice(set.images, {start, 0, 0, 0}, {stop, 28, 28, 1}));
    auto hits = sum(astype(equal(astype(argmax(logits, -1), int32), slice(set.labels, {start}, {stop})), int32));
    correct += hits.item<int64_t>();
  }
  return set.size() == 0 ? 0.0 : static_cast<double>(correct) / set.size();
}

std::unordered_map<std::string, array> as_map(const nn::Params& params, const std::string& prefix) {
  std::unordered_map<std::string, array> map;
  for (const auto& [name, value] : params) {
    map.insert_or_assign(prefix + name, value);
  }
  return map;
}

nn::Params with_prefix(const std::unordered_map<std::string, array>& map, const std::string& prefix) {
  nn::Params params;
  for (const auto& [name, value] : map) {
    if (name.rfind(prefix, 0) == 0) {
      params.emplace_back(name.substr(prefix.size()), value);
    }
  }
  return params;
}

/// The peak learning rate of this run: --lr when given, else the checkpoint's when resuming, else the default. A
/// --lr that differs from the checkpoint's is used and said so: the saved step and moments carry on under the new
/// peak, which is what asking for another rate on a resumed run means.
double peak_learning_rate(const TrainOptions& options,
                          const std::optional<std::unordered_map<std::string, std::string>>& saved, int64_t saved_step,
                          std::FILE* log) {
  if (!saved) {
    return options.learning_rate.value_or(default_learning_rate);
  }
  auto found = saved->find("learning_rate");
  if (found == saved->end()) {
    throw_invalid("[train] " + *options.resume + " has no learning rate in its metadata.");
  }
  const double saved_peak = std::stod(found->second);
  if (options.learning_rate && *options.learning_rate != saved_peak) {
    std::fprintf(log,
                 "--lr %g differs from the checkpoint's peak learning rate %g: the cosine decay continues from step "
                 "%lld with peak %g (leave out --lr to keep %g)\n",
                 *options.learning_rate, saved_peak, static_cast<long long>(saved_step), *options.learning_rate,
                 saved_peak);
  }
  return options.learning_rate.value_or(saved_peak);
}

}  // namespace

TrainResult train(const TrainOptions& options, std::FILE* log) {
  if (options.epochs < 1 || options.batch_size < 1 || !(options.learning_rate.value_or(default_learning_rate) > 0)) {
    throw_invalid("[train] epochs and batch size must be positive and the learning rate above 0.");
  }
  std::optional<distributed::Group> group;
  // Ranks other than 0 train silently and write nothing.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> quiet(nullptr, &std::fclose);
  if (options.distributed) {
    group = distributed::init(true);
    if (options.batch_size < group->size()) {
      throw_invalid("[train] --distributed needs a batch of at least one image per rank; got " +
                    std::to_string(options.batch_size) + " for " + std::to_string(group->size()) + " ranks.");
    }
    if (group->rank() != 0) {
      quiet.reset(std::fopen("/dev/null", "w"));
      log = quiet.get();
    }
  }
  const bool writes = !group || group->rank() == 0;
  auto train_set = first(load_image_set(options.data_dir, "train"), options.train_limit);
  auto test_set = first(load_image_set(options.data_dir, "t10k"), options.test_limit);
  std::filesystem::create_directories(options.output_dir);

  random::seed(options.seed);
  auto model = make_model(options.model);
  int steps_per_epoch = (train_set.size() + options.batch_size - 1) / options.batch_size;
  int total_steps = steps_per_epoch * options.epochs;
  std::unordered_map<std::string, array> checkpoint;
  std::optional<std::unordered_map<std::string, std::string>> metadata;
  if (options.resume) {
    auto [arrays, saved] = load_safetensors(*options.resume);
    if (saved["format"] != kCheckpointFormat || saved["model"] != options.model) {
      throw_invalid("[train] " + *options.resume + " is not a checkpoint of model '" + options.model +
                    "' written by this version of nuvec train (format " + kCheckpointFormat + ").");
    }
    checkpoint = std::move(arrays);
    metadata = std::move(saved);
  }
  const nn::Params saved_state = with_prefix(checkpoint, "optimizer.");
  const array* saved_step = nn::find_param(saved_state, "step");
  const double peak = peak_learning_rate(options, metadata, saved_step ? array(*saved_step).item<int64_t>() : 0, log);
  // Bias-corrected (PyTorch's Adam), as this trainer has always run.
  optimizers::Adam optimizer(optimizers::cosine_decay(peak, total_steps, peak * 0.05), {0.9, 0.999}, 1e-8,
                             /*bias_correction=*/true);
  TrainResult result;
  int start_epoch = 0;
  if (metadata) {
    model->load_weights(with_prefix(checkpoint, "model."));
    optimizer.set_state(saved_state);
    start_epoch = std::stoi((*metadata)["epoch"]);
    result.curves.loss = decode_points((*metadata)["loss_curve"]);
    result.curves.test_accuracy = decode_points((*metadata)["test_accuracy"]);
    result.curves.train_accuracy = decode_points((*metadata)["train_accuracy"]);
    std::fprintf(log, "resuming %s after epoch %d of %d (step %lld, learning rate %.3g)\n", options.resume->c_str(),
                 start_epoch, options.epochs, static_cast<long long>(optimizer.step()), optimizer.learning_rate());
  }
  std::fprintf(log, "training %s on %d images (%d steps of %d per epoch), testing on %d\n", options.model.c_str(),
               train_set.size(), steps_per_epoch, options.batch_size, test_set.size());

  auto loss_of = [&](const array& images, const array& labels) {
    return nn::losses::cross_entropy(model->forward(images), labels, std::nullopt, -1, 0.0F,
                                     nn::losses::Reduction::mean);
  };
  // Data parallel: batch[2] scales the shard's summed loss so that the ranks' losses add up to the batch's mean.
  auto step = group ? data_parallel_step(
                          *model, optimizer,
                          [&](const std::vector<array>& batch) {
                            return nn::losses::cross_entropy(model->forward(batch[0]), batch[1], std::nullopt, -1,
                                                             0.0F, nn::losses::Reduction::sum) *
                                   batch[2];
                          },
                          *group)
                    : eager_step(*model, optimizer,
                                 [&](const std::vector<array>& batch) { return loss_of(batch[0], batch[1]); });

  // The shortest text that reads back as the same double.
  std::array<char, 32> peak_chars{};
  const std::string peak_text(peak_chars.data(),
                              std::to_chars(peak_chars.data(), peak_chars.data() + peak_chars.size(), peak).ptr);
  auto started = std::chrono::steady_clock::now();
  int end_epoch = options.stop_after_epochs > 0 ? std::min(options.epochs, start_epoch + options.stop_after_epochs)
                                                : options.epochs;
  for (int epoch = start_epoch; epoch < end_epoch; ++epoch) {
    model->train();
    auto order = random::permutation(train_set.size(), random::key(options.seed * 1000003 + epoch));
    eval(order);
    ProgressBar bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options.epochs), steps_per_epoch, log);
    double loss_sum = 0.0;
    int loss_count = 0;
    long samples = 0;
    for (int s = 0; s < steps_per_epoch; ++s) {
      int begin = s * options.batch_size;
      int count = std::min(options.batch_size, train_set.size() - begin);
      std::vector<array> inputs;
      if (group) {
        const int ranks = group->size();
        const int shard_begin = begin + count * group->rank() / ranks;
        const int shard_end = begin + count * (group->rank() + 1) / ranks;
        auto shard = batch_of(train_set, order, shard_begin, shard_end - shard_begin);
        inputs = {shard.images, shard.labels, array(static_cast<float>(ranks) / static_cast<float>(count))};
      } else {
        auto batch = batch_of(train_set, order, begin, count);
        inputs = {batch.images, batch.labels};
      }
      auto loss_value = step(inputs);
      eval_step(loss_value, *model, optimizer);
      double loss = loss_value.item<float>();
      loss_sum += loss;
      ++loss_count;
      samples += count;
      if ((s + 1) % 50 == 0 || s + 1 == steps_per_epoch) {
        result.curves.loss.emplace_back(epoch * steps_per_epoch + s + 1, loss_sum / loss_count);
        loss_sum = 0.0;
        loss_count = 0;
      }
      bar.update(s + 1, loss, samples);
    }
    bar.finish();
    model->eval();
    double test_acc = accuracy(*model, test_set);
    double train_acc = accuracy(*model, first(train_set, 10000));
    result.curves.test_accuracy.emplace_back(epoch + 1, test_acc);
    result.curves.train_accuracy.emplace_back(epoch + 1, train_acc);
    std::fprintf(
        log, "epoch %d: test accuracy %.2f%% (train %.2f%%), %s elapsed\n", epoch + 1, test_acc * 100, train_acc * 100,
        format_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()).c_str());

    ++result.epochs_run;
    if (!writes) {
      continue;
    }
    auto arrays = as_map(model->parameters(), "model.");
    arrays.merge(as_map(optimizer.state(), "optimizer."));
    save_safetensors(options.output_dir + "/checkpoint.safetensors", arrays,
                     {{"format", kCheckpointFormat},
                      {"model", options.model},
                      {"epoch", std::to_string(epoch + 1)},
                      {"learning_rate", peak_text},
                      {"loss_curve", encode_points(result.curves.loss)},
                      {"test_accuracy", encode_points(result.curves.test_accuracy)},
                      {"train_accuracy", encode_points(result.curves.train_accuracy)}});
  }
  result.test_accuracy = result.curves.test_accuracy.empty() ? 0.0 : result.curves.test_accuracy.back().second;
  if (!writes) {
    return result;
  }
  save_safetensors(options.output_dir + "/model.safetensors", as_map(model->parameters(), ""),
                   {{"model", options.model}});
  write_curves_svg(options.output_dir + "/curves.svg", result.curves,
                   "nuvec train: " + options.model + " on Fashion-MNIST");
  std::fprintf(
      log, "final test accuracy: %.2f%%\nwrote %s/model.safetensors, %s/checkpoint.safetensors, %s/curves.svg\n",
      result.test_accuracy * 100, options.output_dir.c_str(), options.output_dir.c_str(), options.output_dir.c_str());
  return result;
}

}  // namespace nuvec::train
