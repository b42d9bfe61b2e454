#pragma once
/// The text normalisations of the metrics, as sacreBLEU 2.x applies them.

#include <string>

namespace ropelab {

/// sacreBLEU's 13a tokenizer (mteval-v13a): drops <skipped>, joins "-\n", unescapes
/// &quot; &amp; &lt; &gt;, splits punctuation, and splits . and , unless next to a digit.
std::string tokenize_13a(const std::string& line);

/// Python's str.lower() for the scripts in Unicode's simple case mapping (via towlower
/// in a UTF-8 locale).
std::string lowercase_utf8(const std::string& text);

}  // namespace ropelab
