// einsum and einsum_path: NumPy's subscript language, a greedy contraction order, and each pairwise contraction run
// as transpose + reshape + one batched matmul (no primitive of its own).
//
// Labels are ints: letters 0-51 ('a'-'z', 'A'-'Z'), then one label per axis the ellipsis covers, right-aligned and
// broadcast across operands. A size-1 axis broadcasts against any size (NumPy's rule for every label).
// The order is the greedy one of np.einsum_path(..., optimize='greedy') without its memory limit: repeatedly the
// pair that removes the most elements (ties: the fewer operations), outer products only when no pair shares a label.
// Before a product, a label held by one operand alone and wanted neither later nor in the output is summed away;
// a size-1 axis of a label that is larger elsewhere is squeezed (it broadcasts); repeated labels on one operand take
// the diagonal first.
//
// Choices where MLX and NumPy differ or say nothing:
// - an explicit output without "..." sums the ellipsis axes (np.einsum with optimize=True does; without it, NumPy
//   rejects the subscripts);
// - the result dtype is the promotion of all operands; integers wrap in it as NumPy's do.

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "nuvec/core/ops.h"

namespace nuvec {

namespace {

constexpr int letter_count = 52;

int label_of(char c) {
  if (c >= 'a' && c <= 'z') {
    return c - 'a';
  }
  if (c >= 'A' && c <= 'Z') {
    return 26 + (c - 'A');
  }
  return -1;
}

char letter_of(int label) { return label < 26 ? static_cast<char>('a' + label) : static_cast<char>('A' + label - 26); }

[[noreturn]] void fail(const std::string& message) { throw_invalid("[einsum] " + message); }

/// The parsed subscripts: a label per axis of each operand, the output labels and each label's size.
struct Subscripts {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int64_t> sizes;  // indexed by label; -1 for labels not used
  std::string text;            // the subscripts without spaces
};

/// Splits one operand's term into letter labels before and after an optional ellipsis.
struct Term {
  std::vector<int> before;
  std::vector<int> after;
  bool ellipsis = false;
};

Term parse_term(const std::string& term, const std::string& subscripts) {
  Term t;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      if (term.compare(i, 3, "...") != 0 || t.ellipsis) {
        fail("Invalid ellipsis in subscripts \"" + subscripts + "\": each term takes at most one \"...\".");
      }
      t.ellipsis = true;
      i += 2;
      continue;
    }
    const int label = label_of(term[i]);
    if (label < 0) {
      fail("Invalid character '" + std::string(1, term[i]) + "' in subscripts \"" + subscripts +
           "\"; labels are letters a-z and A-Z.");
    }
    (t.ellipsis ? t.after : t.before).push_back(label);
  }
  return t;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == sep) {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

Subscripts parse(const std::string& raw, const std::vector<array>& operands) {
  Subscripts sub;
  for (char c : raw) {
    if (c != ' ') {
      sub.text.push_back(c);
    }
  }
  if (operands.empty()) {
    fail("At least one operand is required.");
  }
  const auto arrow = sub.text.find("->");
  const std::string lhs = sub.text.substr(0, arrow);
  const bool explicit_output = arrow != std::string::npos;
  const std::string rhs = explicit_output ? sub.text.substr(arrow + 2) : "";
  if (lhs.find('-') != std::string::npos || lhs.find('>') != std::string::npos ||
      rhs.find_first_of("->,") != std::string::npos) {
    fail("Invalid subscripts \"" + sub.text + "\": expected terms separated by ',' and at most one \"->\".");
  }
  const auto terms = split(lhs, ',');
  if (terms.size() != operands.size()) {
    fail("The subscripts \"" + sub.text + "\" name " + std::to_string(terms.size()) + " operands but " +
         std::to_string(operands.size()) + " were given.");
  }
  std::vector<Term> parsed;
  int ellipsis_ndim = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    parsed.push_back(parse_term(terms[i], sub.text));
    const auto& t = parsed.back();
    const int named = static_cast<int>(t.before.size() + t.after.size());
    const int ndim = operands[i].ndim();
    if (named > ndim || (!t.ellipsis && named != ndim)) {
      fail("Operand " + std::to_string(i) + " with shape " + shape_string(operands[i].shape()) + " has " +
           std::to_string(ndim) + " dimensions but its subscripts \"" + terms[i] + "\" name " +
           std::to_string(named) + ".");
    }
    ellipsis_ndim = std::max(ellipsis_ndim, t.ellipsis ? ndim - named : 0);
  }
  sub.sizes.assign(letter_count + ellipsis_ndim, -1);
  std::vector<int> counts(sub.sizes.size(), 0);
  for (size_t i = 0; i < parsed.size(); ++i) {
    const auto& t = parsed[i];
    std::vector<int> labels = t.before;
    const int covered = operands[i].ndim() - static_cast<int>(t.before.size() + t.after.size());
    for (int e = 0; e < covered; ++e) {
      labels.push_back(letter_count + ellipsis_ndim - covered + e);
    }
    labels.insert(labels.end(), t.after.begin(), t.after.end());
    for (size_t axis = 0; axis < labels.size(); ++axis) {
      const int label = labels[axis];
      const int64_t size = operands[i].shape(static_cast<int>(axis));
      auto& known = sub.sizes[label];
      if (known == -1 || known == 1) {
        known = size;
      } else if (size != 1 && size != known) {
        const std::string name = label < letter_count ? "label '" + std::string(1, letter_of(label)) + "'"
                                                      : "the ellipsis dimensions";
        fail("Size of " + name + " for operand " + std::to_string(i) + " with shape " +
             shape_string(operands[i].shape()) + " (" + std::to_string(size) + ") does not match previous terms (" +
             std::to_string(known) + ").");
      }
      ++counts[label];
    }
    sub.inputs.push_back(std::move(labels));
  }
  auto ellipsis_labels = [&] {
    std::vector<int> labels(ellipsis_ndim);
    std::iota(labels.begin(), labels.end(), letter_count);
    return labels;
  };
  if (!explicit_output) {
    // NumPy's implicit output: the ellipsis axes, then the letters used once, in character order.
    sub.output = ellipsis_labels();
    std::string once;
    for (int label = 0; label < letter_count; ++label) {
      if (counts[label] == 1) {
        once.push_back(letter_of(label));
      }
    }
    std::sort(once.begin(), once.end());
    for (char c : once) {
      sub.output.push_back(label_of(c));
    }
    return sub;
  }
  const Term out = parse_term(rhs, sub.text);
  sub.output = out.before;
  if (out.ellipsis) {
    auto labels = ellipsis_labels();
    sub.output.insert(sub.output.end(), labels.begin(), labels.end());
  }
  sub.output.insert(sub.output.end(), out.after.begin(), out.after.end());
  std::vector<bool> seen(sub.sizes.size(), false);
  for (int label : sub.output) {
    if (label < letter_count && counts[label] == 0) {
      fail("Output subscript '" + std::string(1, letter_of(label)) + "' does not appear in the input subscripts \"" +
           lhs + "\".");
    }
    if (seen[label]) {
      fail("Output subscript '" + std::string(1, letter_of(label)) + "' appears more than once.");
    }
    seen[label] = true;
  }
  return sub;
}

