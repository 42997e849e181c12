// A shared library that is not a mold plugin: it exports something else.
extern "C" __attribute__((visibility("default"))) int some_other_function() {
  return 42;
}
