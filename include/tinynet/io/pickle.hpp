#pragma once
/// \file
/// A restricted unpickler for PyTorch state_dicts (the `data.pkl` of a torch.save
/// archive), with the stance of torch.load(weights_only=True): it knows only the opcodes a
/// state_dict pickle uses and only the globals it needs (collections.OrderedDict,
/// torch._utils._rebuild_tensor_v2 and _rebuild_parameter, the storage classes). Any other
/// global, and any unknown opcode, is a FormatError that names it. Nothing is ever called
/// or imported: the three callables are interpreted, and the result is plain data.
///
/// Values live in an arena owned by the unpickler and refer to each other by pointer, so a
/// pickle that builds cycles or deep nests cannot leak or overflow the stack; every opcode
/// creates at most one value, so memory is linear in the pickle's size.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinynet/io/error.hpp"
#include "tinynet/io/format.hpp"

namespace tinynet::io::detail {

/// A storage named by a persistent id: ('storage', torch.<Type>Storage, key, location, numel).
struct PickledStorage {
  std::string type;  ///< "FloatStorage", "LongStorage", ... or "UntypedStorage"
  std::string key;   ///< the archive entry data/<key>
  std::int64_t numel = 0;
};

/// What _rebuild_tensor_v2 was given: a view of a storage. Sizes and strides are as pickled
/// (unchecked against the storage: the caller checks them against the archive).
struct PickledTensor {
  const PickledStorage* storage = nullptr;
  std::int64_t offset = 0;
  std::vector<std::int64_t> sizes, strides;
};

struct PyValue {
  enum class Kind { none, boolean, integer, floating, string, tuple, list, dict, global, storage, tensor };
  Kind kind = Kind::none;
  std::int64_t integer = 0;
  double floating = 0;
  std::string text;                   ///< a string; a global's "module.name"
  std::vector<const PyValue*> items;  ///< a tuple's or list's items; a dict's keys and values, alternating
  const PickledStorage* storage = nullptr;
  const PickledTensor* tensor = nullptr;
};

inline PyValue py_constant(PyValue::Kind k, std::int64_t i) {
  PyValue v;
  v.kind = k;
  v.integer = i;
  return v;
}
// Immutable values shared by every occurrence (these one-byte opcodes allocate nothing).
inline const PyValue kPyNone = py_constant(PyValue::Kind::none, 0), kPyTrue = py_constant(PyValue::Kind::boolean, 1),
                     kPyFalse = py_constant(PyValue::Kind::boolean, 0),
                     kPyEmptyTuple = py_constant(PyValue::Kind::tuple, 0);

/// The globals a state_dict needs. Storage classes are checked by name (below).
inline bool allowed_global(std::string_view module, std::string_view name) {
  if (module == "collections") return name == "OrderedDict";
  if (module == "torch._utils") return name == "_rebuild_tensor_v2" || name == "_rebuild_parameter";
  if (module != "torch") return false;
  static constexpr std::string_view kStorages[] = {
      "FloatStorage",        "DoubleStorage",        "HalfStorage",   "BFloat16Storage", "LongStorage",
      "IntStorage",          "ShortStorage",         "CharStorage",   "ByteStorage",     "BoolStorage",
      "ComplexFloatStorage", "ComplexDoubleStorage", "UntypedStorage"};
  for (std::string_view s : kStorages)
    if (name == s) return true;
  return false;
}

class Unpickler {
 public:
  Unpickler(std::span<const std::byte> bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  /// Runs the pickle to its STOP and returns the value it built.
  const PyValue& load() {
    for (;;) {
      const std::size_t at = pos_;
      const auto op = static_cast<unsigned char>(take(1)[0]);
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty())
          fail("pickle ends (STOP) with ", stack_.size(), " values on the stack");
        return *stack_.back();
      }
      step(op, at);
    }
  }

 private:
  using Kind = PyValue::Kind;

  template <class... Parts>
  [[noreturn]] void fail(Parts&&... parts) const {
    fail_format(source_, "data.pkl: ", std::forward<Parts>(parts)...);
  }

