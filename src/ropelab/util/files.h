#pragma once
/// Files that readers never see half-written, and writes that are refused before they start
/// when they cannot fit.

#include <cstdint>
#include <functional>
#include <string>

namespace ropelab {

/// Throws "WHAT: needs N but DIR has M free; nothing was written" when `bytes` will not fit
/// in DIR's file system (the space an unprivileged user may fill), or the same with the
/// limit when it exceeds this process's file-size limit (ulimit -f).
void require_space(const std::string& dir, uint64_t bytes, const std::string& what);

/// Writes `bytes` to PATH so that a reader, or a crash at any moment, finds the old file or
/// the new one, never a part: the space is checked first (require_space), PATH.tmp is
/// written with checked write calls and fsynced, renamed over PATH, and the directory is
/// fsynced. On an error PATH.tmp is removed, PATH is untouched, and the one-line message
/// names PATH and `what`: "PATH: cannot write WHAT (disk full?): REASON".
void write_file_atomically(const std::string& path, const std::string& bytes, const std::string& what);

/// FROM's bytes to PATH as write_file_atomically writes them (space, PATH.tmp fsynced,
/// rename, directory fsynced; PATH untouched on an error, with the same messages), read in
/// blocks rather than held in memory: a checkpoint's numbered copy, a tokenizer model. A
/// FROM that cannot be read throws "FROM: cannot read (REASON)".
void copy_file_atomically(const std::string& from, const std::string& path, const std::string& what);

/// The 64-bit FNV-1a hash of the file's bytes (Fowler, Noll and Vo), as 16 hex digits: what
/// tells two versions of a file apart (a checkpoint saved again). Throws naming PATH when it
/// cannot be read.
std::string file_fingerprint(const std::string& path);

/// The fingerprint of PATH as `read` (which loads PATH) found it: taken before and after
/// `read`, so that a file replaced meanwhile (a training saving its checkpoint again) throws
/// "PATH: replaced while it was being read; run the command again" instead of pairing one
/// version's fingerprint with the other's contents. "" when PATH does not exist (`read`
/// then says what is missing).
std::string fingerprint_while_reading(const std::string& path, const std::function<void()>& read);

}  // namespace ropelab
