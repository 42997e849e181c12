#include "plugin/elf_inspection.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__linux__)
#  include <elf.h>
#endif

namespace mold {

#if defined(__linux__)

namespace {

/// A file read with pread, every read bounds-checked against its size.
class File {
 public:
  explicit File(const std::filesystem::path& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)) {
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode))
      size_ = std::uint64_t(st.st_size);
    else if (fd_ >= 0)
      error_ = "not a regular file";
    else
      error_ = std::strerror(errno);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& error() const { return error_; }
  std::uint64_t size() const { return size_; }

  bool read(std::uint64_t offset, void* out, std::uint64_t bytes) const {
    if (!error_.empty() || offset > size_ || bytes > size_ - offset)
      return false;
    auto* to = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t got = ::pread(fd_, to, bytes, off_t(offset));
      if (got <= 0) return false;
      to += got;
      offset += std::uint64_t(got);
      bytes -= std::uint64_t(got);
    }
    return true;
  }

 private:
  int fd_;
  std::uint64_t size_ = 0;
  std::string error_;
};

const char* machine_name(unsigned machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86_64";
  case EM_AARCH64:
    return "aarch64";
  case EM_386:
    return "i386";
  case EM_ARM:
    return "arm";
  case EM_RISCV:
    return "riscv";
  case EM_PPC64:
    return "ppc64";
  case EM_S390:
    return "s390";
  default:
    return nullptr;
  }
}

#  if defined(__x86_64__)
constexpr unsigned kHostMachine = EM_X86_64;
#  elif defined(__aarch64__)
constexpr unsigned kHostMachine = EM_AARCH64;
#  elif defined(__riscv)
constexpr unsigned kHostMachine = EM_RISCV;
#  elif defined(__powerpc64__)
constexpr unsigned kHostMachine = EM_PPC64;
#  else
constexpr unsigned kHostMachine = EM_NONE;  // not checked
#  endif

std::string describe_machine(unsigned machine) {
  const char* name = machine_name(machine);
  return name ? name : "machine " + std::to_string(machine);
}

}  // namespace

ElfInspection inspect_elf(const std::filesystem::path& path,
                          const std::string& symbol) {
  ElfInspection result;
  result.inspected = true;
  const File file(path);
  if (!file.error().empty()) {
    result.mismatch = file.error();
    return result;
  }
  unsigned char ident[EI_NIDENT];
  if (!file.read(0, ident, EI_NIDENT) || std::memcmp(ident, ELFMAG, SELFMAG))
    return result;
  result.is_elf = true;
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
    result.mismatch = ident[EI_CLASS] == ELFCLASS32
                          ? "a 32-bit ELF file (this mold is 64-bit)"
                          : "an ELF file of another byte order or class";
    return result;
  }
  Elf64_Ehdr header{};
  if (!file.read(0, &header, sizeof header)) {
    result.mismatch = "a truncated ELF file";
    return result;
  }
  if (kHostMachine != EM_NONE && header.e_machine != kHostMachine) {
    result.mismatch = "an ELF file for " + describe_machine(header.e_machine) +
                      " (this is " + describe_machine(kHostMachine) + ")";
    return result;
  }
  if (header.e_type != ET_DYN) {
    result.mismatch = "an ELF file that is not a shared library";
    return result;
  }
  if (header.e_shoff == 0 || header.e_shnum == 0 ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return result;  // no section headers: the symbol cannot be told

  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (!file.read(header.e_shoff, sections.data(),
                 std::uint64_t(sections.size()) * sizeof(Elf64_Shdr)))
    return result;
  for (const auto& section : sections) {
    if (section.sh_type != SHT_DYNSYM) continue;
    if (section.sh_link >= sections.size() ||
        section.sh_entsize != sizeof(Elf64_Sym))
      return result;
    const Elf64_Shdr& strings = sections[section.sh_link];
    const std::uint64_t count = section.sh_size / sizeof(Elf64_Sym);
    for (std::uint64_t i = 0; i < count; ++i) {
      Elf64_Sym sym{};
      if (!file.read(section.sh_offset + i * sizeof sym, &sym, sizeof sym))
        return result;
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strings.sh_size) continue;
      const unsigned binding = ELF64_ST_BIND(sym.st_info);
      if (binding != STB_GLOBAL && binding != STB_WEAK) continue;
      if (ELF64_ST_VISIBILITY(sym.st_other) != STV_DEFAULT) continue;
      if (strings.sh_size - sym.st_name < symbol.size() + 1) continue;
      std::string name(symbol.size() + 1, '\0');
      if (!file.read(strings.sh_offset + sym.st_name, name.data(), name.size()))
        return result;
      if (name.compare(0, symbol.size(), symbol) == 0 &&
          name[symbol.size()] == '\0') {
        result.defines_symbol = true;
        return result;
      }
    }
    result.defines_symbol = false;
    return result;
  }
  result.defines_symbol = false;  // a shared library without dynamic symbols
  return result;
}

#else

ElfInspection inspect_elf(const std::filesystem::path&, const std::string&) {
  return {};  // not ELF: the loader's own checks decide
}

#endif

}  // namespace mold