using LabelSet = std::vector<int>;  // sorted, unique

LabelSet as_set(std::vector<int> labels) {
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  return labels;
}

bool contains(const LabelSet& set, int label) { return std::binary_search(set.begin(), set.end(), label); }

LabelSet set_union(const LabelSet& x, const LabelSet& y) {
  LabelSet out;
  std::set_union(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
  return out;
}

double size_of(const LabelSet& labels, const std::vector<int64_t>& sizes) {
  double n = 1;
  for (int label : labels) {
    n *= static_cast<double>(sizes[label]);
  }
  return n;
}

/// NumPy's operation count of contracting `terms` operands over `labels`, `inner` when some label is summed.
double flop_count(const LabelSet& labels, bool inner, size_t terms, const std::vector<int64_t>& sizes) {
  const double factor = static_cast<double>(std::max<size_t>(1, terms - 1)) + (inner ? 1.0 : 0.0);
  return size_of(labels, sizes) * factor;
}

/// One contraction of the plan: positions in the current operand list and the labels the result keeps.
struct Step {
  std::vector<int> positions;
  LabelSet result;
  LabelSet all;  // the labels the contraction touches
  double cost;
};

struct Plan {
  std::vector<Step> steps;
  double naive_cost;
};

Plan greedy_plan(const Subscripts& sub) {
  std::vector<LabelSet> sets;
  for (const auto& labels : sub.inputs) {
    sets.push_back(as_set(labels));
  }
  const LabelSet output = as_set(sub.output);
  LabelSet everything = output;
  for (const auto& set : sets) {
    everything = set_union(everything, set);
  }
  Plan plan{{}, flop_count(everything, everything.size() > output.size(), sets.size(), sub.sizes)};
  // The labels a contraction of positions i and j keeps: those of the output and of the other operands.
  auto kept = [&](size_t i, size_t j) {
    LabelSet keep = output;
    for (size_t t = 0; t < sets.size(); ++t) {
      if (t != i && t != j) {
        keep = set_union(keep, sets[t]);
      }
    }
    return keep;
  };
  if (sets.size() == 1) {
    const LabelSet& all = sets[0];
    plan.steps.push_back({{0}, output, all, flop_count(all, all.size() > output.size(), 1, sub.sizes)});
    return plan;
  }
  while (sets.size() > 1) {
    std::optional<Step> best;
    double best_removed = 0;
    for (bool allow_outer : {false, true}) {
      for (size_t i = 0; i < sets.size(); ++i) {
        for (size_t j = i + 1; j < sets.size(); ++j) {
          const LabelSet all = set_union(sets[i], sets[j]);
          if (!allow_outer && all.size() == sets[i].size() + sets[j].size()) {
            continue;
          }
          const LabelSet keep = kept(i, j);
          LabelSet result;
          std::copy_if(all.begin(), all.end(), std::back_inserter(result), [&](int l) { return contains(keep, l); });
          const double removed =
              size_of(sets[i], sub.sizes) + size_of(sets[j], sub.sizes) - size_of(result, sub.sizes);
          const double cost = flop_count(all, result.size() < all.size(), 2, sub.sizes);
          if (!best || removed > best_removed || (removed == best_removed && cost < best->cost)) {
            best = Step{{static_cast<int>(i), static_cast<int>(j)}, result, all, cost};
            best_removed = removed;
          }
        }
      }
      if (best) {
        break;
      }
    }
    sets.erase(sets.begin() + best->positions[1]);
    sets.erase(sets.begin() + best->positions[0]);
    sets.push_back(best->result);
    plan.steps.push_back(*best);
  }
  return plan;
}

/// An operand during evaluation: the array and one distinct label per axis.
struct Operand {
  array a;
  std::vector<int> labels;
};

int position(const std::vector<int>& labels, int label) {
  return static_cast<int>(std::find(labels.begin(), labels.end(), label) - labels.begin());
}

/// Takes diagonals for repeated labels and squeezes size-1 axes that broadcast against a larger size.
Operand prepare(const array& a, std::vector<int> labels, const std::vector<int64_t>& sizes, StreamOrDevice s) {
  Operand op{a, std::move(labels)};
  for (bool repeated = true; repeated;) {
    repeated = false;
    for (size_t p = 0; p < op.labels.size() && !repeated; ++p) {
      for (size_t q = p + 1; q < op.labels.size() && !repeated; ++q) {
        if (op.labels[p] == op.labels[q]) {
          const int label = op.labels[p];
          op.a = diagonal(op.a, 0, static_cast<int>(p), static_cast<int>(q), s);
          op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(q));
          op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(p));
          op.labels.push_back(label);
          repeated = true;
        }
      }
    }
  }
  std::vector<int> squeezed;
  std::vector<int> remaining;
  for (size_t axis = 0; axis < op.labels.size(); ++axis) {
    if (op.a.shape(static_cast<int>(axis)) == 1 && sizes[op.labels[axis]] != 1) {
      squeezed.push_back(static_cast<int>(axis));
    } else {
      remaining.push_back(op.labels[axis]);
    }
  }
  if (!squeezed.empty()) {
    op.a = squeeze(op.a, squeezed, s);
    op.labels = std::move(remaining);
  }
  return op;
}

