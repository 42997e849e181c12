// A stand-in for a generation server, for molddiag leak's black-box driver
// (tests/cli/leak_process_cli_test.cpp): each line written to DIR/in is a
// "request"; it keeps BYTES of host memory (malloc'd and touched; 0: none),
// then answers on DIR/ack. Both are FIFOs the test makes. Runs until killed.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: leaky_process DIR BYTES\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
  std::vector<void*> kept;
  for (;;) {
    std::ifstream in(dir + "/in");  // blocks until a request opens it
    std::string line;
    while (std::getline(in, line)) {
      if (bytes > 0) {
        void* block = std::malloc(bytes);
        if (block) std::memset(block, 7, bytes);
        kept.push_back(block);
      }
      std::ofstream(dir + "/ack") << "ok\n";
    }
  }
}