  std::span<const std::byte> take(std::uint64_t n) {
    if (n > bytes_.size() - pos_)
      fail("truncated pickle: ", n, " bytes needed at offset ", pos_, ", ", bytes_.size() - pos_, " left");
    const auto out = bytes_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  template <class U>
  U take_le() {
    return get_le<U>(take(sizeof(U)).data());
  }
  std::string take_string(std::uint64_t n) {
    const auto b = take(n);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  /// A newline-terminated line (GLOBAL's operands), without the newline.
  std::string take_line() {
    const std::size_t start = pos_;
    while (pos_ < bytes_.size() && bytes_[pos_] != std::byte{'\n'}) ++pos_;
    if (pos_ == bytes_.size()) fail("truncated pickle: unterminated GLOBAL operand at offset ", start);
    ++pos_;
    return std::string(reinterpret_cast<const char*>(bytes_.data() + start), pos_ - start - 1);
  }

  PyValue& make(Kind k) {
    PyValue& v = arena_.emplace_back();
    v.kind = k;
    return v;
  }
  void push(const PyValue& v) { stack_.push_back(&v); }
  void push_int(std::int64_t i) { make(Kind::integer).integer = i, push(arena_.back()); }
  const PyValue* pop() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size()))
      fail("malformed pickle: an opcode at offset ", pos_ - 1, " needs a value the stack does not have");
    const PyValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  /// The values above the topmost MARK, which is removed.
  std::vector<const PyValue*> pop_mark() {
    if (marks_.empty()) fail("malformed pickle: no MARK before the opcode at offset ", pos_ - 1);
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<const PyValue*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  PyValue& mutable_top(Kind k, std::string_view op) {
    if (stack_.empty() || stack_.back()->kind != k)
      fail(op, " at offset ", pos_ - 1, " applies to the wrong kind of value");
    return const_cast<PyValue&>(*stack_.back());  // every value is in arena_, which is not const
  }
  void push_tuple(std::vector<const PyValue*> items) {
    PyValue& t = make(Kind::tuple);
    t.items = std::move(items);
    push(t);
  }
  void memo_put(std::uint32_t index) {
    if (stack_.empty()) fail("malformed pickle: memo store from an empty stack at offset ", pos_ - 1);
    memo_[index] = stack_.back();
  }
  void memo_get(std::uint32_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("malformed pickle: memo entry ", index, " read before it was written");
    push(*it->second);
  }

  void global(std::string module, std::string name) {
    if (!allowed_global(module, name))
      fail("refuses the global '", module, ".", name,
           "': a state_dict needs only collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
           "torch._utils._rebuild_parameter and torch's storage classes (nothing was executed)");
    PyValue& g = make(Kind::global);
    g.text = module + "." + name;
    push(g);
  }

  static bool is_int(const PyValue* v) { return v->kind == Kind::integer; }
  std::vector<std::int64_t> int_tuple(const PyValue* v, std::string_view what) const {
    if (v->kind != Kind::tuple) fail("_rebuild_tensor_v2: ", what, " is not a tuple");
    std::vector<std::int64_t> out;
    for (const PyValue* i : v->items) {
      if (!is_int(i)) fail("_rebuild_tensor_v2: ", what, " holds something other than integers");
      out.push_back(i->integer);
    }
    return out;
  }

  void reduce() {
    const PyValue* args = pop();
    const PyValue* callable = pop();
    if (callable->kind != Kind::global || args->kind != Kind::tuple)
      fail("REDUCE at offset ", pos_ - 1, " calls something that is not an allowed global with a tuple of arguments");
    const std::string& f = callable->text;
    const auto& a = args->items;
    if (f == "collections.OrderedDict") {
      if (!a.empty()) fail("collections.OrderedDict called with arguments");
      push(make(Kind::dict));
    } else if (f == "torch._utils._rebuild_tensor_v2") {
      if (a.size() < 6 || a.size() > 7 || a[0]->kind != Kind::storage || !is_int(a[1]))
        fail(
            "_rebuild_tensor_v2 called with arguments other than (storage, offset, size, stride, requires_grad, "
            "hooks[, metadata])");
      PyValue& t = make(Kind::tensor);
      t.tensor = &tensors_.emplace_back(
          PickledTensor{a[0]->storage, a[1]->integer, int_tuple(a[2], "size"), int_tuple(a[3], "stride")});
      push(t);
    } else if (f == "torch._utils._rebuild_parameter") {
      if (a.size() != 3 || a[0]->kind != Kind::tensor) fail("_rebuild_parameter called without a tensor");
      push(*a[0]);
    } else {
      fail("'", f, "' cannot be called (it is only a storage type)");
    }
  }

  void persistent_load() {
    const PyValue* pid = pop();
    const auto& a = pid->items;
    if (pid->kind != Kind::tuple || a.size() != 5 || a[0]->kind != Kind::string || a[0]->text != "storage" ||
        a[1]->kind != Kind::global || a[2]->kind != Kind::string || !is_int(a[4]))
      fail("a persistent id at offset ", pos_ - 1, " is not ('storage', type, key, location, numel)");
    const std::string& type = a[1]->text;
    if (type.rfind("torch.", 0) != 0 || type.find("Storage") == std::string::npos)
      fail("a persistent id names '", type, "', not a storage type");
    PyValue& s = make(Kind::storage);
    s.storage = &storages_.emplace_back(PickledStorage{type.substr(6), a[2]->text, a[4]->integer});
    push(s);
  }

  void step(unsigned char op, std::size_t at) {
    switch (op) {
      case 0x80: {
        const unsigned proto = std::to_integer<unsigned>(take(1)[0]);
        if (proto < 2 || proto > 5) fail("pickle protocol ", proto, " (PyTorch writes 2; 2 to 5 are read)");
        break;
      }
      case 0x95:
        take(8);
        break;  // FRAME: a length hint only
      case '(':
        marks_.push_back(stack_.size());
        break;
      case ')':
        push(kPyEmptyTuple);
        break;
      case ']':
        push(make(Kind::list));
        break;
      case '}':
        push(make(Kind::dict));
        break;
      case 't':
        push_tuple(pop_mark());
        break;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<const PyValue*> items(op - 0x84u);
        for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
        push_tuple(std::move(items));
        break;
      }
      case 'a': {
        const PyValue* v = pop();
        mutable_top(Kind::list, "APPEND").items.push_back(v);
        break;
      }
      case 'e': {
        auto items = pop_mark();
        auto& list = mutable_top(Kind::list, "APPENDS").items;
        list.insert(list.end(), items.begin(), items.end());
        break;
      }
      case 's': {
        const PyValue* v = pop();
        const PyValue* k = pop();
        auto& d = mutable_top(Kind::dict, "SETITEM").items;
        d.push_back(k), d.push_back(v);
        break;
      }
      case 'u': {
        auto items = pop_mark();
        if (items.size() % 2) fail("SETITEMS at offset ", at, " with an odd number of values");
        auto& d = mutable_top(Kind::dict, "SETITEMS").items;
        d.insert(d.end(), items.begin(), items.end());
        break;
      }
      case 'q':
        memo_put(std::to_integer<std::uint32_t>(take(1)[0]));
        break;
      case 'r':
        memo_put(take_le<std::uint32_t>());
        break;
      case 0x94:
        memo_put(static_cast<std::uint32_t>(memo_.size()));
        break;
      case 'h':
        memo_get(std::to_integer<std::uint32_t>(take(1)[0]));
        break;
      case 'j':
        memo_get(take_le<std::uint32_t>());
        break;
      case 'J':
        push_int(static_cast<std::int32_t>(take_le<std::uint32_t>()));
        break;
      case 'K':
        push_int(std::to_integer<std::int64_t>(take(1)[0]));
        break;
      case 'M':
        push_int(take_le<std::uint16_t>());
        break;
      case 0x8a: {
        const unsigned n = std::to_integer<unsigned>(take(1)[0]);
        if (n > 8) fail("LONG1 at offset ", at, ": a ", n, "-byte integer does not fit in 64 bits");
        const auto b = take(n);
        std::uint64_t u = 0;
        for (unsigned i = 0; i < n; ++i) u |= std::to_integer<std::uint64_t>(b[i]) << (8 * i);
        if (n > 0 && n < 8 && (std::to_integer<unsigned>(b[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);
        push_int(static_cast<std::int64_t>(u));
        break;
      }
      case 'X':
        make(Kind::string).text = take_string(take_le<std::uint32_t>()), push(arena_.back());
        break;
      case 0x8c:
        make(Kind::string).text = take_string(std::to_integer<unsigned>(take(1)[0])), push(arena_.back());
        break;
      case 'N':
        push(kPyNone);
        break;
      case 0x88:
        push(kPyTrue);
        break;
      case 0x89:
        push(kPyFalse);
        break;
      case 'G': {
        const std::uint64_t bits = [&] {
          const auto b = take(8);
          std::uint64_t u = 0;
          for (std::byte x : b) u = (u << 8) | std::to_integer<std::uint64_t>(x);  // big-endian
          return u;
        }();
        PyValue& f = make(Kind::floating);
        std::memcpy(&f.floating, &bits, sizeof bits);
        push(f);
        break;
      }
      case 'c': {
        std::string module = take_line();
        global(std::move(module), take_line());
        break;
      }
      case 0x93: {
        const PyValue* name = pop();
        const PyValue* module = pop();
        if (name->kind != Kind::string || module->kind != Kind::string)
          fail("STACK_GLOBAL at offset ", at, " without two strings");
        global(module->text, name->text);
        break;
      }
      case 'R':
        reduce();
        break;
      case 'b': {
        const PyValue* state = pop();
        // torch.save pickles a state_dict's `_metadata` (module versions) as the state of its
        // OrderedDict: accepted and ignored. Nothing else is built.
        if (stack_.empty() || stack_.back()->kind != Kind::dict || state->kind != Kind::dict)
          fail("BUILD at offset ", at, " applies to something other than a dict's metadata");
        break;
      }
      case 'Q':
        persistent_load();
        break;
      default: {
        const char c = static_cast<char>(op);
        fail("unknown or unsupported pickle opcode 0x", hex_bytes(std::as_bytes(std::span(&c, 1))),
             (op >= 0x20 && op < 0x7f) ? std::string(" '") + c + "'" : std::string(), " at offset ", at,
             " (only the opcodes of a state_dict are read)");
      }
    }
  }

  std::span<const std::byte> bytes_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::deque<PyValue> arena_;
  std::deque<PickledStorage> storages_;
  std::deque<PickledTensor> tensors_;
  std::vector<const PyValue*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, const PyValue*> memo_;
};

/// Writes the few opcodes a state_dict pickle needs (protocol 2, as torch.save writes).
class PickleWriter {
 public:
  void proto() { op(0x80), op(2); }
  void stop() { op('.'); }
  void mark() { op('('); }
  void tuple() { op('t'); }
  void empty_tuple() { op(')'); }
  void setitems() { op('u'); }
  void reduce() { op('R'); }
  void binpersid() { op('Q'); }
  void boolean(bool b) { op(b ? 0x88 : 0x89); }
  void global(std::string_view module, std::string_view name) {
    op('c');
    bytes(module), op('\n'), bytes(name), op('\n');
  }
  void string(std::string_view s) {
    op('X');
    le<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    bytes(s);
  }
  void integer(std::int64_t v) {
    if (v >= 0 && v < 256) {
      op('K'), op(static_cast<unsigned char>(v));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J'), le<std::uint32_t>(static_cast<std::uint32_t>(v));
    } else {
      op(0x8a), op(8), le<std::uint64_t>(static_cast<std::uint64_t>(v));
    }
  }
  std::vector<std::byte> take() && { return std::move(out_); }

 private:
  void op(unsigned char c) { out_.push_back(static_cast<std::byte>(c)); }
  void bytes(std::string_view s) {
    const auto b = std::as_bytes(std::span(s));
    out_.insert(out_.end(), b.begin(), b.end());
  }
  template <class U>
  void le(U v) {
    std::byte b[sizeof(U)];
    put_le<U>(b, v);
    out_.insert(out_.end(), b, b + sizeof(U));
  }
  std::vector<std::byte> out_;
};

}  // namespace tinynet::io::detail