/// Sums the axes whose labels are not in `keep` and not in `other`.
void sum_unused(Operand& op, const LabelSet& keep, const std::vector<int>& other, StreamOrDevice s) {
  std::vector<int> axes;
  std::vector<int> labels;
  for (size_t axis = 0; axis < op.labels.size(); ++axis) {
    const int label = op.labels[axis];
    if (!contains(keep, label) && std::find(other.begin(), other.end(), label) == other.end()) {
      axes.push_back(static_cast<int>(axis));
    } else {
      labels.push_back(label);
    }
  }
  if (!axes.empty()) {
    op.a = sum(op.a, axes, false, s);
    op.labels = std::move(labels);
  }
}

bool is_identity(const std::vector<int>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int>(i)) {
      return false;
    }
  }
  return true;
}

std::vector<int> concat(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> out;
  for (const auto* part : parts) {
    out.insert(out.end(), part->begin(), part->end());
  }
  return out;
}

/// x as a (batch, rows, cols) stack whose axes hold the labels `batch`, `rows` and `cols`: transposed, reshaped
/// and, when x already holds its columns before its rows, reshaped first and transposed as a view.
array as_matrices(const Operand& x, const std::vector<int>& batch, const std::vector<int>& rows,
                  const std::vector<int>& cols, StreamOrDevice s) {
  auto axes_of = [&](const std::vector<int>& labels) {
    std::vector<int> axes;
    int64_t size = 1;
    for (int label : labels) {
      axes.push_back(position(x.labels, label));
      size *= x.a.shape(axes.back());
    }
    return std::pair{axes, static_cast<int32_t>(size)};
  };
  auto [b_axes, b_size] = axes_of(batch);
  auto [r_axes, r_size] = axes_of(rows);
  auto [c_axes, c_size] = axes_of(cols);
  const auto direct = concat({&b_axes, &r_axes, &c_axes});
  const auto swapped = concat({&b_axes, &c_axes, &r_axes});
  if (!is_identity(direct) && is_identity(swapped)) {
    return swapaxes(reshape(x.a, {b_size, c_size, r_size}, s), 1, 2, s);
  }
  return reshape(transpose(x.a, direct, s), {b_size, r_size, c_size}, s);
}

