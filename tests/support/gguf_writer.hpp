#pragma once
// Writes small GGUF files for tests (the layout of mold/tensor/gguf_file.hpp):
// metadata of any type, tensors of any ggml type with their raw blocks, the
// data section aligned. Bytes can be corrupted afterwards by offset.

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace mold::test {

class GgufWriter {
 public:
  explicit GgufWriter(std::uint32_t version = 3, std::uint64_t alignment = 32)
      : version_(version), alignment_(alignment) {}

  void metadata_u32(const std::string& key, std::uint32_t v) {
    key_(key, 4);
    pod(meta_, v);
    ++metadata_count_;
  }
  void metadata_string(const std::string& key, const std::string& v) {
    key_(key, 8);
    string(meta_, v);
    ++metadata_count_;
  }
  void metadata_f32(const std::string& key, float v) {
    key_(key, 6);
    pod(meta_, v);
    ++metadata_count_;
  }
  void metadata_strings(const std::string& key,
                        const std::vector<std::string>& values) {
    key_(key, 9);
    pod(meta_, std::uint32_t(8));
    pod(meta_, std::uint64_t(values.size()));
    for (const auto& v : values) string(meta_, v);
    ++metadata_count_;
  }
  /// `dims` innermost first, as GGUF stores them.
  void tensor(const std::string& name, std::vector<std::uint64_t> dims,
              std::uint32_t type, const std::vector<std::uint8_t>& bytes) {
    while (data_.size() % alignment_) data_.push_back(0);
    string(infos_, name);
    pod(infos_, std::uint32_t(dims.size()));
    for (const auto d : dims) pod(infos_, d);
    pod(infos_, type);
    pod(infos_, std::uint64_t(data_.size()));
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    ++tensor_count_;
  }

  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> out = {'G', 'G', 'U', 'F'};
    pod(out, version_);
    pod(out, tensor_count_);
    pod(out, metadata_count_);
    out.insert(out.end(), meta_.begin(), meta_.end());
    out.insert(out.end(), infos_.begin(), infos_.end());
    while (out.size() % alignment_) out.push_back(0);
    out.insert(out.end(), data_.begin(), data_.end());
    return out;
  }
  void write(const std::string& path) const { write(path, bytes()); }
  static void write(const std::string& path,
                    const std::vector<std::uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               std::streamsize(bytes.size()));
  }

 private:
  template <class T> static void pod(std::vector<std::uint8_t>& out, T v) {
    std::uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  static void string(std::vector<std::uint8_t>& out, const std::string& s) {
    pod(out, std::uint64_t(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  void key_(const std::string& key, std::uint32_t type) {
    string(meta_, key);
    pod(meta_, type);
  }
  std::uint32_t version_;
  std::uint64_t alignment_;
  std::uint64_t tensor_count_ = 0, metadata_count_ = 0;
  std::vector<std::uint8_t> meta_, infos_, data_;
};

}  // namespace mold::test
