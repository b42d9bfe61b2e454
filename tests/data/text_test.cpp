// Reading lines and parallel text.
#include "ropelab/data/text.h"

#include <filesystem>
#include <fstream>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;

using Text = ropelab::testing::TempDir;  // a fresh directory per test

TEST_F(Text, TsvStripsBomAndCrAndCountsEmptyPairs) {
  auto path = write("a.tsv", "\xEF\xBB\xBFhello\thola\r\n\nworld\t\ncat\tgato\n");
  auto text = read_parallel(DataOptions(), path);
  ASSERT_EQ(text.source.size(), 2u);
  EXPECT_EQ(text.source[0], "hello");
  EXPECT_EQ(text.target[0], "hola");
  EXPECT_EQ(text.line[1], 4);
  EXPECT_EQ(text.skipped_empty, 2);
  // every trailing CR goes, also stray ones before the CRLF
  EXPECT_EQ(read_text_lines(write("cr.txt", "a\r\r\nb\r")), (std::vector<std::string>{"a", "b"}));
}

TEST_F(Text, ErrorsNameFileAndLine) {
  auto bad_utf8 = write("b.tsv", "ok\tok\nbad \xC3\x28\tx\n");
  EXPECT_EQ(error_of([&] { read_parallel(DataOptions(), bad_utf8); }), bad_utf8 + ":2: invalid UTF-8");
  auto no_tab = write("c.tsv", "ok\tok\nno tab here\n");
  EXPECT_EQ(error_of([&] { read_parallel(DataOptions(), no_tab); }),
            no_tab + ":2: expected exactly one tab between source and target");
  write("d.en", "a\nb\nc\n");
  write("d.es", "a\nb\n");
  auto prefix = (dir_ / "d").string();
  EXPECT_EQ(error_of([&] { read_parallel(DataOptions().format(CorpusFormat::parallel), prefix); }),
            prefix + ".en has 3 lines but " + prefix + ".es has 2");
}

TEST_F(Text, Utf8Validation) {
  EXPECT_TRUE(valid_utf8("¿Dónde está? — “sí”"));
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(valid_utf8("abc\xE2\x82"));       // truncated
}
