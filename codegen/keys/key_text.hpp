#pragma once
// A kernel key's text form, declared once as an ordered list of parts from which both to_string
// and parse derive, so that the two cannot drift apart. The text is the parts' words joined by
// '.', e.g. "spmv.vector.f32.b256.l8.o64":
//   word("spmv")                              a fixed word
//   choice("value type", &K::value, {...})    one word per allowed value (to_string(v) by default)
//   number("block", 'b', &K::block)           "b256": a letter and an int as std::from_chars reads
//                                             it (leading zeros and "-0" too: texts that parsed
//                                             before the declarations still parse)
//   flag("o64", &K::offsets64, true)          a word present exactly when the field has that value
//   bit_set("types", "t=", &K::types, names)  "t=coo+dense": set bits' names in order, or "t=none"
//   implied(&K::lanes, fn)                    no word: parse sets the field from the others
// Modifiers: .when(pred) (the part exists only for keys where pred holds; parse evaluates it on the
// key read so far, so pred may read only the fields of earlier parts), .allow(...) (the values
// parse accepts) and .optional(default) (left out of the text while the field has its default,
// which may depend on other fields; written out, the default is refused: one text per key).
// Parse errors name the part and go through the key's own fail function (a UsageError); a key's
// check function then refuses what no single part can see (combinations of fields).
#include <algorithm>
#include <charconv>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

