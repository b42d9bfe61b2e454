// Writes refused before they start, and files never seen half-written.
#include "ropelab/util/files.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../test_util.h"
#include "ropelab/run/run.h"

using namespace ropelab;
using ropelab::testing::error_of;

using Files = ropelab::testing::TempDir;  // a fresh directory per test

TEST_F(Files, RequiredSpaceAgainstTheDiskAndTheFileSizeLimit) {
  const auto dir = dir_.string();
  EXPECT_NO_THROW(require_space(dir, 4096, "small"));
  auto m = error_of([&] { require_space(dir, uint64_t{1} << 60, "big.pt"); });
  EXPECT_EQ(m.rfind("big.pt: needs 1073741824.0 GiB but " + dir + " has ", 0), 0u) << m;
  bool fits = false;
  {
    ropelab::testing::FileSizeLimit limit(64 * 1024);
    m = error_of([&] { require_space(dir, 100 * 1024, "c.pt"); });
    fits = error_of([&] { require_space(dir, 60 * 1024, "c.pt"); }).empty();
  }
  EXPECT_EQ(m,
            "c.pt: needs 100 KiB but this process may write files of at most 64 KiB (ulimit -f); nothing was written");
  EXPECT_TRUE(fits);
}

// An atomic write replaces the whole file or nothing: a failing write (the temporary file is
// /dev/full) leaves the old contents and no temporary file.
TEST_F(Files, AnAtomicWriteReplacesAllOrNothing) {
  const auto path = write("config.yaml", "old\n");
  write_file_atomically(path, "new\n", "config");
  EXPECT_EQ(ropelab::testing::read_text(path), "new\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::create_symlink("/dev/full", path + ".tmp");
  EXPECT_EQ(error_of([&] { write_file_atomically(path, "newer\n", "config"); }),
            path + ": cannot write config (disk full?): No space left on device");
  EXPECT_EQ(ropelab::testing::read_text(path), "new\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path + ".tmp"));
}

// An atomic copy reads its source in blocks (3 MiB and a part here) into the temporary
// file and replaces the target whole; a source that cannot be read, or a write that fails,
// leaves the target as it was and no temporary file.
TEST_F(Files, AnAtomicCopyReplacesAllOrNothing) {
  std::string bytes(3 * (1 << 20) + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919) >> 3);
  const auto from = write("checkpoint_last.pt", bytes), to = (dir_ / "checkpoint_5.pt").string();
  write("checkpoint_5.pt", "old");
  copy_file_atomically(from, to, "a copy");
  EXPECT_EQ(ropelab::testing::read_text(to), bytes);
  EXPECT_FALSE(std::filesystem::exists(to + ".tmp"));
  write("checkpoint_5.pt", "old");
  const auto missing = (dir_ / "nothing.pt").string();
  EXPECT_EQ(error_of([&] { copy_file_atomically(missing, to, "a copy"); }),
            missing + ": cannot read (No such file or directory)");
  EXPECT_EQ(error_of([&] { copy_file_atomically(dir_.string(), to, "a copy"); }),
            dir_.string() + ": cannot read (Is a directory); " + to + " untouched");
  EXPECT_FALSE(std::filesystem::exists(to + ".tmp"));
  EXPECT_EQ(ropelab::testing::read_text(to), "old");
  std::filesystem::create_symlink("/dev/full", to + ".tmp");
  EXPECT_EQ(error_of([&] { copy_file_atomically(from, to, "a copy"); }),
            to + ": cannot write a copy (disk full?): No space left on device");
  EXPECT_EQ(ropelab::testing::read_text(to), "old");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(to + ".tmp")));
}