/// The product of x and y over their shared labels, keeping the shared labels in `keep` as batch axes.
Operand contract(Operand x, Operand y, const LabelSet& keep, StreamOrDevice s) {
  sum_unused(x, keep, y.labels, s);
  sum_unused(y, keep, x.labels, s);
  std::vector<int> batch;
  std::vector<int> inner;
  std::vector<int> x_free;
  std::vector<int> y_free;
  for (int label : x.labels) {
    const bool shared = std::find(y.labels.begin(), y.labels.end(), label) != y.labels.end();
    (shared ? (contains(keep, label) ? batch : inner) : x_free).push_back(label);
  }
  for (int label : y.labels) {
    if (std::find(x.labels.begin(), x.labels.end(), label) == x.labels.end()) {
      y_free.push_back(label);
    }
  }
  auto product = matmul(as_matrices(x, batch, x_free, inner, s), as_matrices(y, batch, inner, y_free, s), s);
  Operand out{array(0), concat({&batch, &x_free, &y_free})};
  Shape shape;
  for (int label : out.labels) {
    const auto& from = std::find(x.labels.begin(), x.labels.end(), label) != x.labels.end() ? x : y;
    shape.push_back(from.a.shape(position(from.labels, label)));
  }
  out.a = reshape(product, shape, s);
  return out;
}

std::string format_count(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3e", value);
  return text;
}

/// Appends a term to a comma-separated list.
void append_term(std::string& list, const std::string& term) {
  if (!list.empty()) {
    list.push_back(',');
  }
  list += term;
}

std::string format_fixed(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

}  // namespace

