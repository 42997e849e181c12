#pragma once
// What the plugin loader and companions share about the libraries they load
// (internal to the core).

#include <boost/dll/shared_library.hpp>
#include <memory>
#include <string>

namespace mold {

/// The one lifetime rule for plugin code: a library, once loaded, is never
/// unloaded. Code of a plugin may be referenced from anywhere (std::function
/// targets in the registry, vtables of backends and models, strings in
/// reports, static objects), so no owner could know when it is safe. The list
/// is leaked on purpose, so that no static destructor unloads a library while
/// other static destructors may still run its code.
void keep_loaded_forever(std::unique_ptr<boost::dll::shared_library> library);

/// The reason inside Boost.DLL's message: dlerror()'s text, without Boost's
/// wrapper and the errno it appends ("Bad file descriptor"), which is
/// unrelated to the cause.
std::string dlopen_reason(const std::string& what);

}  // namespace mold
