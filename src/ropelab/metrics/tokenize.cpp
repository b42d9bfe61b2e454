#include "ropelab/metrics/tokenize.h"

#include <clocale>
#include <cwctype>
#include <string_view>

#include "ropelab/metrics/utf8.h"

namespace ropelab {

namespace {

/// ' '.join(s.split()) on code points.
std::u32string normalize_spaces(const std::u32string& s) {
  std::u32string out;
  bool pending = false;
  for (char32_t c : s) {
    if (utf8::is_space(c)) {
      pending = !out.empty();
    } else {
      if (pending) out.push_back(U' ');
      pending = false;
      out.push_back(c);
    }
  }
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }

/// The 13a punctuation class: [{-~] [[-`] [ -&] [(-+] [:-@] and '/'.
bool is_13a_punct(char32_t c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) ||
         (c >= 0x3A && c <= 0x40) || c == U'/';
}

}  // namespace

std::string tokenize_13a(const std::string& input) {
  std::string line = input;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  const auto s = utf8::decode(" " + line + " ");
  // The four mteval regexes, each a left-to-right, non-overlapping substitution as re.sub does.
  std::u32string a;  // ([{-~[-` -&(-+:-@/]) -> ' \1 '
  for (char32_t c : s) {
    if (is_13a_punct(c))
      a += U' ', a += c, a += U' ';
    else
      a += c;
  }
  std::u32string b;  // ([^0-9])([.,]) -> '\1 \2 '
  for (size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && !is_digit(a[i]) && (a[i + 1] == U'.' || a[i + 1] == U',')) {
      b += a[i], b += U' ', b += a[i + 1], b += U' ', i += 2;
    } else {
      b += a[i++];
    }
  }
  std::u32string c;  // ([.,])([^0-9]) -> ' \1 \2'
  for (size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && (b[i] == U'.' || b[i] == U',') && !is_digit(b[i + 1])) {
      c += U' ', c += b[i], c += U' ', c += b[i + 1], i += 2;
    } else {
      c += b[i++];
    }
  }
  std::u32string d;  // ([0-9])(-) -> '\1 \2 '
  for (size_t i = 0; i < c.size();) {
    if (i + 1 < c.size() && is_digit(c[i]) && c[i + 1] == U'-') {
      d += c[i], d += U' ', d += U'-', d += U' ', i += 2;
    } else {
      d += c[i++];
    }
  }
  std::string out;
  for (char32_t cp : normalize_spaces(d)) utf8::append(out, cp);
  return out;
}

std::string lowercase_utf8(const std::string& text) {
  static const bool locale_ok = [] {
    return std::setlocale(LC_CTYPE, "C.UTF-8") != nullptr || std::setlocale(LC_CTYPE, "en_US.UTF-8") != nullptr;
  }();
  (void)locale_ok;
  std::string out;
  for (char32_t cp : utf8::decode(text))
    utf8::append(out, static_cast<char32_t>(std::towlower(static_cast<wint_t>(cp))));
  return out;
}

}  // namespace ropelab
