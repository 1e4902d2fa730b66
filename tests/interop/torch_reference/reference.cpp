// The cases' runner: computes every registered case with tinynet and writes one JSON line per
// case (inputs, output, upstream gradient, input gradients, all exact in %.17g) for compare.py.

#include "reference.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tinynet::torch_reference {

namespace detail {
std::vector<CaseList>& registry() {
  static std::vector<CaseList> cases;
  return cases;
}
}  // namespace detail

namespace {

std::ostream* out_stream = nullptr;
int failures = 0;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string json(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  const Tensor values = host.dtype() == DType::bool_ ? host : host.to(DType::float64);
  std::ostringstream s;
  s << "{\"dtype\": " << quoted(std::string(dtype_name(host.dtype()))) << ", \"shape\": [";
  for (int d = 0; d < host.dim(); ++d) s << (d ? ", " : "") << host.shape()[d];
  s << "], \"values\": [";
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    s << (i ? ", " : "");
    if (host.dtype() == DType::bool_)
      s << (values.data<bool>()[i] ? "true" : "false");
    else
      s << number(values.data<double>()[i]);
  }
  s << "]}";
  return s.str();
}

bool floating(const Tensor& t) { return t.dtype() == DType::float64 || t.dtype() == DType::float32; }

}  // namespace

Tensor input(const Shape& shape, std::uint64_t seed, double lo, double hi) {
  std::vector<double> values(static_cast<std::size_t>(shape.numel()));
  std::uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
  for (double& v : values) v = lo + (hi - lo) * static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
  return from_vector(values, shape);
}

void check(std::string name, std::string torch_expr, std::vector<Tensor> inputs,
           std::function<Tensor(const std::vector<Tensor>&)> fn) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    Tensor leaf = t.detach().to(t.dtype());  // a copy: the case cannot alter what is reported
    if (floating(leaf)) leaf.requires_grad_();
    leaves.push_back(leaf);
  }
  std::ostringstream line;
  line << "{\"name\": " << quoted(name) << ", \"torch\": " << quoted(torch_expr) << ", \"inputs\": [";
  for (std::size_t i = 0; i < inputs.size(); ++i) line << (i ? ", " : "") << json(inputs[i]);
  line << "]";
  try {
    const Tensor y = fn(leaves);
    line << ", \"output\": " << json(y);
    if (floating(y) && y.requires_grad()) {
      const Tensor g = input(y.shape(), std::hash<std::string>{}(name)).to(y.dtype());
      y.backward(g);
      line << ", \"grad_output\": " << json(g) << ", \"grads\": [";
      for (std::size_t i = 0; i < leaves.size(); ++i) {
        const Tensor grad = leaves[i].grad();
        line << (i ? ", " : "") << (grad.defined() ? json(grad) : "null");
      }
      line << "]";
    }
  } catch (const std::exception& e) {
    ++failures;
    line << ", \"error\": " << quoted(e.what());
  }
  *out_stream << line.str() << "}\n";
}

}  // namespace tinynet::torch_reference

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " CASES.jsonl\n";
    return 2;
  }
  std::ofstream out(argv[1]);
  if (!out) {
    std::cerr << argv[0] << ": cannot write " << argv[1] << "\n";
    return 2;
  }
  tinynet::torch_reference::out_stream = &out;
  for (auto cases : tinynet::torch_reference::detail::registry()) cases();
  return out.good() ? 0 : 2;
}