array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice s) {
  const auto sub = parse(subscripts, operands);
  const auto plan = greedy_plan(sub);
  const LabelSet output = as_set(sub.output);
  std::vector<Operand> ops;
  for (size_t i = 0; i < operands.size(); ++i) {
    ops.push_back(prepare(operands[i], sub.inputs[i], sub.sizes, s));
  }
  for (const auto& step : plan.steps) {
    if (step.positions.size() < 2) {
      break;
    }
    auto x = ops[step.positions[0]];
    auto y = ops[step.positions[1]];
    ops.erase(ops.begin() + step.positions[1]);
    ops.erase(ops.begin() + step.positions[0]);
    LabelSet keep = output;
    for (const auto& other : ops) {
      keep = set_union(keep, as_set(other.labels));
    }
    ops.push_back(contract(std::move(x), std::move(y), keep, s));
  }
  auto& last = ops.back();
  sum_unused(last, output, {}, s);
  std::vector<int> perm;
  for (int label : sub.output) {
    perm.push_back(position(last.labels, label));
  }
  return astype(transpose(last.a, perm, s), result_type(operands), s);
}

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands) {
  const auto sub = parse(subscripts, operands);
  const auto plan = greedy_plan(sub);
  // Ellipsis labels are shown as letters the subscripts do not use, as NumPy does.
  std::vector<char> shown(sub.sizes.size(), '?');
  std::string unused;
  for (int label = 0; label < letter_count; ++label) {
    shown[label] = letter_of(label);
    if (sub.sizes[label] == -1) {
      unused.push_back(letter_of(label));
    }
  }
  for (size_t label = letter_count; label < shown.size() && label - letter_count < unused.size(); ++label) {
    shown[label] = unused[label - letter_count];
  }
  auto term = [&](const std::vector<int>& labels) {
    std::string text;
    for (int label : labels) {
      text.push_back(shown[label]);
    }
    return text;
  };
  std::vector<std::vector<int>> current = sub.inputs;
  std::vector<std::vector<int>> path;
  double optimized = 1;  // NumPy's report counts one operation more than its steps do
  double largest = 0;
  size_t scaling = 0;
  std::ostringstream rows;
  for (const auto& step : plan.steps) {
    path.push_back(step.positions);
    optimized += step.cost;
    scaling = std::max(scaling, step.all.size());
    std::string contraction;
    for (auto it = step.positions.rbegin(); it != step.positions.rend(); ++it) {
      append_term(contraction, term(current[*it]));
    }
    for (auto it = step.positions.rbegin(); it != step.positions.rend(); ++it) {
      current.erase(current.begin() + *it);
    }
    // An intermediate keeps its labels in sorted order; the last result takes the output's order.
    const bool final_step = current.empty();
    const std::vector<int> result = final_step ? sub.output : step.result;
    largest = std::max(largest, size_of(as_set(result), sub.sizes));
    current.push_back(result);
    std::string remaining;
    for (const auto& labels : current) {
      append_term(remaining, term(labels));
    }
    char line[200];
    std::snprintf(line, sizeof(line), "%4zu    %24s %40s\n", step.all.size(), (contraction + "->" + term(result)).c_str(),
                  (remaining + "->" + term(sub.output)).c_str());
    rows << line;
  }
  LabelSet everything = as_set(sub.output);
  for (const auto& labels : sub.inputs) {
    everything = set_union(everything, as_set(labels));
  }
  const std::string rule(74, '-');
  std::ostringstream text;
  const bool implicit = sub.text.find("->") == std::string::npos;
  text << "  Complete contraction:  " << sub.text << (implicit ? "->" + term(sub.output) : "") << "\n"
       << "         Naive scaling:  " << everything.size() << "\n"
       << "     Optimized scaling:  " << scaling << "\n"
       << "      Naive FLOP count:  " << format_count(plan.naive_cost) << "\n"
       << "  Optimized FLOP count:  " << format_count(optimized) << "\n"
       << "   Theoretical speedup:  " << format_fixed(plan.naive_cost / optimized) << "\n"
       << "  Largest intermediate:  " << format_count(largest) << " elements\n"
       << rule << "\nscaling                  current                                remaining\n"
       << rule << "\n"
       << rows.str();
  return {path, text.str()};
}

}  // namespace nuvec