// The numbered copy of the last checkpoint is checked like any checkpoint before it is made.
TEST_F(Files, ANumberedCheckpointThatCannotFitIsNotStarted) {
  RunPaths paths(dir_.string());
  write("checkpoint_last.pt", std::string(100 * 1024, 'x'));
  paths.keep_numbered(5, 3);
  EXPECT_TRUE(std::filesystem::exists(paths.numbered(5)));
  std::string m;
  {
    ropelab::testing::FileSizeLimit limit(64 * 1024);
    m = error_of([&] { paths.keep_numbered(10, 3); });
  }
  EXPECT_EQ(m,
            paths.numbered(10) +
                ": needs 100 KiB but this process may write files of at most 64 KiB (ulimit -f); nothing was written");
  EXPECT_FALSE(std::filesystem::exists(paths.numbered(10) + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(paths.numbered(10)));
  EXPECT_EQ(paths.numbered_checkpoints().size(), 1u);
  // a copy that fails once started (its temporary file a link to /dev/full): one line, and
  // the temporary file removed
  std::filesystem::create_symlink("/dev/full", paths.numbered(10) + ".tmp");
  const auto failed = error_of([&] { paths.keep_numbered(10, 3); });
  EXPECT_EQ(failed,
            paths.numbered(10) + ": cannot write a copy of the last checkpoint (disk full?): No space left on device");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(paths.numbered(10) + ".tmp")));
  EXPECT_FALSE(std::filesystem::exists(paths.numbered(10)));
  EXPECT_EQ(paths.numbered_checkpoints().size(), 1u);
}

// A file's fingerprint is the 64-bit FNV-1a hash of its bytes: the published test vectors
// ("", "a", "foobar") and 76800 bytes read in several blocks, against an independent
// Python implementation (h = ((h ^ byte) * 0x100000001b3) mod 2^64 from 0xcbf29ce484222325).
TEST_F(Files, AFingerprintIsTheFnv1aHashOfTheBytes) {
  EXPECT_EQ(file_fingerprint(write("empty", "")), "cbf29ce484222325");
  EXPECT_EQ(file_fingerprint(write("a", "a")), "af63dc4c8601ec8c");
  EXPECT_EQ(file_fingerprint(write("foobar", "foobar")), "85944171f73967e8");
  std::string bytes;
  for (int i = 0; i < 300; ++i)
    for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
  EXPECT_EQ(file_fingerprint(write("blocks", bytes)), "9a27aaa0adbc6725");
  const auto missing = (dir_ / "missing.pt").string();
  EXPECT_EQ(error_of([&] { file_fingerprint(missing); }), missing + ": cannot read (No such file or directory)");
}

// A file read between two fingerprints: the fingerprint of what was read when it stayed the
// same, one line naming it when it was replaced meanwhile, "" for a file that is not there.
TEST_F(Files, AFileReplacedWhileReadIsCaught) {
  const auto path = write("c.pt", "a");
  int reads = 0;
  EXPECT_EQ(fingerprint_while_reading(path, [&] { ++reads; }), "af63dc4c8601ec8c");
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(error_of([&] { fingerprint_while_reading(path, [&] { write("c.pt", "foobar"); }); }),
            path + ": replaced while it was being read; run the command again");
  const auto missing = (dir_ / "missing.pt").string();
  EXPECT_EQ(fingerprint_while_reading(missing, [] {}), "");
  EXPECT_EQ(error_of([&] { fingerprint_while_reading(missing, [&] { write("missing.pt", "a"); }); }),
            missing + ": replaced while it was being read; run the command again");
}

// Two processes writing one file over and over, a reader between them: every read finds one
// writer's whole file, and no write fails (each writer has PATH.tmp to itself while it writes).
TEST_F(Files, TwoWritersOfOneFileTakeTurns) {
  const auto path = (dir_ / "eval.json").string();
  constexpr size_t kBytes = 1 << 21;
  constexpr int kWrites = 60;
  std::vector<pid_t> writers;
  for (const char fill : {'a', 'b'}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string bytes(kBytes, fill);
      try {
        for (int i = 0; i < kWrites; ++i) write_file_atomically(path, bytes, "report");
      } catch (const std::exception&) {
        std::_Exit(1);
      }
      std::_Exit(0);
    }
    writers.push_back(pid);
  }
  int torn = 0, reads = 0;
  std::vector<int> statuses(writers.size(), -1);  // -1 while the writer runs
  for (;;) {
    bool running = false;
    for (size_t w = 0; w < writers.size(); ++w) {
      if (statuses[w] == -1 && ::waitpid(writers[w], &statuses[w], WNOHANG) == 0) statuses[w] = -1;
      running |= statuses[w] == -1;
    }
    std::ifstream in(path, std::ios::binary);
    if (in) {
      const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ++reads;
      torn += got.size() != kBytes || got.find_first_not_of(got[0]) != std::string::npos;
    }
    if (!running) break;
  }
  for (const int status : statuses) EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  EXPECT_GT(reads, 0);
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}
