#pragma once
// Writes GGUF files (the layout of mold/tensor/gguf_file.hpp): metadata of
// any type, tensors of any ggml type with their raw blocks, the data section
// aligned. Small files for tests are built in memory (tensor(), bytes(); bytes
// can be corrupted afterwards by offset); a file too large for memory (the
// published-scale kit's 11 GiB transformer) declares its tensors' sizes
// (tensor_streamed()) and writes their bytes one tensor at a time
// (write_streamed()).

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
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
    if (!streamed_sizes_.empty())
      throw std::logic_error("GgufWriter: streamed and in-memory tensors");
    while (data_.size() % alignment_) data_.push_back(0);
    tensor_info(name, dims, type, data_.size());
    data_.insert(data_.end(), bytes.begin(), bytes.end());
  }
  /// A tensor of `size` bytes whose data write_streamed() asks for; one
  /// writer holds either in-memory tensors or streamed ones.
  void tensor_streamed(const std::string& name, std::vector<std::uint64_t> dims,
                       std::uint32_t type, std::uint64_t size) {
    if (!data_.empty())
      throw std::logic_error("GgufWriter: streamed and in-memory tensors");
    streamed_end_ = aligned(streamed_end_);
    tensor_info(name, dims, type, streamed_end_);
    streamed_sizes_.push_back(size);
    streamed_end_ += size;
  }

  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> out = header();
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
  /// Writes the header, then each streamed tensor's bytes as `fill(index,
  /// out)` writes them: exactly its declared size (checked).
  void write_streamed(
      const std::string& path,
      const std::function<void(std::size_t, std::ostream&)>& fill) const {
    std::ofstream out(path, std::ios::binary);
    const std::vector<std::uint8_t> head = header();
    out.write(reinterpret_cast<const char*>(head.data()),
              std::streamsize(head.size()));
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < streamed_sizes_.size(); ++i) {
      for (; at < aligned(at); ++at) out.put(0);
      const auto before = out.tellp();
      fill(i, out);
      if (std::uint64_t(out.tellp() - before) != streamed_sizes_[i])
        throw std::logic_error("GgufWriter: tensor " + std::to_string(i) +
                               " wrote another size than it declared");
      at += streamed_sizes_[i];
    }
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
  }

 private:
  std::uint64_t aligned(std::uint64_t offset) const {
    return (offset + alignment_ - 1) / alignment_ * alignment_;
  }
  void tensor_info(const std::string& name,
                   const std::vector<std::uint64_t>& dims, std::uint32_t type,
                   std::uint64_t offset) {
    string(infos_, name);
    pod(infos_, std::uint32_t(dims.size()));
    for (const auto d : dims) pod(infos_, d);
    pod(infos_, type);
    pod(infos_, offset);
    ++tensor_count_;
  }
  /// Everything before the data section, padded to its alignment.
  std::vector<std::uint8_t> header() const {
    std::vector<std::uint8_t> out = {'G', 'G', 'U', 'F'};
    pod(out, version_);
    pod(out, tensor_count_);
    pod(out, metadata_count_);
    out.insert(out.end(), meta_.begin(), meta_.end());
    out.insert(out.end(), infos_.begin(), infos_.end());
    while (out.size() % alignment_) out.push_back(0);
    return out;
  }
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
  std::vector<std::uint64_t> streamed_sizes_;
  std::uint64_t streamed_end_ = 0;
};

}  // namespace mold::test