inline std::vector<std::string_view> split_key(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// The values a number part accepts, and how an error names them.
struct Allowed {
  std::function<bool(int)> ok;
  std::string text;
};
inline Allowed one_of(std::vector<int> values) {
  return {[values](int v) { return std::find(values.begin(), values.end(), v) != values.end(); },
          fmt::format("{}", fmt::join(values, ", "))};
}
inline Allowed power_of_two_in(int lo, int hi) {
  return {[lo, hi](int v) { return v >= lo && v <= hi && (v & (v - 1)) == 0; },
          fmt::format("a power of two in [{}, {}]", lo, hi)};
}
inline Allowed in_range(int lo, int hi) {
  return {[lo, hi](int v) { return v >= lo && v <= hi; }, fmt::format("[{}, {}]", lo, hi)};
}
// Threads per block: whole warps, at most 1024.
inline Allowed block_threads() {
  return {[](int v) { return v >= 32 && v <= 1024 && v % 32 == 0; }, "a multiple of 32 in [32, 1024]"};
}

// `when` predicates: the key's field is (is not) one of the values.
template <class K, class V>
std::function<bool(const K&)> is(V K::*m, std::initializer_list<V> values) {
  return [m, vs = std::vector<V>(values)](const K& k) { return std::find(vs.begin(), vs.end(), k.*m) != vs.end(); };
}
template <class K, class V>
std::function<bool(const K&)> is_not(V K::*m, std::initializer_list<V> values) {
  return [in = is(m, values)](const K& k) { return !in(k); };
}

// One part of a key's text (see the top of this file): made by the functions below, read by KeyText.
template <class K>
struct KeyPart {
  KeyPart when(std::function<bool(const K&)> p) && {
    when_ = std::move(p);
    return std::move(*this);
  }

  std::string name_;
  std::function<bool(const K&)> when_;                     // null: every key
  std::function<std::string(const K&)> word_;              // the part's word in k's text
  std::function<std::string(K&, std::string_view)> read_;  // sets k from a word: "" or why it is malformed
  std::function<bool(std::string_view)> claims_;           // a word looks like this part's
  bool optional_ = false;                                  // then, all three:
  std::function<bool(const K&)> omitted_;                  //   k's text leaves the part out
  std::function<void(K&)> absent_;                         //   parse: the part was left out
  std::function<std::string(const K&)> written_default_;   //   parse: written out: "" or why refused
};

// A part that reads and writes one field, V K::*m.
template <class K, class V>
class Field : public KeyPart<K> {
 public:
  Field(std::string name, V K::*m) : m_(m) { this->name_ = std::move(name); }
  Field when(std::function<bool(const K&)> p) && {
    this->when_ = std::move(p);
    return std::move(*this);
  }
  Field allow(Allowed a) && {
    this->read_ = [read = std::move(this->read_), a = std::move(a), m = m_, name = this->name_](
                      K& k, std::string_view w) -> std::string {
      std::string why = read(k, w);
      if (why.empty() && !a.ok(k.*m)) why = fmt::format("{} {}: allowed {}", name, k.*m, a.text);
      return why;
    };
    return std::move(*this);
  }
  Field optional(V fixed) && {
    return std::move(*this).optional(std::function<V(const K&)>([fixed](const K&) { return fixed; }));
  }
  Field optional(std::function<V(const K&)> def) && {
    const auto m = m_;
    this->optional_ = true;
    this->omitted_ = [m, def](const K& k) { return k.*m == def(k); };
    this->absent_ = [m, def](K& k) { k.*m = def(k); };
    this->written_default_ = [m, def, name = this->name_, word = this->word_](const K& k) {
      return k.*m == def(k) ? fmt::format("{} '{}' is the default: its text leaves it out", name, word(k))
                            : std::string();
    };
    return std::move(*this);
  }

 private:
  V K::*m_;
};

// "<prefix><int>", e.g. number("block", 'b', &K::block) for "b256".
template <class K>
Field<K, int> number(std::string name, char prefix, int K::*m) {
  Field<K, int> f(std::move(name), m);
  f.word_ = [m, prefix](const K& k) { return fmt::format("{}{}", prefix, k.*m); };
  f.read_ = [m, prefix, name = f.name_](K& k, std::string_view w) -> std::string {
    if (w.size() < 2 || w[0] != prefix) return fmt::format("{} part must be {}<number>, got '{}'", name, prefix, w);
    const auto [end, ec] = std::from_chars(w.data() + 1, w.data() + w.size(), k.*m);
    if (ec != std::errc() || end != w.data() + w.size()) return fmt::format("{} '{}' is not a number", name, w);
    return {};
  };
  f.claims_ = [prefix](std::string_view w) { return !w.empty() && w[0] == prefix; };
  return f;
}

// One word per allowed value: spell(v), by default the value's to_string.
template <class K, class V>
Field<K, V> choice(std::string name, V K::*m, std::vector<V> values,
                   std::type_identity_t<std::function<std::string(V)>> spell) {
  Field<K, V> f(std::move(name), m);
  f.word_ = [m, spell](const K& k) { return spell(k.*m); };
  f.read_ = [m, spell, values, name = f.name_](K& k, std::string_view w) -> std::string {
    std::vector<std::string> words;
    for (const V& v : values) {
      words.push_back(spell(v));
      if (words.back() == w) {
        k.*m = v;
        return {};
      }
    }
    return fmt::format("unknown {} '{}' (allowed: {})", name, w, fmt::join(words, ", "));
  };
  f.claims_ = [spell, values](std::string_view w) {
    for (const V& v : values)
      if (spell(v) == w) return true;
    return false;
  };
  return f;
}
template <class K, class V>
Field<K, V> choice(std::string name, V K::*m, std::vector<V> values) {
  return choice(std::move(name), m, std::move(values),
                std::function<std::string(V)>([](V v) { return std::string(to_string(v)); }));
}

// A word that stands for m == value: in the text exactly when the field has that value.
template <class K, class V>
KeyPart<K> flag(std::string word, V K::*m, V value) {
  Field<K, V> f(word, m);
  f.word_ = [word](const K&) { return word; };
  f.read_ = [m, value](K& k, std::string_view) {
    k.*m = value;
    return std::string();
  };
  f.claims_ = [word](std::string_view w) { return w == word; };
  f.optional_ = true;
  f.omitted_ = [m, value](const K& k) { return !(k.*m == value); };
  return f;
}

// No word: parse sets the field from the others (after every part is read).
template <class K, class V>
KeyPart<K> implied(V K::*m, std::type_identity_t<std::function<V(const K&)>> value) {
  Field<K, V> f("", m);
  f.claims_ = [](std::string_view) { return false; };
  f.optional_ = true;
  f.omitted_ = [](const K&) { return true; };
  f.absent_ = [m, value](K& k) { k.*m = value(k); };
  return f;
}

// A fixed word.
struct Word {
  std::string word;
  template <class K>
  operator KeyPart<K>() const {
    Field<K, int> f(fmt::format("'{}'", word), nullptr);
    f.word_ = [w = word](const K&) { return w; };
    f.read_ = [w = word](K&, std::string_view got) {
      return got == w ? std::string() : fmt::format("expected '{}', got '{}'", w, got);
    };
    return f;
  }
};
inline Word word(std::string w) { return {std::move(w)}; }

// "<prefix><name>+<name>..." for the set bits of m, in bit order ("<prefix>none" for none).
template <class K, class V>
KeyPart<K> bit_set(std::string name, std::string prefix, V K::*m, std::vector<std::string> names) {
  Field<K, V> f(std::move(name), m);
  f.word_ = [m, prefix, names](const K& k) {
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
      if ((k.*m >> i) & 1u) {
        if (!list.empty()) list += '+';
        list += names[i];
      }
    return prefix + (list.empty() ? "none" : list);
  };
  f.read_ = [m, prefix, names, name = f.name_](K& k, std::string_view w) -> std::string {
    if (!w.starts_with(prefix))
      return fmt::format("{} part must be {}<name>+<name>... or {}none", name, prefix, prefix);
    k.*m = 0;
    if (w.substr(prefix.size()) == "none") return {};
    size_t next = 0;  // the bits must come in order, each once
    for (auto item : split_key(w.substr(prefix.size()), '+')) {
      size_t i = std::find(names.begin(), names.end(), item) - names.begin();
      if (i == names.size()) return fmt::format("unknown {} '{}'", name, item);
      if (i < next) return fmt::format("{} must be listed once, in the order {}", name, fmt::join(names, "+"));
      k.*m = static_cast<V>(k.*m | (1u << i));
      next = i + 1;
    }
    return {};
  };
  return f;
}

// A key's text: print and parse from its parts. `fail` throws the key's UsageError; `check`, when
// given, refuses parsed keys whose fields do not go together (throwing through `fail` too).
template <class K>
class KeyText {
 public:
  using Fail = void (*)(std::string_view text, const std::string& why);  // must throw
  using Check = void (*)(const K& key, std::string_view text);
  KeyText(std::vector<KeyPart<K>> parts, Fail fail, Check check = nullptr)
      : parts_(std::move(parts)), fail_(fail), check_(check) {}

  std::string print(const K& k) const {
    std::string s;
    bool first = true;
    for (const auto& p : parts_) {
      if ((p.when_ && !p.when_(k)) || (p.optional_ && p.omitted_(k))) continue;
      if (!first) s += '.';
      s += p.word_(k);
      first = false;
    }
    return s;
  }

  K parse(std::string_view text) const {
    const auto words = split_key(text, '.');
    K k{};
    size_t i = 0;
    std::vector<const KeyPart<K>*> absent, written;
    for (const auto& p : parts_) {
      if (p.when_ && !p.when_(k)) continue;
      if (p.optional_) {
        if (i == words.size() || !p.claims_(words[i])) {
          absent.push_back(&p);
          continue;
        }
        written.push_back(&p);
      } else if (i == words.size()) {
        fail(text, fmt::format("the {} part is missing", p.name_));
      }
      if (std::string why = p.read_(k, words[i]); !why.empty()) fail(text, why);
      ++i;
    }
    if (i < words.size()) fail(text, fmt::format("unexpected part '{}'", words[i]));
    for (const auto* p : absent)
      if (p->absent_) p->absent_(k);
    for (const auto* p : written)
      if (p->written_default_)
        if (std::string why = p->written_default_(k); !why.empty()) fail(text, why);
    if (check_) check_(k, text);
    return k;
  }

 private:
  [[noreturn]] void fail(std::string_view text, const std::string& why) const {
    fail_(text, why);
    throw UsageError(why);  // not reached: fail_ throws
  }
  std::vector<KeyPart<K>> parts_;
  Fail fail_;
  Check check_;
};

}  // namespace dbsparse::codegen
