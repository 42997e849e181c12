#pragma once
/// The error types of mold. Every message names the thing, the value and what
/// to do.

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace mold {

/// Base of every error mold throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Text that should have been a value (a byte count, a dtype, a number) was
/// not.
class ParseError : public Error {
 public:
  using Error::Error;
};

/// A configuration or calibration file is unreadable or malformed.
class ConfigError : public Error {
 public:
  ConfigError(std::filesystem::path file, std::size_t line, std::string key,
              const std::string& problem);
  const std::filesystem::path& file() const { return file_; }
  /// 1-based line, 0 when unknown (e.g. the file could not be opened).
  std::size_t line() const { return line_; }
  /// Dotted key path ("backends.cpu.memory_limit"), empty when the whole file
  /// is at fault.
  const std::string& key() const { return key_; }

 private:
  std::filesystem::path file_;
  std::size_t line_;
  std::string key_;
};

/// Something asked for by name (a backend, an estimator, a family) is not
/// registered.
class NotFound : public Error {
 public:
  using Error::Error;
};

/// A request that cannot be satisfied as given (bad workload, bad flag value).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// A run stopped because whoever asked for it no longer wants it (a server's
/// client went away): checked before each phase and between steps.
class Cancelled : public Error {
 public:
  using Error::Error;
};

/// A plugin registered a key (backend, estimator, classifier, family, plugin
/// name) that another plugin already holds.
class DuplicateRegistration : public Error {
 public:
  using Error::Error;
};

}  // namespace mold
