#include "ropelab/data/options.h"

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {
const EnumNames<CorpusFormat, 3> kFormatNames{
    {{CorpusFormat::tsv, "tsv"}, {CorpusFormat::parallel, "parallel"}, {CorpusFormat::text, "text"}}};
const EnumNames<SourceLayout, 2> kLayoutNames{{{SourceLayout::sequence, "sequence"}, {SourceLayout::grid, "grid"}}};
const EnumNames<TokenizerType, 3> kTokenizerNames{
    {{TokenizerType::word, "word"}, {TokenizerType::sentencepiece, "sentencepiece"}, {TokenizerType::byte, "byte"}}};
}  // namespace

std::string to_string(CorpusFormat v) { return enum_name(v, kFormatNames); }
std::string to_string(SourceLayout v) { return enum_name(v, kLayoutNames); }
std::string to_string(TokenizerType v) { return enum_name(v, kTokenizerNames); }
CorpusFormat parse_corpus_format(const std::string& s) { return parse_enum(s, kFormatNames, "corpus format"); }
SourceLayout parse_source_layout(const std::string& s) { return parse_enum(s, kLayoutNames, "source layout"); }
TokenizerType parse_tokenizer_type(const std::string& s) { return parse_enum(s, kTokenizerNames, "tokenizer"); }

}  // namespace ropelab
